/* VKBERT_PRECISION_INT8 through the encoder: with the dense weights replaced by their Q8_0
 * round trip (io/q8.h, quantized along each PyTorch row), the float64 BertModel reference must
 * match within fp32's bound, since the device then multiplies by exactly those weights; and on
 * a BERT-base shape, int8's sentence embeddings must stay close to fp32's. */
#include "io/bert_model.h"
#include "io/half.h"
#include "io/q8.h"
#include "nn/encoder/encoder.h"
#include "demo_reference.h"
#include "reference_bert.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bert_config config(int hidden, int layers, int heads, int inter, int positions)
{
    return tiny_bert_config(hidden, layers, heads, inter, positions, 97);
}

/* vkb_encoder_new is called without the lock (it takes it for its device steps). */
static vkbert_status new_encoder(vkbert_context *ctx, const bert_config *c, const bert_weights *w,
                                 vkbert_precision precision, vkbert_encoder **out)
{
    return vkb_encoder_new(ctx, c, w, precision, out);
}

/* Each row of W [out][in] replaced by its dequantized Q8_0 blocks. */
static void round_trip(float *w, int out, int in)
{
    uint64_t blocks = q8_blocks((uint64_t)in);
    int8_t *q = malloc(blocks * Q8_BLOCK);
    float *scales = malloc(blocks * sizeof *scales);
    for (int o = 0; o < out; o++) {
        float *row = w + (size_t)o * in;
        cr_assert(q8_quantize_row(row, (uint64_t)in, q, scales));
        q8_dequantize_row(q, scales, (uint64_t)in, row);
    }
    free(q);
    free(scales);
}

/* Every dense weight the int8 encoder quantizes, and the word table it keeps as fp16; the
 * other embeddings, biases and LayerNorms stay fp32. */
static void round_trip_dense(const bert_config *c, bert_weights *w)
{
    int h = c->hidden_size, i = c->intermediate_size;
    for (size_t k = 0; k < (size_t)c->vocab_size * h; k++)
        w->word[k] = half_to_float(float_to_half(w->word[k]));
    for (int l = 0; l < c->num_hidden_layers; l++) {
        bert_layer_weights *lw = &w->layers[l];
        float *square[] = {lw->q_w, lw->k_w, lw->v_w, lw->attn_out_w};
        for (int z = 0; z < 4; z++)
            round_trip(square[z], h, h);
        round_trip(lw->inter_w, i, h);
        round_trip(lw->out_w, h, i);
    }
    round_trip(w->pooler_w, h, h);
}

static void fill_ids(int32_t *ids, int32_t *mask, int batch, int seq_len, int vocab)
{
    for (int b = 0; b < batch; b++)
        for (int s = 0; s < seq_len; s++) {
            ids[b * seq_len + s] = (int32_t)((b * 31 + s * 17 + 5) % vocab);
            mask[b * seq_len + s] = s < seq_len - 3 * b; /* shorter sequences later */
        }
}

/* The head a sentence-transformers folder or a classifier adds: a Dense module over the mean
 * pooling, and 3 labels over the pooler. Its weights, round-tripped in `dense_q` and `cls_q`. */
#define DENSE_OUT 20
#define LABELS 3

typedef struct head_weights {
    float dense_w[DENSE_OUT * 64], dense_b[DENSE_OUT], cls_w[LABELS * 64], cls_b[LABELS];
    float dense_q[DENSE_OUT * 64], cls_q[LABELS * 64];
} head_weights;

