/* The micro-kernels that measure a device's own ceilings, shaders/fma_peak.comp and
 * shaders/copy_bandwidth.comp. They prepare dispatches like the other ops; src/perf/perf.c
 * times them. */
#ifndef VKBERT_OPS_PEAK_H
#define VKBERT_OPS_PEAK_H

#include "vk/vk.h"

#define VKB_PEAK_WORKGROUP 64 /* local_size_x of both shaders */
#define VKB_FMA_CHAINS 8      /* independent vec4 accumulators per invocation */
#define VKB_FMA_STEPS 4       /* FMAs of each chain per loop iteration */

/* `groups` workgroups, each invocation running `iterations` rounds of VKB_FMA_CHAINS vec4
 * fmas; `result` takes one vec4 per invocation. */
vkbert_status vkb_op_fma_peak(vkbert_context *ctx, VkDescriptorPool pool, uint32_t groups,
                              uint32_t iterations, vkb_view result, vkb_dispatch *out);
/* Floating-point operations of one such dispatch (an fma counts 2). */
double vkb_fma_peak_flops(const vkbert_context *ctx, uint32_t groups, uint32_t iterations);

/* dst = src, as many vec4 as `dst` holds (`src` at least as large). */
vkbert_status vkb_op_copy(vkbert_context *ctx, VkDescriptorPool pool, vkb_view src, vkb_view dst,
                          vkb_dispatch *out);

#endif
