#version 450
// Sentence embeddings: the mean of each sequence's hidden states over its unmasked tokens
// (sentence-transformers' mean pooling), and the same divided by its L2 norm. One workgroup
// per sequence; a sequence with no unmasked token gives zeros, not NaN.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in; // a power of two
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Hidden { float hidden[]; }; // [B*S][ld]
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };     // [B][mask_ld]
layout(std430, binding = 2) writeonly buffer Mean { float mean_out[]; }; // [B][ld]
layout(std430, binding = 3) writeonly buffer Unit { float unit_out[]; }; // [B][ld]

layout(push_constant) uniform Push {
    uint batch, seq_len, H, ld, mask_ld;
} p;

float masked_mean(uint b, uint j, float inv_count)
{
    float sum = 0.0;
    for (uint s = 0; s < p.seq_len; s++)
        if (mask[b * p.mask_ld + s] != 0.0) sum += hidden[(b * p.seq_len + s) * p.ld + j];
    return sum * inv_count;
}

void main()
{
    uint b = gl_WorkGroupID.x, t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    float count = 0.0;
    for (uint s = t; s < p.seq_len; s += n) count += mask[b * p.mask_ld + s] != 0.0 ? 1.0 : 0.0;
    count = reduce(count, false);
    float inv_count = count > 0.0 ? 1.0 / count : 0.0;
    // The norm needs every component first: the means are computed twice rather than kept
    // (an invocation owns H / n of them, more than registers hold for large H).
    float squares = 0.0;
    for (uint j = t; j < p.H; j += n) {
        float m = masked_mean(b, j, inv_count);
        squares += m * m;
    }
    float norm = sqrt(reduce(squares, false));
    float inv_norm = norm > 0.0 ? 1.0 / norm : 0.0;
    for (uint j = t; j < p.ld; j += n) {
        float m = j < p.H ? masked_mean(b, j, inv_count) : 0.0;
        mean_out[b * p.ld + j] = m;
        unit_out[b * p.ld + j] = m * inv_norm;
    }
}
