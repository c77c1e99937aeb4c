/* Q8_0 weights quantized while uploading: a column group at a time into a scratch of at most
 * Q8_PIECE_BYTES, so that no full-size host copy of a weight is ever made. */
#include "nn/encoder/weights_q8.h"

#include "io/q8.h"

#include <stdlib.h>
#include <string.h>

/* A block of 4 columns x 32 k: the 4 fp32 scales, then a uint of 4 columns per k. */
#define Q8_BLOCK_BYTES 144u
#define Q8_PIECE_BYTES ((uint64_t)1 << 20)

bool q8_rows_column(const void *source, uint32_t n, float *column)
{
    const q8_rows *r = source;
    const float *row = r->w + (size_t)n * r->in;
    for (uint32_t i = 0; i < r->in; i++)
        column[i] = row[i] * r->scale;
    return true;
}

uint64_t vkb_q8_bytes(uint32_t k, uint32_t ldb)
{
    return (uint64_t)(ldb / 4) * q8_blocks(k) * Q8_BLOCK_BYTES;
}

typedef struct q8_scratch {
    float *column, *scales;
    int8_t *quants;
    uint8_t *piece;
} q8_scratch;

uint32_t vkb_q8_quant_at(uint32_t r, uint32_t j, bool dot)
{
    return 16 + 16 * (r / 4) + (dot ? 4 * j + r % 4 : 4 * (r % 4) + j);
}

/* Column j (0..3) of a group's blocks from its quants and scales; a zero column when absent. */
static void place_column(uint8_t *group, uint64_t blocks, uint32_t j, const q8_scratch *s,
                         bool present, bool dot)
{
    for (uint64_t b = 0; b < blocks; b++) {
        uint8_t *block = group + b * Q8_BLOCK_BYTES;
        float scale = present ? s->scales[b] : 0.0f;
        memcpy(block + 4 * j, &scale, 4);
        for (uint32_t r = 0; r < Q8_BLOCK; r++)
            block[vkb_q8_quant_at(r, j, dot)] = present ? (uint8_t)s->quants[b * Q8_BLOCK + r] : 0;
    }
}

/* Groups [first, first + count) of B into s->piece. */
static vkbert_status pack_groups(vkb_writer *w, const q8_matrix *m, uint32_t first, uint32_t count,
                                 const q8_scratch *s)
{
    uint64_t blocks = q8_blocks(m->k);
    for (uint32_t g = 0; g < count; g++)
        for (uint32_t j = 0; j < 4; j++) {
            uint32_t n = (first + g) * 4 + j;
            bool present = n < m->n;
            if (present) {
                if (!m->column(m->source, n, s->column))
                    return vkb_write_fail(w, VKBERT_ERROR_INVALID_ARGUMENT,
                                          "%s: row %u cannot be read", m->name, n);
                if (!q8_quantize_row(s->column, m->k, s->quants, s->scales))
                    return vkb_write_fail(w, VKBERT_ERROR_INVALID_ARGUMENT,
                                          "%s: row %u holds a value that is not finite", m->name,
                                          n);
            }
            place_column(s->piece + g * blocks * Q8_BLOCK_BYTES, blocks, j, s, present, m->dot);
        }
    return VKBERT_OK;
}

vkbert_status vkb_q8_upload(vkb_writer *w, vkb_buffer *dst, uint64_t at, const q8_matrix *m)
{
    uint64_t blocks = q8_blocks(m->k), group_bytes = blocks * Q8_BLOCK_BYTES;
    uint32_t groups = m->ldb / 4;
    uint64_t per_piece = Q8_PIECE_BYTES / group_bytes ? Q8_PIECE_BYTES / group_bytes : 1;
    if (per_piece > groups) per_piece = groups;
    q8_scratch s = {malloc((size_t)m->k * sizeof *s.column), malloc(blocks * sizeof *s.scales),
                    malloc(blocks * Q8_BLOCK), malloc(per_piece * group_bytes)};
    vkbert_status status = VKBERT_OK;
    if (!s.column || !s.scales || !s.quants || !s.piece)
        status = vkb_write_fail(w, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (uint32_t g = 0; g < groups && !status; g += (uint32_t)per_piece) {
        uint32_t count = groups - g < per_piece ? groups - g : (uint32_t)per_piece;
        status = pack_groups(w, m, g, count, &s);
        if (!status) status = vkb_write(w, dst, at + g * group_bytes, s.piece, count * group_bytes);
    }
    free(s.column), free(s.scales), free(s.quants), free(s.piece);
    return status;
}

vkbert_status vkb_q8_upload_linear(vkbert_context *ctx, vkb_buffer *dst, uint64_t at,
                                   const float *w, uint32_t out, uint32_t in, uint32_t ldb,
                                   const char *name)
{
    q8_rows rows = {w, in, 1.0f};
    q8_matrix m = {in, out, ldb, q8_rows_column, &rows, name, false};
    vkb_writer locked = vkb_writer_of(ctx, true);
    return vkb_q8_upload(&locked, dst, at, &m);
}
