/* shaders/embedding.comp alone: word + position + token type embeddings, then LayerNorm,
 * against double; the word table in chunks of at most maxStorageBufferRange (capped so that
 * a small table spans several), one dispatch per chunk, ids on the chunks' edges, as fp32
 * and as fp16 (the reference reads the rounded values the device holds); ids outside the
 * tables, against ops.h's rule for them (rows of zeros, types read as 0, the flag's bits). */
#include "support.h"

#include <stdlib.h>
#include <string.h>

typedef struct embedding_case {
    uint32_t batch, seq, hidden, vocab;
    bool half;
} embedding_case;

/* Ids: the first tokens on both sides of every chunk edge, then 0 and vocab - 1, then random. */
static void fill_ids(int32_t *ids, size_t tokens, const embedding_case *c, uint32_t chunk_rows,
                     ref_rng *rng)
{
    size_t m = 0;
    for (uint32_t edge = chunk_rows; edge < c->vocab && m + 2 <= tokens; edge += chunk_rows) {
        ids[m++] = (int32_t)edge - 1;
        ids[m++] = (int32_t)edge;
    }
    if (m < tokens) ids[m++] = 0;
    if (m < tokens) ids[m++] = (int32_t)c->vocab - 1;
    for (; m < tokens; m++)
        ids[m] = (int32_t)ref_uniform(rng, 0, c->vocab);
    for (m = 0; m < tokens; m++)
        ids[tokens + m] = (int32_t)ref_uniform(rng, 0, 2);
}

/* The device's word chunks: word rows [k * rows, ...) in buffers[2k], of at most the range,
 * each followed by a guard row of NaN in buffers[2k + 1], so that a dispatch reading past its
 * chunk fails rather than find the next chunk's rows there. fp16 chunks round `word` in place.
 * Returns the chunk count. */
static uint32_t upload_chunks(vkbert_context *ctx, float *word, const embedding_case *c,
                              uint32_t ld, uint32_t rows, vkb_buffer *buffers)
{
    uint32_t count = 0;
    float *guard = test_poisoned(ld);
    for (uint32_t first = 0; first < c->vocab; first += rows, count++) {
        uint32_t n = c->vocab - first < rows ? c->vocab - first : rows;
        float *at = word + (size_t)first * ld;
        buffers[2 * count] = c->half ? test_half_buffer(ctx, at, (size_t)n * ld)
                                     : test_buffer(ctx, at, (size_t)n * ld);
        buffers[2 * count + 1] = test_buffer(ctx, guard, ld);
    }
    free(guard);
    return count;
}

/* Ids the host never checked, planted among good ones: input ids outside the vocabulary, and
 * token types outside the 2 of the table (on tokens with good ids too). */
static void spoil_ids(int32_t *ids, size_t tokens, const embedding_case *c)
{
    const int32_t bad_ids[] = {-1, (int32_t)c->vocab, INT32_MAX};
    const int32_t bad_types[] = {2, -1, INT32_MIN};
    for (size_t k = 0; k < 3; k++) {
        ids[(k * 5) % tokens] = bad_ids[k];
        ids[tokens + (k * 5 + 2) % tokens] = bad_types[k];
    }
}

static bool bad_id(const int32_t *ids, size_t m, const embedding_case *c)
{
    return ids[m] < 0 || ids[m] >= (int32_t)c->vocab;
}

static void reference(const float *word, const float *tables, const int32_t *ids, size_t tokens,
                      const embedding_case *c, uint32_t ld, double *want)
{
    uint32_t h = c->hidden;
    uint64_t type_off = (uint64_t)(c->seq + 3) * ld, gamma_off = type_off + 2 * ld;
    double *v = malloc(h * sizeof *v);
    for (size_t m = 0; m < tokens; m++) {
        if (bad_id(ids, m, c)) {
            memset(want + m * h, 0, h * sizeof *want);
            continue;
        }
        int32_t type = ids[tokens + m] == 1 ? 1 : 0; /* 0, or out of the table */
        const float *w = word + (size_t)ids[m] * ld, *p = tables + (m % c->seq) * ld;
        const float *t = tables + type_off + (size_t)type * ld;
        double mean = 0, var = 0;
        for (size_t j = 0; j < h; j++)
            mean += v[j] = (double)w[j] + p[j] + t[j];
        mean /= h;
        for (size_t j = 0; j < h; j++)
            var += (v[j] - mean) * (v[j] - mean);
        var /= h;
        for (size_t j = 0; j < h; j++)
            want[m * h + j] = (v[j] - mean) / sqrt(var + 1e-12) * tables[gamma_off + j] +
                              tables[gamma_off + ld + j];
    }
    free(v);
}

