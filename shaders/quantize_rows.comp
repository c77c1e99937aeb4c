#version 450
// Activations for the integer-dot matmul (shaders/matmul_dot.comp): each row of A [M,K] (fp32)
// quantized to int8 with one fp32 scale per row, symmetric:
//   d = max|a| / 127,  q = round(a / d) to the nearest integer, ties away from zero, in
//   [-127, 127]; d == 0 gives all-zero quants.
// The quotient is taken in fp32 on the device (Vulkan allows 2.5 ulp for a division), so a
// value within a few ulp of a tie may round either way (tests/ops/test_matmul_dot.c allows that
// and nothing else). One workgroup per row, two passes over it (max, then quantize).
// Output (q8_io.glsl, q8_rows_*): row r at uvec4 r * pitch4; its first uvec4 holds the scale's
// bits in x (y, z, w zero), then ceil(K/32) * 2 uvec4 of quants, four k per uint, the first
// in the low byte; k >= K (the last block's padding) written as 0.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in; // a power of two
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { vec4 a[]; };
layout(std430, binding = 1) writeonly buffer Quants { uint q[]; };

layout(push_constant) uniform Push {
    uint M, K;
    uint lda4;   // A's row pitch in vec4
    uint pitch4; // the output's row pitch in uvec4: 1 + 2 * ceil(K / 32)
} p;

// A's vec4 u of row `base`, k >= K as zero (A's row padding is not trusted).
vec4 a_chunk(uint base, uint u)
{
    if (4 * u >= p.K) return vec4(0.0);
    bvec4 keep = lessThan(uvec4(4 * u) + uvec4(0, 1, 2, 3), uvec4(p.K));
    return mix(vec4(0.0), a[base + u], keep);
}

// Round to nearest, ties away from zero: trunc and the remainder are exact below 2^23.
int round_away(float v)
{
    float m = abs(v), t = trunc(m);
    if (m - t >= 0.5) t += 1.0;
    return int(sign(v) * min(t, 127.0));
}

void main()
{
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.M) return; // uniform over the workgroup
    uint base = row * p.lda4, t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    uint words = (p.pitch4 - 1) * 4; // uints of quants per row, padding included

    float amax = 0.0;
    for (uint u = t; u < words; u += n) {
        vec4 v = abs(a_chunk(base, u));
        amax = max(amax, max(max(v.x, v.y), max(v.z, v.w)));
    }
    amax = reduce(amax, true);
    float d = amax / 127.0;
    uint out_base = row * p.pitch4 * 4;
    if (t < 4) q[out_base + t] = t == 0 ? floatBitsToUint(d) : 0u;
    for (uint u = t; u < words; u += n) {
        vec4 v = a_chunk(base, u);
        ivec4 qi = d == 0.0 ? ivec4(0)
                            : ivec4(round_away(v.x / d), round_away(v.y / d), round_away(v.z / d),
                                    round_away(v.w / d));
        uvec4 b = uvec4(qi & 0xff);
        q[out_base + 4 + u] = b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
    }
}
