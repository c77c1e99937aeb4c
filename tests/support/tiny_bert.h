/* The tests' tiny BERT folders, written as transformers saves them: config.json,
 * model.safetensors of random weights and, when asked, vocab.txt. One builder, so that every
 * test's model is made the same way; what varies between tests is in tiny_bert. */
#ifndef VKBERT_TEST_TINY_BERT_H
#define VKBERT_TEST_TINY_BERT_H

#include "io/bert_model.h"

#include <stdint.h>

typedef struct tiny_bert {
    bert_config config;       /* the sizes, heads, labels (tiny_bert_config, tiny_bert_small) */
    uint64_t seed;            /* of bert_weights_random */
    int f16;                  /* the weights stored as F16 */
    int keep_f16;             /* with f16: *w rounded to the file's values, for a reference */
    const char *prefix;       /* the tensors' name prefix, such as "bert."; NULL: none */
    const char *const *vocab; /* vocab.txt, one token a line; NULL: no vocab.txt */
    int vocab_count;
    /* Changes the random weights before they are saved; NULL: none. */
    void (*edit)(const bert_config *c, bert_weights *w);
} tiny_bert;

/* A gelu BERT of these sizes, with 2 token types and layer_norm_eps 1e-12, no labels. */
bert_config tiny_bert_config(int hidden, int layers, int heads, int intermediate, int positions,
                             int vocab_size);

/* The small BERT many tests share: hidden 22 (not a multiple of 4), 2 layers, 2 heads,
 * intermediate 36, 64 positions; a BertForSequenceClassification of `labels` when > 0. */
bert_config tiny_bert_small(int vocab_size, int labels);

/* Writes the folder into dir (made if missing). The random weights are kept in *w for a
 * reference (NULL: freed here). Fails the test on any error. */
void tiny_bert_write(const char *dir, const tiny_bert *spec, bert_weights *w);

/* c made a BertForSequenceClassification of `labels` when labels > 0 (else left as it is). */
void tiny_bert_classifier(bert_config *c, int labels);

/* tiny_bert_write of c with vocab.txt, the tensors under "bert." when c has labels, as
 * BertForSequenceClassification saves them. */
void tiny_bert_folder(const char *dir, const bert_config *c, uint64_t seed,
                      const char *const *vocab, int vocab_count, bert_weights *w);

/* dir/vocab.txt of `vocab`, one token a line. Fails the test on any error. */
void tiny_bert_write_vocab(const char *dir, const char *const *vocab, int vocab_count);

#endif
