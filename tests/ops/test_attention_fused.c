/* shaders/attention_fused.comp alone: Q, K, V rows with heads at pitch Dp, against a double
 * softmax(Q K^T) V with every mask form, causal, fully masked rows and dropout. */
#include "support.h"
#include "tune/tune.h"

#include <stdlib.h>
#include <string.h>

typedef struct fused_case {
    uint32_t batch, heads, seq, dim;
    uint32_t mask_dims[4]; /* 0s: no mask */
    bool causal;
    float dropout;
    double masked_share;
    uint64_t seed;
} fused_case;

/* HuggingFace's additive mask semantics for the cases run while set. half: rows and output
 * stored as fp16 (VKBERT_PRECISION_FP16's activations). */
static bool additive, half;
/* What the latest check ran: its shader's name and its pipeline (alive with the context). */
static const char *last_kernel;
static const vkb_pipeline *last_pipeline;

/* The rows' and the output's storage the cases run with. */
static vkb_format activations(void)
{
    return half ? VKB_FORMAT_F16_PAIRS : VKB_FORMAT_F32;
}

static uint32_t pad4(uint32_t x)
{
    return (x + 3) / 4 * 4;
}

/* want[b*S+i][h*dp+t] = sum_j P[b,h,i,j] V[b*S+j][h*dp+t], P from the reference softmax. */
static void reference(fused_case c, const float *rows, uint32_t ld, uint64_t block,
                      const ref_mask *mask, double *want)
{
    uint32_t s = c.seq, dp = pad4(c.dim);
    size_t nbh = (size_t)c.batch * c.heads;
    double *scores = malloc(nbh * s * s * 8), *p = malloc(nbh * s * s * 8);
    for (size_t bh = 0; bh < nbh; bh++)
        for (uint32_t i = 0; i < s; i++)
            for (uint32_t j = 0; j < s; j++) {
                size_t b = bh / c.heads, h = bh % c.heads;
                double acc = 0;
                for (uint32_t t = 0; t < c.dim; t++)
                    acc += (double)rows[(b * s + i) * ld + h * dp + t] *
                           rows[block + (b * s + j) * ld + h * dp + t];
                scores[(bh * s + i) * s + j] = acc;
            }
    ref_options opt = {c.causal, c.dropout, c.seed, additive};
    ref_softmax(scores, (int)c.batch, (int)c.heads, (int)s, 1.0, mask, &opt, p);
    for (size_t bh = 0; bh < nbh; bh++)
        for (uint32_t i = 0; i < s; i++)
            for (uint32_t t = 0; t < dp; t++) {
                size_t b = bh / c.heads, h = bh % c.heads;
                double acc = 0;
                for (uint32_t j = 0; j < s && t < c.dim; j++)
                    acc +=
                        p[(bh * s + i) * s + j] * rows[2 * block + (b * s + j) * ld + h * dp + t];
                want[(b * s + i) * (c.heads * dp) + h * dp + t] = acc;
            }
    free(scores), free(p);
}

/* Random Q, K, V blocks of `tokens` rows [tokens, ld] each, at 0, *block and 2 * *block, then
 * VKB_FUSED_SLACK elements; the heads' padding zero, as in the layer's layout. */
static float *random_rows(ref_rng *rng, size_t tokens, uint32_t ld, uint32_t dim, uint64_t *block,
                          size_t *n_rows)
{
    uint32_t dp = pad4(dim);
    *block = tokens * ld + 4;
    *n_rows = 3 * *block + VKB_FUSED_SLACK;
    float *rows = malloc(*n_rows * 4);
    ref_fill(rng, rows, *n_rows, -1.5, 1.5);
    for (size_t r = 0; r < *n_rows; r++)
        if (r % *block < tokens * ld && (r % *block) % ld % dp >= dim) rows[r] = 0;
    return rows;
}

/* Runs the op on rows (fp16 when `half`, rounded in place) and `aux` (the mask, or a ragged
 * batch's offsets) into out (n_out elements, poisoned by the caller), and reads it back. */
