/* The BERT encoder (HuggingFace BertModel, post-LayerNorm) as a plan of ops: embeddings, then
 * per layer attention (additive mask), residual + LayerNorm, intermediate dense with GELU,
 * output dense, residual + LayerNorm; the pooler's tanh(dense(hidden[:, 0])). One command
 * buffer per (batch, sequence) shape records every layer; activations are reused by all. */
#ifndef VKBERT_NN_ENCODER_H
#define VKBERT_NN_ENCODER_H

#include "io/bert_model.h"
#include "nn/attention/attention.h"

#define ENCODER_MAX_DENSE 4
#define ENCODER_SLOTS 2        /* passes in flight on one encoder: double-buffered plans */
#define ENCODER_SPARE_FENCES 4 /* fences of finished jobs kept for the next ones */
/* The plan cache (encoder_cache.c): up to ENCODER_IDLE_PLANS plans are kept between passes,
 * keyed by their shape, besides those of the jobs in flight. When a new plan is made, idle
 * ones are evicted, least recently used first, until every plan the encoder holds (idle and in
 * flight, the new one included) fits in the budget: encoder->plan_budget bytes of device
 * memory, ENCODER_PLAN_BUDGET when that is 0. A single plan over the budget is still made
 * (a call needs its plan); the idle ones then all go. */
#define ENCODER_IDLE_PLANS 4
#define ENCODER_PLAN_BUDGET ((uint64_t)1 << 30) /* 1 GiB */

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

/* A plan's shape: padded (batch, seq_len); or ragged, packed rows (encoder_ragged.c), where
 * batch, seq_len and tokens are caps in buckets, so that calls of nearby sizes share a plan. */
typedef struct encoder_shape {
    bool ragged;
    uint32_t batch, seq_len, tokens; /* tokens 0 when padded */
} encoder_shape;

typedef struct encoder_plan {
    uint32_t batch, seq_len;
    bool ragged;        /* B*S below reads `tokens` (T), B and S the caps; no `mask` */
    uint32_t tokens;    /* ragged: the rows */
    vkb_buffer offsets; /* ragged: int32 [B+1], sequence b in rows [offsets[b], offsets[b+1]) */
    vkb_buffer ids;    /* int32: ids [B*S], token type ids [B*S], (ragged: positions [T]), a flag */
    vkb_buffer mask;   /* float [B][Sp]: 1 keep, 0 masked (key padding) */
    vkb_buffer hidden; /* [B*S][Hp], the layers' input and output */
    vkb_buffer a_q8;   /* Q8_0_DOT weights: a dense matmul's A quantized per row (ops.h) */
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
    uint64_t used;       /* the cache's clock when it last went idle (least recently used) */
    VkQueryPool queries; /* start and end of the pass, when the context has timestamps */
    double gpu_ms;       /* of the last pass */
    /* The pass between device tensors: re-recorded when the tensors change (their ids). */
    VkCommandBuffer tensor_cmd;
    uint64_t tensor_key[6];
    vkb_dispatch mask_dispatch[2]; /* keep_mask of an int32 [0] or float32 [1] mask tensor */
    vkb_buffer flag; /* host-visible int32: the tensors' pass copies the embedding's flag here */
} encoder_plan;

/* The device tensors of one pass (vkb_encoder_record): input_ids int32 [B,S], token types
 * int32 [B,S] or NULL (all 0), mask int32 or float32 [B,S] (0 masks) or NULL (all 1), the ids
 * checked on the device (the embedding's flag); outputs float32, each NULL or: hidden
 * [B,S,H], pooled [B,H] (a model with a pooler), embeddings [B,width] (the head's sentence
 * embeddings, L2-normalized when `normalize`). */
typedef struct encoder_io {
    const vkbert_tensor *ids, *types, *mask;
    vkbert_tensor *hidden, *pooled, *embeddings;
    int normalize;
} encoder_io;

