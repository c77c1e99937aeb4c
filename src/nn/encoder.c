/* The BERT encoder: weights uploaded once in the layouts the kernels read, forward passes
 * through a plan recorded for the last shape. */
#include "nn/encoder.h"
#include "tune.h"

#include "io/half.h"
#include "io/io_error.h"
#include "nn/weights_q8.h"

#include <stdlib.h>
#include <string.h>

/* Loading runs under the context's lock, as every internal call does, but lets it go around the
 * work on host memory (reading and converting the file's rows, packing, and copying into a
 * mapped buffer that this load made and no other call sees yet), so that a load does not hold
 * up other calls on the context (issue 13). vkb_encoder_new's caller holds the lock. */

static uint64_t align256(uint64_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

/* Square tiles of the transpose: 32 rows of W, 128 bytes each, stay in L1 while they are read
 * column by column; walking whole columns missed the cache on every read, most of the load. */
#define TRANSPOSE_TILE 32u

/* `count` vectors of `n` floats, each padded with zeros to `pitch`. */
static void pack_rows(const float *src, uint32_t count, uint32_t n, uint32_t pitch, float *dst)
{
    for (uint32_t r = 0; r < count; r++) {
        memcpy(dst + (size_t)r * pitch, src + (size_t)r * n, (size_t)n * sizeof *dst);
        memset(dst + (size_t)r * pitch + n, 0, (size_t)(pitch - n) * sizeof *dst);
    }
}

static vkbert_status unreadable(vkbert_encoder *e, const char *name)
{
    return vkb_fail(e->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "the weights lack %s", name);
}

/* Rows [first, first + n) of tensor t (`cols` wide), padded with zeros to `pitch`, into dst.
 * Rows of a file's F16 or BF16 tensor are converted here, a piece at a time (the loader keeps
 * no float32 copy of them): straight into dst when no padding is needed, else through conv
 * (n x cols floats). */
static bool pack_source_rows(const bert_weights *w, float *const *t, uint32_t first, uint32_t n,
                             uint32_t cols, uint32_t pitch, float *conv, float *dst)
{
    const float *rows;
    if (!bert_weights_rows(w, t, first, n, pitch == cols ? dst : conv, &rows)) return false;
    if (rows != dst) pack_rows(rows, n, cols, pitch, dst);
    return true;
}

/* W [out][in] (PyTorch) -> W^T [in][pitch], zero columns past `out`: the matmul's B [K,N]. W is
 * read TRANSPOSE_TILE rows at a time through bert_weights_rows (converted into `rows_scratch`,
 * TRANSPOSE_TILE x in floats, when the file's dtype is not F32). */
static bool pack_transposed(const bert_weights *w, float *const *t, uint32_t out, uint32_t in,
                            uint32_t pitch, float *rows_scratch, float *dst)
{
    for (uint32_t o0 = 0; o0 < pitch; o0 += TRANSPOSE_TILE) {
        uint32_t o1 = pitch - o0 < TRANSPOSE_TILE ? pitch : o0 + TRANSPOSE_TILE;
        uint32_t n = o0 >= out ? 0 : (o1 < out ? o1 : out) - o0;
        const float *rows = NULL;
        if (n && !bert_weights_rows(w, t, o0, n, rows_scratch, &rows)) return false;
        for (uint32_t i0 = 0; i0 < in; i0 += TRANSPOSE_TILE) {
            uint32_t i1 = in - i0 < TRANSPOSE_TILE ? in : i0 + TRANSPOSE_TILE;
            for (uint32_t i = i0; i < i1; i++)
                for (uint32_t o = o0; o < o1; o++)
                    dst[(size_t)i * pitch + o] = o < out ? rows[(size_t)(o - o0) * in + i] : 0.0f;
        }
    }
    return true;
}

/* A dense weight of tensor t packed by pack_transposed without the lock. */
static vkbert_status pack_dense(vkbert_encoder *e, const bert_weights *w, float *const *t,
                                uint32_t out, uint32_t in, uint32_t pitch, float *rows_scratch,
                                float *dst)
{
    vkb_unlock(e->ctx);
    bool ok = pack_transposed(w, t, out, in, pitch, rows_scratch, dst);
    bert_weights_release(w, *t, (size_t)out * in);
    vkb_lock(e->ctx);
    return ok ? VKBERT_OK : unreadable(e, "a dense weight");
}

/* `bytes` at `at` of dst. Into a mapped buffer it is a memcpy (vkb_buffer_upload touches
 * nothing else of the context then), done without the lock; a staged copy submits under it. */
static vkbert_status upload_bytes(vkbert_encoder *e, vkb_buffer *dst, uint64_t at, const void *src,
                                  uint64_t bytes)
{
    if (!dst->mapped) return vkb_buffer_upload(e->ctx, dst, at, src, bytes);
    vkb_unlock(e->ctx);
    vkbert_status status = vkb_buffer_upload(e->ctx, dst, at, src, bytes);
    vkb_lock(e->ctx);
    return status;
}

/* Uploads `count` packed weights at `at` of `dst`, as fp16 when `half` (converted in place:
 * half i lands on bytes already read) or fp32. */
static vkbert_status upload_weights(vkbert_encoder *e, vkb_buffer *dst, uint64_t at, float *packed,
                                    size_t count, bool half)
{
    if (!half) return upload_bytes(e, dst, at, packed, count * 4);
    uint16_t *halves = (uint16_t *)packed;
    vkb_unlock(e->ctx);
    for (size_t i = 0; i < count; i++)
        halves[i] = float_to_half(packed[i]);
    vkb_lock(e->ctx);
    return upload_bytes(e, dst, at, halves, count * 2);
}

uint64_t encoder_weight_bytes(const vkbert_encoder *e, uint32_t k, uint32_t ldb)
{
    return e->q8 ? vkb_q8_bytes(k, ldb) : (uint64_t)k * ldb * (e->half ? 2 : 4);
}

/* A dense weight's rows for vkb_q8_upload, through bert_weights_rows (converted into the
 * column itself when the file's dtype is not F32). */
typedef struct source_rows {
    const bert_weights *w;
    float *const *t;
    uint32_t in;
} source_rows;

static bool source_row(const void *source, uint32_t n, float *column)
{
    const source_rows *s = source;
    const float *row;
    if (!bert_weights_rows(s->w, s->t, n, 1, column, &row)) return false;
    if (row != column) memcpy(column, row, (size_t)s->in * sizeof *column);
    return true;
}

/* Dense weight t, W [out][in], as B [in][ldb] at `at` of e->dense: Q8_0 blocks, quantized under
 * the lock (its pieces' copies interleave with the quantizing), or packed transposed without it
 * and uploaded as fp16 or fp32. */
static vkbert_status upload_matrix(vkbert_encoder *e, const bert_weights *w, float *const *t,
                                   uint32_t out, uint32_t in, uint32_t ldb, uint64_t at,
                                   float *scratch, float *rows, const char *name)
{
    if (e->q8) {
        source_rows source = {w, t, in};
        q8_matrix m = {in, out, ldb, source_row, &source, name, e->q8_dot};
        vkbert_status status = vkb_q8_upload(e->ctx, &e->dense, at, &m);
        bert_weights_release(w, *t, (size_t)out * in);
        return status;
    }
    vkbert_status status = pack_dense(e, w, t, out, in, ldb, rows, scratch);
    return status ? status : upload_weights(e, &e->dense, at, scratch, (size_t)in * ldb, e->half);
}

/* Host memory for packing the word table, whatever its size. */
#define WORD_PIECE_BYTES ((uint64_t)16 << 20)

/* Chunks of as many word rows as one storage binding and one allocation hold. */
static vkbert_status plan_word_chunks(vkbert_encoder *e)
{
    uint64_t row = (uint64_t)e->hp * (e->word_half ? 2 : 4), vocab = (uint64_t)e->config.vocab_size;
    uint64_t limit = e->ctx->props.limits.maxStorageBufferRange;
    if (e->ctx->max_allocation < limit) limit = e->ctx->max_allocation;
    if (limit < row)
        return vkb_fail(e->ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "a word embedding row of %llu bytes exceeds one storage binding "
                        "(maxStorageBufferRange %u) or allocation (%llu)",
                        (unsigned long long)row, e->ctx->props.limits.maxStorageBufferRange,
                        (unsigned long long)e->ctx->max_allocation);
    e->word_rows = (uint32_t)(limit / row < vocab ? limit / row : vocab);
    e->word_chunks = (uint32_t)((vocab + e->word_rows - 1) / e->word_rows);
    e->word = calloc(e->word_chunks, sizeof *e->word);
    return e->word ? VKBERT_OK : vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
}

/* Word rows [first, first + n) at `at` of dst. F32 rows without padding, going as fp32, are
 * uploaded from the file as they lie (a NULL scratch takes them only in place); others are
 * converted and packed in scratch (n x hp floats), through conv when padded. */
static vkbert_status upload_word_piece(vkbert_encoder *e, const bert_weights *w, vkb_buffer *dst,
                                       uint64_t at, uint32_t first, uint32_t n, float *scratch,
                                       float *conv)
{
    uint32_t h = (uint32_t)e->config.hidden_size, hp = e->hp;
    const float *rows;
    if (h == hp && !e->word_half && bert_weights_rows(w, &w->word, first, n, NULL, &rows)) {
        vkbert_status status = upload_bytes(e, dst, at, rows, (uint64_t)n * h * 4);
        bert_weights_release(w, rows, (size_t)n * h);
        return status;
    }
    vkb_unlock(e->ctx);
    bool ok = pack_source_rows(w, &w->word, first, n, h, hp, conv, scratch);
    vkb_lock(e->ctx);
    if (!ok) return unreadable(e, "the word embeddings");
    return upload_weights(e, dst, at, scratch, (size_t)n * hp, e->word_half);
}

/* Each chunk packed (and converted to fp16) a piece at a time, so that host memory stays
 * bounded for a table of any size. */
static vkbert_status upload_word(vkbert_encoder *e, const bert_weights *w)
{
    uint32_t h = (uint32_t)e->config.hidden_size, hp = e->hp;
    uint64_t row = (uint64_t)hp * (e->word_half ? 2 : 4);
    vkbert_status status = plan_word_chunks(e);
    if (status) return status;
    uint32_t piece = (uint32_t)(WORD_PIECE_BYTES / 4 / hp);
    piece = piece < e->word_rows ? (piece ? piece : 1) : e->word_rows;
    /* Packed rows, then, when padding is needed, the rows converted from the file. */
    float *scratch = malloc((size_t)piece * (hp + (h == hp ? 0 : h)) * sizeof *scratch);
    if (!scratch) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    uint32_t vocab = (uint32_t)e->config.vocab_size;
    for (uint32_t k = 0; k < e->word_chunks && !status; k++) {
        uint32_t first = k * e->word_rows, rows = vocab - first;
        rows = rows < e->word_rows ? rows : e->word_rows;
        status = vkb_buffer_create(e->ctx, rows * row, &e->word[k]);
        for (uint32_t r = 0; r < rows && !status; r += piece) {
            uint32_t n = rows - r < piece ? rows - r : piece;
            status = upload_word_piece(e, w, &e->word[k], r * row, first + r, n, scratch,
                                       scratch + (size_t)piece * hp);
        }
    }
    free(scratch);
    bert_weights_release_all(w); /* a converted table's pages */
    return status;
}

/* The word table in chunks; position, token type, gamma and beta in one small buffer. */
static vkbert_status upload_tables(vkbert_encoder *e, const bert_weights *w)
{
    const bert_config *c = &e->config;
    uint32_t h = (uint32_t)c->hidden_size, hp = e->hp;
    e->type_off = (uint64_t)c->max_position_embeddings * hp;
    e->gamma_off = e->type_off + (uint64_t)c->type_vocab_size * hp;
    e->beta_off = e->gamma_off + hp;
    uint64_t count = e->beta_off + hp;
    vkbert_status status = vkb_check_range(e->ctx, count * 4, "the position and type tables");
    uint32_t positions = (uint32_t)c->max_position_embeddings, types = (uint32_t)c->type_vocab_size;
    /* The packed tables, then room to convert the larger of the two when padding is needed. */
    uint64_t conv = h == hp ? 0 : (uint64_t)(positions > types ? positions : types) * h;
    float *packed = status ? NULL : malloc((count + conv) * sizeof *packed);
    if (!status && !packed)
        status = vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (status) return status;
    if (!pack_source_rows(w, &w->position, 0, positions, h, hp, packed + count, packed) ||
        !pack_source_rows(w, &w->token_type, 0, types, h, hp, packed + count,
                          packed + e->type_off) ||
        !pack_source_rows(w, &w->ln_gamma, 0, 1, h, hp, packed + count, packed + e->gamma_off) ||
        !pack_source_rows(w, &w->ln_beta, 0, 1, h, hp, packed + count, packed + e->beta_off))
        status = unreadable(e, "an embedding table");
    if (!status) status = vkb_buffer_create(e->ctx, count * 4, &e->tables);
    if (!status) status = vkb_buffer_upload(e->ctx, &e->tables, 0, packed, count * 4);
    free(packed);
    /* The vectors are a few pages, released with their neighbours. */
    bert_weights_release(w, w->position, (size_t)c->max_position_embeddings * h);
    return status ? status : upload_word(e, w);
}

/* One layer's attention. Its four H x H matrices are read whole (the attention packs whole
 * matrices), converted into `scratch` (4 x H x H floats) when the file's dtype is not F32: one
 * layer's worth of host memory, not the model's. */
static vkbert_status new_attention(vkbert_encoder *e, const bert_weights *w, int l, float *scratch)
{
    const bert_layer_weights *lw = &w->layers[l];
    uint64_t h = (uint64_t)e->config.hidden_size;
    float *const *fields[4] = {&lw->q_w, &lw->k_w, &lw->v_w, &lw->attn_out_w};
    const float *m[4];
    bool ok = true;
    vkb_unlock(e->ctx);
    for (int z = 0; z < 4; z++)
        ok = ok && bert_weights_rows(w, fields[z], 0, h, scratch + z * h * h, &m[z]);
    vkb_lock(e->ctx);
    if (!ok) return unreadable(e, "an attention weight");
    vkbert_attention_weights aw = {sizeof aw, m[0],    lw->q_b, m[1],          lw->k_b,
                                   m[2],      lw->v_b, m[3],    lw->attn_out_b};
    /* fp16 encoders keep fp32 attention layers, as before int8 came. */
    vkbert_attention_config int8 = {sizeof int8, VKBERT_PRECISION_INT8};
    vkbert_status status =
        vkb_attention_new(e->ctx, e->config.hidden_size, e->config.num_attention_heads, &aw,
                          e->q8 ? &int8 : NULL, &e->attention[l]);
    for (int z = 0; z < 4; z++)
        bert_weights_release(w, m[z], h * h);
    bert_weights_release_all(w);
    return status;
}

static vkbert_status create_attention(vkbert_encoder *e, const bert_weights *w)
{
    uint64_t h = (uint64_t)e->config.hidden_size;
    e->attention = calloc((size_t)e->config.num_hidden_layers, sizeof *e->attention);
    /* Pages of an F32 model's scratch are never touched, so never resident. */
    float *scratch = e->attention ? malloc(4 * h * h * sizeof *scratch) : NULL;
    vkbert_status status = VKBERT_OK;
    if (!scratch) status = vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int l = 0; l < e->config.num_hidden_layers && !status; l++)
        status = new_attention(e, w, l, scratch);
    free(scratch);
    return status;
}

