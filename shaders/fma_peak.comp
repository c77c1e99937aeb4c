#version 450
// FMA peak: each invocation runs CHAINS independent vec4 fma chains, so a lane always has
// work whose inputs are ready (one chain alone measures latency, not throughput). The
// iteration count and the multiplier come from push constants, so the compiler can neither
// unroll the loop away nor fold it; the sum is written so the chains stay live.
// Flops: 2 * 4 * CHAINS * 4 steps per iteration per invocation.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 64) in;
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Result { vec4 result[]; };

layout(push_constant) uniform Push {
    uint iterations;
    float scale;  // slightly below 1: a*scale + add converges, so nothing overflows
    float add;
} p;

void main()
{
    uint id = flat_invocation();
    vec4 seed = vec4(float(id & 1023u)) * 1e-3;
    vec4 a0 = seed, a1 = seed + 0.1, a2 = seed + 0.2, a3 = seed + 0.3;
    vec4 a4 = seed + 0.4, a5 = seed + 0.5, a6 = seed + 0.6, a7 = seed + 0.7;
    vec4 s = vec4(p.scale), c = vec4(p.add);
    for (uint i = 0u; i < p.iterations; i++) {
        // Four steps per iteration: the loop's own cost (on lavapipe a masked branch per
        // iteration) stays small next to the 32 FMAs (measured: 1 step ~95, 4 steps ~110-125
        // GFLOP/s on the 2-core test machine).
        [[unroll]] for (uint step = 0u; step < 4u; step++) {
            a0 = fma(a0, s, c);
            a1 = fma(a1, s, c);
            a2 = fma(a2, s, c);
            a3 = fma(a3, s, c);
            a4 = fma(a4, s, c);
            a5 = fma(a5, s, c);
            a6 = fma(a6, s, c);
            a7 = fma(a7, s, c);
        }
    }
    result[id] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}
