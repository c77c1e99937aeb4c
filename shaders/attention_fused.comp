#version 450
// Fused attention (flash-attention style, Dao et al. 2022): for each query row, the keys are
// visited in blocks of TK with a running max and sum (online softmax), so the S x S scores
// are never written and any sequence length fits. Masks, the causal flag, fully masked rows
// (zero output) and Philox dropout follow docs/semantics.md exactly as shaders/softmax.comp
// does.
//   Q, K, V: rows of the projected activations, [B*S, ld] each at q_off, k_off, v_off,
//            with head h in columns h*Dp .. h*Dp+D (Dp = D rounded up to 4, the padding
//            zero; Q already scaled by 1/sqrt(D) through its weights).
//   O:       [B*S, ld_out], head h in columns h*Dp.., its padding written as zeros.
// One invocation owns one query row; neighbouring invocations own neighbouring rows of the
// same head, so they read the same K and V rows (a broadcast on GPUs, a cache hit on CPUs).
//
// The head length is a specialization constant, and registers hold at most a chunk of it
// (CHUNK_MAX vec4, a 64-float head: BERT's), as ggml's flash attention keeps its head sizes
// (flash_attn_base.glsl): one module serves every head, and no driver compiles a fully
// unrolled 256-float head (SwiftShader's compiler ran out of memory on those).
// A longer head runs as SLICES column slices of the output (workgroups along z): each slice
// scores against the whole head, chunk by chunk with q reloaded, and accumulates its own
// CHUNK4 columns of V. A head that fits is one slice holding q for the whole row.
// The loops over a chunk and over a block of keys have bounds that are constant once
// specialized, and no branch inside: on CPU-backed devices a branch turns every update into
// a masked select, and a loop that does not unroll puts q and o in memory.
//
// RAGGED: unpadded batches (docs/ragged.md). The rows are packed [T, ld]
// (S in the push constants holds T), sequence b in rows [offsets[b], offsets[b+1]) (int32
// [B+1], flash-attention's cu_seqlens, in the mask's binding: a sequence's keys are exactly its
// rows, so no mask is needed); span() gives the workgroup's first row and length in place of
// b * S and S. The grid is sized for the longest sequence: a workgroup past its own sequence's
// end returns at once. Offsets are clamped to [0, T] here (the host may never have seen them),
// so no row past T is read or written.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#define CHUNK_MAX 16 // the most vec4 of a head held in registers
#define TK 8 // keys per block: one rescale of the accumulator per block

layout(local_size_x_id = 0) in;
// fp16 activations (VKBERT_PRECISION_FP16): the rows read through an fp16 view (texel format,
// or packed pairs), O written as packed pairs.
layout(constant_id = 1) const bool ROWS_HALF = false;
layout(constant_id = 2) const bool OUT_HALF = false;
layout(constant_id = 3) const uint D4 = 16; // the head pitch Dp in vec4
layout(constant_id = 4) const uint CHUNK4 = 16; // vec4 per slice, at most CHUNK_MAX
const uint SLICES = (D4 + CHUNK4 - 1) / CHUNK4;
#include "common.glsl"
#include "half_io.glsl"

#ifdef SUBGROUP_KV
// Every lane of a subgroup reads the same K and V rows (lanes are query rows): each lane
// fetches a share of a chunk and the subgroup passes them round by shuffles, instead of each
// lane gathering the whole chunk (shaders/matmul_simd.comp does the same for A). Needs one
// subgroup making up the workgroup (src/ops/attention_fused.c checks the sizes), so the
// workgroup size is the subgroup's. A lane past the chunk re-reads its last vec4 rather than
// the slack past the rows.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define LANES gl_WorkGroupSize.x
#define SHARES ((CHUNK4 + LANES - 1) / LANES)
#define LOAD_SHARED(mine, at)                                                                     \
    [[unroll]] for (uint r = 0; r < SHARES; r++) {                                                \
        uint c = r * LANES + gl_SubgroupInvocationID;                                             \
        mine[r] = ROW(at + (CHUNK4 % LANES == 0 ? c : min(c, CHUNK4 - 1)));                       \
    }
#define SHARED(mine, c) subgroupShuffle(mine[(c) / LANES], (c) % LANES)
#endif

