/* shaders/pool.comp alone, against a double reference written from sentence-transformers'
 * Pooling.forward (sentence_transformer/models/Pooling.py): every set of modes, right, left
 * and no padding, holes; then ragged batches (docs/ragged.md) of random lengths, empty ones and bad
 * offsets among them, each sequence against the same reference over its rows. Masked tokens
 * past position 0 and every padding hold NaN, so reading one where Pooling would not fails. */
#include "support.h"

#include <stdlib.h>
#include <string.h>

typedef struct pool_case {
    uint32_t batch, seq, hidden, modes;
} pool_case;

static uint32_t pad4(uint32_t x)
{
    return (x + 3) / 4 * 4;
}

/* Sequence b's mask: all kept, right padding, left padding, none, random holes, in turn. */
static float mask_value(uint32_t b, uint32_t s, uint32_t seq, ref_rng *rng)
{
    switch (b % 5) {
    case 0:
        return 1.0f;
    case 1:
        return s + b / 5 + 2 < seq ? 1.0f : 0.0f;
    case 2:
        return s >= 2 ? 1.0f : 0.0f;
    case 3:
        return 0.0f;
    default:
        return ref_uniform(rng, 0, 1) < 0.6 ? 1.0f : 0.0f;
    }
}

/* Pooling.forward for one sequence: x [seq][ld], keep [seq]; want gets the six modes' blocks
 * in Pooling's order, each `hidden` wide. */
static void reference(const float *x, const float *mask, const pool_case *c, uint32_t ld,
                      double *want)
{
    uint32_t seq = c->seq, h = c->hidden;
    int *keep = malloc(seq * sizeof *keep);
    double count = 0, weights = 0;
    int last = -1, first = -1;
    for (uint32_t s = 0; s < seq; s++) {
        keep[s] = mask[s] != 0;
        count += keep[s], weights += keep[s] * (s + 1.0);
        if (keep[s]) last = (int)s;
        if (keep[s] && first < 0) first = (int)s;
    }
    first = first < 0 ? 0 : first; /* attention_mask.argmax: the first kept, else 0 */
    for (uint32_t j = 0; j < h; j++) {
        double top = -INFINITY, sum = 0, weighted = 0;
        for (uint32_t s = 0; s < seq; s++) {
            double v = keep[s] ? x[s * ld + j] : -1e9; /* token_embeddings[mask == 0] = -1e9 */
            top = v > top ? v : top;
            sum += keep[s] ? v : 0, weighted += keep[s] ? (s + 1.0) * v : 0;
        }
        want[0 * h + j] = x[(uint32_t)first * ld + j];
        want[1 * h + j] = top;
        want[2 * h + j] = sum / (count > 1e-9 ? count : 1e-9);
        want[3 * h + j] = sum / sqrt(count > 1e-9 ? count : 1e-9);
        want[4 * h + j] = weighted / (weights > 1e-9 ? weights : 1e-9);
        /* gather of token_embeddings * mask at the last kept index, index 0 when none */
        want[5 * h + j] = last >= 0 ? x[(uint32_t)last * ld + j] : 0.0;
        want[6 * h + j] = x[j]; /* the pooler's row 0 */
    }
    free(keep);
}

static void compare(const float *got, const double *want, const pool_case *c, uint32_t out_ld,
                    uint32_t b)
{
    uint32_t block = 0;
    for (uint32_t mode = 0; mode < 7; mode++) {
        if (!(c->modes & (1u << mode))) continue;
        for (uint32_t j = 0; j < c->hidden; j++) {
            double w = want[mode * c->hidden + j];
            float g = got[block * c->hidden + j];
            cr_assert(fabs(g - w) <= 1e-5 * (1 + fabs(w)), "modes 0x%x b%u mode %u j%u: %g vs %g",
                      c->modes, b, mode, j, g, w);
        }
        block++;
    }
    for (uint32_t j = block * c->hidden; j < out_ld; j++)
        cr_assert_eq(got[j], 0.0f, "modes 0x%x b%u: padding column %u not zero", c->modes, b, j);
}

