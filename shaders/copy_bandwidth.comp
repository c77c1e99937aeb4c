#version 450
// Copy bandwidth: vec4 reads and writes, consecutive invocations on consecutive addresses
// (coalesced on GPUs, whole cache lines on CPUs). A grid-stride loop over a bounded grid:
// CPU drivers pay a fixed cost per workgroup that one vec4 per invocation would measure
// instead of memory.
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
    uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
    for (uint i = flat_invocation(); i < p.count; i += stride)
        dst[i] = src[i];
}