#ifdef TEXEL_LOADS // simd family: a vectorized gather on lavapipe (docs/drivers.md)
layout(binding = 0) uniform samplerBuffer rows_texels;
#define ROW(i) texelFetch(rows_texels, int(i))
#else
layout(std430, binding = 0) readonly buffer Rows { vec4 rows[]; };
layout(std430, binding = 0) readonly buffer RowsHalf { uvec2 rows_half[]; };
#define ROW(i) (ROWS_HALF ? unpack_half4(rows_half[i]) : rows[i])
#endif
#ifdef RAGGED
layout(std430, binding = 1) readonly buffer Offsets { int offsets[]; };
#else
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };
#endif
layout(std430, binding = 2) writeonly buffer Out { vec4 out_rows[]; };
layout(std430, binding = 2) writeonly buffer OutHalf { uvec2 out_half[]; };

const uint HAS_MASK = 1u, CAUSAL = 2u, DROPOUT = 4u;
// ADDITIVE: HuggingFace's BERT mask: a masked key scores the lowest float instead of -inf, so
// a row with every key masked averages all keys (see shaders/softmax.comp).
const uint ADDITIVE = 8u;
const float LOWEST = -3.40282347e38;

layout(push_constant) uniform Push {
    uint S, H;
    uint ld4, q_off4, k_off4, v_off4; // in vec4
    uint ld_out4;
    uint mask_b, mask_h, mask_i, mask_j;
    uint flags;
    uint drop_below;
    float keep_scale;
    uint seed_lo, seed_hi;
} p;

// The workgroup's sequence: its first row and its length (as shaders/pool.comp's span()).
#ifdef RAGGED
uvec2 span(uint b)
{
    uint first = min(uint(max(offsets[b], 0)), p.S);
    return uvec2(first, clamp(uint(max(offsets[b + 1u], 0)), first, p.S) - first);
}
#else
uvec2 span(uint b)
{
    return uvec2(b * p.S, p.S);
}
#endif

uint S; // the sequence's length, span(b).y, set once at the start of main

bool kept(uint b, uint h, uint i, uint j)
{
    bool keep = j < S;
    if ((p.flags & CAUSAL) != 0) keep = keep && j <= i;
#ifndef RAGGED // the host sets no HAS_MASK with ragged rows
    if ((p.flags & HAS_MASK) != 0)
        keep = keep && mask[b * p.mask_b + h * p.mask_h + i * p.mask_i + min(j, S - 1) * p.mask_j] != 0.0;
#endif
    return keep;
}

float dropout_factor(uint b, uint h, uint i, uint j)
{
    uvec4 r = philox4x32_10(uvec4(j / 4, i, h, b), uvec2(p.seed_lo, p.seed_hi));
    return (r[j % 4] >> 8) < p.drop_below ? 0.0 : p.keep_scale;
}

// Chunk `cc` of the query row at q_at, its columns past the head zero: so the K columns read
// past the head (the next head's, or slack at the end of the buffer) add nothing.
void load_query(uint q_at, uint cc, out vec4 q[CHUNK_MAX])
{
    [[unroll]] for (uint c = 0; c < CHUNK4; c++) {
        uint col = cc * CHUNK4 + c;
        q[c] = col < D4 ? ROW(q_at + col) : vec4(0);
    }
}

// scores[t] = q . K[j0 + t] over the whole head; keys past S read the last row. Where the head
// is one chunk, q holds it already; else each chunk of q is reloaded here, once per key (from
// the cache): one accumulator live at a time keeps the registers for q and o.
void score_block(uint j0, uint q_at, uint k_row, inout vec4 q[CHUNK_MAX], out float scores[TK])
{
    [[unroll]] for (uint t = 0; t < TK; t++) {
        uint k_at = k_row + min(j0 + t, S - 1) * p.ld4;
        vec4 acc = vec4(0);
        for (uint cc = 0; cc < SLICES; cc++) {
            if (SLICES > 1) load_query(q_at, cc, q);
#ifdef SUBGROUP_KV
            vec4 k_mine[CHUNK_MAX];
            LOAD_SHARED(k_mine, k_at + cc * CHUNK4)
            [[unroll]] for (uint c = 0; c < CHUNK4; c++) acc = fma(q[c], SHARED(k_mine, c), acc);
#else
            [[unroll]] for (uint c = 0; c < CHUNK4; c++) acc = fma(q[c], ROW(k_at + cc * CHUNK4 + c), acc);
#endif
        }
        scores[t] = acc.x + acc.y + acc.z + acc.w;
    }
}

