/* The double-precision CPU reference of sentence-transformers' modules after the Transformer
 * (models/Pooling.py, Dense.py, Normalize.py) and of BertForSequenceClassification's head. */
#ifndef VKBERT_REFERENCE_ST_H
#define VKBERT_REFERENCE_ST_H

#include "io/bert_model.h"
#include "io/st_model.h"

#include <stdint.h>

/* Pooling of one sequence: hidden [seq][h], mask [seq] (0 = padding); the first prompt_tokens
 * positions are left out as include_prompt = false does. `modes` are the ST_POOL_* bits,
 * concatenated lowest bit first into out. Returns the width written. */
int ref_st_pool(const double *hidden, const int32_t *mask, int seq, int h, unsigned modes,
                int prompt_tokens, double *out);

/* y[out] = act(W x + b) with W [out][in] (b may be NULL); act is ST_ACT_*. */
void ref_st_dense(const float *w, const float *b, int in, int out, int act, const double *x,
                  double *y);

/* v / max(||v||, 1e-12), as torch.nn.functional.normalize. */
void ref_st_normalize(double *v, int n);

/* What runs after a BertModel: Pooling of `modes` (the first prompt_tokens tokens left out),
 * the Dense modules, Normalize when set. */
typedef struct ref_st_pipeline {
    unsigned modes;
    int prompt_tokens;
    int dense_count;
    const st_dense *dense;
    int normalize;
} ref_st_pipeline;

/* The embedding of one tokenized text [seq], alone and unpadded: BertModel, then the
 * pipeline. Returns its width (at most 4096). */
int ref_st_embedding(const bert_config *c, const bert_weights *w, const ref_st_pipeline *p,
                     const int32_t *ids, const int32_t *type_ids, int seq, double *out);

#endif
