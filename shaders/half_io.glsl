// fp16 storage of activations and weights without any 16-bit storage feature: an fp16 vec4
// is a uvec2 of packHalf2x16 pairs, declared over the same binding as the buffer's fp32 view.
// A specialization constant picks the view, so the unused one costs nothing. Arithmetic stays
// fp32. packHalf2x16 puts the first half in the low 16 bits, so on a little-endian host the
// bytes are a uint16 array in element order: what float_to_half's callers upload.
// A variant reading the weights as f16vec4 through storageBuffer16BitAccess was no faster on
// lavapipe (gpu family, fp16 matmuls of 1024x768 by 768 and by 3072, medians of 5 runs
// alternating the two builds, 16-bit storage vs packed: 715 vs 838 ms and 3286 vs 2632 ms
// with shared memory, 808 vs 708 and 4850 vs 3136 ms without), so it was removed: one path,
// every device.
#ifndef VKBERT_HALF_IO_GLSL
#define VKBERT_HALF_IO_GLSL

vec4 unpack_half4(uvec2 v)
{
    return vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y));
}

uvec2 pack_half4(vec4 v)
{
    return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
}

#endif
