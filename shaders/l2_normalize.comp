#version 450
// Rows divided by their Euclidean norm, as torch.nn.functional.normalize(p=2, dim=1) does for
// sentence-transformers' Normalize module: x / max(||x||_2, eps) with torch's default eps
// 1e-12, so a zero row stays zero rather than NaN. One workgroup per row; in place when both
// bindings are the same range (each invocation reads every element it writes, and only those,
// before writing it). The padding of each output row is written as zero.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in; // a power of two
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer In { float x[]; };         // [rows][ld]
layout(std430, binding = 1) writeonly buffer Out { float out_rows[]; }; // [rows][ld]

layout(push_constant) uniform Push {
    uint rows, width, ld;
} p;

void main()
{
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.rows) return; // uniform over the workgroup
    uint base = row * p.ld, t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    float squares = 0.0;
    for (uint j = t; j < p.width; j += n) squares += x[base + j] * x[base + j];
    float inv = 1.0 / max(sqrt(reduce(squares, false)), 1e-12);
    for (uint j = t; j < p.ld; j += n) out_rows[base + j] = j < p.width ? x[base + j] * inv : 0.0;
}
