/* shaders/embedding.comp alone: word + position + token type embeddings, then LayerNorm,
 * against double. */
#include "support.h"

#include <stdlib.h>

static void check(vkbert_context *ctx, uint32_t batch, uint32_t seq, uint32_t hidden,
                  uint32_t vocab, uint64_t seed)
{
    uint32_t ld = (hidden + 3) / 4 * 4, max_pos = seq + 3, types = 2;
    uint64_t pos_off = (uint64_t)vocab * ld, type_off = pos_off + (uint64_t)max_pos * ld;
    uint64_t gamma_off = type_off + (uint64_t)types * ld, beta_off = gamma_off + ld;
    size_t n_tables = beta_off + ld, tokens = (size_t)batch * seq, n_out = tokens * ld;
    float *tables = malloc(n_tables * 4), *got = test_poisoned(n_out);
    int32_t *ids = malloc(2 * tokens * 4);
    ref_rng rng = {seed};
    ref_fill(&rng, tables, n_tables, -1, 1);
    for (size_t m = 0; m < tokens; m++) {
        ids[m] = (int32_t)ref_uniform(&rng, 0, vocab);
        ids[tokens + m] = (int32_t)ref_uniform(&rng, 0, types);
    }
    vkb_buffer bt = test_buffer(ctx, tables, n_tables), bo = test_buffer(ctx, got, n_out);
    vkb_buffer bi;
    TEST_OK(vkb_buffer_create(ctx, 2 * tokens * 4, &bi));
    TEST_OK(vkb_buffer_upload(ctx, &bi, 0, ids, 2 * tokens * 4));
    VkDescriptorPool pool = test_pool(ctx);
    vkb_embedding_desc d = {(uint32_t)tokens, seq,       hidden,   ld,    pos_off,
                            type_off,         gamma_off, beta_off, 1e-12f};
    vkb_dispatch dispatch = {0};
    TEST_OK(
        vkb_op_embedding(ctx, pool, &d, vkb_whole(&bt), vkb_whole(&bi), vkb_whole(&bo), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bo, got, n_out);

    double *want = malloc(tokens * hidden * 8), *v = malloc(hidden * 8);
    float *packed = malloc(tokens * hidden * 4);
    for (size_t m = 0; m < tokens; m++) {
        const float *w = tables + (size_t)ids[m] * ld, *p = tables + pos_off + (m % seq) * ld;
        const float *t = tables + type_off + (size_t)ids[tokens + m] * ld;
        double mean = 0, var = 0;
        for (size_t j = 0; j < hidden; j++)
            mean += v[j] = (double)w[j] + p[j] + t[j];
        mean /= hidden;
        for (size_t j = 0; j < hidden; j++)
            var += (v[j] - mean) * (v[j] - mean);
        var /= hidden;
        for (size_t j = 0; j < hidden; j++) {
            want[m * hidden + j] =
                (v[j] - mean) / sqrt(var + 1e-12) * tables[gamma_off + j] + tables[beta_off + j];
            packed[m * hidden + j] = got[m * ld + j];
        }
        for (size_t j = hidden; j < ld; j++)
            cr_assert_eq(got[m * ld + j], 0.0f);
    }
    test_assert_fp32_close(packed, want, tokens * hidden, "embedding");
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &bt), vkb_buffer_destroy(ctx, &bo), vkb_buffer_destroy(ctx, &bi);
    free(tables), free(got), free(ids), free(want), free(v), free(packed);
}

Test(embedding, shapes)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, 1, 1, 16, 5, 1);
    check(ctx, 2, 7, 20, 30, 2);
    check(ctx, 3, 33, 37, 100, 3);
    check(ctx, 2, 128, 768, 50, 4);
    test_context_done(ctx);
}
