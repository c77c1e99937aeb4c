/* The integer-dot path of int8 weights: shaders/quantize_rows.comp against a CPU reference of
 * its rule, shaders/matmul_dot.comp against the float64 product of the quantized A (as the
 * device quantized it) and the dequantized B (io/q8.h), and the refusals where the device
 * has no integer dot product. Outputs poisoned, validation on. */
#include "io/q8.h"
#include "nn/encoder/weights_q8.h"
#include "ops/ops.h"
#include "support.h"
#include "tune/tune.h"

#include <stdlib.h>
#include <string.h>

/* A context whose device runs the path, else the test is skipped with the reason. */
static vkbert_context *dot_context(void)
{
    vkbert_context *ctx = test_context(0);
    if (!ctx->int8_dot) {
        char name[256];
        snprintf(name, sizeof name, "%s", ctx->info.name);
        test_context_done(ctx);
        cr_skip_test("%s has no 4x8-bit packed integer dot product "
                     "(VK_KHR_shader_integer_dot_product): the dequantizing path runs there",
                     name);
    }
    return ctx;
}

/* Rows of A quantized on the device: uints, vkb_q8_rows_pitch(k) a row. */
static uint32_t *quantize(vkbert_context *ctx, const float *a, uint32_t rows, uint32_t k,
                          uint32_t lda, vkb_buffer *out)
{
    uint32_t pitch = vkb_q8_rows_pitch(k);
    size_t words = (size_t)rows * pitch;
    float *poison = test_poisoned(words);
    vkb_buffer ba = test_buffer(ctx, a, (size_t)rows * lda);
    *out = test_buffer(ctx, poison, words);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_dispatch d = {0};
    TEST_OK(vkb_op_quantize_rows(ctx, pool, rows, k, lda, vkb_whole(&ba), vkb_whole(out), &d));
    test_run(ctx, &d, 1);
    test_buffer_read(ctx, out, poison, words);
    vkb_dispatch_release(ctx, &d);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &ba);
    return (uint32_t *)poison;
}

static int8_t quant_of(const uint32_t *row, uint32_t kk)
{
    return (int8_t)(uint8_t)(row[1 + kk / 4] >> (8 * (kk % 4)));
}

/* The device's scale against max|a| / 127, and each quant the rounding of a / d, ties away
 * from zero; within 1e-5 of a tie (the device divides in fp32) either neighbour. */
static void check_row(const float *a, uint32_t k, const uint32_t *row, uint32_t pitch)
{
    double amax = 0;
    for (uint32_t kk = 0; kk < k; kk++)
        amax = fmax(amax, fabs(a[kk]));
    float d;
    memcpy(&d, row, 4);
    cr_assert(fabs(d - amax / 127) <= 1e-6 * amax / 127, "scale %g, want %g", d, amax / 127);
    for (uint32_t kk = 0; kk < (pitch - 4) * 4; kk++) {
        int got = quant_of(row + 3, kk);
        if (kk >= k || d == 0) {
            cr_assert_eq(got, 0, "k %u: padding or zero row holds %d", kk, got);
            continue;
        }
        double v = a[kk] / (double)d, m = fabs(v), low = floor(m);
        int want = (int)(m - low >= 0.5 ? low + 1 : low);
        bool tie = fabs(m - low - 0.5) < 1e-5;
        int mag = abs(got);
        cr_assert(mag == want || (tie && abs(mag - want) == 1), "k %u: %g / %g gave %d", kk, a[kk],
                  d, got);
        cr_assert(got == 0 || (got < 0) == (v < 0), "k %u: sign of %d for %g", kk, got, a[kk]);
    }
}

