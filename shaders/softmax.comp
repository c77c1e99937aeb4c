#version 450
// Masked softmax over each row of the scores [B,H,S,ld], in place, one workgroup per row:
//   p_ij = softmax_j(scale * s_ij, over the j kept by the mask and the causal flag),
// then training-mode dropout. A row with every key masked becomes all zeros (docs/semantics.md),
// so its attention output is the zero vector. Reductions: subgroup operations, then shared
// memory across subgroups; built with NO_SUBGROUP_ARITHMETIC, a shared-memory tree.
#extension GL_GOOGLE_include_directive : require
// Before the includes: gl_WorkGroupSize is a constant (1,1,1) until this line.
layout(local_size_x_id = 0) in; // a power of two
#include "common.glsl"
#include "reduce.glsl"


layout(std430, binding = 0) buffer Scores { float scores[]; };
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };

const uint HAS_MASK = 1u, CAUSAL = 2u, DROPOUT = 4u;
// ADDITIVE: HuggingFace's BERT mask, (1 - mask) * float_min added to the scores: a masked key
// scores the lowest float instead of -inf, so a row with every key masked averages all keys
// uniformly instead of giving zeros (docs/semantics.md, "The BERT encoder").
const uint ADDITIVE = 8u;
const float LOWEST = -3.40282347e38;

layout(push_constant) uniform Push {
    uint S, ld, H;
    float scale;
    uint mask_b, mask_h, mask_i, mask_j; // element strides, 0 where the mask broadcasts
    uint flags;
    uint drop_below;   // a weight is dropped when its 24 random bits are below this
    float keep_scale;  // 1 / (1 - p)
    uint seed_lo, seed_hi;
} p;


bool kept(uint b, uint h, uint i, uint j)
{
    if ((p.flags & CAUSAL) != 0 && j > i) return false;
    if ((p.flags & HAS_MASK) == 0) return true;
    return mask[b * p.mask_b + h * p.mask_h + i * p.mask_i + j * p.mask_j] != 0.0;
}

// Philox counter (j/4, i, h, b), key = the seed; word j%4 decides element j.
bool dropped(uint b, uint h, uint i, uint j)
{
    uvec4 r = philox4x32_10(uvec4(j / 4, i, h, b), uvec2(p.seed_lo, p.seed_hi));
    return (r[j % 4] >> 8) < p.drop_below;
}

void main()
{
    uint i = gl_WorkGroupID.x, bh = gl_WorkGroupID.y;
    uint b = bh / p.H, h = bh % p.H;
    uint row = (bh * p.S + i) * p.ld;
    uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;

    float masked = (p.flags & ADDITIVE) != 0 ? LOWEST : NEG_INF;
    float row_max = NEG_INF;
    for (uint j = t; j < p.S; j += n)
        row_max = max(row_max, kept(b, h, i, j) ? scores[row + j] * p.scale : masked);
    row_max = reduce(row_max, true);

    if (row_max == NEG_INF) { // every key masked: uniform across the workgroup
        for (uint j = t; j < p.S; j += n) scores[row + j] = 0.0;
        return;
    }

    float sum = 0.0;
    for (uint j = t; j < p.S; j += n) {
        float e = exp((kept(b, h, i, j) ? scores[row + j] * p.scale : masked) - row_max);
        scores[row + j] = e;
        sum += e;
    }
    float inv = 1.0 / reduce(sum, false);

    bool dropout = (p.flags & DROPOUT) != 0;
    for (uint j = t; j < p.S; j += n) {
        float v = scores[row + j] * inv;
        if (dropout) v = dropped(b, h, i, j) ? 0.0 : v * p.keep_scale;
        scores[row + j] = v;
    }
}
