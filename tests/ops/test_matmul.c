/* The matmul op alone, against double: batched, strided, both B layouts, odd sizes, NaN in
 * every padding. Run once per family (tests/CMakeLists.txt); the gpu_* tests cover the gpu
 * family's shared-memory tiles one by one, its choice from the device limits and its fallback
 * (shaders/matmul.comp), and are skipped under the simd family. */
#include "io/half.h"
#include "io/q8.h"
#include "support.h"
#include "tune/tune.h"

#include <stdlib.h>
#include <string.h>

typedef struct mm_case {
    uint32_t m, n, k, batch;
    bool b_trans, bias;
} mm_case;

static uint32_t pad4(uint32_t x)
{
    return (x + 3) / 4 * 4;
}

/* When set, B is stored as fp16: the reference uses the same rounded values. half_act: A
 * and C in fp16, as VKBERT_PRECISION_FP16's activations. */
static bool half_b, half_act;
/* When set, B ([K,N], a batch of 1) is stored as Q8_0, quantized along K for each column; the
 * reference uses the dequantized values, so the check is of the kernel, not of int8's error. */
static bool q8_b;
/* The epilogue's activation (shaders/epilogue.glsl), in double for the reference. */
static uint32_t activation;
/* What the latest check ran: its shader's name and its pipeline (alive with the context). */
static const char *last_kernel;
static const vkb_pipeline *last_pipeline;

static double activate(double x)
{
    if (activation == VKB_ACTIVATION_GELU) return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    if (activation == VKB_ACTIVATION_TANH) return tanh(x);
    if (activation == VKB_ACTIVATION_RELU) return x > 0 ? x : 0.0;
    if (activation == VKB_ACTIVATION_SIGMOID) return 1.0 / (1.0 + exp(-x));
    return x;
}

static vkb_buffer operand_buffer(vkbert_context *ctx, float *data, size_t n, bool half)
{
    return half ? test_half_buffer(ctx, data, n) : test_buffer(ctx, data, n);
}

/* B [k][ldb] as Q8_0 in blocks of 4 columns x 32 k (shaders/q8_io.glsl, written here from
 * its description): per block the 4 scales, then 4 k per 16 bytes, a column a byte. Columns
 * past n hold 127 times a NaN scale. b's columns become their dequantized values. */
static vkb_buffer q8_buffer(vkbert_context *ctx, float *b, uint32_t k, uint32_t n, uint32_t ldb)
{
    size_t blocks = q8_blocks(k), rows = blocks * Q8_BLOCK, words = ldb / 4 * blocks * 36;
    uint32_t *packed = malloc(words * 4);
    float *column = malloc(k * 4), *back = malloc(k * 4), *s = malloc(blocks * 4);
    int8_t *q = malloc(rows);
    memset(packed, 127, words * 4);
    for (uint32_t j = 0; j < ldb; j++) {
        uint32_t *group = packed + (size_t)(j / 4) * blocks * 36;
        for (uint32_t kk = 0; kk < k && j < n; kk++)
            column[kk] = b[(size_t)kk * ldb + j];
        if (j < n) cr_assert(q8_quantize_row(column, k, q, s));
        for (size_t blk = 0; blk < blocks; blk++) {
            float scale = j < n ? s[blk] : NAN;
            memcpy(group + blk * 36 + j % 4, &scale, 4);
            for (size_t r = 0; r < Q8_BLOCK && j < n; r++)
                ((int8_t *)(group + blk * 36 + 4 + r))[j % 4] = q[blk * Q8_BLOCK + r];
        }
        if (j >= n) continue;
        q8_dequantize_row(q, s, k, back);
        for (uint32_t kk = 0; kk < k; kk++)
            b[(size_t)kk * ldb + j] = back[kk];
    }
    vkb_buffer buffer = test_buffer(ctx, (float *)packed, words);
    free(packed), free(column), free(back), free(q), free(s);
    return buffer;
}