static void run(vkbert_context *ctx, const vkb_fused_desc *d, float *rows, size_t n_rows,
                const void *aux, size_t aux_bytes, float *out, size_t n_out)
{
    vkb_buffer br = half ? test_half_buffer(ctx, rows, n_rows) : test_buffer(ctx, rows, n_rows);
    vkb_buffer bo = half ? test_half_buffer(ctx, out, n_out) : test_buffer(ctx, out, n_out), ba;
    TEST_OK(vkb_buffer_create(ctx, aux_bytes, &ba));
    TEST_OK(vkb_buffer_upload(ctx, &ba, 0, aux, aux_bytes));
    VkDescriptorPool pool = test_pool(ctx);
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_attention_fused(ctx, pool, d, vkb_whole(&br), vkb_whole(&ba), vkb_whole(&bo),
                                   &dispatch));
    last_kernel = dispatch.name, last_pipeline = dispatch.pipeline;
    test_run(ctx, &dispatch, 1);
    if (half)
        test_half_buffer_read(ctx, &bo, out, n_out);
    else
        test_buffer_read(ctx, &bo, out, n_out);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &br), vkb_buffer_destroy(ctx, &ba), vkb_buffer_destroy(ctx, &bo);
}

/* O's head padding zero, the rest close to the reference. */
static void check_out(const float *out, const double *want, size_t n, uint32_t dim,
                      const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (i % pad4(dim) >= dim) cr_assert_eq(out[i], 0.0f, "%s: padding %zu not zero", what, i);
    /* fp16 O: one rounding of each output (the inputs are the rounded values). */
    test_assert_close(out, want, n, half ? 1e-3 : 1e-5, what);
}

static void check(vkbert_context *ctx, fused_case c)
{
    uint32_t s = c.seq, dp = pad4(c.dim), width = c.heads * dp, ld = width + 4;
    size_t n_rows, n_out = (size_t)c.batch * s * width;
    uint64_t block;
    ref_rng rng = {c.seed * 31 + s};
    float *rows = random_rows(&rng, (size_t)c.batch * s, ld, c.dim, &block, &n_rows);
    float *out = test_poisoned(n_out);

    bool has_mask = c.mask_dims[0] != 0;
    uint32_t *md = c.mask_dims, mp = has_mask ? pad4(md[3]) : 4, stride[4] = {0};
    size_t mask_n = has_mask ? (size_t)md[0] * md[1] * md[2] * mp : 4;
    float *mask = malloc(mask_n * 4);
    for (size_t i = 0; i < mask_n; i++)
        mask[i] = ref_uniform(&rng, 0, 1) < c.masked_share ? 0 : 1;
    uint32_t dense[4] = {md[1] * md[2] * mp, md[2] * mp, mp, 1};
    for (int i = 0; i < 4 && has_mask; i++)
        stride[i] = md[i] == 1 ? 0 : dense[i];

    vkb_fused_desc d = {
        c.batch,       c.heads,  s,        c.dim, ld,        width,  0,        block,
        2 * block,     has_mask, c.causal, {0},   c.dropout, c.seed, additive, activations(),
        activations(), false,    0};
    memcpy(d.mask_stride, stride, sizeof stride);
    run(ctx, &d, rows, n_rows, mask, mask_n * 4, out, n_out);

    double *want = malloc(n_out * 8);
    ref_mask rm = {has_mask ? mask : NULL, {stride[0], stride[1], stride[2], stride[3]}};
    reference(c, rows, ld, block, &rm, want);
    char what[128];
    snprintf(what, sizeof what, "fused B %u H %u S %u D %u mask %d causal %d p %.2f", c.batch,
             c.heads, s, c.dim, has_mask, c.causal, (double)c.dropout);
    check_out(out, want, n_out, c.dim, what);
    free(rows), free(out), free(mask), free(want);
}

Test(attention_fused, sizes_and_head_dims)
{
    vkbert_context *ctx = test_context(0);
    /* Heads past 64 run in column slices (shaders/attention_fused.comp): 80 in two of 20, 100
     * in two of 52 whose last reaches past the head, 256 in four. */
    uint32_t seqs[] = {1, 7, 64, 129}, dims[] = {16, 17, 64, 80, 100, 128, 256};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 7; k++)
            check(ctx, (fused_case){1 + i % 2, 2, seqs[i], dims[k], {0}, false, 0, 0, 10 * i + k});
    test_context_done(ctx);
}

