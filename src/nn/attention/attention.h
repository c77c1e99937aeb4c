/* The attention layer as a plan of ops: QKV projections, head split, Q*K^T, masked softmax
 * with dropout, P*V, head merge, output projection. */
#ifndef VKBERT_NN_ATTENTION_H
#define VKBERT_NN_ATTENTION_H

#include "ops/ops.h"
#include "vk/tensor.h"

#define ATTENTION_DISPATCHES 13 /* 11, and two quantizings of A on the integer-dot path */
#define ATTENTION_MAX_PLANS 8

/* What a recorded command buffer depends on beyond the shape. Compared bytewise. */
typedef struct attention_binding {
    uint64_t x_id, y_id, mask_id;
    uint32_t mask_stride[4];
    uint32_t causal;
    uint32_t additive;
    float dropout;
    uint64_t seed;
} attention_binding;

typedef struct attention_plan {
    uint32_t batch, seq_len;
    bool ragged;            /* packed rows: `tokens` of them, batch and seq_len the most of each */
    uint32_t tokens;        /* ragged */
    bool fused;             /* one fused attention kernel; else split, scores, softmax, merge */
    vkb_format activations; /* qkv's and merged's: F16_PAIRS for fp16 on the fused path */
    vkb_buffer qkv;         /* [3][B*S][H*Dp]: Q, K, V rows, each block 256-byte aligned */
    vkb_buffer merged;      /* [B*S][H*Dp]: the attention output, heads merged */
    vkb_buffer heads;       /* unfused: [3][B,H,S,Dp] */
    vkb_buffer scores;      /* unfused: [B,H,S,Sp] */
    vkb_buffer context;     /* unfused: P*V, [B,H,S,Dp] */
    vkb_buffer a_q8;        /* integer-dot path: x, then merged, quantized per row (ops.h) */
    uint64_t qkv_block, heads_block; /* bytes between the Q, K, V blocks */
    VkDescriptorPool pool;
    VkCommandBuffer cmd;
    VkQueryPool queries;
    vkb_dispatch dispatches[ATTENTION_DISPATCHES];
    uint32_t dispatch_count;
    bool recorded;
    attention_binding binding;
    /* Tensors of the host-array path, made on its first use with this shape. */
    vkbert_tensor *host_x, *host_y, *host_mask;
} attention_plan;

struct vkbert_attention {
    vkbert_context *ctx;
    uint32_t embed_dim, heads, head_dim;
    uint32_t pitch;       /* embed_dim rounded up to 4 */
    uint32_t head_pitch;  /* head_dim rounded up to 4 */
    uint32_t heads_width; /* heads * head_pitch: a row of Q, K, V or O, heads padded */
    /* The weights' storage: F32, F16_PAIRS, Q8_0 blocks (nn/encoder/weights_q8.h) or
     * Q8_0_DOT, those in the dot order, run by integer dot products (vkb_tune_int8_dot). */
    vkb_format weight_format;
    vkb_buffer weights; /* W_q^T, W_k^T, W_v^T [E][H*Dp], W_o^T [H*Dp][Ep], in blocks */
    vkb_buffer biases;  /* [H*Dp] three times, then [Ep] */
    uint64_t weight_block, bias_block;
    attention_plan *plans[ATTENTION_MAX_PLANS];
    uint32_t plan_count;
    /* Plans of recordings into callers' command buffers, one per (shape, binding), oldest
     * first (attention_record.c): apart from `plans`, so forwards never disturb them. */
    attention_plan *recordings[ATTENTION_MAX_PLANS];
    uint32_t recording_count;
    uint32_t last_plan; /* index into plans of the last forward, for timings */
    vkbert_timing timings[ATTENTION_DISPATCHES];
    uint32_t timing_count;
};

/* The one place dense weights' storage is chosen, the layer's and the encoder's: at int8,
 * Q8_0 in the dot order where the device runs integer dot products (or the path is forced,
 * vkb_tune_int8_dot), else dequantized Q8_0. */
vkbert_status attention_weight_format(vkbert_context *ctx, vkbert_precision precision,
                                      vkb_format *out);
/* attention_alloc, then attention_upload_weights; the caller holds the lock. */
vkbert_status vkb_attention_new(vkbert_context *ctx, int embed_dim, int num_heads,
                                const vkbert_attention_weights *weights,
                                const vkbert_attention_config *config, vkbert_attention **out);
/* The layer and its (unwritten) buffers: the device part of vkb_attention_new, under the lock. */
vkbert_status attention_alloc(vkbert_context *ctx, int embed_dim, int num_heads,
                              const vkbert_attention_config *config, vkbert_attention **out);
/* Checks, packs and writes the weights (attention_weights.c): host work through `out`, which
 * need not hold the lock (vkb_writer). Elements of one packed fp32 weight block. */
vkbert_status attention_upload_weights(vkbert_attention *layer, const vkbert_attention_weights *w,
                                       vkb_writer *out);
size_t attention_weight_elements(const vkbert_attention *layer);
/* What the layer runs: precision, path and kernels, for benchmarks. */
void vkb_attention_describe(const vkbert_attention *layer, char *out, size_t size);
void vkb_attention_free(vkbert_attention *layer);
vkbert_status vkb_attention_forward(vkbert_attention *layer, const vkbert_tensor *x,
                                    const vkbert_tensor *mask,
                                    const vkbert_attention_options *options, vkbert_tensor *y);