static void check(vkbert_context *ctx, mm_case c, uint64_t seed)
{
    /* Pitches a little past the padding, so that strides are really used. */
    uint32_t lda = pad4(c.k) + 4, ldc = pad4(c.n) + 4;
    uint32_t ldb = c.b_trans ? pad4(c.k) : pad4(c.n) + 8;
    uint32_t b_rows = c.b_trans ? c.n : c.k;
    size_t na = (size_t)c.batch * c.m * lda, nb = (size_t)c.batch * b_rows * ldb;
    size_t nc = (size_t)c.batch * c.m * ldc;
    size_t nbias = (size_t)c.batch * pad4(c.n); /* one bias per batch entry */
    float *a = malloc(na * 4), *b = malloc(nb * 4), *bias = malloc(nbias * 4);
    float *got = test_poisoned(nc);
    ref_rng rng = {seed};
    ref_fill(&rng, a, na, -1, 1);
    ref_fill(&rng, b, nb, -1, 1);
    ref_fill(&rng, bias, nbias, -1, 1);
    /* Padding holds NaN: a kernel that multiplies padding fails. */
    for (size_t r = 0; r < (size_t)c.batch * c.m; r++)
        for (uint32_t k = c.k; k < lda; k++)
            a[r * lda + k] = NAN;
    uint32_t b_cols = c.b_trans ? c.k : c.n;
    for (size_t r = 0; r < (size_t)c.batch * b_rows; r++)
        for (uint32_t col = b_cols; col < ldb; col++)
            b[r * ldb + col] = NAN;

    vkb_buffer ba = operand_buffer(ctx, a, na, half_act);
    vkb_buffer bb = q8_b ? q8_buffer(ctx, b, c.k, c.n, ldb) : operand_buffer(ctx, b, nb, half_b);
    vkb_buffer bbias = test_buffer(ctx, bias, nbias), bc = operand_buffer(ctx, got, nc, half_act);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_matmul_desc d = {c.m,
                         c.n,
                         c.k,
                         c.batch,
                         lda,
                         ldb,
                         ldc,
                         (uint64_t)c.m * lda,
                         (uint64_t)b_rows * ldb,
                         (uint64_t)c.m * ldc,
                         pad4(c.n),
                         c.b_trans,
                         half_act ? VKB_FORMAT_F16_PAIRS : VKB_FORMAT_F32,
                         q8_b     ? VKB_FORMAT_Q8_0
                         : half_b ? VKB_FORMAT_F16_PAIRS
                                  : VKB_FORMAT_F32,
                         half_act ? VKB_FORMAT_F16_PAIRS : VKB_FORMAT_F32,
                         activation};
    vkb_dispatch dispatch = {0};
    vkb_view bias_view = vkb_whole(&bbias);
    TEST_OK(vkb_op_matmul(ctx, pool, &d, vkb_whole(&ba), vkb_whole(&bb), c.bias ? &bias_view : NULL,
                          vkb_whole(&bc), &dispatch));
    last_kernel = dispatch.name, last_pipeline = dispatch.pipeline;
    test_run(ctx, &dispatch, 1);
    if (half_act)
        test_half_buffer_read(ctx, &bc, got, nc);
    else
        test_buffer_read(ctx, &bc, got, nc);

    size_t count = (size_t)c.batch * c.m * c.n;
    double *want = malloc(count * sizeof *want);
    float *packed = malloc(count * sizeof *packed);
    for (size_t z = 0; z < c.batch; z++)
        for (size_t i = 0; i < c.m; i++)
            for (size_t j = 0; j < c.n; j++) {
                double acc = c.bias ? bias[z * pad4(c.n) + j] : 0.0;
                for (size_t k = 0; k < c.k; k++) {
                    double bv =
                        c.b_trans ? b[(z * b_rows + j) * ldb + k] : b[(z * b_rows + k) * ldb + j];
                    acc += (double)a[(z * c.m + i) * lda + k] * bv;
                }
                size_t o = (z * c.m + i) * c.n + j;
                want[o] = activate(acc);
                packed[o] = got[(z * c.m + i) * ldc + j];
            }
    char what[96];
    snprintf(what, sizeof what, "matmul M %u N %u K %u batch %u %s%s", c.m, c.n, c.k, c.batch,
             c.b_trans ? "B^T" : "B", c.bias ? " +bias" : "");
    /* fp16 C: one rounding of each output, 2^-11 relative at most. */
    test_assert_close(packed, want, count, half_act ? 1e-3 : 1e-5, what);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &ba), vkb_buffer_destroy(ctx, &bb);
    vkb_buffer_destroy(ctx, &bbias), vkb_buffer_destroy(ctx, &bc);
    free(a), free(b), free(bias), free(got), free(want), free(packed);
}

