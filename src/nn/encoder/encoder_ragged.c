/* Packed (ragged) batches: the sequences' tokens one after another in T rows, with no padding,
 * and their offsets (cu_seqlens); docs/ragged.md has the design. The row-wise ops run
 * on T rows as they run on B*S; the fused attention and the pooling read the offsets. Plans
 * are made for caps in buckets, so that calls of nearby sizes reuse them: the spare rows
 * (ids 0, positions 0) belong to no sequence and the spare sequences are empty. This file has
 * the plan's side (shapes, rows, the pooler's gather); encoder_pack.c packs a padded call and
 * encoder_record.c uploads a packed one. */
#include "nn/encoder/encoder.h"

/* n rounded up to a multiple of max(granule, 2^floor(log2 n) / 8): at most an eighth spare,
 * and a few caps per octave, so plans are few. */
static uint32_t bucket(uint32_t n, uint32_t granule)
{
    uint32_t top = 1;
    while (top <= n / 2)
        top *= 2;
    uint32_t step = top / 8 > granule ? top / 8 : granule;
    return (n + step - 1) / step * step;
}

uint32_t encoder_rows(const encoder_plan *p)
{
    return p->ragged ? p->tokens : p->batch * p->seq_len;
}

static uint32_t longest(const encoder_batch *in)
{
    int32_t most = 0;
    for (int b = 0; b < in->batch; b++)
        if (in->offsets[b + 1] - in->offsets[b] > most) most = in->offsets[b + 1] - in->offsets[b];
    return (uint32_t)most;
}

encoder_shape encoder_shape_of(const encoder_batch *in)
{
    if (!in->offsets) return (encoder_shape){false, (uint32_t)in->batch, (uint32_t)in->seq_len, 0};
    uint32_t batch = 1;
    while (batch < (uint32_t)in->batch)
        batch *= 2;
    uint32_t tokens = bucket((uint32_t)(in->offsets[in->batch] - in->offsets[0]), 8);
    /* At least B rows: the pooler's gather of first rows reuses a [T][Hp] buffer. */
    return (encoder_shape){true, batch, bucket(longest(in), 16), tokens > batch ? tokens : batch};
}

vkbert_status encoder_prepare_cls(vkbert_encoder *e, encoder_plan *p, attention_sink *sink)
{
    vkb_dispatch *d = attention_sink_next(sink);
    if (!d)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "internal: encoder dispatch list full");
    d->name = "pooler_gather";
    vkb_pool_ragged_desc desc = {.batch = p->batch,
                                 .tokens = p->tokens,
                                 .hidden = (uint32_t)e->config.hidden_size,
                                 .ld = e->hp,
                                 .modes = VKB_POOL_FIRST_ROW,
                                 .out_ld = e->hp};
    return vkb_op_pool_ragged(e->ctx, sink->pool, &desc, vkb_whole(&p->hidden),
                              vkb_whole(&p->pool_mask), vkb_whole(&p->offsets), vkb_whole(&p->o2),
                              d);
}
