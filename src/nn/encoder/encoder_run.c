/* The conductor of one host call: check (encoder_check.c), pack (encoder_pack.c), then a job
 * (encoder_jobs.c) that takes a plan (encoder_cache.c, encoder_plan.c), records its inputs
 * (encoder_record.c), submits, and reads the outputs back (encoder_read.c). A synchronous batch
 * over a device limit or the memory runs in halves, each half through the same steps. */
#include "nn/encoder/encoder.h"

#include <stdlib.h>

/* The floats of one output row of the call: an embedding, the logits, or a sequence's rows. */
static uint32_t row_width(const vkbert_encoder *e, const encoder_call *c)
{
    if (c->kind == OUT_SENTENCES) return vkb_encoder_embedding_width(e);
    if (c->kind == OUT_LOGITS) return e->head.labels;
    return (uint32_t)e->config.hidden_size * (uint32_t)c->in.seq_len; /* a sequence's rows */
}

/* The call for sequences [first, batch) of `c`. */
static encoder_call call_part(const vkbert_encoder *e, const encoder_call *c, int first)
{
    /* packed: the same ids, from the offsets of sequence `first` on */
    size_t tokens = c->in.offsets ? 0 : (size_t)first * (size_t)c->in.seq_len;
    encoder_call part = *c;
    part.in.offsets = c->in.offsets ? c->in.offsets + first : NULL;
    part.in.batch = c->in.batch - first;
    part.in.ids = c->in.ids + tokens;
    part.in.types = c->in.types ? c->in.types + tokens : NULL;
    part.in.mask = c->in.mask ? c->in.mask + tokens : NULL;
    part.in.prompt_tokens = c->in.prompt_tokens ? c->in.prompt_tokens + first : NULL;
    part.out = c->out + (size_t)first * row_width(e, c);
    part.pooled = c->pooled ? c->pooled + (size_t)first * (size_t)e->config.hidden_size : NULL;
    return part;
}

/* Pack (where a piece packs), then plan, record, submit and read. Sequences are independent: a
 * batch over a device limit or the memory runs in halves, each packed on its own. */
static vkbert_status run_in_pieces(vkbert_encoder *e, const encoder_call *c)
{
    encoder_call packed;
    int32_t *storage;
    if (encoder_pack_call(e, c, &packed, &storage)) {
        vkbert_status status = run_in_pieces(e, &packed);
        free(storage);
        return status;
    }
    vkbert_status status = vkb_encoder_run_call(e, c);
    if (!status) return VKBERT_OK;
    if ((status != VKBERT_ERROR_DEVICE_LIMIT && status != VKBERT_ERROR_OUT_OF_MEMORY) ||
        c->in.batch == 1)
        return status;
    encoder_call first = *c;
    first.in.batch = c->in.batch / 2;
    encoder_call rest = call_part(e, c, first.in.batch);
    status = run_in_pieces(e, &first);
    return status ? status : run_in_pieces(e, &rest);
}

/* The steps in order for a host call: its inputs checked, then run in pieces. */
static vkbert_status run_host_call(vkbert_encoder *e, const encoder_call *c)
{
    vkbert_status status = encoder_check_batch(e, &c->in);
    return status ? status : run_in_pieces(e, c);
}

/* An asynchronous host call: checked and packed as the synchronous ones, then submitted whole
 * (its job is one pass; a device limit is its own failure). */
vkbert_status vkb_encoder_submit_host(vkbert_encoder *e, const encoder_call *c, vkbert_job **job)
{
    vkbert_status status = encoder_check_batch(e, &c->in);
    if (status) return status;
    /* the packed arrays are uploaded by the submit, so they go with it */
    encoder_call packed;
    int32_t *storage;
    bool pack = encoder_pack_call(e, c, &packed, &storage);
    status = vkb_encoder_submit(e, pack ? &packed : c, job);
    free(storage);
    return status;
}

/* The public host calls let go of the context's lock while the device runs. */
vkbert_status vkb_encoder_forward_host(vkbert_encoder *e, int batch, int seq_len,
                                       const int32_t *input_ids, const int32_t *token_type_ids,
                                       const int32_t *attention_mask, float *hidden, float *pooled)
{
    if (!hidden) return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "hidden is NULL");
    if (pooled && !e->has_pooler)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "the model has no pooler");
    encoder_call c = {.in = {batch, seq_len, input_ids, token_type_ids, attention_mask, NULL, NULL},
                      .kind = OUT_HIDDEN,
                      .out = hidden,
                      .pooled = pooled,
                      .unlock_to_wait = true};
    return run_host_call(e, &c);
}

static vkbert_status sentences(vkbert_encoder *e, const encoder_batch *in, int normalize,
                               float *embeddings, bool unlock_to_wait)
{
    if (!embeddings) return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "embeddings is NULL");
    for (int b = 0; in->prompt_tokens && b < in->batch; b++)
        if (in->prompt_tokens[b] < 0)
            return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "prompt_tokens[%d] is negative",
                            b);
    encoder_call c = {.in = *in,
                      .kind = OUT_SENTENCES,
                      .out = embeddings,
                      .normalize = normalize,
                      .unlock_to_wait = unlock_to_wait};
    return run_host_call(e, &c);
}

vkbert_status vkb_encoder_sentences(vkbert_encoder *e, const encoder_batch *in, int normalize,
                                    float *embeddings)
{
    return sentences(e, in, normalize, embeddings, false);
}

vkbert_status vkb_encoder_logits(vkbert_encoder *e, const encoder_batch *in, float *logits)
{
    if (!logits) return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "logits is NULL");
    if (!e->head.labels)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "the model has no classifier");
    encoder_call c = {.in = *in, .kind = OUT_LOGITS, .out = logits};
    return run_host_call(e, &c);
}

vkbert_status vkb_encoder_embed_host(vkbert_encoder *e, int batch, int seq_len,
                                     const int32_t *input_ids, const int32_t *token_type_ids,
                                     const int32_t *attention_mask, int normalize,
                                     float *embeddings)
{
    encoder_batch in = {batch, seq_len, input_ids, token_type_ids, attention_mask, NULL, NULL};
    return sentences(e, &in, normalize, embeddings, true);
}
