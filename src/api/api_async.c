/* The public calls of int32 tensors, the encoder on device tensors and jobs: argument checks
 * and the lock, then the internals. */
#include "api/api.h"
#include "nn/encoder/encoder.h"
#include "vk/tensor.h"

#include <stdlib.h>

static vkbert_status create_typed(vkbert_context *ctx, vkbert_dtype dtype, int ndim,
                                  const int64_t *shape, vkbert_tensor **out)
{
    if (!out) return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    return vkb_tensor_new_typed(ctx, dtype, ndim, shape, out);
}

vkbert_status vkbert_tensor_create_typed(vkbert_context *ctx, vkbert_dtype dtype, int ndim,
                                         const int64_t *shape, vkbert_tensor **out)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    VKB_RUN_LOCKED(ctx, create_typed(ctx, dtype, ndim, shape, out));
}

vkbert_dtype vkbert_tensor_dtype(const vkbert_tensor *tensor)
{
    return tensor ? tensor->dtype : VKBERT_DTYPE_FLOAT32;
}

static vkbert_status write_int32(vkbert_context *ctx, vkbert_tensor *t, const int32_t *data,
                                 size_t count)
{
    vkbert_status status = vkb_tensor_check_copy(ctx, t, data, count, VKBERT_DTYPE_INT32);
    return status ? status : vkb_tensor_write(ctx, t, data);
}

vkbert_status vkbert_tensor_write_int32(vkbert_context *ctx, vkbert_tensor *tensor,
                                        const int32_t *data, size_t count)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    VKB_RUN_LOCKED(ctx, write_int32(ctx, tensor, data, count));
}

static vkbert_status read_int32(vkbert_context *ctx, const vkbert_tensor *t, int32_t *data,
                                size_t count)
{
    vkbert_status status = vkb_tensor_check_copy(ctx, t, data, count, VKBERT_DTYPE_INT32);
    return status ? status : vkb_tensor_read(ctx, t, data);
}

vkbert_status vkbert_tensor_read_int32(vkbert_context *ctx, const vkbert_tensor *tensor,
                                       int32_t *data, size_t count)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    VKB_RUN_LOCKED(ctx, read_int32(ctx, tensor, data, count));
}

/* ---- the encoder on device tensors ---- */

static vkbert_status forward(vkbert_encoder *e, const encoder_io *io, const char *output)
{
    if (!io->hidden && !io->embeddings)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is NULL", output);
    return vkb_encoder_forward(e, io);
}

vkbert_status vkbert_encoder_forward(vkbert_encoder *encoder, const vkbert_tensor *input_ids,
                                     const vkbert_tensor *token_type_ids,
                                     const vkbert_tensor *attention_mask, vkbert_tensor *hidden,
                                     vkbert_tensor *pooled)
{
    CHECK_HANDLE(encoder, BAD_HANDLE);
    encoder_io io = {input_ids, token_type_ids, attention_mask, hidden, pooled, NULL, 0};
    VKB_RUN_LOCKED(encoder->ctx, forward(encoder, &io, "hidden"));
}

vkbert_status vkbert_encoder_embed(vkbert_encoder *encoder, const vkbert_tensor *input_ids,
                                   const vkbert_tensor *token_type_ids,
                                   const vkbert_tensor *attention_mask, int normalize,
                                   vkbert_tensor *embeddings)
{
    CHECK_HANDLE(encoder, BAD_HANDLE);
    encoder_io io = {input_ids, token_type_ids, attention_mask, NULL, NULL, embeddings, normalize};
    VKB_RUN_LOCKED(encoder->ctx, forward(encoder, &io, "embeddings"));
}

/* ---- jobs ---- */

static vkbert_status submit(vkbert_encoder *e, encoder_call *c, vkbert_job **job)
{
    if (!job) return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "job is NULL");
    *job = NULL;
    if (!c->out)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is NULL",
                        c->kind == OUT_HIDDEN ? "hidden" : "embeddings");
    if (c->pooled && !e->has_pooler)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "the model has no pooler");
    c->unlock_to_wait = true;
    /* packed where the synchronous calls pack (right padding, no hidden states) */
    return vkb_encoder_submit_host(e, c, job);
}

vkbert_status vkbert_encoder_embed_submit(vkbert_encoder *encoder, int batch, int seq_len,
                                          const int32_t *input_ids, const int32_t *token_type_ids,
                                          const int32_t *attention_mask, int normalize,
                                          float *embeddings, vkbert_job **job)
{
    CHECK_HANDLE(encoder, BAD_HANDLE);
    encoder_call c = {.in = {batch, seq_len, input_ids, token_type_ids, attention_mask, 0, NULL},
                      .kind = OUT_SENTENCES,
                      .out = embeddings,
                      .normalize = normalize};
    VKB_RUN_LOCKED(encoder->ctx, submit(encoder, &c, job));
}

vkbert_status vkbert_encoder_forward_submit(vkbert_encoder *encoder, int batch, int seq_len,
                                            const int32_t *input_ids, const int32_t *token_type_ids,
                                            const int32_t *attention_mask, float *hidden,
                                            float *pooled, vkbert_job **job)
{
    CHECK_HANDLE(encoder, BAD_HANDLE);
    encoder_call c = {.in = {batch, seq_len, input_ids, token_type_ids, attention_mask, 0, NULL},
                      .kind = OUT_HIDDEN,
                      .out = hidden,
                      .pooled = pooled};
    VKB_RUN_LOCKED(encoder->ctx, submit(encoder, &c, job));
}

/* Not VKB_RUN_LOCKED: a job of a lost context still reports its own outcome. */
static vkbert_status job_call(vkbert_job *job, vkbert_status (*call)(vkbert_job *))
{
    if (!job) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "job is NULL");
    vkbert_context *ctx = job->encoder->ctx;
    vkb_lock(ctx);
    uint32_t before = ctx->validation_count;
    vkbert_status status = call(job);
    if (!status) status = vkb_check_validation(ctx, before);
    return vkb_unlock_return(ctx, status);
}

vkbert_status vkbert_job_poll(vkbert_job *job)
{
    return job_call(job, vkb_job_poll);
}

vkbert_status vkbert_job_wait(vkbert_job *job)
{
    return job_call(job, vkb_job_wait);
}

void vkbert_job_destroy(vkbert_job *job)
{
    if (!job) return;
    vkbert_context *ctx = job->encoder->ctx; /* read before the job is freed */
    vkb_lock(ctx);
    vkb_job_free(job);
    vkb_unlock(ctx);
}
