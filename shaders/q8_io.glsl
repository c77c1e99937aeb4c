// Q8_0 weights without any 8-bit storage or arithmetic feature (docs/int8.md): four int8
// in a uint, the first in the low byte, so on a little-endian host the bytes are an int8
// array in element order, as src/io/q8.c writes them. An arithmetic right shift of a signed
// int sign-extends each byte.
// B [K,N] is stored in blocks of 4 columns x 32 k, column groups outermost: 9 uvec4 each,
// the 4 columns' fp32 scales (as bits), then 8 uvec4 of 4 k each, a uint per k holding the 4
// columns. One uvec4 brings a chunk of 4 k for 4 columns, as the kernels step through K, and
// one storage binding or texel view holds quants and scales alike. storageBuffer8BitAccess would be a speed option only, as 16-bit
// storage was for fp16 (half_io.glsl); it is not used until a measurement says it is faster.
#ifndef VKBERT_Q8_IO_GLSL
#define VKBERT_Q8_IO_GLSL

vec4 unpack_q8x4(uint v)
{
    return vec4((ivec4(v) << ivec4(24, 16, 8, 0)) >> 24);
}

// The uvec4 index of the block of column group c4 and k block `block`, for K rows.
uint q8_block(uint c4, uint block, uint K)
{
    return (c4 * ((K + 31) / 32) + block) * 9;
}

#endif
