/* The pack step: a padded host call as a packed one, where that gives the same results
 * (right padding, no hidden states asked for, the fused attention; docs/ragged.md). */
#include "nn/encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

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
