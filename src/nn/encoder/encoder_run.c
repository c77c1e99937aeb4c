/* Forward passes of the encoder: inputs uploaded (or the device tensors' copies recorded), the
 * pass submitted on a slot (encoder_jobs.c), the outputs read back. A synchronous batch over a
 * device limit runs in halves. */
#include "nn/encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

static vkbert_status check_ids(vkbert_encoder *e, const int32_t *ids, size_t n, int32_t limit,
                               const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= limit)
            return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "%s[%zu] = %d is outside [0, %d)", name, i, ids[i], limit);
    return VKBERT_OK;
}

/* The attention mask, and the pooling's: the same without the first prompt_tokens tokens
 * (sentence-transformers' include_prompt = false zeroes attention_mask[:, :prompt_length] for
 * the Pooling module only). */
static void fill_masks(const encoder_plan *p, const encoder_batch *in, float *keep, float *pool)
{
    size_t sp = vkb_pitch(p->seq_len);
    for (uint32_t b = 0; b < p->batch; b++)
        for (uint32_t s = 0; s < p->seq_len; s++) {
            size_t i = (size_t)b * p->seq_len + s, at = b * sp + s;
            keep[at] = !in->mask || in->mask[i] != 0;
            int prompt = in->prompt_tokens ? in->prompt_tokens[b] : 0;
            pool[at] = (int)s < prompt ? 0.0f : keep[at];
        }
}

static vkbert_status upload_inputs(vkbert_encoder *e, encoder_plan *p, const encoder_batch *in)
{
    size_t m = (size_t)p->batch * p->seq_len, masks = (size_t)p->batch * vkb_pitch(p->seq_len);
    int32_t *both = calloc(2 * m + 1, sizeof *both); /* absent token types are 0; the flag 0 */
    float *keep = calloc(2 * masks, sizeof *keep);
    vkbert_status status = VKBERT_OK;
    if (!both || !keep) status = vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (!status) {
        memcpy(both, in->ids, m * sizeof *both);
        if (in->types) memcpy(both + m, in->types, m * sizeof *both);
        fill_masks(p, in, keep, keep + masks);
        status = vkb_buffer_upload(e->ctx, &p->ids, 0, both, (2 * m + 1) * 4);
    }
    if (!status) status = vkb_buffer_upload(e->ctx, &p->mask, 0, keep, masks * 4);
    if (!status) status = vkb_buffer_upload(e->ctx, &p->pool_mask, 0, keep + masks, masks * 4);
    free(both);
    free(keep);
    return status;
}

/* rows [n][width] from a device buffer of rows [n][pitch(width)]. */
static vkbert_status read_rows(vkbert_encoder *e, const vkb_buffer *src, size_t n, uint32_t width,
                               float *out)
{
    uint32_t pitch = vkb_pitch(width);
    float *padded = malloc(n * pitch * sizeof *padded);
    if (!padded) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    vkbert_status status = vkb_buffer_download(e->ctx, src, 0, padded, n * pitch * 4);
    for (size_t r = 0; !status && r < n; r++)
        memcpy(out + r * width, padded + r * pitch, (size_t)width * 4);
    free(padded);
    return status;
}

