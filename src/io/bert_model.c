/* HuggingFace BertModel folders: config.json (bert_config.c) and model.safetensors
 * (safetensors.c). One table per part of the model (embeddings, an encoder layer, the pooler,
 * the classifier) names each tensor, its shape and where it lives in bert_weights, so that
 * loading, saving, random filling and freeing all walk the same list and cannot disagree on a
 * name or a shape. */
#include "bert_model.h"

#include "io_error.h"
#include "json_file.h"
#include "platform/random.h"
#include "platform/platform.h"
#include "safetensors.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tensor tables ---- */

/* A dimension, named by the config field that sets it; D_NONE ends a vector's shape. */
typedef enum dim { D_NONE, D_H, D_I, D_V, D_P, D_T, D_L } dim;
typedef enum init { INIT_EMBED, INIT_LINEAR, INIT_GAMMA, INIT_BETA } init;

typedef struct field {
    const char *name;
    size_t offset; /* of the float * in bert_weights or bert_layer_weights */
    dim rows, cols;
    init init;
    dim fan_in;    /* for INIT_LINEAR: the input size of the layer the weight or bias belongs to */
    int top_level; /* outside the encoder's prefix */
} field;

#define EMB(name, member, rows, cols, init, fan)                                                   \
    {                                                                                              \
        name, offsetof(bert_weights, member), rows, cols, init, fan, 0                             \
    }
#define LAY(name, member, rows, cols, init, fan)                                                   \
    {                                                                                              \
        name, offsetof(bert_layer_weights, member), rows, cols, init, fan, 0                       \
    }

static const field embedding_fields[] = {
    EMB("embeddings.word_embeddings.weight", word, D_V, D_H, INIT_EMBED, D_NONE),
    EMB("embeddings.position_embeddings.weight", position, D_P, D_H, INIT_EMBED, D_NONE),
    EMB("embeddings.token_type_embeddings.weight", token_type, D_T, D_H, INIT_EMBED, D_NONE),
    EMB("embeddings.LayerNorm.weight", ln_gamma, D_H, D_NONE, INIT_GAMMA, D_NONE),
    EMB("embeddings.LayerNorm.bias", ln_beta, D_H, D_NONE, INIT_BETA, D_NONE),
};

static const field layer_fields[] = {
    LAY("attention.self.query.weight", q_w, D_H, D_H, INIT_LINEAR, D_H),
    LAY("attention.self.query.bias", q_b, D_H, D_NONE, INIT_LINEAR, D_H),
    LAY("attention.self.key.weight", k_w, D_H, D_H, INIT_LINEAR, D_H),
    LAY("attention.self.key.bias", k_b, D_H, D_NONE, INIT_LINEAR, D_H),
    LAY("attention.self.value.weight", v_w, D_H, D_H, INIT_LINEAR, D_H),
    LAY("attention.self.value.bias", v_b, D_H, D_NONE, INIT_LINEAR, D_H),
    LAY("attention.output.dense.weight", attn_out_w, D_H, D_H, INIT_LINEAR, D_H),
    LAY("attention.output.dense.bias", attn_out_b, D_H, D_NONE, INIT_LINEAR, D_H),
    LAY("attention.output.LayerNorm.weight", attn_ln_gamma, D_H, D_NONE, INIT_GAMMA, D_NONE),
    LAY("attention.output.LayerNorm.bias", attn_ln_beta, D_H, D_NONE, INIT_BETA, D_NONE),
    LAY("intermediate.dense.weight", inter_w, D_I, D_H, INIT_LINEAR, D_H),
    LAY("intermediate.dense.bias", inter_b, D_I, D_NONE, INIT_LINEAR, D_H),
    LAY("output.dense.weight", out_w, D_H, D_I, INIT_LINEAR, D_I),
    LAY("output.dense.bias", out_b, D_H, D_NONE, INIT_LINEAR, D_I),
    LAY("output.LayerNorm.weight", out_ln_gamma, D_H, D_NONE, INIT_GAMMA, D_NONE),
    LAY("output.LayerNorm.bias", out_ln_beta, D_H, D_NONE, INIT_BETA, D_NONE),
};

