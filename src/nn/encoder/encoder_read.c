/* The read step: a finished pass's outputs, its GPU time and the embedding's flag read back
 * into the call's host arrays. */
#include "nn/encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

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

static vkbert_status read_outputs(vkbert_encoder *e, encoder_plan *p, const encoder_call *c)
{
    size_t n = (size_t)c->in.batch;
    uint32_t h = (uint32_t)e->config.hidden_size;
    if (c->kind == OUT_SENTENCES)
        return read_rows(e, c->normalize ? &p->unit : &p->stage[e->head.dense_count], n,
                         vkb_encoder_embedding_width(e), c->out);
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
