/* shaders/embedding.comp alone: word + position + token type embeddings, then LayerNorm,
 * against double; the word table in chunks of at most maxStorageBufferRange (capped so that
 * a small table spans several), one dispatch per chunk, ids on the chunks' edges, as fp32
 * and as fp16 (the reference reads the rounded values the device holds); ids outside the
 * tables, against ops.h's rule for them (rows of zeros, types read as 0, the flag's bits).
 * Ragged batches (docs/ragged.md): each token's position read from the ids, against the same
 * reference and, bit for bit, against the padded kernel on a right-padded copy. */
#include "support.h"

#include <stdlib.h>
#include <string.h>

typedef struct embedding_case {
    uint32_t batch, seq, hidden, vocab;
    bool half;
    uint32_t ragged; /* tokens of a ragged batch, positions in [0, seq + 3); 0 for padded */
} embedding_case;

/* The tables: position [seq + 3][ld] (room past the longest sequence), token type [2][ld],
 * gamma, beta. */
static uint32_t max_pos(const embedding_case *c)
{
    return c->seq + 3;
}

static size_t token_count(const embedding_case *c)
{
    return c->ragged ? c->ragged : (size_t)c->batch * c->seq;
}

/* The blocks of `tokens` int32 before the flag: ids, types, and positions when ragged. */
static size_t id_blocks(const embedding_case *c)
{
    return c->ragged ? 3 : 2;
}

/* Token m's position row: its own when ragged, 0 outside the table (ops.h's rule); else
 * m % seq, HuggingFace's arange(S) over each padded row. */
static size_t position_of(const int32_t *ids, size_t tokens, size_t m, const embedding_case *c)
{
    if (!c->ragged) return m % c->seq;
    int32_t position = ids[2 * tokens + m];
    return position >= 0 && position < (int32_t)max_pos(c) ? (size_t)position : 0;
}

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
    if (!c->ragged) return;
    int32_t *positions = ids + 2 * tokens; /* both ends of the table, then random */
    positions[0] = (int32_t)max_pos(c) - 1;
    if (tokens > 1) positions[1] = 0;
    for (m = 2; m < tokens; m++)
        positions[m] = (int32_t)ref_uniform(rng, 0, max_pos(c));
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

/* Ids the host never checked, planted among good ones: input ids outside the vocabulary,
 * token types outside the 2 of the table and, ragged, positions outside its table (on tokens
 * with good ids too). */
