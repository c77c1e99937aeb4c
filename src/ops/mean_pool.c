/* Host side of shaders/mean_pool.comp. */
#include "ops/ops.h"
#include "shaders.h"
#include "tune.h"

typedef struct mean_pool_push {
    uint32_t batch, seq_len, hidden, ld, mask_ld;
} mean_pool_push;

vkbert_status vkb_op_mean_pool(vkbert_context *ctx, VkDescriptorPool pool,
                               const vkb_mean_pool_desc *d, vkb_view hidden, vkb_view mask,
                               vkb_view mean, vkb_view unit, vkb_dispatch *dispatch)
{
    if (!d->batch || !d->seq_len || !d->hidden || d->ld < d->hidden || d->mask_ld < d->seq_len)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "mean pool: bad shape");
    uint32_t size = vkb_tune_softmax_workgroup(ctx, d->hidden);
    const vkb_spirv *shader =
        ctx->subgroup_arithmetic ? &vkb_shader_mean_pool : &vkb_shader_mean_pool_shared;
    mean_pool_push push = {d->batch, d->seq_len, d->hidden, d->ld, d->mask_ld};
    vkb_view views[4] = {hidden, mask, mean, unit};
    vkb_kernel kernel = {shader, NULL, &size, 1, views, 4, &push, sizeof push};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    dispatch->groups[0] = d->batch, dispatch->groups[1] = 1, dispatch->groups[2] = 1;
    return vkb_check_groups(ctx, dispatch);
}