vkbert_status vkb_attention_forward_host(vkbert_attention *layer, int batch, int seq_len,
                                         const float *x, const vkbert_mask *mask,
                                         const vkbert_attention_options *options, float *y);

/* The plan for this shape, made on first use (evicting the oldest when full). */
vkbert_status attention_plan_get(vkbert_attention *layer, uint32_t batch, uint32_t seq_len,
                                 attention_plan **out);
void attention_plan_free(vkbert_attention *layer, attention_plan *plan);
/* Frees a plan and takes it out of the layer's list: after a failure, so that nothing of a
 * failed call stays allocated. */
void attention_plan_drop(vkbert_attention *layer, attention_plan *plan);
/* Checks x, y, the mask and the options of a forward and says what it binds. */
vkbert_status attention_bind(vkbert_attention *layer, const vkbert_tensor *x,
                             const vkbert_tensor *mask, const vkbert_attention_options *options,
                             const vkbert_tensor *y, attention_binding *bind);
/* Prepares the plan's dispatches (descriptor sets over x, mask, y) for `bind`. */
vkbert_status attention_plan_prepare(vkbert_attention *layer, attention_plan *plan,
                                     const vkbert_tensor *x, const vkbert_tensor *mask,
                                     const vkbert_tensor *y, const attention_binding *bind);
/* Records the prepared dispatches into `cmd`: a leading barrier, barriers between them, none
 * after; timestamps around each when `queries` is not VK_NULL_HANDLE. */
void attention_record_into(const attention_plan *plan, VkCommandBuffer cmd, VkQueryPool queries);
/* Records y = attention(x) into the caller's command buffer (vkbert_vulkan.h). */
vkbert_status vkb_attention_record(vkbert_attention *layer, VkCommandBuffer cmd,
                                   const vkbert_tensor *x, const vkbert_tensor *mask,
                                   const vkbert_attention_options *options, vkbert_tensor *y);
/* Frees the recordings' plans (with the layer). */
void attention_recordings_free(vkbert_attention *layer);
/* Records (when the binding changed) and runs one forward, then reads the timings. */
vkbert_status attention_plan_run(vkbert_attention *layer, attention_plan *plan,
                                 const vkbert_tensor *x, const vkbert_tensor *mask,
                                 const attention_binding *binding, vkbert_tensor *y);
/* Where dispatches are prepared: a caller's array and descriptor pool. */
typedef struct attention_sink {
    vkb_dispatch *items;
    uint32_t count, capacity;
    VkDescriptorPool pool;
} attention_sink;

/* The next free dispatch, zeroed; NULL when the list is full. */
vkb_dispatch *attention_sink_next(attention_sink *sink);
/* For an integer-dot matmul (B in VKB_FORMAT_Q8_0_DOT) over A [rows, k] (pitch mm->lda):
 * appends the quantizing of A into `a_q` and points `a`, mm->lda and mm->a at the result. */
vkbert_status attention_quantize_a(vkbert_context *ctx, attention_sink *sink, vkb_matmul_desc *mm,
                                   const vkb_buffer *a_q, vkb_view *a);
/* Bytes of `rows` rows of k quantized for it. */
uint64_t attention_q8_rows_bytes(uint32_t rows, uint32_t k);
/* Activation buffers of one shape without command objects, for callers that record several
 * layers into their own command buffer (the encoder); free with attention_plan_free. */
vkbert_status attention_scratch_new(vkbert_attention *layer, uint32_t batch, uint32_t seq_len,
                                    attention_plan **out);
/* The same for packed sequences (encoder_ragged.c): `tokens` rows, at most `batch` sequences
 * of at most `seq_len`; always fused, so the layer's head must fit VKB_FUSED_MAX_HEAD. */
vkbert_status attention_scratch_ragged(vkbert_attention *layer, uint32_t batch, uint32_t seq_len,
                                       uint32_t tokens, attention_plan **out);
/* The rows of x and y: B*S, or a ragged scratch's tokens. */
uint32_t attention_rows(const attention_plan *plan);
/* Prepares the layer's dispatches (at most ATTENTION_DISPATCHES) into `sink`: y = attention(x)
 * using `scratch`'s buffers; `mask` NULL or a float mask laid out as bind->mask_stride says
 * (a ragged scratch: the int32 offsets [B+1] of its sequences, bind all zero). */
vkbert_status attention_append(vkbert_attention *layer, attention_plan *scratch,
                               attention_sink *sink, vkb_view x, const vkb_view *mask,
                               const attention_binding *bind, vkb_view y);

/* Resolves a mask shape to element strides over (b, h, i, j) of its padded tensor. */
vkbert_status attention_mask_strides(vkbert_context *ctx, int ndim, const int64_t *shape,
                                     uint32_t batch, uint32_t heads, uint32_t seq_len,
                                     uint32_t stride[4]);

/* vkbert_attention_weights_load: the layer in the safetensors file `path`, as float32 arrays
 * in one allocation that w->q_weight starts; the message of a failure is the thread's. */
vkbert_status vkb_attention_weights_read(const char *path, vkbert_attention_weights *w,
                                         int *embed_dim);

#endif
