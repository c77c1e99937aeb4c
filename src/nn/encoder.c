/* The BERT encoder: weights uploaded once in the layouts the kernels read, forward passes
 * through a plan recorded for the last shape. */
#include "nn/encoder.h"

#include "io/half.h"
#include "io/io_error.h"
#include "nn/weights_q8.h"

#include <stdlib.h>
#include <string.h>

static uint64_t align256(uint64_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

/* Square tiles of the transpose: 32 rows of W, 128 bytes each, stay in L1 while they are read
 * column by column; walking whole columns missed the cache on every read, most of the load. */
#define TRANSPOSE_TILE 32u

/* W [out][in] (PyTorch) -> W^T [in][pitch], zero columns past `out`: the matmul's B [K,N]. */
static void pack_transposed(const float *w, uint32_t out, uint32_t in, uint32_t pitch, float *dst)
{
    for (uint32_t i0 = 0; i0 < in; i0 += TRANSPOSE_TILE) {
        uint32_t i1 = in - i0 < TRANSPOSE_TILE ? in : i0 + TRANSPOSE_TILE;
        for (uint32_t o0 = 0; o0 < pitch; o0 += TRANSPOSE_TILE) {
            uint32_t o1 = pitch - o0 < TRANSPOSE_TILE ? pitch : o0 + TRANSPOSE_TILE;
            for (uint32_t i = i0; i < i1; i++)
                for (uint32_t o = o0; o < o1; o++)
                    dst[(size_t)i * pitch + o] = o < out ? w[(size_t)o * in + i] : 0.0f;
        }
    }
}

/* Uploads `count` packed weights at `at` of `dst`, as fp16 (converted in place: half i
 * lands on bytes already read) or fp32. */
static vkbert_status upload_weights(vkbert_encoder *e, vkb_buffer *dst, uint64_t at, float *packed,
                                    size_t count)
{
    if (!e->half) return vkb_buffer_upload(e->ctx, dst, at, packed, count * 4);
    uint16_t *halves = (uint16_t *)packed;
    for (size_t i = 0; i < count; i++)
        halves[i] = float_to_half(packed[i]);
    return vkb_buffer_upload(e->ctx, dst, at, halves, count * 2);
}

uint64_t encoder_weight_bytes(const vkbert_encoder *e, uint32_t k, uint32_t ldb)
{
    return e->q8 ? vkb_q8_bytes(k, ldb) : (uint64_t)k * ldb * (e->half ? 2 : 4);
}

/* W [out][in] (PyTorch) as B [in][ldb] at `at` of e->dense: Q8_0 blocks, else transposed
 * through `scratch` (in * ldb floats) as fp16 or fp32. */
static vkbert_status upload_matrix(vkbert_encoder *e, uint64_t at, const float *w, uint32_t out,
                                   uint32_t in, uint32_t ldb, float *scratch, const char *name)
{
    if (e->q8) return vkb_q8_upload_linear(e->ctx, &e->dense, at, w, out, in, ldb, name);
    pack_transposed(w, out, in, ldb, scratch);
    return upload_weights(e, &e->dense, at, scratch, (size_t)in * ldb);
}

/* `count` vectors of `n` floats, each padded with zeros to `pitch`. */
static void pack_rows(const float *src, uint32_t count, uint32_t n, uint32_t pitch, float *dst)
{
    for (uint32_t r = 0; r < count; r++) {
        memcpy(dst + (size_t)r * pitch, src + (size_t)r * n, (size_t)n * sizeof *dst);
        memset(dst + (size_t)r * pitch + n, 0, (size_t)(pitch - n) * sizeof *dst);
    }
}

/* Host memory for packing the word table, whatever its size. */
#define WORD_PIECE_BYTES ((uint64_t)16 << 20)

/* Chunks of as many word rows as one storage binding and one allocation hold. */
static vkbert_status plan_word_chunks(vkbert_encoder *e)
{
    uint64_t row = (uint64_t)e->hp * (e->half ? 2 : 4), vocab = (uint64_t)e->config.vocab_size;
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

/* Each chunk packed (and converted to fp16) a piece at a time, so that host memory stays
 * bounded for a table of any size. */
static vkbert_status upload_word(vkbert_encoder *e, const bert_weights *w)
{
    const float *word = w->word;
    uint32_t h = (uint32_t)e->config.hidden_size, hp = e->hp;
    uint64_t row = (uint64_t)hp * (e->half ? 2 : 4);
    vkbert_status status = plan_word_chunks(e);
    if (status) return status;
    uint32_t piece = (uint32_t)(WORD_PIECE_BYTES / 4 / hp);
    piece = piece < e->word_rows ? (piece ? piece : 1) : e->word_rows;
    float *scratch = malloc((size_t)piece * hp * sizeof *scratch);
    if (!scratch) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    uint32_t vocab = (uint32_t)e->config.vocab_size;
    for (uint32_t k = 0; k < e->word_chunks && !status; k++) {
        uint32_t first = k * e->word_rows, rows = vocab - first;
        rows = rows < e->word_rows ? rows : e->word_rows;
        status = vkb_buffer_create(e->ctx, rows * row, &e->word[k]);
        for (uint32_t r = 0; r < rows && !status; r += piece) {
            uint32_t n = rows - r < piece ? rows - r : piece;
            const float *rows_at = word + (size_t)(first + r) * h;
            /* Rows without padding in fp32 go as they are, without a pass through scratch. */
            if (h == hp && !e->half) {
                status =
                    vkb_buffer_upload(e->ctx, &e->word[k], r * row, rows_at, (size_t)n * h * 4);
            } else {
                pack_rows(rows_at, n, h, hp, scratch);
                status = upload_weights(e, &e->word[k], r * row, scratch, (size_t)n * hp);
            }
            bert_weights_release(w, rows_at, (size_t)n * h);
        }
    }
    free(scratch);
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
    float *packed = status ? NULL : malloc(count * sizeof *packed);
    if (!status && !packed)
        status = vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (status) return status;
    pack_rows(w->position, (uint32_t)c->max_position_embeddings, h, hp, packed);
    pack_rows(w->token_type, (uint32_t)c->type_vocab_size, h, hp, packed + e->type_off);
    pack_rows(w->ln_gamma, 1, h, hp, packed + e->gamma_off);
    pack_rows(w->ln_beta, 1, h, hp, packed + e->beta_off);
    status = vkb_buffer_create(e->ctx, count * 4, &e->tables);
    if (!status) status = vkb_buffer_upload(e->ctx, &e->tables, 0, packed, count * 4);
    free(packed);
    /* The vectors are a few pages, released with their neighbours. */
    bert_weights_release(w, w->position, (size_t)c->max_position_embeddings * h);
    return status ? status : upload_word(e, w);
}

static vkbert_status create_attention(vkbert_encoder *e, const bert_weights *w)
{
    e->attention = calloc((size_t)e->config.num_hidden_layers, sizeof *e->attention);
    if (!e->attention) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int l = 0; l < e->config.num_hidden_layers; l++) {
        const bert_layer_weights *lw = &w->layers[l];
        vkbert_attention_weights aw = {sizeof aw, lw->q_w, lw->q_b,        lw->k_w,       lw->k_b,
                                       lw->v_w,   lw->v_b, lw->attn_out_w, lw->attn_out_b};
        /* fp16 encoders keep fp32 attention layers, as before int8 came. */
        vkbert_attention_config config = {sizeof config, VKBERT_PRECISION_INT8};
        vkbert_status status =
            vkb_attention_new(e->ctx, e->config.hidden_size, e->config.num_attention_heads, &aw,
                              e->q8 ? &config : NULL, &e->attention[l]);
        if (status) return status;
        size_t hh = (size_t)e->config.hidden_size * (size_t)e->config.hidden_size;
        const float *uploaded[] = {lw->q_w, lw->k_w, lw->v_w, lw->attn_out_w};
        for (int z = 0; z < 4; z++)
            bert_weights_release(w, uploaded[z], hh);
        bert_weights_release_all(w);
    }
    return VKBERT_OK;
}

/* The layer's dense weights at its block of e->dense, its vectors at its block of e->params. */
static vkbert_status upload_layer(vkbert_encoder *e, const bert_weights *w, int l, float *scratch)
{
    const bert_layer_weights *lw = &w->layers[l];
    uint32_t h = (uint32_t)e->config.hidden_size, i = (uint32_t)e->config.intermediate_size;
    uint64_t at = (uint64_t)l * (e->inter_block + e->out_block);
    vkbert_status status =
        upload_matrix(e, at, lw->inter_w, i, h, e->ip, scratch, "intermediate.dense.weight");
    bert_weights_release(w, lw->inter_w, (size_t)i * h);
    if (!status)
        status = upload_matrix(e, at + e->inter_block, lw->out_w, h, i, e->hp, scratch,
                               "output.dense.weight");
    bert_weights_release(w, lw->out_w, (size_t)h * i);
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
    /* Packed as fp32 first; int8 packs through a bounded scratch of its own, so this one
     * holds the vectors only. */
    uint64_t widest = e->ip > e->hp ? e->ip : e->hp, inter = (uint64_t)h * e->ip;
    uint64_t biggest = (uint64_t)i * e->hp > inter ? (uint64_t)i * e->hp : inter;
    biggest = e->q8 ? 2 * widest : biggest;
    float *scratch = status ? NULL : malloc(biggest * sizeof *scratch);
    if (!status && !scratch)
        status = vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int l = 0; l < layers && !status; l++) {
        status = upload_layer(e, w, l, scratch);
        bert_weights_release_all(w);
    }
    if (!status && e->has_pooler) {
        status = upload_matrix(e, layers * (e->inter_block + e->out_block), w->pooler_w, h, h,
                               e->hp, scratch, "pooler.dense.weight");
        bert_weights_release(w, w->pooler_w, (size_t)h * h);
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
    vkbert_status status = upload_tables(e, weights);
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
