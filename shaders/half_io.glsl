// fp16 storage of activations without any 16-bit storage feature: an fp16 vec4 is a uvec2
// of packHalf2x16 pairs, declared over the same binding as the buffer's fp32 view. A
// specialization constant picks the view, so the unused one costs nothing. Arithmetic stays
// fp32.
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
