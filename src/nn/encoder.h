/* The BERT encoder (HuggingFace BertModel, post-LayerNorm) as a plan of ops: embeddings, then
 * per layer attention (additive mask), residual + LayerNorm, intermediate dense with GELU,
 * output dense, residual + LayerNorm; the pooler's tanh(dense(hidden[:, 0])). One command
 * buffer per (batch, sequence) shape records every layer; activations are reused by all. */
#ifndef VKBERT_NN_ENCODER_H
#define VKBERT_NN_ENCODER_H

#include "io/bert_model.h"
#include "nn/attention.h"

#define ENCODER_MAX_DENSE 4

/* A Dense module of sentence-transformers: act(W x + b), W [out][in] (PyTorch's layout). */
typedef struct encoder_dense_spec {
    int in, out;
    uint32_t activation;        /* VKB_ACTIVATION_* */
    const float *weight, *bias; /* bias may be NULL */
} encoder_dense_spec;

/* What runs after the layers, in the same recorded pass: sentence-transformers' Pooling (the
 * VKB_POOL_* modes, concatenated), Dense modules and Normalize (computed always, read when
 * asked); BertForSequenceClassification's classifier over the pooler's output. */
typedef struct encoder_head_spec {
    uint32_t pool_modes;
    int dense_count;
    const encoder_dense_spec *dense;
    int labels;                               /* 0: no classifier */
    const float *classifier_w, *classifier_b; /* [labels][H], [labels] */
} encoder_head_spec;

/* The head as uploaded: every weight fp32 in e->head_weights, W^T [in][out pitch] then b. */
typedef struct encoder_head {
    uint32_t pool_modes, pool_width;
    int dense_count;
    struct {
        uint32_t in, out, activation;
        uint64_t w_at, b_at;
    } dense[ENCODER_MAX_DENSE];
    uint32_t labels;
    uint64_t classifier_w_at, classifier_b_at;
} encoder_head;

typedef struct encoder_plan {
    uint32_t batch, seq_len;
    vkb_buffer ids;                   /* int32: input ids [B*S], then token type ids [B*S] */
    vkb_buffer mask;                  /* float [B][Sp]: 1 keep, 0 masked (key padding) */
    vkb_buffer hidden;                /* [B*S][Hp], the layers' input and output */
    vkb_buffer attn_y, h1, inter, o2; /* [B*S][Hp], [B*S][Hp], [B*S][Ip], [B*S][Hp] */
    vkb_buffer pooled;                /* [B][Hp] */
    vkb_buffer pool_mask;             /* float [B][Sp]: the tokens pooling sees (prompt excluded) */
    vkb_buffer stage[ENCODER_MAX_DENSE + 1]; /* [B][pitch]: pooling, then each Dense module */
    vkb_buffer unit;                         /* [B][pitch]: the last stage over its L2 norm */
    vkb_buffer logits;                       /* [B][Lp]: the classifier's */
    attention_plan *scratch;
    VkDescriptorPool pool;
    VkCommandBuffer cmd;
    vkb_dispatch *dispatches;
    uint32_t dispatch_count, capacity;
    VkQueryPool queries; /* start and end of the pass, when the context has timestamps */
    double gpu_ms;       /* of the last pass */
} encoder_plan;