Test(quantize_rows, matches_the_rule_on_ragged_shapes)
{
    vkbert_context *ctx = dot_context();
    static const uint32_t shapes[][2] = {{1, 1}, {5, 31}, {7, 32}, {3, 33}, {17, 100}, {4, 771}};
    ref_rng rng = {11};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        uint32_t rows = shapes[s][0], k = shapes[s][1], lda = (k + 3) / 4 * 4 + 4;
        float *a = malloc((size_t)rows * lda * 4);
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t kk = 0; kk < lda; kk++) /* the pitch's padding is garbage */
                a[(size_t)r * lda + kk] =
                    (float)ref_uniform(&rng, -1, 1) * powf(10, (float)(r % 4));
        for (uint32_t kk = 0; kk < lda && rows > 2; kk++)
            a[2 * lda + kk] = kk < k ? 0.0f : 5.0f; /* an all-zero row */
        vkb_buffer out;
        uint32_t *q = quantize(ctx, a, rows, k, lda, &out);
        uint32_t pitch = vkb_q8_rows_pitch(k);
        for (uint32_t r = 0; r < rows; r++) {
            const uint32_t *row = q + (size_t)r * pitch;
            cr_assert(row[1] == 0 && row[2] == 0 && row[3] == 0, "row %u's scale texel", r);
            check_row(a + (size_t)r * lda, k, row, pitch);
        }
        vkb_buffer_destroy(ctx, &out);
        free(a), free(q);
    }
    test_context_done(ctx);
}

/* max 127 makes d = 1: the quants are the hand-rounded values, ties away from zero. */
Test(quantize_rows, ties_away_from_zero)
{
    vkbert_context *ctx = dot_context();
    float a[8] = {127, 2.5f, -2.5f, 0.5f, -0.5f, 126.5f, -64.5f, 3.49f};
    static const int want[8] = {127, 3, -3, 1, -1, 127, -65, 3};
    vkb_buffer out;
    uint32_t *q = quantize(ctx, a, 1, 8, 8, &out);
    float d;
    memcpy(&d, q, 4);
    cr_assert_eq(d, 1.0f);
    for (uint32_t kk = 0; kk < 8; kk++)
        cr_assert_eq(quant_of(q + 3, kk), want[kk], "%g gave %d", a[kk], quant_of(q + 3, kk));
    vkb_buffer_destroy(ctx, &out);
    free(q);
    test_context_done(ctx);
}

/* B [k][ldb] in the dot order through the library's quantizer; `b` becomes its dequantized
 * values, column by column (q8_quantize_row along k). */
static vkb_buffer dot_weights(vkbert_context *ctx, float *b, uint32_t k, uint32_t n, uint32_t ldb)
{
    float *w = malloc((size_t)n * k * 4), *back = malloc((size_t)k * 4);
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t kk = 0; kk < k; kk++)
            w[(size_t)j * k + kk] = b[(size_t)kk * ldb + j];
    vkb_buffer buffer;
    TEST_OK(vkb_buffer_create(ctx, vkb_q8_bytes(k, ldb), &buffer));
    q8_rows rows = {w, k, 1.0f};
    q8_matrix m = {k, n, ldb, q8_rows_column, &rows, "b", true};
    vkb_writer writer = vkb_writer_of(ctx, false); /* takes the lock only for a staged copy */
    TEST_OK(vkb_q8_upload(&writer, &buffer, 0, &m));
    size_t blocks = q8_blocks(k);
    int8_t *q = malloc(blocks * Q8_BLOCK);
    float *s = malloc(blocks * 4);
    for (uint32_t j = 0; j < n; j++) {
        cr_assert(q8_quantize_row(w + (size_t)j * k, k, q, s));
        q8_dequantize_row(q, s, k, back);
        for (uint32_t kk = 0; kk < k; kk++)
            b[(size_t)kk * ldb + j] = back[kk];
    }
    free(w), free(back), free(q), free(s);
    return buffer;
}

