# Every SPIR-V module the library embeds, listed once. cmake/shaders.cmake compiles each one
# and generates shader_variants.h/.c, from which the C side picks a module
# (src/tune/tune_variants.c): a module answers to the axes listed here, and the ops ask for
# axes, never for names.
#
# vkbert_variant(<module> <op> [AXES <axis>...] [TILES <TM>x<TN4>...] [DEFINES <NAME[=value]>...])
#   <op>: the source, shaders/<op>.comp; a module without axes is its op's default.

# The selection axes, in bit order (VKB_AXIS_* in the generated header).
vkbert_variant_axes(
  shared_reduce "reductions through shared memory: for devices without subgroup arithmetic"
  ragged "an unpadded batch: each sequence's rows found by offsets"
  texel "operands read through texel buffers (the simd family)"
  shuffle "rows shared between the lanes of a subgroup by shuffles"
  q8 "B (the weights) in Q8_0 blocks")

vkbert_variant(matmul matmul)
# The gpu family: shared-memory tiles, sizes as specialization constants (src/tune/tune.c).
vkbert_variant(matmul_gpu matmul_gpu)
# The simd family's register tiles, TM rows x TN4 vec4 columns; a request snaps to the largest
# tile here that it covers. One module per TM: TM is a compile-time constant, TN4 a
# specialization constant, and the driver unrolls the loops over both (shaders/matmul_simd.comp;
# lavapipe runs them as fast as modules with TN4 compiled in). The sg8 modules share A's rows
# by shuffles in subgroups of 8 lanes, which need at least 8 rows.
set(VKBERT_SIMD_TILES 4x1 4x2 8x1 8x2 8x3 8x4 16x2 16x3 16x4)
foreach(tm 4 8 16)
  set(tiles "")
  set(tn4_max 0)
  foreach(tile IN LISTS VKBERT_SIMD_TILES)
    if(tile MATCHES "^${tm}x([0-9]+)$")
      list(APPEND tiles ${tile})
      if(CMAKE_MATCH_1 GREATER tn4_max)
        set(tn4_max ${CMAKE_MATCH_1})
      endif()
    endif()
  endforeach()
  set(defines TM=${tm} TN4_MAX=${tn4_max})
  vkbert_variant(matmul_simd_${tm} matmul_simd TILES ${tiles} DEFINES ${defines})
  vkbert_variant(matmul_simd_q8_${tm} matmul_simd AXES q8 TILES ${tiles} DEFINES ${defines} B_Q8)
  if(tm GREATER_EQUAL 8)
    vkbert_variant(matmul_simd_sg8_${tm} matmul_simd AXES shuffle TILES ${tiles}
                   DEFINES ${defines} SUBGROUP_A=8)
    vkbert_variant(matmul_simd_sg8_q8_${tm} matmul_simd AXES shuffle q8 TILES ${tiles}
                   DEFINES ${defines} SUBGROUP_A=8 B_Q8)
  endif()
endforeach()
# int8 activations for the integer-dot matmul (one workgroup per row, as layer_norm), and the
# matmul over them and Q8_0 weights in the dot order (VK_KHR_shader_integer_dot_product).
vkbert_variant(quantize_rows quantize_rows)
vkbert_variant(quantize_rows_shared quantize_rows AXES shared_reduce DEFINES NO_SUBGROUP_ARITHMETIC)
vkbert_variant(matmul_dot matmul_dot)
# Fused attention: the head length and the chunk of it held in registers are specialization
# constants (shaders/attention_fused.comp), so one module per way of reading the rows:
# storage buffers, texel buffers, and texel buffers with K and V rows shared by subgroup
# shuffles; each padded and ragged.
vkbert_variant(attention_fused attention_fused)
vkbert_variant(attention_fused_texel attention_fused AXES texel DEFINES TEXEL_LOADS)
vkbert_variant(attention_fused_shared attention_fused AXES texel shuffle
               DEFINES TEXEL_LOADS SUBGROUP_KV)
vkbert_variant(attention_fused_ragged attention_fused AXES ragged DEFINES RAGGED)
vkbert_variant(attention_fused_texel_ragged attention_fused AXES texel ragged
               DEFINES TEXEL_LOADS RAGGED)
vkbert_variant(attention_fused_shared_ragged attention_fused AXES texel shuffle ragged
               DEFINES TEXEL_LOADS SUBGROUP_KV RAGGED)
vkbert_variant(head_split head_split)
vkbert_variant(head_merge head_merge)
vkbert_variant(softmax softmax)
vkbert_variant(softmax_shared softmax AXES shared_reduce DEFINES NO_SUBGROUP_ARITHMETIC)
vkbert_variant(layer_norm layer_norm)
vkbert_variant(layer_norm_shared layer_norm AXES shared_reduce DEFINES NO_SUBGROUP_ARITHMETIC)
vkbert_variant(embedding embedding)
vkbert_variant(embedding_shared embedding AXES shared_reduce DEFINES NO_SUBGROUP_ARITHMETIC)
vkbert_variant(embedding_ragged embedding AXES ragged DEFINES RAGGED)
vkbert_variant(embedding_ragged_shared embedding AXES ragged shared_reduce
               DEFINES RAGGED NO_SUBGROUP_ARITHMETIC)
vkbert_variant(pool pool)
vkbert_variant(pool_shared pool AXES shared_reduce DEFINES NO_SUBGROUP_ARITHMETIC)
vkbert_variant(pool_ragged pool AXES ragged DEFINES RAGGED)
vkbert_variant(pool_ragged_shared pool AXES ragged shared_reduce
               DEFINES RAGGED NO_SUBGROUP_ARITHMETIC)
vkbert_variant(l2_normalize l2_normalize)
vkbert_variant(l2_normalize_shared l2_normalize AXES shared_reduce DEFINES NO_SUBGROUP_ARITHMETIC)
vkbert_variant(keep_mask keep_mask)
vkbert_variant(fma_peak fma_peak)
vkbert_variant(copy_bandwidth copy_bandwidth)
