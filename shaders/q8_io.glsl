// Q8_0 weights without any 8-bit storage or arithmetic feature (NOTES-13-int8.md): four int8
// in a uint, the first in the low byte, so on a little-endian host the bytes are an int8
// array in element order, as src/io/q8.c writes them. An arithmetic right shift of a signed
// int sign-extends each byte. storageBuffer8BitAccess would be a speed option only, as 16-bit
// storage was for fp16 (half_io.glsl); it is not used until a measurement says it is faster.
#ifndef VKBERT_Q8_IO_GLSL
#define VKBERT_Q8_IO_GLSL

vec4 unpack_q8x4(uint v)
{
    return vec4((ivec4(v) << ivec4(24, 16, 8, 0)) >> 24);
}

#endif
