/* The encoder for one (batch, sequence) shape: activation buffers shared by every layer, and
 * one command buffer that records the whole forward pass. */
#include "nn/encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

static vkbert_status create_buffers(vkbert_encoder *e, encoder_plan *p)
{
    vkbert_context *ctx = e->ctx;
    uint64_t m = encoder_rows(p), rows = m * e->hp * 4;
    vkbert_status status = vkb_check_range(ctx, m * e->ip * 4, "the intermediate activations");
    if (!status) status = vkb_buffer_create(ctx, ((p->ragged ? 3 : 2) * m + 1) * 4, &p->ids);
    if (!status && p->ragged)
        status = vkb_buffer_create(ctx, ((uint64_t)p->batch + 1) * 4, &p->offsets);
    if (!status && !p->ragged)
        status = vkb_buffer_create(ctx, (uint64_t)p->batch * vkb_pitch(p->seq_len) * 4, &p->mask);
    vkb_buffer *hp_rows[] = {&p->hidden, &p->attn_y, &p->h1, &p->o2};
    for (int i = 0; i < 4 && !status; i++)
        status = vkb_buffer_create(ctx, rows, hp_rows[i]);
    if (!status) status = vkb_buffer_create(ctx, m * e->ip * 4, &p->inter);
    if (!status) status = vkb_buffer_create(ctx, (uint64_t)p->batch * e->hp * 4, &p->pooled);
    uint32_t widest = e->config.intermediate_size > e->config.hidden_size
                          ? (uint32_t)e->config.intermediate_size
                          : (uint32_t)e->config.hidden_size;
    if (!status && e->weight_format == VKB_FORMAT_Q8_0_DOT)
        status = vkb_buffer_create(ctx, attention_q8_rows_bytes((uint32_t)m, widest), &p->a_q8);
    if (!status) status = encoder_head_buffers(e, p);
    if (!status && p->ragged)
        status =
            attention_scratch_ragged(e->attention[0], p->batch, p->seq_len, p->tokens, &p->scratch);
    else if (!status)
        status = attention_scratch_new(e->attention[0], p->batch, p->seq_len, &p->scratch);
    return status;
}

void encoder_plan_free(vkbert_encoder *e, encoder_plan *p)
{
    if (!p) return;
    vkbert_context *ctx = e->ctx;
    for (uint32_t i = 0; i < p->dispatch_count; i++)
        vkb_dispatch_release(ctx, &p->dispatches[i]);
    for (int i = 0; i < 2; i++)
        vkb_dispatch_release(ctx, &p->mask_dispatch[i]);
    free(p->dispatches);
    if (p->cmd) vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &p->cmd);
    if (p->tensor_cmd) vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &p->tensor_cmd);
    vkDestroyQueryPool(ctx->device, p->queries, NULL);
    vkDestroyDescriptorPool(ctx->device, p->pool, NULL);
    if (p->scratch) attention_plan_free(e->attention[0], p->scratch);
    vkb_buffer *buffers[] = {&p->ids, &p->mask,   &p->hidden, &p->attn_y,  &p->h1,  &p->inter,
                             &p->o2,  &p->pooled, &p->flag,   &p->offsets, &p->a_q8};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++)
        vkb_buffer_destroy(ctx, buffers[i]);
    encoder_head_buffers_free(e, p);
    free(p);
}

/* ---- the dispatches ---- */

static vkbert_status next(vkbert_encoder *e, attention_sink *sink, vkb_dispatch **out)
{
    *out = attention_sink_next(sink);
    return *out ? VKBERT_OK
                : vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                           "internal: encoder dispatch list full");
}

/* One dispatch per word chunk: each writes the tokens whose ids fall in its rows. */
static vkbert_status prepare_embedding(vkbert_encoder *e, encoder_plan *p, attention_sink *sink)
{
    vkbert_status status = VKBERT_OK;
    uint32_t vocab = (uint32_t)e->config.vocab_size;
    for (uint32_t k = 0; k < e->word_chunks && !status; k++) {
        vkb_dispatch *d;
        status = next(e, sink, &d);
        if (status) return status;
        d->name = "embeddings";
        uint32_t first = k * e->word_rows, rows = vocab - first;
        vkb_embedding_desc desc = {.tokens = encoder_rows(p),
                                   .seq_len = p->seq_len,
                                   .hidden = (uint32_t)e->config.hidden_size,
                                   .ld = e->hp,
                                   .position_off = 0,
                                   .type_off = e->type_off,
                                   .gamma_off = e->gamma_off,
                                   .beta_off = e->beta_off,
                                   .first_row = first,
                                   .rows = rows < e->word_rows ? rows : e->word_rows,
                                   .vocab = vocab,
                                   .types = (uint32_t)e->config.type_vocab_size,
                                   .word = e->word_format,
                                   .eps = (float)e->config.layer_norm_eps,
                                   .ragged = p->ragged,
                                   .positions = (uint32_t)e->config.max_position_embeddings};
        status =
            vkb_op_embedding(e->ctx, sink->pool, &desc, vkb_whole(&e->word[k]),
                             vkb_whole(&e->tables), vkb_whole(&p->ids), vkb_whole(&p->hidden), d);
    }
    return status;
}