static void make_head(head_weights *hw, encoder_head_spec *spec, encoder_dense_spec *dense)
{
    ref_rng rng = {99};
    ref_fill(&rng, hw->dense_w, DENSE_OUT * 64, -0.125, 0.125);
    ref_fill(&rng, hw->dense_b, DENSE_OUT, -0.1, 0.1);
    ref_fill(&rng, hw->cls_w, LABELS * 64, -0.125, 0.125);
    ref_fill(&rng, hw->cls_b, LABELS, -0.1, 0.1);
    memcpy(hw->dense_q, hw->dense_w, sizeof hw->dense_q);
    memcpy(hw->cls_q, hw->cls_w, sizeof hw->cls_q);
    round_trip(hw->dense_q, DENSE_OUT, 64);
    round_trip(hw->cls_q, LABELS, 64);
    *dense = (encoder_dense_spec){64, DENSE_OUT, VKB_ACTIVATION_TANH, hw->dense_w, hw->dense_b};
    *spec = (encoder_head_spec){VKB_POOL_MEAN, 1, dense, LABELS, hw->cls_w, hw->cls_b};
}

/* y[b][o] = act(W x[b] + bias) in double, W [out][in]. */
static void ref_linear(const float *w, const float *bias, const double *x, int batch, int in,
                       int out, bool tanh_act, double *y)
{
    for (int b = 0; b < batch; b++)
        for (int o = 0; o < out; o++) {
            double sum = bias[o];
            for (int i = 0; i < in; i++)
                sum += (double)w[(size_t)o * in + i] * x[(size_t)b * in + i];
            y[b * out + o] = tanh_act ? tanh(sum) : sum;
        }
}

static void ref_mean(const double *hidden, const int32_t *mask, int batch, int seq_len, int h,
                     double *out)
{
    for (int b = 0; b < batch; b++) {
        double count = 0;
        for (int j = 0; j < h; j++)
            out[b * h + j] = 0;
        for (int s = 0; s < seq_len; s++) {
            if (!mask[b * seq_len + s]) continue;
            count++;
            for (int j = 0; j < h; j++)
                out[b * h + j] += hidden[((size_t)b * seq_len + s) * h + j];
        }
        for (int j = 0; j < h; j++)
            out[b * h + j] /= count;
    }
}

static void check_head(vkbert_encoder *e, const head_weights *hw, const encoder_batch *in,
                       const double *hidden, const double *pooled)
{
    int batch = in->batch, h = e->config.hidden_size;
    double mean[4 * 64], want_dense[4 * DENSE_OUT], want_logits[4 * LABELS];
    ref_mean(hidden, in->mask, batch, in->seq_len, h, mean);
    ref_linear(hw->dense_q, hw->dense_b, mean, batch, h, DENSE_OUT, true, want_dense);
    ref_linear(hw->cls_q, hw->cls_b, pooled, batch, h, LABELS, false, want_logits);
    float *got = test_poisoned(4 * DENSE_OUT), *logits = test_poisoned(4 * LABELS);
    vkb_lock(e->ctx); /* held by the internal calls' callers */
    vkbert_status sentences = vkb_encoder_sentences(e, in, 0, got);
    vkbert_status classified = vkb_encoder_logits(e, in, logits);
    vkb_unlock(e->ctx);
    TEST_OK(sentences);
    TEST_OK(classified);
    test_assert_close(got, want_dense, (size_t)batch * DENSE_OUT, 1e-4, "Dense module");
    test_assert_close(logits, want_logits, (size_t)batch * LABELS, 1e-4, "classifier logits");
    free(got);
    free(logits);
}

