/* A plan: the attention layer for one (batch, sequence) shape. Its activation buffers and
 * descriptor pool are made once; its command buffer is recorded once per binding (tensors,
 * mask form, flags) and replayed on every later call. */
#include "nn/attention/attention.h"
#include "nn/encoder/weights_q8.h"
#include "tune/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t align256(uint64_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

/* The scores [B,H,S,Sp] of the unfused path. */
static uint64_t score_bytes(const vkbert_attention *layer, const attention_plan *plan)
{
    return (uint64_t)plan->batch * layer->heads * plan->seq_len * vkb_pitch(plan->seq_len) * 4;
}

static vkbert_status create_unfused_buffers(vkbert_attention *layer, attention_plan *plan)
{
    vkbert_context *ctx = layer->ctx;
    uint64_t bh = (uint64_t)plan->batch * layer->heads;
    uint64_t head_bytes = bh * plan->seq_len * layer->head_pitch * 4;
    vkbert_status status = vkb_check_range(ctx, head_bytes, "the heads");
    if (!status) status = vkb_check_range(ctx, score_bytes(layer, plan), "the attention scores");
    if (status) return status;
    plan->heads_block = align256(head_bytes);
    status = vkb_buffer_create(ctx, 3 * plan->heads_block, &plan->heads);
    if (!status) status = vkb_buffer_create(ctx, score_bytes(layer, plan), &plan->scores);
    if (!status) status = vkb_buffer_create(ctx, head_bytes, &plan->context);
    return status;
}

static vkbert_status create_buffers(vkbert_attention *layer, attention_plan *plan)
{
    vkbert_context *ctx = layer->ctx;
    /* Heads longer than the fused kernel holds in registers take the unfused path. fp16
     * activations exist on the fused path only, so fp16 takes it wherever the head fits. */
    bool fits = layer->head_dim <= VKB_FUSED_MAX_HEAD;
    bool half = layer->weight_format == VKB_FORMAT_F16_PAIRS && fits;
    plan->activations = half ? VKB_FORMAT_F16_PAIRS : VKB_FORMAT_F32;
    /* A ragged plan has no unfused path: its sequences have no common length. */
    plan->fused =
        fits && (plan->ragged || half || vkb_tune_attention_fused(ctx, score_bytes(layer, plan)));
    uint32_t elem = vkb_format_float_bytes(plan->activations);
    uint64_t m = attention_rows(plan);
    uint64_t rows_bytes = m * layer->heads_width * elem;
    plan->qkv_block = align256(rows_bytes);
    /* The fused kernel binds the rows with their slack (and again as the mask without one). */
    vkbert_status status =
        vkb_check_range(ctx, 3 * plan->qkv_block + VKB_FUSED_SLACK * elem, "the Q, K, V rows");
    if (!status) status = vkb_check_range(ctx, rows_bytes, "the attention output");
    if (status) return status;
    status = vkb_buffer_create(ctx, 3 * plan->qkv_block + VKB_FUSED_SLACK * elem, &plan->qkv);
    if (!status) status = vkb_buffer_create(ctx, rows_bytes, &plan->merged);
    if (!status && !plan->fused) status = create_unfused_buffers(layer, plan);
    uint32_t widest = layer->heads_width > layer->embed_dim ? layer->heads_width : layer->embed_dim;
    if (!status && layer->weight_format == VKB_FORMAT_Q8_0_DOT)
        status = vkb_buffer_create(ctx, attention_q8_rows_bytes((uint32_t)m, widest), &plan->a_q8);
    return status;
}

static vkbert_status create_command_objects(vkbert_context *ctx, attention_plan *plan)
{
    vkbert_status status = vkb_descriptor_pool(ctx, ATTENTION_DISPATCHES, &plan->pool);
    if (!status) status = vkb_command_buffer(ctx, &plan->cmd);
    if (!status && ctx->timestamps)
        status = vkb_timestamp_pool(ctx, ATTENTION_DISPATCHES + 1, &plan->queries);
    return status;
}

