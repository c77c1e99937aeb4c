/* Host side of shaders/attention_fused.comp. */
#include "ops/ops.h"
#include "shaders.h"
#include "tune.h"

#include <string.h>

typedef struct fused_push {
    uint32_t seq_len, heads, head_dim;
    uint32_t ld4, q_off4, k_off4, v_off4, ld_out4;
    uint32_t mask_stride[4];
    uint32_t flags;
    uint32_t drop_below;
    float keep_scale;
    uint32_t seed_lo, seed_hi;
} fused_push;

enum { HAS_MASK = 1, CAUSAL = 2, DROPOUT = 4 };

/* The compiled register capacities (CMakeLists.txt), in vec4 of a head. */
static const struct {
    uint32_t d4_max;
    const vkb_spirv *shader;
} variants[] = {
    {4, &vkb_shader_attention_fused_d16},   {8, &vkb_shader_attention_fused_d32},
    {16, &vkb_shader_attention_fused_d64},  {32, &vkb_shader_attention_fused_d128},
    {64, &vkb_shader_attention_fused_d256},
};

static const vkb_spirv *variant_for(uint32_t d4)
{
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++)
        if (d4 <= variants[i].d4_max) return variants[i].shader;
    return NULL;
}

static fused_push make_push(const vkb_fused_desc *d)
{
    fused_push push = {.seq_len = d->seq_len,
                       .heads = d->heads,
                       .head_dim = d->head_dim,
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
    if (d->dropout > 0.0f) {
        push.flags |= DROPOUT;
        vkb_dropout_params(d->dropout, &push.drop_below, &push.keep_scale);
        push.seed_lo = (uint32_t)d->seed;
        push.seed_hi = (uint32_t)(d->seed >> 32);
    }
    return push;
}

vkbert_status vkb_op_attention_fused(vkbert_context *ctx, VkDescriptorPool pool,
                                     const vkb_fused_desc *d, vkb_view rows, vkb_view mask,
                                     vkb_view out, vkb_dispatch *dispatch)
{
    uint32_t d4 = (d->head_dim + 3) / 4;
    const vkb_spirv *shader = variant_for(d4);
    if (!shader)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "fused attention holds heads of up to 256; this one has %u",
                        d->head_dim);
    if (d->ld % 4 || d->ld_out % 4 || d->q_off % 4 || d->k_off % 4 || d->v_off % 4 ||
        d->v_off / 4 > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fused attention: pitches and offsets must be multiples of 4 floats");
    uint32_t spec[2] = {vkb_tune_fused_workgroup(ctx, d->seq_len), d4};
    fused_push push = make_push(d);
    vkb_view views[3] = {rows, mask, out};
    vkb_kernel kernel = {shader, NULL, spec, 2, views, 3, &push, sizeof push};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    dispatch->groups[0] = (d->seq_len + spec[0] - 1) / spec[0];
    dispatch->groups[1] = d->batch * d->heads;
    dispatch->groups[2] = 1;
    return vkb_check_groups(ctx, dispatch);
}
