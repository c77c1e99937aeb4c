/* The ops: each prepares one dispatch of its shader (pipeline, descriptor set from the
 * caller's pool, push constants, group counts). The caller records it. Pitches and strides
 * are in floats; every row pitch is a multiple of 4. */
#ifndef VKBERT_OPS_H
#define VKBERT_OPS_H

#include "ops/format.h"
#include "vk/vk.h"

/* C[z] = A[z] * op(B[z]) + bias for z < batch. A [M,K]; B [K,N] or, with b_trans, [N,K]. */
typedef struct vkb_matmul_desc {
    uint32_t m, n, k, batch;
    uint32_t lda, ldb, ldc;
    uint64_t batch_a, batch_b, batch_c, batch_bias;
    bool b_trans; /* a layout, not a storage: B [N,K]; F32 or F16_PAIRS only */
    /* A, B and C's storage (ops/format.h), F32 when zeroed. A and C: F32 or F16_PAIRS
     * (VKBERT_PRECISION_FP16's activations). B: F32, F16_PAIRS, or Q8_0 in ldb / 4 column
     * groups of ceil(K / 32) blocks of 144 bytes, which needs a batch of 1 and b_trans false
     * (the gpu family runs its fallback, shaders/matmul.comp, for it). B in Q8_0_DOT runs
     * shaders/matmul_dot.comp, which needs ctx->int8_dot, A in Q8_ROWS (lda: that pitch, in
     * uints, vkb_q8_rows_pitch) and C in F32. */
    vkb_format a, b, c;
    uint32_t activation; /* applied after the bias: VKB_ACTIVATION_* */
} vkb_matmul_desc;

/* The matmul kernels' push constants (pitches and strides in vec4). */
typedef struct vkb_matmul_push {
    uint32_t m, n, k;
    uint32_t lda4, ldb4, ldc4;
    uint32_t batch_a4, batch_b4, batch_c4, batch_bias4;
} vkb_matmul_push;

/* C = A_q * B (B in VKB_FORMAT_Q8_0_DOT): vkb_op_matmul sends such a desc here. */
vkbert_status vkb_op_matmul_dot(vkbert_context *ctx, VkDescriptorPool pool,
                                const vkb_matmul_desc *d, vkb_view a_q, vkb_view b,
                                const vkb_view *bias, vkb_view c, vkb_dispatch *out);

/* A [rows, k] (fp32, pitch lda, a multiple of 4) quantized per row to int8 for the dot matmul
 * (shaders/quantize_rows.comp has the rule and the layout): row r at uint r * pitch, pitch =
 * vkb_q8_rows_pitch(k), its scale's bits first, then 32 * ceil(k / 32) int8, four a uint. */
uint32_t vkb_q8_rows_pitch(uint32_t k);
vkbert_status vkb_op_quantize_rows(vkbert_context *ctx, VkDescriptorPool pool, uint32_t rows,
                                   uint32_t k, uint32_t lda, vkb_view a, vkb_view out,
                                   vkb_dispatch *dispatch);

/* Never renumbered: the shaders' specialization constant (shaders/epilogue.glsl). */
enum {
    VKB_ACTIVATION_NONE = 0,
    VKB_ACTIVATION_GELU = 1, /* exact, erf */
    VKB_ACTIVATION_TANH = 2,
    VKB_ACTIVATION_RELU = 3,
    VKB_ACTIVATION_SIGMOID = 4
};

vkbert_status vkb_op_matmul(vkbert_context *ctx, VkDescriptorPool pool, const vkb_matmul_desc *d,
                            vkb_view a, vkb_view b, const vkb_view *bias, vkb_view c,
                            vkb_dispatch *out);

typedef struct vkb_heads_desc {
    uint32_t batch, seq_len, heads, head_dim;
    uint32_t ld; /* row pitch of the [B*S, ...] side */
    uint32_t dp; /* row pitch of the [B,H,S,Dp] side */
} vkb_heads_desc;

/* [B*S, E] -> [B,H,S,Dp]. */
vkbert_status vkb_op_head_split(vkbert_context *ctx, VkDescriptorPool pool, const vkb_heads_desc *d,
                                vkb_view rows, vkb_view heads, vkb_dispatch *out);
/* [B,H,S,dp] -> [B*S, H*dp]; padding d >= D of the output written as zeros. */
vkbert_status vkb_op_head_merge(vkbert_context *ctx, VkDescriptorPool pool, const vkb_heads_desc *d,
                                vkb_view heads, vkb_view merged, vkb_dispatch *out);

