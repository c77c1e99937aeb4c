#version 450
// BERT's embeddings: word + position + token type, then LayerNorm, one workgroup per token.
//   word:   rows [first_row, first_row + rows) of the word table [vocab][ld], as fp32 or, with
//           WORD_HALF, as packed pairs of halves (unpackHalf2x16: no 16-bit storage feature);
//   tables: position [max_pos][ld] | token type [types][ld] | gamma [ld] | beta [ld], fp32,
//           at the float offsets in the push constants;
//   ids:    input ids [B*S] then token type ids [B*S] (int32, checked by the host);
//   out:    [B*S][ld], padding written as zero.
// A word table over maxStorageBufferRange comes in chunks, one dispatch each: a dispatch
// writes only the tokens whose id falls in its chunk, so the dispatches write disjoint rows.
// The position of token s of a sequence is s, as HuggingFace's default position_ids.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in; // a power of two
layout(constant_id = 1) const bool WORD_HALF = false;
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Word { float word[]; };
layout(std430, binding = 0) readonly buffer WordHalf { uint word_half[]; };
layout(std430, binding = 1) readonly buffer Tables { float tables[]; };
layout(std430, binding = 2) readonly buffer Ids { int ids[]; };
layout(std430, binding = 3) writeonly buffer Out { float out_rows[]; };

layout(push_constant) uniform Push {
    uint tokens, seq_len, H, ld;
    uint position_off, type_off, gamma_off, beta_off;
    uint first_row, rows;
    float eps;
} p;

float word_at(uint at)
{
    if (!WORD_HALF) return word[at];
    vec2 pair = unpackHalf2x16(word_half[at >> 1]);
    return (at & 1u) == 0u ? pair.x : pair.y;
}

float value(uint word_row, uint position_row, uint type_row, uint j)
{
    return word_at(word_row + j) + tables[position_row + j] + tables[type_row + j];
}

void main()
{
    uint m = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (m >= p.tokens) return; // uniform over the workgroup
    uint id = uint(ids[m]);
    if (id < p.first_row || id - p.first_row >= p.rows) return; // another chunk's token
    uint word_row = (id - p.first_row) * p.ld;
    uint position_row = p.position_off + (m % p.seq_len) * p.ld;
    uint type_row = p.type_off + uint(ids[p.tokens + m]) * p.ld;
    uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;

    float sum = 0.0;
    for (uint j = t; j < p.H; j += n) sum += value(word_row, position_row, type_row, j);
    float mean = reduce(sum, false) / float(p.H);
    float sq = 0.0;
    for (uint j = t; j < p.H; j += n) {
        float d = value(word_row, position_row, type_row, j) - mean;
        sq += d * d;
    }
    float inv = inversesqrt(reduce(sq, false) / float(p.H) + p.eps);
    for (uint j = t; j < p.ld; j += n) {
        float v = (value(word_row, position_row, type_row, j) - mean) * inv;
        out_rows[m * p.ld + j] =
            j < p.H ? v * tables[p.gamma_off + j] + tables[p.beta_off + j] : 0.0;
    }
}
