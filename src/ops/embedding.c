/* Host side of shaders/embedding.comp, padded and ragged. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

typedef struct embedding_push {
    uint32_t tokens, seq_len, hidden, ld;
    uint32_t position_off, type_off, gamma_off, beta_off;
    uint32_t first_row, rows, vocab, types;
    float eps;
    uint32_t positions;
} embedding_push;
_Static_assert(sizeof(embedding_push) == VKB_PUSH_BYTES_EMBEDDING,
               "embedding_push matches shaders/embedding.comp's Push block");

static vkbert_status check_desc(vkbert_context *ctx, const vkb_embedding_desc *d, vkb_view word,
                                vkb_view ids)
{
    if (!d->tokens || !(d->seq_len || d->ragged) || !d->hidden || d->ld % 4 || d->ld < d->hidden ||
        !(d->eps > 0.0f) || !d->rows || !d->types || d->first_row > d->vocab ||
        d->rows > d->vocab - d->first_row)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "embedding: bad shape, vocabulary or epsilon");
    if (d->ragged && !d->positions)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "embedding: a ragged batch needs the position table's rows (positions)");
    uint32_t blocks = d->ragged ? 3 : 2; /* ids, types, then positions when ragged */
    if ((blocks * (uint64_t)d->tokens + 1) * 4 > ids.size)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "embedding: the ids binding's %llu bytes hold no flag after %u x %u ids",
                        (unsigned long long)ids.size, blocks, d->tokens);
    if (!vkb_format_is_float(d->word))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "embedding: the word table must be fp32 or fp16");
    if ((uint64_t)d->rows * d->ld * vkb_format_float_bytes(d->word) > word.size)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "embedding: %u word rows of %u do not fit the word binding's %llu bytes",
                        d->rows, d->ld, (unsigned long long)word.size);
    if (d->beta_off + d->ld > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT, "embedding: tables too large");
    return VKBERT_OK;
}

vkbert_status vkb_op_embedding(vkbert_context *ctx, VkDescriptorPool pool,
                               const vkb_embedding_desc *d, vkb_view word, vkb_view tables,
                               vkb_view ids, vkb_view out, vkb_dispatch *dispatch)
{
    vkbert_status status = check_desc(ctx, d, word, ids);
    if (status) return status;
    uint32_t spec[2] = {vkb_tune_softmax_workgroup(ctx, d->hidden),
                        d->word == VKB_FORMAT_F16_PAIRS};
    embedding_push push = {d->tokens,
                           d->seq_len,
                           d->hidden,
                           d->ld,
                           (uint32_t)d->position_off,
                           (uint32_t)d->type_off,
                           (uint32_t)d->gamma_off,
                           (uint32_t)d->beta_off,
                           d->first_row,
                           d->rows,
                           d->vocab,
                           d->types,
                           d->eps,
                           d->positions};
    vkb_view views[4] = {word, tables, ids, out};
    uint32_t axes = d->ragged ? VKB_AXIS_RAGGED : 0;
    const vkb_spirv *shader = vkb_tune_variant(ctx, &vkb_variants_embedding, axes);
    vkb_kernel kernel = {shader, NULL, spec, 2, views, 4, &push, sizeof push, 0};
    status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    vkb_grid_1d(ctx, d->tokens, 1, dispatch->groups); /* one workgroup per token */
    return vkb_check_groups(ctx, dispatch);
}
