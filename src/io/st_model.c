/* A sentence-transformers folder: modules.json and the files at the root. Every rule below is
 * sentence-transformers 6.2's (BaseModel._load_config_modules, Transformer.load, CrossEncoder),
 * which reads the folders v3 to v5 saved too; the modules' own files are read in
 * st_modules.c. */
#include "st_model.h"

#include "st_module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum kind { K_TRANSFORMER, K_POOLING, K_DENSE, K_NORMALIZE, K_OTHER } kind;

static const char *const kind_names[] = {"Transformer", "Pooling", "Dense", "Normalize"};

#define T (1u << K_TRANSFORMER)
#define P (1u << K_POOLING)
#define D (1u << K_DENSE)
#define N (1u << K_NORMALIZE)

/* modules.json's "type" is "<module>.<Class>", imported with util.import_from_string: these are
 * the modules that define or re-export each class in 6.2, and the old paths its
 * util/deprecated_import.py aliases ("sentence_transformers.models" is v5's package, what v2 to
 * v5 wrote). v6 writes the defining module. */
static const struct {
    const char *module;
    unsigned kinds;
} homes[] = {
    {"sentence_transformers.models", T | P | D | N},
    {"sentence_transformers.sentence_transformer.modules", T | P | D | N},
    {"sentence_transformers.base.modules", T | D | N},
    {"sentence_transformers.cross_encoder.modules", T | D},
    {"sentence_transformers.sparse_encoder.modules", T | D},
    {"sentence_transformers.base.modules.transformer", T},
    {"sentence_transformers.base.modules.dense", D},
    {"sentence_transformers.base.modules.normalize", N},
    {"sentence_transformers.sentence_transformer.modules.pooling", P},
    {"sentence_transformers.sentence_transformer.modules.normalize", N}, /* moved in 6.0 */
};

#undef T
#undef P
#undef D
#undef N

/* Also "sentence_transformers.models.<Class>.<Class>": the v5 file (an alias now) and its
 * class. */
static int is_home(const char *module, size_t len, kind k)
{
    static const char v5[] = "sentence_transformers.models.";
    for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++)
        if ((homes[i].kinds & (1u << k)) && strlen(homes[i].module) == len &&
            strncmp(module, homes[i].module, len) == 0)
            return 1;
    size_t n = strlen(kind_names[k]);
    return len == sizeof v5 - 1 + n && strncmp(module, v5, sizeof v5 - 1) == 0 &&
           strncmp(module + sizeof v5 - 1, kind_names[k], n) == 0;
}

static kind module_kind(const char *type)
{
    const char *dot = strrchr(type, '.');
    for (int k = 0; dot && k < K_OTHER; k++)
        if (strcmp(dot + 1, kind_names[k]) == 0 && is_home(type, (size_t)(dot - type), (kind)k))
            return (kind)k;
    return K_OTHER;
}

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

/* dir itself for "" (the Transformer saved at the root), else dir/path. */
static char *module_dir(const char *dir, const char *path)
{
    return path[0] ? io_path_join(dir, path) : copy_string(dir);
}

/* ---- each module ---- */

static int load_json_module(const char *mdir, int (*parse)(const err_ctx *, const cJSON *, void *),
                            void *out, char *err, size_t err_size)
{
    char *path = io_path_join(mdir, "config.json");
    err_ctx e = {path, err, err_size};
    if (!path) return io_fail_oom(&(err_ctx){mdir, err, err_size}, "out of memory");
    cJSON *root = io_json_load(&e);
    int rc = root ? parse(&e, root, out) : -1;
    cJSON_Delete(root);
    free(path);
    return rc;
}

static int parse_pooling(const err_ctx *e, const cJSON *root, void *m)
{
    return st_pooling_parse(e, root, m);
}

static int parse_dense(const err_ctx *e, const cJSON *root, void *d)
{
    return st_dense_parse(e, root, d);
}