static double gelu(double x)
{
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

static void check_product(vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k, bool epilogue,
                          uint64_t seed)
{
    uint32_t lda = (k + 3) / 4 * 4, ldb = (n + 3) / 4 * 4;
    ref_rng rng = {seed};
    float *a = malloc((size_t)m * lda * 4), *b = calloc((size_t)k * ldb, 4);
    float *bias = malloc(ldb * 4);
    ref_fill(&rng, a, (size_t)m * lda, -2, 2);
    for (uint32_t kk = 0; kk < k; kk++)
        ref_fill(&rng, b + (size_t)kk * ldb, n, -0.5, 0.5);
    ref_fill(&rng, bias, ldb, -1, 1);
    vkb_buffer bq, bb = dot_weights(ctx, b, k, n, ldb), bbias = test_buffer(ctx, bias, ldb);
    uint32_t *aq = quantize(ctx, a, m, k, lda, &bq);
    float *got = test_poisoned((size_t)m * ldb);
    vkb_buffer bc = test_buffer(ctx, got, (size_t)m * ldb);
    vkb_matmul_desc d = {.m = m,
                         .n = n,
                         .k = k,
                         .batch = 1,
                         .lda = vkb_q8_rows_pitch(k),
                         .ldb = ldb,
                         .ldc = ldb,
                         .a = VKB_FORMAT_Q8_ROWS,
                         .b = VKB_FORMAT_Q8_0_DOT,
                         .activation = epilogue ? VKB_ACTIVATION_GELU : VKB_ACTIVATION_NONE};
    VkDescriptorPool pool = test_pool(ctx);
    vkb_dispatch dispatch = {0};
    vkb_view bias_view = vkb_whole(&bbias);
    TEST_OK(vkb_op_matmul(ctx, pool, &d, vkb_whole(&bq), vkb_whole(&bb),
                          epilogue ? &bias_view : NULL, vkb_whole(&bc), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bc, got, (size_t)m * ldb);
    double *want = malloc((size_t)m * n * sizeof *want);
    float *real = malloc((size_t)m * n * 4);
    for (uint32_t r = 0; r < m; r++) {
        const uint32_t *row = aq + (size_t)r * d.lda;
        float scale;
        memcpy(&scale, row, 4);
        for (uint32_t j = 0; j < n; j++) {
            double sum = 0;
            for (uint32_t kk = 0; kk < k; kk++)
                sum += quant_of(row + 3, kk) * (double)scale * b[(size_t)kk * ldb + j];
            want[(size_t)r * n + j] = epilogue ? gelu(sum + bias[j]) : sum;
            real[(size_t)r * n + j] = got[(size_t)r * ldb + j];
        }
    }
    char what[96];
    snprintf(what, sizeof what, "dot matmul %ux%ux%u%s", m, n, k, epilogue ? " + bias, GELU" : "");
    test_assert_fp32_close(real, want, (size_t)m * n, what);
    vkb_dispatch_release(ctx, &dispatch);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer destroy[4] = {bq, bb, bbias, bc};
    for (int i = 0; i < 4; i++)
        vkb_buffer_destroy(ctx, &destroy[i]);
    free(a), free(b), free(bias), free(aq), free(got), free(want), free(real);
}

/* Nothing a multiple of the tiles (32 rows x 64 columns a workgroup) or of a block of 32 k. */
Test(matmul_dot, matches_the_reference_of_its_quantized_operands)
{
    vkbert_context *ctx = dot_context();
    check_product(ctx, 1, 1, 1, false, 1);
    check_product(ctx, 37, 77, 35, true, 2);
    check_product(ctx, 64, 80, 130, false, 3);
    check_product(ctx, 33, 19, 768, true, 4);
    check_product(ctx, 70, 130, 66, false, 5);
    test_context_done(ctx);
}

/* The matmul `d` over zeroed operands: its status (vkbert_last_error says why). */
static vkbert_status dot_matmul(vkbert_context *ctx, const vkb_matmul_desc *d)
{
    vkb_buffer buffer = test_buffer(ctx, (float[256]){0}, 256);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_view v = vkb_whole(&buffer);
    vkb_dispatch dispatch = {0};
    vkbert_status status = vkb_op_matmul(ctx, pool, d, v, v, NULL, v, &dispatch);
    if (!status) vkb_dispatch_release(ctx, &dispatch);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &buffer);
    return status;
}

static vkb_matmul_desc dot_desc(void)
{
    return (vkb_matmul_desc){.m = 4,
                             .n = 4,
                             .k = 4,
                             .batch = 1,
                             .lda = vkb_q8_rows_pitch(4),
                             .ldb = 4,
                             .ldc = 4,
                             .a = VKB_FORMAT_Q8_ROWS,
                             .b = VKB_FORMAT_Q8_0_DOT};
}

/* The integer-dot path takes quantized rows of A, a [K,N] B and fp32 C, with a batch of 1. */
Test(matmul_dot, refuses_what_it_cannot_run)
{
    vkbert_context *ctx = dot_context();
    vkb_matmul_desc ok = dot_desc();
    TEST_OK(dot_matmul(ctx, &ok));
    vkb_matmul_desc bad[6] = {ok, ok, ok, ok, ok, ok};
    bad[0].a = VKB_FORMAT_F32, bad[1].a = VKB_FORMAT_F16_PAIRS, bad[2].c = VKB_FORMAT_F16_PAIRS;
    bad[3].b_trans = true, bad[4].batch = 2, bad[5].lda = 4;
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(dot_matmul(ctx, &bad[i]), VKBERT_ERROR_INVALID_ARGUMENT, "case %d", i);
        cr_assert(strstr(vkbert_last_error(ctx), "integer-dot path"), "%s", vkbert_last_error(ctx));
    }
    test_context_done(ctx);
}

