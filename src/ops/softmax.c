/* Host side of shaders/softmax.comp. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

#include <math.h>
#include <string.h>

typedef struct softmax_push {
    uint32_t seq_len, ld, heads;
    float scale;
    uint32_t mask_stride[4];
    uint32_t flags;
    uint32_t drop_below;
    float keep_scale;
    uint32_t seed_lo, seed_hi;
} softmax_push;
_Static_assert(sizeof(softmax_push) == VKB_PUSH_BYTES_SOFTMAX,
               "softmax_push matches shaders/softmax.comp's Push block");

enum { HAS_MASK = 1, CAUSAL = 2, DROPOUT = 4, ADDITIVE = 8 };

void vkb_dropout_params(float p, uint32_t *drop_below, float *keep_scale)
{
    /* Dropped when 24 random bits fall below p * 2^24; p = 1 drops everything. */
    *drop_below = (uint32_t)llround((double)p * 16777216.0);
    *keep_scale = p < 1.0f ? (float)(1.0 / (1.0 - (double)p)) : 0.0f;
}

static void set_dropout(const vkb_softmax_desc *d, softmax_push *push)
{
    if (d->dropout <= 0.0f) return;
    push->flags |= DROPOUT;
    vkb_dropout_params(d->dropout, &push->drop_below, &push->keep_scale);
    push->seed_lo = (uint32_t)d->seed;
    push->seed_hi = (uint32_t)(d->seed >> 32);
}

vkbert_status vkb_op_softmax(vkbert_context *ctx, VkDescriptorPool pool, const vkb_softmax_desc *d,
                             vkb_view scores, vkb_view mask, vkb_dispatch *out)
{
    if (!(d->dropout >= 0.0f && d->dropout <= 1.0f))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "dropout must be in [0, 1]");
    uint32_t size = vkb_tune_softmax_workgroup(ctx, d->seq_len);
    const vkb_spirv *shader = vkb_tune_variant(ctx, &vkb_variants_softmax, 0);
    softmax_push push = {.seq_len = d->seq_len, .ld = d->ld, .heads = d->heads, .scale = d->scale};
    if (d->has_mask) {
        push.flags |= HAS_MASK;
        memcpy(push.mask_stride, d->mask_stride, sizeof push.mask_stride);
    }
    if (d->causal) push.flags |= CAUSAL;
    if (d->additive) push.flags |= ADDITIVE;
    set_dropout(d, &push);
    vkb_view views[2] = {scores, mask};
    vkb_kernel kernel = {shader, NULL, &size, 1, views, 2, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, out);
    if (status) return status;
    out->groups[0] = d->seq_len;
    out->groups[1] = d->batch * d->heads;
    out->groups[2] = 1;
    return vkb_check_groups(ctx, out);
}
