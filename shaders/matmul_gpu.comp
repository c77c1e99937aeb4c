#version 450
#extension GL_GOOGLE_include_directive : require
// The gpu family's matmul, for discrete and integrated GPUs: C[z] = A[z] * op(B[z]) + bias,
// with the operands, bindings and push constants of shaders/matmul.comp. A is [M,K], B is
// [K,N] (B_TRANS false) or [N,K] (B_TRANS true), C is [M,N]; pitches and batch strides in vec4.
//
// Each workgroup computes a BM x BN block of C, BM = WG_Y*TM rows and BN = 4*WG_X*TN4 columns.
// It walks K in steps of BK: the whole workgroup copies a BM x BK slice of A and a BK x BN slice
// of B into shared memory with vec4 global loads, then every invocation multiplies its TM x
// 4*TN4 register micro-tile out of shared memory. Each A value read from shared memory is used
// 4*TN4 times and each B value TM times, which is what takes the kernel off the memory wall.
// The next slice is loaded into registers while the current one is multiplied, so global
// latency overlaps arithmetic with one set of shared buffers.
//
// Layout in shared memory, both [k][row-or-column], padded:
//   As[k][m]: A transposed, so that an invocation reads its TM consecutive rows as TM/4 vec4
//     (TM is a multiple of 4). Invocations of one subgroup that differ in gl_LocalInvocationID.y
//     read neighbouring vec4, the others the same one (a broadcast): no bank conflict for any
//     subgroup size.
//   Bs[k][n]: an invocation reads vec4 columns x, x + WG_X, ...: neighbouring invocations,
//     neighbouring vec4.
//   The transposing copies (A always, B when B_TRANS) store 4 scalars per vec4 loaded: lanes
//   4 k apart would hit one bank with an unpadded row of BM floats (BM is a multiple of 32),
//   a 4-way conflict. One vec4 of padding per row (BM+4 floats) halves it to 2-way, the best
//   that keeps rows vec4-aligned for the reads, which run BK*(TM/4+TN4) times per slice
//   against the stores' 4.
//
// Masking: rows past M, columns past N and k past K are loaded as zero, so that padding (which
// may hold NaN) and memory past the operands are never multiplied: both operands are zeroed,
// since 0 * NaN is NaN. Nothing is stored outside C's rows and vec4 columns.
//
// Version 1. The kernel without shared memory (shaders/matmul.comp) stays the fallback for
// devices whose limits do not fit any tile here (src/tune/tune.c).
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 0) const uint WG_X = 16;
layout(constant_id = 1) const uint WG_Y = 16;
layout(constant_id = 2) const uint TM = 4;  // rows per invocation, a multiple of 4
layout(constant_id = 3) const uint TN4 = 1; // vec4 columns per invocation
layout(constant_id = 4) const bool B_TRANS = false;
layout(constant_id = 5) const bool HAS_BIAS = false;
layout(constant_id = 6) const uint BK = 16; // a multiple of 4
layout(constant_id = 9) const bool A_HALF = false; // A stored as fp16 (packed pairs)
layout(constant_id = 10) const bool B_HALF = false; // B (the weights) too: no 16-bit storage

const uint WG = WG_X * WG_Y;
const uint BM = WG_Y * TM;
const uint BN4 = WG_X * TN4;
const uint BK4 = BK / 4;
const uint SA4 = BM / 4 + 1; // row pitch of As in vec4: one vec4 of padding, see above
const uint SB4 = BN4 + 1;    // row pitch of Bs in vec4

layout(std430, binding = 0) readonly buffer ABuffer { vec4 a[]; };
layout(std430, binding = 0) readonly buffer AHalfBuffer { uvec2 a_half[]; };
layout(std430, binding = 1) readonly buffer BBuffer { vec4 b[]; };
layout(std430, binding = 1) readonly buffer BHalfBuffer { uvec2 b_half[]; };
#define LOAD_B(i) (B_HALF ? unpack_half4(b_half[i]) : b[i])

layout(push_constant) uniform Push {
    uint M, N, K;
    uint lda4, ldb4, ldc4;
    uint batch_a4, batch_b4, batch_c4, batch_bias4;
} p;
#include "epilogue.glsl"

shared vec4 As[BK * SA4];
shared vec4 Bs[BK * SB4];

// Global vec4 chunks of one slice, and how many each invocation carries in registers.
const uint A_CHUNKS = BM * BK4;
const uint B_CHUNKS = BK * BN4; // = BN rows of BK4 when B_TRANS
const uint A_LOADS = (A_CHUNKS + WG - 1) / WG;
const uint B_LOADS = (B_CHUNKS + WG - 1) / WG;
vec4 a_next[A_LOADS];
vec4 b_next[B_LOADS];

vec4 acc[TM][TN4];

uint tid, m0, n04, a_base, b_base, n4;

// The vec4 of k4 with the components at k >= K zeroed; k4 itself must be below ceil(K/4).
vec4 mask_k(vec4 v, uint k4)
{
    uint valid = p.K - k4 * 4;
    return valid >= 4 ? v : mix(vec4(0), v, lessThan(uvec4(0, 1, 2, 3), uvec4(valid)));
}