/* The flag the kernel must leave: its bits for the bad ids among `ids`. */
static int32_t flag_for(const int32_t *ids, size_t tokens, const embedding_case *c)
{
    int32_t flag = 0;
    for (size_t m = 0; m < tokens; m++) {
        if (bad_id(ids, m, c)) flag |= VKB_EMBEDDING_BAD_ID;
        if (ids[tokens + m] != 0 && ids[tokens + m] != 1) flag |= VKB_EMBEDDING_BAD_TYPE;
    }
    return flag;
}

static void check_ids(vkbert_context *ctx, embedding_case c, uint32_t min_chunks, uint64_t seed,
                      bool spoiled)
{
    uint32_t ld = (c.hidden + 3) / 4 * 4, max_pos = c.seq + 3, types = 2;
    uint64_t type_off = (uint64_t)max_pos * ld, gamma_off = type_off + (uint64_t)types * ld;
    size_t n_tables = gamma_off + 2 * ld, n_word = (size_t)c.vocab * ld;
    size_t tokens = (size_t)c.batch * c.seq, n_out = tokens * ld;
    uint32_t rows = ctx->props.limits.maxStorageBufferRange / (ld * (c.half ? 2 : 4));
    uint32_t chunk_count = (c.vocab + rows - 1) / rows;
    cr_assert(chunk_count >= min_chunks, "%u chunks of %u rows", chunk_count, rows);
    float *word = malloc(n_word * 4), *tables = malloc(n_tables * 4), *got = test_poisoned(n_out);
    int32_t *ids = calloc(2 * tokens + 1, 4); /* then the flag, 0 */
    ref_rng rng = {seed};
    ref_fill(&rng, word, n_word, -1, 1);
    ref_fill(&rng, tables, n_tables, -1, 1);
    fill_ids(ids, tokens, &c, rows, &rng);
    if (spoiled) spoil_ids(ids, tokens, &c);
    vkb_buffer *chunks = malloc(2 * chunk_count * sizeof *chunks);
    upload_chunks(ctx, word, &c, ld, rows, chunks);
    vkb_buffer bt = test_buffer(ctx, tables, n_tables), bo = test_buffer(ctx, got, n_out);
    vkb_buffer bi;
    TEST_OK(vkb_buffer_create(ctx, (2 * tokens + 1) * 4, &bi));
    TEST_OK(vkb_buffer_upload(ctx, &bi, 0, ids, (2 * tokens + 1) * 4));
    VkDescriptorPool pool;
    TEST_OK(vkb_descriptor_pool(ctx, chunk_count, &pool));
    vkb_dispatch *dispatches = calloc(chunk_count, sizeof *dispatches);
    /* Last chunk first: a dispatch that wrote a later chunk's token would not be overwritten. */
    for (uint32_t k = 0; k < chunk_count; k++) {
        uint32_t first = k * rows, n = c.vocab - first < rows ? c.vocab - first : rows;
        vkb_embedding_desc d = {(uint32_t)tokens, c.seq,     c.hidden,       ld,    0,
                                type_off,         gamma_off, gamma_off + ld, first, n,
                                c.vocab,          types,     c.half,         1e-12f};
        TEST_OK(vkb_op_embedding(ctx, pool, &d, vkb_whole(&chunks[2 * k]), vkb_whole(&bt),
                                 vkb_whole(&bi), vkb_whole(&bo), &dispatches[chunk_count - 1 - k]));
    }
    test_run(ctx, dispatches, chunk_count);
    test_buffer_read(ctx, &bo, got, n_out);
    int32_t flag;
    TEST_OK(vkb_buffer_download(ctx, &bi, 2 * tokens * 4, &flag, 4));
    cr_assert_eq(flag, flag_for(ids, tokens, &c), "the flag: %d", flag);

    double *want = malloc(tokens * c.hidden * 8);
    float *packed = malloc(tokens * c.hidden * 4);
    reference(word, tables, ids, tokens, &c, ld, want);
    for (size_t m = 0; m < tokens; m++)
        for (size_t j = 0; j < ld; j++) {
            if (j < c.hidden) packed[m * c.hidden + j] = got[m * ld + j];
            if (j >= c.hidden || bad_id(ids, m, &c))
                cr_assert_eq(got[m * ld + j], 0.0f, "token %zu column %zu", m, j);
        }
    char what[96];
    snprintf(what, sizeof what, "embedding H %u vocab %u in %u %s chunks%s", c.hidden, c.vocab,
             chunk_count, c.half ? "fp16" : "fp32", spoiled ? ", bad ids" : "");
    test_assert_fp32_close(packed, want, tokens * c.hidden, what);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    for (uint32_t k = 0; k < 2 * chunk_count; k++)
        vkb_buffer_destroy(ctx, &chunks[k]);
    vkb_buffer_destroy(ctx, &bt), vkb_buffer_destroy(ctx, &bo), vkb_buffer_destroy(ctx, &bi);
    free(word), free(tables), free(got), free(ids), free(chunks), free(dispatches), free(want);
    free(packed);
}

