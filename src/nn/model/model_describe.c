/* What a loaded model read and will do, as JSON: the data behind `vkbert info`. */
#include "nn/model/model.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

static const char *const pool_names[] = {"cls_token",           "max_tokens",
                                         "mean_tokens",         "mean_sqrt_len_tokens",
                                         "weightedmean_tokens", "lasttoken"};

static void add_transformer(cJSON *root, const vkbert_model *m)
{
    const bert_config *c = &m->config;
    cJSON_AddStringToObject(root, "architecture", m->architecture);
    cJSON_AddNumberToObject(root, "layers", c->num_hidden_layers);
    cJSON_AddNumberToObject(root, "hidden_size", c->hidden_size);
    cJSON_AddNumberToObject(root, "attention_heads", c->num_attention_heads);
    cJSON_AddNumberToObject(root, "intermediate_size", c->intermediate_size);
    cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(root, "max_position_embeddings", c->max_position_embeddings);
    cJSON_AddBoolToObject(root, "pooler", m->has_pooler);
}

/* Each stage of the tokenizer as tok_describe names it ("Sequence[Precompiled, Replace]",
 * "none"); null where the tokenizer does not say. */
static void add_components(cJSON *t, const tok_info *info)
{
    cJSON *c = cJSON_AddObjectToObject(t, "components");
    const char *const keys[] = {"model", "normalizer", "pre_tokenizer", "post_processor",
                                "decoder"};
    const char *const values[] = {info->model_desc, info->normalizer_desc, info->pre_tokenizer_desc,
                                  info->post_processor_desc, info->decoder_desc};
    for (int i = 0; i < 5; i++)
        if (values[i])
            cJSON_AddStringToObject(c, keys[i], values[i]);
        else
            cJSON_AddNullToObject(c, keys[i]);
}

static void add_tokenizer(cJSON *root, const vkbert_model *m)
{
    tok_info info;
    tok_describe(m->tokenizer.tok, &info);
    cJSON *t = cJSON_AddObjectToObject(root, "tokenizer");
    cJSON_AddStringToObject(t, "source", info.source);
    cJSON_AddNumberToObject(t, "vocab_size", info.vocab_size);
    cJSON_AddBoolToObject(t, "normalizer", info.normalizer);
    cJSON_AddBoolToObject(t, "lowercase", info.lowercase);
    cJSON_AddBoolToObject(t, "strip_accents", info.strip_accents);
    cJSON_AddBoolToObject(t, "handle_chinese_chars", info.handle_chinese_chars);
    cJSON_AddBoolToObject(t, "clean_text", info.clean_text);
    cJSON_AddBoolToObject(t, "bert_pre_tokenizer", info.pre_tokenizer);
    cJSON_AddStringToObject(t, "continuing_subword_prefix", info.continuing_subword_prefix);
    cJSON_AddNumberToObject(t, "max_input_chars_per_word", (double)info.max_input_chars_per_word);
    cJSON_AddBoolToObject(t, "lowercase_texts_first", m->tokenizer.lower_text);
    if (info.model_max_length > 0)
        cJSON_AddNumberToObject(t, "model_max_length", info.model_max_length);
    else
        cJSON_AddNullToObject(t, "model_max_length");
    cJSON *specials = cJSON_AddObjectToObject(t, "special_tokens");
    const tok_special *named[] = {&info.cls, &info.sep, &info.pad, &info.unk, &info.mask};
    const char *const keys[] = {"cls", "sep", "pad", "unk", "mask"};
    for (int i = 0; i < 5; i++) {
        if (!named[i]->text) continue;
        cJSON *s = cJSON_AddObjectToObject(specials, keys[i]);
        cJSON_AddStringToObject(s, "token", named[i]->text);
        cJSON_AddNumberToObject(s, "id", named[i]->id);
    }
    add_components(t, &info);
    cJSON_AddNumberToObject(t, "added_tokens", info.added_tokens);
    cJSON_AddNumberToObject(t, "specials_per_text", info.added_single);
    cJSON_AddNumberToObject(t, "specials_per_pair", info.added_pair);
}

static void add_head(cJSON *root, const vkbert_model *m)
{
    cJSON_AddNumberToObject(root, "max_length", m->max_length);
    cJSON_AddBoolToObject(root, "truncate", m->truncate);
    cJSON *pooling = cJSON_AddArrayToObject(root, "pooling");
    for (unsigned i = 0; i < sizeof pool_names / sizeof *pool_names; i++)
        if (m->pool_modes & (1u << i))
            cJSON_AddItemToArray(pooling, cJSON_CreateString(pool_names[i]));
    cJSON_AddBoolToObject(root, "include_prompt", m->st.include_prompt || !m->st.has_pooling);
    cJSON *dense = cJSON_AddArrayToObject(root, "dense");
    for (int i = 0; i < m->st.dense_count; i++) {
        const st_dense *d = &m->st.dense[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "in_features", d->in_features);
        cJSON_AddNumberToObject(o, "out_features", d->out_features);
        cJSON_AddBoolToObject(o, "bias", d->has_bias);
        cJSON_AddStringToObject(o, "activation", st_activation_name(d->activation));
        cJSON_AddItemToArray(dense, o);
    }
    cJSON_AddBoolToObject(root, "normalize", m->normalize);
    cJSON_AddNumberToObject(root, "embedding_dimension", vkb_encoder_embedding_width(m->encoder));
    cJSON *prompts = cJSON_AddObjectToObject(root, "prompts");
    for (int i = 0; i < m->st.prompt_count; i++)
        cJSON_AddStringToObject(prompts, m->st.prompts[i].name, m->st.prompts[i].text);
    if (m->st.default_prompt_name)
        cJSON_AddStringToObject(root, "default_prompt_name", m->st.default_prompt_name);
    else
        cJSON_AddNullToObject(root, "default_prompt_name");
}

static void add_labels(cJSON *root, const vkbert_model *m)
{
    cJSON *labels = cJSON_AddArrayToObject(root, "labels");
    for (int i = 0; i < m->labels; i++)
        cJSON_AddItemToArray(labels, cJSON_CreateString(m->label_names[i]));
    static const char *const problems[] = {NULL, "regression", "single_label_classification",
                                           "multi_label_classification"};
    if (m->labels && m->problem > BERT_PROBLEM_NONE && m->problem <= BERT_PROBLEM_MULTI_LABEL)
        cJSON_AddStringToObject(root, "problem_type", problems[m->problem]);
    else if (m->labels)
        cJSON_AddNullToObject(root, "problem_type");
    /* a cross-encoder folder's; null: the rule of rerank and classify without one */
    if (m->labels && m->score_activation >= 0)
        cJSON_AddStringToObject(root, "activation_fn", st_activation_name(m->score_activation));
    else if (m->labels)
        cJSON_AddNullToObject(root, "activation_fn");
}

vkbert_status vkb_model_describe(vkbert_model *m, char **json)
{
    *json = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root) return vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    cJSON_AddStringToObject(root, "sentence_transformers",
                            m->st.has_modules ? "modules.json" : "none");
    add_transformer(root, m);
    add_tokenizer(root, m);
    add_head(root, m);
    add_labels(root, m);
    cJSON_AddNumberToObject(root, "parameters", (double)m->parameters);
    static const char *names[] = {"fp32", "fp16", "int8"};
    cJSON_AddStringToObject(root, "precision", names[m->precision]);
    *json = cJSON_Print(root);
    cJSON_Delete(root);
    return *json ? VKBERT_OK : vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
}