Test(matmul, fixed_shapes)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, (mm_case){1, 1, 1, 1, false, true}, 1);
    check(ctx, (mm_case){1, 4, 4, 1, true, false}, 7);
    check(ctx, (mm_case){64, 64, 64, 1, false, true}, 2);
    check(ctx, (mm_case){129, 77, 35, 1, false, true}, 3);
    check(ctx, (mm_case){129, 77, 35, 1, true, true}, 4);
    check(ctx, (mm_case){7, 7, 17, 6, true, false}, 5);
    check(ctx, (mm_case){33, 80, 130, 3, false, false}, 6);
    test_context_done(ctx);
}

Test(matmul, fp16_weights)
{
    vkbert_context *ctx = test_context(0);
    half_b = true;
    check(ctx, (mm_case){1, 1, 1, 1, false, true}, 21);
    check(ctx, (mm_case){129, 77, 35, 2, false, true}, 22);
    check(ctx, (mm_case){64, 80, 130, 1, false, true}, 23);
    check(ctx, (mm_case){33, 19, 17, 3, true, false}, 24);
    half_act = true; /* and activations */
    check(ctx, (mm_case){70, 130, 66, 1, false, true}, 44);
    test_context_done(ctx);
}

/* Packed halves: no device feature needed. */
Test(matmul, fp16_activations)
{
    vkbert_context *ctx = test_context(0);
    half_act = true;
    check(ctx, (mm_case){1, 1, 1, 1, false, true}, 41);
    check(ctx, (mm_case){129, 77, 35, 3, false, true}, 42);
    check(ctx, (mm_case){33, 19, 17, 2, true, false}, 43);
    test_context_done(ctx);
}

/* K not a multiple of 32 (a short last block), N and M not multiples of any tile. K = 113 has
 * whole chunks of 4 past its last whole block of 32 and a partial chunk after them, the
 * simd kernel's three loops. */
Test(matmul, q8_weights)
{
    vkbert_context *ctx = test_context(0);
    q8_b = true;
    check(ctx, (mm_case){1, 1, 1, 1, false, true}, 51);
    check(ctx, (mm_case){129, 77, 35, 1, false, true}, 52);
    check(ctx, (mm_case){64, 80, 130, 1, false, false}, 53);
    check(ctx, (mm_case){33, 19, 768, 1, false, true}, 54);
    check(ctx, (mm_case){41, 36, 113, 1, false, true}, 56);
    half_act = true; /* and fp16 activations */
    check(ctx, (mm_case){70, 130, 66, 1, false, true}, 55);
    test_context_done(ctx);
}

/* Each descriptor is refused with INVALID_ARGUMENT and a message holding `says`. */
static void assert_refused(vkbert_context *ctx, const vkb_matmul_desc *bad, size_t count,
                           const char *says)
{
    vkb_buffer buffer = test_buffer(ctx, (float[64]){0}, 64);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_view v = vkb_whole(&buffer);
    for (size_t i = 0; i < count; i++) {
        vkb_dispatch dispatch = {0};
        cr_assert_eq(vkb_op_matmul(ctx, pool, &bad[i], v, v, NULL, v, &dispatch),
                     VKBERT_ERROR_INVALID_ARGUMENT, "case %zu", i);
        cr_assert(strstr(vkbert_last_error(ctx), says), "%s", vkbert_last_error(ctx));
    }
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &buffer);
}

/* A Q8_0 B has [K,N] paths with a batch of 1 only. (fp16 and Q8_0 at once, refused too
 * while they were two flags, is no longer a state a descriptor can hold.) */
