/* Host weights of one attention layer, and reading them from a safetensors file with an
 * optional common prefix ("attn.", "layer.0.attention."...). */
#include "cli.h"
#include "io/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cli_weight_names[CLI_TENSORS] = {
    "q_proj.weight", "q_proj.bias", "k_proj.weight",   "k_proj.bias",
    "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias",
};

static int is_weight(int index)
{
    return index % 2 == 0;
}

int cli_weights_alloc(cli_weights *w, int e)
{
    memset(w, 0, sizeof *w);
    w->embed_dim = e;
    for (int i = 0; i < CLI_TENSORS; i++) {
        size_t n = is_weight(i) ? (size_t)e * (size_t)e : (size_t)e;
        w->tensor[i] = malloc(n * sizeof(float));
        if (!w->tensor[i]) {
            cli_weights_free(w);
            return -1;
        }
    }
    return 0;
}

void cli_weights_free(cli_weights *w)
{
    for (int i = 0; i < CLI_TENSORS; i++) {
        free(w->tensor[i]);
        w->tensor[i] = NULL;
    }
}

vkbert_attention_weights cli_weights_view(const cli_weights *w)
{
    vkbert_attention_weights v = VKBERT_ATTENTION_WEIGHTS_INIT;
    v.q_weight = w->tensor[CLI_QW], v.q_bias = w->tensor[CLI_QB];
    v.k_weight = w->tensor[CLI_KW], v.k_bias = w->tensor[CLI_KB];
    v.v_weight = w->tensor[CLI_VW], v.v_bias = w->tensor[CLI_VB];
    v.out_weight = w->tensor[CLI_OW], v.out_bias = w->tensor[CLI_OB];
    return v;
}

/* ---- reading ---- */

/* The length of the prefix before `suffix` in `name`, or -1 when `name` is not `suffix`
 * itself or "<prefix>.<suffix>". */
static long prefix_length(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    if (n < s || strcmp(name + n - s, suffix) != 0) return -1;
    if (n > s && name[n - s - 1] != '.') return -1;
    return (long)(n - s);
}

/* Finds the prefix of the tensor named like "<prefix>q_proj.weight". */
static int find_prefix(const char *path, const st_file *file, char *prefix, size_t size)
{
    const char *suffix = cli_weight_names[CLI_QW], *found = NULL;
    long len = -1;
    for (int i = 0; i < file->count; i++) {
        long l = prefix_length(file->tensors[i].name, suffix);
        if (l < 0) continue;
        if (found)
            return cli_error("%s: tensors '%s' and '%s' both end in '%s'; the file must hold "
                             "exactly one attention layer",
                             path, found, file->tensors[i].name, suffix);
        found = file->tensors[i].name, len = l;
    }
    if (!found)
        return cli_error("%s: missing tensor '%s' (with or without a prefix such as 'attn.')", path,
                         suffix);
    if ((size_t)len >= size) return cli_error("%s: the prefix of '%s' is too long", path, found);
    memcpy(prefix, found, (size_t)len);
    prefix[len] = '\0';
    return 0;
}

static int convertible(st_dtype dtype)
{
    return dtype == ST_F32 || dtype == ST_F16 || dtype == ST_BF16 || dtype == ST_F64;
}

/* The embed size from the q_proj weight, which must be [E, E]. */
static int embed_size(const char *path, const st_tensor *t, int *e)
{
    char shape[128];
    if (t->ndim == 2 && t->shape[0] == t->shape[1] && t->shape[0] > 0 && t->shape[0] <= 65536) {
        *e = (int)t->shape[0];
        return 0;
    }
    cli_format_shape(shape, sizeof shape, t->ndim, t->shape);
    return cli_error("%s: tensor '%s' has shape %s; expected a square [E, E] with 0 < E <= 65536",
                     path, t->name, shape);
}

static int check_tensor(const char *path, const st_tensor *t, int index, int e,
                        const char *e_source)
{
    int64_t want[2] = {e, e};
    int ndim = is_weight(index) ? 2 : 1;
    char got_s[128], want_s[64];
    if (!convertible(t->dtype))
        return cli_error("%s: tensor '%s' has dtype %s; expected F32, F16, BF16 or F64", path,
                         t->name, st_dtype_name(t->dtype));
    if (t->ndim == ndim && t->shape[0] == e && (ndim == 1 || t->shape[1] == e)) return 0;
    cli_format_shape(got_s, sizeof got_s, t->ndim, t->shape);
    cli_format_shape(want_s, sizeof want_s, ndim, want);
    return cli_error("%s: tensor '%s' has shape %s; expected %s (E = %d from '%s')", path, t->name,
                     got_s, want_s, e, e_source);
}

static const st_tensor *find_tensor(const char *path, const st_file *file, const char *prefix,
                                    int index)
{
    char name[512];
    snprintf(name, sizeof name, "%s%s", prefix, cli_weight_names[index]);
    const st_tensor *t = st_find(file, name);
    if (!t) cli_error("%s: missing tensor '%s'", path, name);
    return t;
}

/* Checks every tensor of the layer and finds E; fills tensors[]. */
static int check_layer(const char *path, const st_file *file, const st_tensor **tensors, int *e)
{
    char prefix[256];
    if (find_prefix(path, file, prefix, sizeof prefix)) return CLI_EXIT_FAILURE;
    for (int i = 0; i < CLI_TENSORS; i++)
        if (!(tensors[i] = find_tensor(path, file, prefix, i))) return CLI_EXIT_FAILURE;
    if (embed_size(path, tensors[CLI_QW], e)) return CLI_EXIT_FAILURE;
    for (int i = 0; i < CLI_TENSORS; i++)
        if (check_tensor(path, tensors[i], i, *e, tensors[CLI_QW]->name)) return CLI_EXIT_FAILURE;
    return 0;
}

int cli_weights_load(const char *path, cli_weights *w)
{
    st_file file;
    char err[1024];
    const st_tensor *tensors[CLI_TENSORS];
    int e = 0, code = 0;
    memset(w, 0, sizeof *w);
    if (st_load(path, &file, err, sizeof err)) return cli_error("%s", err);
    code = check_layer(path, &file, tensors, &e);
    if (!code && cli_weights_alloc(w, e)) code = cli_error("%s: out of host memory", path);
    for (int i = 0; !code && i < CLI_TENSORS; i++)
        if (st_to_f32(tensors[i], w->tensor[i]))
            code = cli_error("%s: cannot convert tensor '%s'", path, tensors[i]->name);
    if (code) cli_weights_free(w);
    st_free(&file);
    return code;
}
