/* A model folder's whole pipeline, from text to results: the tokenizer, the encoder and the
 * head the folder describes (sentence-transformers modules, or a sequence classifier). */
#ifndef VKBERT_NN_MODEL_H
#define VKBERT_NN_MODEL_H

#include "io/bert_model.h"
#include "io/st_model.h"
#include "io/tokenizer.h"
#include "nn/encoder/encoder.h"

/* The public tokenizer: the io tokenizer and the folder's length limit. */
struct vkbert_tokenizer {
    tokenizer *tok;
    int max_length; /* the folder's limit (docs/model-folders.md, "Lengths") */
    int lower_text; /* sentence-transformers' do_lower_case: texts lowercased first */
};

struct vkbert_model {
    vkbert_context *ctx;
    vkbert_encoder *encoder;
    vkbert_tokenizer tokenizer;
    st_model st;        /* prompts, and what the folder said */
    bert_config config; /* of the transformer */
    int has_pooler;
    int labels; /* the classifier's, 0 without one */
    char **label_names;
    bert_problem problem;
    int score_activation; /* ST_ACT_* a cross-encoder folder applies to its scores, else -1 */
    char architecture[128];
    uint32_t pool_modes;
    int normalize, truncate, max_length;
    vkbert_precision precision;
    uint64_t parameters;
    /* The model's own share of vkbert_time_split (the passes' is the encoder's clock): batches
     * filled count as prepare, rows put back in order as read. */
    struct {
        double load_ms, tokenize_ms, prepare_ms, read_ms;
    } clock;
};

/* Loads a folder's tokenizer into *out (zeroed first), with what the folder's
 * sentence-transformers files say (`st`, or NULL to read them): the Transformer's folder, the
 * length limit, lowercasing. On failure writes the message. */
int vkb_tokenizer_open(const char *dir, const st_model *st, vkbert_tokenizer *out, char *err,
                       size_t err_size);
void vkb_tokenizer_close(vkbert_tokenizer *t);
/* Encodes one text (and a pair) with sentence-transformers' lowercasing when set; max_len is
 * tok_encode's (INT_MAX: no limit; TOK_FILE_RULES: the tokenizer.json's sections); `left` cuts
 * from the start (tok_encode_cut). Returns 0, or -1 with the message in err. */
int vkb_tokenizer_encode(const vkbert_tokenizer *t, const char *text, const char *pair, int max_len,
                         int left, tok_ids *out, char *err, size_t err_size);

vkbert_status vkb_model_load(vkbert_context *ctx, const char *dir,
                             const vkbert_model_config *config, vkbert_model **out);
void vkb_model_free(vkbert_model *model);

/* ---- model_inputs.c: tokenized inputs, the one path every call takes ---- */

/* How a text becomes an input: the prompt before a text without a pair (its first
 * prompt_tokens tokens left out of pooling), cut at the model's limit (from the start when
 * `left`) or refused over it. */
typedef struct model_rule {
    const char *prompt;
    int prompt_tokens;
    int truncate, left;
} model_rule;

/* These need no lock and leave their message in err (the caller sets the context's). */
/* The text calls' rule: a prompt name or prompt (neither: the folder's default prompt), and
 * truncation as the model was loaded, from the end. */
vkbert_status vkb_model_text_rule(const vkbert_model *m, const char *prompt_name,
                                  const char *prompt, model_rule *out, char *err, size_t size);
/* One input by the rule; its arrays are freed with vkb_model_input_clear. */
vkbert_status vkb_model_tokenize(const vkbert_model *m, const model_rule *rule, const char *text,
                                 const char *pair, vkbert_encoding *out, char *err, size_t size);
/* vkbert_model_encode's work, with full-size options. */
vkbert_status vkb_model_encode(const vkbert_model *m, const char *text, const char *pair,
                               const vkbert_encode_options *o, vkbert_encoding *out, char *err,
                               size_t size);
/* Moves a tok_ids' arrays into a full-size encoding (prompt_tokens 0) and empties `t`. */
void vkb_encoding_from_ids(tok_ids *t, vkbert_encoding *out);
void vkb_model_input_clear(vkbert_encoding *input);

typedef enum run_kind { RUN_SENTENCES, RUN_LOGITS } run_kind;

/* What a batch computes and where its rows go: out[count][width]. */
typedef struct model_run {
    run_kind kind;
    int normalize; /* RUN_SENTENCES: divide by the L2 norm */
    uint32_t width;
    float *out;
} model_run;

/* Runs inputs[order[b]] for b < n (order NULL: inputs[b]) as one batch, packed (or, where the
 * encoder cannot, padded to the longest), in halves where the device needs it, into row
 * order[b] (or b) of run->out. */
vkbert_status vkb_model_run(vkbert_model *m, const model_run *run, const vkbert_encoding *inputs,
                            const int *order, int n);

/* The activation of classifier scores [count][labels]: none, or the folder's activation_fn,
 * else rerank's or classify's rule. */
typedef enum score_rule { SCORES_RAW, SCORES_RERANK, SCORES_CLASSIFY } score_rule;
void vkb_model_scores(const vkbert_model *m, float *scores, int count, score_rule rule);

/* `normalize` (0 the model's, 1, -1, named `name` in the message) as a switch in *out. */
vkbert_status vkb_model_normalize(vkbert_model *m, int normalize, const char *name, int *out);
vkbert_status vkb_model_check_classifier(vkbert_model *m);

vkbert_status vkb_model_embed_inputs(vkbert_model *m, const vkbert_encoding *inputs, int count,
                                     int normalize, float *embeddings);
vkbert_status vkb_model_score_inputs(vkbert_model *m, const vkbert_encoding *inputs, int count,
                                     int raw_scores, float *scores);

/* model_text.c: the text calls, batched by length. */
vkbert_status vkb_model_embed(vkbert_model *m, const char *const *texts, int count,
                              const vkbert_embed_options *options, float *embeddings);
vkbert_status vkb_model_rerank(vkbert_model *m, const char *query, const char *const *documents,
                               int count, int raw_scores, float *scores);
vkbert_status vkb_model_classify(vkbert_model *m, const char *const *texts, int count,
                                 float *scores);

/* model_describe.c */
vkbert_status vkb_model_describe(vkbert_model *m, char **json);

#endif
