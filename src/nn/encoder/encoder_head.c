/* What the encoder runs after its layers, in the same recorded pass: sentence-transformers'
 * Pooling, Dense and Normalize modules, and a sequence classifier over the pooler's output.
 * Head weights are small (a few hidden x hidden matrices), so they stay fp32 at fp16; int8 stores
 * them as int8 like every dense weight, so that the precision's accuracy says what it covers. */
#include "nn/encoder/encoder.h"
#include "nn/encoder/weights_q8.h"

#include <stdlib.h>
#include <string.h>

static uint64_t align256(uint64_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

static uint32_t popcount(uint32_t bits)
{
    uint32_t n = 0;
    for (; bits; bits &= bits - 1)
        n++;
    return n;
}

static vkbert_status check_spec(vkbert_encoder *e, const encoder_head_spec *s)
{
    uint32_t h = (uint32_t)e->config.hidden_size, width = popcount(s->pool_modes) * h;
    if (!s->pool_modes || s->pool_modes >= 2u * VKB_POOL_LAST_TOKEN)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "unknown pooling modes 0x%x",
                        s->pool_modes);
    if (s->dense_count < 0 || s->dense_count > ENCODER_MAX_DENSE)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "%d Dense modules; vkbert runs at most %d", s->dense_count,
                        ENCODER_MAX_DENSE);
    for (int i = 0; i < s->dense_count; i++) {
        const encoder_dense_spec *d = &s->dense[i];
        if (d->in != (int)width || d->out < 1 || !d->weight)
            return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "Dense module %d takes %d features and gives %d, but its input has %u",
                            i, d->in, d->out, width);
        if (d->activation > VKB_ACTIVATION_SIGMOID)
            return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "Dense module %d: unknown activation %u", i, d->activation);
        width = (uint32_t)d->out;
    }
    if (s->labels && (!e->has_pooler || !s->classifier_w || !s->classifier_b))
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "a classifier needs the model's pooler and its weights");
    return VKBERT_OK;
}

/* The bytes of a head weight W^T [in][pitch(out)]: fp32, or Q8_0 blocks at int8. */
static uint64_t head_weight_bytes(const vkbert_encoder *e, uint32_t in, uint32_t out)
{
    return e->head_format == VKB_FORMAT_Q8_0 ? vkb_q8_bytes(in, vkb_pitch(out))
                                             : (uint64_t)in * vkb_pitch(out) * 4;
}

/* W [out][in] -> W^T [in][pitch(out)] then the bias [pitch(out)] (zeros when absent), at *at. */
static vkbert_status upload_linear(vkbert_encoder *e, uint32_t in, uint32_t out, const float *w,
                                   const float *b, uint64_t *at, uint64_t *w_at, uint64_t *b_at)
{
    uint32_t pitch = vkb_pitch(out);
    bool q8 = e->head_format == VKB_FORMAT_Q8_0;
    size_t count = q8 ? 0 : (size_t)in * pitch;
    float *packed = malloc((count + pitch) * sizeof *packed);
    if (!packed) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < in && count; i++)
        for (uint32_t o = 0; o < pitch; o++)
            packed[(size_t)i * pitch + o] = o < out ? w[(size_t)o * in + i] : 0.0f;
    for (uint32_t o = 0; o < pitch; o++)
        packed[count + o] = b && o < out ? b[o] : 0.0f;
    *w_at = *at;
    *b_at = *at + align256(head_weight_bytes(e, in, out));
    vkbert_status status =
        q8 ? vkb_q8_upload_linear(e->ctx, &e->head_weights, *w_at, w, out, in, pitch,
                                  "a Dense or classifier weight")
           : vkb_buffer_upload(e->ctx, &e->head_weights, *w_at, packed, count * 4);
    if (!status)
        status = vkb_buffer_upload(e->ctx, &e->head_weights, *b_at, packed + count, pitch * 4);
    *at = *b_at + align256(pitch * 4);
    free(packed);
    return status;
}

static uint64_t linear_bytes(const vkbert_encoder *e, uint32_t in, uint32_t out)
{
    return align256(head_weight_bytes(e, in, out)) + align256((uint64_t)vkb_pitch(out) * 4);
}

