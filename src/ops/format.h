/* How an operand of an op is stored: one named format per operand instead of a flag per
 * storage trait, so a descriptor cannot ask for two storages at once. */
#ifndef VKBERT_OPS_FORMAT_H
#define VKBERT_OPS_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum vkb_format {
    /* Zero, so a descriptor left zeroed reads and writes fp32. */
    VKB_FORMAT_F32 = 0,
    /* fp16 in packed pairs of halves (no 16-bit storage feature needed); pitches stay in
     * elements. */
    VKB_FORMAT_F16_PAIRS,
    /* int8 blocks of 4 columns x 32 k with one fp32 scale a column (src/io/q8.h,
     * shaders/q8_io.glsl), dequantized in the matmul: a matmul's B only. */
    VKB_FORMAT_Q8_0,
    /* Q8_0 blocks in the integer-dot order (a uint = 4 k of one column,
     * nn/encoder/weights_q8.h), run by integer dot products: a matmul's B only, with A in
     * VKB_FORMAT_Q8_ROWS. */
    VKB_FORMAT_Q8_0_DOT,
    /* Rows quantized to int8 with one fp32 scale a row (vkb_op_quantize_rows; pitch
     * vkb_q8_rows_pitch): the A of a matmul whose B is VKB_FORMAT_Q8_0_DOT, only. */
    VKB_FORMAT_Q8_ROWS,
    VKB_FORMAT_COUNT /* not a format: the bound of the valid values */
} vkb_format;

static inline bool vkb_format_valid(vkb_format f)
{
    return (unsigned)f < VKB_FORMAT_COUNT;
}

/* The formats of plain floats, which every operand but a matmul's A and B must have. */
static inline bool vkb_format_is_float(vkb_format f)
{
    return f == VKB_FORMAT_F32 || f == VKB_FORMAT_F16_PAIRS;
}

/* Q8_0 blocks, in either order. */
static inline bool vkb_format_is_q8(vkb_format f)
{
    return f == VKB_FORMAT_Q8_0 || f == VKB_FORMAT_Q8_0_DOT;
}

/* Bytes an element of an fp32 or fp16 operand takes. */
static inline uint32_t vkb_format_float_bytes(vkb_format f)
{
    return f == VKB_FORMAT_F16_PAIRS ? 2 : 4;
}

#endif
