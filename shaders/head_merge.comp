#version 450
// Head merge: [B,H,S,dp] -> rows [B*S, ld] with head h in columns h*dp + d. One invocation
// per output element, so writes are contiguous; padding d >= D is written as zero, because
// the next matmul multiplies it (by zero weights).
#extension GL_GOOGLE_include_directive : require
// Before the include: gl_WorkGroupSize is a constant (1,1,1) until this line.
layout(local_size_x_id = 0) in;
#include "common.glsl"


layout(std430, binding = 0) readonly buffer Heads { float heads[]; };
layout(std430, binding = 1) writeonly buffer Merged { float merged[]; };

layout(push_constant) uniform Push {
    uint B, S, H, D;
    uint ld;  // row pitch of merged in floats
    uint dp;  // D rounded up to 4: a head's pitch on both sides block
} p;

void main()
{
    uint e = p.H * p.dp;
    uint idx = flat_invocation();
    if (idx >= p.B * p.S * e) return;
    uint m = idx / e, col = idx % e;
    uint h = col / p.dp, d = col % p.dp;
    uint b = m / p.S, s = m % p.S;
    merged[m * p.ld + col] = d < p.D ? heads[((b * p.H + h) * p.S + s) * p.dp + d] : 0.0;
}