static vkbert_status upload_head(vkbert_encoder *e, const encoder_head_spec *s, encoder_head *head)
{
    uint64_t bytes = 256; /* never empty */
    for (int i = 0; i < s->dense_count; i++)
        bytes += linear_bytes(e, (uint32_t)s->dense[i].in, (uint32_t)s->dense[i].out);
    if (s->labels) bytes += linear_bytes(e, (uint32_t)e->config.hidden_size, (uint32_t)s->labels);
    vkbert_status status = vkb_check_range(e->ctx, bytes, "the pooling head's weights");
    if (!status) status = vkb_buffer_create(e->ctx, bytes, &e->head_weights);
    uint64_t at = 0;
    for (int i = 0; i < s->dense_count && !status; i++) {
        const encoder_dense_spec *d = &s->dense[i];
        head->dense[i].in = (uint32_t)d->in, head->dense[i].out = (uint32_t)d->out;
        head->dense[i].activation = d->activation;
        status = upload_linear(e, (uint32_t)d->in, (uint32_t)d->out, d->weight, d->bias, &at,
                               &head->dense[i].w_at, &head->dense[i].b_at);
    }
    if (!status && s->labels)
        status =
            upload_linear(e, (uint32_t)e->config.hidden_size, (uint32_t)s->labels, s->classifier_w,
                          s->classifier_b, &at, &head->classifier_w_at, &head->classifier_b_at);
    return status;
}

void encoder_head_free(vkbert_encoder *e)
{
    vkb_buffer_destroy(e->ctx, &e->head_weights);
    memset(&e->head, 0, sizeof e->head);
}

vkbert_status vkb_encoder_set_head(vkbert_encoder *e, const encoder_head_spec *spec)
{
    vkbert_status status = check_spec(e, spec);
    if (status) return status;
    vkb_settle(e->ctx);
    vkb_encoder_drop_plans(e); /* the plans' head buffers have the old widths */
    encoder_head_free(e);
    encoder_head head;
    memset(&head, 0, sizeof head);
    head.pool_modes = spec->pool_modes;
    head.pool_width = popcount(spec->pool_modes) * (uint32_t)e->config.hidden_size;
    head.dense_count = spec->dense_count;
    head.labels = (uint32_t)spec->labels;
    status = upload_head(e, spec, &head);
    if (status) {
        encoder_head_free(e);
        return status;
    }
    e->head = head;
    return VKBERT_OK;
}

/* The width of stage i: 0 is the pooling, i > 0 the i-th Dense module's output. */
static uint32_t stage_width(const encoder_head *head, int i)
{
    return i == 0 ? head->pool_width : head->dense[i - 1].out;
}

uint32_t vkb_encoder_embedding_width(const vkbert_encoder *e)
{
    return stage_width(&e->head, e->head.dense_count);
}

/* ---- the plan's side ---- */

vkbert_status encoder_head_buffers(vkbert_encoder *e, encoder_plan *p)
{
    const encoder_head *head = &e->head;
    uint64_t b = p->batch;
    uint64_t mask = p->ragged ? p->tokens : b * vkb_pitch(p->seq_len);
    vkbert_status status = vkb_buffer_create(e->ctx, mask * 4, &p->pool_mask);
    for (int i = 0; i <= head->dense_count && !status; i++)
        status = vkb_buffer_create(e->ctx, b * vkb_pitch(stage_width(head, i)) * 4, &p->stage[i]);
    if (!status)
        status = vkb_buffer_create(e->ctx, b * vkb_pitch(stage_width(head, head->dense_count)) * 4,
                                   &p->unit);
    if (!status && head->labels)
        status = vkb_buffer_create(e->ctx, b * vkb_pitch(head->labels) * 4, &p->logits);
    return status;
}

void encoder_head_buffers_free(vkbert_encoder *e, encoder_plan *p)
{
    vkb_buffer_destroy(e->ctx, &p->pool_mask);
    for (int i = 0; i <= ENCODER_MAX_DENSE; i++)
        vkb_buffer_destroy(e->ctx, &p->stage[i]);
    vkb_buffer_destroy(e->ctx, &p->unit);
    vkb_buffer_destroy(e->ctx, &p->logits);
}

uint32_t encoder_head_dispatches(const vkbert_encoder *e)
{
    return 3 + (uint32_t)e->head.dense_count; /* pooling, Dense..., normalize, classifier */
}