static void spoil_ids(int32_t *ids, size_t tokens, const embedding_case *c)
{
    const int32_t bad_ids[] = {-1, (int32_t)c->vocab, INT32_MAX};
    const int32_t bad_types[] = {2, -1, INT32_MIN};
    const int32_t bad_positions[] = {(int32_t)max_pos(c), -1, INT32_MIN};
    for (size_t k = 0; k < 3; k++) {
        ids[(k * 5) % tokens] = bad_ids[k];
        ids[tokens + (k * 5 + 2) % tokens] = bad_types[k];
        if (c->ragged) ids[2 * tokens + (k * 5 + 3) % tokens] = bad_positions[k];
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
    uint64_t type_off = (uint64_t)max_pos(c) * ld, gamma_off = type_off + 2 * ld;
    double *v = malloc(h * sizeof *v);
    for (size_t m = 0; m < tokens; m++) {
        if (bad_id(ids, m, c)) {
            memset(want + m * h, 0, h * sizeof *want);
            continue;
        }
        int32_t type = ids[tokens + m] == 1 ? 1 : 0; /* 0, or out of the table */
        const float *w = word + (size_t)ids[m] * ld;
        const float *p = tables + position_of(ids, tokens, m, c) * ld;
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
        if (c->ragged && (ids[2 * tokens + m] < 0 || ids[2 * tokens + m] >= (int32_t)max_pos(c)))
            flag |= VKB_EMBEDDING_BAD_POSITION;
    }
    return flag;
}

/* Every chunk's dispatch, last chunk first (a dispatch that wrote a later chunk's token
 * would not be overwritten), over `ids` (id_blocks of tokens, then the flag, 0) into got
 * [tokens][ld], its word chunks of `rows` rows; fp16 chunks round `word` in place. Returns the
 * flag the kernel left. */
static int32_t run(vkbert_context *ctx, const embedding_case *c, float *word, const float *tables,
                   const int32_t *ids, uint32_t rows, float *got)
{
    uint32_t ld = (c->hidden + 3) / 4 * 4, chunk_count = (c->vocab + rows - 1) / rows;
    uint64_t type_off = (uint64_t)max_pos(c) * ld, gamma_off = type_off + 2 * (uint64_t)ld;
    size_t tokens = token_count(c), n_ids = id_blocks(c) * tokens + 1;
    vkb_buffer *chunks = malloc(2 * chunk_count * sizeof *chunks);
    upload_chunks(ctx, word, c, ld, rows, chunks);
    vkb_buffer bt = test_buffer(ctx, tables, gamma_off + 2 * ld);
    vkb_buffer bo = test_buffer(ctx, got, tokens * ld), bi;
    TEST_OK(vkb_buffer_create(ctx, n_ids * 4, &bi));
    TEST_OK(vkb_buffer_upload(ctx, &bi, 0, ids, n_ids * 4));
    VkDescriptorPool pool;
    TEST_OK(vkb_descriptor_pool(ctx, chunk_count, &pool));
    vkb_dispatch *dispatches = calloc(chunk_count, sizeof *dispatches);
    for (uint32_t k = 0; k < chunk_count; k++) {
        uint32_t first = k * rows, n = c->vocab - first < rows ? c->vocab - first : rows;
        vkb_embedding_desc d = {.tokens = (uint32_t)tokens,
                                .seq_len = c->ragged ? 0 : c->seq, /* unused when ragged */
                                .hidden = c->hidden,
                                .ld = ld,
                                .type_off = type_off,
                                .gamma_off = gamma_off,
                                .beta_off = gamma_off + ld,
                                .first_row = first,
                                .rows = n,
                                .vocab = c->vocab,
                                .types = 2,
                                .word = c->half ? VKB_FORMAT_F16_PAIRS : VKB_FORMAT_F32,
                                .eps = 1e-12f,
                                .ragged = c->ragged != 0,
                                .positions = max_pos(c)};
        TEST_OK(vkb_op_embedding(ctx, pool, &d, vkb_whole(&chunks[2 * k]), vkb_whole(&bt),
                                 vkb_whole(&bi), vkb_whole(&bo), &dispatches[chunk_count - 1 - k]));
    }
    test_run(ctx, dispatches, chunk_count);
    test_buffer_read(ctx, &bo, got, tokens * ld);
    int32_t flag;
    TEST_OK(vkb_buffer_download(ctx, &bi, (n_ids - 1) * 4, &flag, 4));
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    for (uint32_t k = 0; k < 2 * chunk_count; k++)
        vkb_buffer_destroy(ctx, &chunks[k]);
    vkb_buffer_destroy(ctx, &bt), vkb_buffer_destroy(ctx, &bo), vkb_buffer_destroy(ctx, &bi);
    free(chunks), free(dispatches);
    return flag;
}

/* The word rows of one chunk: as many as the device's range holds. */
static uint32_t chunk_rows(const vkbert_context *ctx, const embedding_case *c)
{
    uint32_t ld = (c->hidden + 3) / 4 * 4;
    return ctx->props.limits.maxStorageBufferRange / (ld * (c->half ? 2 : 4));
}

/* Random tables of the case's shape: word [vocab][ld]; position, type, gamma, beta. */
static void fill_tables(const embedding_case *c, ref_rng *rng, float **word, float **tables)
{
    size_t ld = (c->hidden + 3) / 4 * 4, n_word = c->vocab * ld, n_tables = (max_pos(c) + 4) * ld;
    *word = malloc(n_word * 4), *tables = malloc(n_tables * 4);
    ref_fill(rng, *word, n_word, -1, 1);
    ref_fill(rng, *tables, n_tables, -1, 1);
}

static void check_ids(vkbert_context *ctx, embedding_case c, uint32_t min_chunks, uint64_t seed,
                      bool spoiled)
{
    uint32_t ld = (c.hidden + 3) / 4 * 4, rows = chunk_rows(ctx, &c);
    uint32_t chunk_count = (c.vocab + rows - 1) / rows;
    cr_assert(chunk_count >= min_chunks, "%u chunks of %u rows", chunk_count, rows);
    size_t tokens = token_count(&c), n_out = tokens * ld;
    ref_rng rng = {seed};
    float *word, *tables, *got = test_poisoned(n_out);
    fill_tables(&c, &rng, &word, &tables);
    int32_t *ids = calloc(id_blocks(&c) * tokens + 1, 4); /* then the flag, 0 */
    fill_ids(ids, tokens, &c, rows, &rng);
    if (spoiled) spoil_ids(ids, tokens, &c);
    int32_t flag = run(ctx, &c, word, tables, ids, rows, got);
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
    char what[128];
    snprintf(what, sizeof what, "embedding H %u vocab %u in %u %s chunks%s%s", c.hidden, c.vocab,
             chunk_count, c.half ? "fp16" : "fp32", c.ragged ? ", ragged" : "",
             spoiled ? ", bad ids" : "");
    test_assert_fp32_close(packed, want, tokens * c.hidden, what);
    free(word), free(tables), free(got), free(ids), free(want), free(packed);
}

static void check(vkbert_context *ctx, embedding_case c, uint32_t min_chunks, uint64_t seed)
{
    check_ids(ctx, c, min_chunks, seed, false);
}

Test(embedding, shapes)
{
    vkbert_context *ctx = test_context(0);
    for (int half = 0; half < 2; half++) {
        check(ctx, (embedding_case){1, 1, 16, 5, half, 0}, 1, 1);
        check(ctx, (embedding_case){2, 7, 20, 30, half, 0}, 1, 2);
        check(ctx, (embedding_case){3, 33, 37, 100, half, 0}, 1, 3);
        check(ctx, (embedding_case){2, 128, 768, 50, half, 0}, 1, 4);
    }
    test_context_done(ctx);
}

Test(embedding, ids_outside_the_tables)
{
    vkbert_context *ctx = test_context(0);
    check_ids(ctx, (embedding_case){3, 7, 20, 30, false, 0}, 1, 8, true);
    check_ids(ctx, (embedding_case){2, 9, 37, 100, true, 0}, 1, 9, true);
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
        check(ctx, (embedding_case){3, 11, 37, 2000, half, 0}, 3, 5);
        check(ctx, (embedding_case){2, 9, 768, 100, half, 0}, 3, 6);
    }
    check_ids(ctx, (embedding_case){3, 11, 37, 2000, false, 0}, 3, 10, true);
    check_ids(ctx, (embedding_case){0, 11, 37, 2000, false, 41}, 3, 12, true);
    ctx->subgroup_arithmetic = false; /* the shared-memory reductions */
    check(ctx, (embedding_case){3, 11, 37, 2000, true, 0}, 3, 7);
    check_ids(ctx, (embedding_case){3, 11, 37, 2000, true, 0}, 3, 11, true);
    check_ids(ctx, (embedding_case){0, 11, 37, 2000, true, 41}, 3, 13, true);
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
    vkb_embedding_desc d = {4,      2,     8, 8, 0, 16, 32, 40, 0, 129, 129, 2, VKB_FORMAT_F32,
                            1e-12f, false, 0};
    cr_assert_eq(vkb_op_embedding(ctx, pool, &d, v, v, v, v, &dispatch),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "word"), "%s", vkbert_last_error(ctx));
    d.word = VKB_FORMAT_F16_PAIRS;
    TEST_OK(vkb_op_embedding(ctx, pool, &d, v, v, v, v, &dispatch));
    vkb_dispatch_release(ctx, &dispatch);
    /* A word table is plain floats: int8 blocks, or no format at all, are refused. */
    vkb_embedding_desc not_floats[2] = {d, d};
    not_floats[0].word = VKB_FORMAT_Q8_0, not_floats[1].word = VKB_FORMAT_COUNT;
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(vkb_op_embedding(ctx, pool, &not_floats[k], v, v, v, v, &dispatch),
                     VKBERT_ERROR_INVALID_ARGUMENT, "case %d", k);
        cr_assert(strstr(vkbert_last_error(ctx), "fp32 or fp16"), "%s", vkbert_last_error(ctx));
    }
    /* Ragged: the positions' rows must be given, and the ids hold 3 blocks before the flag. */
    d.ragged = true;
    cr_assert_eq(vkb_op_embedding(ctx, pool, &d, v, v, v, v, &dispatch),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "positions"), "%s", vkbert_last_error(ctx));
    d.positions = 2;
    vkb_view ids = {buffer.buffer, 0, 3 * 4 * 4, 0}; /* 2 x 4 ids and a flag fit, 3 x 4 do not */
    cr_assert_eq(vkb_op_embedding(ctx, pool, &d, v, v, ids, v, &dispatch),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "ids"), "%s", vkbert_last_error(ctx));
    ids.size += 4;
    TEST_OK(vkb_op_embedding(ctx, pool, &d, v, v, ids, v, &dispatch));
    vkb_dispatch_release(ctx, &dispatch);
    vkb_buffer_destroy(ctx, &buffer);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    test_context_done(ctx);
}