void attention_plan_free(vkbert_attention *layer, attention_plan *plan)
{
    if (!plan) return;
    vkbert_context *ctx = layer->ctx;
    vkb_tensor_free(ctx, plan->host_x);
    vkb_tensor_free(ctx, plan->host_y);
    vkb_tensor_free(ctx, plan->host_mask);
    for (uint32_t i = 0; i < plan->dispatch_count; i++)
        vkb_dispatch_release(ctx, &plan->dispatches[i]);
    if (plan->cmd) vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &plan->cmd);
    vkDestroyQueryPool(ctx->device, plan->queries, NULL);
    vkDestroyDescriptorPool(ctx->device, plan->pool, NULL);
    vkb_buffer_destroy(ctx, &plan->qkv);
    vkb_buffer_destroy(ctx, &plan->heads);
    vkb_buffer_destroy(ctx, &plan->scores);
    vkb_buffer_destroy(ctx, &plan->context);
    vkb_buffer_destroy(ctx, &plan->merged);
    vkb_buffer_destroy(ctx, &plan->a_q8);
    free(plan);
}

uint32_t attention_rows(const attention_plan *plan)
{
    return plan->ragged ? plan->tokens : plan->batch * plan->seq_len;
}

static vkbert_status scratch_new(vkbert_attention *layer, const attention_plan *shape,
                                 attention_plan **out)
{
    attention_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return vkb_fail(layer->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    *plan = *shape;
    vkbert_status status = create_buffers(layer, plan);
    if (status) {
        attention_plan_free(layer, plan);
        return status;
    }
    *out = plan;
    return VKBERT_OK;
}

vkbert_status attention_scratch_new(vkbert_attention *layer, uint32_t batch, uint32_t seq_len,
                                    attention_plan **out)
{
    attention_plan shape = {.batch = batch, .seq_len = seq_len};
    return scratch_new(layer, &shape, out);
}

vkbert_status attention_scratch_ragged(vkbert_attention *layer, uint32_t batch, uint32_t seq_len,
                                       uint32_t tokens, attention_plan **out)
{
    if (layer->head_dim > VKB_FUSED_MAX_HEAD)
        return vkb_fail(layer->ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "internal: a ragged batch needs the fused attention (heads of %u)",
                        layer->head_dim);
    attention_plan shape = {.batch = batch, .seq_len = seq_len, .ragged = true, .tokens = tokens};
    return scratch_new(layer, &shape, out);
}

vkbert_status attention_plan_get(vkbert_attention *layer, uint32_t batch, uint32_t seq_len,
                                 attention_plan **out)
{
    for (uint32_t i = 0; i < layer->plan_count; i++) {
        if (layer->plans[i]->batch == batch && layer->plans[i]->seq_len == seq_len) {
            *out = layer->plans[i];
            layer->last_plan = i;
            return VKBERT_OK;
        }
    }
    attention_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return vkb_fail(layer->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    plan->batch = batch;
    plan->seq_len = seq_len;
    vkbert_status status = create_buffers(layer, plan);
    if (!status) status = create_command_objects(layer->ctx, plan);
    if (status) {
        attention_plan_free(layer, plan);
        return status;
    }
    if (layer->plan_count == ATTENTION_MAX_PLANS) { /* evict the oldest */
        attention_plan_free(layer, layer->plans[0]);
        memmove(layer->plans, layer->plans + 1, (ATTENTION_MAX_PLANS - 1) * sizeof *layer->plans);
        layer->plan_count--;
    }
    layer->last_plan = layer->plan_count;
    layer->plans[layer->plan_count++] = plan;
    *out = plan;
    return VKBERT_OK;
}

void attention_plan_drop(vkbert_attention *layer, attention_plan *plan)
{
    for (uint32_t i = 0; i < layer->plan_count; i++) {
        if (layer->plans[i] != plan) continue;
        attention_plan_free(layer, plan);
        memmove(layer->plans + i, layer->plans + i + 1,
                (layer->plan_count - i - 1) * sizeof *layer->plans);
        layer->plan_count--;
        layer->last_plan = 0;
        return;
    }
}

/* ---- the dispatches ---- */

vkb_dispatch *attention_sink_next(attention_sink *sink)
{
    if (sink->count == sink->capacity) return NULL;
    vkb_dispatch *d = &sink->items[sink->count++];
    memset(d, 0, sizeof *d);
    return d;
}

static vkbert_status sink_full(vkbert_attention *layer)
{
    return vkb_fail(layer->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "internal: dispatch list full");
}

uint64_t attention_q8_rows_bytes(uint32_t rows, uint32_t k)
{
    return (uint64_t)rows * vkb_q8_rows_pitch(k) * 4;
}

vkbert_status attention_quantize_a(vkbert_context *ctx, attention_sink *sink, vkb_matmul_desc *mm,
                                   const vkb_buffer *a_q, vkb_view *a)
{
    vkb_dispatch *d = attention_sink_next(sink);
    if (!d) return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "internal: dispatch list full");
    d->name = "quantize_rows";
    vkb_view out = vkb_sub(a_q, 0, attention_q8_rows_bytes(mm->m, mm->k));
    vkbert_status status = vkb_op_quantize_rows(ctx, sink->pool, mm->m, mm->k, mm->lda, *a, out, d);
    mm->lda = vkb_q8_rows_pitch(mm->k);
    mm->a = VKB_FORMAT_Q8_ROWS;
    *a = out;
    return status;
}

static vkb_view block(const vkb_buffer *buffer, uint64_t block_bytes, int index, uint64_t bytes)
{
    return vkb_sub(buffer, block_bytes * (uint64_t)index, bytes);
}

/* Q, K and V [B*S][H*Dp] into the three blocks of plan->qkv: one matmul batched over the
 * three weight blocks, or three where the blocks together exceed one storage buffer. */
static vkbert_status prepare_projections(vkbert_attention *layer, attention_plan *plan,
                                         attention_sink *sink, vkb_view x)
{
    vkbert_context *ctx = layer->ctx;
    uint32_t m = attention_rows(plan), width = layer->heads_width;
    vkb_format weights = layer->weight_format;
    bool q8 = vkb_format_is_q8(weights);
    uint32_t w_size = vkb_format_float_bytes(weights);
    uint32_t elem = vkb_format_float_bytes(plan->activations);
    uint64_t w_bytes =
        q8 ? vkb_q8_bytes(layer->embed_dim, width) : (uint64_t)layer->embed_dim * width * w_size;
    uint64_t out_bytes = (uint64_t)m * width * elem;
    /* The Q8_0 matmul takes a batch of 1 (ops.h). */
    bool one = !q8 && 3 * layer->weight_block <= ctx->props.limits.maxStorageBufferRange;
    vkb_matmul_desc mm = {.m = m,
                          .n = width,
                          .k = layer->embed_dim,
                          .batch = one ? 3 : 1,
                          .lda = layer->pitch,
                          .ldb = width,
                          .ldc = width,
                          .batch_b = layer->weight_block / w_size,
                          .batch_c = plan->qkv_block / elem,
                          .batch_bias = layer->bias_block / 4,
                          .b = weights,
                          .c = plan->activations};
    static const char *names[3] = {"q_projection", "k_projection", "v_projection"};
    if (weights == VKB_FORMAT_Q8_0_DOT) {
        vkbert_status status = attention_quantize_a(ctx, sink, &mm, &plan->a_q8, &x);
        if (status) return status;
    }
    for (int z = 0; z < (one ? 1 : 3); z++) {
        vkb_dispatch *proj = attention_sink_next(sink);
        if (!proj) return sink_full(layer);
        proj->name = one ? "qkv_projection" : names[z];
        uint64_t count = one ? 3 : 1; /* blocks bound */
        vkb_view bias = vkb_sub(&layer->biases, layer->bias_block * z,
                                layer->bias_block * (count - 1) + width * 4);
        vkb_view weights = vkb_sub(&layer->weights, layer->weight_block * z,
                                   layer->weight_block * (count - 1) + w_bytes);
        vkb_view out =
            vkb_sub(&plan->qkv, plan->qkv_block * z, plan->qkv_block * (count - 1) + out_bytes);
        vkbert_status status = vkb_op_matmul(ctx, sink->pool, &mm, x, weights, &bias, out, proj);
        if (status) return status;
    }
    return VKBERT_OK;
}

static vkbert_status prepare_fused(vkbert_attention *layer, attention_plan *plan,
                                   attention_sink *sink, const vkb_view *mask,
                                   const attention_binding *bind)
{
    vkb_dispatch *fused = attention_sink_next(sink);
    if (!fused) return sink_full(layer);
    fused->name = "attention_fused";
    uint64_t block_elems = plan->qkv_block / vkb_format_float_bytes(plan->activations);
    vkb_fused_desc d = {.batch = plan->batch,
                        .heads = layer->heads,
                        .seq_len = plan->seq_len,
                        .head_dim = layer->head_dim,
                        .ld = layer->heads_width,
                        .ld_out = layer->heads_width,
                        .q_off = 0,
                        .k_off = block_elems,
                        .v_off = 2 * block_elems,
                        .has_mask = mask && !plan->ragged,
                        .ragged = plan->ragged,
                        .tokens = plan->tokens,
                        .causal = bind->causal,
                        .dropout = bind->dropout,
                        .seed = bind->seed,
                        .additive = bind->additive,
                        .rows = plan->activations,
                        .out = plan->activations};
    memcpy(d.mask_stride, bind->mask_stride, sizeof d.mask_stride);
    vkb_view rows = vkb_whole(&plan->qkv), out = vkb_whole(&plan->merged);
    return vkb_op_attention_fused(layer->ctx, sink->pool, &d, rows, mask ? *mask : rows, out,
                                  fused);
}

static vkbert_status prepare_splits(vkbert_attention *layer, attention_plan *plan,
                                    attention_sink *sink)
{
    static const char *names[3] = {"q_head_split", "k_head_split", "v_head_split"};
    uint64_t rows_bytes = (uint64_t)plan->batch * plan->seq_len * layer->heads_width * 4;
    vkb_heads_desc hd = {plan->batch,     plan->seq_len,      layer->heads,
                         layer->head_dim, layer->heads_width, layer->head_pitch};
    for (int z = 0; z < 3; z++) {
        vkb_dispatch *split = attention_sink_next(sink);
        if (!split) return sink_full(layer);
        split->name = names[z];
        vkbert_status status = vkb_op_head_split(
            layer->ctx, sink->pool, &hd, block(&plan->qkv, plan->qkv_block, z, rows_bytes),
            block(&plan->heads, plan->heads_block, z, plan->heads_block), split);
        if (status) return status;
    }
    return VKBERT_OK;
}

/* Split, Q*K^T, masked softmax, P*V, merge: the scores go through memory. */
static vkbert_status prepare_unfused(vkbert_attention *layer, attention_plan *plan,
                                     attention_sink *sink, const vkb_view *mask,
                                     const attention_binding *bind)
{
    vkbert_context *ctx = layer->ctx;
    uint32_t s = plan->seq_len, sp = vkb_pitch(s), dp = layer->head_pitch;
    uint32_t bh = plan->batch * layer->heads;
    vkbert_status status = prepare_splits(layer, plan, sink);
    if (status) return status;
    uint64_t hb = plan->heads_block;
    vkb_view q = block(&plan->heads, hb, 0, hb), k = block(&plan->heads, hb, 1, hb);
    vkb_view v = block(&plan->heads, hb, 2, hb);
    vkb_view scores = vkb_whole(&plan->scores), context = vkb_whole(&plan->context);

    vkb_dispatch *qk = attention_sink_next(sink);
    if (!qk) return sink_full(layer);
    qk->name = "scores_qk";
    vkb_matmul_desc qk_desc = {.m = s,
                               .n = s,
                               .k = layer->head_dim,
                               .batch = bh,
                               .lda = dp,
                               .ldb = dp,
                               .ldc = sp,
                               .batch_a = (uint64_t)s * dp,
                               .batch_b = (uint64_t)s * dp,
                               .batch_c = (uint64_t)s * sp,
                               .b_trans = true};
    status = vkb_op_matmul(ctx, sink->pool, &qk_desc, q, k, NULL, scores, qk);
    if (status) return status;

    vkb_dispatch *sm = attention_sink_next(sink);
    if (!sm) return sink_full(layer);
    sm->name = "softmax";
    vkb_softmax_desc sm_desc = {.batch = plan->batch,
                                .heads = layer->heads,
                                .seq_len = s,
                                .ld = sp,
                                .scale = 1.0f, /* 1/sqrt(D) is in W_q */
                                .has_mask = mask != NULL,
                                .causal = bind->causal,
                                .dropout = bind->dropout,
                                .seed = bind->seed,
                                .additive = bind->additive};
    memcpy(sm_desc.mask_stride, bind->mask_stride, sizeof sm_desc.mask_stride);
    status = vkb_op_softmax(ctx, sink->pool, &sm_desc, scores, mask ? *mask : scores, sm);
    if (status) return status;

    vkb_dispatch *pv = attention_sink_next(sink);
    if (!pv) return sink_full(layer);
    pv->name = "context_pv";
    vkb_matmul_desc pv_desc = {.m = s,
                               .n = layer->head_dim,
                               .k = s,
                               .batch = bh,
                               .lda = sp,
                               .ldb = dp,
                               .ldc = dp,
                               .batch_a = (uint64_t)s * sp,
                               .batch_b = (uint64_t)s * dp,
                               .batch_c = (uint64_t)s * dp};
    status = vkb_op_matmul(ctx, sink->pool, &pv_desc, scores, v, NULL, context, pv);
    if (status) return status;

    vkb_dispatch *merge = attention_sink_next(sink);
    if (!merge) return sink_full(layer);
    merge->name = "head_merge";
    vkb_heads_desc hd = {plan->batch,     plan->seq_len,      layer->heads,
                         layer->head_dim, layer->heads_width, dp};
    return vkb_op_head_merge(ctx, sink->pool, &hd, context, vkb_whole(&plan->merged), merge);
}

static vkbert_status prepare_output(vkbert_attention *layer, attention_plan *plan,
                                    attention_sink *sink, vkb_view y)
{
    uint32_t m = attention_rows(plan), ep = layer->pitch;
    vkb_matmul_desc mm = {.m = m,
                          .n = layer->embed_dim,
                          .k = layer->heads_width,
                          .batch = 1,
                          .lda = layer->heads_width,
                          .ldb = ep,
                          .ldc = ep,
                          .a = plan->activations,
                          .b = layer->weight_format};
    vkb_view bias = block(&layer->biases, layer->bias_block, 3, ep * 4);
    uint64_t w_bytes = vkb_format_is_q8(mm.b) ? vkb_q8_bytes(layer->heads_width, ep)
                                              : (uint64_t)layer->heads_width * ep *
                                                    vkb_format_float_bytes(layer->weight_format);
    vkb_view weights = block(&layer->weights, layer->weight_block, 3, w_bytes);
    vkb_view a = vkb_whole(&plan->merged);
    vkbert_status status = mm.b == VKB_FORMAT_Q8_0_DOT
                               ? attention_quantize_a(layer->ctx, sink, &mm, &plan->a_q8, &a)
                               : VKBERT_OK;
    vkb_dispatch *out = status ? NULL : attention_sink_next(sink);
    if (!status && !out) return sink_full(layer);
    if (status) return status;
    out->name = "out_projection";
    return vkb_op_matmul(layer->ctx, sink->pool, &mm, a, weights, &bias, y, out);
}

vkbert_status attention_append(vkbert_attention *layer, attention_plan *scratch,
                               attention_sink *sink, vkb_view x, const vkb_view *mask,
                               const attention_binding *bind, vkb_view y)
{
    vkbert_status status = prepare_projections(layer, scratch, sink, x);
    if (!status && scratch->fused) status = prepare_fused(layer, scratch, sink, mask, bind);
    if (!status && !scratch->fused) status = prepare_unfused(layer, scratch, sink, mask, bind);
    if (!status) status = prepare_output(layer, scratch, sink, y);
    return status;
}

void attention_record_into(const attention_plan *plan, VkCommandBuffer cmd, VkQueryPool queries)
{
    /* The leading barrier orders this pass after earlier reads and writes of the scratch (a
     * previous replay), and after compute and transfer writes of the inputs. */
    vkb_cmd_barrier(cmd);
    if (queries) {
        vkCmdResetQueryPool(cmd, queries, 0, ATTENTION_DISPATCHES + 1);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0);
    }
    for (uint32_t i = 0; i < plan->dispatch_count; i++) {
        if (i > 0) vkb_cmd_barrier(cmd);
        vkb_cmd_dispatch(cmd, &plan->dispatches[i]);
        if (queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, i + 1);
    }
}