/* Fused attention over rows [B*S, ld] holding Q, K, V at q_off, k_off, v_off (elements,
 * heads with pitch dp, their padding zero, Q pre-scaled); writes O [B*S, ld_out]. The rows'
 * binding needs VKB_FUSED_SLACK elements past V, which may be read but add nothing.
 * Ragged (an unpadded batch): the rows are packed [tokens, ld], sequence b in rows
 * [offsets[b], offsets[b+1]), and the `mask` view holds those offsets (int32 [batch+1],
 * cu_seqlens); seq_len is the longest sequence's length, which sizes the grid (rows of a
 * longer one are not computed). Each sequence attends to all of its rows: has_mask, causal,
 * additive and dropout are refused. O rows that begin no sequence's row (past the last
 * offset, or past tokens) are not written. Offsets are clamped to [0, tokens] on the
 * device. */
#define VKB_FUSED_SLACK 256
#define VKB_FUSED_MAX_HEAD 256 /* the longest head the fused kernel takes (in slices of 64) */
typedef struct vkb_fused_desc {
    uint32_t batch, heads, seq_len, head_dim;
    uint32_t ld, ld_out;
    uint64_t q_off, k_off, v_off;
    bool has_mask, causal;
    uint32_t mask_stride[4];
    float dropout;
    uint64_t seed;
    bool additive;        /* as vkb_softmax_desc's */
    vkb_format rows, out; /* Q, K, V read and O written: F32 or F16_PAIRS */
    bool ragged;
    uint32_t tokens; /* ragged: the packed rows */
} vkb_fused_desc;

vkbert_status vkb_op_attention_fused(vkbert_context *ctx, VkDescriptorPool pool,
                                     const vkb_fused_desc *d, vkb_view rows, vkb_view mask,
                                     vkb_view out, vkb_dispatch *dispatch);

/* out = LayerNorm(x + residual) * gamma + beta over rows of `hidden`; `residual` NULL for a
 * plain LayerNorm; `params` holds gamma then beta, each `ld` floats. Every operand has row
 * pitch `ld`; the output's padding is written as zero. */
typedef struct vkb_layer_norm_desc {
    uint32_t rows, hidden, ld;
    float eps;
} vkb_layer_norm_desc;

vkbert_status vkb_op_layer_norm(vkbert_context *ctx, VkDescriptorPool pool,
                                const vkb_layer_norm_desc *d, vkb_view x, const vkb_view *residual,
                                vkb_view params, vkb_view out, vkb_dispatch *dispatch);

/* BERT embeddings, then LayerNorm. The word table [vocab][ld] may exceed one binding, so it
 * comes in chunks: `word` holds rows [first_row, first_row + rows), F32 or F16_PAIRS
 * (the desc's `word`); one dispatch per chunk, each writing only the tokens whose id is in its
 * rows. `tables` holds position, token type, gamma and
 * beta (fp32) at the given float offsets; `ids` holds the input ids [tokens], the token type
 * ids [tokens], then a flag, int32. Ids the host never checked give defined results: an input
 * id outside [0, vocab) gets a row of zeros (from the dispatch of the chunk at row 0), a token
 * type outside [0, types) is read as 0, and each ORs its VKB_EMBEDDING_BAD_* bit into the
 * flag, which the caller zeroes before the first chunk's dispatch.
 * Ragged (an unpadded batch, tokens packed): seq_len is ignored, and `ids` holds input ids
 * [tokens], token type ids [tokens], each token's position [tokens], then the flag; a
 * position outside [0, positions) is read as 0 and sets VKB_EMBEDDING_BAD_POSITION. */
typedef struct vkb_embedding_desc {
    uint32_t tokens, seq_len, hidden, ld;
    uint64_t position_off, type_off, gamma_off, beta_off; /* within `tables` */
    uint32_t first_row, rows;                             /* the word chunk's */
    uint32_t vocab, types; /* the word table's rows, the token type table's */
    vkb_format word;       /* the word table's storage: F32 or F16_PAIRS */
    float eps;
    bool ragged;
    uint32_t positions; /* the position table's rows; read only when ragged */
} vkb_embedding_desc;

/* The embedding's flag bits (shaders/embedding.comp's BAD_*). */
enum { VKB_EMBEDDING_BAD_ID = 1, VKB_EMBEDDING_BAD_TYPE = 2, VKB_EMBEDDING_BAD_POSITION = 4 };

vkbert_status vkb_op_embedding(vkbert_context *ctx, VkDescriptorPool pool,
                               const vkb_embedding_desc *d, vkb_view word, vkb_view tables,
                               vkb_view ids, vkb_view out, vkb_dispatch *dispatch);

/* The encoder's masks from a caller's [batch][seq_len] attention mask, int32 or float32 as
 * given, in the first seq_len columns of `keep`'s rows [batch][ld]: in place, each becomes 1.0
 * where the value is not zero (either zero, for a float) and 0.0 where it is (the host API's
 * rule), in `keep` and in `pooling` ([batch][ld] too); the columns past seq_len become 0.0. */
