/* Host side of shaders/l2_normalize.comp. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

typedef struct l2_normalize_push {
    uint32_t rows, width, ld;
} l2_normalize_push;
_Static_assert(sizeof(l2_normalize_push) == VKB_PUSH_BYTES_L2_NORMALIZE,
               "l2_normalize_push matches shaders/l2_normalize.comp's Push block");

vkbert_status vkb_op_l2_normalize(vkbert_context *ctx, VkDescriptorPool pool,
                                  const vkb_l2_normalize_desc *d, vkb_view in, vkb_view out,
                                  vkb_dispatch *dispatch)
{
    if (!d->rows || !d->width || d->ld % 4 || d->ld < d->width)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "l2 normalize: bad shape");
    uint32_t size = vkb_tune_softmax_workgroup(ctx, d->width);
    const vkb_spirv *shader = vkb_tune_variant(ctx, &vkb_variants_l2_normalize, 0);
    l2_normalize_push push = {d->rows, d->width, d->ld};
    vkb_view views[2] = {in, out};
    vkb_kernel kernel = {shader, NULL, &size, 1, views, 2, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    vkb_grid_1d(ctx, d->rows, 1, dispatch->groups); /* one workgroup per row */
    return vkb_check_groups(ctx, dispatch);
}