static vkbert_status read_gpu_time(vkbert_encoder *e, encoder_plan *p)
{
    if (!p->queries) return VKBERT_OK;
    uint64_t ticks[2];
    VkResult result =
        vkGetQueryPoolResults(e->ctx->device, p->queries, 0, 2, sizeof ticks, ticks,
                              sizeof ticks[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (result != VK_SUCCESS) return vkb_fail_vk(e->ctx, result, "vkGetQueryPoolResults");
    p->gpu_ms = (double)(ticks[1] - ticks[0]) * e->ctx->timestamp_ns * 1e-6;
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

/* The device tensors' pass, recorded again only when the tensors are not the last ones. */
static vkbert_status record_tensors(vkbert_encoder *e, encoder_plan *p, const encoder_io *io)
{
    const vkbert_tensor *t[6] = {io->ids,    io->types,  io->mask,
                                 io->hidden, io->pooled, io->embeddings};
    uint64_t key[6];
    for (int i = 0; i < 6; i++)
        key[i] = t[i] ? t[i]->id * 2 + (i == 5 && io->normalize) : 0;
    if (p->tensor_cmd && !memcmp(key, p->tensor_key, sizeof key)) return VKBERT_OK;
    memset(p->tensor_key, 0, sizeof p->tensor_key);
    vkbert_status status = p->tensor_cmd ? VKBERT_OK : vkb_command_buffer(e->ctx, &p->tensor_cmd);
    if (!status && !p->flag.buffer) status = vkb_buffer_create_host(e->ctx, 4, &p->flag);
    if (status) return status;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult result = vkBeginCommandBuffer(p->tensor_cmd, &begin); /* resets it */
    if (result != VK_SUCCESS) return vkb_fail_vk(e->ctx, result, "vkBeginCommandBuffer");
    encoder_record_io(e, p, p->tensor_cmd, io);
    /* The flag into host memory: the pass's last barrier (before its copies out) made the
     * kernel's writes visible to transfers; read after the fence, with no staged download's
     * second submission. */
    uint64_t m = (uint64_t)p->batch * p->seq_len;
    VkBufferCopy flag = {2 * m * 4, 0, 4};
    vkCmdCopyBuffer(p->tensor_cmd, p->ids.buffer, p->flag.buffer, 1, &flag);
    vkb_cmd_barrier_to_host(p->tensor_cmd); /* vkbert_tensor_read maps the outputs */
    result = vkEndCommandBuffer(p->tensor_cmd);
    if (result != VK_SUCCESS) return vkb_fail_vk(e->ctx, result, "vkEndCommandBuffer");
    memcpy(p->tensor_key, key, sizeof key);
    return VKBERT_OK;
}

vkbert_status encoder_prepare_call(vkbert_encoder *e, encoder_plan *p, const encoder_call *c,
                                   VkCommandBuffer *cmd)
{
    vkbert_status status = c->kind == OUT_TENSORS ? record_tensors(e, p, &c->io)
                           : p->ragged            ? encoder_upload_packed(e, p, &c->in)
                                                  : upload_inputs(e, p, &c->in);
    *cmd = c->kind == OUT_TENSORS ? p->tensor_cmd : p->cmd;
    return status;
}

static uint32_t row_width(const vkbert_encoder *e, const encoder_call *c)
{
    if (c->kind == OUT_SENTENCES) return vkb_encoder_embedding_width(e);
    if (c->kind == OUT_LOGITS) return e->head.labels;
    return (uint32_t)e->config.hidden_size * (uint32_t)c->in.seq_len; /* a sequence's rows */
}

static vkbert_status read_outputs(vkbert_encoder *e, encoder_plan *p, const encoder_call *c)
{
    size_t n = (size_t)c->in.batch;
    uint32_t h = (uint32_t)e->config.hidden_size;
    if (c->kind == OUT_SENTENCES)
        return read_rows(e, c->normalize ? &p->unit : &p->stage[e->head.dense_count], n,
                         row_width(e, c), c->out);
    if (c->kind == OUT_LOGITS) return read_rows(e, &p->logits, n, e->head.labels, c->out);
    vkbert_status status = read_rows(e, &p->hidden, n * (size_t)c->in.seq_len, h, c->out);
    if (!status && c->pooled) status = read_rows(e, &p->pooled, n, h, c->pooled);
    return status;
}

/* The embedding's flag: the ids of device tensors are checked there, never on the host. The
 * outputs of a pass with bad ids are defined (rows of zeros, types read as 0) but useless. */
static vkbert_status check_flag(vkbert_encoder *e, const encoder_plan *p)
{
    int32_t flag;
    memcpy(&flag, p->flag.mapped, sizeof flag);
    if (flag & VKB_EMBEDDING_BAD_ID)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "input_ids holds an id outside [0, %d)", e->config.vocab_size);
    if (flag & VKB_EMBEDDING_BAD_TYPE)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "token_type_ids holds an id outside [0, %d)", e->config.type_vocab_size);
    return VKBERT_OK;
}

vkbert_status encoder_read_call(vkbert_encoder *e, encoder_plan *p, const encoder_call *c)
{
    if (c->kind == OUT_TENSORS) return check_flag(e, p); /* no timestamps in this pass */
    vkbert_status status = read_gpu_time(e, p);
    return status ? status : read_outputs(e, p, c);
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

/* Sequences are independent: a batch over a device limit or the memory runs in halves. */
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
    vkbert_status status = encoder_check_batch(e, &c.in);
    return status ? status : run_in_pieces(e, &c);
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
    vkbert_status status = encoder_check_batch(e, &c.in);
    return status ? status : run_in_pieces(e, &c);
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
    vkbert_status status = encoder_check_batch(e, &c.in);
    return status ? status : run_in_pieces(e, &c);
}

vkbert_status vkb_encoder_embed_host(vkbert_encoder *e, int batch, int seq_len,
                                     const int32_t *input_ids, const int32_t *token_type_ids,
                                     const int32_t *attention_mask, int normalize,
                                     float *embeddings)
{
    encoder_batch in = {batch, seq_len, input_ids, token_type_ids, attention_mask, NULL, NULL};
    return sentences(e, &in, normalize, embeddings, true);
}