Test(matmul, q8_weights_refused_where_unsupported)
{
    vkbert_context *ctx = test_context(0);
    vkb_matmul_desc bad[] = {
        {.m = 4, .n = 4, .k = 4, .batch = 1, .lda = 4, .ldb = 4, .ldc = 4, .b_trans = true},
        {.m = 4, .n = 4, .k = 4, .batch = 2, .lda = 4, .ldb = 4, .ldc = 4},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        bad[i].b = VKB_FORMAT_Q8_0;
    assert_refused(ctx, bad, sizeof bad / sizeof *bad, "int8");
    test_context_done(ctx);
}

/* Formats outside the enum, int8 where a kernel reads or writes only floats, and rows of A
 * quantized for a B that is not in the integer-dot order. */
Test(matmul, formats_refused_where_unsupported)
{
    vkbert_context *ctx = test_context(0);
    vkb_matmul_desc ok = {.m = 4, .n = 4, .k = 4, .batch = 1, .lda = 4, .ldb = 4, .ldc = 4};
    vkb_matmul_desc unknown[3] = {ok, ok, ok};
    unknown[0].a = VKB_FORMAT_COUNT, unknown[1].b = VKB_FORMAT_COUNT;
    unknown[2].c = (vkb_format)-1;
    assert_refused(ctx, unknown, 3, "none of vkb_format");
    vkb_matmul_desc floats_only[6] = {ok, ok, ok, ok, ok, ok};
    floats_only[0].a = VKB_FORMAT_Q8_0, floats_only[1].a = VKB_FORMAT_Q8_0_DOT;
    floats_only[2].c = VKB_FORMAT_Q8_0, floats_only[3].c = VKB_FORMAT_Q8_0_DOT;
    floats_only[4].c = VKB_FORMAT_Q8_ROWS, floats_only[5].b = VKB_FORMAT_Q8_ROWS;
    assert_refused(ctx, floats_only, 6, "C must be fp32 or fp16");
    vkb_matmul_desc rows_of_a[3] = {ok, ok, ok};
    for (int i = 0; i < 3; i++)
        rows_of_a[i].a = VKB_FORMAT_Q8_ROWS;
    rows_of_a[1].b = VKB_FORMAT_F16_PAIRS, rows_of_a[2].b = VKB_FORMAT_Q8_0;
    assert_refused(ctx, rows_of_a, 3, "int8 rows");
    test_context_done(ctx);
}

Test(matmul, activation_epilogues)
{
    vkbert_context *ctx = test_context(0);
    uint32_t kinds[] = {VKB_ACTIVATION_GELU, VKB_ACTIVATION_TANH, VKB_ACTIVATION_RELU,
                        VKB_ACTIVATION_SIGMOID};
    for (int i = 0; i < 4; i++) {
        activation = kinds[i];
        check(ctx, (mm_case){129, 77, 35, 2, false, true}, 31 + i);
        check(ctx, (mm_case){8, 3072, 20, 1, false, true}, 33 + i);
        check(ctx, (mm_case){5, 9, 64, 1, true, false}, 35 + i);
    }
    test_context_done(ctx);
}

Test(matmul, random_shapes)
{
    vkbert_context *ctx = test_context(0);
    ref_rng rng = {2024};
    for (int t = 0; t < 12; t++) {
        mm_case c = {(uint32_t)ref_uniform(&rng, 1, 200), (uint32_t)ref_uniform(&rng, 1, 200),
                     (uint32_t)ref_uniform(&rng, 1, 300), (uint32_t)ref_uniform(&rng, 1, 4),
                     ref_uniform(&rng, 0, 1) < 0.5,       ref_uniform(&rng, 0, 1) < 0.5};
        check(ctx, c, 100 + t);
    }
    test_context_done(ctx);
}

/* ---- the gpu family ---- */

static vkbert_context *gpu_context(void)
{
    vkbert_context *ctx = test_context(0);
    if (vkb_tune_family(ctx) != VKB_FAMILY_GPU) {
        test_context_done(ctx);
        cr_skip_test("the gpu family is not in use (VKBERT_KERNELS)");
    }
    return ctx;
}

/* The kernel the op will run for this case. */
static vkb_matmul_tiles tiles_for(const vkbert_context *ctx, mm_case c)
{
    return vkb_tune_matmul_batched(ctx, c.m, c.n, c.k, c.batch, 0, 0);
}

/* Shapes around one block of bm x bn and slices of bk: smaller than a block, exact multiples,
 * one past, K not a multiple of bk or of 4, K below 4, batches; both layouts, bias or not. */
static void check_around(vkbert_context *ctx, uint32_t bm, uint32_t bn, uint32_t bk, uint64_t seed)
{
    const uint32_t shapes[][4] = {
        {1, 1, 1, 1},
        {3, 5, 2, 2},
        {bm / 2 + 1, bn / 2 - 3, bk - 1, 1},
        {bm, bn, bk, 1},
        {2 * bm, 2 * bn, 2 * bk, 2},
        {bm + 1, bn + 3, bk + 1, 1},
        {bm - 1, 2 * bn + 1, 3 * bk + 2, 3},
        {2 * bm + 7, bn - 1, 3, 2},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int variant = 0; variant < 4; variant++) {
            mm_case c = {shapes[i][0], shapes[i][1], shapes[i][2],
                         shapes[i][3], variant & 1,  variant >> 1};
            check(ctx, c, seed + i * 4 + variant);
        }
}

/* Each shared-memory tile of the table (src/tune/tune.c) through VKBERT_MATMUL_TILES, set on one
 * context (it read the environment when it was made). */
Test(matmul, gpu_each_tile)
{
    static const char *const tiles[] = {"16,16,8,2,16", "16,16,4,1,16", "16,8,8,1,16", "8,8,4,1,16",
                                        "8,4,4,2,8"};
    vkbert_context *ctx = gpu_context();
    for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++) {
        TEST_OK(vkbert_bench_override(ctx, "VKBERT_MATMUL_TILES", tiles[i]));
        vkb_matmul_tiles t = tiles_for(ctx, (mm_case){64, 64, 64, 1, false, false});
        char what[80];
        vkb_matmul_describe(&t, what, sizeof what);
        cr_assert(t.bk > 0, "%s: runs without shared memory (%s)", tiles[i], what);
        check_around(ctx, t.bm, t.bn, t.bk, 1000 + 100 * i);
        /* fp16 weights through the same tile: a block and a slice past the edges. */
        half_b = true;
        check(ctx, (mm_case){t.bm + 1, t.bn + 3, t.bk + 1, 2, false, true}, 1050 + 100 * i);
        check(ctx, (mm_case){t.bm + 1, t.bn + 3, t.bk + 1, 1, true, false}, 1051 + 100 * i);
        half_b = false;
    }
    test_context_done(ctx);
}

