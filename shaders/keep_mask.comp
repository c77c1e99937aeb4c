#version 450
// The encoder's attention and pooling masks from a caller's attention mask, in place: rows
// [batch][ld] of `keep` hold the caller's int32 or float32 values in their first seq_len
// columns; each becomes 1.0 (keep) or 0.0 (masked) there and in `pooling`, and the columns
// past seq_len become 0.0 in both. The rule is the host API's (`mask != 0` keeps): a value
// keeps when any of its `nonzero` bits is set, all 32 for int32, all but the sign for float32
// (-0.0 masks). Testing bits rather than `value != 0.0` keeps a denormal a keep on devices
// that flush denormals to zero. One invocation per element: each reads the one it writes.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
#include "common.glsl"

layout(std430, binding = 0) buffer Keep { uint keep[]; };               // [batch][ld]
layout(std430, binding = 1) writeonly buffer Pooling { float pooling[]; }; // [batch][ld]

layout(push_constant) uniform Push {
    uint batch, seq_len, ld, nonzero;
} p;

void main()
{
    uint i = flat_invocation();
    if (i >= p.batch * p.ld) return;
    bool kept = i % p.ld < p.seq_len && (keep[i] & p.nonzero) != 0u;
    float v = kept ? 1.0 : 0.0;
    keep[i] = floatBitsToUint(v);
    pooling[i] = v;
}