static const field pooler_fields[] = {
    EMB("pooler.dense.weight", pooler_w, D_H, D_H, INIT_LINEAR, D_H),
    EMB("pooler.dense.bias", pooler_b, D_H, D_NONE, INIT_LINEAR, D_H),
};

/* BertForSequenceClassification keeps its head beside "bert.", not under it (modeling_bert.py:
 * self.bert, self.classifier). */
static const field classifier_fields[] = {
    {"classifier.weight", offsetof(bert_weights, classifier_w), D_L, D_H, INIT_LINEAR, D_H, 1},
    {"classifier.bias", offsetof(bert_weights, classifier_b), D_L, D_NONE, INIT_LINEAR, D_H, 1},
};

#define N_EMBEDDING ((int)(sizeof embedding_fields / sizeof embedding_fields[0]))
#define N_LAYER ((int)(sizeof layer_fields / sizeof layer_fields[0]))
#define N_POOLER ((int)(sizeof pooler_fields / sizeof pooler_fields[0]))
#define N_CLASSIFIER ((int)(sizeof classifier_fields / sizeof classifier_fields[0]))

/* Long enough for any prefix save accepts followed by any table name. */
#define NAME_SIZE 160
#define MAX_PREFIX 60

typedef struct slot {
    const field *f;
    int layer; /* -1 outside the encoder */
    float **data;
} slot;

static float **member(const void *base, size_t offset)
{
    return (float **)((char *)base + offset);
}

static int slot_count(int num_layers, int has_pooler, int has_classifier)
{
    return N_EMBEDDING + N_LAYER * num_layers + (has_pooler ? N_POOLER : 0) +
           (has_classifier ? N_CLASSIFIER : 0);
}

/* The i-th slot of a model with or without a pooler, whatever w says; the classifier, when
 * there, ends the list. */
static slot slot_of(const bert_weights *w, int i, int pooler)
{
    if (i < N_EMBEDDING)
        return (slot){&embedding_fields[i], -1, member(w, embedding_fields[i].offset)};
    i -= N_EMBEDDING;
    if (i < N_LAYER * w->num_layers) {
        const field *f = &layer_fields[i % N_LAYER];
        return (slot){f, i / N_LAYER, member(&w->layers[i / N_LAYER], f->offset)};
    }
    i -= N_LAYER * w->num_layers;
    if (pooler && i < N_POOLER)
        return (slot){&pooler_fields[i], -1, member(w, pooler_fields[i].offset)};
    i -= pooler ? N_POOLER : 0;
    return (slot){&classifier_fields[i], -1, member(w, classifier_fields[i].offset)};
}

static slot slot_at(const bert_weights *w, int i)
{
    return slot_of(w, i, w->has_pooler);
}

static int64_t dim_size(const bert_config *c, dim d)
{
    const int sizes[] = {1,
                         c->hidden_size,
                         c->intermediate_size,
                         c->vocab_size,
                         c->max_position_embeddings,
                         c->type_vocab_size,
                         c->num_labels};
    return sizes[d];
}

int bert_tensor_count(const bert_weights *w)
{
    return slot_count(w->num_layers, w->has_pooler, w->has_classifier);
}

/* The name and shape of field f (of encoder layer `layer`, or -1 outside the encoder) with c's
 * sizes; data NULL. Needs no arrays, so that a file can be checked before any is allocated. */
static void field_tensor(const bert_config *c, const field *f, int layer, bert_tensor *out)
{
    if (layer >= 0)
        snprintf(out->name, sizeof out->name, "encoder.layer.%d.%s", layer, f->name);
    else
        snprintf(out->name, sizeof out->name, "%s", f->name);
    out->top_level = f->top_level;
    out->ndim = f->cols == D_NONE ? 1 : 2;
    out->shape[0] = dim_size(c, f->rows);
    out->shape[1] = f->cols == D_NONE ? 0 : dim_size(c, f->cols);
    out->data = NULL;
}