/* The table's own choice, for shapes of BERT's layer (batch 2, seq 40, E 96, 4 heads). */
Test(matmul, gpu_chosen_tiles)
{
    vkbert_context *ctx = gpu_context();
    check(ctx, (mm_case){80, 288, 96, 1, false, true}, 11);   /* QKV projection */
    check(ctx, (mm_case){40, 40, 24, 8, true, false}, 12);    /* Q K^T per head */
    check(ctx, (mm_case){40, 24, 40, 8, false, false}, 13);   /* P V per head */
    check(ctx, (mm_case){300, 260, 200, 1, false, true}, 14); /* several blocks */
    test_context_done(ctx);
}

/* The choice follows the limits it reads; where no tile fits, the kernel without shared
 * memory runs, and gives the same answers. The limits are lowered in the context's copy. */
Test(matmul, gpu_limits_and_fallback)
{
    vkbert_context *ctx = gpu_context();
    VkPhysicalDeviceLimits *limits = &ctx->props.limits;
    VkPhysicalDeviceLimits saved = *limits;
    uint32_t saved_subgroup = ctx->subgroup.subgroupSize;
    mm_case big = {1024, 1024, 256, 1, false, false};
    char what[80];

    limits->maxComputeSharedMemorySize = 16384; /* Vulkan's minimum: 128x128 slices need more */
    vkb_matmul_tiles t = tiles_for(ctx, big);
    vkb_matmul_describe(&t, what, sizeof what);
    cr_assert(t.bk && vkb_matmul_shared_bytes(&t) <= 16384 && t.bm == 64, "16 KiB: %s", what);

    limits->maxComputeWorkGroupInvocations = 128;
    t = tiles_for(ctx, big);
    vkb_matmul_describe(&t, what, sizeof what);
    cr_assert(t.bk && t.wg_x * t.wg_y <= 128, "128 invocations: %s", what);
    check(ctx, (mm_case){70, 90, 37, 2, true, true}, 21);

    limits->maxComputeWorkGroupSize[1] = 8;
    ctx->subgroup.subgroupSize = 128; /* no 64-invocation workgroup */
    limits->maxComputeWorkGroupInvocations = 64;
    t = tiles_for(ctx, big);
    cr_assert(t.bk == 0, "nothing fits, yet bk %u", t.bk);
    ctx->subgroup.subgroupSize = saved_subgroup;

    limits->maxComputeSharedMemorySize = 1024;
    limits->maxComputeWorkGroupInvocations = saved.maxComputeWorkGroupInvocations;
    t = tiles_for(ctx, big);
    vkb_matmul_describe(&t, what, sizeof what);
    cr_assert(t.bk == 0 && t.family == VKB_FAMILY_GPU, "1 KiB: %s", what);
    cr_assert(!strncmp(what, "gpu fallback", 12), "%s", what);
    check(ctx, (mm_case){1, 1, 1, 1, false, true}, 22);
    check(ctx, (mm_case){129, 77, 35, 2, false, true}, 23);
    check(ctx, (mm_case){129, 77, 35, 2, true, false}, 24);
    check(ctx, (mm_case){3, 130, 6, 1, true, true}, 25);
    *limits = saved;
    test_context_done(ctx);
}

