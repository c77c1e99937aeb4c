/* A model folder's whole pipeline, from text to results: the tokenizer, the encoder and the
 * head the folder describes (sentence-transformers modules, or a sequence classifier). */
#ifndef VKBERT_NN_MODEL_H
#define VKBERT_NN_MODEL_H

#include "io/bert_model.h"
#include "io/st_model.h"
#include "io/tokenizer.h"
#include "nn/encoder.h"

/* The public tokenizer: the io tokenizer and the folder's length limit. */
struct vkbert_tokenizer {
    tokenizer *tok;
    int max_length; /* the smallest limit the folder states (README, "Lengths") */
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
    char architecture[128];
    uint32_t pool_modes;
    int normalize, truncate, max_length;
    vkbert_precision precision;
    uint64_t parameters;
};

/* Loads a folder's tokenizer into *out (zeroed first), with what the folder's
 * sentence-transformers files say (`st`, or NULL to read them): the Transformer's folder, the
 * length limit, lowercasing. On failure writes the message. */
int vkb_tokenizer_open(const char *dir, const st_model *st, vkbert_tokenizer *out, char *err,
                       size_t err_size);
void vkb_tokenizer_close(vkbert_tokenizer *t);
/* Encodes one text (and a pair) with sentence-transformers' lowercasing when set; max_len < 0
 * means no limit. Returns 0, or -1 with the message in err. */
int vkb_tokenizer_encode(const vkbert_tokenizer *t, const char *text, const char *pair, int max_len,
                         tok_ids *out, char *err, size_t err_size);

vkbert_status vkb_model_load(vkbert_context *ctx, const char *dir,
                             const vkbert_model_config *config, vkbert_model **out);
void vkb_model_free(vkbert_model *model);

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