/* A batch of token ids with its masks, [B][S] each; types and mask may be NULL (0, all 1). */
typedef struct encoder_batch {
    int batch, seq_len;
    const int32_t *ids, *types, *mask;
    /* [B] or NULL (none): the first prompt_tokens[b] tokens of row b are left out of pooling,
     * so that inputs with different prompts share one pass. */
    const int *prompt_tokens;
    /* [B+1] or NULL (padded): packed sequences (encoder_ragged.c), sequence b in rows
     * offsets[b]..offsets[b+1] of ids and types [offsets[B]]; seq_len is then the longest
     * sequence and mask is NULL. */
    const int32_t *offsets;
} encoder_batch;

typedef enum output_kind { OUT_HIDDEN, OUT_SENTENCES, OUT_LOGITS, OUT_TENSORS } output_kind;

/* What one pass reads and where its results go: host arrays, or device tensors (OUT_TENSORS,
 * `io`; `in` then holds the shape only). */
typedef struct encoder_call {
    encoder_batch in;
    output_kind kind;
    float *out, *pooled; /* pooled: with OUT_HIDDEN, may be NULL */
    int normalize;       /* OUT_SENTENCES */
    encoder_io io;       /* OUT_TENSORS */
    bool unlock_to_wait; /* the caller holds the context's lock and lets go of it to wait */
} encoder_call;

/* A submitted pass (encoder_jobs.c): the plan of a slot and the fence it signals. */
struct vkbert_job {
    vkbert_encoder *encoder;
    encoder_call call;
    int slot; /* -1 once finished: the outputs are written, or the job failed */
    VkFence fence;
    vkbert_status status; /* once finished */
    char message[VKB_ERROR_SIZE];
    /* Threads waiting on the fence without the lock (wait_finished), and whether the job was
     * destroyed meanwhile: the last of them then frees it. */
    uint32_t waiters;
    bool orphaned;
    bool lost_hook; /* VKBERT_FAULT_LOST_AFTER_PASSES: its wait reports a lost device */
};

typedef struct encoder_slot {
    encoder_plan *plan;     /* its job's plan while one runs (from the cache), else NULL */
    struct vkbert_job *job; /* running on it, or NULL */
    uint64_t order;         /* of that submission: the oldest is finished first */
} encoder_slot;

/* Host time of the passes, summed since the encoder was made (vkbert_model_time_split). */
typedef struct encoder_clock {
    double prepare_ms, wait_ms, read_ms, gpu_ms;
    uint64_t passes;
} encoder_clock;

struct vkbert_encoder {
    vkbert_context *ctx;
    bert_config config;
    uint32_t hp, ip; /* hidden and intermediate sizes rounded up to 4 */
    bool has_pooler;
    /* Storages, chosen together at creation (biases, LayerNorms and activations stay fp32).
     * The layers' and the pooler's dense weights: F32, F16_PAIRS, Q8_0 blocks
     * (nn/encoder/weights_q8.h) or Q8_0_DOT, those in the dot order, run by integer dot
     * products over activations quantized per row (vkb_tune_int8_dot). */
    vkb_format weight_format;
    vkb_format head_format; /* the heads' (Dense, classifier): F32, or Q8_0 at int8 */
    vkb_format word_format; /* the word table's: F16_PAIRS at fp16 and int8 */
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
    encoder_plan *plan;    /* the plan of the last finished pass (idle in the cache), or NULL */
    encoder_head head;
    vkb_buffer head_weights;
    encoder_slot slots[ENCODER_SLOTS];
    encoder_plan *idle[ENCODER_IDLE_PLANS]; /* the plan cache: plans of no job in flight */
    uint32_t idle_count;
    uint64_t plan_clock;  /* ticks when a plan goes idle */
    uint64_t plan_budget; /* bytes; 0: ENCODER_PLAN_BUDGET */
    uint64_t plans_made;  /* plans built for passes (not vkb_encoder_record's): for tests */
    uint64_t submitted;
    VkFence spare_fences[ENCODER_SPARE_FENCES];
    uint32_t spare_count;
    encoder_plan *recorded; /* vkb_encoder_record's, for passes in the caller's command buffer */
    encoder_clock clock;
};

/* The status of the io reader that just failed on this thread: OUT_OF_MEMORY when a host
 * allocation failed, INVALID_ARGUMENT when a file is missing or cannot be opened (the path is
 * the caller's), else `content`: MALFORMED_FILE for a file's content, INVALID_ARGUMENT for a
 * caller's text. */
