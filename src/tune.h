/* The one place that picks kernels and tile sizes per device, checked against its limits. */
#ifndef VKBERT_TUNE_H
#define VKBERT_TUNE_H

#include "vk/vk.h"

/* Kernel families: `simd` for CPU-backed devices (texel-buffer reads, no shared memory, big
 * register tiles), `gpu` for GPUs (storage-buffer reads, shared memory where it pays). */
typedef enum vkb_family { VKB_FAMILY_GPU, VKB_FAMILY_SIMD } vkb_family;

/* The device's family, or the one VKBERT_KERNELS=gpu|simd forces. */
vkb_family vkb_tune_family(const vkbert_context *ctx);
const char *vkb_family_name(vkb_family family);

typedef struct vkb_matmul_tiles {
    vkb_family family;
    uint32_t wg_x, wg_y; /* workgroup size */
    uint32_t tm, tn4;    /* rows and vec4 columns per invocation */
    /* The block of C one workgroup computes (bm = wg_y * tm rows, bn = 4 * wg_x * tn4 columns)
     * and the depth of the gpu family's shared-memory slices of A and B. bk 0: no shared memory
     * (the simd family, or the gpu family's fallback, shaders/matmul.comp). */
    uint32_t bm, bn, bk;
} vkb_matmul_tiles;

/* `a_texels` and `b_texels`: how many vec4 the A and B bindings hold (texel views have a
 * limit of their own). VKBERT_MATMUL_TILES="wg_x,wg_y,tm,tn4[,bk]" overrides the choice (bk 0:
 * the gpu family's fallback); VKBERT_MATMUL_FALLBACK=1 makes the gpu family use its fallback. */
vkb_matmul_tiles vkb_tune_matmul(const vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k,
                                 uint64_t a_texels, uint64_t b_texels);
/* The same for `batch` products in one dispatch: more workgroups, so bigger tiles can pay. */
vkb_matmul_tiles vkb_tune_matmul_batched(const vkbert_context *ctx, uint32_t m, uint32_t n,
                                         uint32_t k, uint32_t batch, uint64_t a_texels,
                                         uint64_t b_texels);
/* Writes a one-line description of the tiles to `out`, e.g. "gpu smem 64x64x16 wg 16x16 tile
 * 4x4", "gpu fallback wg 16x8 tile 4x4" or "simd wg 8x4 tile 16x12" (tile: rows x columns per
 * invocation). */
void vkb_matmul_describe(const vkb_matmul_tiles *t, char *out, size_t size);
/* Shared memory the gpu family's kernel needs for these tiles, in bytes (0 when bk is 0). */
uint32_t vkb_matmul_shared_bytes(const vkb_matmul_tiles *t);
/* Workgroup size of the row-wise softmax (a power of two). */
uint32_t vkb_tune_softmax_workgroup(const vkbert_context *ctx, uint32_t row_length);
/* Workgroup size (query rows) of the fused attention kernel. */
uint32_t vkb_tune_fused_workgroup(const vkbert_context *ctx, uint32_t seq_len);
/* Whether attention of this shape runs fused: forced by VKBERT_ATTENTION=fused|unfused, fused
 * whenever the scores (`score_bytes`) exceed a storage buffer or the memory budget, else the
 * device's preference. */
bool vkb_tune_attention_fused(const vkbert_context *ctx, uint64_t score_bytes);
/* Workgroup size of element-wise kernels. */
uint32_t vkb_tune_elementwise_workgroup(const vkbert_context *ctx);

#endif