Test(matmul, gpu_fallback_env)
{
    setenv("VKBERT_MATMUL_FALLBACK", "1", 1);
    vkbert_context *ctx = gpu_context();
    cr_assert_eq(tiles_for(ctx, (mm_case){256, 256, 64, 1, false, false}).bk, 0);
    check(ctx, (mm_case){33, 80, 130, 3, false, false}, 31);
    check(ctx, (mm_case){65, 17, 19, 2, true, true}, 32);
    half_b = true;
    check(ctx, (mm_case){33, 80, 130, 3, false, false}, 33);
    check(ctx, (mm_case){65, 17, 19, 2, true, true}, 34);
    test_context_done(ctx);
    unsetenv("VKBERT_MATMUL_FALLBACK");
}

Test(matmul, describe)
{
    char out[80];
    vkb_matmul_tiles t = {VKB_FAMILY_GPU, 16, 16, 4, 1, 64, 64, 16};
    vkb_matmul_describe(&t, out, sizeof out);
    cr_assert_str_eq(out, "gpu smem 64x64x16 wg 16x16 tile 4x4");
    t = (vkb_matmul_tiles){VKB_FAMILY_SIMD, 8, 4, 16, 3, 64, 96, 0};
    vkb_matmul_describe(&t, out, sizeof out);
    cr_assert_str_eq(out, "simd wg 8x4 tile 16x12");
    t = (vkb_matmul_tiles){VKB_FAMILY_GPU, 16, 8, 4, 1, 32, 64, 0};
    vkb_matmul_describe(&t, out, sizeof out);
    cr_assert_str_eq(out, "gpu fallback wg 16x8 tile 4x4");
}

/* ---- the simd family's rows shared by shuffles, where subgroup sizes allow it ---- */

/* Subgroup size control as the driver itself reports it, apart from the library and its
 * switches: Vulkan 1.3's, or VK_EXT_subgroup_size_control's. */
typedef struct driver_control {
    bool full;          /* computeFullSubgroups */
    bool require_eight; /* subgroupSizeControl, compute in requiredSubgroupSizeStages, 8 lanes
                         * within [minSubgroupSize, maxSubgroupSize] */
} driver_control;

static bool driver_has_extension(VkPhysicalDevice device, const char *name)
{
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(device, NULL, &count, NULL);
    VkExtensionProperties *ext = calloc(count + 1, sizeof *ext);
    vkEnumerateDeviceExtensionProperties(device, NULL, &count, ext);
    bool found = false;
    for (uint32_t i = 0; i < count; i++)
        found = found || !strcmp(ext[i].extensionName, name);
    free(ext);
    return found;
}