typedef struct vkb_keep_mask_desc {
    uint32_t batch, seq_len, ld;
    bool is_float;
} vkb_keep_mask_desc;

vkbert_status vkb_op_keep_mask(vkbert_context *ctx, VkDescriptorPool pool,
                               const vkb_keep_mask_desc *d, vkb_view keep, vkb_view pooling,
                               vkb_dispatch *dispatch);

/* sentence-transformers' Pooling over hidden [B*S][ld] and a mask [B][mask_ld] (1 keep, 0
 * padding; shaders/pool.comp has each mode's exact rule): the modes set in `modes`, in the
 * order of the bits below, concatenated into out [B][out_ld], block k at k * hidden, the
 * columns past the last block written as zero. include_prompt=false is the mask's: the
 * caller zeroes the prompt's positions (cls then reads the first row after them). */
enum {
    VKB_POOL_CLS = 1u << 0,
    VKB_POOL_MAX = 1u << 1,
    VKB_POOL_MEAN = 1u << 2,
    VKB_POOL_MEAN_SQRT_LEN = 1u << 3,
    VKB_POOL_WEIGHTED_MEAN = 1u << 4,
    VKB_POOL_LAST_TOKEN = 1u << 5,
    /* Not a Pooling mode: row 0 whatever the mask, the BERT pooler's hidden[:, 0] (gathered
     * from a packed batch). */
    VKB_POOL_FIRST_ROW = 1u << 6
};
typedef struct vkb_pool_desc {
    uint32_t batch, seq_len, hidden, ld, mask_ld, modes, out_ld;
} vkb_pool_desc;

vkbert_status vkb_op_pool(vkbert_context *ctx, VkDescriptorPool pool, const vkb_pool_desc *d,
                          vkb_view hidden, vkb_view mask, vkb_view out, vkb_dispatch *dispatch);

/* vkb_op_pool over an unpadded batch: hidden packed [tokens][ld], sequence b in its rows
 * [offsets[b], offsets[b+1]) (int32 [batch+1], cu_seqlens), the mask packed [tokens] the same
 * way, out [batch][out_ld]. A sequence's positions count from its first row (weightedmean's
 * weights); an empty sequence's output row is zero. Offsets are clamped to [0, tokens] on the
 * device, so bad ones read no row past the rest. */
typedef struct vkb_pool_ragged_desc {
    uint32_t batch, tokens, hidden, ld, modes, out_ld;
} vkb_pool_ragged_desc;

vkbert_status vkb_op_pool_ragged(vkbert_context *ctx, VkDescriptorPool pool,
                                 const vkb_pool_ragged_desc *d, vkb_view hidden, vkb_view mask,
                                 vkb_view offsets, vkb_view out, vkb_dispatch *dispatch);

/* out = x / max(||x||_2, 1e-12) over rows [rows][ld] of `width` (torch's F.normalize, as
 * sentence-transformers' Normalize); in place when `in` and `out` are the same range. The
 * padding up to ld is written as zero. */
typedef struct vkb_l2_normalize_desc {
    uint32_t rows, width, ld;
} vkb_l2_normalize_desc;

vkbert_status vkb_op_l2_normalize(vkbert_context *ctx, VkDescriptorPool pool,
                                  const vkb_l2_normalize_desc *d, vkb_view in, vkb_view out,
                                  vkb_dispatch *dispatch);

/* Philox dropout parameters shared by softmax and fused attention: a weight is dropped when
 * its 24 random bits fall below drop_below; kept ones are scaled by keep_scale. */
void vkb_dropout_params(float p, uint32_t *drop_below, float *keep_scale);

/* Shared by head split and merge: the same push constants, one invocation per element. */
vkbert_status vkb_op_heads(vkbert_context *ctx, VkDescriptorPool pool, const vkb_spirv *shader,
                           const vkb_heads_desc *d, vkb_view in, vkb_view out,
                           vkb_dispatch *dispatch);

typedef struct vkb_softmax_desc {
    uint32_t batch, heads, seq_len, ld;
    float scale;
    bool has_mask, causal;
    uint32_t mask_stride[4]; /* b, h, i, j: 0 where the mask broadcasts */
    float dropout;
    uint64_t seed;
    bool additive; /* masked keys score the lowest float (HuggingFace BERT), not -inf */
} vkb_softmax_desc;

/* In place over scores [B,H,S,ld]; `mask` is bound even when unused (any buffer). */
vkbert_status vkb_op_softmax(vkbert_context *ctx, VkDescriptorPool pool, const vkb_softmax_desc *d,
                             vkb_view scores, vkb_view mask, vkb_dispatch *out);

#endif
