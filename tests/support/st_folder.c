/* See st_folder.h. The JSON goes through the library's writer (io/json_file.h), the weights
 * through st_save; the names and layout are sentence-transformers' own (SentenceTransformer.save,
 * Pooling/Dense get_config_dict, Module.save_torch_weights). */
#define _XOPEN_SOURCE 700 /* mkdir */

#include "st_folder.h"

#include <criterion/criterion.h>

#include "io/json_file.h"
#include "io/safetensors.h"
#include "reference.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void st_folder_dense_random(st_dense *d, uint64_t seed)
{
    ref_rng rng = {seed};
    size_t n = (size_t)d->out_features * (size_t)d->in_features;
    double bound = 1.0 / sqrt((double)d->in_features);
    d->weight = malloc(n * sizeof *d->weight);
    d->bias = d->has_bias ? malloc((size_t)d->out_features * sizeof *d->bias) : NULL;
    ref_fill(&rng, d->weight, n, -bound, bound);
    if (d->bias) ref_fill(&rng, d->bias, (size_t)d->out_features, -bound, bound);
}

void st_folder_dense_free(st_dense *d)
{
    free(d->weight);
    free(d->bias);
    d->weight = d->bias = NULL;
}

void st_folder_transformer_dir(const char *dir, const st_folder_spec *spec, char *out, size_t size)
{
    if (!spec->transformer_in_subfolder) {
        snprintf(out, size, "%s", dir);
        return;
    }
    snprintf(out, size, "%s/0_Transformer", dir);
    mkdir(out, 0777);
}

/* ---- the files ---- */

static int save_json(const char *dir, const char *name, cJSON *root, char *err, size_t size)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = root ? io_json_save(&(err_ctx){path, err, size}, root) : -1;
    cJSON_Delete(root);
    return rc;
}

/* The "type" SentenceTransformer.save writes: v5's package, or (v6) the defining module. */
static const char *module_type(const st_folder_spec *s, const char *type)
{
    static const char *const v6[][2] = {
        {"Transformer", "sentence_transformers.base.modules.transformer.Transformer"},
        {"Pooling", "sentence_transformers.sentence_transformer.modules.pooling.Pooling"},
        {"Dense", "sentence_transformers.base.modules.dense.Dense"},
        {"Normalize", "sentence_transformers.base.modules.normalize.Normalize"},
    };
    for (int i = 0; s->v6 && i < 4; i++)
        if (strcmp(type, v6[i][0]) == 0) return v6[i][1];
    return NULL;
}

static cJSON *module_entry(const st_folder_spec *s, int idx, const char *path, const char *type)
{
    char name[16], full[96];
    cJSON *e = cJSON_CreateObject();
    snprintf(name, sizeof name, "%d", idx);
    snprintf(full, sizeof full, "sentence_transformers.models.%s", type);
    cJSON_AddNumberToObject(e, "idx", idx);
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "path", path);
    cJSON_AddStringToObject(e, "type", s->v6 ? module_type(s, type) : full);
    return e;
}

