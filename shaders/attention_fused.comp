#version 450
// Fused attention (flash-attention style, Dao et al. 2022): for each query row, the keys are
// visited in blocks of TK with a running max and sum (online softmax), so the S x S scores
// are never written and any sequence length fits. Masks, the causal flag, fully masked rows
// (zero output) and Philox dropout follow ATTENTION.md exactly as shaders/softmax.comp does.
//   Q, K, V: rows of the projected activations, [B*S, ld] each at q_off, k_off, v_off,
//            with head h in columns h*Dp .. h*Dp+D (Dp = D rounded up to 4; Q already scaled
//            by 1/sqrt(D) through its weights).
//   O:       [B*S, ld_out], head h in columns h*Dp.., its padding written as zeros.
// One invocation owns one query row; neighbouring invocations own neighbouring rows of the
// same head, so they read the same K and V rows (a broadcast on GPUs, a cache hit on CPUs).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// D4_MAX: the head size in vec4 this variant holds in registers (a compile-time constant so
// that the arrays below stay in registers); the real D4 is a specialization constant.
#ifndef D4_MAX
#define D4_MAX 16
#endif
#define TK 8 // keys per block: one rescale of the accumulator per block

layout(local_size_x_id = 0) in;
#include "common.glsl"
layout(constant_id = 1) const uint D4 = D4_MAX;

layout(std430, binding = 0) readonly buffer Rows { vec4 rows[]; };
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };
layout(std430, binding = 2) writeonly buffer Out { vec4 out_rows[]; };

const uint HAS_MASK = 1u, CAUSAL = 2u, DROPOUT = 4u;

layout(push_constant) uniform Push {
    uint S, H, D;
    uint ld4, q_off4, k_off4, v_off4; // in vec4
    uint ld_out4;
    uint mask_b, mask_h, mask_i, mask_j;
    uint flags;
    uint drop_below;
    float keep_scale;
    uint seed_lo, seed_hi;
} p;

bool kept(uint b, uint h, uint i, uint j)
{
    if ((p.flags & CAUSAL) != 0 && j > i) return false;
    if ((p.flags & HAS_MASK) == 0) return true;
    return mask[b * p.mask_b + h * p.mask_h + i * p.mask_i + j * p.mask_j] != 0.0;
}

float dropout_factor(uint b, uint h, uint i, uint j)
{
    if ((p.flags & DROPOUT) == 0) return 1.0;
    uvec4 r = philox4x32_10(uvec4(j / 4, i, h, b), uvec2(p.seed_lo, p.seed_hi));
    return (r[j % 4] >> 8) < p.drop_below ? 0.0 : p.keep_scale;
}

void main()
{
    uint bh = gl_WorkGroupID.y, b = bh / p.H, h = bh % p.H;
    uint i = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint qi = min(i, p.S - 1); // rows past S compute a copy of the last and write nothing
    uint head4 = h * D4;
    uint key_base = b * p.S;

    vec4 q[D4_MAX], o[D4_MAX];
    uint q_at = p.q_off4 + (key_base + qi) * p.ld4 + head4;
    [[unroll]] for (uint c = 0; c < D4; c++) {
        q[c] = rows[q_at + c];
        o[c] = vec4(0);
    }
    float run_max = NEG_INF, run_sum = 0.0;
    // Causal rows need no key past themselves.
    uint end = (p.flags & CAUSAL) != 0 ? qi + 1 : p.S;

    for (uint j0 = 0; j0 < end; j0 += TK) {
        float s[TK];
        float block_max = NEG_INF;
        [[unroll]] for (uint t = 0; t < TK; t++) {
            uint j = j0 + t;
            s[t] = NEG_INF;
            if (j < end && kept(b, h, qi, j)) {
                uint k_at = p.k_off4 + (key_base + j) * p.ld4 + head4;
                vec4 acc = vec4(0);
                [[unroll]] for (uint c = 0; c < D4; c++) acc = fma(q[c], rows[k_at + c], acc);
                s[t] = acc.x + acc.y + acc.z + acc.w;
                block_max = max(block_max, s[t]);
            }
        }
        if (block_max == NEG_INF) continue; // every key of the block masked
        float new_max = max(run_max, block_max);
        float rescale = exp(run_max - new_max); // 0 while nothing was kept before
        run_sum *= rescale;
        [[unroll]] for (uint c = 0; c < D4; c++) o[c] *= rescale;
        run_max = new_max;
        [[unroll]] for (uint t = 0; t < TK; t++) {
            if (s[t] == NEG_INF) continue;
            uint j = j0 + t;
            float w = exp(s[t] - new_max);
            run_sum += w; // the softmax denominator counts dropped weights too
            float wv = w * dropout_factor(b, h, qi, j);
            uint v_at = p.v_off4 + (key_base + j) * p.ld4 + head4;
            [[unroll]] for (uint c = 0; c < D4; c++) o[c] = fma(vec4(wv), rows[v_at + c], o[c]);
        }
    }

    if (i >= p.S) return;
    // A row with no key kept has run_sum 0: its output is the zero vector (ATTENTION.md).
    float inv = run_sum > 0.0 ? 1.0 / run_sum : 0.0;
    uint o_at = (key_base + i) * p.ld_out4 + head4;
    uint tail = p.D % 4;
    [[unroll]] for (uint c = 0; c < D4; c++) {
        vec4 v = o[c] * inv;
        if (c == D4 - 1 && tail != 0) v = mix(vec4(0), v, lessThan(uvec4(0, 1, 2, 3), uvec4(tail)));
        out_rows[o_at + c] = v;
    }
}
