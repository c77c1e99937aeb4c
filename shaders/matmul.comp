#version 450
// Batched, strided, register-blocked matmul: C[z] = A[z] * op(B[z]) + bias.
//   A is [M,K] row-major; B is [K,N] (B_TRANS false) or [N,K] (B_TRANS true, PyTorch's
//   Linear layout and K^T in Q*K^T); C is [M,N]. Row pitches and batch strides are in vec4,
//   so every row starts 16-byte aligned (vkbert pads rows to a multiple of 4 floats).
// Each invocation owns TM rows x TN4 vec4 columns, spread with a stride of the workgroup size
// so that neighbouring invocations read neighbouring vec4s. No shared memory: on CPU-backed
// devices the caches tile better than barriers do (see docs/drivers.md); discrete GPUs get a
// shared-memory family later.
// Version 1: vec4 loads, TMx(4*TN4) accumulators. Pads past K are never multiplied
// unmasked, so rows may carry garbage in their padding.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint TM = 4;
layout(constant_id = 3) const uint TN4 = 2;
layout(constant_id = 4) const bool B_TRANS = false;
layout(constant_id = 5) const bool HAS_BIAS = false;
layout(constant_id = 9) const bool A_HALF = false; // A stored as fp16 (packed pairs)
layout(constant_id = 10) const bool B_HALF = false; // B (the weights) too: no 16-bit storage
// B as Q8_0 in blocks of 4 columns x 32 k (q8_io.glsl). Only with B_TRANS false, batch 1.
layout(constant_id = 11) const bool B_Q8 = false;

layout(std430, binding = 0) readonly buffer ABuffer { vec4 a[]; };
layout(std430, binding = 0) readonly buffer AHalfBuffer { uvec2 a_half[]; };
layout(std430, binding = 1) readonly buffer BBuffer { vec4 b[]; };
layout(std430, binding = 1) readonly buffer BHalfBuffer { uvec2 b_half[]; };
layout(std430, binding = 1) readonly buffer BQ8Buffer { uvec4 b_q8[]; };
#define A(i) (A_HALF ? unpack_half4(a_half[i]) : a[i])
#define B(i) (B_HALF ? unpack_half4(b_half[i]) : b[i])

layout(push_constant) uniform Push {
    uint M, N, K;
    uint lda4, ldb4, ldc4;
    uint batch_a4, batch_b4, batch_c4, batch_bias4;
} p;
#include "epilogue.glsl"
#include "q8_io.glsl"

vec4 acc[TM][TN4];
uint a_row[TM]; // vec4 index of each owned row's start, clamped into range
uint col4[TN4];

vec4 load_a(uint i, uint k4, uint valid)
{
    vec4 v = A(a_row[i] + k4);
    return valid >= 4 ? v : mix(vec4(0), v, lessThan(uvec4(0, 1, 2, 3), uvec4(valid)));
}

// B's vec4 of 4 columns at row k; `row` is that row's vec4 index (unused for Q8, whose
// blocks have their own order). Version 1 of Q8: a scale multiply per element.
vec4 load_b_kn(uint row, uint k, uint c4)
{
    if (!B_Q8) return B(row + c4);
    uint block = q8_block(c4, k / 32, p.K);
    return unpack_q8x4(b_q8[block + 1 + (k % 32) / 4][k % 4]) * uintBitsToFloat(b_q8[block]);
}

// B is [K,N]: for each of the 4 (or `valid`) k of this chunk, a vec4 of 4 columns.
void step_kn(uint k4, uint valid, uint b_base)
{
    vec4 av[TM];
    for (uint i = 0; i < TM; i++) av[i] = load_a(i, k4, valid);
    for (uint kk = 0; kk < valid; kk++) {
        uint k = k4 * 4 + kk, row = b_base + k * p.ldb4;
        for (uint j = 0; j < TN4; j++) {
            vec4 bv = load_b_kn(row, k, col4[j]);
            for (uint i = 0; i < TM; i++) acc[i][j] += av[i][kk] * bv;
        }
    }
}

// B is [N,K]: each output column is a dot product over k.
void step_nk(uint k4, uint valid, uint b_base)
{
    vec4 av[TM];
    for (uint i = 0; i < TM; i++) av[i] = load_a(i, k4, valid);
    bvec4 keep = lessThan(uvec4(0, 1, 2, 3), uvec4(valid));
    for (uint j = 0; j < TN4; j++) {
        for (uint cc = 0; cc < 4; cc++) {
            uint n = min(col4[j] * 4 + cc, p.N - 1);
            vec4 bv = B(b_base + n * p.ldb4 + k4);
            if (valid < 4) bv = mix(vec4(0), bv, keep);
            for (uint i = 0; i < TM; i++) acc[i][j][cc] += dot(av[i], bv);
        }
    }
}

void main()
{
    uint z = gl_WorkGroupID.z;
    uint n4 = (p.N + 3) / 4;
    uint row0 = gl_WorkGroupID.y * gl_WorkGroupSize.y * TM + gl_LocalInvocationID.y;
    uint col0 = gl_WorkGroupID.x * gl_WorkGroupSize.x * TN4 + gl_LocalInvocationID.x;
    for (uint i = 0; i < TM; i++) {
        uint row = min(row0 + i * gl_WorkGroupSize.y, p.M - 1);
        a_row[i] = z * p.batch_a4 + row * p.lda4;
        for (uint j = 0; j < TN4; j++) acc[i][j] = vec4(0);
    }
    for (uint j = 0; j < TN4; j++) col4[j] = min(col0 + j * gl_WorkGroupSize.x, n4 - 1);

    uint b_base = z * p.batch_b4;
    uint full = p.K / 4, rest = p.K % 4;
    for (uint k4 = 0; k4 < full; k4++) {
        if (B_TRANS) step_nk(k4, 4, b_base); else step_kn(k4, 4, b_base);
    }
    if (rest != 0) {
        if (B_TRANS) step_nk(full, rest, b_base); else step_kn(full, rest, b_base);
    }

    for (uint i = 0; i < TM; i++) {
        uint row = row0 + i * gl_WorkGroupSize.y;
        if (row >= p.M) break;
        for (uint j = 0; j < TN4; j++) {
            uint col = col0 + j * gl_WorkGroupSize.x;
            if (col >= n4) break;
            write_c(z, row, col, acc[i][j]);
        }
    }
}