static vkbert_status prepare_norm(vkbert_encoder *e, encoder_plan *p, attention_sink *sink,
                                  const vkb_buffer *x, const vkb_buffer *residual,
                                  uint64_t params_at, const vkb_buffer *out, const char *name)
{
    vkb_dispatch *d;
    vkbert_status status = next(e, sink, &d);
    if (status) return status;
    d->name = name;
    vkb_layer_norm_desc desc = {encoder_rows(p), (uint32_t)e->config.hidden_size, e->hp,
                                (float)e->config.layer_norm_eps};
    vkb_view r = vkb_whole(residual);
    return vkb_op_layer_norm(e->ctx, sink->pool, &desc, vkb_whole(x), &r,
                             vkb_sub(&e->params, params_at, (uint64_t)e->hp * 8), vkb_whole(out),
                             d);
}

/* C = act(A W^T + b) with W^T at `w_at` of e->dense ([k][n pitch]) and b at `b_at`. */
static vkbert_status prepare_dense(vkbert_encoder *e, encoder_plan *p, attention_sink *sink,
                                   vkb_matmul_desc *mm, vkb_view a, uint64_t w_at, uint64_t b_at,
                                   vkb_view c, const char *name)
{
    vkb_dispatch *d;
    vkbert_status status = e->weight_format == VKB_FORMAT_Q8_0_DOT
                               ? attention_quantize_a(e->ctx, sink, mm, &p->a_q8, &a)
                               : VKBERT_OK;
    if (!status) status = next(e, sink, &d);
    if (status) return status;
    d->name = name;
    vkb_view bias = vkb_sub(&e->params, b_at, (uint64_t)mm->ldc * 4);
    mm->b = e->weight_format;
    uint64_t w_bytes = encoder_weight_bytes(e, mm->k, mm->ldb);
    return vkb_op_matmul(e->ctx, sink->pool, mm, a, vkb_sub(&e->dense, w_at, w_bytes), &bias, c, d);
}

static vkbert_status prepare_layer(vkbert_encoder *e, encoder_plan *p, attention_sink *sink, int l)
{
    uint32_t m = encoder_rows(p), h = (uint32_t)e->config.hidden_size;
    uint32_t i = (uint32_t)e->config.intermediate_size;
    uint64_t params = (uint64_t)l * e->layer_params;
    uint64_t dense = (uint64_t)l * (e->inter_block + e->out_block);
    attention_binding bind;
    memset(&bind, 0, sizeof bind);
    if (!p->ragged) {
        bind.mask_stride[0] = vkb_pitch(p->seq_len), bind.mask_stride[3] = 1; /* key padding */
        bind.additive = 1; /* HuggingFace's (1 - mask) * float_min */
    }
    vkb_view mask = vkb_whole(p->ragged ? &p->offsets : &p->mask); /* packed: sequences' keys */
    vkbert_status status =
        attention_append(e->attention[l], p->scratch, sink, vkb_whole(&p->hidden), &mask, &bind,
                         vkb_whole(&p->attn_y));
    if (!status)
        status = prepare_norm(e, p, sink, &p->attn_y, &p->hidden, params + e->param_off[2], &p->h1,
                              "attention_layer_norm");
    vkb_matmul_desc inter = {.m = m,
                             .n = i,
                             .k = h,
                             .batch = 1,
                             .lda = e->hp,
                             .ldb = e->ip,
                             .ldc = e->ip,
                             .activation = VKB_ACTIVATION_GELU};
    if (!status)
        status = prepare_dense(e, p, sink, &inter, vkb_whole(&p->h1), dense,
                               params + e->param_off[0], vkb_whole(&p->inter), "intermediate_gelu");
    vkb_matmul_desc out = {
        .m = m, .n = h, .k = i, .batch = 1, .lda = e->ip, .ldb = e->hp, .ldc = e->hp};
    if (!status)
        status = prepare_dense(e, p, sink, &out, vkb_whole(&p->inter), dense + e->inter_block,
                               params + e->param_off[1], vkb_whole(&p->o2), "output_dense");
    if (!status)
        status = prepare_norm(e, p, sink, &p->o2, &p->h1, params + e->param_off[3], &p->hidden,
                              "output_layer_norm");
    return status;
}

/* pooled[b] = tanh(W_pool hidden[b, 0] + b_pool): the first token's row of each sequence is
 * read as A with a row pitch of a whole sequence; packed, the first rows are gathered first. */
static vkbert_status prepare_pooler(vkbert_encoder *e, encoder_plan *p, attention_sink *sink)
{
    int layers = e->config.num_hidden_layers;
    uint32_t h = (uint32_t)e->config.hidden_size;
    vkbert_status status = p->ragged ? encoder_prepare_cls(e, p, sink) : VKBERT_OK;
    if (status) return status;
    vkb_matmul_desc mm = {.m = p->batch,
                          .n = h,
                          .k = h,
                          .batch = 1,
                          .lda = p->ragged ? e->hp : p->seq_len * e->hp,
                          .ldb = e->hp,
                          .ldc = e->hp,
                          .activation = VKB_ACTIVATION_TANH};
    return prepare_dense(e, p, sink, &mm, vkb_whole(p->ragged ? &p->o2 : &p->hidden),
                         (uint64_t)layers * (e->inter_block + e->out_block),
                         (uint64_t)layers * e->layer_params, vkb_whole(&p->pooled), "pooler");
}