static void check(vkbert_context *ctx, VkDescriptorPool pool, pool_case c, uint64_t seed)
{
    uint32_t ld = pad4(c.hidden), mask_ld = pad4(c.seq) + 4, out_ld = pad4(7 * c.hidden) + 4;
    size_t nh = (size_t)c.batch * c.seq * ld, nm = (size_t)c.batch * mask_ld;
    size_t no = (size_t)c.batch * out_ld;
    float *h = malloc(nh * 4), *mask = test_poisoned(nm), *got = test_poisoned(no);
    ref_rng rng = {seed};
    ref_fill(&rng, h, nh, -2, 2);
    for (uint32_t b = 0; b < c.batch; b++)
        for (uint32_t s = 0; s < c.seq; s++) {
            mask[b * mask_ld + s] = mask_value(b, s, c.seq, &rng);
            float *row = h + ((size_t)b * c.seq + s) * ld;
            for (uint32_t j = 0; j < ld; j++)
                if (j >= c.hidden || (s > 0 && mask[b * mask_ld + s] == 0)) row[j] = NAN;
        }
    vkb_buffer bh = test_buffer(ctx, h, nh), bm = test_buffer(ctx, mask, nm);
    vkb_buffer bo = test_buffer(ctx, got, no);
    vkb_pool_desc d = {c.batch, c.seq, c.hidden, ld, mask_ld, c.modes, out_ld};
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_pool(ctx, pool, &d, vkb_whole(&bh), vkb_whole(&bm), vkb_whole(&bo), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bo, got, no);
    double *want = malloc(7 * c.hidden * sizeof *want);
    for (uint32_t b = 0; b < c.batch; b++) {
        reference(h + (size_t)b * c.seq * ld, mask + b * mask_ld, &c, ld, want);
        compare(got + (size_t)b * out_ld, want, &c, out_ld, b);
    }
    vkb_buffer_destroy(ctx, &bh), vkb_buffer_destroy(ctx, &bm), vkb_buffer_destroy(ctx, &bo);
    free(h), free(mask), free(got), free(want);
}

Test(pool, every_set_of_modes)
{
    vkbert_context *ctx = test_context(0);
    for (uint32_t modes = 1; modes < 64; modes++) {
        VkDescriptorPool pool = test_pool(ctx);
        check(ctx, pool, (pool_case){10, 9, 20, modes}, modes);
        vkDestroyDescriptorPool(ctx->device, pool, NULL);
    }
    test_context_done(ctx);
}

Test(pool, shapes)
{
    vkbert_context *ctx = test_context(0);
    VkDescriptorPool pool = test_pool(ctx);
    uint32_t all = VKB_POOL_CLS | VKB_POOL_MAX | VKB_POOL_MEAN | VKB_POOL_MEAN_SQRT_LEN |
                   VKB_POOL_WEIGHTED_MEAN | VKB_POOL_LAST_TOKEN;
    /* Then the shared-memory reductions, which devices without subgroup arithmetic run. */
    for (int shared = 0; shared < 2; shared++) {
        ctx->subgroup_arithmetic = ctx->subgroup_arithmetic && !shared;
        check(ctx, pool, (pool_case){1, 1, 16, all}, 1);
        check(ctx, pool, (pool_case){10, 9, 20, all}, 2);
        check(ctx, pool, (pool_case){5, 6, 7, all}, 4);
        check(ctx, pool, (pool_case){5, 33, 384, all}, 5);
        check(ctx, pool, (pool_case){3, 300, 37, VKB_POOL_MEAN | VKB_POOL_LAST_TOKEN}, 6);
        check(ctx, pool, (pool_case){10, 9, 20, VKB_POOL_FIRST_ROW}, 7);
        check(ctx, pool, (pool_case){10, 9, 20, all | VKB_POOL_FIRST_ROW}, 8);
        vkDestroyDescriptorPool(ctx->device, pool, NULL);
        pool = test_pool(ctx);
    }
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    test_context_done(ctx);
}

/* Where sequence b of a ragged batch lies, as ops.h promises: its offsets clamped to
 * [0, tokens], the end never before the start. */
