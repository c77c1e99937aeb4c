/* Host side of shaders/pool.comp, padded and ragged. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

typedef struct pool_push {
    uint32_t batch, seq_len, hidden, ld, mask_ld, modes, out_ld;
} pool_push;
_Static_assert(sizeof(pool_push) == VKB_PUSH_BYTES_POOL,
               "pool_push matches shaders/pool.comp's Push block");

#define POOL_MODES 0x7fu

static uint32_t mode_count(uint32_t modes)
{
    uint32_t count = 0;
    for (; modes; modes &= modes - 1)
        count++;
    return count;
}

static vkbert_status check_modes(vkbert_context *ctx, const pool_push *p)
{
    if (!p->modes || p->modes & ~POOL_MODES)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "pool: modes 0x%x are not a set of "
                        "VKB_POOL_* bits",
                        p->modes);
    if (p->out_ld % 4 || p->out_ld < (uint64_t)mode_count(p->modes) * p->hidden)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "pool: out_ld %u is not a multiple of 4 holding %u blocks of %u", p->out_ld,
                        mode_count(p->modes), p->hidden);
    return VKBERT_OK;
}

/* One workgroup per sequence, whichever layout the views hold. */
static vkbert_status prepare(vkbert_context *ctx, VkDescriptorPool pool, const vkb_spirv *shader,
                             const pool_push *push, const vkb_view *views, uint32_t view_count,
                             vkb_dispatch *dispatch)
{
    vkbert_status status = check_modes(ctx, push);
    if (status) return status;
    uint32_t size = vkb_tune_softmax_workgroup(ctx, push->hidden);
    vkb_kernel kernel = {shader, NULL, &size, 1, views, view_count, push, sizeof *push, 0};
    status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    vkb_grid_1d(ctx, push->batch, 1, dispatch->groups);
    return vkb_check_groups(ctx, dispatch);
}

vkbert_status vkb_op_pool(vkbert_context *ctx, VkDescriptorPool pool, const vkb_pool_desc *d,
                          vkb_view hidden, vkb_view mask, vkb_view out, vkb_dispatch *dispatch)
{
    if (!d->batch || !d->seq_len || !d->hidden || d->ld % 4 || d->ld < d->hidden ||
        d->mask_ld < d->seq_len)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "pool: bad shape");
    const vkb_spirv *shader = vkb_tune_variant(ctx, &vkb_variants_pool, 0);
    pool_push push = {d->batch, d->seq_len, d->hidden, d->ld, d->mask_ld, d->modes, d->out_ld};
    vkb_view views[3] = {hidden, mask, out};
    return prepare(ctx, pool, shader, &push, views, 3, dispatch);
}

vkbert_status vkb_op_pool_ragged(vkbert_context *ctx, VkDescriptorPool pool,
                                 const vkb_pool_ragged_desc *d, vkb_view hidden, vkb_view mask,
                                 vkb_view offsets, vkb_view out, vkb_dispatch *dispatch)
{
    /* tokens may be 0: a batch of empty sequences pools to zeros without reading a row. */
    if (!d->batch || !d->hidden || d->ld % 4 || d->ld < d->hidden)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "pool_ragged: bad shape");
    const vkb_spirv *shader = vkb_tune_variant(ctx, &vkb_variants_pool, VKB_AXIS_RAGGED);
    /* The shader's seq_len is the packed row count, the bound its offsets are clamped to. */
    pool_push push = {d->batch, d->tokens, d->hidden, d->ld, 0, d->modes, d->out_ld};
    vkb_view views[4] = {hidden, mask, out, offsets}; /* the shader's bindings 0-3 */
    return prepare(ctx, pool, shader, &push, views, 4, dispatch);
}