vkbert_status attention_plan_prepare(vkbert_attention *layer, attention_plan *plan,
                                     const vkbert_tensor *x, const vkbert_tensor *mask,
                                     const vkbert_tensor *y, const attention_binding *bind)
{
    vkbert_context *ctx = layer->ctx;
    plan->recorded = false;
    VkResult result = vkResetDescriptorPool(ctx->device, plan->pool, 0);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkResetDescriptorPool");
    for (uint32_t i = 0; i < plan->dispatch_count; i++)
        vkb_dispatch_release(ctx, &plan->dispatches[i]);
    memset(plan->dispatches, 0, sizeof plan->dispatches);
    plan->dispatch_count = 0;
    attention_sink sink = {plan->dispatches, 0, ATTENTION_DISPATCHES, plan->pool};
    vkb_view mask_view = mask ? vkb_tensor_binding(mask) : (vkb_view){0};
    vkbert_status status = attention_append(layer, plan, &sink, vkb_tensor_binding(x),
                                            mask ? &mask_view : NULL, bind, vkb_tensor_binding(y));
    plan->dispatch_count = sink.count;
    if (status) return status;
    plan->binding = *bind;
    return VKBERT_OK;
}

static vkbert_status prepare_and_record(vkbert_attention *layer, attention_plan *plan,
                                        const vkbert_tensor *x, const vkbert_tensor *mask,
                                        vkbert_tensor *y, const attention_binding *bind)
{
    vkbert_context *ctx = layer->ctx;
    vkbert_status status = attention_plan_prepare(layer, plan, x, mask, y, bind);
    if (status) return status;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult result = vkBeginCommandBuffer(plan->cmd, &begin);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkBeginCommandBuffer");
    attention_record_into(plan, plan->cmd, plan->queries);
    vkb_cmd_barrier_to_host(plan->cmd);
    result = vkEndCommandBuffer(plan->cmd);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkEndCommandBuffer");
    plan->recorded = true;
    return VKBERT_OK;
}

