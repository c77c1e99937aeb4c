/* config.json of a HuggingFace BERT folder (cJSON): the encoder's sizes and, for
 * BertForSequenceClassification, its labels. See bert_model.h. */
#include "bert_model.h"

#include "io_error.h"
#include "json_file.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *key;
    size_t offset;
} int_fields[] = {
    {"hidden_size", offsetof(bert_config, hidden_size)},
    {"num_hidden_layers", offsetof(bert_config, num_hidden_layers)},
    {"num_attention_heads", offsetof(bert_config, num_attention_heads)},
    {"intermediate_size", offsetof(bert_config, intermediate_size)},
    {"max_position_embeddings", offsetof(bert_config, max_position_embeddings)},
    {"type_vocab_size", offsetof(bert_config, type_vocab_size)},
    {"vocab_size", offsetof(bert_config, vocab_size)},
};

#define N_INT_FIELDS (sizeof int_fields / sizeof int_fields[0])

/* transformers' PretrainedConfig accepts these and no other non-null problem_type. */
static const char *const problem_names[] = {NULL, "regression", "single_label_classification",
                                            "multi_label_classification"};

#define N_PROBLEMS ((int)(sizeof problem_names / sizeof problem_names[0]))

static int read_eps(const err_ctx *e, const cJSON *root, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_eps");
    *out = 1e-12;
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0.0) || !isfinite(v->valuedouble))
        return io_fail(e, "field 'layer_norm_eps' must be a positive number");
    *out = v->valuedouble;
    return 0;
}

/* The encoder's GELU is the exact erf form; the tanh approximations ("gelu_new",
 * "gelu_pytorch_tanh") differ by up to ~1e-3, far outside the accuracy bound, so they are
 * refused rather than silently computed differently. */
static int read_act(const err_ctx *e, const cJSON *root, char *out, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    snprintf(out, size, "gelu");
    if (!v) return 0;
    if (!cJSON_IsString(v)) return io_fail(e, "field 'hidden_act' is not a string");
    if (strcmp(v->valuestring, "gelu") != 0)
        return io_fail(e,
                       "field 'hidden_act' is \"%.40s\": only \"gelu\" (exact erf GELU) is "
                       "supported",
                       v->valuestring);
    return 0;
}

/* Relative position embeddings add terms to the scores that this encoder does not compute. */
static int check_position_type(const err_ctx *e, const cJSON *root)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
    if (!v || (cJSON_IsString(v) && strcmp(v->valuestring, "absolute") == 0)) return 0;
    return io_fail(e, "field 'position_embedding_type' must be \"absolute\", the only kind "
                      "supported");
}

/* model_type names the architecture transformers builds from the folder. Absent, it is left to
 * the fields: vkbert's own older folders have none. */
static int check_model_type(const err_ctx *e, const cJSON *root)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!v || (cJSON_IsString(v) && strcmp(v->valuestring, "bert") == 0)) return 0;
    if (!cJSON_IsString(v)) return io_fail(e, "field 'model_type' is not a string");
    return io_fail(e,
                   "field 'model_type' is \"%.40s\": vkbert runs BERT encoders (model_type "
                   "\"bert\") only",
                   v->valuestring);
}

int bert_config_check_type(const char *path, char *err, size_t err_size)
{
    err_ctx e = {path, err, err_size};
    /* A missing or unreadable file is left to bert_config_load, in its usual place. */
    if (!path || !io_path_exists(path)) return 0;
    char ignored[8];
    cJSON *root = io_json_load(&(err_ctx){path, ignored, sizeof ignored});
    int rc = root && cJSON_IsObject(root) ? check_model_type(&e, root) : 0;
    cJSON_Delete(root);
    return rc;
}

/* ---- the classifier's fields ---- */

static int read_architecture(const err_ctx *e, const cJSON *root, char *out, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    out[0] = '\0';
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsArray(v)) return io_fail(e, "field 'architectures' is not an array");
    const cJSON *first = cJSON_GetArrayItem(v, 0);
    if (!first) return 0;
    if (!cJSON_IsString(first) || strlen(first->valuestring) >= size)
        return io_fail(e, "field 'architectures' must hold names (under %zu characters)", size);
    snprintf(out, size, "%s", first->valuestring);
    return 0;
}

/* The label id a key of id2label stands for: JSON keys are strings, and PretrainedConfig
 * turns them into ints; here they must be exactly "0".."n-1", one row of the classifier each. */
