/* One attention layer's weights from a safetensors file (vkbert_attention_weights_load): the
 * eight tensors found by name, with or without one common prefix, checked against one embed
 * size E and read as float32 into one host allocation. */
#include "io/safetensors.h"
#include "nn/attention/attention.h"
#include "nn/encoder/encoder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { QW, QB, KW, KB, VW, VB, OW, OB, LAYER_TENSORS };

static const char *const tensor_names[LAYER_TENSORS] = {
    "q_proj.weight", "q_proj.bias", "k_proj.weight",   "k_proj.bias",
    "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias",
};

static int is_weight(int index)
{
    return index % 2 == 0;
}

/* A message about the file's content, VKBERT_ERROR_MALFORMED_FILE. */
#define MALFORMED(...) vkb_fail_global(VKBERT_ERROR_MALFORMED_FILE, __VA_ARGS__)

static void format_shape(char *out, size_t size, int ndim, const int64_t *shape)
{
    size_t n = (size_t)snprintf(out, size, "[");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < size) snprintf(out + n, size - n, "]");
}

/* The length of the prefix before `suffix` in `name`, or -1 when `name` is not `suffix`
 * itself or "<prefix>.<suffix>". */
static long prefix_length(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    if (n < s || strcmp(name + n - s, suffix) != 0) return -1;
    if (n > s && name[n - s - 1] != '.') return -1;
    return (long)(n - s);
}

/* The prefix of the one tensor named like "<prefix>q_proj.weight". */
static vkbert_status find_prefix(const char *path, const st_file *file, char *prefix, size_t size)
{
    const char *suffix = tensor_names[QW], *found = NULL;
    long len = -1;
    for (int i = 0; i < file->count; i++) {
        long l = prefix_length(file->tensors[i].name, suffix);
        if (l < 0) continue;
        if (found)
            return MALFORMED("%s: tensors '%s' and '%s' both end in '%s'; the file must "
                             "hold exactly one attention layer",
                             path, found, file->tensors[i].name, suffix);
        found = file->tensors[i].name, len = l;
    }
    if (!found)
        return MALFORMED("%s: missing tensor '%s' (with or without a prefix such as 'attn.')", path,
                         suffix);
    if ((size_t)len >= size) return MALFORMED("%s: the prefix of '%s' is too long", path, found);
    memcpy(prefix, found, (size_t)len);
    prefix[len] = '\0';
    return VKBERT_OK;
}

/* The embed size from the q_proj weight, which must be [E, E]. */
static vkbert_status embed_size(const char *path, const st_tensor *t, int *e)
{
    char shape[128];
    if (t->ndim == 2 && t->shape[0] == t->shape[1] && t->shape[0] > 0 && t->shape[0] <= 65536) {
        *e = (int)t->shape[0];
        return VKBERT_OK;
    }
    format_shape(shape, sizeof shape, t->ndim, t->shape);
    return MALFORMED("%s: tensor '%s' has shape %s; expected a square [E, E] with 0 < E <= 65536",
                     path, t->name, shape);
}

static vkbert_status check_tensor(const char *path, const st_tensor *t, int index, int e,
                                  const char *e_source)
{
    int64_t want[2] = {e, e};
    int ndim = is_weight(index) ? 2 : 1;
    char got_s[128], want_s[64];
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16 && t->dtype != ST_F64)
        return MALFORMED("%s: tensor '%s' has dtype %s; expected F32, F16, BF16 or F64", path,
                         t->name, st_dtype_name(t->dtype));
    if (t->ndim == ndim && t->shape[0] == e && (ndim == 1 || t->shape[1] == e)) return VKBERT_OK;
    format_shape(got_s, sizeof got_s, t->ndim, t->shape);
    format_shape(want_s, sizeof want_s, ndim, want);
    return MALFORMED("%s: tensor '%s' has shape %s; expected %s (E = %d from '%s')", path, t->name,
                     got_s, want_s, e, e_source);
}

/* Checks every tensor of the layer and finds E; fills tensors[]. */
static vkbert_status check_layer(const char *path, const st_file *file, const st_tensor **tensors,
                                 int *e)
{
    char prefix[256], name[512];
    vkbert_status status = find_prefix(path, file, prefix, sizeof prefix);
    for (int i = 0; !status && i < LAYER_TENSORS; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, tensor_names[i]);
        tensors[i] = st_find(file, name);
        if (!tensors[i]) status = MALFORMED("%s: missing tensor '%s'", path, name);
    }
    if (!status) status = embed_size(path, tensors[QW], e);
    for (int i = 0; !status && i < LAYER_TENSORS; i++)
        status = check_tensor(path, tensors[i], i, *e, tensors[QW]->name);
    return status;
}

/* The tensors' float32 values, one after another in the order of tensor_names. */
static vkbert_status read_layer(const char *path, const st_tensor **tensors, int e, float **out)
{
    size_t weight = (size_t)e * (size_t)e, total = 4 * (weight + (size_t)e);
    float *block = malloc(total * sizeof *block), *next = block;
    if (!block) return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "%s: out of host memory", path);
    for (int i = 0; i < LAYER_TENSORS; i++) {
        if (st_to_f32(tensors[i], next)) {
            free(block);
            return MALFORMED("%s: cannot convert tensor '%s'", path, tensors[i]->name);
        }
        next += is_weight(i) ? weight : (size_t)e;
    }
    *out = block;
    return VKBERT_OK;
}

vkbert_status vkb_attention_weights_read(const char *path, vkbert_attention_weights *w, int *e)
{
    st_file file;
    char err[VKB_ERROR_SIZE];
    const st_tensor *tensors[LAYER_TENSORS];
    float *block = NULL;
    if (st_load(path, &file, err, sizeof err))
        return vkb_fail_global(vkb_io_status(VKBERT_ERROR_MALFORMED_FILE), "%s", err);
    vkbert_status status = check_layer(path, &file, tensors, e);
    if (!status) status = read_layer(path, tensors, *e, &block);
    st_free(&file);
    if (status) return status;
    size_t weight = (size_t)*e * (size_t)*e, bias = (size_t)*e;
    w->q_weight = block, w->q_bias = w->q_weight + weight;
    w->k_weight = w->q_bias + bias, w->k_bias = w->k_weight + weight;
    w->v_weight = w->k_bias + bias, w->v_bias = w->v_weight + weight;
    w->out_weight = w->v_bias + bias, w->out_bias = w->out_weight + weight;
    return VKBERT_OK;
}
