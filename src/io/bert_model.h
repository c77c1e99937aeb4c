/* A HuggingFace BertModel folder (config.json, model.safetensors) in host memory, in the fixed
 * layout the GPU side uploads: float32 arrays, linear weights in PyTorch's [out][in] layout.
 * Plain C, no Vulkan. The semantics are those of docs/semantics.md, "The BERT encoder". */
#ifndef VKBERT_IO_BERT_MODEL_H
#define VKBERT_IO_BERT_MODEL_H

#include "safetensors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* config.json's "problem_type": what the logits are trained for (null: HF infers it). */
typedef enum bert_problem {
    BERT_PROBLEM_NONE,
    BERT_PROBLEM_REGRESSION,
    BERT_PROBLEM_SINGLE_LABEL, /* "single_label_classification" */
    BERT_PROBLEM_MULTI_LABEL,  /* "multi_label_classification" */
} bert_problem;

typedef struct bert_config {
    int hidden_size; /* H */
    int num_hidden_layers;
    int num_attention_heads;
    int intermediate_size; /* I */
    int max_position_embeddings;
    int type_vocab_size;
    int vocab_size;
    double layer_norm_eps; /* 1e-12 when config.json has none, as in HF's BertConfig */
    char hidden_act[32];   /* only "gelu" (exact erf GELU) loads */
    /* Sequence classification, read as transformers' PretrainedConfig reads config.json. */
    char architecture[64];     /* "architectures"[0]; "" when absent */
    int num_labels;            /* len(id2label), else "num_labels", else 2; 0: no classifier */
    bert_problem problem_type; /* "problem_type" */
} bert_config;

/* One encoder layer; shapes with H = hidden_size, I = intermediate_size. */
typedef struct bert_layer_weights {
    float *q_w, *q_b, *k_w, *k_b, *v_w, *v_b; /* [H][H], [H] */
    float *attn_out_w, *attn_out_b;           /* [H][H], [H] */
    float *attn_ln_gamma, *attn_ln_beta;      /* [H] */
    float *inter_w, *inter_b;                 /* [I][H], [I] */
    float *out_w, *out_b;                     /* [H][I], [H] */
    float *out_ln_gamma, *out_ln_beta;        /* [H] */
} bert_layer_weights;

typedef struct bert_weights {
    float *word;               /* [vocab_size][H] */
    float *position;           /* [max_position_embeddings][H] */
    float *token_type;         /* [type_vocab_size][H] */
    float *ln_gamma, *ln_beta; /* [H] */
    int num_layers;
    bert_layer_weights *layers; /* [num_layers] */
    int has_pooler;             /* 0 when the file has no pooler.dense.* (pooler arrays NULL) */
    float *pooler_w, *pooler_b; /* [H][H], [H] */
    /* BertForSequenceClassification's head on the pooler's output: top-level tensors
     * classifier.weight and classifier.bias, outside the encoder's "bert." prefix. */
    int has_classifier;                 /* 0: arrays NULL */
    float *classifier_w, *classifier_b; /* [num_labels][H], [num_labels] */
    /* bert_model_load's model.safetensors, mapped read-only: the arrays of its aligned F32
     * tensors point into it instead of into copies (not to be written or freed one by one).
     * NULL when every array is allocated. bert_weights_free unmaps it. */
    const void *mapping;
    size_t mapping_size;
    /* [bert_tensor_count] in bert_tensor_at's order, set by bert_model_load (NULL otherwise):
     * where each tensor's data lies in the mapping and its dtype. A matrix (2-D tensor) that is
     * not an aligned F32 one has a NULL array and is read only through bert_weights_rows, so
     * that an F16 or BF16 model never has a whole float32 copy in host memory. */
    struct bert_source *sources;
    int source_count;
    bert_config sizes; /* the config the arrays were made for: their shapes */
} bert_weights;

/* A tensor's data as the file holds it. */
typedef struct bert_source {
    st_dtype dtype;      /* ST_F32, ST_F16, ST_BF16 or ST_F64 */
    const void *data;    /* in bert_weights.mapping; any alignment */
    uint64_t rows, cols; /* a vector is one row */
} bert_source;

typedef struct bert_model {
    bert_config config;
    bert_weights weights;
    char **labels; /* id2label, [config.num_labels] when weights.has_classifier, else NULL */
} bert_model;

/* Reads config.json. Every integer field above must be present and positive, hidden_size a
 * multiple of num_attention_heads, hidden_act "gelu" (the default when absent), and
 * position_embedding_type, when present, "absolute". The classifier fields follow
 * PretrainedConfig: "id2label", when given, is an object with the keys "0".."n-1" and sets
 * num_labels (a "num_labels" beside it is ignored); "label2id" must be an object when given;
 * "problem_type" is null or one of HF's three strings. On failure returns -1 and writes a
 * message naming the file and the field into err. */
