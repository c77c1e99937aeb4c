#version 450
// sentence-transformers' Pooling module (6.2: sentence_transformer/modules/pooling.py,
// forward) over hidden [B*S][ld] and a mask [B][mask_ld] (nonzero keep, 0 pad),
// one workgroup per sequence. The modes set in the bit set are concatenated in Pooling's
// order (cls, max, mean, mean_sqrt_len, weightedmean, lasttoken, first row = bits 0-6), block
// k at k * H of the output row; the columns after the last block, up to out_ld, are written zero.
//   cls:           the first kept token's row (attention_mask.argmax), row 0 when none is
//                  kept: row 0 but where include_prompt=false drops the prompt ([CLS] first).
//   max:           masked tokens count as -1e9 (v5's Pooling wrote that into them before max;
//                  6.2's -inf differs only where no token is kept: -1e9 here).
//   mean:          sum over kept tokens / max(count, 1e-9) (torch.clamp(min=1e-9)).
//   mean_sqrt_len: the same sum / sqrt(max(count, 1e-9)).
//   weightedmean:  weights position + 1 over the padded row (torch.arange(1, S + 1)) times the
//                  mask: sum(w x) / max(sum(w), 1e-9).
//   lasttoken:     the last kept token's row; zeros when there is none (Pooling gathers row 0
//                  of token_embeddings * mask, whose mask is then 0).
//   first row:     row 0 whatever the mask: not a Pooling mode, the BERT pooler's input.
// include_prompt=false is the caller's: it zeroes the prompt's positions in the mask, as
// Pooling zeroes attention_mask[:, :prompt_length], so that one recorded pass serves every
// prompt.
// RAGGED: unpadded batches (docs/ragged.md). hidden is packed [T][ld] (seq_len holds T), sequence b
// in rows [offsets[b], offsets[b+1]) (int32 [B+1], flash-attention's cu_seqlens), the mask
// packed [T] the same way; position s counts from the sequence's first row, as the padded
// path's does with right padding, so weightedmean's weights are the same. Offsets are clamped
// to [0, T] here (the host may never have seen them), so none reads past the rows. An empty
// sequence has no row 0 for cls: its whole output row is zero.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in; // a power of two
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Hidden { float hidden[]; };
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };
layout(std430, binding = 2) writeonly buffer Out { float out_rows[]; };
#ifdef RAGGED
layout(std430, binding = 3) readonly buffer Offsets { int offsets[]; };
#endif

layout(push_constant) uniform Push {
    uint batch, seq_len, H, ld, mask_ld, modes, out_ld;
} p;

const uint CLS = 1u, MAX = 2u, MEAN = 4u, MEAN_SQRT_LEN = 8u, WEIGHTED_MEAN = 16u,
           LAST_TOKEN = 32u, FIRST_ROW = 64u;

// Sequence b's first row and its length, and where its token s's mask lives: the one place
// that knows whether the batch is padded.
#ifdef RAGGED
uvec2 span(uint b)
{
    uint first = min(uint(max(offsets[b], 0)), p.seq_len);
    return uvec2(first, clamp(uint(max(offsets[b + 1u], 0)), first, p.seq_len) - first);
}

uint mask_at(uint b, uint first, uint s)
{
    return first + s;
}
#else
uvec2 span(uint b)
{
    return uvec2(b * p.seq_len, p.seq_len);
}

uint mask_at(uint b, uint first, uint s)
{
    return b * p.mask_ld + s;
}
#endif

uint token_at(uint first, uint s, uint j)
{
    return (first + s) * p.ld + j;
}

bool kept(uint b, uint first, uint s)
{
    return mask[mask_at(b, first, s)] != 0.0;
}

// Column j of mode `bit`'s block, which follows the blocks of the lower bits set.
void put(uint b, uint bit, uint j, float v)
{
    if ((p.modes & bit) != 0u)
        out_rows[b * p.out_ld + uint(bitCount(p.modes & (bit - 1u))) * p.H + j] = v;
}

void main()
{
    uint b = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (b >= p.batch) return; // uniform over the workgroup
    uvec2 seq = span(b);
    uint first = seq.x, t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x, S = seq.y;

    // last: the last kept position + 1; head: S minus the first kept position
    float count = 0.0, weights = 0.0, last = 0.0, head = 0.0;
    for (uint s = t; s < S; s += n)
        if (kept(b, first, s)) {
            count += 1.0;
            weights += float(s + 1u);
            last = float(s + 1u);
            head = max(head, float(S - s));
        }
    count = reduce(count, false);
    weights = reduce(weights, false);
    last = reduce(last, true);
    head = reduce(head, true);
    uint cls = head > 0.0 ? S - uint(head) : 0u;

    bool scan = (p.modes & (MAX | MEAN | MEAN_SQRT_LEN | WEIGHTED_MEAN)) != 0u;
    uint filled = S > 0u ? uint(bitCount(p.modes)) * p.H : 0u;
    for (uint j = t; j < p.H && S > 0u; j += n) {
        float top = NEG_INF, sum = 0.0, weighted = 0.0;
        for (uint s = 0u; scan && s < S; s++) {
            bool keep = kept(b, first, s);
            float x = hidden[token_at(first, s, j)];
            top = max(top, keep ? x : -1e9);
            sum += keep ? x : 0.0;
            weighted += keep ? float(s + 1u) * x : 0.0;
        }
        put(b, CLS, j, hidden[token_at(first, cls, j)]);
        put(b, MAX, j, top);
        put(b, MEAN, j, sum / max(count, 1e-9));
        put(b, MEAN_SQRT_LEN, j, sum / sqrt(max(count, 1e-9)));
        put(b, WEIGHTED_MEAN, j, weighted / max(weights, 1e-9));
        put(b, LAST_TOKEN, j, last > 0.0 ? hidden[token_at(first, uint(last) - 1u, j)] : 0.0);
        put(b, FIRST_ROW, j, hidden[token_at(first, 0u, j)]);
    }
    for (uint j = filled + t; j < p.out_ld; j += n)
        out_rows[b * p.out_ld + j] = 0.0;
}