void bert_tensor_at(const bert_config *c, const bert_weights *w, int i, bert_tensor *out)
{
    slot s = slot_at(w, i);
    field_tensor(c, s.f, s.layer, out);
    out->data = *s.data;
}

static size_t tensor_elements(const bert_tensor *t)
{
    return (size_t)t->shape[0] * (size_t)(t->ndim == 2 ? t->shape[1] : 1);
}

/* ---- allocation, freeing, random filling ---- */

static int in_mapping(const bert_weights *w, const void *p)
{
    uintptr_t at = (uintptr_t)p, base = (uintptr_t)w->mapping;
    return w->mapping && at >= base && at - base < w->mapping_size;
}

void bert_weights_free(bert_weights *w)
{
    if (!w) return;
    /* The pointers of an absent pooler or classifier are NULL, so walking them is safe. */
    int n = slot_count(w->num_layers, 1, 1);
    for (int i = 0; i < n; i++)
        if (!in_mapping(w, *slot_of(w, i, 1).data)) free(*slot_of(w, i, 1).data);
    free(w->layers);
    free(w->sources);
    plat_unmap(w->mapping, w->mapping_size);
    memset(w, 0, sizeof *w);
}

void bert_weights_release(const bert_weights *w, const float *data, size_t count)
{
    if (w && in_mapping(w, data)) plat_release_pages(data, count * sizeof *data);
}

static int slot_index(const bert_weights *w, float *const *tensor)
{
    for (int i = 0; i < bert_tensor_count(w); i++)
        if (slot_at(w, i).data == tensor) return i;
    return -1;
}

bool bert_weights_rows(const bert_weights *w, float *const *tensor, uint64_t first_row,
                       uint64_t rows, float *scratch, const float **out)
{
    *out = NULL;
    int i = w && tensor ? slot_index(w, tensor) : -1;
    if (i < 0) return false;
    bert_tensor t;
    bert_tensor_at(&w->sizes, w, i, &t);
    uint64_t cols = t.ndim == 2 ? (uint64_t)t.shape[1] : (uint64_t)t.shape[0];
    uint64_t count = t.ndim == 2 ? (uint64_t)t.shape[0] : 1;
    if (first_row > count || rows > count - first_row) return false;
    if (t.data) {
        *out = t.data + first_row * cols;
        return true;
    }
    const bert_source *s = i < w->source_count ? &w->sources[i] : NULL;
    if (!s || !s->data || !scratch) return false;
    size_t item = s->dtype == ST_F64 ? 8 : s->dtype == ST_F32 ? 4 : 2;
    const char *at = (const char *)s->data + first_row * cols * item;
    if (st_convert_f32(s->dtype, at, rows * cols, scratch) != 0) return false;
    *out = scratch;
    return true;
}

void bert_weights_release_all(const bert_weights *w)
{
    if (w) plat_release_pages(w->mapping, w->mapping_size);
}

static int dims_valid(const bert_config *c)
{
    return c->hidden_size > 0 && c->num_hidden_layers > 0 && c->num_attention_heads > 0 &&
           c->intermediate_size > 0 && c->max_position_embeddings > 0 && c->type_vocab_size > 0 &&
           c->vocab_size > 0;
}

/* The layer list and flags; every array NULL. */
static int weights_init(const bert_config *c, int has_pooler, int has_classifier, bert_weights *w)
{
    memset(w, 0, sizeof *w);
    w->layers = calloc((size_t)c->num_hidden_layers, sizeof *w->layers);
    if (!w->layers) return -1;
    w->num_layers = c->num_hidden_layers;
    w->sizes = *c;
    w->has_pooler = has_pooler;
    w->has_classifier = has_classifier;
    return 0;
}

static int weights_alloc(const bert_config *c, int has_pooler, int has_classifier, bert_weights *w)
{
    if (weights_init(c, has_pooler, has_classifier, w) != 0) return -1;
    for (int i = 0; i < bert_tensor_count(w); i++) {
        bert_tensor t;
        bert_tensor_at(c, w, i, &t);
        float **p = slot_at(w, i).data;
        *p = malloc(tensor_elements(&t) * sizeof(float));
        if (!*p) {
            bert_weights_free(w);
            return -1;
        }
    }
    return 0;
}