static int add_dense(const char *mdir, st_model *m, char *err, size_t err_size)
{
    st_dense *grown = realloc(m->dense, (size_t)(m->dense_count + 1) * sizeof *grown);
    if (!grown) return io_fail_oom(&(err_ctx){mdir, err, err_size}, "out of memory");
    m->dense = grown;
    st_dense *d = &m->dense[m->dense_count++];
    memset(d, 0, sizeof *d);
    if (load_json_module(mdir, parse_dense, d, err, err_size) != 0) return -1;
    return st_dense_load_weights(&(err_ctx){mdir, err, err_size}, mdir, d);
}

/* Transformer.load tries these in turn; older versions wrote one per architecture. */
static const char *const sbert_configs[] = {
    "sentence_bert_config.json",       "sentence_roberta_config.json",
    "sentence_distilbert_config.json", "sentence_camembert_config.json",
    "sentence_albert_config.json",     "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
};

/* Transformer.load_config: without modality_config the task's defaults
 * (TRANSFORMER_TASK_DEFAULTS) hold and module_output_name is not read; with one, __init__
 * needs module_output_name. vkbert feeds text to forward and takes last_hidden_state as
 * token_embeddings, or logits as scores; a "message" entry would route text through a chat
 * template. */
static int check_modality(const err_ctx *e, const cJSON *root, int scores)
{
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(root, "modality_config");
    const char *want = scores ? "logits" : "last_hidden_state";
    const char *want_name = scores ? "scores" : "token_embeddings";
    const char *method = NULL, *output = NULL, *name = NULL;
    if (!mc || cJSON_IsNull(mc)) return 0;
    if (!cJSON_IsObject(mc)) return io_fail(e, "field 'modality_config' is not an object");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(mc, "text");
    if (cJSON_IsObject(text) && (io_json_string(e, text, "method", &method) ||
                                 io_json_string(e, text, "method_output_name", &output) ||
                                 io_json_string(e, root, "module_output_name", &name)))
        return -1;
    int ok = method && output && name && strcmp(method, "forward") == 0 &&
             strcmp(output, want) == 0 && strcmp(name, want_name) == 0 &&
             !cJSON_GetObjectItemCaseSensitive(mc, "message");
    if (ok) return 0;
    return io_fail(e,
                   "fields 'modality_config' and 'module_output_name': vkbert runs {\"text\": "
                   "{\"method\": \"forward\", \"method_output_name\": \"%s\"}} with "
                   "module_output_name \"%s\" for this transformer_task",
                   want, want_name);
}

/* The task picks the AutoModel class: feature-extraction (BertModel, the default) gives token
 * embeddings for a Pooling, sequence-classification (a CrossEncoder's) the classifier's
 * logits. processing_kwargs would change how texts are tokenized. */
static int parse_task(const err_ctx *e, const cJSON *root, st_model *m)
{
    const char *task;
    const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(root, "processing_kwargs");
    if (io_json_string(e, root, "transformer_task", &task) != 0) return -1;
    m->cross_encoder = task && strcmp(task, "sequence-classification") == 0;
    if (task && !m->cross_encoder && strcmp(task, "feature-extraction") != 0)
        return io_fail(e,
                       "field 'transformer_task' is \"%.40s\": vkbert runs feature-extraction "
                       "and sequence-classification",
                       task);
    if (kwargs && !cJSON_IsNull(kwargs) && !(cJSON_IsObject(kwargs) && !kwargs->child))
        return io_fail(e, "field 'processing_kwargs' is set: vkbert tokenizes as the tokenizer's "
                          "files alone say");
    return check_modality(e, root, m->cross_encoder);
}

/* max_seq_length and do_lower_case: v5's keys, which 6.2's Transformer still takes. */
static int parse_sbert(const err_ctx *e, const cJSON *root, st_model *m)
{
    if (!cJSON_IsObject(root)) return io_fail(e, "not a JSON object");
    /* null: Transformer infers it from the model and the tokenizer. */
    if (io_json_positive_int(e, root, "max_seq_length", 0, &m->max_seq_length) != 0) return -1;
    if (io_json_bool(e, root, "do_lower_case", 0, &m->do_lower_case) != 0) return -1;
    return parse_task(e, root, m);
}

