/* Host side of shaders/head_merge.comp. */
#include "ops/ops.h"
#include "shaders.h"
#include "tune.h"

typedef struct merge_push {
    uint32_t batch, seq_len, heads, head_dim, ld, dp;
} merge_push;

vkbert_status vkb_op_head_merge(vkbert_context *ctx, VkDescriptorPool pool, const vkb_heads_desc *d,
                                vkb_view heads, vkb_view merged, vkb_dispatch *out)
{
    uint64_t items = (uint64_t)d->batch * d->seq_len * d->heads * d->head_dim;
    if (items > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT, "head merge: tensor too large");
    uint32_t size = vkb_tune_elementwise_workgroup(ctx);
    merge_push push = {d->batch, d->seq_len, d->heads, d->head_dim, d->ld, d->dp};
    vkb_view views[2] = {heads, merged};
    vkb_kernel kernel = {&vkb_shader_head_merge, &size, 1, views, 2, &push, sizeof push};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, out);
    if (status) return status;
    vkb_grid_1d(items, size, out->groups);
    return vkb_check_groups(ctx, out);
}