/* U(-1, 1) from the top 53 bits, the same on every platform. */
static double uniform(uint64_t *state)
{
    return (double)(vkb_random_next(state) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

static void fill_random(const bert_config *c, const field *f, float *data, size_t n,
                        uint64_t *state)
{
    /* nn.Linear's init bound, so activations keep their scale through a deep random model. */
    double scale = f->init == INIT_LINEAR  ? 1.0 / sqrt((double)dim_size(c, f->fan_in))
                   : f->init == INIT_EMBED ? 1.0
                                           : 0.1;
    double offset = f->init == INIT_GAMMA ? 1.0 : 0.0;
    for (size_t k = 0; k < n; k++)
        data[k] = (float)(offset + scale * uniform(state));
}

int bert_weights_random(const bert_config *c, uint64_t seed, bert_weights *out)
{
    memset(out, 0, sizeof *out);
    if (!dims_valid(c) || c->num_labels < 0 || weights_alloc(c, 1, c->num_labels > 0, out) != 0)
        return -1;
    uint64_t state = seed;
    for (int i = 0; i < bert_tensor_count(out); i++) {
        bert_tensor t;
        bert_tensor_at(c, out, i, &t);
        fill_random(c, slot_at(out, i).f, t.data, tensor_elements(&t), &state);
    }
    return 0;
}

/* ---- model.safetensors ---- */

static void shape_text(char *out, size_t size, int ndim, const int64_t *shape)
{
    size_t n = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < ndim && n < size; d++)
        n += (size_t)snprintf(out + n, size - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (n < size) snprintf(out + n, size - n, "]");
}

/* Checkpoints converted from the original TensorFlow BERT name the LayerNorm parameters gamma
 * and beta; HF renames them when loading, and so do we. */
static const st_tensor *find_tensor(const st_file *f, const char *name)
{
    static const char *const renames[][2] = {{"LayerNorm.weight", "LayerNorm.gamma"},
                                             {"LayerNorm.bias", "LayerNorm.beta"}};
    const st_tensor *t = st_find(f, name);
    size_t n = strlen(name);
    for (size_t r = 0; !t && r < sizeof renames / sizeof renames[0]; r++) {
        size_t k = strlen(renames[r][0]);
        char old[NAME_SIZE];
        if (n < k || strcmp(name + n - k, renames[r][0]) != 0) continue;
        snprintf(old, sizeof old, "%.*s%s", (int)(n - k), name, renames[r][1]);
        t = st_find(f, old);
    }
    return t;
}

static int shape_matches(const st_tensor *s, const bert_tensor *t)
{
    if (s->ndim != t->ndim) return 0;
    for (int d = 0; d < t->ndim; d++)
        if (s->shape[d] != t->shape[d]) return 0;
    return 1;
}

static int float_dtype(st_dtype d)
{
    return d == ST_F32 || d == ST_F16 || d == ST_BF16 || d == ST_F64;
}

/* The file's tensor for t, present with t's shape and a dtype that converts; otherwise NULL,
 * with the message written. */
static const st_tensor *matching_tensor(const err_ctx *e, const st_file *f, const char *prefix,
                                        const bert_tensor *t)
{
    char name[NAME_SIZE], want[64], got[256];
    snprintf(name, sizeof name, "%s%s", t->top_level ? "" : prefix, t->name);
    shape_text(want, sizeof want, t->ndim, t->shape);
    const st_tensor *s = find_tensor(f, name);
    if (!s) return io_fail(e, "missing tensor '%s' (expected shape %s)", name, want), NULL;
    shape_text(got, sizeof got, s->ndim, s->shape);
    if (!shape_matches(s, t))
        return io_fail(e, "tensor '%s' has shape %s, expected %s", s->name, got, want), NULL;
    if (!float_dtype(s->dtype))
        return io_fail(e, "tensor '%s' has dtype %s; only F32, F16, BF16 and F64 are supported",
                       s->name, st_dtype_name(s->dtype)),
               NULL;
    return s;
}

static int check_fields(const err_ctx *e, const st_file *f, const char *prefix,
                        const bert_config *c, const field *fields, int n, int layer)
{
    for (int i = 0; i < n; i++) {
        bert_tensor t;
        field_tensor(c, &fields[i], layer, &t);
        if (!matching_tensor(e, f, prefix, &t)) return -1;
    }
    return 0;
}

/* Every tensor the config asks for is checked before anything is allocated: the sizes come
 * from config.json, and a few bytes there must not reserve gigabytes (or overflow the tensor
 * count) for weights the file does not hold. Once all match, the arrays are bounded by the
 * file's size. */
static int check_tensors(const err_ctx *e, const st_file *f, const char *prefix,
                         const bert_config *c, int has_pooler, int has_classifier)
{
    if (check_fields(e, f, prefix, c, embedding_fields, N_EMBEDDING, -1) != 0) return -1;
    for (int l = 0; l < c->num_hidden_layers; l++)
        if (check_fields(e, f, prefix, c, layer_fields, N_LAYER, l) != 0) return -1;
    if (has_pooler && check_fields(e, f, prefix, c, pooler_fields, N_POOLER, -1) != 0) return -1;
    return has_classifier ? check_fields(e, f, prefix, c, classifier_fields, N_CLASSIFIER, -1) : 0;
}

/* A layer past num_hidden_layers would be left out silently (transformers warns of unused
 * weights; the library cannot), so the file is refused, naming the lowest such layer. */
static int check_no_extra_layers(const err_ctx *e, const st_file *f, const char *prefix,
                                 const bert_config *c)
{
    char head[NAME_SIZE];
    size_t n = (size_t)snprintf(head, sizeof head, "%sencoder.layer.", prefix);
    const char *first = NULL;
    long first_layer = LONG_MAX;
    for (int i = 0; i < f->count; i++) {
        const char *name = f->tensors[i].name;
        char *end;
        if (strncmp(name, head, n) != 0 || !isdigit((unsigned char)name[n])) continue;
        long l = strtol(name + n, &end, 10);
        if (*end == '.' && l >= c->num_hidden_layers && l < first_layer) {
            first = name;
            first_layer = l;
        }
    }
    if (!first) return 0;
    return io_fail(e, "tensor '%s' is of layer %ld, but config.json's num_hidden_layers is %d",
                   first, first_layer, c->num_hidden_layers);
}

/* An F32 tensor at a float's alignment is used where it lies in the mapping: copying it would
 * cost a pass over the model and a second host copy of it (safetensors data is little-endian,
 * as the hosts we build for). Other matrices stay in the file, converted rows at a time by
 * their reader (bert_weights_rows); other vectors, a few kilobytes, become float32 arrays. */
static int load_tensor(const err_ctx *e, const st_file *f, const char *prefix, const bert_tensor *t,
                       bert_weights *w, int i)
{
    float **dst = slot_at(w, i).data;
    const st_tensor *s = matching_tensor(e, f, prefix, t);
    if (!s) return -1;
    uint64_t rows = t->ndim == 2 ? (uint64_t)t->shape[0] : 1;
    if (w->mapping)
        w->sources[i] = (bert_source){s->dtype, s->data, rows, tensor_elements(t) / rows};
    if (w->mapping && s->dtype == ST_F32 && (uintptr_t)s->data % _Alignof(float) == 0) {
        *dst = (float *)s->data; /* read-only, as bert_weights says */
        return 0;
    }
    if (w->mapping && t->ndim == 2) return 0;
    *dst = malloc(tensor_elements(t) * sizeof **dst);
    if (!*dst) return io_fail_oom(e, "out of memory for tensor '%s'", s->name);
    return st_to_f32(s, *dst);
}

/* A BertFor* checkpoint (pre-training, classification...) keeps the encoder under "bert.". */
static const char *name_prefix(const st_file *f)
{
    return st_find(f, "bert.embeddings.word_embeddings.weight") ? "bert." : "";
}

/* Only a sequence classifier's head reads the pooler's output; the same tensor names in a
 * BertForTokenClassification or BertForMultipleChoice mean another head, left out. */
static int has_sequence_classifier(const st_file *f, const bert_config *c)
{
    return strcmp(c->architecture, "BertForSequenceClassification") == 0 &&
           st_find(f, classifier_fields[0].name) != NULL;
}

/* The file's mapping, when it has one, passes to w, which then unmaps it. */
static int load_weights(const err_ctx *e, st_file *f, const bert_config *c, bert_weights *w)
{
    const char *prefix = name_prefix(f);
    char pooler[NAME_SIZE];
    snprintf(pooler, sizeof pooler, "%s%s", prefix, pooler_fields[0].name);
    int has_classifier = has_sequence_classifier(f, c);
    /* BertForSequenceClassification classifies the pooler's output, so it must be there. */
    int has_pooler = has_classifier || st_find(f, pooler) != NULL;
    if (check_tensors(e, f, prefix, c, has_pooler, has_classifier) != 0 ||
        check_no_extra_layers(e, f, prefix, c) != 0)
        return -1;
    if (weights_init(c, has_pooler, has_classifier, w) != 0 ||
        !(w->sources = calloc((size_t)bert_tensor_count(w), sizeof *w->sources))) {
        bert_weights_free(w);
        return io_fail_oom(e, "out of memory for the weights");
    }
    w->source_count = bert_tensor_count(w);
    if (f->mapped) {
        w->mapping = f->buffer;
        w->mapping_size = f->size;
        f->mapped = 0;
    }
    for (int i = 0; i < bert_tensor_count(w); i++) {
        bert_tensor t;
        bert_tensor_at(c, w, i, &t);
        if (load_tensor(e, f, prefix, &t, w, i) != 0) {
            bert_weights_free(w);
            return -1;
        }
    }
    return 0;
}

/* How a pytorch_model.bin-only folder becomes one this reads. */
#define HF_CONVERT                                                                                 \
    "load the folder with transformers' AutoModel.from_pretrained and save it again with "         \
    "save_pretrained(folder, safe_serialization=True)"

/* The classifier's label names, once its weights are in. */
static int load_labels(const char *config_path, bert_model *m, char *err, size_t err_size)
{
    if (!m->weights.has_classifier) return 0;
    if (bert_labels_load(config_path, m->config.num_labels, &m->labels, err, err_size) == 0)
        return 0;
    bert_weights_free(&m->weights);
    return -1;
}

int bert_model_load(const char *dir, bert_model *out, char *err, size_t err_size)
{
    err_ctx e = {dir, err, err_size};
    if (!out) return io_fail(&e, "no output given");
    memset(out, 0, sizeof *out);
    if (!dir) return io_fail(&e, "no directory given");
    char *config_path = io_path_join(dir, "config.json");
    char *weights_path = NULL;
    bert_model m = {0};
    st_file f = {0};
    int rc = config_path ? 0 : io_fail_oom(&e, "out of memory");
    if (rc == 0) rc = bert_config_load(config_path, &m.config, err, err_size);
    if (rc == 0 && !(weights_path = io_safetensors_path(&e, dir, HF_CONVERT))) rc = -1;
    if (rc == 0) rc = st_load(weights_path, &f, err, err_size);
    if (rc == 0)
        rc = load_weights(&(err_ctx){weights_path, err, err_size}, &f, &m.config, &m.weights);
    /* The weights hold the mapping now; the header's tensor list goes. */
    st_free(&f);
    if (rc == 0) rc = load_labels(config_path, &m, err, err_size);
    free(config_path);
    free(weights_path);
    if (rc == 0) *out = m;
    return rc;
}

void bert_model_free(bert_model *model)
{
    if (!model) return;
    bert_labels_free(model->labels, model->config.num_labels);
    bert_weights_free(&model->weights);
    memset(model, 0, sizeof *model);
}

/* ---- writing ---- */

/* The parallel arrays st_save takes, for every tensor under its full name. */
typedef struct save_lists {
    char (*full)[NAME_SIZE];
    const char **names;
    st_dtype *dtypes;
    int *ndims;
    int64_t (*shapes)[2];
    const int64_t **shape_ptrs;
    const float **data;
} save_lists;

static void save_lists_free(save_lists *l)
{
    void *blocks[] = {l->full, l->names, l->dtypes, l->ndims, l->shapes, l->shape_ptrs, l->data};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        free(blocks[i]);
}

static int save_lists_fill(save_lists *l, const bert_config *c, const bert_weights *w, int f16,
                           const char *prefix)
{
    size_t n = (size_t)bert_tensor_count(w);
    l->full = calloc(n, sizeof *l->full);
    l->names = calloc(n, sizeof *l->names);
    l->dtypes = calloc(n, sizeof *l->dtypes);
    l->ndims = calloc(n, sizeof *l->ndims);
    l->shapes = calloc(n, sizeof *l->shapes);
    l->shape_ptrs = calloc(n, sizeof *l->shape_ptrs);
    l->data = calloc(n, sizeof *l->data);
    if (!l->full || !l->names || !l->dtypes || !l->ndims || !l->shapes || !l->shape_ptrs ||
        !l->data)
        return -1;
    for (size_t i = 0; i < n; i++) {
        bert_tensor t;
        bert_tensor_at(c, w, (int)i, &t);
        snprintf(l->full[i], NAME_SIZE, "%s%s", t.top_level ? "" : prefix, t.name);
        l->names[i] = l->full[i];
        l->dtypes[i] = f16 ? ST_F16 : ST_F32;
        l->ndims[i] = t.ndim;
        memcpy(l->shapes[i], t.shape, sizeof t.shape);
        l->shape_ptrs[i] = l->shapes[i];
        l->data[i] = t.data;
    }
    return 0;
}

static int save_weights(const char *path, const bert_config *c, const bert_weights *w, int f16,
                        const char *prefix, char *err, size_t err_size)
{
    err_ctx e = {path, err, err_size};
    save_lists l = {0};
    int rc = save_lists_fill(&l, c, w, f16, prefix);
    if (rc != 0)
        io_fail_oom(&e, "out of memory");
    else
        rc = st_save(path, bert_tensor_count(w), l.names, l.dtypes, l.ndims, l.shape_ptrs, l.data,
                     err, err_size);
    save_lists_free(&l);
    return rc;
}

static int check_save_args(const err_ctx *e, const bert_config *c, const bert_weights *w,
                           const char *prefix)
{
    if (!c || !w) return io_fail(e, "no config or weights given");
    if (!dims_valid(c)) return io_fail(e, "the config has a size that is not positive");
    if (w->num_layers != c->num_hidden_layers || !w->layers)
        return io_fail(e, "the weights have %d layers, the config %d", w->num_layers,
                       c->num_hidden_layers);
    if (w->has_classifier && c->num_labels < 1)
        return io_fail(e, "the weights have a classifier, the config no labels");
    if (strlen(prefix) > MAX_PREFIX)
        return io_fail(e, "prefix longer than %d characters", MAX_PREFIX);
    return 0;
}

int bert_model_save(const char *dir, const bert_config *c, const bert_weights *w, int f16,
                    const char *prefix, char *err, size_t err_size)
{
    err_ctx e = {dir, err, err_size};
    if (!dir) return io_fail(&e, "no directory given");
    if (!prefix) prefix = "";
    if (check_save_args(&e, c, w, prefix) != 0) return -1;
    int error = plat_mkdir(dir, false);
    if (error) return io_fail(&e, "cannot create the directory: %s", strerror(error));
    char *config_path = io_path_join(dir, "config.json");
    char *weights_path = io_path_join(dir, "model.safetensors");
    int rc = config_path && weights_path ? 0 : io_fail_oom(&e, "out of memory");
    bert_config named = *c;
    /* A classifier without an architecture would not load back as one. */
    if (w->has_classifier && !named.architecture[0])
        snprintf(named.architecture, sizeof named.architecture, "BertForSequenceClassification");
    if (rc == 0) rc = bert_config_save(config_path, &named, NULL, err, err_size);
    if (rc == 0) rc = save_weights(weights_path, c, w, f16, prefix, err, err_size);
    free(config_path);
    free(weights_path);
    return rc;
}