int bert_config_load(const char *path, bert_config *out, char *err, size_t err_size);
/* Whether the config.json at path names another architecture than BERT (model_type): -1 with
 * the message then, else 0 (also for a missing or malformed file, which bert_config_load
 * reports). Read before the tokenizer, whose errors would hide the cause. */
int bert_config_check_type(const char *path, char *err, size_t err_size);

/* The label names of config.json, [num_labels] (the config's count): id2label's values, or
 * "LABEL_i" when it has none. Free with bert_labels_free. */
int bert_labels_load(const char *path, int num_labels, char ***out, char *err, size_t err_size);
void bert_labels_free(char **labels, int num_labels);

/* Writes config.json for c: "architectures" [c->architecture, or BertModel when empty], the
 * sizes, and when num_labels > 0, id2label and label2id with the names in `labels` (NULL:
 * "LABEL_i"), and problem_type. For tests and tools; unchecked. */
int bert_config_save(const char *path, const bert_config *c, const char *const *labels, char *err,
                     size_t err_size);

/* Reads dir/config.json and dir/model.safetensors (F32, F16, BF16 or F64 tensors, HF names,
 * optionally all under "bert."; tensors it does not use are ignored). Aligned F32 tensors are
 * read in place from the mapped file (weights.mapping); other vectors are converted to
 * float32 copies and other matrices left NULL, to be read with bert_weights_rows. The
 * classifier loads
 * when config.json's architecture is BertForSequenceClassification and the file holds
 * classifier.weight; then the pooler and classifier.bias must be there too. Any other BertFor*
 * head is ignored, as AutoModel does. A folder with pytorch_model.bin and no
 * model.safetensors is refused with a message saying how to convert it. On failure returns
 * -1, leaves *out zeroed and writes a message naming the file and the field or tensor, with
 * the tensor's shape and the one expected. */
int bert_model_load(const char *dir, bert_model *out, char *err, size_t err_size);
void bert_model_free(bert_model *model);
void bert_weights_free(bert_weights *w);
/* Says that data[count], one of w's arrays, is uploaded and will not be read soon: where it lies
 * in the mapping, its pages leave the resident set (they are read from the file again when
 * touched). No effect on allocated arrays. */
void bert_weights_release(const bert_weights *w, const float *data, size_t count);
/* Rows [first_row, first_row + rows) of one of w's tensors as float32, `tensor` naming it by
 * the address of its array in w (&w->word, &w->layers[l].q_w, ...); a vector is one row. Sets
 * *out to the rows where they lie (the array, or the mapping for an aligned F32 matrix) or, for
 * F16, BF16, F64 or misaligned F32 data, converts them into scratch (rows x cols floats) and
 * sets *out to scratch. False (and *out NULL) for a tensor that is not w's, a range past its
 * rows, or an absent one (no pooler, no classifier). Reads only; safe from several threads. */
bool bert_weights_rows(const bert_weights *w, float *const *tensor, uint64_t first_row,
                       uint64_t rows, float *scratch, const float **out);
/* The same for the whole mapping: also the pages a read of a small neighbouring array brought
 * back (a fault maps a whole large folio of the page cache, not just one page). */
void bert_weights_release_all(const bert_weights *w);

/* Allocates every array of *out and fills it with deterministic uniform values: linear
 * weights and biases in +-1/sqrt(fan_in), LayerNorm gamma 1 + U(-0.1, 0.1), beta U(-0.1, 0.1),
 * embeddings U(-1, 1). With a pooler, and a classifier when c->num_labels > 0. Returns -1
 * when out of memory. */
int bert_weights_random(const bert_config *c, uint64_t seed, bert_weights *out);

/* Writes dir/config.json (bert_config_save, default label names) and dir/model.safetensors
 * (creating dir if needed) with HF names, each under `prefix` (NULL or "" for none, "bert."
 * for a BertFor* checkpoint) but the classifier's, as F16 when `f16` is set, else F32. With a
 * classifier and no architecture in c, config.json names BertForSequenceClassification. For
 * tests and tools; the config is written as given, unchecked. */
int bert_model_save(const char *dir, const bert_config *c, const bert_weights *w, int f16,
                    const char *prefix, char *err, size_t err_size);

/* Every tensor of a model, in file order: for code that walks them all (the writer, uploads). */
typedef struct bert_tensor {
    char name[96]; /* the HF name, without prefix */
    int top_level; /* never under the prefix (the classifier) */
    int ndim;      /* 1 or 2 */
    int64_t shape[2];
    float *data;
} bert_tensor;

int bert_tensor_count(const bert_weights *w);
/* The i-th tensor, 0 <= i < bert_tensor_count(w); shapes from c. */
void bert_tensor_at(const bert_config *c, const bert_weights *w, int i, bert_tensor *out);

#endif
