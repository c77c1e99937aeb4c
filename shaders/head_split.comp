#version 450
// Head split: rows [B*S, ld] with head h in columns h*dp + d -> [B,H,S,dp]. One invocation
// per element d < D, in row order so reads are contiguous; padding d >= D is left alone.
#extension GL_GOOGLE_include_directive : require
// Before the include: gl_WorkGroupSize is a constant (1,1,1) until this line.
layout(local_size_x_id = 0) in;
#include "common.glsl"


layout(std430, binding = 0) readonly buffer Rows { float rows[]; };
layout(std430, binding = 1) writeonly buffer Heads { float heads[]; };

layout(push_constant) uniform Push {
    uint B, S, H, D;
    uint ld;  // row pitch of the [B*S, H*dp] side in floats
    uint dp;  // D rounded up to 4: a head's pitch on both sides
} p;

void main()
{
    uint e = p.H * p.D;
    uint idx = flat_invocation();
    if (idx >= p.B * p.S * e) return;
    uint m = idx / e, col = idx % e;
    uint h = col / p.D, d = col % p.D;
    uint b = m / p.S, s = m % p.S;
    heads[((b * p.H + h) * p.S + s) * p.dp + d] = rows[m * p.ld + h * p.dp + d];
}
