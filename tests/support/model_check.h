/* Model folders for the tests of the public model API (test_model, test_model_st6): a
 * vocabulary and texts, random BERT and sentence-transformers folders written with them, and
 * the checks of embeddings and logits against the double reference. */
#ifndef VKBERT_TEST_MODEL_CHECK_H
#define VKBERT_TEST_MODEL_CHECK_H

#include "io/bert_model.h"
#include "reference_st.h"
#include "st_folder.h"
#include "vkbert.h"

#include <stdint.h>

#define MODEL_VOCAB_SIZE 41
#define MODEL_TEXT_COUNT 7
extern const char *const model_vocab[MODEL_VOCAB_SIZE];
extern const char *const model_texts[MODEL_TEXT_COUNT];

/* A BERT folder at dir over model_vocab (random weights from `seed` kept in *w). */
void model_write_bert(const char *dir, const bert_config *c, bert_weights *w, uint64_t seed);

/* A sentence-transformers folder at tmp/name (into dir, 256 bytes) around a random BERT. */
void model_write_st(const char *tmp, const char *name, const st_folder_spec *spec,
                    const bert_config *c, bert_weights *w, char *dir);

/* Embeds `count` texts with the model at dir and checks each against the reference of the
 * text with `prefix` prepended, truncated to max_len. */
void model_check_embed(const char *dir, const vkbert_model_config *config,
                       const vkbert_embed_options *options, const bert_config *c,
                       const bert_weights *w, const ref_st_pipeline *p, const char *prefix,
                       const char *const *in, int count, int max_len);

/* BertForSequenceClassification's logits [num_labels] of one encoded input. */
void model_reference_logits(const bert_config *c, const bert_weights *w, const vkbert_encoding *e,
                            double *logits);

/* vkbert_model_load with no config; fails the test with the message. */
vkbert_model *model_load(vkbert_context *ctx, const char *dir);

#endif