/* The layer's dense weights at its block of e->dense, its vectors at its block of e->params. */
static vkbert_status upload_layer(vkbert_encoder *e, const bert_weights *w, int l, float *scratch,
                                  float *rows)
{
    const bert_layer_weights *lw = &w->layers[l];
    uint32_t h = (uint32_t)e->config.hidden_size, i = (uint32_t)e->config.intermediate_size;
    uint64_t at = (uint64_t)l * (e->inter_block + e->out_block);
    vkbert_status status = upload_matrix(e, w, &lw->inter_w, i, h, e->ip, at, scratch, rows,
                                         "intermediate.dense.weight");
    if (!status)
        status = upload_matrix(e, w, &lw->out_w, h, i, e->hp, at + e->inter_block, scratch, rows,
                               "output.dense.weight");
    /* Each vector at its own 256-byte-aligned offset, so that it can be bound alone. */
    uint64_t base = (uint64_t)l * e->layer_params;
    const float *vectors[4][2] = {{lw->inter_b, NULL},
                                  {lw->out_b, NULL},
                                  {lw->attn_ln_gamma, lw->attn_ln_beta},
                                  {lw->out_ln_gamma, lw->out_ln_beta}};
    for (int v = 0; v < 4 && !status; v++) {
        uint32_t n = v == 0 ? i : h, pitch = v == 0 ? e->ip : e->hp, rows = v < 2 ? 1 : 2;
        for (uint32_t r = 0; r < rows; r++)
            pack_rows(vectors[v][r], 1, n, pitch, scratch + r * pitch);
        status = vkb_buffer_upload(e->ctx, &e->params, base + e->param_off[v], scratch,
                                   (uint64_t)rows * pitch * 4);
    }
    return status;
}