static void ragged_span(const int32_t *offsets, uint32_t b, uint32_t tokens, uint32_t *first,
                        uint32_t *len)
{
    int64_t lo = offsets[b] < 0 ? 0 : offsets[b], hi = offsets[b + 1];
    lo = lo > tokens ? tokens : lo;
    hi = hi < lo ? lo : hi > tokens ? tokens : hi;
    *first = (uint32_t)lo, *len = (uint32_t)(hi - lo);
}

/* Packed rows [tokens][ld] and mask [tokens], NaN where Pooling reads nothing (as check's):
 * padding columns, and masked rows that begin no sequence (bad offsets make spans overlap). */
static void fill_ragged(float *h, float *mask, const int32_t *offsets, const pool_case *c,
                        uint32_t tokens, ref_rng *rng)
{
    uint32_t ld = pad4(c->hidden), first, len;
    bool *starts = calloc(tokens + 1, sizeof *starts);
    ref_fill(rng, h, (size_t)tokens * ld, -2, 2);
    for (uint32_t b = 0; b < c->batch; b++) {
        ragged_span(offsets, b, tokens, &first, &len);
        starts[first] = starts[first] || len;
        for (uint32_t s = 0; s < len; s++)
            mask[first + s] = mask_value(b, s, len, rng);
    }
    for (uint32_t r = 0; r < tokens; r++)
        for (uint32_t j = 0; j < ld; j++)
            if (j >= c->hidden || (!starts[r] && mask[r] == 0)) h[(size_t)r * ld + j] = NAN;
    free(starts);
}

/* c.seq is unused: the sequences are where `offsets` puts them in `tokens` packed rows. */
static void check_ragged(vkbert_context *ctx, VkDescriptorPool pool, pool_case c,
                         const int32_t *offsets, uint32_t tokens, uint64_t seed)
{
    uint32_t ld = pad4(c.hidden), out_ld = pad4(7 * c.hidden) + 4;
    size_t nh = (size_t)(tokens + 1) * ld, nm = tokens + 4, no = (size_t)c.batch * out_ld;
    float *h = test_poisoned(nh), *mask = test_poisoned(nm), *got = test_poisoned(no);
    ref_rng rng = {seed};
    fill_ragged(h, mask, offsets, &c, tokens, &rng);
    vkb_buffer bh = test_buffer(ctx, h, nh), bm = test_buffer(ctx, mask, nm);
    vkb_buffer bo = test_buffer(ctx, got, no), boff;
    TEST_OK(vkb_buffer_create(ctx, (c.batch + 1) * 4, &boff));
    TEST_OK(vkb_buffer_upload(ctx, &boff, 0, offsets, (c.batch + 1) * 4));
    vkb_pool_ragged_desc d = {c.batch, tokens, c.hidden, ld, c.modes, out_ld};
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_pool_ragged(ctx, pool, &d, vkb_whole(&bh), vkb_whole(&bm), vkb_whole(&boff),
                               vkb_whole(&bo), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bo, got, no);
    double *want = malloc(7 * c.hidden * sizeof *want);
    for (uint32_t b = 0; b < c.batch; b++) {
        uint32_t first, len;
        ragged_span(offsets, b, tokens, &first, &len);
        pool_case one = {1, len, c.hidden, c.modes};
        if (len) reference(h + (size_t)first * ld, mask + first, &one, ld, want);
        if (len) compare(got + (size_t)b * out_ld, want, &c, out_ld, b);
        for (uint32_t j = 0; !len && j < out_ld; j++)
            cr_assert_eq(got[(size_t)b * out_ld + j], 0.0f, "empty sequence %u: column %u", b, j);
    }
    vkb_buffer_destroy(ctx, &bh), vkb_buffer_destroy(ctx, &bm), vkb_buffer_destroy(ctx, &bo);
    vkb_buffer_destroy(ctx, &boff);
    free(h), free(mask), free(got), free(want);
}

/* cu_seqlens of `batch` random lengths in [0, max_len], the first two 0 and 1. */
static uint32_t random_offsets(int32_t *offsets, uint32_t batch, uint32_t max_len, ref_rng *rng)
{
    offsets[0] = 0;
    for (uint32_t b = 0; b < batch; b++) {
        uint32_t len = b < 2 ? b : (uint32_t)ref_uniform(rng, 0, max_len + 1);
        offsets[b + 1] = offsets[b] + (int32_t)len;
    }
    return (uint32_t)offsets[batch];
}