static int load_sbert_config(st_model *m, char *err, size_t err_size)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof sbert_configs / sizeof sbert_configs[0]; i++) {
        char *path = io_path_join(m->transformer_dir, sbert_configs[i]);
        err_ctx e = {path, err, err_size};
        cJSON *root = NULL;
        if (!path)
            rc = io_fail_oom(&(err_ctx){m->transformer_dir, err, err_size}, "out of memory");
        else if (io_path_exists(path))
            rc = (root = io_json_load(&e)) ? parse_sbert(&e, root, m) : -1;
        cJSON_Delete(root);
        free(path);
        if (root) break;
    }
    return rc;
}

static int load_transformer(const char *mdir, st_model *m, char *err, size_t err_size)
{
    if (!(m->transformer_dir = copy_string(mdir)))
        return io_fail_oom(&(err_ctx){mdir, err, err_size}, "out of memory");
    return load_sbert_config(m, err, err_size);
}

/* ---- modules.json ---- */

typedef struct walk {
    const char *dir;
    err_ctx e; /* modules.json */
    kind last;
} walk;

/* vkbert runs Transformer, Pooling, any number of Dense, then at most one Normalize; or a
 * sequence-classification Transformer alone, whose output is the scores. */
static int check_order(const walk *w, int index, kind k, const st_model *m)
{
    if (w->last == K_TRANSFORMER && m->cross_encoder)
        return io_fail(&w->e,
                       "module %d is %s: a sequence-classification Transformer (a "
                       "cross-encoder's) must be the only module",
                       index, kind_names[k]);
    int ok = (w->last == K_OTHER) == (k == K_TRANSFORMER) &&
             (k != K_POOLING || w->last == K_TRANSFORMER) &&
             ((k != K_DENSE && k != K_NORMALIZE) || w->last == K_POOLING || w->last == K_DENSE);
    if (ok) return 0;
    return io_fail(&w->e,
                   "module %d is %s: vkbert runs Transformer, Pooling, any number of Dense, then "
                   "an optional Normalize, in that order",
                   index, kind_names[k]);
}

static int parse_normalize(const err_ctx *e, const cJSON *root, void *unused)
{
    (void)unused;
    return st_normalize_parse(e, root);
}

/* Normalize needs no folder: _load_sbert_model gave it none before v6, and v6's Normalize.load
 * reads a config.json only where there is one. */
static int load_normalize(const char *dir, const char *path, st_model *m, char *err,
                          size_t err_size)
{
    char *mdir = module_dir(dir, path);
    char *config = mdir ? io_path_join(mdir, "config.json") : NULL;
    int rc = config ? 0 : io_fail_oom(&(err_ctx){dir, err, err_size}, "out of memory");
    if (rc == 0 && io_path_exists(config))
        rc = load_json_module(mdir, parse_normalize, NULL, err, err_size);
    free(config);
    free(mdir);
    m->normalize = 1;
    return rc;
}

static int load_module(walk *w, int index, kind k, const char *path, st_model *m, char *err,
                       size_t err_size)
{
    if (check_order(w, index, k, m) != 0) return -1;
    w->last = k;
    if (k == K_NORMALIZE) return load_normalize(w->dir, path, m, err, err_size);
    char *mdir = module_dir(w->dir, path);
    int rc = mdir ? 0 : io_fail_oom(&w->e, "out of memory");
    if (rc == 0 && !io_path_exists(mdir))
        rc = io_fail(&(err_ctx){mdir, err, err_size},
                     "the folder of module %d (%s) is missing; modules.json names it", index,
                     kind_names[k]);
    if (rc == 0 && k == K_TRANSFORMER) rc = load_transformer(mdir, m, err, err_size);
    if (rc == 0 && k == K_POOLING) {
        m->has_pooling = 1;
        rc = load_json_module(mdir, parse_pooling, m, err, err_size);
    }
    if (rc == 0 && k == K_DENSE) rc = add_dense(mdir, m, err, err_size);
    free(mdir);
    return rc;
}

static int walk_entry(walk *w, int index, const cJSON *entry, st_model *m, char *err,
                      size_t err_size)
{
    const char *type, *path;
    if (!cJSON_IsObject(entry)) return io_fail(&w->e, "module %d is not an object", index);
    if (io_json_string(&w->e, entry, "type", &type) != 0 ||
        io_json_string(&w->e, entry, "path", &path) != 0)
        return -1;
    if (!type || !path) return io_fail(&w->e, "module %d has no type or no path", index);
    kind k = module_kind(type);
    if (k == K_OTHER)
        return io_fail(&w->e,
                       "module %d has type \"%.80s\", which vkbert cannot run (it runs "
                       "Transformer, Pooling, Dense and Normalize of sentence_transformers)",
                       index, type);
    return load_module(w, index, k, path, m, err, err_size);
}