vkbert_status vkb_io_status(vkbert_status content);

/* Called WITHOUT ctx's lock (it takes it for the device steps only: making the buffers and
 * the attention layers, staged copies, the head), so that other calls on the context go on
 * while the file's rows are converted, packed, quantized and copied into mapped memory, spread
 * over up to VKBERT_LOAD_THREADS workers (nn/encoder/load_pool.h). A failure, a worker's included,
 * is set on ctx as usual and frees everything the load made. */
vkbert_status vkb_encoder_new(vkbert_context *ctx, const bert_config *config,
                              const bert_weights *weights, vkbert_precision precision,
                              vkbert_encoder **out);
void vkb_encoder_free(vkbert_encoder *encoder);
/* Bytes of a dense weight stored as the matmul's B [k][ldb] at the encoder's precision. */
uint64_t encoder_weight_bytes(const vkbert_encoder *encoder, uint32_t k, uint32_t ldb);
vkbert_status vkb_encoder_forward_host(vkbert_encoder *encoder, int batch, int seq_len,
                                       const int32_t *input_ids, const int32_t *token_type_ids,
                                       const int32_t *attention_mask, float *hidden, float *pooled);
/* Sentence embeddings [B][H]: the mean over unmasked tokens, L2-normalized when asked. */
vkbert_status vkb_encoder_embed_host(vkbert_encoder *encoder, int batch, int seq_len,
                                     const int32_t *input_ids, const int32_t *token_type_ids,
                                     const int32_t *attention_mask, int normalize,
                                     float *embeddings);

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

/* ---- device tensors and jobs (encoder_jobs.c, encoder_tensors.c) ---- */

/* The pass on device tensors, results left on the device (OUT_TENSORS). */
vkbert_status vkb_encoder_forward(vkbert_encoder *encoder, const encoder_io *io);
/* Checks `io` against the encoder (dtypes, shapes) and sets the batch's shape. */
vkbert_status vkb_encoder_check_io(vkbert_encoder *encoder, const encoder_io *io,
                                   encoder_batch *shape);
/* Records into `cmd` (begun, not in a render pass): copies of the input tensors into the
 * plan's buffers, the pass's dispatches, copies to the output tensors, with barriers
 * between them (the first reads the tensors after a compute|transfer -> transfer barrier;
 * the last copy's writes are left to the caller's barrier). Makes or reuses the encoder's
 * plan for recorded passes, of the io's shape: a command buffer recorded with a shape must
 * have finished before one of another shape is recorded. */
vkbert_status vkb_encoder_record(vkbert_encoder *encoder, VkCommandBuffer cmd,
                                 const encoder_io *io);
/* The same into a given plan (the plan's shape is the io's; encoder_record.c). */
void encoder_record_io(vkbert_encoder *encoder, encoder_plan *plan, VkCommandBuffer cmd,
                       const encoder_io *io);
/* Uploads the host inputs of `call` into the plan's buffers (host calls), or records the
 * device tensors' pass into the plan's tensor_cmd when they changed (OUT_TENSORS); returns the
 * command buffer to submit (encoder_record.c). */
vkbert_status encoder_prepare_call(vkbert_encoder *encoder, encoder_plan *plan,
                                   const encoder_call *call, VkCommandBuffer *cmd);
/* Reads a finished pass's host outputs, and its GPU time (encoder_read.c). */
vkbert_status encoder_read_call(vkbert_encoder *encoder, encoder_plan *plan,
                                const encoder_call *call);
/* Checks the host batch of a call (encoder_check.c). */
vkbert_status encoder_check_batch(vkbert_encoder *encoder, const encoder_batch *in);

/* Submits `call` (checked) on a free slot and returns at once: the slot of the oldest job once
 * it is finished (waited for, its outputs written) when none is free; its plan comes from the
 * cache, or is made. The call is run as given (padded or packed); its input arrays are
 * uploaded before this returns, and the job never reads them again. *job is malloc'd;
 * vkb_job_free. */
