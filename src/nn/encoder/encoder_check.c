/* What a call's inputs must be before any of them reaches the device: sizes, ids within the
 * vocabularies, and a packed batch's offsets. Each failure is a message on the context. */
#include "nn/encoder/encoder.h"

static vkbert_status check_ids(vkbert_encoder *e, const int32_t *ids, size_t n, int32_t limit,
                               const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= limit)
            return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "%s[%zu] = %d is outside [0, %d)", name, i, ids[i], limit);
    return VKBERT_OK;
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

vkbert_status encoder_check_batch(vkbert_encoder *e, const encoder_batch *in)
{
    if (in->batch < 1 || in->seq_len < 1 || !in->ids)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "batch and seq_len must be positive and input_ids non-NULL");
    if (in->seq_len > e->config.max_position_embeddings)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "sequence of %d tokens is longer than max_position_embeddings %d",
                        in->seq_len, e->config.max_position_embeddings);
    size_t n = (size_t)in->batch * (size_t)in->seq_len, first = 0;
    vkbert_status status = in->offsets ? encoder_check_packed(e, in) : VKBERT_OK;
    if (status) return status;
    if (in->offsets) first = (size_t)in->offsets[0], n = (size_t)in->offsets[in->batch] - first;
    status = check_ids(e, in->ids + first, n, e->config.vocab_size, "input_ids");
    if (!status && in->types)
        status = check_ids(e, in->types + first, n, e->config.type_vocab_size, "token_type_ids");
    return status;
}
