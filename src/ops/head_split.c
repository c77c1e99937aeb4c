/* Host side of shaders/head_split.comp, and of head_merge.comp, whose push constants and
 * grid are the same. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

typedef struct heads_push {
    uint32_t batch, seq_len, heads, head_dim, ld, dp;
} heads_push;
_Static_assert(sizeof(heads_push) == VKB_PUSH_BYTES_HEAD_SPLIT,
               "heads_push matches shaders/head_split.comp's Push block");
_Static_assert(sizeof(heads_push) == VKB_PUSH_BYTES_HEAD_MERGE,
               "heads_push matches shaders/head_merge.comp's Push block");

vkbert_status vkb_op_heads(vkbert_context *ctx, VkDescriptorPool pool, const vkb_spirv *shader,
                           const vkb_heads_desc *d, vkb_view in, vkb_view out,
                           vkb_dispatch *dispatch)
{
    /* split: one invocation per element d < D; merge: per d < Dp, writing the padding */
    uint32_t row = shader == &vkb_shader_head_merge ? d->dp : d->head_dim;
    uint64_t items = (uint64_t)d->batch * d->seq_len * d->heads * row;
    if (items > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT, "%s: tensor too large", shader->name);
    uint32_t size = vkb_tune_elementwise_workgroup(ctx);
    heads_push push = {d->batch, d->seq_len, d->heads, d->head_dim, d->ld, d->dp};
    vkb_view views[2] = {in, out};
    vkb_kernel kernel = {shader, NULL, &size, 1, views, 2, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    vkb_grid_1d(ctx, items, size, dispatch->groups);
    return vkb_check_groups(ctx, dispatch);
}

vkbert_status vkb_op_head_split(vkbert_context *ctx, VkDescriptorPool pool, const vkb_heads_desc *d,
                                vkb_view rows, vkb_view heads, vkb_dispatch *out)
{
    return vkb_op_heads(ctx, pool, &vkb_shader_head_split, d, rows, heads, out);
}