Test(attention_fused, masks_causal_and_fully_masked_rows)
{
    vkbert_context *ctx = test_context(0);
    uint32_t b = 2, h = 3, s = 23;
    uint32_t forms[][4] = {{b, 1, 1, s}, {b, 1, s, s}, {b, h, s, s}, {1, 1, s, s}, {1, h, 1, s}};
    for (int i = 0; i < 5; i++) {
        fused_case c = {b, h, s, 32, {0}, i % 2 == 1, 0, 0.5, 100 + i};
        memcpy(c.mask_dims, forms[i], sizeof forms[i]);
        check(ctx, c);
    }
    check(ctx, (fused_case){2, 2, 6, 16, {2, 1, 6, 6}, false, 0, 0.9, 7}); /* many empty rows */
    check(ctx, (fused_case){1, 1, 300, 64, {0}, true, 0, 0, 8});
    test_context_done(ctx);
}

Test(attention_fused, additive_mask)
{
    vkbert_context *ctx = test_context(0);
    additive = true;
    check(ctx, (fused_case){2, 2, 6, 16, {2, 1, 6, 6}, false, 0, 0.9, 7}); /* many empty rows */
    check(ctx, (fused_case){2, 3, 23, 32, {2, 1, 1, 23}, false, 0, 0.5, 8});
    check(ctx, (fused_case){1, 2, 33, 16, {1, 1, 33, 33}, true, 0.5f, 0.3, 9});
    test_context_done(ctx);
}

Test(attention_fused, fp16_rows_and_output)
{
    vkbert_context *ctx = test_context(0);
    half = true;
    check(ctx, (fused_case){2, 3, 23, 32, {2, 1, 1, 23}, false, 0, 0.5, 51});
    check(ctx, (fused_case){1, 2, 70, 17, {0}, true, 0, 0, 52});
    check(ctx, (fused_case){2, 2, 6, 64, {2, 1, 6, 6}, false, 0.3f, 0.9, 53});
    additive = true;
    check(ctx, (fused_case){2, 2, 9, 80, {2, 1, 1, 9}, false, 0, 0.5, 54});
    test_context_done(ctx);
}

Test(attention_fused, dropout_matches_reference)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, (fused_case){2, 2, 40, 32, {0}, false, 0.2f, 0, 11});
    check(ctx, (fused_case){1, 2, 33, 16, {1, 1, 33, 33}, true, 0.5f, 0.3, 12});
    check(ctx, (fused_case){1, 1, 9, 16, {0}, false, 1.0f, 0, 13});
    test_context_done(ctx);
}

/* ---- ragged batches (docs/ragged.md): sequences packed, each attending to its own rows ---- */

/* cu_seqlens of `lengths`; returns the token count. */
static uint32_t pack_lengths(const uint32_t *lengths, uint32_t batch, int32_t *offsets)
{
    offsets[0] = 0;
    for (uint32_t b = 0; b < batch; b++)
        offsets[b + 1] = offsets[b] + (int32_t)lengths[b];
    return (uint32_t)offsets[batch];
}

/* Sequence b's rows as ops.h says the device takes them: offsets clamped to [0, tokens], an end
 * before its start read as the start. */
static void span(const int32_t *offsets, uint32_t b, uint32_t tokens, uint32_t *first,
                 uint32_t *end)
{
    int64_t lo = offsets[b] < 0 ? 0 : offsets[b], hi = offsets[b + 1] < 0 ? 0 : offsets[b + 1];
    *first = lo > tokens ? tokens : (uint32_t)lo;
    *end = hi > tokens ? tokens : hi < *first ? *first : (uint32_t)hi;
}

static vkb_fused_desc ragged_desc(uint32_t batch, uint32_t heads, uint32_t s_max, uint32_t dim,
                                  uint32_t tokens, uint64_t block)
{
    uint32_t width = heads * pad4(dim);
    return (vkb_fused_desc){.batch = batch,
                            .heads = heads,
                            .seq_len = s_max,
                            .head_dim = dim,
                            .ld = width + 4,
                            .ld_out = width,
                            .k_off = block,
                            .v_off = 2 * block,
                            .rows = activations(),
                            .out = activations(),
                            .ragged = true,
                            .tokens = tokens};
}

/* Each sequence against the double reference on its own rows; O's rows past the packed ones
 * (3 of them) stay poison. */