/* Every dispatch reads what the one before wrote; the first, what a copy or an earlier
 * submission wrote (a barrier's first scope reaches back through the queue's earlier work). */
void encoder_record_pass(const encoder_plan *p, VkCommandBuffer cmd)
{
    for (uint32_t i = 0; i < p->dispatch_count; i++) {
        vkb_cmd_barrier(cmd);
        vkb_cmd_dispatch(cmd, &p->dispatches[i]);
    }
}

static vkbert_status record(vkbert_encoder *e, encoder_plan *p)
{
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult result = vkBeginCommandBuffer(p->cmd, &begin);
    if (result != VK_SUCCESS) return vkb_fail_vk(e->ctx, result, "vkBeginCommandBuffer");
    if (p->queries) {
        vkCmdResetQueryPool(p->cmd, p->queries, 0, 2);
        vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->queries, 0);
    }
    encoder_record_pass(p, p->cmd);
    if (p->queries)
        vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->queries, 1);
    vkb_cmd_barrier_to_host(p->cmd);
    result = vkEndCommandBuffer(p->cmd);
    if (result != VK_SUCCESS) return vkb_fail_vk(e->ctx, result, "vkEndCommandBuffer");
    return VKBERT_OK;
}

/* The tensors' keep_mask dispatches, one per mask dtype, made with the plan so that
 * recording a pass never writes descriptors. */
static vkbert_status prepare_masks(vkbert_encoder *e, encoder_plan *p)
{
    vkbert_status status = VKBERT_OK;
    for (int f = 0; f < 2 && !status && !p->ragged; f++) {
        vkb_keep_mask_desc desc = {p->batch, p->seq_len, vkb_pitch(p->seq_len), f == 1};
        status = vkb_op_keep_mask(e->ctx, p->pool, &desc, vkb_whole(&p->mask),
                                  vkb_whole(&p->pool_mask), &p->mask_dispatch[f]);
        p->mask_dispatch[f].name = "keep_mask";
    }
    return status;
}

static vkbert_status prepare_all(vkbert_encoder *e, encoder_plan *p)
{
    uint32_t layers = (uint32_t)e->config.num_hidden_layers;
    /* the embeddings' chunks, the layers, the pooler (and its gather) and the head */
    p->capacity =
        e->word_chunks + 2 + layers * (ATTENTION_DISPATCHES + 6) + 1 + encoder_head_dispatches(e);
    p->dispatches = calloc(p->capacity, sizeof *p->dispatches);
    if (!p->dispatches) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    vkbert_status status = vkb_descriptor_pool(e->ctx, p->capacity + 2, &p->pool);
    if (!status) status = prepare_masks(e, p);
    if (!status) status = vkb_command_buffer(e->ctx, &p->cmd);
    if (!status && e->ctx->timestamps) status = vkb_timestamp_pool(e->ctx, 2, &p->queries);
    attention_sink sink = {p->dispatches, 0, p->capacity, p->pool};
    if (!status) status = prepare_embedding(e, p, &sink);
    for (uint32_t l = 0; l < layers && !status; l++)
        status = prepare_layer(e, p, &sink, (int)l);
    if (!status && e->has_pooler) status = prepare_pooler(e, p, &sink);
    if (!status) status = encoder_head_prepare(e, p, &sink);
    p->dispatch_count = sink.count;
    return status ? status : record(e, p);
}

/* The attention never writes a ragged plan's spare rows of O: zeros, so that the rows after it
 * stay finite. */
static vkbert_status zero_spare_rows(vkbert_encoder *e, encoder_plan *p)
{
    const vkb_buffer *o = &p->scratch->merged;
    void *zeros = calloc(1, o->size);
    if (!zeros) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    vkbert_status status = vkb_buffer_upload(e->ctx, &p->scratch->merged, 0, zeros, o->size);
    free(zeros);
    return status;
}

vkbert_status encoder_plan_make(vkbert_encoder *e, const encoder_shape *shape, encoder_plan **out)
{
    encoder_plan *p = calloc(1, sizeof *p);
    if (!p) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    p->ragged = shape->ragged;
    p->batch = shape->batch;
    p->seq_len = shape->seq_len;
    p->tokens = shape->tokens;
    vkbert_status status = create_buffers(e, p);
    if (!status && p->ragged) status = zero_spare_rows(e, p);
    if (!status) status = prepare_all(e, p);
    if (status) {
        encoder_plan_free(e, p);
        return status;
    }
    *out = p;
    return VKBERT_OK;
}

vkbert_status encoder_plan_new(vkbert_encoder *e, uint32_t batch, uint32_t seq_len,
                               encoder_plan **out)
{
    encoder_shape shape = {false, batch, seq_len, 0};
    return encoder_plan_make(e, &shape, out);
}
