#version 450
#extension GL_GOOGLE_include_directive : require
// The simd family's matmul, for CPU-backed devices: C[z] = A[z] * op(B[z]) + bias, with the
// operands of shaders/matmul.comp. Each invocation is one lane of the CPU's SIMD vector:
// inputs come through uniform texel buffers (a vectorized gather on lavapipe, where storage
// buffer reads are a scalar loop per lane), there is no shared memory and no barrier, and the
// register tile is fixed when the pipeline is made (TM rows x 4*TN4 columns per invocation: TM
// at compile time, TN4 by a specialization constant) so that every loop over it unrolls into
// straight-line code and the accumulators stay in registers.
// Version 2 of matmul.comp's loop: 35 -> see docs/benchmarks.md.
#extension GL_EXT_control_flow_attributes : require
#ifdef SUBGROUP_A
// A's rows are the same for every lane of a subgroup (lanes run along x, the columns): each
// lane fetches TM / SUBGROUP_A of them and the subgroup shares them by shuffles, instead of
// every lane gathering all TM (a gather of 8 equal addresses costs as much as 8 different).
// Needs subgroups of exactly SUBGROUP_A lanes laid along x (gl_WorkGroupSize.x == SUBGROUP_A).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#ifndef TM
#define TM 8
#endif
// The vec4 columns come from specialization constant 3 (the host's tn4, at most TN4_MAX, the
// size of the register arrays): the driver sees it as a constant and unrolls its loops, as it
// does TM's, and one module serves every TN4 of a TM (cmake/shader_variants.cmake).
#ifndef TN4_MAX
#define TN4_MAX 4
#endif
layout(constant_id = 3) const uint TN4 = 1;

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 4) const bool B_TRANS = false;
layout(constant_id = 5) const bool HAS_BIAS = false;

layout(binding = 0) uniform samplerBuffer a_texels;
#ifdef B_Q8
layout(binding = 1) uniform usamplerBuffer b_texels; // Q8_0 blocks (q8_io.glsl), B_TRANS false
#else
layout(binding = 1) uniform samplerBuffer b_texels; // fp16 A or B: an fp16 texel view
#endif

layout(push_constant) uniform Push {
    uint M, N, K;
    uint lda4, ldb4, ldc4;
    uint batch_a4, batch_b4, batch_c4, batch_bias4;
} p;
#include "epilogue.glsl"
#include "q8_io.glsl"

#ifdef B_Q8
// One chunk of 4 k of B [K,N] in Q8_0: a fetch of the 4 k x 4 columns and one of the scales.
#define STEP_KN(k4, valid)                                                                     \
    [[unroll]] for (uint j = 0; j < TN4; j++) {                                                \
        int block = int(q8_block(uint(col[j]), k4 / 8, p.K));                                  \
        uvec4 qv = texelFetch(b_texels, block + 1 + int(k4 % 8));                              \
        vec4 sv = uintBitsToFloat(texelFetch(b_texels, block));                                \
        [[unroll]] for (uint kk = 0; kk < 4; kk++) {                                           \
            if (kk < valid) {                                                                  \
                vec4 bv = unpack_q8x4(qv[kk]) * sv;                                            \
                [[unroll]] for (uint i = 0; i < TM; i++) acc[i][j] = fma(vec4(av[i][kk]), bv, acc[i][j]); \
            }                                                                                  \
        }                                                                                      \
    }
// Host code refuses B^T in Q8_0: the layout runs along K for 4 columns.
#define STEP_NK(k4, valid)
#else
#define STEP_NK(k4, valid)                                                                     \
    bvec4 keep_b = lessThan(uvec4(0, 1, 2, 3), uvec4(valid));                                  \
    [[unroll]] for (uint j = 0; j < TN4; j++)                                                  \
        [[unroll]] for (uint cc = 0; cc < 4; cc++) {                                           \
            int n = int(min(uint(col[j]) * 4 + cc, p.N - 1));                                  \
            vec4 bv = mix(vec4(0), texelFetch(b_texels, b_base + n * ldb + int(k4)), keep_b);  \
            [[unroll]] for (uint i = 0; i < TM; i++) acc[i][j][cc] += dot(av[i], bv);          \
        }
