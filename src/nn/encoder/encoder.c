/* The BERT encoder: weights uploaded once in the layouts the kernels read (the host work on
 * load workers, outside the context's lock), forward passes through plans recorded per shape
 * and kept in a small cache (encoder_cache.c). */
#include "nn/encoder/encoder.h"
#include "tune/tune.h"

#include "io/half.h"
#include "io/io_error.h"
#include "nn/encoder/load_pool.h"
#include "nn/encoder/weights_q8.h"

#include <stdlib.h>
#include <string.h>

/* A load (vkb_encoder_new, called without the context's lock) makes every buffer under the
 * lock first; then the host work (reading and converting the file's rows, packing, quantizing,
 * copying into mapped buffers that only this load has seen) runs without it, spread over
 * workers (load_pool.h) one task at a time: a layer, a piece of the word table, the small
 * tables, the pooler; then the head, under the lock again. Other calls on the context go on
 * meanwhile, so that loading a second model does not stall the first one's work. */

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

static vkbert_status unreadable(vkb_writer *out, const char *name)
{
    return vkb_write_fail(out, VKBERT_ERROR_INVALID_ARGUMENT, "the weights lack %s", name);
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

/* Uploads `count` packed weights at `at` of `dst` in `format`: F16_PAIRS (converted in place:
 * half i lands on bytes already read) or F32. */
static vkbert_status upload_weights(vkb_writer *out, vkb_buffer *dst, uint64_t at, float *packed,
                                    size_t count, vkb_format format)
{
    if (format != VKB_FORMAT_F16_PAIRS) return vkb_write(out, dst, at, packed, count * 4);
    uint16_t *halves = (uint16_t *)packed;
    for (size_t i = 0; i < count; i++)
        halves[i] = float_to_half(packed[i]);
    return vkb_write(out, dst, at, halves, count * 2);
}

uint64_t encoder_weight_bytes(const vkbert_encoder *e, uint32_t k, uint32_t ldb)
{
    return vkb_format_is_q8(e->weight_format)
               ? vkb_q8_bytes(k, ldb)
               : (uint64_t)k * ldb * vkb_format_float_bytes(e->weight_format);
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

/* Dense weight t, W [out][in], as B [in][ldb] at `at` of e->dense: Q8_0 blocks (quantized a
 * piece at a time through a scratch of their own), or packed transposed into `packed` and
 * written as fp16 or fp32. */
static vkbert_status upload_matrix(vkbert_encoder *e, const bert_weights *w, vkb_writer *out,
                                   float *const *t, const uint32_t shape[3], uint64_t at,
                                   float *packed, const char *name)
{
    uint32_t rows = shape[0], in = shape[1], ldb = shape[2];
    /* A CPU device's mapped memory is the process's own: fp32 is packed straight into it, one
     * pass over the weight and no copy. Elsewhere (memory that may be write-combined, or not
     * mapped) it goes through `packed`. */
    float *direct = e->weight_format == VKB_FORMAT_F32 && e->dense.mapped &&
                            e->ctx->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                        ? (float *)(e->dense.mapped + at)
                        : NULL;
    vkbert_status status = VKBERT_OK;
    if (vkb_format_is_q8(e->weight_format)) {
        source_rows source = {w, t, in};
        bool dot = e->weight_format == VKB_FORMAT_Q8_0_DOT;
        q8_matrix m = {in, rows, ldb, source_row, &source, name, dot};
        status = vkb_q8_upload(out, &e->dense, at, &m);
    } else if (!pack_transposed(w, t, rows, in, ldb, packed + (size_t)in * ldb,
                                direct ? direct : packed)) {
        status = unreadable(out, name);
    } else if (!direct) {
        status = upload_weights(out, &e->dense, at, packed, (size_t)in * ldb, e->weight_format);
    }
    bert_weights_release(w, *t, (size_t)rows * in);
    return status;
}

/* Host memory for packing a piece of the word table, whatever its size. */
#define WORD_PIECE_BYTES ((uint64_t)8 << 20)

/* Chunks of as many word rows as one storage binding and one allocation hold. */
static vkbert_status create_word(vkbert_encoder *e)
{
    uint64_t row = (uint64_t)e->hp * vkb_format_float_bytes(e->word_format),
             vocab = (uint64_t)e->config.vocab_size;
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
    if (!e->word) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    vkbert_status status = VKBERT_OK;
    for (uint32_t k = 0; k < e->word_chunks && !status; k++) {
        uint64_t rows = vocab - (uint64_t)k * e->word_rows;
        status = vkb_buffer_create(e->ctx, (rows < e->word_rows ? rows : e->word_rows) * row,
                                   &e->word[k]);
    }
    return status;
}

/* Rows of one piece of the word table: a load task packs (converts) one piece. */
static uint32_t word_piece_rows(const vkbert_encoder *e)
{
    uint32_t piece = (uint32_t)(WORD_PIECE_BYTES / 4 / e->hp);
    return piece < e->word_rows ? (piece ? piece : 1) : e->word_rows;
}

static uint32_t word_pieces(const vkbert_encoder *e)
{
    uint32_t piece = word_piece_rows(e);
    return e->word_chunks * ((e->word_rows + piece - 1) / piece);
}

/* Piece p of the word table. F32 rows without padding, going as fp32, are written from the
 * file as they lie (a NULL scratch takes them only in place); others are converted and packed
 * in scratch (piece x hp floats), through the room after it when padded. */
static vkbert_status upload_word_piece(vkbert_encoder *e, const bert_weights *w, vkb_writer *out,
                                       uint32_t p, float *scratch)
{
    uint32_t h = (uint32_t)e->config.hidden_size, hp = e->hp, piece = word_piece_rows(e);
    uint32_t per_chunk = (e->word_rows + piece - 1) / piece, k = p / per_chunk;
    uint32_t first = k * e->word_rows, r = (p % per_chunk) * piece;
    uint32_t rows = (uint32_t)e->config.vocab_size - first;
    rows = rows < e->word_rows ? rows : e->word_rows;
    if (r >= rows) return VKBERT_OK; /* past the end of a shorter last chunk */
    uint32_t n = rows - r < piece ? rows - r : piece;
    uint64_t at = (uint64_t)r * hp * vkb_format_float_bytes(e->word_format);
    const float *in_place;
    if (h == hp && e->word_format == VKB_FORMAT_F32 &&
        bert_weights_rows(w, &w->word, first + r, n, NULL, &in_place)) {
        vkbert_status status = vkb_write(out, &e->word[k], at, in_place, (uint64_t)n * h * 4);
        bert_weights_release(w, in_place, (size_t)n * h);
        return status;
    }
    if (!pack_source_rows(w, &w->word, first + r, n, h, hp, scratch + (size_t)piece * hp, scratch))
        return unreadable(out, "the word embeddings");
    return upload_weights(out, &e->word[k], at, scratch, (size_t)n * hp, e->word_format);
}

/* Position, token type, gamma and beta in one small buffer; then the word table. */
static vkbert_status create_tables(vkbert_encoder *e)
{
    const bert_config *c = &e->config;
    e->type_off = (uint64_t)c->max_position_embeddings * e->hp;
    e->gamma_off = e->type_off + (uint64_t)c->type_vocab_size * e->hp;
    e->beta_off = e->gamma_off + e->hp;
    uint64_t count = e->beta_off + e->hp;
    vkbert_status status = vkb_check_range(e->ctx, count * 4, "the position and type tables");
    if (!status) status = vkb_buffer_create(e->ctx, count * 4, &e->tables);
    return status ? status : create_word(e);
}

/* Floats of the small tables packed, then room to convert the larger of the two when
 * padding is needed. */
static uint64_t tables_floats(const vkbert_encoder *e)
{
    uint64_t positions = (uint64_t)e->config.max_position_embeddings;
    uint64_t types = (uint64_t)e->config.type_vocab_size, h = (uint64_t)e->config.hidden_size;
    return e->beta_off + e->hp + (h == e->hp ? 0 : (positions > types ? positions : types) * h);
}

static vkbert_status upload_tables(vkbert_encoder *e, const bert_weights *w, vkb_writer *out,
                                   float *packed)
{
    uint32_t h = (uint32_t)e->config.hidden_size, hp = e->hp, types = e->config.type_vocab_size;
    uint32_t positions = (uint32_t)e->config.max_position_embeddings;
    float *conv = packed + e->beta_off + hp;
    if (!pack_source_rows(w, &w->position, 0, positions, h, hp, conv, packed) ||
        !pack_source_rows(w, &w->token_type, 0, types, h, hp, conv, packed + e->type_off) ||
        !pack_source_rows(w, &w->ln_gamma, 0, 1, h, hp, conv, packed + e->gamma_off) ||
        !pack_source_rows(w, &w->ln_beta, 0, 1, h, hp, conv, packed + e->beta_off))
        return unreadable(out, "an embedding table");
    bert_weights_release(w, w->position, (size_t)positions * h);
    return vkb_write(out, &e->tables, 0, packed, (e->beta_off + hp) * 4);
}

/* One layer's attention. Its four H x H matrices are read whole (the attention packs whole
 * matrices), converted into `scratch` (4 x H x H floats) when the file's dtype is not F32: one
 * layer's worth of host memory per worker, not the model's. */
static vkbert_status upload_attention(vkbert_encoder *e, const bert_weights *w, vkb_writer *out,
                                      int l, float *scratch)
{
    const bert_layer_weights *lw = &w->layers[l];
    uint64_t h = (uint64_t)e->config.hidden_size;
    float *const *fields[4] = {&lw->q_w, &lw->k_w, &lw->v_w, &lw->attn_out_w};
    const float *m[4];
    for (int z = 0; z < 4; z++)
        if (!bert_weights_rows(w, fields[z], 0, h, scratch + z * h * h, &m[z]))
            return unreadable(out, "an attention weight");
    vkbert_attention_weights aw = {sizeof aw, m[0],    lw->q_b, m[1],          lw->k_b,
                                   m[2],      lw->v_b, m[3],    lw->attn_out_b};
    vkbert_status status = attention_upload_weights(e->attention[l], &aw, out);
    for (int z = 0; z < 4; z++)
        bert_weights_release(w, m[z], h * h);
    return status;
}

/* Layer l: its attention, its dense weights at its block of e->dense, its vectors (each at its
 * own 256-byte-aligned offset, so that it can be bound alone) at its block of e->params. */
static vkbert_status upload_layer(vkbert_encoder *e, const bert_weights *w, vkb_writer *out, int l,
                                  float *scratch)
{
    const bert_layer_weights *lw = &w->layers[l];
    uint32_t h = (uint32_t)e->config.hidden_size, i = (uint32_t)e->config.intermediate_size;
    uint64_t at = (uint64_t)l * (e->inter_block + e->out_block);
    const uint32_t inter[3] = {i, h, e->ip}, output[3] = {h, i, e->hp};
    vkbert_status status = upload_attention(e, w, out, l, scratch);
    if (!status)
        status =
            upload_matrix(e, w, out, &lw->inter_w, inter, at, scratch, "intermediate.dense.weight");
    if (!status)
        status = upload_matrix(e, w, out, &lw->out_w, output, at + e->inter_block, scratch,
                               "output.dense.weight");
    uint64_t base = (uint64_t)l * e->layer_params;
    const float *vectors[4][2] = {{lw->inter_b, NULL},
                                  {lw->out_b, NULL},
                                  {lw->attn_ln_gamma, lw->attn_ln_beta},
                                  {lw->out_ln_gamma, lw->out_ln_beta}};
    for (int v = 0; v < 4 && !status; v++) {
        uint32_t n = v == 0 ? i : h, pitch = v == 0 ? e->ip : e->hp, rows = v < 2 ? 1 : 2;
        for (uint32_t r = 0; r < rows; r++)
            pack_rows(vectors[v][r], 1, n, pitch, scratch + r * pitch);
        status =
            vkb_write(out, &e->params, base + e->param_off[v], scratch, (uint64_t)rows * pitch * 4);
    }
    return status;
}

static vkbert_status upload_pooler(vkbert_encoder *e, const bert_weights *w, vkb_writer *out,
                                   float *scratch)
{
    uint32_t h = (uint32_t)e->config.hidden_size;
    uint64_t layers = (uint64_t)e->config.num_hidden_layers;
    const uint32_t shape[3] = {h, h, e->hp};
    vkbert_status status =
        upload_matrix(e, w, out, &w->pooler_w, shape, layers * (e->inter_block + e->out_block),
                      scratch, "pooler.dense.weight");
    pack_rows(w->pooler_b, 1, h, e->hp, scratch);
    return status ? status
                  : vkb_write(out, &e->params, layers * e->layer_params, scratch, e->hp * 4);
}

/* The dense weights' and vectors' buffers, and each layer's attention (its buffers). */
static vkbert_status create_layers(vkbert_encoder *e)
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
    e->attention = status ? NULL : calloc((size_t)layers, sizeof *e->attention);
    if (!status && !e->attention)
        status = vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    /* fp16 encoders keep fp32 attention layers, as before int8 came. */
    vkbert_attention_config int8 = {sizeof int8, VKBERT_PRECISION_INT8};
    for (int l = 0; l < layers && !status; l++)
        status =
            attention_alloc(e->ctx, (int)h, e->config.num_attention_heads,
                            vkb_format_is_q8(e->weight_format) ? &int8 : NULL, &e->attention[l]);
    return status;
}

/* Each worker's scratch: the largest of a task's needs. Pages a task does not touch (an F32
 * model's conversion room) never become resident. */
static size_t load_scratch_floats(const vkbert_encoder *e)
{
    uint64_t h = (uint64_t)e->config.hidden_size, i = (uint64_t)e->config.intermediate_size;
    uint64_t widest = e->ip > e->hp ? e->ip : e->hp, packed = 2 * widest;
    uint64_t blocks[3] = {h * e->ip, i * e->hp, h * e->hp};
    for (int b = 0; b < 3 && !vkb_format_is_q8(e->weight_format); b++)
        packed = blocks[b] > packed ? blocks[b] : packed;
    uint64_t need[4] = {packed + TRANSPOSE_TILE * (h > i ? h : i), 4 * h * h,
                        (uint64_t)word_piece_rows(e) * (e->hp + (h == e->hp ? 0 : h)),
                        tables_floats(e)};
    uint64_t most = 0;
    for (int n = 0; n < 4; n++)
        most = need[n] > most ? need[n] : most;
    return (size_t)most;
}

typedef struct load_job {
    vkbert_encoder *e;
    const bert_weights *w;
} load_job;

/* Tasks: the layers, the word table's pieces, the small tables, the pooler. */
static vkbert_status run_task(void *job, uint32_t task, vkb_writer *out, float *scratch)
{
    vkbert_encoder *e = ((load_job *)job)->e;
    const bert_weights *w = ((load_job *)job)->w;
    uint32_t layers = (uint32_t)e->config.num_hidden_layers, pieces = word_pieces(e);
    vkbert_status status;
    if (task < layers)
        status = upload_layer(e, w, out, (int)task, scratch);
    else if (task < layers + pieces)
        status = upload_word_piece(e, w, out, task - layers, scratch);
    else if (task == layers + pieces)
        status = upload_tables(e, w, out, scratch);
    else
        status = upload_pooler(e, w, out, scratch);
    /* Also the pages a read of a neighbouring small vector brought back. */
    bert_weights_release_all(w);
    return status;
}

/* The one place the encoder's storages are chosen (vkbert_encoder). */
static vkbert_status choose_formats(vkbert_encoder *e, vkbert_precision precision)
{
    vkbert_status status = attention_weight_format(e->ctx, precision, &e->weight_format);
    bool q8 = vkb_format_is_q8(e->weight_format);
    /* The heads (Dense, classifier) stay dequantized at int8, never in the dot order. */
    e->head_format = q8 ? VKB_FORMAT_Q8_0 : VKB_FORMAT_F32;
    /* int8 keeps the word table as fp16 precision does: as fp32 it would be half of int8's
     * memory (BERT-base: 94 MB beside 96 MB of int8 weights), and fp16's error is far below
     * int8's. */
    e->word_format = e->weight_format == VKB_FORMAT_F32 ? VKB_FORMAT_F32 : VKB_FORMAT_F16_PAIRS;
    return status;
}

/* The encoder with every buffer made and nothing written: the load's device part, under the
 * lock. */
static vkbert_status encoder_create(vkbert_context *ctx, const bert_config *config, bool has_pooler,
                                    vkbert_precision precision, vkbert_encoder **out)
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
    e->has_pooler = has_pooler;
    vkbert_status status = choose_formats(e, precision);
    if (!status) status = create_tables(e);
    if (!status) status = create_layers(e);
    if (status) {
        vkb_encoder_free(e);
        return status;
    }
    *out = e;
    return VKBERT_OK;
}

vkbert_status vkb_encoder_new(vkbert_context *ctx, const bert_config *config,
                              const bert_weights *weights, vkbert_precision precision,
                              vkbert_encoder **out)
{
    *out = NULL;
    vkbert_encoder *e;
    vkb_lock(ctx);
    vkbert_status status = encoder_create(ctx, config, weights->has_pooler != 0, precision, &e);
    vkb_unlock(ctx);
    if (status) return status;
    load_job job = {e, weights};
    uint32_t tasks = (uint32_t)config->num_hidden_layers + word_pieces(e) + 1 + e->has_pooler;
    load_pool_spec spec = {ctx, tasks, load_scratch_floats(e), run_task, &job};
    vkb_writer failure;
    status = load_pool_run(&spec, &failure);
    vkb_lock(ctx);
    if (status) vkb_fail(ctx, status, "%s", failure.message);
    encoder_head_spec mean_pooling = {.pool_modes = VKB_POOL_MEAN};
    if (!status) status = vkb_encoder_set_head(e, &mean_pooling);
    if (status)
        vkb_encoder_free(e);
    else
        *out = e;
    vkb_unlock(ctx);
    return status;
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
