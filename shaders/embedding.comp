#version 450
// BERT's embeddings: word + position + token type, then LayerNorm, one workgroup per token.
//   word:   rows [first_row, first_row + rows) of the word table [vocab][ld], as fp32 or, with
//           WORD_HALF, as packed pairs of halves (unpackHalf2x16: no 16-bit storage feature);
//   tables: position [max_pos][ld] | token type [types][ld] | gamma [ld] | beta [ld], fp32,
//           at the float offsets in the push constants;
//   ids:    input ids [B*S], token type ids [B*S], then a flag (int32);
//   out:    [B*S][ld], padding written as zero.
// A word table over maxStorageBufferRange comes in chunks, one dispatch each: a dispatch
// writes only the tokens whose id falls in its chunk, so the dispatches write disjoint rows.
// Ids in device tensors never reach the host, so a bad one must still give a defined result:
// an input id outside [0, vocab) is in no chunk, and the first chunk's dispatch writes its row
// as zeros; a token type outside [0, types) would read past the type table, and is read as 0.
// Either sets its bit in the flag (BAD_ID, BAD_TYPE), for the host to report after the pass.
// The position of token s of a sequence is s, as HuggingFace's default position_ids.
// RAGGED: unpadded batches (docs/ragged.md). The sequences' tokens are
// packed, so no stride gives a token's position: the host writes it, and ids holds input ids
// [T], token type ids [T], positions [T], then the flag. A position outside [0, positions) is
// treated as a bad token type is: read as 0, with BAD_POSITION set in the flag.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in; // a power of two
layout(constant_id = 1) const bool WORD_HALF = false;
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Word { float word[]; };
layout(std430, binding = 0) readonly buffer WordHalf { uint word_half[]; };
layout(std430, binding = 1) readonly buffer Tables { float tables[]; };
layout(std430, binding = 2) buffer Ids { int ids[]; };
layout(std430, binding = 3) writeonly buffer Out { float out_rows[]; };

layout(push_constant) uniform Push {
    uint tokens, seq_len, H, ld;
    uint position_off, type_off, gamma_off, beta_off;
    uint first_row, rows;
    uint vocab, types;
    float eps;
    uint positions; // the position table's rows (RAGGED only)
} p;

const int BAD_ID = 1, BAD_TYPE = 2, BAD_POSITION = 4; // src/ops/ops.h's VKB_EMBEDDING_BAD_*

#ifdef RAGGED
const uint ID_BLOCKS = 3u; // the blocks of T ints before the flag
uint position_of(uint m)
{
    return uint(ids[2u * p.tokens + m]); // a negative position wraps past the table
}
#else
const uint ID_BLOCKS = 2u;
uint position_of(uint m)
{
    return m % p.seq_len;
}
#endif

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
    if (m >= p.tokens) return; // uniform over the workgroup, as every return below
    uint id = uint(ids[m]), type_id = uint(ids[p.tokens + m]); // a negative id wraps past both
    uint position = position_of(m);
    bool bad_id = id >= p.vocab, bad_type = type_id >= p.types;
#ifdef RAGGED
    bool bad_position = position >= p.positions;
#else
    bool bad_position = false; // m % seq_len, and the host keeps seq_len within the table
#endif
    bool mine = bad_id ? p.first_row == 0u : id >= p.first_row && id - p.first_row < p.rows;
    if (!mine) return; // another chunk's token
    uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    // Tokens of different workgroups set different bits: an atomicOr keeps them all, where
    // plain stores of each token's bits could overwrite one another.
    int bits = (bad_id ? BAD_ID : 0) | (bad_type ? BAD_TYPE : 0) |
               (bad_position ? BAD_POSITION : 0);
    if (bits != 0 && t == 0u) atomicOr(ids[ID_BLOCKS * p.tokens], bits);
    if (bad_id) {
        for (uint j = t; j < p.ld; j += n) out_rows[m * p.ld + j] = 0.0;
        return;
    }
    uint word_row = (id - p.first_row) * p.ld;
    uint position_row = p.position_off + (bad_position ? 0u : position) * p.ld;
    uint type_row = p.type_off + (bad_type ? 0u : type_id) * p.ld;

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