void main()
{
    uint bh = gl_WorkGroupID.y, b = bh / p.H, h = bh % p.H;
    uint slice = gl_WorkGroupID.z * CHUNK4; // the first column (vec4) of this slice's output
    uint first = gl_WorkGroupID.x * gl_WorkGroupSize.x;
    uvec2 seq = span(b);
    S = seq.y;
    if (first >= S) return; // only with RAGGED, a shorter sequence; uniform over the workgroup
    uint i = first + gl_LocalInvocationID.x;
    uint qi = min(i, S - 1); // rows past S compute a copy of the last and write nothing
    uint head4 = h * D4;
    uint key_base = seq.x;
    uint q_at = p.q_off4 + (key_base + qi) * p.ld4 + head4;
    uint k_row = p.k_off4 + key_base * p.ld4 + head4;
    uint v_row = p.v_off4 + key_base * p.ld4 + head4 + slice;

    vec4 q[CHUNK_MAX], o[CHUNK_MAX];
    if (SLICES == 1) load_query(q_at, 0, q);
    [[unroll]] for (uint c = 0; c < CHUNK4; c++) o[c] = vec4(0);
    float run_max = NEG_INF, run_sum = 0.0;
    float masked = (p.flags & ADDITIVE) != 0 ? LOWEST : NEG_INF;
    // The same bound for the whole workgroup; causal rows need no key past the group's last,
    // except with the additive mask, where a row without keys averages all of them.
    bool skip_future = (p.flags & CAUSAL) != 0 && (p.flags & ADDITIVE) == 0;
    uint end = skip_future ? min(S, first + gl_WorkGroupSize.x) : S;
    bool dropout = (p.flags & DROPOUT) != 0;

    for (uint j0 = 0; j0 < end; j0 += TK) {
        float s[TK];
        score_block(j0, q_at, k_row, q, s);
        float block_max = NEG_INF;
        [[unroll]] for (uint t = 0; t < TK; t++) {
            bool keep = kept(b, h, qi, j0 + t);
            s[t] = keep ? s[t] : j0 + t < S ? masked : NEG_INF;
            block_max = max(block_max, s[t]);
        }
        float new_max = max(run_max, block_max);
        // Nothing kept so far: no rescale, and exp(-inf - -inf) must not make a NaN.
        float rescale = new_max == NEG_INF ? 1.0 : exp(run_max - new_max);
        run_sum *= rescale;
        [[unroll]] for (uint c = 0; c < CHUNK4; c++) o[c] *= rescale;
        run_max = new_max;
        [[unroll]] for (uint t = 0; t < TK; t++) {
            float w = s[t] == NEG_INF ? 0.0 : exp(s[t] - new_max);
            run_sum += w; // the softmax denominator counts dropped weights too
            if (dropout) w *= dropout_factor(b, h, qi, j0 + t);
            uint v_at = v_row + min(j0 + t, S - 1) * p.ld4;
#ifdef SUBGROUP_KV
            vec4 v_mine[CHUNK_MAX];
            LOAD_SHARED(v_mine, v_at)
            [[unroll]] for (uint c = 0; c < CHUNK4; c++) o[c] = fma(vec4(w), SHARED(v_mine, c), o[c]);
#else
            [[unroll]] for (uint c = 0; c < CHUNK4; c++) o[c] = fma(vec4(w), ROW(v_at + c), o[c]);
#endif
        }
    }

    if (i >= S) return;
    // A row with no key kept has run_sum 0: its output is the zero vector (docs/semantics.md).
    float inv = run_sum > 0.0 ? 1.0 / run_sum : 0.0;
    uint o_at = (key_base + i) * p.ld_out4 + head4 + slice;
    [[unroll]] for (uint c = 0; c < CHUNK4; c++) {
        if (slice + c >= D4) break;
        if (OUT_HALF)
            out_half[o_at + c] = pack_half4(o[c] * inv);
        else
            out_rows[o_at + c] = o[c] * inv;
    }
}