#define STEP_KN(k4, valid)                                                                     \
    int row = b_base + int(k4 * 4) * ldb;                                                      \
    [[unroll]] for (uint kk = 0; kk < 4; kk++) {                                               \
        if (kk < valid) {                                                                      \
            [[unroll]] for (uint j = 0; j < TN4; j++) {                                        \
                vec4 bv = texelFetch(b_texels, row + int(kk) * ldb + col[j]);                  \
                [[unroll]] for (uint i = 0; i < TM; i++) acc[i][j] = fma(vec4(av[i][kk]), bv, acc[i][j]); \
            }                                                                                  \
        }                                                                                      \
    }
#endif

// One chunk of 4 k (`valid` of them real): av[] holds A's 4 values per row.
#define STEP(k4, valid)                                                                        \
    if (!B_TRANS) {                                                                            \
        STEP_KN(k4, valid)                                                                     \
    } else {                                                                                   \
        STEP_NK(k4, valid)                                                                     \
    }

// The vec4 index of a row of A in this batch entry, rows past M clamped to the last.
int a_row_of(uint row)
{
    return int(gl_WorkGroupID.z * p.batch_a4 + min(row, p.M - 1) * p.lda4);
}

void main()
{
    uint z = gl_WorkGroupID.z;
    uint n4 = (p.N + 3) / 4;
    uint row0 = gl_WorkGroupID.y * gl_WorkGroupSize.y * TM + gl_LocalInvocationID.y;
    uint col0 = gl_WorkGroupID.x * gl_WorkGroupSize.x * TN4 + gl_LocalInvocationID.x;
    int a_row[TM];
    [[unroll]] for (uint i = 0; i < TM; i++) a_row[i] = a_row_of(row0 + i * gl_WorkGroupSize.y);
    int col[TN4_MAX];
    [[unroll]] for (uint j = 0; j < TN4; j++) col[j] = int(min(col0 + j * gl_WorkGroupSize.x, n4 - 1));
    int b_base = int(z * p.batch_b4);
    int ldb = int(p.ldb4);

    vec4 acc[TM][TN4_MAX];
    [[unroll]] for (uint i = 0; i < TM; i++)
        [[unroll]] for (uint j = 0; j < TN4; j++) acc[i][j] = vec4(0);

    // The main loop has no condition in it: on lavapipe a branch inside the loop turns every
    // accumulator update into a masked select. The last partial chunk of K comes after it.
    uint full = p.K / 4;
#ifdef SUBGROUP_A
    const uint SHARES = TM / SUBGROUP_A;
    int my_row[SHARES];
    [[unroll]] for (uint r = 0; r < SHARES; r++)
        my_row[r] = a_row_of(row0 + (r * SUBGROUP_A + gl_SubgroupInvocationID) * gl_WorkGroupSize.y);
    for (uint k4 = 0; k4 < full; k4++) {
        vec4 mine[SHARES];
        [[unroll]] for (uint r = 0; r < SHARES; r++) mine[r] = texelFetch(a_texels, my_row[r] + int(k4));
        vec4 av[TM];
        [[unroll]] for (uint i = 0; i < TM; i++)
            av[i] = subgroupShuffle(mine[i / SUBGROUP_A], i % SUBGROUP_A);
        STEP(k4, 4)
    }
#else
    for (uint k4 = 0; k4 < full; k4++) {
        vec4 av[TM];
        [[unroll]] for (uint i = 0; i < TM; i++) av[i] = texelFetch(a_texels, a_row[i] + int(k4));
        STEP(k4, 4)
    }
#endif
    uint rest = p.K % 4;
    if (rest != 0) {
        bvec4 keep = lessThan(uvec4(0, 1, 2, 3), uvec4(rest));
        vec4 av[TM];
        [[unroll]] for (uint i = 0; i < TM; i++)
            av[i] = mix(vec4(0), texelFetch(a_texels, a_row[i] + int(full)), keep);
        STEP(full, rest)
    }

    [[unroll]] for (uint i = 0; i < TM; i++) {
        uint row = row0 + i * gl_WorkGroupSize.y;
        if (row >= p.M) break;
        [[unroll]] for (uint j = 0; j < TN4; j++) {
            uint cl = col0 + j * gl_WorkGroupSize.x;
            if (cl >= n4) break;
            write_c(z, row, cl, acc[i][j]);
        }
    }
}