Test(int8, matches_the_reference_of_its_dequantized_weights)
{
    /* D = 16, so the Q scale 1/4 is exact and commutes with quantization; K = 100 in the
     * output dense ends in a short block. */
    bert_config c = config(64, 2, 4, 100, 24);
    bert_weights w, wq;
    cr_assert_eq(bert_weights_random(&c, 5, &w), 0);
    cr_assert_eq(bert_weights_random(&c, 5, &wq), 0);
    round_trip_dense(&c, &wq);
    vkbert_context *ctx = test_context(0);
    vkbert_encoder *e = NULL;
    TEST_OK(new_encoder(ctx, &c, &w, VKBERT_PRECISION_INT8, &e));
    enum { B = 4, S = 13 };
    int32_t ids[B * S], mask[B * S];
    fill_ids(ids, mask, B, S, c.vocab_size);
    size_t n = (size_t)B * S * 64;
    float *hidden = test_poisoned(n), *pooled = test_poisoned(B * 64);
    double *want = malloc(n * sizeof *want), *want_pooled = malloc(B * 64 * sizeof *want_pooled);
    TEST_OK(vkbert_encoder_forward_host(e, B, S, ids, NULL, mask, hidden, pooled));
    ref_bert(&c, &wq, B, S, ids, NULL, mask, want, want_pooled);
    test_assert_close(hidden, want, n, 1e-4, "int8 hidden states");
    test_assert_close(pooled, want_pooled, B * 64, 1e-4, "int8 pooler");
    /* The same weights unquantized are measurably further: the device did quantize. */
    double *plain = malloc(n * sizeof *plain);
    ref_bert(&c, &w, B, S, ids, NULL, mask, plain, NULL);
    cr_assert(ref_compare(hidden, plain, n).relative_l2 > 1e-4, "int8 gave fp32's result");

    head_weights hw;
    encoder_head_spec spec;
    encoder_dense_spec dense;
    make_head(&hw, &spec, &dense);
    vkb_lock(ctx);
    vkbert_status head = vkb_encoder_set_head(e, &spec);
    vkb_unlock(ctx);
    TEST_OK(head);
    encoder_batch in = {.batch = B, .seq_len = S, .ids = ids, .mask = mask};
    check_head(e, &hw, &in, want, want_pooled);

    vkbert_encoder_destroy(e);
    test_context_done(ctx);
    bert_weights_free(&w);
    bert_weights_free(&wq);
    free(hidden), free(pooled), free(want), free(want_pooled), free(plain);
}