// A row-major operand with K contiguous (A, or B when B_TRANS): chunk q of the slice at k0
// is row q / BK4 of the tile, vec4 q % BK4 along k; consecutive invocations read along a row.
vec4 load_rows(bool from_b, uint base, uint ld4, uint row0, uint rows, uint k04, uint q)
{
    uint r = row0 + q / BK4, k4 = k04 + q % BK4;
    if (r >= rows || k4 * 4 >= p.K) return vec4(0);
    if (from_b) return mask_k(LOAD_B(base + r * ld4 + k4), k4);
    uint at = base + r * ld4 + k4;
    return mask_k(A_HALF ? unpack_half4(a_half[at]) : a[at], k4);
}

// B [K,N]: chunk q is row q / BN4 of the slice, vec4 column q % BN4.
vec4 load_b_kn(uint k0, uint q)
{
    uint k = k0 + q / BN4, col4 = n04 + q % BN4;
    if (k >= p.K || col4 >= n4) return vec4(0);
    vec4 v = LOAD_B(b_base + k * p.ldb4 + col4);
    uint valid = p.N - col4 * 4;
    return valid >= 4 ? v : mix(vec4(0), v, lessThan(uvec4(0, 1, 2, 3), uvec4(valid)));
}

void load_slice(uint k0)
{
    [[unroll]] for (uint l = 0; l < A_LOADS; l++) {
        uint q = tid + l * WG;
        a_next[l] = q < A_CHUNKS ? load_rows(false, a_base, p.lda4, m0, p.M, k0 / 4, q) : vec4(0);
    }
    [[unroll]] for (uint l = 0; l < B_LOADS; l++) {
        uint q = tid + l * WG;
        if (q >= B_CHUNKS)
            b_next[l] = vec4(0);
        else if (B_TRANS)
            b_next[l] = load_rows(true, b_base, p.ldb4, n04 * 4, p.N, k0 / 4, q);
        else
            b_next[l] = load_b_kn(k0, q);
    }
}

void store_slice()
{
    [[unroll]] for (uint l = 0; l < A_LOADS; l++) {
        uint q = tid + l * WG;
        if (q >= A_CHUNKS) break;
        uint r = q / BK4, k = (q % BK4) * 4;
        [[unroll]] for (uint cc = 0; cc < 4; cc++) As[(k + cc) * SA4 + r / 4][r % 4] = a_next[l][cc];
    }
    [[unroll]] for (uint l = 0; l < B_LOADS; l++) {
        uint q = tid + l * WG;
        if (q >= B_CHUNKS) break;
        if (B_TRANS) {
            uint r = q / BK4, k = (q % BK4) * 4;
            [[unroll]] for (uint cc = 0; cc < 4; cc++)
                Bs[(k + cc) * SB4 + r / 4][r % 4] = b_next[l][cc];
        } else {
            Bs[(q / BN4) * SB4 + q % BN4] = b_next[l];
        }
    }
}

void multiply_slice()
{
    uint ty = gl_LocalInvocationID.y, tx = gl_LocalInvocationID.x;
    [[unroll]] for (uint k = 0; k < BK; k++) {
        vec4 av[TM / 4];
        [[unroll]] for (uint i4 = 0; i4 < TM / 4; i4++) av[i4] = As[k * SA4 + ty * (TM / 4) + i4];
        vec4 bv[TN4];
        [[unroll]] for (uint j = 0; j < TN4; j++) bv[j] = Bs[k * SB4 + tx + j * WG_X];
        [[unroll]] for (uint i = 0; i < TM; i++)
            [[unroll]] for (uint j = 0; j < TN4; j++)
                acc[i][j] = fma(vec4(av[i / 4][i % 4]), bv[j], acc[i][j]);
    }
}

void main()
{
    uint z = gl_WorkGroupID.z;
    tid = gl_LocalInvocationID.y * WG_X + gl_LocalInvocationID.x;
    m0 = gl_WorkGroupID.y * BM;
    n04 = gl_WorkGroupID.x * BN4;
    n4 = (p.N + 3) / 4;
    a_base = z * p.batch_a4;
    b_base = z * p.batch_b4;
    [[unroll]] for (uint i = 0; i < TM; i++)
        [[unroll]] for (uint j = 0; j < TN4; j++) acc[i][j] = vec4(0);

    // The slice count is uniform, so every barrier is in uniform control flow. The first
    // barrier of an iteration keeps the slice in use until all have read it; the second
    // publishes the next one.
    uint slices = (p.K + BK - 1) / BK;
    load_slice(0);
    store_slice();
    barrier();
    for (uint s = 0; s < slices; s++) {
        bool more = s + 1 < slices;
        if (more) load_slice((s + 1) * BK);
        multiply_slice();
        barrier();
        if (more) {
            store_slice();
            barrier();
        }
    }

    uint row0 = m0 + gl_LocalInvocationID.y * TM;
    uint col0 = n04 + gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0; i < TM; i++) {
        uint row = row0 + i;
        if (row >= p.M) break;
        [[unroll]] for (uint j = 0; j < TN4; j++) {
            uint col = col0 + j * WG_X;
            if (col >= n4) break;
            write_c(z, row, col, acc[i][j]);
        }
    }
}
