/* The Pooling and Dense modules of a sentence-transformers folder: their config.json, Dense's
 * model.safetensors, and the names sentence-transformers gives pooling modes and activations.
 * See st_model.h. */
#define _POSIX_C_SOURCE 200809L /* strcasecmp */

#include "st_model.h"

#include "st_module.h"

#include "safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* models/Pooling.py: POOLING_MODES (the pooling_mode strings) and the config keys
 * pooling_mode_<key>; mean_tokens is the only one on by default. */
static const struct {
    unsigned bit;
    const char *mode, *key;
} pool_names[] = {
    {ST_POOL_CLS, "cls", "cls_token"},
    {ST_POOL_MAX, "max", "max_tokens"},
    {ST_POOL_MEAN, "mean", "mean_tokens"},
    {ST_POOL_MEAN_SQRT_LEN, "mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
    {ST_POOL_WEIGHTEDMEAN, "weightedmean", "weightedmean_tokens"},
    {ST_POOL_LASTTOKEN, "lasttoken", "lasttoken"},
};

#define N_POOL ((int)(sizeof pool_names / sizeof pool_names[0]))

int st_pool_width(unsigned modes, int hidden)
{
    int n = 0;
    for (int i = 0; i < N_POOL; i++)
        n += (modes & pool_names[i].bit) != 0;
    return n * hidden;
}

int st_pool_mode_parse(const char *name, unsigned *bit)
{
    for (int i = 0; name && bit && i < N_POOL; i++)
        if (strcasecmp(name, pool_names[i].mode) == 0 || strcasecmp(name, pool_names[i].key) == 0) {
            *bit = pool_names[i].bit;
            return 0;
        }
    return -1;
}

const char *st_pool_mode_name(unsigned bit)
{
    for (int i = 0; i < N_POOL; i++)
        if (bit == pool_names[i].bit) return pool_names[i].mode;
    return NULL;
}

/* The bit of one of Pooling.POOLING_MODES, any case (v5 lowercased it); -1 when unknown. */
static int mode_bit(const char *s, unsigned *bit)
{
    for (int i = 0; i < N_POOL; i++)
        if (strcasecmp(s, pool_names[i].mode) == 0) return *bit = pool_names[i].bit, 0;
    return -1;
}

static int unknown_mode(const err_ctx *e, const char *s)
{
    return io_fail(e,
                   "field 'pooling_mode' has \"%.40s\": not one of cls, lasttoken, max, mean, "
                   "mean_sqrt_len_tokens, weightedmean",
                   s);
}

/* A list (v6 saves a tuple of modes so): Pooling.forward concatenates in the list's order, the
 * pool kernel in its own, so only lists in that order, each mode once, are runnable. */
static int read_mode_list(const err_ctx *e, const cJSON *list, unsigned *modes)
{
    unsigned got = 0, bit;
    for (const cJSON *it = list->child; it; it = it->next) {
        if (!cJSON_IsString(it)) return io_fail(e, "field 'pooling_mode' has a non-string entry");
        if (mode_bit(it->valuestring, &bit) != 0) return unknown_mode(e, it->valuestring);
        if (got & ~(bit - 1u))
            return io_fail(e,
                           "field 'pooling_mode' lists \"%.40s\" after a mode that follows it: "
                           "vkbert concatenates the modes in the order cls, max, mean, "
                           "mean_sqrt_len_tokens, weightedmean, lasttoken, each once",
                           it->valuestring);
        got |= bit;
    }
    if (!got) return io_fail(e, "field 'pooling_mode' is an empty list");
    *modes = got;
    return 0;
}

/* Pooling.load_config (v6): a pooling_mode string or list replaces every pooling_mode_* flag;
 * else the flags that are true, in Pooling's order; none true, or none given: mean. */
static int read_modes(const err_ctx *e, const cJSON *root, unsigned *modes)
{
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(root, "pooling_mode");
    *modes = 0;
    for (int i = 0; i < N_POOL; i++) {
        char key[64];
        int on = 0;
        snprintf(key, sizeof key, "pooling_mode_%s", pool_names[i].key);
        if (io_json_bool(e, root, key, 0, &on) != 0) return -1;
        *modes |= on ? pool_names[i].bit : 0;
    }
    if (!*modes) *modes = ST_POOL_MEAN;
    if (cJSON_IsArray(mode)) return read_mode_list(e, mode, modes);
    const char *s;
    if (io_json_string(e, root, "pooling_mode", &s) != 0) return -1;
    return s && mode_bit(s, modes) != 0 ? unknown_mode(e, s) : 0;
}

/* v6 renamed word_embedding_dimension to embedding_dimension (Pooling.config_key_renames); the
 * new key wins when both are there. */
static int read_dimension(const err_ctx *e, const cJSON *root, int *out)
{
    const char *key = cJSON_GetObjectItemCaseSensitive(root, "embedding_dimension")
                          ? "embedding_dimension"
                          : "word_embedding_dimension";
    return io_json_positive_int(e, root, key, 1, out);
}

int st_pooling_parse(const err_ctx *e, const cJSON *root, st_model *m)
{
    if (!cJSON_IsObject(root)) return io_fail(e, "not a JSON object");
    if (read_dimension(e, root, &m->word_embedding_dimension) != 0 ||
        read_modes(e, root, &m->pool_modes) != 0)
        return -1;
    m->include_prompt = 1;
    return io_json_bool(e, root, "include_prompt", 0, &m->include_prompt);
}

/* ---- Dense activations ---- */

/* Dense.save writes util.fullname(activation): the defining module and the class, so
 * Identity is under torch.nn.modules.linear. Dense.load imports whatever dotted path is
 * there, so the public aliases torch.nn.X and torch.nn.modules.X name the same classes. */
static const struct {
    const char *full, *name;
} activations[] = {
    [ST_ACT_IDENTITY] = {"torch.nn.modules.linear.Identity", "Identity"},
    [ST_ACT_TANH] = {"torch.nn.modules.activation.Tanh", "Tanh"},
    [ST_ACT_RELU] = {"torch.nn.modules.activation.ReLU", "ReLU"},
    [ST_ACT_GELU] = {"torch.nn.modules.activation.GELU", "GELU"},
    [ST_ACT_SIGMOID] = {"torch.nn.modules.activation.Sigmoid", "Sigmoid"},
    [ST_ACT_SOFTMAX] = {"torch.nn.modules.activation.Softmax", "Softmax"},
};

#define N_ACT ((int)(sizeof activations / sizeof activations[0]))

const char *st_activation_name(int act)
{
    return act >= 0 && act < N_ACT ? activations[act].full : NULL;
}

static int has_prefix_then(const char *s, const char *prefix, const char *name)
{
    size_t n = strlen(prefix);
    return strncmp(s, prefix, n) == 0 && strcmp(s + n, name) == 0;
}

int st_activation_parse(const char *s)
{
    for (int a = 0; a < N_ACT; a++)
        if (strcmp(s, activations[a].full) == 0 ||
            has_prefix_then(s, "torch.nn.", activations[a].name) ||
            has_prefix_then(s, "torch.nn.modules.", activations[a].name))
            return a;
    return -1;
}

/* ---- Dense ---- */

/* Dense (v5) and Normalize (v6) can read and write other features than the sentence
 * embedding; one over token embeddings is not a head this pipeline runs. */
static int check_feature(const err_ctx *e, const cJSON *root, const char *key)
{
    const char *s;
    if (io_json_string(e, root, key, &s) != 0) return -1;
    if (!s || strcmp(s, "sentence_embedding") == 0) return 0;
    return io_fail(e,
                   "field '%s' is \"%.40s\": vkbert runs the module on the sentence embedding only",
                   key, s);
}

/* Dense.load (v6): an activation_function left out is __init__'s default, Tanh; a path outside
 * torch is custom code, which vkbert never runs. */
static int read_activation(const err_ctx *e, const cJSON *root, int *out)
{
    const char *act;
    *out = ST_ACT_TANH;
    if (io_json_string(e, root, "activation_function", &act) != 0) return -1;
    if (!act) return 0;
    *out = st_activation_parse(act);
    if (*out >= 0 && *out != ST_ACT_SOFTMAX) return 0;
    return io_fail(e,
                   "field 'activation_function' is \"%.60s\": vkbert runs Identity, Tanh, ReLU, "
                   "GELU and Sigmoid",
                   act);
}

int st_dense_parse(const err_ctx *e, const cJSON *root, st_dense *d)
{
    if (!cJSON_IsObject(root)) return io_fail(e, "not a JSON object");
    int residual = 0;
    d->has_bias = 1;
    if (io_json_positive_int(e, root, "in_features", 1, &d->in_features) != 0 ||
        io_json_positive_int(e, root, "out_features", 1, &d->out_features) != 0 ||
        io_json_bool(e, root, "bias", 0, &d->has_bias) != 0 ||
        read_activation(e, root, &d->activation) != 0 ||
        io_json_bool(e, root, "use_residual", 0, &residual) != 0 ||
        check_feature(e, root, "module_input_name") != 0 ||
        check_feature(e, root, "module_output_name") != 0)
        return -1;
    /* v6's use_residual adds the input (or a projection of it) after the activation. */
    if (residual) return io_fail(e, "field 'use_residual' is true: vkbert runs Dense without it");
    return 0;
}

int st_normalize_parse(const err_ctx *e, const cJSON *root)
{
    if (!cJSON_IsObject(root)) return io_fail(e, "not a JSON object");
    return check_feature(e, root, "module_input_name") ||
                   check_feature(e, root, "module_output_name")
               ? -1
               : 0;
}

/* The tensor, of shape [rows] (cols 0) or [rows][cols] and a float dtype, converted into a new
 * array; NULL with the message written. */
static float *dense_tensor(const err_ctx *e, const st_file *f, const char *name, int64_t rows,
                           int64_t cols)
{
    const st_tensor *t = st_find(f, name);
    int ndim = cols ? 2 : 1;
    if (!t) return io_fail(e, "missing tensor '%s'", name), NULL;
    if (t->ndim != ndim || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        if (cols)
            io_fail(e,
                    "tensor '%s' does not have the shape [%lld, %lld] (out_features, "
                    "in_features) of config.json",
                    name, (long long)rows, (long long)cols);
        else
            io_fail(e, "tensor '%s' does not have the shape [%lld] (out_features) of config.json",
                    name, (long long)rows);
        return NULL;
    }
    float *data = malloc(t->count * sizeof *data);
    if (!data) return io_fail_oom(e, "out of memory"), NULL;
    if (st_to_f32(t, data) == 0) return data;
    free(data);
    return io_fail(e, "tensor '%s' has dtype %s; only F32, F16, BF16 and F64 are supported", name,
                   st_dtype_name(t->dtype)),
           NULL;
}

/* How a pytorch_model.bin-only module folder becomes one this reads. */
#define ST_CONVERT                                                                                 \
    "load the model with sentence-transformers and save it again with "                            \
    "model.save(folder, safe_serialization=True)"

int st_dense_load_weights(const err_ctx *e, const char *mdir, st_dense *d)
{
    char *path = io_safetensors_path(e, mdir, ST_CONVERT);
    if (!path) return -1;
    err_ctx fe = {path, e->err, e->size};
    st_file f = {0};
    int rc = st_load(path, &f, e->err, e->size);
    if (rc == 0 &&
        !(d->weight = dense_tensor(&fe, &f, "linear.weight", d->out_features, d->in_features)))
        rc = -1;
    if (rc == 0 && d->has_bias &&
        !(d->bias = dense_tensor(&fe, &f, "linear.bias", d->out_features, 0)))
        rc = -1;
    /* safetensors' load_model is strict: a bias the config does not ask for is an error. */
    if (rc == 0 && !d->has_bias && st_find(&f, "linear.bias"))
        rc = io_fail(&fe, "tensor 'linear.bias' is there but config.json says bias: false");
    st_free(&f);
    free(path);
    return rc;
}