static int load_modules(const char *dir, const char *path, st_model *m, char *err, size_t err_size)
{
    walk w = {dir, {path, err, err_size}, K_OTHER};
    cJSON *root = io_json_load(&w.e);
    if (!root) return -1;
    int rc = cJSON_IsArray(root) ? 0 : io_fail(&w.e, "not a JSON array");
    int index = 0;
    for (const cJSON *it = root->child; rc == 0 && it; it = it->next)
        rc = walk_entry(&w, index++, it, m, err, err_size);
    int ends = w.last == K_POOLING || w.last == K_DENSE || w.last == K_NORMALIZE ||
               (w.last == K_TRANSFORMER && m->cross_encoder);
    if (rc == 0 && !ends)
        rc = io_fail(&w.e,
                     "no %s module: vkbert needs a Transformer and a Pooling (or a "
                     "sequence-classification Transformer alone)",
                     w.last == K_OTHER ? "Transformer" : "Pooling");
    cJSON_Delete(root);
    return rc;
}

/* ---- config_sentence_transformers.json ---- */

static int add_prompt(const err_ctx *e, const cJSON *it, st_model *m)
{
    /* BaseModel._validate_prompts reads a null prompt as "". */
    if (!cJSON_IsString(it) && !cJSON_IsNull(it))
        return io_fail(e, "field 'prompts' entry \"%.40s\" is not a string", it->string);
    st_prompt *p = &m->prompts[m->prompt_count];
    p->name = copy_string(it->string);
    p->text = copy_string(cJSON_IsString(it) ? it->valuestring : "");
    m->prompt_count++;
    return p->name && p->text ? 0 : io_fail_oom(e, "out of memory");
}

static int find_prompt(const st_model *m, const char *name)
{
    for (int i = 0; i < m->prompt_count; i++)
        if (strcmp(m->prompts[i].name, name) == 0) return i;
    return -1;
}

static int parse_prompts(const err_ctx *e, const cJSON *root, st_model *m)
{
    const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(root, "prompts");
    const char *def;
    if (prompts && !cJSON_IsNull(prompts) && !cJSON_IsObject(prompts))
        return io_fail(e, "field 'prompts' is not an object");
    int n = cJSON_IsObject(prompts) ? cJSON_GetArraySize(prompts) : 0;
    if (n > 0 && !(m->prompts = calloc((size_t)n, sizeof *m->prompts)))
        return io_fail_oom(e, "out of memory");
    for (const cJSON *it = n ? prompts->child : NULL; it; it = it->next)
        if (add_prompt(e, it, m) != 0) return -1;
    if (io_json_string(e, root, "default_prompt_name", &def) != 0) return -1;
    if (!def) return 0;
    if (find_prompt(m, def) < 0)
        return io_fail(
            e, "field 'default_prompt_name' is \"%.40s\", which is not among the prompts", def);
    m->default_prompt_name = copy_string(def);
    return m->default_prompt_name ? 0 : io_fail_oom(e, "out of memory");
}

/* ---- a CrossEncoder's activation ---- */

/* CrossEncoder._resolve_activation_fn imports a torch.* path and calls it without arguments
 * (so Softmax takes dim 1 of the [texts, labels] scores); another path is custom code, which
 * vkbert never runs. */
static int parse_activation(const err_ctx *e, const char *key, const char *name, st_model *m)
{
    m->score_activation = st_activation_parse(name);
    if (m->score_activation >= 0) return 0;
    return io_fail(e,
                   "field '%s' is \"%.60s\": vkbert applies Identity, Sigmoid, Tanh, ReLU, "
                   "GELU or Softmax to a cross-encoder's scores",
                   key, name);
}

/* CrossEncoder._parse_model_config: it runs where model_type says CrossEncoder, the type
 * that loads the folder's modules as they are (another type converts them). */
