/* Host side of shaders/pool.comp. */
#include "ops/ops.h"
#include "shaders.h"
#include "tune.h"

typedef struct pool_push {
    uint32_t batch, seq_len, hidden, ld, mask_ld, modes, out_ld;
} pool_push;

#define POOL_MODES 0x3fu

static uint32_t mode_count(uint32_t modes)
{
    uint32_t count = 0;
    for (; modes; modes &= modes - 1)
        count++;
    return count;
}

vkbert_status vkb_op_pool(vkbert_context *ctx, VkDescriptorPool pool, const vkb_pool_desc *d,
                          vkb_view hidden, vkb_view mask, vkb_view out, vkb_dispatch *dispatch)
{
    if (!d->batch || !d->seq_len || !d->hidden || d->ld % 4 || d->ld < d->hidden ||
        d->mask_ld < d->seq_len)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "pool: bad shape");
    if (!d->modes || d->modes & ~POOL_MODES)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "pool: modes 0x%x are not a set of "
                        "VKB_POOL_* bits",
                        d->modes);
    if (d->out_ld % 4 || d->out_ld < (uint64_t)mode_count(d->modes) * d->hidden)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "pool: out_ld %u is not a multiple of 4 holding %u blocks of %u", d->out_ld,
                        mode_count(d->modes), d->hidden);
    uint32_t size = vkb_tune_softmax_workgroup(ctx, d->hidden);
    const vkb_spirv *shader = ctx->subgroup_arithmetic ? &vkb_shader_pool : &vkb_shader_pool_shared;
    pool_push push = {d->batch, d->seq_len, d->hidden, d->ld, d->mask_ld, d->modes, d->out_ld};
    vkb_view views[3] = {hidden, mask, out};
    vkb_kernel kernel = {shader, NULL, &size, 1, views, 3, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    vkb_grid_1d(ctx, d->batch, 1, dispatch->groups); /* one workgroup per sequence */
    return vkb_check_groups(ctx, dispatch);
}
