#version 450
// LayerNorm with the residual add fused in, as BERT's post-LN layers use it:
//   out[r] = (v - mean(v)) / sqrt(var(v) + eps) * gamma + beta,  v = x[r] + residual[r],
// over rows of H, one workgroup per row, two passes (mean, then variance of v - mean, which
// stays accurate where E[v^2] - E[v]^2 would cancel). The padding of each output row is
// written as zero, since the next matmul reads rows in whole vec4s.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in; // a power of two
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Residual { float residual[]; };
layout(std430, binding = 2) readonly buffer Params { float params[]; }; // gamma [ld], beta [ld]
layout(std430, binding = 3) writeonly buffer Out { float out_rows[]; };

layout(push_constant) uniform Push {
    uint rows, H, ld; // ld: the row pitch of every operand, a multiple of 4
    uint has_residual;
    float eps;
} p;

float value(uint at)
{
    return p.has_residual != 0 ? x[at] + residual[at] : x[at];
}

void main()
{
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.rows) return; // uniform over the workgroup
    uint base = row * p.ld, t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;

    float sum = 0.0;
    for (uint j = t; j < p.H; j += n) sum += value(base + j);
    float mean = reduce(sum, false) / float(p.H);
    float sq = 0.0;
    for (uint j = t; j < p.H; j += n) {
        float d = value(base + j) - mean;
        sq += d * d;
    }
    float inv = inversesqrt(reduce(sq, false) / float(p.H) + p.eps);
    for (uint j = t; j < p.ld; j += n)
        out_rows[base + j] = j < p.H ? (value(base + j) - mean) * inv * params[j] + params[p.ld + j]
                                     : 0.0;
}
