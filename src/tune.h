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
} vkb_matmul_tiles;

/* `a_texels` and `b_texels`: how many vec4 the A and B bindings hold (texel views have a
 * limit of their own). */
vkb_matmul_tiles vkb_tune_matmul(const vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k,
                                 uint64_t a_texels, uint64_t b_texels);
/* Workgroup size of the row-wise softmax (a power of two). */
uint32_t vkb_tune_softmax_workgroup(const vkbert_context *ctx, uint32_t row_length);
/* Workgroup size of element-wise kernels. */
uint32_t vkb_tune_elementwise_workgroup(const vkbert_context *ctx);

#endif
