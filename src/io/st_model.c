/* A sentence-transformers folder: modules.json and the files at the root. Every rule below is
 * SentenceTransformer._load_sbert_model's (sentence-transformers v3 to v5); the modules' own
 * files are read in st_modules.c. */
#include "st_model.h"

#include "st_module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum kind { K_TRANSFORMER, K_POOLING, K_DENSE, K_NORMALIZE, K_OTHER } kind;

static const char *const kind_names[] = {"Transformer", "Pooling", "Dense", "Normalize"};

#define ST_PACKAGE "sentence_transformers.models."

/* modules.json's "type" is imported with util.import_from_string: ST writes the module
 * ("sentence_transformers.models.Pooling", whose class has the same name), and the class's
 * own path ("...models.Pooling.Pooling") resolves to the same class. */
static kind module_kind(const char *type)
{
    size_t n = strlen(ST_PACKAGE);
    if (strncmp(type, ST_PACKAGE, n) != 0) return K_OTHER;
    type += n;
    for (int k = 0; k < K_OTHER; k++) {
        size_t len = strlen(kind_names[k]);
        if (strncmp(type, kind_names[k], len) != 0) continue;
        if (type[len] == '\0') return (kind)k;
        if (type[len] == '.' && strcmp(type + len + 1, kind_names[k]) == 0) return (kind)k;
    }
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

static int parse_sbert(const err_ctx *e, const cJSON *root, st_model *m)
{
    if (!cJSON_IsObject(root)) return io_fail(e, "not a JSON object");
    /* null: Transformer infers it from the model and the tokenizer. */
    if (io_json_positive_int(e, root, "max_seq_length", 0, &m->max_seq_length) != 0) return -1;
    return io_json_bool(e, root, "do_lower_case", 0, &m->do_lower_case);
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

/* vkbert runs Transformer, Pooling, any number of Dense, then at most one Normalize. */
static int check_order(const walk *w, int index, kind k)
{
    int ok = (w->last == K_OTHER) == (k == K_TRANSFORMER) &&
             (k != K_POOLING || w->last == K_TRANSFORMER) &&
             ((k != K_DENSE && k != K_NORMALIZE) || w->last == K_POOLING || w->last == K_DENSE);
    if (ok) return 0;
    return io_fail(&w->e,
                   "module %d is %s: vkbert runs Transformer, Pooling, any number of Dense, then "
                   "an optional Normalize, in that order",
                   index, kind_names[k]);
}

/* Normalize needs no folder: _load_sbert_model gives it none. */
static int load_module(walk *w, int index, kind k, const char *path, st_model *m, char *err,
                       size_t err_size)
{
    if (check_order(w, index, k) != 0) return -1;
    w->last = k;
    if (k == K_NORMALIZE) return m->normalize = 1, 0;
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
                       "Transformer, Pooling, Dense and Normalize)",
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
    if (rc == 0 && w.last != K_POOLING && w.last != K_DENSE && w.last != K_NORMALIZE)
        rc = io_fail(&w.e, "no %s module: vkbert needs a Transformer and a Pooling",
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
    if (!cJSON_IsObject(root)) return io_fail(e, "not a JSON object");
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

static int load_prompts(const char *path, st_model *m, char *err, size_t err_size)
{
    err_ctx e = {path, err, err_size};
    if (!io_path_exists(path)) return 0;
    cJSON *root = io_json_load(&e);
    int rc = root ? parse_prompts(&e, root, m) : -1;
    cJSON_Delete(root);
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
    char *config = io_path_join(dir, "config_sentence_transformers.json");
    st_model m = {.do_lower_case = -1};
    int rc = modules && config ? 0 : io_fail_oom(&e, "out of memory");
    m.has_modules = rc == 0 && io_path_exists(modules);
    if (rc == 0 && m.has_modules) rc = load_modules(dir, modules, &m, err, err_size);
    if (rc == 0 && m.has_modules) rc = load_prompts(config, &m, err, err_size);
    free(modules);
    free(config);
    if (rc != 0 || !m.has_modules) st_model_free(&m);
    if (rc == 0) *out = m.has_modules ? m : (st_model){.do_lower_case = -1};
    return rc;
}