vkbert_status vkb_encoder_submit(vkbert_encoder *encoder, const encoder_call *call,
                                 struct vkbert_job **job);
/* VKBERT_OK once finished (the outputs written), VKBERT_NOT_READY while running, or the
 * job's failure. */
vkbert_status vkb_job_poll(struct vkbert_job *job);
/* Waits for the job and writes its outputs; lets go of the lock while the device runs when
 * the call says so. Returns the job's status (its message set again on the context). */
vkbert_status vkb_job_wait(struct vkbert_job *job);
/* Waits when it still runs, then frees the job. */
void vkb_job_free(struct vkbert_job *job);
/* Finishes every job in flight and frees the plans, the cache's too (a new head, the
 * encoder's end). */
void vkb_encoder_drop_plans(vkbert_encoder *encoder);
/* An asynchronous host call's steps before its job runs: check, pack, submit (encoder_run.c). */
vkbert_status vkb_encoder_submit_host(vkbert_encoder *encoder, const encoder_call *call,
                                      struct vkbert_job **job);
/* Submit-then-wait: the synchronous calls. */
vkbert_status vkb_encoder_run_call(vkbert_encoder *encoder, const encoder_call *call);

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
vkbert_status encoder_plan_make(vkbert_encoder *encoder, const encoder_shape *shape,
                                encoder_plan **out);
/* The plan's dispatches into `cmd`, a barrier before each (the plan's pass and the device
 * tensors' pass record the same list). */
void encoder_record_pass(const encoder_plan *plan, VkCommandBuffer cmd);

/* ---- the plan cache (encoder_cache.c) ---- */

/* Device memory of a plan's buffers, and of every plan the encoder holds for passes. */
uint64_t encoder_plan_bytes(const encoder_plan *plan);
uint64_t encoder_plans_held(const vkbert_encoder *encoder);
/* An idle plan of this shape taken out of the cache (the most recently used), else a new one;
 * idle plans are evicted as ENCODER_PLAN_BUDGET says, and a make that runs out of memory is
 * tried again once with none idle. */
vkbert_status encoder_cache_take(vkbert_encoder *encoder, const encoder_shape *shape,
                                 encoder_plan **out);
/* A plan whose job finished back into the cache, the least recently used one evicted when
 * ENCODER_IDLE_PLANS are idle. NULL is ignored. */
void encoder_cache_put(vkbert_encoder *encoder, encoder_plan *plan);
/* Frees every idle plan. */
void encoder_cache_clear(vkbert_encoder *encoder);

/* ---- packed batches (encoder_ragged.c) ---- */

/* The rows of the plan's activations: B*S, or T when ragged. */
uint32_t encoder_rows(const encoder_plan *plan);
/* The plan shape a checked call needs. */
encoder_shape encoder_shape_of(const encoder_batch *in);
/* Whether the encoder runs packed batches: the fused attention holds its heads. Inline: both
 * the check step and the pack step ask it. */
static inline bool encoder_can_pack(const vkbert_encoder *encoder)
{
    return encoder->attention[0]->head_dim <= VKB_FUSED_MAX_HEAD;
}
/* Checks a packed batch (in->offsets set; encoder_check.c). */
vkbert_status encoder_check_packed(vkbert_encoder *encoder, const encoder_batch *in);
/* Uploads a packed batch's ids, types, positions, offsets and pooling mask (encoder_record.c). */
vkbert_status encoder_upload_packed(vkbert_encoder *encoder, encoder_plan *plan,
                                    const encoder_batch *in);
/* Appends the gather of each sequence's first row into plan->o2 [B][Hp], the pooler's input. */
vkbert_status encoder_prepare_cls(vkbert_encoder *encoder, encoder_plan *plan,
                                  attention_sink *sink);
/* A padded host call as a packed one, where that gives the same results (docs/ragged.md): right
 * padding, no hidden states asked for, the fused attention (encoder_pack.c). Its arrays are in
 * *storage (free it); false where the call stays padded. */
bool encoder_pack_call(vkbert_encoder *encoder, const encoder_call *call, encoder_call *packed,
                       int32_t **storage);
void encoder_plan_free(vkbert_encoder *encoder, encoder_plan *plan);

#endif
