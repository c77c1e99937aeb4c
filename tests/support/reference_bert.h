/* The double-precision CPU reference of HuggingFace's BertModel (docs/semantics.md, "The
 * BERT encoder"), for the encoder tests. */
#ifndef VKBERT_REFERENCE_BERT_H
#define VKBERT_REFERENCE_BERT_H

#include "io/bert_model.h"

/* hidden[B][S][H] and, when the weights have a pooler and `pooled` is not NULL, pooled[B][H].
 * token_type_ids and attention_mask may be NULL (all 0, all 1). */
void ref_bert(const bert_config *c, const bert_weights *w, int batch, int seq_len,
              const int32_t *input_ids, const int32_t *token_type_ids,
              const int32_t *attention_mask, double *hidden, double *pooled);

#endif