static int label_id(const char *key, int n)
{
    char *end = NULL;
    long id = strtol(key, &end, 10);
    int canonical = key[0] >= '0' && key[0] <= '9' && (key[0] != '0' || key[1] == '\0');
    return canonical && *end == '\0' && id < n ? (int)id : -1;
}

/* id2label's size, each key a distinct id and each value a string; 0 when absent or null. */
static int id2label_count(const err_ctx *e, const cJSON *id2label, int *out)
{
    *out = 0;
    if (!id2label || cJSON_IsNull(id2label)) return 0;
    if (!cJSON_IsObject(id2label)) return io_fail(e, "field 'id2label' is not an object");
    int n = cJSON_GetArraySize(id2label);
    if (n < 1) return io_fail(e, "field 'id2label' is empty");
    unsigned char *seen = calloc((size_t)n, 1);
    if (!seen) return io_fail_oom(e, "out of memory");
    int rc = 0;
    for (const cJSON *it = id2label->child; it && rc == 0; it = it->next) {
        int id = label_id(it->string, n);
        if (id < 0 || seen[id])
            rc = io_fail(e, "field 'id2label' has key \"%.20s\": keys must be \"0\" to \"%d\"",
                         it->string, n - 1);
        else if (!cJSON_IsString(it))
            rc = io_fail(e, "field 'id2label' entry \"%s\" is not a string", it->string);
        else
            seen[id] = 1;
    }
    free(seen);
    *out = n;
    return rc;
}

/* PretrainedConfig: a given id2label sets num_labels (a "num_labels" beside it only draws a
 * warning); without one, "num_labels" or 2. */
static int read_num_labels(const err_ctx *e, const cJSON *root, int *out)
{
    if (id2label_count(e, cJSON_GetObjectItemCaseSensitive(root, "id2label"), out) != 0) return -1;
    const cJSON *label2id = cJSON_GetObjectItemCaseSensitive(root, "label2id");
    if (label2id && !cJSON_IsNull(label2id) && !cJSON_IsObject(label2id))
        return io_fail(e, "field 'label2id' is not an object");
    if (*out > 0) return 0;
    *out = 2;
    return io_json_positive_int(e, root, "num_labels", 0, out);
}

static int read_problem(const err_ctx *e, const cJSON *root, bert_problem *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "problem_type");
    *out = BERT_PROBLEM_NONE;
    if (!v || cJSON_IsNull(v)) return 0;
    for (int p = 1; cJSON_IsString(v) && p < N_PROBLEMS; p++)
        if (strcmp(v->valuestring, problem_names[p]) == 0) {
            *out = (bert_problem)p;
            return 0;
        }
    return io_fail(e, "field 'problem_type' must be null, \"regression\", "
                      "\"single_label_classification\" or \"multi_label_classification\"");
}

static int parse_config(const err_ctx *e, const cJSON *root, bert_config *c)
{
    if (!cJSON_IsObject(root)) return io_fail(e, "not a JSON object");
    if (check_model_type(e, root) != 0) return -1;
    for (size_t i = 0; i < N_INT_FIELDS; i++)
        if (io_json_positive_int(e, root, int_fields[i].key, 1,
                                 (int *)((char *)c + int_fields[i].offset)) != 0)
            return -1;
    if (c->hidden_size % c->num_attention_heads != 0)
        return io_fail(e, "field 'hidden_size' (%d) is not a multiple of num_attention_heads (%d)",
                       c->hidden_size, c->num_attention_heads);
    if (read_eps(e, root, &c->layer_norm_eps) != 0 ||
        read_act(e, root, c->hidden_act, sizeof c->hidden_act) != 0 ||
        check_position_type(e, root) != 0 ||
        read_architecture(e, root, c->architecture, sizeof c->architecture) != 0 ||
        read_num_labels(e, root, &c->num_labels) != 0)
        return -1;
    return read_problem(e, root, &c->problem_type);
}

int bert_config_load(const char *path, bert_config *out, char *err, size_t err_size)
{
    err_ctx e = {path, err, err_size};
    if (!out) return io_fail(&e, "no output given");
    memset(out, 0, sizeof *out);
    if (!path) return io_fail(&e, "no path given");
    cJSON *root = io_json_load(&e);
    if (!root) return -1;
    bert_config c = {0};
    int rc = parse_config(&e, root, &c);
    cJSON_Delete(root);
    if (rc == 0) *out = c;
    return rc;
}

