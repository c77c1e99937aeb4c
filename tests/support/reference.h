/* The CPU reference of the attention layer, in double precision: docs/semantics.md step by step,
 * with vkbert's rule for fully masked rows and its Philox dropout. Used by the tests and by
 * `vkbert demo`. */
#ifndef VKBERT_REFERENCE_H
#define VKBERT_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ref_layer {
    int embed_dim, heads;
    const float *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo; /* PyTorch layout [out][in] */
} ref_layer;

/* A mask resolved to element strides over (b, h, i, j); NULL data means no mask. */
typedef struct ref_mask {
    const float *data; /* 0 = masked */
    size_t stride[4];
} ref_mask;

typedef struct ref_options {
    int causal;
    double dropout;
    uint64_t seed;
    int additive; /* HuggingFace's additive mask: masked keys score the lowest float */
} ref_options;

/* y[B][S][E] from x[B][S][E]. */
void ref_attention(const ref_layer *layer, int batch, int seq_len, const float *x,
                   const ref_mask *mask, const ref_options *options, double *y);

/* The same from a double-precision x (for stacks of layers). */
void ref_attention_d(const ref_layer *layer, int batch, int seq_len, const double *x,
                     const ref_mask *mask, const ref_options *options, double *y);

/* The attention weights P [B][H][S][S] after softmax and dropout (for kernel tests). */
void ref_softmax(const double *scores, int batch, int heads, int seq_len, double scale,
                 const ref_mask *mask, const ref_options *options, double *p);

/* True when dropout removes P[b,h,i,j]: Philox4x32-10 with counter (j/4, i, h, b) and key
 * the seed, word j%4, its top 24 bits below round(p * 2^24). */
int ref_dropped(uint64_t seed, double p, uint32_t b, uint32_t h, uint32_t i, uint32_t j);

/* Relative L2 error and the largest absolute error over n values; max|ref| too. */
typedef struct ref_error {
    double relative_l2, max_abs, max_ref;
} ref_error;
ref_error ref_compare(const float *got, const double *want, size_t n);

/* A deterministic generator for test data (io/random.h's splitmix64). */
typedef struct ref_rng {
    uint64_t state;
} ref_rng;
double ref_uniform(ref_rng *rng, double lo, double hi);
void ref_fill(ref_rng *rng, float *data, size_t n, double lo, double hi);

#endif
