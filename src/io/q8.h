/* Q8_0 weights: symmetric int8, one fp32 scale per block of 32 values along a row (the input
 * dimension of a Linear weight [out, in]). The block size and the rule d = max|x| / 127,
 * q = round(x / d) are ggml's Q8_0 (quantize_row_q8_0_ref); its scale is fp16, ours fp32, so
 * the scale adds no error of its own. See docs/int8.md for the device layout. */
#ifndef VKBERT_IO_Q8_H
#define VKBERT_IO_Q8_H

#include <stdbool.h>
#include <stdint.h>

#define Q8_BLOCK 32

/* The blocks covering a row of k values; the last is padded with zeros. */
uint64_t q8_blocks(uint64_t k);

/* Quantizes x[0..k) into q[0..32*q8_blocks(k)) and scales[0..q8_blocks(k)); the padding's
 * quants are 0. Returns false, writing nothing meaningful, if a value is not finite. */
bool q8_quantize_row(const float *x, uint64_t k, int8_t *q, float *scales);

/* out[i] = q[i] * scales[i / 32] for i < k: the weights the quantized matmul multiplies by. */
void q8_dequantize_row(const int8_t *q, const float *scales, uint64_t k, float *out);

#endif
