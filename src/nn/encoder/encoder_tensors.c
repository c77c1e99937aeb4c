/* The encoder between device tensors: the checks, and the pass recorded for the caller. */
#include "nn/encoder/encoder.h"
#include "vk/tensor.h"

#include <stdio.h>
#include <string.h>

/* `t` is of `dtype` with the dimensions `dims` (ndim entries). */
static vkbert_status check_tensor(vkbert_encoder *e, const vkbert_tensor *t, const char *name,
                                  vkbert_dtype dtype, int ndim, const int64_t *dims)
{
    if (t->dtype != dtype)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is %s; it must be %s", name,
                        vkb_dtype_name(t->dtype), vkb_dtype_name(dtype));
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == dims[i];
    if (same) return VKBERT_OK;
    char want[96] = "", got[96] = "";
    for (int i = 0; i < ndim; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "",
                 (long long)dims[i]);
    for (int i = 0; i < t->ndim; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? "," : "",
                 (long long)t->shape[i]);
    return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s has shape [%s]; it must be [%s]",
                    name, got, want);
}

static vkbert_status check_inputs(vkbert_encoder *e, const encoder_io *io, encoder_batch *shape)
{
    const vkbert_tensor *ids = io->ids;
    if (!ids) return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "input_ids is NULL");
    if (ids->ndim != 2)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "input_ids has %d dimensions; it must be [batch, seq_len]", ids->ndim);
    if (ids->shape[1] > e->config.max_position_embeddings || ids->shape[0] > INT32_MAX)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "input_ids [%lld,%lld]: a sequence is at most max_position_embeddings "
                        "%d tokens",
                        (long long)ids->shape[0], (long long)ids->shape[1],
                        e->config.max_position_embeddings);
    *shape = (encoder_batch){(int)ids->shape[0], (int)ids->shape[1], NULL, NULL, NULL, 0, NULL};
    vkbert_status status = check_tensor(e, ids, "input_ids", VKBERT_DTYPE_INT32, 2, ids->shape);
    if (!status && io->types)
        status = check_tensor(e, io->types, "token_type_ids", VKBERT_DTYPE_INT32, 2, ids->shape);
    /* a tensor is int32 or float32, and keep_mask reads either */
    if (!status && io->mask)
        status = check_tensor(e, io->mask, "attention_mask", io->mask->dtype, 2, ids->shape);
    return status;
}

vkbert_status vkb_encoder_check_io(vkbert_encoder *e, const encoder_io *io, encoder_batch *shape)
{
    vkbert_status status = check_inputs(e, io, shape);
    if (status) return status;
    int64_t b = shape->batch, s = shape->seq_len, h = e->config.hidden_size;
    int64_t hidden[3] = {b, s, h}, pooled[2] = {b, h};
    int64_t embeddings[2] = {b, vkb_encoder_embedding_width(e)};
    if (io->pooled && !e->has_pooler)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "the model has no pooler");
    if (io->hidden) status = check_tensor(e, io->hidden, "hidden", VKBERT_DTYPE_FLOAT32, 3, hidden);
    if (!status && io->pooled)
        status = check_tensor(e, io->pooled, "pooled", VKBERT_DTYPE_FLOAT32, 2, pooled);
    if (!status && io->embeddings)
        status = check_tensor(e, io->embeddings, "embeddings", VKBERT_DTYPE_FLOAT32, 2, embeddings);
    return status;
}

vkbert_status vkb_encoder_forward(vkbert_encoder *e, const encoder_io *io)
{
    encoder_call c = {.kind = OUT_TENSORS, .io = *io, .unlock_to_wait = true};
    vkbert_status status = vkb_encoder_check_io(e, io, &c.in);
    return status ? status : vkb_encoder_run_call(e, &c);
}

vkbert_status vkb_encoder_record(vkbert_encoder *e, VkCommandBuffer cmd, const encoder_io *io)
{
    encoder_batch shape;
    vkbert_status status = vkb_encoder_check_io(e, io, &shape);
    if (status) return status;
    encoder_plan *p = e->recorded;
    if (!p || p->batch != (uint32_t)shape.batch || p->seq_len != (uint32_t)shape.seq_len) {
        encoder_plan_free(e, p);
        e->recorded = NULL;
        status = encoder_plan_new(e, (uint32_t)shape.batch, (uint32_t)shape.seq_len, &p);
        if (status) return status;
        e->recorded = p;
    }
    encoder_record_io(e, p, cmd, io);
    return VKBERT_OK;
}
