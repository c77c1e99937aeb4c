/* The one place that picks kernels and tile sizes per device, checked against its limits. */
#ifndef VKBERT_TUNE_H
#define VKBERT_TUNE_H

#include "vk/vk.h"

typedef struct vkb_matmul_tiles {
    uint32_t wg_x, wg_y; /* workgroup size */
    uint32_t tm, tn4;    /* rows and vec4 columns per invocation */
} vkb_matmul_tiles;

vkb_matmul_tiles vkb_tune_matmul(const vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k);
/* Workgroup size of the row-wise softmax (a power of two). */
uint32_t vkb_tune_softmax_workgroup(const vkbert_context *ctx, uint32_t row_length);
/* Workgroup size of element-wise kernels. */
uint32_t vkb_tune_elementwise_workgroup(const vkbert_context *ctx);

#endif