static void check(vkbert_context *ctx, embedding_case c, uint32_t min_chunks, uint64_t seed)
{
    check_ids(ctx, c, min_chunks, seed, false);
}

Test(embedding, shapes)
{
    vkbert_context *ctx = test_context(0);
    for (int half = 0; half < 2; half++) {
        check(ctx, (embedding_case){1, 1, 16, 5, half}, 1, 1);
        check(ctx, (embedding_case){2, 7, 20, 30, half}, 1, 2);
        check(ctx, (embedding_case){3, 33, 37, 100, half}, 1, 3);
        check(ctx, (embedding_case){2, 128, 768, 50, half}, 1, 4);
    }
    test_context_done(ctx);
}

Test(embedding, ids_outside_the_tables)
{
    vkbert_context *ctx = test_context(0);
    check_ids(ctx, (embedding_case){3, 7, 20, 30, false}, 1, 8, true);
    check_ids(ctx, (embedding_case){2, 9, 37, 100, true}, 1, 9, true);
    test_context_done(ctx);
}

Test(embedding, word_table_in_chunks)
{
    /* A 64 KiB range: 409 rows of H 37 per fp32 chunk, 21 of H 768. */
    vkbert_context_options options = {.struct_size = sizeof(vkbert_context_options),
                                      .validation = 1,
                                      .limits = "max_storage_buffer_range=64k"};
    vkbert_context *ctx = NULL;
    TEST_OK(vkbert_context_create(&options, &ctx));
    for (int half = 0; half < 2; half++) {
        check(ctx, (embedding_case){3, 11, 37, 2000, half}, 3, 5);
        check(ctx, (embedding_case){2, 9, 768, 100, half}, 3, 6);
    }
    check_ids(ctx, (embedding_case){3, 11, 37, 2000, false}, 3, 10, true);
    ctx->subgroup_arithmetic = false; /* the shared-memory reductions */
    check(ctx, (embedding_case){3, 11, 37, 2000, true}, 3, 7);
    check_ids(ctx, (embedding_case){3, 11, 37, 2000, true}, 3, 11, true);
    test_context_done(ctx);
}

Test(embedding, a_chunk_larger_than_its_binding_is_refused)
{
    vkbert_context *ctx = test_context(0);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_buffer buffer;
    TEST_OK(vkb_buffer_create(ctx, 4096, &buffer));
    vkb_view v = vkb_whole(&buffer);
    vkb_dispatch dispatch = {0};
    /* 129 rows of 8 fp32 are 4128 bytes; as fp16 they fit. */
    vkb_embedding_desc d = {4, 2, 8, 8, 0, 16, 32, 40, 0, 129, 129, 2, false, 1e-12f};
    cr_assert_eq(vkb_op_embedding(ctx, pool, &d, v, v, v, v, &dispatch),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "word"), "%s", vkbert_last_error(ctx));
    d.word_half = true;
    TEST_OK(vkb_op_embedding(ctx, pool, &d, v, v, v, v, &dispatch));
    vkb_dispatch_release(ctx, &dispatch);
    vkb_buffer_destroy(ctx, &buffer);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    test_context_done(ctx);
}
