/* Host side of shaders/layer_norm.comp. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

typedef struct layer_norm_push {
    uint32_t rows, hidden, ld, has_residual;
    float eps;
} layer_norm_push;
_Static_assert(sizeof(layer_norm_push) == VKB_PUSH_BYTES_LAYER_NORM,
               "layer_norm_push matches shaders/layer_norm.comp's Push block");

vkbert_status vkb_op_layer_norm(vkbert_context *ctx, VkDescriptorPool pool,
                                const vkb_layer_norm_desc *d, vkb_view x, const vkb_view *residual,
                                vkb_view params, vkb_view out, vkb_dispatch *dispatch)
{
    if (!d->rows || !d->hidden || d->ld % 4 || d->ld < d->hidden || !(d->eps > 0.0f))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "layer norm: bad shape or epsilon");
    uint32_t size = vkb_tune_softmax_workgroup(ctx, d->hidden);
    const vkb_spirv *shader = vkb_tune_variant(ctx, &vkb_variants_layer_norm, 0);
    layer_norm_push push = {d->rows, d->hidden, d->ld, residual != NULL, d->eps};
    /* Without a residual, binding 1 still needs a buffer: x, never read through it. */
    vkb_view views[4] = {x, residual ? *residual : x, params, out};
    vkb_kernel kernel = {shader, NULL, &size, 1, views, 4, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    vkb_grid_1d(ctx, d->rows, 1, dispatch->groups); /* one workgroup per row */
    return vkb_check_groups(ctx, dispatch);
}
