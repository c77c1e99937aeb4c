/* Writes sentence-transformers folders for the tests, file by file as
 * SentenceTransformer.save lays them out, as v5 or (v6) as 6.2 does: modules.json; the
 * Transformer at the root (or in 0_Transformer) with sentence_bert_config.json; <i>_Pooling/
 * config.json; <i>_Dense/{config.json, model.safetensors}; an <i>_Normalize folder (empty
 * before v6); config_sentence_transformers.json. v6 also writes the length as
 * tokenizer_config.json's model_max_length, and writes CrossEncoder.save's folders: the
 * Transformer (sequence-classification) alone. The BERT folder itself is the caller's, written
 * with tiny_bert_write (tiny_bert.h) into st_folder_transformer_dir(). */
#ifndef VKBERT_TEST_ST_FOLDER_H
#define VKBERT_TEST_ST_FOLDER_H

#include "io/bert_model.h"
#include "io/st_model.h"
#include "test_dir.h"
#include "tiny_bert.h"

#include <stddef.h>
#include <stdint.h>

typedef struct st_folder_spec {
    int v6;                       /* sentence-transformers 6.2's files, else v5's */
    int cross_encoder;            /* v6: a CrossEncoder, the Transformer alone (no Pooling...) */
    const char *activation_fn;    /* a CrossEncoder's, in config_sentence_transformers.json */
    int transformer_in_subfolder; /* 1: modules.json puts the BERT folder in 0_Transformer */
    unsigned pool_modes;          /* ST_POOL_* bits */
    int word_embedding_dimension;
    int include_prompt;
    int dense_count;
    const st_dense *dense; /* [dense_count], weights set (st_folder_dense_random) */
    int dense_f16;         /* the Dense weights stored as F16 */
    int normalize;
    int max_seq_length; /* 0: written as null; v6: tokenizer_config.json's model_max_length */
    int do_lower_case;  /* -1: left out */
    int prompt_count;
    const st_prompt *prompts;
    const char *default_prompt_name; /* NULL: written as null */
} st_folder_spec;

/* Allocates d->weight [out][in] and, with has_bias, d->bias, uniform in +-1/sqrt(in) (nn.Linear's
 * init) from the tests' generator; free with st_folder_dense_free. */
void st_folder_dense_random(st_dense *d, uint64_t seed);
void st_folder_dense_free(st_dense *d);

/* Where the caller saves the BERT folder: dir, or dir/0_Transformer (created). Into out. */
void st_folder_transformer_dir(const char *dir, const st_folder_spec *spec, char *out, size_t size);

/* Writes every sentence-transformers file of the spec into dir (which must exist). Returns -1
 * with a message on failure. */
int st_folder_write(const char *dir, const st_folder_spec *spec, char *err, size_t err_size);

/* tokenizer.json as transformers saves BERT's, over `vocab` (ids in order; [PAD] [UNK] [CLS]
 * [SEP] [MASK] first), with the pieces given as JSON text; NULL gives BERT's own: a lowercasing
 * BertNormalizer, the BertPreTokenizer, the [CLS] A [SEP] (B [SEP]) template. */
void st_folder_write_tokenizer_json(const char *dir, const char *const *vocab, int count,
                                    const char *model_type, const char *normalizer, const char *pre,
                                    const char *post);

#endif