struct vkbert_encoder {
    vkbert_context *ctx;
    bert_config config;
    uint32_t hp, ip; /* hidden and intermediate sizes rounded up to 4 */
    bool has_pooler;
    bool half; /* dense weights and the word table stored as fp16 (biases, LayerNorms stay fp32) */
    /* The word table [vocab][hp] in word_chunks buffers of word_rows rows (the last may hold
     * fewer), each within maxStorageBufferRange and maxMemoryAllocationSize: the tables of
     * multilingual vocabularies exceed one binding. */
    vkb_buffer *word;
    uint32_t word_chunks, word_rows;
    vkb_buffer tables; /* position | token type | gamma | beta, rows of hp, fp32 */
    uint64_t type_off, gamma_off, beta_off; /* floats; position at 0 */
    vkbert_attention **attention;           /* per layer: Q, K, V and the attention output dense */
    vkb_buffer dense;  /* per layer: W_inter^T [H][Ip], W_out^T [I][Hp]; then W_pool^T [H][Hp] */
    vkb_buffer params; /* per layer: b_inter [Ip], b_out [Hp], LN1 [2][Hp], LN2 [2][Hp]; b_pool */
    uint64_t inter_block, out_block, layer_params; /* bytes */
    uint64_t param_off[4]; /* within a layer's params: b_inter, b_out, LN1, LN2 (256-aligned) */
    encoder_plan *plan;    /* for the last shape */
    encoder_head head;
    vkb_buffer head_weights;
};

/* The status of the io reader that just failed on this thread: OUT_OF_MEMORY when a host
 * allocation failed, INVALID_ARGUMENT when a file is missing or cannot be opened (the path is
 * the caller's), else `content`: MALFORMED_FILE for a file's content, INVALID_ARGUMENT for a
 * caller's text. */
vkbert_status vkb_io_status(vkbert_status content);

vkbert_status vkb_encoder_new(vkbert_context *ctx, const bert_config *config,
                              const bert_weights *weights, vkbert_precision precision,
                              vkbert_encoder **out);
void vkb_encoder_free(vkbert_encoder *encoder);
vkbert_status vkb_encoder_forward_host(vkbert_encoder *encoder, int batch, int seq_len,
                                       const int32_t *input_ids, const int32_t *token_type_ids,
                                       const int32_t *attention_mask, float *hidden, float *pooled);
/* Sentence embeddings [B][H]: the mean over unmasked tokens, L2-normalized when asked. */
vkbert_status vkb_encoder_embed_host(vkbert_encoder *encoder, int batch, int seq_len,
                                     const int32_t *input_ids, const int32_t *token_type_ids,
                                     const int32_t *attention_mask, int normalize,
                                     float *embeddings);

/* A batch of token ids with its masks, [B][S] each; types and mask may be NULL (0, all 1). */
typedef struct encoder_batch {
    int batch, seq_len;
    const int32_t *ids, *types, *mask;
    int prompt_tokens; /* the first this many tokens are left out of pooling */
} encoder_batch;

/* Replaces the head (mean pooling, no Dense, no classifier after loading); drops the plan. */
vkbert_status vkb_encoder_set_head(vkbert_encoder *encoder, const encoder_head_spec *spec);
/* The width of the head's sentence embeddings: the pooling's, or the last Dense module's. */
uint32_t vkb_encoder_embedding_width(const vkbert_encoder *encoder);
/* Sentence embeddings [B][width] through the head, L2-normalized when asked. */
vkbert_status vkb_encoder_sentences(vkbert_encoder *encoder, const encoder_batch *batch,
                                    int normalize, float *embeddings);
/* Classifier logits [B][labels]. */
vkbert_status vkb_encoder_logits(vkbert_encoder *encoder, const encoder_batch *batch,
                                 float *logits);

/* encoder_head.c */
void encoder_head_free(vkbert_encoder *encoder);
vkbert_status encoder_head_buffers(vkbert_encoder *encoder, encoder_plan *plan);
uint32_t encoder_head_dispatches(const vkbert_encoder *encoder);
vkbert_status encoder_head_prepare(vkbert_encoder *encoder, encoder_plan *plan,
                                   attention_sink *sink);
void encoder_head_buffers_free(vkbert_encoder *encoder, encoder_plan *plan);

/* encoder_plan.c */
vkbert_status encoder_plan_new(vkbert_encoder *encoder, uint32_t batch, uint32_t seq_len,
                               encoder_plan **out);
void encoder_plan_free(vkbert_encoder *encoder, encoder_plan *plan);

#endif