Test(int8, non_finite_weights_named)
{
    bert_config c = config(32, 1, 2, 40, 8);
    bert_weights w;
    cr_assert_eq(bert_weights_random(&c, 6, &w), 0);
    w.layers[0].inter_w[3 * 32 + 7] = NAN;
    vkbert_context *ctx = test_context(0);
    vkbert_encoder *e = NULL;
    cr_assert_eq(new_encoder(ctx, &c, &w, VKBERT_PRECISION_INT8, &e),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(e);
    cr_assert(strstr(vkbert_last_error(ctx), "intermediate.dense.weight: row 3"), "%s",
              vkbert_last_error(ctx));
    test_context_done(ctx);
    bert_weights_free(&w);
}

Test(int8, attention_layer_through_the_public_api)
{
    enum { E = 64, HEADS = 4, B = 2, S = 9 };
    test_weights w = test_weights_random(E, 11), wq = test_weights_random(E, 11);
    for (int z = 0; z < 4; z++)
        round_trip(wq.w[z], E, E);
    vkbert_context *ctx = test_context(0);
    vkbert_attention_weights aw = test_weights_api(&w);
    vkbert_attention_config int8 = {sizeof int8, VKBERT_PRECISION_INT8};
    vkbert_attention *layer = NULL;
    TEST_OK(vkbert_attention_create(ctx, E, HEADS, &aw, &int8, &layer));
    float x[B * S * E], *y = test_poisoned(B * S * E);
    double want[B * S * E];
    ref_rng rng = {12};
    ref_fill(&rng, x, B * S * E, -1, 1);
    TEST_OK(vkbert_attention_forward_host(layer, B, S, x, NULL, NULL, y));
    ref_layer ref = test_weights_ref(&wq, HEADS);
    ref_attention(&ref, B, S, x, NULL, NULL, want);
    test_assert_fp32_close(y, want, B * S * E, "int8 attention");
    /* Against the weights before quantizing: the bound `vkbert demo --precision int8` uses. */
    ref_layer plain = test_weights_ref(&w, HEADS);
    ref_attention(&plain, B, S, x, NULL, NULL, want);
    double l2 = ref_compare(y, want, B * S * E).relative_l2;
    printf("int8 attention layer against its unquantized weights: relative L2 %.3g\n", l2);
    cr_assert(l2 <= 1e-2 && l2 > 1e-5, "relative L2 %.3g is not int8's", l2);
    vkbert_attention_destroy(layer);
    test_context_done(ctx);
    test_weights_free(&w);
    test_weights_free(&wq);
    free(y);
}

/* An F16 file's matrices are read through bert_weights_rows, converted a row at a time into
 * the quantizer's column: the result must be the one of the same values given as float32. */
Test(int8, f16_folder_equals_its_values_in_memory)
{
    bert_config c = config(64, 1, 4, 100, 24);
    bert_weights w;
    char dir[TEST_DIR_SIZE];
    test_dir_make(dir, "int8");
    /* w keeps what the F16 file holds */
    tiny_bert spec = {.config = c, .seed = 9, .f16 = 1, .keep_f16 = 1, .prefix = ""};
    tiny_bert_write(dir, &spec, &w);
    vkbert_context *ctx = test_context(0);
    vkbert_encoder_config int8 = {sizeof int8, VKBERT_PRECISION_INT8};
    vkbert_encoder *file = NULL, *memory = NULL;
    TEST_OK(vkbert_encoder_load(ctx, dir, &int8, &file));
    TEST_OK(new_encoder(ctx, &c, &w, VKBERT_PRECISION_INT8, &memory));
    enum { B = 2, S = 11 };
    int32_t ids[B * S], mask[B * S];
    fill_ids(ids, mask, B, S, c.vocab_size);
    float *got = test_poisoned(B * S * 64), *want = test_poisoned(B * S * 64);
    TEST_OK(vkbert_encoder_forward_host(file, B, S, ids, NULL, mask, got, NULL));
    TEST_OK(vkbert_encoder_forward_host(memory, B, S, ids, NULL, mask, want, NULL));
    cr_assert_arr_eq(got, want, sizeof(float) * B * S * 64, "the F16 file's int8 result differs");
    vkbert_encoder_destroy(file);
    vkbert_encoder_destroy(memory);
    test_context_done(ctx);
    bert_weights_free(&w);
    test_dir_remove(dir);
    free(got), free(want);
}

/* Roughly a trained BERT's dense weights: bell-shaped with std 1/sqrt(fan_in) (BERT-base's
 * are about 0.04 for fan_in 768), one in 500 an outlier six times larger, which widens its
 * block's scale and so costs the other 31 weights precision. The bell is the sum of the
 * uniform nn.Linear init already there (std b / sqrt(3), b = 1 / sqrt(fan_in)) and two more
 * like it (Irwin-Hall: std b); no transcendental per weight, 85 M of them. */
static void realistic(float *w, size_t n, int fan_in, ref_rng *rng)
{
    double b = 1.0 / sqrt((double)fan_in);
    for (size_t k = 0; k < n; k++) {
        double x = w[k] + ref_uniform(rng, -b, b) + ref_uniform(rng, -b, b);
        w[k] = (float)(k % 500 == 17 ? 6 * x : x);
    }
}

static void realistic_dense(const bert_config *c, bert_weights *w)
{
    int h = c->hidden_size, i = c->intermediate_size;
    ref_rng rng = {2024};
    for (int l = 0; l < c->num_hidden_layers; l++) {
        bert_layer_weights *lw = &w->layers[l];
        float *square[] = {lw->q_w, lw->k_w, lw->v_w, lw->attn_out_w};
        for (int z = 0; z < 4; z++)
            realistic(square[z], (size_t)h * h, h, &rng);
        realistic(lw->inter_w, (size_t)i * h, h, &rng);
        realistic(lw->out_w, (size_t)h * i, i, &rng);
    }
    realistic(w->pooler_w, (size_t)h * h, h, &rng);
}

static double cosine(const double *a, const double *b, int n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int k = 0; k < n; k++) {
        ab += a[k] * b[k];
        aa += a[k] * a[k];
        bb += b[k] * b[k];
    }
    return ab / sqrt(aa * bb);
}