/* Where the device has no integer dot product (simulated by the switch that turns it off):
 * forcing the path is a clear error at context creation, and at an encoder's creation when
 * forced later; the dot matmul itself refuses. */
Test(matmul_dot, forced_where_the_device_has_none)
{
    vkbert_context *ctx = test_context_limited("integer_dot_product=0");
    cr_assert(!ctx->int8_dot);
    vkb_matmul_desc d = dot_desc();
    cr_assert_eq(dot_matmul(ctx, &d), VKBERT_ERROR_DEVICE_LIMIT);
    cr_assert(strstr(vkbert_last_error(ctx), "integer dot product"), "%s", vkbert_last_error(ctx));
    bool dot = true;
    TEST_OK(vkb_tune_int8_dot(ctx, &dot));
    cr_assert(!dot, "the default without the feature is the dequantizing path");
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_INT8_PATH", "dot"));
    cr_assert_eq(vkb_tune_int8_dot(ctx, &dot), VKBERT_ERROR_DEVICE_LIMIT);
    cr_assert(strstr(vkbert_last_error(ctx), "VKBERT_INT8_PATH is dot"), "%s",
              vkbert_last_error(ctx));
    vkbert_attention_config int8 = {sizeof int8, VKBERT_PRECISION_INT8};
    test_weights w = test_weights_random(64, 3);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer = NULL;
    cr_assert_eq(vkbert_attention_create(ctx, 64, 4, &api, &int8, &layer),
                 VKBERT_ERROR_DEVICE_LIMIT);
    cr_assert_null(layer);
    test_weights_free(&w);
    test_context_done(ctx);

    setenv("VKBERT_INT8_PATH", "dot", 1);
    vkbert_context_options options = {
        .struct_size = sizeof options, .validation = 1, .limits = "integer_dot_product=0"};
    vkbert_context *refused = NULL;
    cr_assert_eq(vkbert_context_create(&options, &refused), VKBERT_ERROR_DEVICE_LIMIT);
    cr_assert_null(refused);
    cr_assert(strstr(vkbert_last_error(NULL), "integer dot product"), "%s",
              vkbert_last_error(NULL));
    unsetenv("VKBERT_INT8_PATH");
}