static vkbert_status read_timings(vkbert_attention *layer, attention_plan *plan)
{
    layer->timing_count = 0;
    if (!plan->queries) return VKBERT_OK;
    uint64_t ticks[ATTENTION_DISPATCHES + 1];
    uint32_t n = plan->dispatch_count + 1;
    VkResult result =
        vkGetQueryPoolResults(layer->ctx->device, plan->queries, 0, n, sizeof ticks, ticks,
                              sizeof ticks[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (result != VK_SUCCESS) return vkb_fail_vk(layer->ctx, result, "vkGetQueryPoolResults");
    for (uint32_t i = 0; i < plan->dispatch_count; i++) {
        layer->timings[i].name = plan->dispatches[i].name;
        layer->timings[i].milliseconds =
            (double)(ticks[i + 1] - ticks[i]) * layer->ctx->timestamp_ns * 1e-6;
    }
    layer->timing_count = plan->dispatch_count;
    return VKBERT_OK;
}

vkbert_status attention_plan_run(vkbert_attention *layer, attention_plan *plan,
                                 const vkbert_tensor *x, const vkbert_tensor *mask,
                                 const attention_binding *bind, vkbert_tensor *y)
{
    if (!plan->recorded || memcmp(&plan->binding, bind, sizeof *bind)) {
        vkbert_status status = prepare_and_record(layer, plan, x, mask, y, bind);
        if (status) return status;
    }
    vkbert_status status = vkb_submit_wait(layer->ctx, plan->cmd);
    if (status) return status;
    return read_timings(layer, plan);
}
