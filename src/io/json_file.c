/* See json_file.h. */
#include "json_file.h"

#include "platform/platform.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *io_path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int io_path_exists(const char *path)
{
    return plat_file_info(path, NULL) != PLAT_MISSING;
}

/* PyTorch's pickle format runs code when loaded, and reading it needs Python; a folder
 * saved with safe_serialization=False (transformers and sentence-transformers before 3.0's
 * default) has only that, so the message says how to get the safe file. */
char *io_safetensors_path(const err_ctx *e, const char *dir, const char *how)
{
    char *path = io_path_join(dir, "model.safetensors");
    char *bin = io_path_join(dir, "pytorch_model.bin");
    int rc = path && bin ? 0 : io_fail_oom(e, "out of memory");
    if (rc == 0 && !io_path_exists(path) && io_path_exists(bin))
        rc = io_fail_open(
            &(err_ctx){bin, e->err, e->size},
            "PyTorch pickle weights are not read; convert them to model.safetensors (%s)", how);
    free(bin);
    if (rc == 0) return path;
    free(path);
    return NULL;
}

/* Read in chunks, so a directory fails on read, not on size. */
char *io_read_text(const err_ctx *e)
{
    FILE *f = fopen(e->path, "rb");
    if (!f) return io_fail_open(e, "cannot open: %s", strerror(errno)), NULL;
    size_t len = 0, cap = 4096;
    char *text = malloc(cap);
    while (text) {
        len += fread(text + len, 1, cap - 1 - len, f);
        if (len < cap - 1) break;
        char *bigger = realloc(text, cap * 2);
        if (!bigger) free(text);
        text = bigger;
        cap *= 2;
    }
    int failed = !text || ferror(f), e_no = errno;
    fclose(f);
    if (failed) {
        if (text)
            io_fail_open(e, "cannot read: %s", strerror(e_no));
        else
            io_fail_oom(e, "cannot read: out of memory");
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

cJSON *io_json_load(const err_ctx *e)
{
    char *text = io_read_text(e);
    if (!text) return NULL;
    const char *stop = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &stop, 1);
    if (!root) io_fail(e, "not valid JSON (error near byte %zu)", stop ? (size_t)(stop - text) : 0);
    free(text);
    return root;
}

int io_json_save(const err_ctx *e, const cJSON *root)
{
    char *text = cJSON_Print(root);
    if (!text) return io_fail_oom(e, "out of memory");
    FILE *f = fopen(e->path, "wb");
    int rc = f ? 0 : io_fail(e, "cannot create: %s", strerror(errno));
    if (f && (fputs(text, f) == EOF || fputc('\n', f) == EOF)) rc = -1;
    if (f && fclose(f) != 0) rc = -1;
    free(text);
    if (rc != 0 && f) return io_fail(e, "write failed: %s", strerror(errno));
    return rc;
}

/* The field, or NULL when absent or null; -1 in *rc when required and not there. */
static const cJSON *field(const err_ctx *e, const cJSON *obj, const char *key, int required,
                          int *rc)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsNull(v)) v = NULL;
    *rc = !v && required ? io_fail(e, "field '%s' is missing", key) : 0;
    return v;
}

int io_json_positive_int(const err_ctx *e, const cJSON *obj, const char *key, int required,
                         int *out)
{
    int rc;
    const cJSON *v = field(e, obj, key, required, &rc);
    if (!v) return rc;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= 1.0 && d <= INT_MAX && d == floor(d)))
        return io_fail(e, "field '%s' must be a positive integer", key);
    *out = (int)d;
    return 0;
}

int io_json_bool(const err_ctx *e, const cJSON *obj, const char *key, int required, int *out)
{
    int rc;
    const cJSON *v = field(e, obj, key, required, &rc);
    if (!v) return rc;
    if (!cJSON_IsBool(v)) return io_fail(e, "field '%s' must be true or false", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

int io_json_string(const err_ctx *e, const cJSON *obj, const char *key, const char **out)
{
    int rc;
    const cJSON *v = field(e, obj, key, 0, &rc);
    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsString(v)) return io_fail(e, "field '%s' is not a string", key);
    *out = v->valuestring;
    return 0;
}
