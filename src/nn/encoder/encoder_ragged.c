/* Packed (ragged) batches: the sequences' tokens one after another in T rows, with no padding,
 * and their offsets (cu_seqlens); docs/ragged.md has the design. The row-wise ops run
 * on T rows as they run on B*S; the fused attention and the pooling read the offsets. Plans
 * are made for caps in buckets, so that calls of nearby sizes reuse them: the spare rows
 * (ids 0, positions 0) belong to no sequence and the spare sequences are empty. */
#include "nn/encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

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

bool encoder_can_pack(const vkbert_encoder *e)
{
    return e->attention[0]->head_dim <= VKB_FUSED_MAX_HEAD;
}

vkbert_status encoder_check_packed(vkbert_encoder *e, const encoder_batch *in)
{
    if (!encoder_can_pack(e))
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "packed batches need the fused attention, and heads of %u exceed it",
                        e->attention[0]->head_dim);
    if (in->mask || in->offsets[0] < 0)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "a packed batch has no mask and offsets[0] >= 0");
    for (int b = 0; b < in->batch; b++) {
        int32_t length = in->offsets[b + 1] - in->offsets[b];
        if (length < 1 || length > e->config.max_position_embeddings)
            return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "packed sequence %d has %d tokens: it needs 1 to %d "
                            "(max_position_embeddings)",
                            b, length, e->config.max_position_embeddings);
    }
    return VKBERT_OK;
}

/* ids [T], types [T], positions [T], the flag, then the pooling mask [T] and the offsets
 * [B+1], each spare row and sequence filled as the plan's comment says. */
static void pack(const encoder_plan *p, const encoder_batch *in, int32_t *ids, float *pool,
                 int32_t *offsets)
{
    uint32_t t = p->tokens, first = (uint32_t)in->offsets[0];
    for (uint32_t b = 0; b <= p->batch; b++)
        offsets[b] = (int32_t)((int)b <= in->batch ? (uint32_t)in->offsets[b] - first
                                                   : (uint32_t)in->offsets[in->batch] - first);
    for (int b = 0; b < in->batch; b++) {
        int prompt = in->prompt_tokens ? in->prompt_tokens[b] : 0;
        for (int32_t j = 0; j < offsets[b + 1] - offsets[b]; j++) {
            uint32_t row = (uint32_t)(offsets[b] + j), from = first + row;
            ids[row] = in->ids[from];
            ids[t + row] = in->types ? in->types[from] : 0;
            /* HF's position_ids = arange(S) as a right-padded row sees it */
            ids[2 * t + row] = j;
            /* include_prompt = false leaves the prompt out of pooling only */
            pool[row] = j < prompt ? 0.0f : 1.0f;
        }
    }
}

vkbert_status encoder_upload_packed(vkbert_encoder *e, encoder_plan *p, const encoder_batch *in)
{
    size_t t = p->tokens;
    int32_t *ids = calloc(3 * t + 1 + p->batch + 1, sizeof *ids); /* spare rows stay 0 */
    float *pool = calloc(t, sizeof *pool);
    if (!ids || !pool) {
        free(ids), free(pool);
        return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    int32_t *offsets = ids + 3 * t + 1;
    pack(p, in, ids, pool, offsets);
    vkbert_status status = vkb_buffer_upload(e->ctx, &p->ids, 0, ids, (3 * t + 1) * 4);
    if (!status) status = vkb_buffer_upload(e->ctx, &p->pool_mask, 0, pool, t * 4);
    if (!status)
        status = vkb_buffer_upload(e->ctx, &p->offsets, 0, offsets, ((size_t)p->batch + 1) * 4);
    free(ids), free(pool);
    return status;
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

/* ---- a padded call run packed ---- */

/* The length of each row when the mask is a prefix of ones with at least one (right padding,
 * what the tokenizer makes); false otherwise. Left padding and holes would change HF's
 * positions, and an all-zero row attends to every key on the padded path. */
static bool right_padded(const encoder_batch *in, int32_t *offsets)
{
    offsets[0] = 0;
    for (int b = 0; b < in->batch; b++) {
        const int32_t *row = in->mask ? in->mask + (size_t)b * in->seq_len : NULL;
        int length = in->seq_len;
        for (int s = 0; row && s < in->seq_len; s++)
            if (!row[s]) {
                length = s;
                break;
            }
        for (int s = length; row && s < in->seq_len; s++)
            if (row[s]) return false;
        if (!length) return false;
        offsets[b + 1] = offsets[b] + length;
    }
    return true;
}

/* Rows [b][0, length) of ids and types, one after another. */
static void squeeze(const encoder_batch *in, const int32_t *offsets, const int32_t *from,
                    int32_t *to)
{
    for (int b = 0; b < in->batch; b++)
        memcpy(to + offsets[b], from + (size_t)b * in->seq_len,
               (size_t)(offsets[b + 1] - offsets[b]) * sizeof *to);
}

bool encoder_pack_call(vkbert_encoder *e, const encoder_call *c, encoder_call *packed,
                       int32_t **storage)
{
    *storage = NULL;
    if (c->kind == OUT_HIDDEN || c->kind == OUT_TENSORS || c->in.offsets || !encoder_can_pack(e))
        return false;
    size_t cells = (size_t)c->in.batch * (size_t)c->in.seq_len;
    int32_t *ids = malloc((2 * cells + (size_t)c->in.batch + 1) * sizeof *ids);
    int32_t *offsets = ids ? ids + 2 * cells : NULL;
    if (!ids || !right_padded(&c->in, offsets)) { /* out of memory: the padded path is as good */
        free(ids);
        return false;
    }
    *packed = *c;
    squeeze(&c->in, offsets, c->in.ids, ids);
    if (c->in.types) squeeze(&c->in, offsets, c->in.types, ids + cells);
    packed->in.ids = ids;
    packed->in.types = c->in.types ? ids + cells : NULL;
    packed->in.mask = NULL;
    packed->in.offsets = offsets;
    *storage = ids;
    return true;
}
