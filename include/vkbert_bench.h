/*
 * vkbert's benchmarks and tuning: what `vkbert bench` and `vkbert tune` use, apart from what an
 * application needs (vkbert.h). The same rules hold: thread-safe, holding the context's lock,
 * and the structs the library fills in start with struct_size, set by their _INIT macro.
 */
#ifndef VKBERT_BENCH_H
#define VKBERT_BENCH_H

#include "vkbert.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device's own ceilings, measured by two micro-kernels. Filled in by the library. */
typedef struct vkbert_peaks {
    uint32_t struct_size; /* VKBERT_PEAKS_INIT */
    double fma_gflops;    /* many independent vec4 FMA chains per invocation */
    double copy_gbs;      /* vec4 copy, bytes read + written per second */
} vkbert_peaks;
#define VKBERT_PEAKS_INIT VKBERT_STRUCT_INIT_(vkbert_peaks)

VKBERT_API vkbert_status vkbert_measure_peaks(vkbert_context *ctx, vkbert_peaks *peaks);

#define VKBERT_BENCH_MAX_KERNELS 16

/* Filled in by the library. */
typedef struct vkbert_bench_result {
    uint32_t struct_size;               /* VKBERT_BENCH_RESULT_INIT */
    double gpu_median_ms, gpu_min_ms;   /* timestamp queries around the whole pass */
    double wall_median_ms, wall_min_ms; /* submit to fence */
    double flops;                       /* of one pass, by the formula of the case */
    uint32_t kernel_count;
    vkbert_timing kernels[VKBERT_BENCH_MAX_KERNELS]; /* median GPU time of each dispatch */
    uint64_t device_memory_bytes;                    /* device memory the context holds */
    char config[256];                                /* the kernel family and tiles chosen */
} vkbert_bench_result;
#define VKBERT_BENCH_RESULT_INIT VKBERT_STRUCT_INIT_(vkbert_bench_result)

/* Times C[M,N] = A[M,K] * W[N,K]^T + bias on random data (W in fp16 with
 * VKBERT_PRECISION_FP16): `runs` timed passes after a warm-up. Needs a context made with
 * timestamps. */
VKBERT_API vkbert_status vkbert_bench_matmul(vkbert_context *ctx, int m, int n, int k,
                                             vkbert_precision precision, int runs,
                                             vkbert_bench_result *result);
/* Times one attention layer (random weights, no mask) on device tensors. */
VKBERT_API vkbert_status vkbert_bench_attention(vkbert_context *ctx, int batch, int seq_len,
                                                int embed_dim, int num_heads,
                                                vkbert_precision precision, int runs,
                                                vkbert_bench_result *result);

typedef struct vkbert_bench_encoder_shape {
    uint32_t struct_size; /* VKBERT_BENCH_ENCODER_SHAPE_INIT */
    int layers, hidden, heads, intermediate, vocab;
    int batch, seq_len;
    /* Mixed lengths (lengths NULL: batch sequences of seq_len tokens): `texts` sequences of
     * lengths[i] tokens (1..seq_len), run in this order in batches of `batch`, each padded to
     * its longest, or packed without padding when `ragged`. The GPU and wall times are of the
     * whole set; the flops count real tokens only. */
    const int *lengths;
    int texts, ragged;
} vkbert_bench_encoder_shape;
#define VKBERT_BENCH_ENCODER_SHAPE_INIT VKBERT_STRUCT_INIT_(vkbert_bench_encoder_shape)

/* Times a whole encoder with random weights on random ids (GPU time of the recorded pass,
 * wall time of the host call; with mixed lengths, sentence embeddings through mean pooling);
 * FP16 stores its dense weights as fp16. */
VKBERT_API vkbert_status vkbert_bench_encoder(vkbert_context *ctx,
                                              const vkbert_bench_encoder_shape *shape,
                                              vkbert_precision precision, int runs,
                                              vkbert_bench_result *result);

/* Stores tuning results for the context's device, as `vkbert tune` measures them: `json` is an
 * object with "matmul" and "attention" arrays (docs/performance.md, "Caches and tuning"). All
 * entries are checked against the device, then the file is replaced atomically; this context and
 * every later one on the device consult it before the built-in choices. `path` (may be NULL)
 * receives the file's name. Fails with VKBERT_ERROR_INVALID_ARGUMENT on a bad entry, when the cache
 * is off or when the file cannot be written. */
VKBERT_API vkbert_status vkbert_tune_save(vkbert_context *ctx, const char *json, char *path,
                                          size_t path_size);

/* Replaces the context's copy of one tuning variable (VKBERT_KERNELS, VKBERT_ATTENTION,
 * VKBERT_MATMUL_TILES, VKBERT_MATMUL_FALLBACK or VKBERT_SIMD_SHUFFLE; vkbert.h lists them
 * before vkbert_context_options) so that a benchmark can try choices on one context. `value` is
 * checked as the variable is ("" as if unset); NULL restores what the environment said when
 * the context was made. Layers and encoders keep the plans they made before; new shapes and
 * new objects follow the new value. Anything else is VKBERT_ERROR_INVALID_ARGUMENT. */
VKBERT_API vkbert_status vkbert_bench_override(vkbert_context *ctx, const char *name,
                                               const char *value);

#ifdef __cplusplus
}
#endif
#endif
