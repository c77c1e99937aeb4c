/* VKBERT_PRECISION_INT8's dense weights: a matmul's B [K,N] quantized column by column (each
 * column is a PyTorch row W[n][0..in), the input dimension) into the Q8_0 blocks the matmul
 * reads as VKB_FORMAT_Q8_0 (shaders/q8_io.glsl), through a bounded scratch. */
#ifndef VKBERT_NN_WEIGHTS_Q8_H
#define VKBERT_NN_WEIGHTS_Q8_H

#include "vk/vk.h"

/* Writes B[0..k)[n], column n < N of B, into `column`; false if the source cannot be read. */
typedef bool (*q8_column_fn)(const void *source, uint32_t n, float *column);

typedef struct q8_matrix {
    uint32_t k, n, ldb; /* B [K][N], columns padded to ldb (a multiple of 4) with zeros */
    q8_column_fn column;
    const void *source;
    const char *name; /* for a message: the weight a non-finite value is in */
    /* The dot order (VKB_FORMAT_Q8_0_DOT): within each uvec4 of a block, a uint holds 4 k
     * of one column instead of 4 columns of one k (the 4 x 4 bytes transposed). */
    bool dot;
} q8_matrix;

/* The common source: B = W^T * scale for W [out][in] (PyTorch's Linear), so column n is
 * row n of W. */
typedef struct q8_rows {
    const float *w;
    uint32_t in;
    float scale;
} q8_rows;
bool q8_rows_column(const void *source, uint32_t n, float *column);

/* Bytes of B [k][ldb] as Q8_0 blocks: ldb / 4 column groups of ceil(k / 32) blocks. */
uint64_t vkb_q8_bytes(uint32_t k, uint32_t ldb);

/* Quantizes B and uploads it at `at` of `dst`, vkb_q8_bytes(k, ldb) bytes, through `w`: the
 * quantizing is host work, done without the context's lock when `w` is not locked. A
 * non-finite weight or an unreadable row is VKBERT_ERROR_INVALID_ARGUMENT naming m->name. */
vkbert_status vkb_q8_upload(vkb_writer *w, vkb_buffer *dst, uint64_t at, const q8_matrix *m);

/* W [out][in] (PyTorch's Linear) as B = W^T [in][ldb]: vkb_q8_upload of q8_rows, the caller
 * holding the lock. */
vkbert_status vkb_q8_upload_linear(vkbert_context *ctx, vkb_buffer *dst, uint64_t at,
                                   const float *w, uint32_t out, uint32_t in, uint32_t ldb,
                                   const char *name);

/* The byte of k `r` (0..31) of column j (0..3) within a 144-byte block, after the scales. */
uint32_t vkb_q8_quant_at(uint32_t r, uint32_t j, bool dot);

#endif