static vkbert_status next(vkbert_encoder *e, attention_sink *sink, const char *name,
                          vkb_dispatch **out)
{
    *out = attention_sink_next(sink);
    if (!*out)
        return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "internal: encoder dispatch list full");
    (*out)->name = name;
    return VKBERT_OK;
}

/* out[B][pitch(n)] = act(a[B][k] W^T + b) with the head's weights at w_at, b_at. */
static vkbert_status prepare_linear(vkbert_encoder *e, encoder_plan *p, attention_sink *sink,
                                    vkb_view a, uint32_t lda, uint32_t k, uint32_t n,
                                    uint32_t activation, uint64_t w_at, uint64_t b_at,
                                    const vkb_buffer *out, const char *name)
{
    vkb_dispatch *d;
    vkbert_status status = next(e, sink, name, &d);
    if (status) return status;
    uint32_t pitch = vkb_pitch(n);
    vkb_matmul_desc mm = {.m = p->batch,
                          .n = n,
                          .k = k,
                          .batch = 1,
                          .lda = lda,
                          .ldb = pitch,
                          .ldc = pitch,
                          .activation = activation,
                          .b = e->head_format};
    vkb_view bias = vkb_sub(&e->head_weights, b_at, (uint64_t)pitch * 4);
    vkb_view w = vkb_sub(&e->head_weights, w_at, head_weight_bytes(e, k, n));
    return vkb_op_matmul(e->ctx, sink->pool, &mm, a, w, &bias, vkb_whole(out), d);
}

static vkbert_status prepare_pool(vkbert_encoder *e, encoder_plan *p, attention_sink *sink)
{
    vkb_dispatch *d;
    vkbert_status status = next(e, sink, "pooling", &d);
    if (status) return status;
    if (p->ragged) {
        vkb_pool_ragged_desc packed = {
            p->batch, p->tokens,          (uint32_t)e->config.hidden_size,
            e->hp,    e->head.pool_modes, vkb_pitch(e->head.pool_width)};
        return vkb_op_pool_ragged(e->ctx, sink->pool, &packed, vkb_whole(&p->hidden),
                                  vkb_whole(&p->pool_mask), vkb_whole(&p->offsets),
                                  vkb_whole(&p->stage[0]), d);
    }
    vkb_pool_desc desc = {.batch = p->batch,
                          .seq_len = p->seq_len,
                          .hidden = (uint32_t)e->config.hidden_size,
                          .ld = e->hp,
                          .mask_ld = vkb_pitch(p->seq_len),
                          .modes = e->head.pool_modes,
                          .out_ld = vkb_pitch(e->head.pool_width)};
    return vkb_op_pool(e->ctx, sink->pool, &desc, vkb_whole(&p->hidden), vkb_whole(&p->pool_mask),
                       vkb_whole(&p->stage[0]), d);
}

static vkbert_status prepare_normalize(vkbert_encoder *e, encoder_plan *p, attention_sink *sink)
{
    vkb_dispatch *d;
    vkbert_status status = next(e, sink, "normalize", &d);
    if (status) return status;
    uint32_t width = vkb_encoder_embedding_width(e);
    vkb_l2_normalize_desc desc = {p->batch, width, vkb_pitch(width)};
    return vkb_op_l2_normalize(e->ctx, sink->pool, &desc, vkb_whole(&p->stage[e->head.dense_count]),
                               vkb_whole(&p->unit), d);
}

vkbert_status encoder_head_prepare(vkbert_encoder *e, encoder_plan *p, attention_sink *sink)
{
    const encoder_head *head = &e->head;
    if (head->labels) {
        vkbert_status status =
            prepare_linear(e, p, sink, vkb_whole(&p->pooled), e->hp,
                           (uint32_t)e->config.hidden_size, head->labels, VKB_ACTIVATION_NONE,
                           head->classifier_w_at, head->classifier_b_at, &p->logits, "classifier");
        if (status) return status;
    }
    vkbert_status status = prepare_pool(e, p, sink);
    for (int i = 0; i < head->dense_count && !status; i++)
        status =
            prepare_linear(e, p, sink, vkb_whole(&p->stage[i]), vkb_pitch(stage_width(head, i)),
                           head->dense[i].in, head->dense[i].out, head->dense[i].activation,
                           head->dense[i].w_at, head->dense[i].b_at, &p->stage[i + 1], "dense");
    if (!status) status = prepare_normalize(e, p, sink);
    return status;
}