static int parse_model_activation(const err_ctx *e, const cJSON *root, st_model *m)
{
    const char *type, *act;
    if (io_json_string(e, root, "model_type", &type) != 0 ||
        io_json_string(e, root, "activation_fn", &act) != 0)
        return -1;
    if (!type || strcmp(type, "CrossEncoder") != 0) return 0;
    m->score_activation = ST_SCORES_DEFAULT;
    return act ? parse_activation(e, "activation_fn", act, m) : 0;
}

static int parse_root_config(const err_ctx *e, const cJSON *root, st_model *m)
{
    if (!cJSON_IsObject(root)) return io_fail(e, "not a JSON object");
    return parse_prompts(e, root, m) || parse_model_activation(e, root, m) ? -1 : 0;
}

/* CrossEncoder.get_default_activation_fn, where none is set yet: the Transformer's config.json
 * as v4 and v5 saved it ("sentence_transformers": {"activation_fn": ...}), else v3's
 * sbert_ce_default_activation_function. */
static int parse_config_activation(const err_ctx *e, const cJSON *root, st_model *m)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "sentence_transformers");
    const char *act = NULL, *key = "sbert_ce_default_activation_function";
    if (!cJSON_IsObject(root)) return 0; /* the model's loader says what is wrong */
    if (cJSON_IsObject(st) && cJSON_GetObjectItemCaseSensitive(st, "activation_fn")) {
        key = "activation_fn";
        if (io_json_string(e, st, key, &act) != 0) return -1;
    } else if (io_json_string(e, root, key, &act) != 0)
        return -1;
    return act ? parse_activation(e, key, act, m) : 0;
}

typedef int (*root_parser)(const err_ctx *, const cJSON *, st_model *);

/* dir/name parsed, if there is one; one that cannot be read fails, but with `lenient` (the
 * Transformer's config.json, which the model's loader reports on). */
static int load_file(const char *dir, const char *name, root_parser parse, int lenient, st_model *m,
                     char *err, size_t err_size)
{
    char *path = io_path_join(dir, name);
    err_ctx e = {path, err, err_size};
    if (!path) return io_fail_oom(&(err_ctx){dir, err, err_size}, "out of memory");
    int rc = 0;
    if (io_path_exists(path)) {
        cJSON *root = io_json_load(&e);
        rc = root ? parse(&e, root, m) : lenient ? 0 : -1;
        cJSON_Delete(root);
    }
    free(path);
    return rc;
}

/* ---- the folder ---- */

void st_model_free(st_model *m)
{
    if (!m) return;
    free(m->transformer_dir);
    for (int i = 0; i < m->dense_count; i++) {
        free(m->dense[i].weight);
        free(m->dense[i].bias);
    }
    free(m->dense);
    for (int i = 0; i < m->prompt_count; i++) {
        free(m->prompts[i].name);
        free(m->prompts[i].text);
    }
    free(m->prompts);
    free(m->default_prompt_name);
    memset(m, 0, sizeof *m);
}

int st_model_load(const char *dir, st_model *out, char *err, size_t err_size)
{
    err_ctx e = {dir, err, err_size};
    if (!out) return io_fail(&e, "no output given");
    memset(out, 0, sizeof *out);
    if (!dir) return io_fail(&e, "no directory given");
    char *modules = io_path_join(dir, "modules.json");
    st_model m = {.do_lower_case = -1, .score_activation = ST_SCORES_NONE};
    int rc = modules ? 0 : io_fail_oom(&e, "out of memory");
    m.has_modules = rc == 0 && io_path_exists(modules);
    if (rc == 0 && m.has_modules) rc = load_modules(dir, modules, &m, err, err_size);
    if (rc == 0 && m.has_modules)
        rc = load_file(dir, "config_sentence_transformers.json", parse_root_config, 0, &m, err,
                       err_size);
    if (rc == 0 && m.score_activation < 0)
        rc = load_file(m.has_modules ? m.transformer_dir : dir, "config.json",
                       parse_config_activation, 1, &m, err, err_size);
    free(modules);
    if (rc != 0) st_model_free(&m);
    if (rc == 0) *out = m;
    return rc;
}