static driver_control driver_control_of(const vkbert_context *ctx)
{
    VkPhysicalDeviceProperties own;
    vkGetPhysicalDeviceProperties(ctx->physical, &own);
    if (own.apiVersion < VK_API_VERSION_1_3 &&
        !driver_has_extension(ctx->physical, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME))
        return (driver_control){0};
    VkPhysicalDeviceSubgroupSizeControlFeatures f = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &f};
    vkGetPhysicalDeviceFeatures2(ctx->physical, &f2);
    VkPhysicalDeviceSubgroupSizeControlProperties p = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &p};
    vkGetPhysicalDeviceProperties2(ctx->physical, &p2);
    return (driver_control){f.computeFullSubgroups != 0,
                            f.subgroupSizeControl && f.computeFullSubgroups &&
                                (p.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                                p.minSubgroupSize <= 8 && 8 <= p.maxSubgroupSize};
}

/* Shapes whose blocks are full, cut at the edges, and batched: right, and shared or not. */
static void check_sharing(vkbert_context *ctx, bool shared, const char *how)
{
    const mm_case cases[] = {{64, 64, 64, 1, false, true}, {129, 77, 35, 2, true, false}};
    for (int i = 0; i < 2; i++) {
        check(ctx, cases[i], 60 + i);
        cr_assert_eq(strstr(last_kernel, "_sg8_") != NULL, shared, "%s: %s ran", how, last_kernel);
    }
}

/* At the device's own subgroup size of 8, the kernels that share A's rows run; with
 * computeFullSubgroups they are made with REQUIRE_FULL_SUBGROUPS_BIT, and without it
 * (subgroup_size_control=0) they still run, as Vulkan 1.1 allows, with no flag at all. */
Test(matmul, shared_rows_in_full_subgroups)
{
    vkbert_context *ctx = test_context_sharing(NULL);
    if (ctx->subgroup.subgroupSize != 8) {
        test_context_done(ctx);
        cr_skip_test("subgroups of %u lanes, not 8", ctx->subgroup.subgroupSize);
    }
    driver_control own = driver_control_of(ctx);
    cr_assert_eq(ctx->full_subgroups, own.full, "computeFullSubgroups not as the driver says");
    check_sharing(ctx, true, "subgroups of 8");
    VkPipelineShaderStageCreateFlags full =
        VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    cr_assert_eq(last_pipeline->stage_flags, own.full ? full : 0);
    cr_assert_eq(last_pipeline->required_subgroup_size, 0, "the device's own size is required");
    test_context_done(ctx);

    ctx = test_context_sharing("subgroup_size_control=0");
    cr_assert(!ctx->full_subgroups && !ctx->subgroup_size_control);
    check_sharing(ctx, true, "subgroup_size_control=0");
    cr_assert_eq(last_pipeline->stage_flags, 0);
    cr_assert_eq(last_pipeline->required_subgroup_size, 0);
    test_context_done(ctx);
}

/* A device whose subgroups default to another size (4 lanes here, as the context is told)
 * runs the sharing kernels at 8 lanes only where it can require that size; without subgroup
 * size control it runs the kernels that share nothing. */
Test(matmul, shared_rows_at_a_required_size)
{
    vkbert_context *ctx = test_context_sharing(NULL);
    driver_control own = driver_control_of(ctx);
    ctx->subgroup.subgroupSize = 4;
    check_sharing(ctx, own.require_eight, "a default of 4 lanes");
    if (own.require_eight) {
        cr_assert_eq(last_pipeline->stage_flags,
                     VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT);
        cr_assert_eq(last_pipeline->required_subgroup_size, 8);
    }
    test_context_done(ctx);

    ctx = test_context_sharing("subgroup_size_control=0");
    ctx->subgroup.subgroupSize = 4;
    check_sharing(ctx, false, "a default of 4 lanes, subgroup_size_control=0");
    test_context_done(ctx);
}