/* The module's folder <idx>_<type>, created; its name into out. */
static int make_module_dir(const char *dir, int idx, const char *type, char *out, size_t size)
{
    char path[1100];
    snprintf(out, size, "%d_%s", idx, type);
    snprintf(path, sizeof path, "%s/%s", dir, out);
    return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

static const struct {
    const char *key, *mode;
    unsigned bit;
} pool_keys[] = {
    {"pooling_mode_cls_token", "cls", ST_POOL_CLS},
    {"pooling_mode_mean_tokens", "mean", ST_POOL_MEAN},
    {"pooling_mode_max_tokens", "max", ST_POOL_MAX},
    {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens", ST_POOL_MEAN_SQRT_LEN},
    {"pooling_mode_weightedmean_tokens", "weightedmean", ST_POOL_WEIGHTEDMEAN},
    {"pooling_mode_lasttoken", "lasttoken", ST_POOL_LASTTOKEN}};

/* v6's pooling_mode: one mode's string, or the tuple (a list) in Pooling's order. */
static cJSON *pooling_mode_json(unsigned modes)
{
    cJSON *list = cJSON_CreateArray();
    for (unsigned bit = ST_POOL_CLS; bit <= ST_POOL_LASTTOKEN; bit <<= 1)
        for (size_t i = 0; (modes & bit) && i < sizeof pool_keys / sizeof pool_keys[0]; i++)
            if (pool_keys[i].bit == bit)
                cJSON_AddItemToArray(list, cJSON_CreateString(pool_keys[i].mode));
    if (cJSON_GetArraySize(list) != 1) return list;
    cJSON *one = cJSON_CreateString(list->child->valuestring);
    cJSON_Delete(list);
    return one;
}

static cJSON *pooling_json(const st_folder_spec *s)
{
    cJSON *root = cJSON_CreateObject();
    if (s->v6) {
        cJSON_AddNumberToObject(root, "embedding_dimension", s->word_embedding_dimension);
        cJSON_AddItemToObject(root, "pooling_mode", pooling_mode_json(s->pool_modes));
    } else
        cJSON_AddNumberToObject(root, "word_embedding_dimension", s->word_embedding_dimension);
    for (size_t i = 0; !s->v6 && i < sizeof pool_keys / sizeof pool_keys[0]; i++)
        cJSON_AddBoolToObject(root, pool_keys[i].key, (s->pool_modes & pool_keys[i].bit) != 0);
    cJSON_AddBoolToObject(root, "include_prompt", s->include_prompt);
    return root;
}

static cJSON *dense_json(const st_dense *d)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "in_features", d->in_features);
    cJSON_AddNumberToObject(root, "out_features", d->out_features);
    cJSON_AddBoolToObject(root, "bias", d->has_bias);
    cJSON_AddStringToObject(root, "activation_function", st_activation_name(d->activation));
    cJSON_AddStringToObject(root, "module_input_name", "sentence_embedding");
    cJSON_AddStringToObject(root, "module_output_name", "sentence_embedding");
    return root;
}

/* Normalize's config.json (v6; before it, an empty folder). */
static cJSON *normalize_json(void)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "module_input_name", "sentence_embedding");
    cJSON_AddStringToObject(root, "module_output_name", "sentence_embedding");
    return root;
}

static int dense_weights(const char *mdir, const st_dense *d, int f16, char *err, size_t size)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/model.safetensors", mdir);
    const char *names[] = {"linear.weight", "linear.bias"};
    st_dtype dtype = f16 ? ST_F16 : ST_F32;
    const st_dtype dtypes[] = {dtype, dtype};
    const int ndims[] = {2, 1};
    const int64_t wshape[] = {d->out_features, d->in_features}, bshape[] = {d->out_features};
    const int64_t *const shapes[] = {wshape, bshape};
    const float *const data[] = {d->weight, d->bias};
    return st_save(path, d->has_bias ? 2 : 1, names, dtypes, ndims, shapes, data, err, size);
}

static int write_dense(const char *dir, const st_folder_spec *s, int idx, const st_dense *d,
                       cJSON *modules, char *err, size_t size)
{
    char name[32], mdir[1024];
    if (make_module_dir(dir, idx, "Dense", name, sizeof name) != 0) return -1;
    cJSON_AddItemToArray(modules, module_entry(s, idx, name, "Dense"));
    snprintf(mdir, sizeof mdir, "%s/%s", dir, name);
    if (save_json(mdir, "config.json", dense_json(d), err, size) != 0) return -1;
    return dense_weights(mdir, d, s->dense_f16, err, size);
}

/* v5: max_seq_length and do_lower_case. v6: Transformer.get_config_dict's task and modality
 * (the length goes to tokenizer_config.json). */