/* ---- label names ---- */

void bert_labels_free(char **labels, int num_labels)
{
    for (int i = 0; labels && i < num_labels; i++)
        free(labels[i]);
    free(labels);
}

static char *label_copy(const cJSON *id2label, int i)
{
    char key[16], fallback[24];
    snprintf(key, sizeof key, "%d", i);
    const cJSON *v = id2label ? cJSON_GetObjectItemCaseSensitive(id2label, key) : NULL;
    snprintf(fallback, sizeof fallback, "LABEL_%d", i);
    const char *name = cJSON_IsString(v) ? v->valuestring : fallback;
    size_t n = strlen(name) + 1;
    char *copy = malloc(n);
    if (copy) memcpy(copy, name, n);
    return copy;
}

int bert_labels_load(const char *path, int num_labels, char ***out, char *err, size_t err_size)
{
    err_ctx e = {path, err, err_size};
    if (!out || num_labels < 1) return io_fail(&e, "no output or no labels");
    *out = NULL;
    cJSON *root = path ? io_json_load(&e) : NULL;
    if (!root) return path ? -1 : io_fail(&e, "no path given");
    const cJSON *id2label = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    int count = 0, rc = id2label_count(&e, id2label, &count);
    if (rc == 0 && count > 0 && count != num_labels)
        rc = io_fail(&e, "field 'id2label' has %d labels, expected %d", count, num_labels);
    char **labels = rc == 0 ? calloc((size_t)num_labels, sizeof *labels) : NULL;
    if (rc == 0 && !labels) rc = io_fail_oom(&e, "out of memory");
    for (int i = 0; rc == 0 && i < num_labels; i++)
        if (!(labels[i] = label_copy(count > 0 ? id2label : NULL, i)))
            rc = io_fail_oom(&e, "out of memory");
    cJSON_Delete(root);
    if (rc != 0)
        bert_labels_free(labels, num_labels);
    else
        *out = labels;
    return rc;
}

/* ---- writing ---- */

static int add_labels(cJSON *root, const bert_config *c, const char *const *labels)
{
    cJSON *id2label = cJSON_AddObjectToObject(root, "id2label");
    cJSON *label2id = cJSON_AddObjectToObject(root, "label2id");
    int ok = id2label && label2id;
    for (int i = 0; ok && i < c->num_labels; i++) {
        char key[16], name[24];
        snprintf(key, sizeof key, "%d", i);
        snprintf(name, sizeof name, "LABEL_%d", i);
        const char *label = labels ? labels[i] : name;
        ok = cJSON_AddStringToObject(id2label, key, label) &&
             cJSON_AddNumberToObject(label2id, label, i);
    }
    if (ok && c->problem_type != BERT_PROBLEM_NONE)
        ok = cJSON_AddStringToObject(root, "problem_type", problem_names[c->problem_type]) != NULL;
    return ok ? 0 : -1;
}

static cJSON *config_json(const bert_config *c, const char *const *labels)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(root, "architectures");
    const char *name = c->architecture[0] ? c->architecture : "BertModel";
    int ok = arch && cJSON_AddItemToArray(arch, cJSON_CreateString(name)) &&
             cJSON_AddStringToObject(root, "model_type", "bert");
    for (size_t i = 0; ok && i < N_INT_FIELDS; i++)
        ok =
            cJSON_AddNumberToObject(root, int_fields[i].key,
                                    *(const int *)((const char *)c + int_fields[i].offset)) != NULL;
    ok = ok && cJSON_AddNumberToObject(root, "layer_norm_eps", c->layer_norm_eps) &&
         cJSON_AddStringToObject(root, "hidden_act", c->hidden_act[0] ? c->hidden_act : "gelu") &&
         cJSON_AddStringToObject(root, "position_embedding_type", "absolute");
    if (ok && c->num_labels > 0) ok = add_labels(root, c, labels) == 0;
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int bert_config_save(const char *path, const bert_config *c, const char *const *labels, char *err,
                     size_t err_size)
{
    err_ctx e = {path, err, err_size};
    if (!path || !c) return io_fail(&e, "no path or config given");
    cJSON *root = config_json(c, labels);
    int rc = root ? io_json_save(&e, root) : io_fail_oom(&e, "out of memory");
    cJSON_Delete(root);
    return rc;
}
