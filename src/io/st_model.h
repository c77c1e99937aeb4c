/* A sentence-transformers model folder, read as sentence-transformers 6.2 reads it (folders
 * saved by v3 to v6): modules.json lists the modules in order, each with its folder; Pooling,
 * Dense and Normalize keep a config.json there (Dense its weights in model.safetensors too); the
 * Transformer's folder holds sentence_bert_config.json; the root holds
 * config_sentence_transformers.json with the prompts (and a CrossEncoder's activation_fn). Only
 * Transformer, Pooling, Dense... and Normalize, in that order, or a sequence-classification
 * Transformer alone (a CrossEncoder), are runnable here: any other module or order is refused
 * by name. Plain C, no Vulkan. */
#ifndef VKBERT_IO_ST_MODEL_H
#define VKBERT_IO_ST_MODEL_H

#include <stddef.h>

/* Pooling modes, one bit each, lowest first in the order Pooling.forward concatenates them
 * (cls, max, mean, mean_sqrt_len, weightedmean, lasttoken). Never renumbered. */
enum {
    ST_POOL_CLS = 1,
    ST_POOL_MAX = 2,
    ST_POOL_MEAN = 4,
    ST_POOL_MEAN_SQRT_LEN = 8,
    ST_POOL_WEIGHTEDMEAN = 16,
    ST_POOL_LASTTOKEN = 32,
};
#define ST_POOL_ALL 63u

/* Activations: the torch.nn class whose name Dense's activation_function or a CrossEncoder's
 * activation_fn gives. Softmax (over the labels) is a CrossEncoder's only. */
enum { ST_ACT_IDENTITY = 0, ST_ACT_TANH, ST_ACT_RELU, ST_ACT_GELU, ST_ACT_SIGMOID, ST_ACT_SOFTMAX };

typedef struct st_dense {
    int in_features, out_features;
    int has_bias;
    int activation; /* ST_ACT_*; GELU is torch's default, the exact erf form */
    float *weight;  /* [out_features][in_features], linear.weight */
    float *bias;    /* [out_features], linear.bias; NULL without bias */
} st_dense;

typedef struct st_prompt {
    char *name, *text;
} st_prompt;

typedef struct st_model {
    int has_modules;       /* 0: no modules.json; nothing below was read but score_activation */
    char *transformer_dir; /* the BERT folder: dir itself, or dir/<path> */
    int cross_encoder;     /* the Transformer's task is sequence-classification: its logits are
                              the output, and it is the only module */
    int has_pooling;       /* 1 when has_modules, but for a cross-encoder */
    unsigned pool_modes;   /* ST_POOL_* bits, at least one */
    int include_prompt;    /* 0: prompt tokens are left out of the pooling */
    int word_embedding_dimension; /* Pooling's embedding_dimension */
    int dense_count;
    st_dense *dense;    /* [dense_count], in order */
    int normalize;      /* a Normalize module ends the list: L2 normalization */
    int max_seq_length; /* sentence_bert_config.json; 0: none given (null or absent) */
    int do_lower_case;  /* sentence_bert_config.json; -1: not given (ST's default is false) */
    int prompt_count;
    st_prompt *prompts;        /* [prompt_count], in file order; a null text reads as "" */
    char *default_prompt_name; /* NULL: none */
    /* What a CrossEncoder applies to its logits (config_sentence_transformers.json's
     * activation_fn, else config.json's): ST_ACT_*; ST_SCORES_DEFAULT for a CrossEncoder folder
     * that saves none (Sigmoid for one label, else Identity); ST_SCORES_NONE for any other
     * folder (the caller's rule). Read also without modules.json. */
    int score_activation;
} st_model;

enum { ST_SCORES_NONE = -1, ST_SCORES_DEFAULT = -2 };

/* Reads the folder `dir`. Without modules.json returns 0 with has_modules 0 (and the
 * activation a v4/v5 CrossEncoder saved in config.json, if any). On failure
 * returns -1, leaves *out zeroed and writes "<path>: <problem>" into err. */
int st_model_load(const char *dir, st_model *out, char *err, size_t err_size);
void st_model_free(st_model *m);

/* The width of the pooled vector: one `hidden`-wide piece per mode. */
int st_pool_width(unsigned modes, int hidden);

/* The bit of a pooling mode by name: sentence-transformers' pooling_mode strings (cls,
 * lasttoken, max, mean, mean_sqrt_len_tokens, weightedmean) or the endings of its config keys
 * (cls_token, max_tokens, mean_tokens, weightedmean_tokens), any case. -1 when unknown. */
int st_pool_mode_parse(const char *name, unsigned *bit);
/* The mode's pooling_mode string ("cls"...), for messages; NULL for anything but one bit. */
const char *st_pool_mode_name(unsigned bit);

/* The class name sentence-transformers writes for an activation
 * ("torch.nn.modules.activation.Tanh"...); NULL when unknown. */
const char *st_activation_name(int act);

#endif
