#version 450
// Head split: X [B*S, ld] with column h*D + d -> [B,H,S,Dp]. One invocation per input
// element, so reads are contiguous; the padding columns d >= D of the output are left alone.
#extension GL_GOOGLE_include_directive : require
// Before the include: gl_WorkGroupSize is a constant (1,1,1) until this line.
layout(local_size_x_id = 0) in;
#include "common.glsl"


layout(std430, binding = 0) readonly buffer Rows { float rows[]; };
layout(std430, binding = 1) writeonly buffer Heads { float heads[]; };

layout(push_constant) uniform Push {
    uint B, S, H, D;
    uint ld;  // row pitch of the [B*S, E] side in floats
    uint dp;  // row pitch of a head
} p;

void main()
{
    uint e = p.H * p.D;
    uint idx = flat_invocation();
    if (idx >= p.B * p.S * e) return;
    uint m = idx / e, col = idx % e;
    uint h = col / p.D, d = col % p.D;
    uint b = m / p.S, s = m % p.S;
    heads[((b * p.H + h) * p.S + s) * p.dp + d] = rows[m * p.ld + col];
}