static void check_offsets(vkbert_context *ctx, uint32_t heads, uint32_t dim, const int32_t *offsets,
                          uint32_t batch, uint32_t tokens, uint32_t s_max, uint64_t seed)
{
    uint32_t width = heads * pad4(dim), ld = width + 4;
    size_t n_rows, n_out = ((size_t)tokens + 3) * width;
    uint64_t block;
    ref_rng rng = {seed};
    float *rows = random_rows(&rng, tokens, ld, dim, &block, &n_rows), *out = test_poisoned(n_out);
    vkb_fused_desc d = ragged_desc(batch, heads, s_max, dim, tokens, block);
    run(ctx, &d, rows, n_rows, offsets, (batch + 1) * 4, out, n_out);
    ref_mask none = {NULL, {0, 0, 0, 0}};
    char what[128];
    for (uint32_t b = 0, first, end; b < batch; b++) {
        span(offsets, b, tokens, &first, &end);
        if (end == first) continue;
        fused_case c = {1, heads, end - first, dim, {0}, false, 0, 0, seed};
        double *want = malloc((size_t)(end - first) * width * 8);
        reference(c, rows + (size_t)first * ld, ld, block, &none, want);
        snprintf(what, sizeof what, "ragged %s: sequence %u of %u rows (S_max %u), H %u D %u",
                 half ? "fp16" : "fp32", b, end - first, s_max, heads, dim);
        check_out(out + (size_t)first * width, want, (size_t)(end - first) * width, dim, what);
        free(want);
    }
    for (size_t i = (size_t)tokens * width; i < n_out; i++)
        cr_assert(isnan(out[i]), "ragged: O element %zu past the packed rows was written", i);
    free(rows), free(out);
}

static void check_lengths(vkbert_context *ctx, uint32_t heads, uint32_t dim,
                          const uint32_t *lengths, uint32_t batch, uint32_t s_max, uint64_t seed)
{
    int32_t *offsets = malloc((batch + 1) * sizeof *offsets);
    uint32_t tokens = pack_lengths(lengths, batch, offsets);
    check_offsets(ctx, heads, dim, offsets, batch, tokens, s_max, seed);
    free(offsets);
}

Test(attention_fused, ragged_lengths_and_head_dims)
{
    vkbert_context *ctx = test_context(0);
    /* Empty and one-row sequences, and lengths that are no multiple of a block of keys or of a
     * workgroup; heads in one slice and in several, as sizes_and_head_dims. */
    const uint32_t lengths[] = {7, 0, 1, 33, 129, 64, 2, 70};
    const uint32_t dims[] = {16, 17, 64, 100, 256};
    for (uint32_t k = 0; k < 5; k++) /* S_max past the longest: a plan's rounded cap */
        check_lengths(ctx, 2, dims[k], lengths, 8, k == 1 ? 166 : 129, 200 + k);
    uint32_t random[9];
    ref_rng rng = {210};
    for (int b = 0; b < 9; b++)
        random[b] = (uint32_t)ref_uniform(&rng, 0, 301);
    check_lengths(ctx, 3, 64, random, 9, 300, 211);
    test_context_done(ctx);
}

Test(attention_fused, ragged_fp16_rows_and_output)
{
    vkbert_context *ctx = test_context(0);
    half = true;
    const uint32_t lengths[] = {5, 0, 70, 1, 23};
    check_lengths(ctx, 3, 32, lengths, 5, 70, 220);
    check_lengths(ctx, 2, 17, lengths, 5, 70, 221);
    check_lengths(ctx, 2, 80, lengths, 5, 70, 222);
    test_context_done(ctx);
}

Test(attention_fused, ragged_bad_offsets_are_clamped)
{
    vkbert_context *ctx = test_context(0);
    /* Spans [0, 4), [4, 9), [9, 12) and an empty one: the end before its start. */
    const int32_t clamped[] = {INT32_MIN, 4, 9, INT32_MAX, 2};
    check_offsets(ctx, 2, 16, clamped, 4, 12, 12, 230);
    /* Spans [3, 3) and [3, 10): rows 0-2 belong to none and are not written. */
    const int32_t past[] = {3, 3, 20};
    check_offsets(ctx, 2, 16, past, 2, 10, 10, 231);
    test_context_done(ctx);
}

