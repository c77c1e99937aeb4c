/* Host side of shaders/attention_fused.comp, padded and ragged. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

#include <stdlib.h>
#include <string.h>

typedef struct fused_push {
    uint32_t seq_len, heads;
    uint32_t ld4, q_off4, k_off4, v_off4, ld_out4;
    uint32_t mask_stride[4];
    uint32_t flags;
    uint32_t drop_below;
    float keep_scale;
    uint32_t seed_lo, seed_hi;
} fused_push;
_Static_assert(sizeof(fused_push) == VKB_PUSH_BYTES_ATTENTION_FUSED,
               "fused_push matches shaders/attention_fused.comp's Push block");

enum { HAS_MASK = 1, CAUSAL = 2, DROPOUT = 4, ADDITIVE = 8 };

/* The most vec4 of a head the kernel holds in registers (CHUNK_MAX in the shader). */
enum { CHUNK_MAX = 16 };

/* A head of d4 vec4 runs as the fewest slices of at most CHUNK_MAX, their lengths balanced
 * so that the last slice is not mostly padding (a 20-vec4 head: two of 10, not 16 and 4). */
static uint32_t chunk_for(uint32_t d4, uint32_t *slices)
{
    *slices = (d4 + CHUNK_MAX - 1) / CHUNK_MAX;
    return (d4 + *slices - 1) / *slices;
}

static fused_push make_push(const vkb_fused_desc *d)
{
    fused_push push = {.seq_len = d->ragged ? d->tokens : d->seq_len, /* ragged: the clamp */
                       .heads = d->heads,
                       .ld4 = d->ld / 4,
                       .q_off4 = (uint32_t)(d->q_off / 4),
                       .k_off4 = (uint32_t)(d->k_off / 4),
                       .v_off4 = (uint32_t)(d->v_off / 4),
                       .ld_out4 = d->ld_out / 4};
    if (d->has_mask) {
        push.flags |= HAS_MASK;
        memcpy(push.mask_stride, d->mask_stride, sizeof push.mask_stride);
    }
    if (d->causal) push.flags |= CAUSAL;
    if (d->additive) push.flags |= ADDITIVE;
    if (d->dropout > 0.0f) {
        push.flags |= DROPOUT;
        vkb_dropout_params(d->dropout, &push.drop_below, &push.keep_scale);
        push.seed_lo = (uint32_t)d->seed;
        push.seed_hi = (uint32_t)(d->seed >> 32);
    }
    return push;
}

/* A ragged batch: the offsets in the mask's place, and nothing that needs a mask's layout. */
static vkbert_status check_ragged(vkbert_context *ctx, const vkb_fused_desc *d, vkb_view offsets)
{
    if (d->has_mask || d->causal || d->additive || d->dropout > 0.0f)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fused attention: a ragged batch takes no mask, causal, additive or "
                        "dropout (each sequence attends to all of its own rows)");
    if (offsets.size < ((uint64_t)d->batch + 1) * 4)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fused attention: the offsets binding's %llu bytes hold no %u + 1 offsets",
                        (unsigned long long)offsets.size, d->batch);
    return VKBERT_OK;
}

static vkbert_status check_shape(vkbert_context *ctx, const vkb_fused_desc *d, vkb_view rows,
                                 vkb_view mask, uint32_t slice_d4)
{
    uint32_t d4 = (d->head_dim + 3) / 4, elem = vkb_format_float_bytes(d->rows); /* bytes */
    if (d->head_dim > VKB_FUSED_MAX_HEAD)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "fused attention holds heads of up to %d; this one has %u",
                        VKB_FUSED_MAX_HEAD, d->head_dim);
    if (!vkb_format_is_float(d->rows) || !vkb_format_is_float(d->out))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fused attention: the rows and the output must be fp32 or fp16");
    if (d->ld % 4 || d->ld_out % 4 || d->q_off % 4 || d->k_off % 4 || d->v_off % 4 ||
        d->v_off / 4 > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fused attention: pitches and offsets must be multiples of 4 elements");
    if (d->ragged) {
        vkbert_status status = check_ragged(ctx, d, mask);
        if (status) return status;
    }
    /* The last slice's chunk may reach past the head (its q lanes zero there). */
    uint32_t slack = 4 * (slice_d4 - d4);
    uint64_t row_count = d->ragged ? d->tokens : (uint64_t)d->batch * d->seq_len;
    if (rows.size < (d->v_off + row_count * d->ld + slack) * elem)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fused attention: the rows need %u elements of slack at the end", slack);
    return VKBERT_OK;
}

vkbert_status vkb_op_attention_fused(vkbert_context *ctx, VkDescriptorPool pool,
                                     const vkb_fused_desc *d, vkb_view rows, vkb_view mask,
                                     vkb_view out, vkb_dispatch *dispatch)
{
    uint32_t d4 = (d->head_dim + 3) / 4, slices;
    uint32_t chunk = chunk_for(d4, &slices);
    vkbert_status status = check_shape(ctx, d, rows, mask, slices * chunk);
    if (status) return status;
    uint32_t size = vkb_tune_fused_workgroup(ctx, d->seq_len);
    bool rows_half = d->rows == VKB_FORMAT_F16_PAIRS;
    uint32_t elem = vkb_format_float_bytes(d->rows); /* bytes */
    uint32_t axes = vkb_tune_fused_read(ctx, rows_half, rows.size / (4 * elem), size);
    bool texel = axes & VKB_AXIS_TEXEL, shared = axes & VKB_AXIS_SHUFFLE;
    if (d->ragged) axes |= VKB_AXIS_RAGGED;
    fused_push push = make_push(d);
    vkb_view views[3] = {rows, mask, out};
    if (rows_half) views[0].format = VK_FORMAT_R16G16B16A16_SFLOAT;
    uint32_t spec[5] = {size, rows_half, d->out == VKB_FORMAT_F16_PAIRS, d4, chunk};
    static const VkDescriptorType texel_types[3] = {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                                                    VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                    VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    vkb_kernel kernel = {vkb_tune_variant(ctx, &vkb_variants_attention_fused, axes),
                         texel ? texel_types : NULL,
                         spec,
                         5,
                         views,
                         3,
                         &push,
                         sizeof push,
                         shared ? size : 0};
    status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    dispatch->groups[0] = (d->seq_len + size - 1) / size;
    dispatch->groups[1] = d->batch * d->heads;
    dispatch->groups[2] = slices;
    return vkb_check_groups(ctx, dispatch);
}
