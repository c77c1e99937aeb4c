/* What crosses between the host and the device for one pass: the inputs uploaded (or the
 * device tensors' copies recorded), then the outputs, the GPU time and the embedding's flag
 * read back. */
#include "nn/encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

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

uint32_t encoder_row_width(const vkbert_encoder *e, const encoder_call *c)
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
                         encoder_row_width(e, c), c->out);
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