/* Ragged batches take no mask, and rows and output are plain floats. */
Test(attention_fused, refuses_masks_when_ragged_and_formats_other_than_floats)
{
    vkbert_context *ctx = test_context(0);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_buffer buffer;
    TEST_OK(vkb_buffer_create(ctx, 1 << 16, &buffer));
    vkb_view v = vkb_whole(&buffer);
    vkb_dispatch dispatch = {0};
    vkb_fused_desc d = ragged_desc(3, 2, 8, 16, 20, 20 * 36);
    TEST_OK(vkb_op_attention_fused(ctx, pool, &d, v, v, v, &dispatch));
    vkb_dispatch_release(ctx, &dispatch);
    for (int k = 0; k < 4; k++) {
        vkb_fused_desc bad = d;
        bad.has_mask = k == 0, bad.causal = k == 1, bad.additive = k == 2;
        bad.dropout = k == 3 ? 0.1f : 0.0f;
        cr_assert_eq(vkb_op_attention_fused(ctx, pool, &bad, v, v, v, &dispatch),
                     VKBERT_ERROR_INVALID_ARGUMENT);
        cr_assert(strstr(vkbert_last_error(ctx), "ragged"), "%s", vkbert_last_error(ctx));
    }
    /* Rows and output are plain floats: int8 blocks, or no format at all, are refused. */
    vkb_format not_floats[3] = {VKB_FORMAT_Q8_0, VKB_FORMAT_Q8_ROWS, VKB_FORMAT_COUNT};
    for (int k = 0; k < 6; k++) {
        vkb_fused_desc bad = d;
        *(k < 3 ? &bad.rows : &bad.out) = not_floats[k % 3];
        cr_assert_eq(vkb_op_attention_fused(ctx, pool, &bad, v, v, v, &dispatch),
                     VKBERT_ERROR_INVALID_ARGUMENT, "case %d", k);
        cr_assert(strstr(vkbert_last_error(ctx), "fp32 or fp16"), "%s", vkbert_last_error(ctx));
    }
    vkb_view offsets = {buffer.buffer, 0, 3 * 4, 0}; /* 3 batches need 4 offsets */
    cr_assert_eq(vkb_op_attention_fused(ctx, pool, &d, v, offsets, v, &dispatch),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "offsets"), "%s", vkbert_last_error(ctx));
    vkb_buffer_destroy(ctx, &buffer);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    test_context_done(ctx);
}

/* Copies the packed Q, K, V rows of each sequence to row b * s of padded blocks. */
static void pad_rows(const float *packed, uint64_t packed_block, const int32_t *offsets,
                     uint32_t batch, uint32_t s, uint32_t ld, float *padded, uint64_t padded_block)
{
    for (int k = 0; k < 3; k++)
        for (uint32_t b = 0; b < batch; b++)
            memcpy(padded + k * padded_block + (size_t)b * s * ld,
                   packed + k * packed_block + (size_t)offsets[b] * ld,
                   (size_t)(offsets[b + 1] - offsets[b]) * ld * 4);
}

/* The ragged kernel against the padded one on a right-padded copy with a key mask: relative
 * L2 <= 1e-5 per sequence (docs/ragged.md). Lengths of at least 1: the padded kernel gives an empty
 * row its own meaning. */
static void check_equals_padded(vkbert_context *ctx, uint32_t heads, uint32_t dim,
                                const uint32_t *lengths, uint32_t batch, uint32_t s, uint64_t seed)
{
    uint32_t width = heads * pad4(dim), ld = width + 4, mp = pad4(s);
    int32_t *offsets = malloc((batch + 1) * sizeof *offsets);
    uint32_t tokens = pack_lengths(lengths, batch, offsets);
    ref_rng rng = {seed};
    size_t n_rag, n_pad, n_out = (size_t)batch * s * width;
    uint64_t block_rag, block_pad;
    float *rag = random_rows(&rng, tokens, ld, dim, &block_rag, &n_rag);
    float *pad = random_rows(&rng, (size_t)batch * s, ld, dim, &block_pad, &n_pad);
    pad_rows(rag, block_rag, offsets, batch, s, ld, pad, block_pad);
    float *mask = calloc((size_t)batch * mp, 4);
    for (uint32_t b = 0; b < batch; b++)
        for (uint32_t j = 0; j < lengths[b]; j++)
            mask[b * mp + j] = 1;
    vkb_fused_desc d = {
        batch,         heads, s,     dim,           ld, width, 0,        block_pad,
        2 * block_pad, true,  false, {mp, 0, 0, 1}, 0,  0,     additive, activations(),
        activations(), false, 0};
    float *got_pad = test_poisoned(n_out), *got_rag = test_poisoned((size_t)tokens * width);
    run(ctx, &d, pad, n_pad, mask, (size_t)batch * mp * 4, got_pad, n_out);
    d = ragged_desc(batch, heads, s, dim, tokens, block_rag);
    run(ctx, &d, rag, n_rag, offsets, (batch + 1) * 4, got_rag, (size_t)tokens * width);
    double *want = malloc(n_out * 8);
    for (size_t i = 0; i < n_out; i++)
        want[i] = got_pad[i];
    char what[128];
    for (uint32_t b = 0; b < batch; b++) {
        snprintf(what, sizeof what, "ragged vs padded %s%s: sequence %u of %u, H %u D %u",
                 half ? "fp16" : "fp32", additive ? " additive" : "", b, lengths[b], heads, dim);
        test_assert_close(got_rag + (size_t)offsets[b] * width, want + (size_t)b * s * width,
                          (size_t)lengths[b] * width, 1e-5, what);
    }
    free(offsets), free(rag), free(pad), free(mask), free(got_pad), free(got_rag), free(want);
}