/* ---- ragged batches (docs/ragged.md): positions read from the ids ---- */

Test(embedding, ragged_positions)
{
    vkbert_context *ctx = test_context(0);
    for (int half = 0; half < 2; half++) {
        check(ctx, (embedding_case){0, 5, 16, 5, half, 1}, 1, 21);
        check(ctx, (embedding_case){0, 30, 37, 100, half, 77}, 1, 22);
        check(ctx, (embedding_case){0, 509, 64, 50, half, 300}, 1, 23); /* BERT's 512 */
    }
    check(ctx, (embedding_case){0, 125, 768, 50, false, 33}, 1, 24);
    test_context_done(ctx);
}

Test(embedding, ragged_positions_outside_the_table)
{
    vkbert_context *ctx = test_context(0);
    check_ids(ctx, (embedding_case){0, 7, 20, 30, false, 23}, 1, 25, true);
    check_ids(ctx, (embedding_case){0, 9, 37, 100, true, 50}, 1, 26, true);
    test_context_done(ctx);
}

/* The padded kernel on a right-padded batch and the ragged one on the same tokens packed must
 * agree bit for bit: the same rows are summed in the same order. */
static void check_ragged_equals_padded(vkbert_context *ctx, embedding_case padded, uint64_t seed)
{
    uint32_t b_n = padded.batch, s_n = padded.seq, ld = (padded.hidden + 3) / 4 * 4;
    ref_rng rng = {seed};
    uint32_t *lengths = malloc(b_n * sizeof *lengths), tokens = 0;
    for (uint32_t b = 0; b < b_n; b++)
        tokens += lengths[b] = b == 0 ? s_n : (uint32_t)ref_uniform(&rng, 0, s_n + 1);
    embedding_case ragged = padded;
    ragged.ragged = tokens;
    float *word, *tables;
    fill_tables(&padded, &rng, &word, &tables);
    size_t n_pad = (size_t)b_n * s_n;
    int32_t *ids_pad = calloc(2 * n_pad + 1, 4), *ids_rag = calloc(3 * (size_t)tokens + 1, 4);
    for (uint32_t b = 0, m = 0; b < b_n; b++) /* padding: id 0, type 0 */
        for (uint32_t s = 0; s < lengths[b]; s++, m++) {
            ids_rag[m] = ids_pad[b * s_n + s] = (int32_t)ref_uniform(&rng, 0, padded.vocab);
            ids_rag[tokens + m] = ids_pad[n_pad + b * s_n + s] = (int32_t)ref_uniform(&rng, 0, 2);
            ids_rag[2 * tokens + m] = (int32_t)s;
        }
    float *got_pad = test_poisoned(n_pad * ld), *got_rag = test_poisoned((size_t)tokens * ld);
    uint32_t rows = chunk_rows(ctx, &padded);
    cr_assert_eq(run(ctx, &padded, word, tables, ids_pad, rows, got_pad), 0);
    cr_assert_eq(run(ctx, &ragged, word, tables, ids_rag, rows, got_rag), 0);
    for (uint32_t b = 0, m = 0; b < b_n; b++)
        for (uint32_t s = 0; s < lengths[b]; s++, m++)
            cr_assert(
                !memcmp(got_rag + (size_t)m * ld, got_pad + ((size_t)b * s_n + s) * ld, ld * 4),
                "H %u %s: sequence %u token %u differs", padded.hidden,
                padded.half ? "fp16" : "fp32", b, s);
    free(lengths), free(word), free(tables), free(ids_pad), free(ids_rag), free(got_pad);
    free(got_rag);
}

Test(embedding, ragged_equals_padded)
{
    vkbert_context *ctx = test_context(0);
    check_ragged_equals_padded(ctx, (embedding_case){5, 37, 37, 100, false, 0}, 31);
    check_ragged_equals_padded(ctx, (embedding_case){4, 64, 384, 60, true, 0}, 32);
    ctx->subgroup_arithmetic = false; /* the shared-memory reductions */
    check_ragged_equals_padded(ctx, (embedding_case){6, 19, 20, 30, false, 0}, 33);
    test_context_done(ctx);
}