static vkbert_status upload_dense(vkbert_encoder *e, const bert_weights *w)
{
    uint32_t h = (uint32_t)e->config.hidden_size, i = (uint32_t)e->config.intermediate_size;
    int layers = e->config.num_hidden_layers;
    e->inter_block = align256(encoder_weight_bytes(e, h, e->ip));
    e->out_block = align256(encoder_weight_bytes(e, i, e->hp));
    e->param_off[0] = 0;                                               /* b_inter */
    e->param_off[1] = align256((uint64_t)e->ip * 4);                   /* b_out */
    e->param_off[2] = e->param_off[1] + align256((uint64_t)e->hp * 4); /* LN1 gamma, beta */
    e->param_off[3] = e->param_off[2] + align256((uint64_t)e->hp * 8); /* LN2 gamma, beta */
    e->layer_params = e->param_off[3] + align256((uint64_t)e->hp * 8);
    uint64_t pool_block = align256(encoder_weight_bytes(e, h, e->hp));
    vkbert_status status = vkb_check_range(e->ctx, e->inter_block, "an intermediate dense weight");
    if (!status) status = vkb_check_range(e->ctx, e->out_block, "an output dense weight");
    if (!status)
        status = vkb_buffer_create(e->ctx, layers * (e->inter_block + e->out_block) + pool_block,
                                   &e->dense);
    if (!status)
        status = vkb_buffer_create(e->ctx, layers * e->layer_params + e->hp * 4, &e->params);
    /* Packed as fp32 first (int8 quantizes through a bounded scratch of its own, so there this
     * holds the vectors only); then TRANSPOSE_TILE rows of the widest weight, converted. */
    uint64_t widest = e->ip > e->hp ? e->ip : e->hp, packed = 2 * widest;
    uint64_t blocks[3] = {(uint64_t)h * e->ip, (uint64_t)i * e->hp, (uint64_t)h * e->hp};
    for (int b = 0; b < 3 && !e->q8; b++)
        packed = blocks[b] > packed ? blocks[b] : packed;
    size_t rows = TRANSPOSE_TILE * (size_t)(h > i ? h : i);
    float *scratch = status ? NULL : malloc((packed + rows) * sizeof *scratch);
    if (!status && !scratch)
        status = vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int l = 0; l < layers && !status; l++) {
        status = upload_layer(e, w, l, scratch, scratch + packed);
        bert_weights_release_all(w);
    }
    if (!status && e->has_pooler) {
        status =
            upload_matrix(e, w, &w->pooler_w, h, h, e->hp, layers * (e->inter_block + e->out_block),
                          scratch, scratch + packed, "pooler.dense.weight");
        pack_rows(w->pooler_b, 1, h, e->hp, scratch);
        if (!status)
            status =
                vkb_buffer_upload(e->ctx, &e->params, layers * e->layer_params, scratch, e->hp * 4);
    }
    free(scratch);
    return status;
}