static cJSON *sbert_json(const st_folder_spec *s)
{
    cJSON *root = cJSON_CreateObject();
    if (s->v6) {
        int ce = s->cross_encoder;
        cJSON_AddStringToObject(root, "transformer_task",
                                ce ? "sequence-classification" : "feature-extraction");
        cJSON *text =
            cJSON_AddObjectToObject(cJSON_AddObjectToObject(root, "modality_config"), "text");
        cJSON_AddStringToObject(text, "method", "forward");
        cJSON_AddStringToObject(text, "method_output_name", ce ? "logits" : "last_hidden_state");
        cJSON_AddStringToObject(root, "module_output_name", ce ? "scores" : "token_embeddings");
        return root;
    }
    if (s->max_seq_length > 0)
        cJSON_AddNumberToObject(root, "max_seq_length", s->max_seq_length);
    else
        cJSON_AddNullToObject(root, "max_seq_length");
    if (s->do_lower_case >= 0) cJSON_AddBoolToObject(root, "do_lower_case", s->do_lower_case);
    return root;
}

/* v6 saves the Transformer's limit as the tokenizer's model_max_length. */
static int write_model_max_length(const char *tdir, const st_folder_spec *s, char *err, size_t size)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", tdir);
    err_ctx e = {path, err, size};
    cJSON *root = io_path_exists(path) ? io_json_load(&e) : cJSON_CreateObject();
    if (!root) return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(root, "model_max_length");
    cJSON_AddNumberToObject(root, "model_max_length", s->max_seq_length);
    return save_json(tdir, "tokenizer_config.json", root, err, size);
}

/* BaseModel._get_model_config (and CrossEncoder's), keys sorted as json.dump(sort_keys=True)
 * writes them. */
static cJSON *model_config_json(const st_folder_spec *s)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *version = cJSON_AddObjectToObject(root, "__version__");
    cJSON_AddStringToObject(version, "pytorch", s->v6 ? "2.15.0" : "2.5.1");
    cJSON_AddStringToObject(version, "sentence_transformers", s->v6 ? "6.2.0" : "5.1.0");
    cJSON_AddStringToObject(version, "transformers", s->v6 ? "5.23.0" : "4.56.0");
    if (s->activation_fn) cJSON_AddStringToObject(root, "activation_fn", s->activation_fn);
    if (s->default_prompt_name)
        cJSON_AddStringToObject(root, "default_prompt_name", s->default_prompt_name);
    else
        cJSON_AddNullToObject(root, "default_prompt_name");
    cJSON_AddStringToObject(root, "model_type",
                            s->cross_encoder ? "CrossEncoder" : "SentenceTransformer");
    cJSON *prompts = cJSON_AddObjectToObject(root, "prompts");
    for (int i = 0; i < s->prompt_count; i++)
        cJSON_AddStringToObject(prompts, s->prompts[i].name, s->prompts[i].text);
    if (!s->cross_encoder) cJSON_AddStringToObject(root, "similarity_fn_name", "cosine");
    return root;
}

static int write_normalize(const char *dir, const st_folder_spec *s, int idx, cJSON *modules,
                           char *err, size_t size)
{
    char name[32], mdir[1024];
    if (make_module_dir(dir, idx, "Normalize", name, sizeof name) != 0) return -1;
    cJSON_AddItemToArray(modules, module_entry(s, idx, name, "Normalize"));
    snprintf(mdir, sizeof mdir, "%s/%s", dir, name);
    return s->v6 ? save_json(mdir, "config.json", normalize_json(), err, size) : 0;
}