/* int8 (through integer dot products where `dot`) against fp32 on a batch of 4 x 16 with
 * padding: every sentence embedding's (mean pooling) cosine with fp32's >= 0.998. */
static void check_close_to_fp32(vkbert_context *ctx, const bert_config *c, const bert_weights *w,
                                bool dot, const char *what)
{
    enum { B = 4, S = 16 };
    int h = c->hidden_size;
    int32_t ids[B * S], mask[B * S];
    fill_ids(ids, mask, B, S, c->vocab_size);
    size_t n = (size_t)B * S * h;
    float *hidden[2] = {test_poisoned(n), test_poisoned(n)};
    vkbert_precision precisions[2] = {VKBERT_PRECISION_FP32, VKBERT_PRECISION_INT8};
    double *wide = malloc(n * sizeof *wide), *sentences[2];
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_INT8_PATH", dot ? "dot" : "dequant"));
    for (int p = 1; p >= 0; p--) { /* fp32 last: `wide` ends holding its hidden states */
        vkbert_encoder *e = NULL;
        TEST_OK(new_encoder(ctx, c, w, precisions[p], &e));
        cr_assert_eq(e->weight_format == VKB_FORMAT_Q8_0_DOT, p == 1 && dot);
        TEST_OK(vkbert_encoder_forward_host(e, B, S, ids, NULL, mask, hidden[p], NULL));
        vkbert_encoder_destroy(e);
        for (size_t k = 0; k < n; k++)
            wide[k] = hidden[p][k];
        sentences[p] = malloc((size_t)B * h * sizeof *sentences[p]);
        ref_mean(wide, mask, B, S, h, sentences[p]);
    }
    double hidden_l2 = ref_compare(hidden[1], wide, n).relative_l2, worst = 1;
    for (int b = 0; b < B; b++) {
        double cos = cosine(sentences[0] + b * h, sentences[1] + b * h, h);
        worst = cos < worst ? cos : worst;
        cr_assert(cos >= 0.998, "%s, sentence %d: cosine with fp32 %.5f < 0.998", what, b, cos);
    }
    printf("int8 (%s) against fp32, %s: hidden states' relative L2 %.3g, sentence embeddings' "
           "lowest cosine %.6f\n",
           dot ? "integer dot" : "dequantized", what, hidden_l2, worst);
    free(hidden[0]), free(hidden[1]), free(wide), free(sentences[0]), free(sentences[1]);
}

/* Built in memory: loading a 438 MB folder would take most of the test's time. One pass per
 * precision. */
Test(int8_base, bert_base_shape_close_to_fp32)
{
    bert_config c = config(768, 12, 12, 3072, 16);
    c.vocab_size = 1000;
    bert_weights w;
    cr_assert_eq(bert_weights_random(&c, 8, &w), 0);
    realistic_dense(&c, &w);
    vkbert_context *ctx = test_context(0);
    check_close_to_fp32(ctx, &c, &w, false, "12 layers of BERT-base");
    test_context_done(ctx);
    bert_weights_free(&w);
}

/* The integer-dot path (activations quantized per row as well) on a small model: K of 100
 * (intermediate) is no multiple of a block. Skipped, with the reason, without the feature. */
Test(int8, integer_dot_close_to_fp32)
{
    bert_config c = config(64, 2, 4, 100, 16);
    bert_weights w;
    cr_assert_eq(bert_weights_random(&c, 5, &w), 0);
    realistic_dense(&c, &w);
    vkbert_context *ctx = test_context(0);
    if (!ctx->int8_dot) {
        test_context_done(ctx);
        bert_weights_free(&w);
        cr_skip_test("no 4x8-bit packed integer dot product on this device: only the "
                     "dequantizing path runs here");
    }
    check_close_to_fp32(ctx, &c, &w, true, "2 layers, H 64, I 100");
    test_context_done(ctx);
    bert_weights_free(&w);
}
