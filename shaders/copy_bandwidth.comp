#version 450
// Copy bandwidth: one vec4 read and one vec4 write per invocation, consecutive invocations
// on consecutive addresses (coalesced on GPUs, whole cache lines on CPUs).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Src { vec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { vec4 dst[]; };

layout(push_constant) uniform Push {
    uint count;  // vec4 elements
} p;

void main()
{
    uint i = flat_invocation();
    if (i < p.count) dst[i] = src[i];
}
