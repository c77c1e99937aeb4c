/* The attention layer's weights: packed (transposed, heads padded, Q scaled) into the layouts
 * its kernels read, as fp32, fp16 or Q8_0, and written into the layer's buffers. Host work:
 * through a writer, so that a load does it without the context's lock. */
#include "io/half.h"
#include "nn/attention/attention.h"
#include "nn/encoder/weights_q8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Row x of the heads' padded layout as a row of W (head x / dp, its row x % dp), UINT32_MAX for
 * the padding between heads. */
static uint32_t head_row(const vkbert_attention *l, uint32_t x)
{
    uint32_t t = x % l->head_pitch;
    return t < l->head_dim ? (x / l->head_pitch) * l->head_dim + t : UINT32_MAX;
}

/* Columns of the packed block written together: 32 rows of W are read side by side, each
 * from start to end, while rows of the block are written 128 bytes at a time. */
#define PACK_COLUMNS 32u

/* Both projections are stored transposed, the layout the matmul reads as B [K,N] with
 * contiguous vec4 columns. An input projection is [E][H*Dp]: its outputs laid out by head with
 * pitch dp (D rounded up to 4), zero columns between, so that every head starts 16-byte
 * aligned; Q's weights and bias carry the 1/sqrt(D) of the scores (`scale`). The output
 * projection is [H*Dp][Ep]: rows h*dp + t of W_o^T, zero rows between, and zero columns past
 * E. Column c of the block is row src[c] of W; its row r is W's column at(r). */
static void pack_projection(const vkbert_attention *l, const float *w, bool in_projection,
                            float scale, float *out)
{
    uint32_t e = l->embed_dim, rows = in_projection ? e : l->heads_width;
    uint32_t cols = in_projection ? l->heads_width : l->pitch;
    for (uint32_t c0 = 0; c0 < cols; c0 += PACK_COLUMNS) {
        uint32_t n = cols - c0 < PACK_COLUMNS ? cols - c0 : PACK_COLUMNS, src[PACK_COLUMNS];
        for (uint32_t k = 0; k < n; k++)
            src[k] = in_projection ? head_row(l, c0 + k) : c0 + k < e ? c0 + k : UINT32_MAX;
        for (uint32_t r = 0; r < rows; r++) {
            uint32_t at = in_projection ? r : head_row(l, r);
            float *row = out + (size_t)r * cols + c0;
            for (uint32_t k = 0; k < n; k++)
                row[k] = src[k] == UINT32_MAX || at == UINT32_MAX
                             ? 0.0f
                             : w[(size_t)src[k] * e + at] * scale;
        }
    }
}

static void pack_in_bias(const vkbert_attention *l, const float *b, float scale, float *out)
{
    uint32_t d = l->head_dim, dp = l->head_pitch;
    for (uint32_t col = 0; col < l->heads_width; col++)
        out[col] = col % dp < d ? b[(col / dp) * d + col % dp] * scale : 0.0f;
}

size_t attention_weight_elements(const vkbert_attention *l)
{
    size_t in = (size_t)l->embed_dim * l->heads_width, out = (size_t)l->heads_width * l->pitch;
    return in > out ? in : out;
}

/* The same layouts quantized (VKBERT_PRECISION_INT8): B's columns are W's rows, each
 * quantized along the input dimension, the heads' padding zero. */
typedef struct projection_source {
    const vkbert_attention *l;
    const float *w;
    float scale;
} projection_source;

/* Column n of W_in^T [E][H*Dp]: row h*d + t of W, scaled, for t < d. */
static bool in_projection_column(const void *source, uint32_t n, float *column)
{
    const projection_source *s = source;
    uint32_t e = s->l->embed_dim, d = s->l->head_dim, dp = s->l->head_pitch, t = n % dp;
    const float *row = t < d ? s->w + (size_t)((n / dp) * d + t) * e : NULL;
    for (uint32_t i = 0; i < e; i++)
        column[i] = row ? row[i] * s->scale : 0.0f;
    return true;
}

/* Column o of W_o^T [H*Dp][Ep]: row o of W, a zero at each head's padding. */
static bool out_projection_column(const void *source, uint32_t o, float *column)
{
    const projection_source *s = source;
    uint32_t e = s->l->embed_dim, d = s->l->head_dim, dp = s->l->head_pitch;
    for (uint32_t r = 0; r < s->l->heads_width; r++)
        column[r] = r % dp < d ? s->w[(size_t)o * e + (r / dp) * d + r % dp] : 0.0f;
    return true;
}

