/* Host side of shaders/attention_fused.comp. */
#include "ops/ops.h"
#include "shaders.h"
#include "tune.h"

#include <stdlib.h>
#include <string.h>

typedef struct fused_push {
    uint32_t seq_len, heads, d4;
    uint32_t ld4, q_off4, k_off4, v_off4, ld_out4;
    uint32_t mask_stride[4];
    uint32_t flags;
    uint32_t drop_below;
    float keep_scale;
    uint32_t seed_lo, seed_hi;
} fused_push;

enum { HAS_MASK = 1, CAUSAL = 2, DROPOUT = 4, ADDITIVE = 8 };

/* The compiled head sizes, in vec4 (CMakeLists.txt); the smallest that holds the head. */
#define VARIANT(n)                                                                                 \
    {                                                                                              \
        n, &vkb_shader_attention_fused_##n, &vkb_shader_attention_fused_texel_##n, NULL            \
    }
#define SHARING(n)                                                                                 \
    {                                                                                              \
        n, &vkb_shader_attention_fused_##n, &vkb_shader_attention_fused_texel_##n,                 \
            &vkb_shader_attention_fused_sg8_##n                                                    \
    }
/* `shared`: texel reads with K and V rows shared by shuffles in 8-lane subgroups. */
static const struct {
    uint32_t d4_max;
    const vkb_spirv *storage, *texel, *shared;
} variants[] = {VARIANT(4),  SHARING(8),  VARIANT(12), SHARING(16), VARIANT(20),
                SHARING(24), SHARING(32), SHARING(48), SHARING(64)};
#undef VARIANT
#undef SHARING

static const vkb_spirv *variant_for(uint32_t d4, bool texel, bool share, uint32_t *d4_max)
{
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++)
        if (d4 <= variants[i].d4_max) {
            *d4_max = variants[i].d4_max;
            if (texel && share && variants[i].shared) return variants[i].shared;
            return texel ? variants[i].texel : variants[i].storage;
        }
    return NULL;
}

/* 8-lane subgroups that make up an 8-invocation workgroup can share K and V rows. */
static bool can_share_rows(const vkbert_context *ctx, uint32_t workgroup)
{
    const char *off = getenv("VKBERT_SIMD_SHUFFLE");
    if (off && !strcmp(off, "0")) return false;
    return workgroup == 8 && ctx->subgroup.subgroupSize == 8 &&
           (ctx->subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
           (ctx->subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
}

static fused_push make_push(const vkb_fused_desc *d)
{
    fused_push push = {.seq_len = d->seq_len,
                       .heads = d->heads,
                       .d4 = (d->head_dim + 3) / 4,
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

vkbert_status vkb_op_attention_fused(vkbert_context *ctx, VkDescriptorPool pool,
                                     const vkb_fused_desc *d, vkb_view rows, vkb_view mask,
                                     vkb_view out, vkb_dispatch *dispatch)
{
    uint32_t d4 = (d->head_dim + 3) / 4, d4_max = 0;
    uint32_t elem = d->rows_half ? 2 : 4; /* bytes */
    bool texel = vkb_tune_family(ctx) == VKB_FAMILY_SIMD && (!d->rows_half || ctx->fp16_texels) &&
                 rows.size / (4 * elem) <= ctx->props.limits.maxTexelBufferElements;
    uint32_t size = vkb_tune_fused_workgroup(ctx, d->seq_len);
    const vkb_spirv *shader = variant_for(d4, texel, can_share_rows(ctx, size), &d4_max);
    if (!shader)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "fused attention holds heads of up to 256; this one has %u", d->head_dim);
    if (d->ld % 4 || d->ld_out % 4 || d->q_off % 4 || d->k_off % 4 || d->v_off % 4 ||
        d->v_off / 4 > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fused attention: pitches and offsets must be multiples of 4 elements");
    if (rows.size < (d->v_off + (uint64_t)d->batch * d->seq_len * d->ld + 4 * d4_max) * elem)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fused attention: the rows need %u elements of slack at the end",
                        4 * d4_max);
    fused_push push = make_push(d);
    vkb_view views[3] = {rows, mask, out};
    if (d->rows_half) views[0].format = VK_FORMAT_R16G16B16A16_SFLOAT;
    uint32_t spec[3] = {size, d->rows_half, d->out_half};
    static const VkDescriptorType texel_types[3] = {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                                                    VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                    VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    vkb_kernel kernel = {shader, texel ? texel_types : NULL, spec, 3, views, 3, &push, sizeof push};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    dispatch->groups[0] = (d->seq_len + size - 1) / size;
    dispatch->groups[1] = d->batch * d->heads;
    dispatch->groups[2] = 1;
    return vkb_check_groups(ctx, dispatch);
}