static int write_modules(const char *dir, const st_folder_spec *s, cJSON *modules, char *err,
                         size_t size)
{
    char name[32], mdir[1024];
    int idx = 0;
    cJSON_AddItemToArray(
        modules,
        module_entry(s, idx++, s->transformer_in_subfolder ? "0_Transformer" : "", "Transformer"));
    if (s->cross_encoder) return 0;
    if (make_module_dir(dir, idx, "Pooling", name, sizeof name) != 0) return -1;
    cJSON_AddItemToArray(modules, module_entry(s, idx++, name, "Pooling"));
    snprintf(mdir, sizeof mdir, "%s/%s", dir, name);
    if (save_json(mdir, "config.json", pooling_json(s), err, size) != 0) return -1;
    for (int i = 0; i < s->dense_count; i++)
        if (write_dense(dir, s, idx++, &s->dense[i], modules, err, size) != 0) return -1;
    return s->normalize ? write_normalize(dir, s, idx, modules, err, size) : 0;
}

int st_folder_write(const char *dir, const st_folder_spec *spec, char *err, size_t err_size)
{
    char tdir[1024];
    cJSON *modules = cJSON_CreateArray();
    st_folder_transformer_dir(dir, spec, tdir, sizeof tdir);
    int rc = write_modules(dir, spec, modules, err, err_size);
    if (rc == 0)
        rc = save_json(dir, "modules.json", modules, err, err_size);
    else
        cJSON_Delete(modules);
    if (rc == 0) rc = save_json(tdir, "sentence_bert_config.json", sbert_json(spec), err, err_size);
    if (rc == 0 && spec->v6 && spec->max_seq_length > 0)
        rc = write_model_max_length(tdir, spec, err, err_size);
    if (rc == 0)
        rc = save_json(dir, "config_sentence_transformers.json", model_config_json(spec), err,
                       err_size);
    return rc;
}

/* A JSON string literal of s (the vocabulary is plain enough to need only quotes escaped). */
static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fprintf(f, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
    fputc('"', f);
}

static const char added_tokens[] =
    "[{\"id\":0,\"content\":\"[PAD]\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
    "\"normalized\":false,\"special\":true},"
    "{\"id\":1,\"content\":\"[UNK]\",\"normalized\":false,\"special\":true},"
    "{\"id\":2,\"content\":\"[CLS]\",\"normalized\":false,\"special\":true},"
    "{\"id\":3,\"content\":\"[SEP]\",\"normalized\":false,\"special\":true},"
    "{\"id\":4,\"content\":\"[MASK]\",\"normalized\":false,\"special\":true}]";

static const char bert_normalizer[] =
    "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
    "\"strip_accents\":null,\"lowercase\":true}";

static const char bert_template[] =
    "{\"type\":\"TemplateProcessing\","
    "\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},"
    "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}"
    "}],"
    "\"pair\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},"
    "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}"
    "},"
    "{\"Sequence\":{\"id\":\"B\",\"type_id\":1}},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":1}"
    "}],"
    "\"special_tokens\":{\"[CLS]\":{\"id\":\"[CLS]\",\"ids\":[2],\"tokens\":[\"[CLS]\"]},"
    "\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":[3],\"tokens\":[\"[SEP]\"]}}}";

/* tokenizer.json as transformers saves BERT's, with the pieces given (NULL: BERT's). */
void st_folder_write_tokenizer_json(const char *dir, const char *const *vocab, int count,
                                    const char *model_type, const char *normalizer, const char *pre,
                                    const char *post)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fprintf(f, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":%s,",
            added_tokens);
    fprintf(f, "\"normalizer\":%s,\"pre_tokenizer\":%s,\"post_processor\":%s,\"decoder\":null,",
            normalizer ? normalizer : bert_normalizer,
            pre ? pre : "{\"type\":\"BertPreTokenizer\"}", post ? post : bert_template);
    fprintf(f, "\"model\":{\"type\":\"%s\",\"unk_token\":\"[UNK]\",", model_type);
    fprintf(f, "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":100,\"vocab\":{");
    for (int i = 0; i < count; i++) {
        put_json_string(f, vocab[i]);
        fprintf(f, ":%d%s", i, i + 1 < count ? "," : "}}}");
    }
    cr_assert_eq(fclose(f), 0);
}