Test(pool, ragged_random_lengths)
{
    vkbert_context *ctx = test_context(0);
    uint32_t all = VKB_POOL_CLS | VKB_POOL_MAX | VKB_POOL_MEAN | VKB_POOL_MEAN_SQRT_LEN |
                   VKB_POOL_WEIGHTED_MEAN | VKB_POOL_LAST_TOKEN;
    pool_case cases[] = {
        {13, 0, 37, all}, {9, 0, 384, all}, {17, 0, 20, VKB_POOL_MEAN | VKB_POOL_FIRST_ROW}};
    uint32_t max_len[] = {70, 33, 300};
    int32_t offsets[18];
    for (int shared = 0; shared < 2; shared++) {
        ctx->subgroup_arithmetic = ctx->subgroup_arithmetic && !shared;
        for (uint32_t i = 0; i < 3; i++) {
            VkDescriptorPool pool = test_pool(ctx);
            ref_rng rng = {100 + i};
            uint32_t tokens = random_offsets(offsets, cases[i].batch, max_len[i], &rng);
            check_ragged(ctx, pool, cases[i], offsets, tokens, 7 + i);
            vkDestroyDescriptorPool(ctx->device, pool, NULL);
        }
    }
    test_context_done(ctx);
}

Test(pool, ragged_every_set_of_modes)
{
    vkbert_context *ctx = test_context(0);
    int32_t offsets[11];
    ref_rng rng = {3};
    uint32_t tokens = random_offsets(offsets, 10, 23, &rng);
    for (uint32_t modes = 1; modes < 64; modes++) {
        VkDescriptorPool pool = test_pool(ctx);
        check_ragged(ctx, pool, (pool_case){10, 0, 20, modes}, offsets, tokens, modes);
        vkDestroyDescriptorPool(ctx->device, pool, NULL);
    }
    test_context_done(ctx);
}

/* Offsets the host never checked: negative, past the rows, decreasing. Each sequence gets the
 * clamped span ops.h promises, and nothing reads past the rows (the validation layer and the
 * NaN past them would show it). */
Test(pool, ragged_bad_offsets_are_clamped)
{
    vkbert_context *ctx = test_context(0);
    VkDescriptorPool pool = test_pool(ctx);
    uint32_t all = VKB_POOL_CLS | VKB_POOL_MAX | VKB_POOL_MEAN | VKB_POOL_MEAN_SQRT_LEN |
                   VKB_POOL_WEIGHTED_MEAN | VKB_POOL_LAST_TOKEN;
    int32_t offsets[] = {-5, 3, 1, 40, INT32_MAX, INT32_MIN, 10, 45};
    check_ragged(ctx, pool, (pool_case){7, 0, 12, all}, offsets, 41, 11);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    test_context_done(ctx);
}

/* An unpadded batch pools exactly as its right-padded copy does. Same sums in the
 * same order (padding adds +0.0) and exact integer counts, so the rows match bit for bit. */