vkbert_status vkb_encoder_new(vkbert_context *ctx, const bert_config *config,
                              const bert_weights *weights, vkbert_precision precision,
                              vkbert_encoder **out)
{
    *out = NULL;
    if (strcmp(config->hidden_act, "gelu"))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "hidden_act \"%s\" is not supported; only \"gelu\" (exact erf GELU) is",
                        config->hidden_act);
    vkbert_encoder *e = calloc(1, sizeof *e);
    if (!e) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    e->ctx = ctx;
    e->config = *config;
    e->hp = vkb_pitch((uint64_t)config->hidden_size);
    e->ip = vkb_pitch((uint64_t)config->intermediate_size);
    e->has_pooler = weights->has_pooler != 0;
    e->half = precision == VKBERT_PRECISION_FP16;
    e->q8 = precision == VKBERT_PRECISION_INT8;
    /* int8 keeps the word table as fp16 precision does: as fp32 it would be half of int8's
     * memory (BERT-base: 94 MB beside 96 MB of int8 weights), and fp16's error is far below
     * int8's. */
    e->word_half = e->half || e->q8;
    vkbert_status status = e->q8 ? vkb_tune_int8_dot(ctx, &e->q8_dot) : VKBERT_OK;
    if (!status) status = upload_tables(e, weights);
    if (!status) status = create_attention(e, weights);
    if (!status) status = upload_dense(e, weights);
    encoder_head_spec mean_pooling = {.pool_modes = VKB_POOL_MEAN};
    if (!status) status = vkb_encoder_set_head(e, &mean_pooling);
    if (status) {
        vkb_encoder_free(e);
        return status;
    }
    *out = e;
    return VKBERT_OK;
}

void vkb_encoder_free(vkbert_encoder *e)
{
    if (!e) return;
    vkb_settle(e->ctx);
    vkb_encoder_drop_plans(e);
    encoder_head_free(e);
    for (int l = 0; e->attention && l < e->config.num_hidden_layers; l++)
        vkb_attention_free(e->attention[l]);
    free(e->attention);
    for (uint32_t k = 0; e->word && k < e->word_chunks; k++)
        vkb_buffer_destroy(e->ctx, &e->word[k]);
    free(e->word);
    vkb_buffer_destroy(e->ctx, &e->tables);
    vkb_buffer_destroy(e->ctx, &e->dense);
    vkb_buffer_destroy(e->ctx, &e->params);
    free(e);
}

vkbert_status vkb_io_status(vkbert_status content)
{
    switch (io_last_kind()) {
    case IO_NO_MEMORY:
        return VKBERT_ERROR_OUT_OF_MEMORY;
    case IO_UNREADABLE:
        return VKBERT_ERROR_INVALID_ARGUMENT;
    default:
        return content;
    }
}