Test(attention_fused, ragged_equals_padded)
{
    vkbert_context *ctx = test_context(0);
    const uint32_t lengths[] = {45, 1, 17, 32, 8};
    check_equals_padded(ctx, 2, 32, lengths, 5, 45, 240);
    additive = true; /* BERT's mask */
    check_equals_padded(ctx, 3, 64, lengths, 5, 45, 241);
    check_equals_padded(ctx, 2, 100, lengths, 5, 45, 242);
    half = true;
    check_equals_padded(ctx, 2, 64, lengths, 5, 45, 243);
    test_context_done(ctx);
}

/* ---- K and V rows shared by shuffles, where subgroup sizes allow it ---- */

/* Whether Vulkan lets a pipeline require subgroups of `size` lanes here:
 * VkPipelineShaderStageRequiredSubgroupSizeCreateInfo's valid usage, with full subgroups. */
static bool can_require(const vkbert_context *ctx, uint32_t size)
{
    const VkPhysicalDeviceSubgroupSizeControlProperties *c = &ctx->subgroup_control;
    return ctx->subgroup_size_control && ctx->full_subgroups &&
           (c->requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
           c->minSubgroupSize <= size && size <= c->maxSubgroupSize;
}

/* The sharing kernel runs where its workgroup is one subgroup: at the device's own size (with
 * REQUIRE_FULL_SUBGROUPS_BIT where computeFullSubgroups is there, with nothing without it), or
 * at a size the pipeline requires; elsewhere the kernel that shares nothing. */
static void check_sharing(vkbert_context *ctx, const char *how)
{
    fused_case c = {2, 3, 23, 32, {2, 1, 1, 23}, false, 0, 0.5, 71};
    uint32_t size = vkb_tune_fused_workgroup(ctx, c.seq);
    bool native = size == ctx->subgroup.subgroupSize, required = !native && can_require(ctx, size);
    check(ctx, c);
    check(ctx, (fused_case){1, 2, 70, 100, {0}, true, 0, 0, 72}); /* two slices */
    cr_assert_eq(strstr(last_kernel, "shared") != NULL, native || required, "%s: %s ran", how,
                 last_kernel);
    const uint32_t lengths[] = {23, 0, 5, 17};
    check_lengths(ctx, 3, 32, lengths, 4, c.seq, 73);
    cr_assert_eq(strstr(last_kernel, "shared_ragged") != NULL, native || required, "%s: %s ran",
                 how, last_kernel);
    VkPipelineShaderStageCreateFlags full =
        VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    if (native) {
        cr_assert_eq(last_pipeline->stage_flags, ctx->full_subgroups ? full : 0, "%s", how);
        cr_assert_eq(last_pipeline->required_subgroup_size, 0, "%s", how);
    } else if (required) {
        cr_assert_eq(last_pipeline->stage_flags, full, "%s", how);
        cr_assert_eq(last_pipeline->required_subgroup_size, size, "%s", how);
    }
}

Test(attention_fused, shared_rows_in_full_subgroups)
{
    vkbert_context *ctx = test_context_sharing(NULL);
    check_sharing(ctx, "as the device is");
    test_context_done(ctx);

    ctx = test_context_sharing("subgroup_size_control=0");
    cr_assert(!ctx->full_subgroups && !ctx->subgroup_size_control);
    check_sharing(ctx, "subgroup_size_control=0");
    test_context_done(ctx);

    /* As on a device whose subgroups default to twice the workgroup. */
    ctx = test_context_sharing(NULL);
    ctx->subgroup.subgroupSize = 2 * vkb_tune_fused_workgroup(ctx, 23);
    check_sharing(ctx, "a default of twice the workgroup");
    test_context_done(ctx);
}