static vkbert_status upload_q8(vkbert_attention *layer, vkb_writer *out, int z, const float *w,
                               float scale, const char *name)
{
    projection_source source = {layer, w, scale};
    uint32_t e = layer->embed_dim, width = layer->heads_width;
    bool dot = layer->weight_format == VKB_FORMAT_Q8_0_DOT;
    q8_matrix in = {e, width, width, in_projection_column, &source, name, dot};
    q8_matrix o = {width, e, layer->pitch, out_projection_column, &source, name, dot};
    return vkb_q8_upload(out, &layer->weights, layer->weight_block * z, z < 3 ? &in : &o);
}

static vkbert_status check_finite(vkb_writer *out, const float *data, size_t count,
                                  const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (!isfinite(data[i]))
            return vkb_write_fail(out, VKBERT_ERROR_INVALID_ARGUMENT, "%s[%zu] is not finite", name,
                                  i);
    return VKBERT_OK;
}

/* Weight block z packed as fp32 into `packed`, uploaded as fp16 through `halves` when given. */
static vkbert_status upload_packed(vkbert_attention *layer, vkb_writer *out, int z, const float *w,
                                   float scale, float *packed, uint16_t *halves)
{
    size_t elems = attention_weight_elements(layer);
    pack_projection(layer, w, z < 3, scale, packed);
    for (size_t i = 0; halves && i < elems; i++)
        halves[i] = float_to_half(packed[i]);
    return vkb_write(out, &layer->weights, layer->weight_block * z,
                     halves ? (const void *)halves : packed, elems * (halves ? 2 : 4));
}

static const char *const names[4][2] = {{"q_weight", "q_bias"},
                                        {"k_weight", "k_bias"},
                                        {"v_weight", "v_bias"},
                                        {"out_weight", "out_bias"}};

/* Every matrix and bias present and finite, before anything is written. */
static vkbert_status check_weights(const vkbert_attention *layer, const float *const weights[4],
                                   const float *const biases[4], vkb_writer *out)
{
    uint32_t e = layer->embed_dim;
    for (int z = 0; z < 4; z++) {
        if (!weights[z] || !biases[z])
            return vkb_write_fail(out, VKBERT_ERROR_INVALID_ARGUMENT, "%s is NULL",
                                  weights[z] ? names[z][1] : names[z][0]);
        vkbert_status status = check_finite(out, weights[z], (size_t)e * e, names[z][0]);
        if (!status) status = check_finite(out, biases[z], e, names[z][1]);
        if (status) return status;
    }
    return VKBERT_OK;
}

vkbert_status attention_upload_weights(vkbert_attention *layer, const vkbert_attention_weights *w,
                                       vkb_writer *out)
{
    uint32_t e = layer->embed_dim;
    const float *weights[4] = {w->q_weight, w->k_weight, w->v_weight, w->out_weight};
    const float *biases[4] = {w->q_bias, w->k_bias, w->v_bias, w->out_bias};
    vkbert_status status = check_weights(layer, weights, biases, out);
    if (status) return status;
    /* Q8_0 quantizes through a bounded scratch of its own: packed holds a bias. */
    bool q8 = vkb_format_is_q8(layer->weight_format);
    bool half = layer->weight_format == VKB_FORMAT_F16_PAIRS;
    size_t elems = q8 ? layer->bias_block / 4 : attention_weight_elements(layer);
    float *packed = calloc(elems, sizeof *packed);
    uint16_t *halves = half ? malloc(elems * sizeof *halves) : NULL;
    if (!packed || (half && !halves)) {
        free(packed);
        return vkb_write_fail(out, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    float q_scale = (float)(1.0 / sqrt((double)layer->head_dim));
    for (int z = 0; z < 4 && !status; z++) {
        float scale = z == 0 ? q_scale : 1.0f;
        if (q8)
            status = upload_q8(layer, out, z, weights[z], scale, names[z][0]);
        else
            status = upload_packed(layer, out, z, weights[z], scale, packed, halves);
        memset(packed, 0, layer->bias_block);
        if (z < 3)
            pack_in_bias(layer, biases[z], scale, packed);
        else
            memcpy(packed, biases[z], e * 4);
        if (!status)
            status =
                vkb_write(out, &layer->biases, layer->bias_block * z, packed, layer->bias_block);
    }
    free(halves);
    free(packed);
    return status;
}
