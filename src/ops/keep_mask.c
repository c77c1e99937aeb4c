/* Host side of shaders/keep_mask.comp. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

typedef struct keep_mask_push {
    uint32_t batch, seq_len, ld, nonzero;
} keep_mask_push;
_Static_assert(sizeof(keep_mask_push) == VKB_PUSH_BYTES_KEEP_MASK,
               "keep_mask_push matches shaders/keep_mask.comp's Push block");

vkbert_status vkb_op_keep_mask(vkbert_context *ctx, VkDescriptorPool pool,
                               const vkb_keep_mask_desc *d, vkb_view keep, vkb_view pooling,
                               vkb_dispatch *dispatch)
{
    uint64_t items = (uint64_t)d->batch * d->ld;
    if (!d->batch || !d->seq_len || d->ld < d->seq_len)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "keep mask: bad shape");
    if (items > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT, "keep mask: mask too large");
    uint32_t size = vkb_tune_elementwise_workgroup(ctx);
    keep_mask_push push = {d->batch, d->seq_len, d->ld, d->is_float ? 0x7fffffffu : ~0u};
    vkb_view views[2] = {keep, pooling};
    vkb_kernel kernel = {&vkb_shader_keep_mask, NULL, &size, 1, views, 2, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    vkb_grid_1d(ctx, items, size, dispatch->groups);
    return vkb_check_groups(ctx, dispatch);
}
