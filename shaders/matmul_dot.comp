#version 450
#extension GL_GOOGLE_include_directive : require
// C = A_q * B_q8 + bias with 4x8-bit packed signed integer dot products
// (VK_KHR_shader_integer_dot_product's OpSDot): A quantized per row by
// shaders/quantize_rows.comp, B in Q8_0 blocks of 4 columns x 32 k in the dot order
// (q8_io.glsl: a uint holds 4 k of one column). Per block of 32 k the products accumulate in
// int32 (at most 32 * 127 * 127), then add to fp32 times the block's column scales; the row
// scale multiplies once at the end. Each invocation computes TM rows x 4 * TN4 columns.
// Storage buffers throughout: the path is for GPUs, where the driver says the dot is fast.
// glslang has no GL_EXT_integer_dot_product in every version the build supports, so the
// instruction is declared through GL_EXT_spirv_intrinsics (SPIR-V: OpSDot = 4450,
// capabilities DotProductInput4x8BitPacked = 6018 and DotProduct = 6019, packed vector
// format 0 = PackedVectorFormat4x8Bit).
#extension GL_EXT_spirv_intrinsics : require
#extension GL_EXT_control_flow_attributes : require

#ifndef TM
#define TM 4
#endif
#ifndef TN4
#define TN4 2
#endif

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019],
                  id = 4450) int sdot_4x8(uint a, uint b, spirv_literal int format);

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 5) const bool HAS_BIAS = false;

layout(std430, binding = 0) readonly buffer AQ { uvec4 aq[]; }; // quantize_rows.comp's rows
layout(std430, binding = 1) readonly buffer BQ { uvec4 bq[]; }; // Q8_0 blocks, dot order

layout(push_constant) uniform Push {
    uint M, N, K;
    uint lda4, ldb4, ldc4; // lda4: A_q's row pitch in uvec4
    uint batch_a4, batch_b4, batch_c4, batch_bias4;
} p;
#include "epilogue.glsl"
#include "q8_io.glsl"

void main()
{
    uint n4 = (p.N + 3) / 4, blocks = (p.K + 31) / 32;
    uint row0 = gl_WorkGroupID.y * gl_WorkGroupSize.y * TM + gl_LocalInvocationID.y;
    uint col0 = gl_WorkGroupID.x * gl_WorkGroupSize.x * TN4 + gl_LocalInvocationID.x;
    uint a_row[TM];
    [[unroll]] for (uint i = 0; i < TM; i++)
        a_row[i] = min(row0 + i * gl_WorkGroupSize.y, p.M - 1) * p.lda4;
    uint col[TN4];
    [[unroll]] for (uint j = 0; j < TN4; j++)
        col[j] = min(col0 + j * gl_WorkGroupSize.x, n4 - 1);

    vec4 acc[TM][TN4];
    [[unroll]] for (uint i = 0; i < TM; i++)
        [[unroll]] for (uint j = 0; j < TN4; j++) acc[i][j] = vec4(0.0);

    for (uint b = 0; b < blocks; b++) {
        ivec4 sums[TM][TN4];
        [[unroll]] for (uint i = 0; i < TM; i++)
            [[unroll]] for (uint j = 0; j < TN4; j++) sums[i][j] = ivec4(0);
        [[unroll]] for (uint h = 0; h < 2; h++) { // two uvec4 of A: 16 k each
            uvec4 av[TM];
            [[unroll]] for (uint i = 0; i < TM; i++) av[i] = aq[a_row[i] + 1 + 2 * b + h];
            [[unroll]] for (uint c = 0; c < 4; c++) // a chunk of 4 k
                [[unroll]] for (uint j = 0; j < TN4; j++) {
                    uvec4 bv = bq[q8_block(col[j], b, p.K) + 1 + 4 * h + c];
                    [[unroll]] for (uint i = 0; i < TM; i++) {
                        uint x = av[i][c];
                        sums[i][j] += ivec4(sdot_4x8(x, bv.x, 0), sdot_4x8(x, bv.y, 0),
                                            sdot_4x8(x, bv.z, 0), sdot_4x8(x, bv.w, 0));
                    }
                }
        }
        [[unroll]] for (uint j = 0; j < TN4; j++) {
            vec4 scales = uintBitsToFloat(bq[q8_block(col[j], b, p.K)]);
            [[unroll]] for (uint i = 0; i < TM; i++) acc[i][j] += vec4(sums[i][j]) * scales;
        }
    }

    [[unroll]] for (uint i = 0; i < TM; i++) {
        uint row = row0 + i * gl_WorkGroupSize.y;
        if (row >= p.M) break;
        float row_scale = uintBitsToFloat(aq[a_row[i]].x);
        [[unroll]] for (uint j = 0; j < TN4; j++) {
            uint cl = col0 + j * gl_WorkGroupSize.x;
            if (cl >= n4) break;
            write_c(0, row, cl, acc[i][j] * row_scale);
        }
    }
}