Test(pool, ragged_equals_padded)
{
    vkbert_context *ctx = test_context(0);
    VkDescriptorPool pool = test_pool(ctx);
    uint32_t batch = 11, hidden = 29, ld = pad4(hidden), out_ld = pad4(6 * hidden), seq = 0;
    uint32_t modes = VKB_POOL_CLS | VKB_POOL_MAX | VKB_POOL_MEAN | VKB_POOL_MEAN_SQRT_LEN |
                     VKB_POOL_WEIGHTED_MEAN | VKB_POOL_LAST_TOKEN;
    int32_t offsets[12] = {0};
    ref_rng rng = {21};
    for (uint32_t b = 0; b < batch; b++) {
        offsets[b + 1] = offsets[b] + 1 + (int32_t)ref_uniform(&rng, 0, 57);
        seq = (uint32_t)(offsets[b + 1] - offsets[b]) > seq
                  ? (uint32_t)(offsets[b + 1] - offsets[b])
                  : seq;
    }
    uint32_t tokens = (uint32_t)offsets[batch], sp = pad4(seq);
    float *h = malloc((size_t)tokens * ld * 4), *ones = malloc(tokens * 4);
    float *ph = test_poisoned((size_t)batch * seq * ld), *pm = calloc((size_t)batch * sp, 4);
    ref_fill(&rng, h, (size_t)tokens * ld, -2, 2);
    for (uint32_t r = 0; r < tokens; r++)
        ones[r] = 1.0f;
    for (uint32_t b = 0; b < batch; b++)
        for (uint32_t s = 0; s < (uint32_t)(offsets[b + 1] - offsets[b]); s++) {
            memcpy(ph + ((size_t)b * seq + s) * ld, h + (size_t)(offsets[b] + s) * ld, ld * 4);
            pm[b * sp + s] = 1.0f;
        }
    vkb_buffer bh = test_buffer(ctx, h, (size_t)tokens * ld), bm = test_buffer(ctx, ones, tokens);
    vkb_buffer bph = test_buffer(ctx, ph, (size_t)batch * seq * ld);
    vkb_buffer bpm = test_buffer(ctx, pm, (size_t)batch * sp), boff;
    float *got[2] = {test_poisoned((size_t)batch * out_ld), test_poisoned((size_t)batch * out_ld)};
    vkb_buffer bo[2] = {test_buffer(ctx, got[0], (size_t)batch * out_ld),
                        test_buffer(ctx, got[1], (size_t)batch * out_ld)};
    TEST_OK(vkb_buffer_create(ctx, sizeof offsets, &boff));
    TEST_OK(vkb_buffer_upload(ctx, &boff, 0, offsets, sizeof offsets));
    vkb_pool_ragged_desc rd = {batch, tokens, hidden, ld, modes, out_ld};
    vkb_pool_desc pd = {batch, seq, hidden, ld, sp, modes, out_ld};
    vkb_dispatch dispatch[2] = {0};
    TEST_OK(vkb_op_pool_ragged(ctx, pool, &rd, vkb_whole(&bh), vkb_whole(&bm), vkb_whole(&boff),
                               vkb_whole(&bo[0]), &dispatch[0]));
    TEST_OK(vkb_op_pool(ctx, pool, &pd, vkb_whole(&bph), vkb_whole(&bpm), vkb_whole(&bo[1]),
                        &dispatch[1]));
    test_run(ctx, dispatch, 2);
    for (int k = 0; k < 2; k++)
        test_buffer_read(ctx, &bo[k], got[k], (size_t)batch * out_ld);
    for (size_t i = 0; i < (size_t)batch * out_ld; i++)
        cr_assert(got[0][i] == got[1][i], "element %zu: ragged %g, padded %g", i, got[0][i],
                  got[1][i]);
    vkb_buffer *all[] = {&bh, &bm, &bph, &bpm, &boff, &bo[0], &bo[1]};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        vkb_buffer_destroy(ctx, all[i]);
    free(h), free(ones), free(ph), free(pm), free(got[0]), free(got[1]);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    test_context_done(ctx);
}

Test(pool, bad_descriptions_are_refused)
{
    vkbert_context *ctx = test_context(0);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_buffer buffer;
    TEST_OK(vkb_buffer_create(ctx, 4096, &buffer));
    vkb_view v = vkb_whole(&buffer);
    vkb_dispatch dispatch = {0};
    vkb_pool_desc bad[] = {
        {2, 3, 8, 8, 4, 0, 8},                           /* no mode */
        {2, 3, 8, 8, 4, 128, 8},                         /* an unknown bit */
        {2, 3, 8, 8, 4, VKB_POOL_CLS | VKB_POOL_MAX, 8}, /* two blocks in 8 columns */
        {2, 3, 8, 8, 2, VKB_POOL_MEAN, 8},               /* mask pitch under seq_len */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(vkb_op_pool(ctx, pool, &bad[i], v, v, v, &dispatch),
                     VKBERT_ERROR_INVALID_ARGUMENT, "case %zu", i);
    vkb_buffer_destroy(ctx, &buffer);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    test_context_done(ctx);
}
