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

FILE *io_open_regular(const err_ctx *e, uint64_t *size)
{
    plat_file_kind kind;
    FILE *f = plat_open_regular(e->path, &kind, size);
    if (f) return f;
    int saved = errno; /* for the caller: an optional file may be missing */
    if (kind == PLAT_MISSING)
        io_fail_open(e, "cannot open: %s", strerror(saved));
    else
        io_fail_open(e, "cannot read: not a regular file%s",
                     kind == PLAT_DIRECTORY ? " (a folder)" : "");
    errno = saved;
    return NULL;
}

/* errno set too: callers tell a missing optional file by ENOENT, which must not be stale. */
static int too_large(const err_ctx *e, size_t cap)
{
    io_fail(e, "larger than %zu MiB, the most read for this file", cap >> 20);
    errno = EFBIG;
    return -1;
}

/* Reads to the end, not just the size fstat gave: a file may grow, and some (in /proc) report 0.
 * `hint` (at most cap) sizes the first block, so a file read whole takes one read. */
static int read_all(const err_ctx *e, FILE *f, size_t hint, size_t cap, char **text, size_t *size)
{
    size_t len = 0, room = hint + 2;
    char *buf = malloc(room);
    while (buf) {
        len += fread(buf + len, 1, room - 1 - len, f);
        if (len < room - 1 || len > cap) break; /* the end, an error, or over the cap */
        size_t more = room > cap / 2 ? cap + 2 : room * 2;
        char *bigger = realloc(buf, more);
        if (!bigger) free(buf);
        buf = bigger;
        room = more;
    }
    int e_no = errno;
    if (!buf) return io_fail_oom(e, "cannot read: out of memory");
    if (ferror(f) || len > cap) free(buf);
    if (ferror(f)) return io_fail_open(e, "cannot read: %s", strerror(e_no));
    if (len > cap) return too_large(e, cap);
    buf[len] = '\0';
    *text = buf;
    *size = len;
    return 0;
}

int io_read_file(const err_ctx *e, size_t cap, char **text, size_t *size)
{
    uint64_t length = 0;
    FILE *f = io_open_regular(e, &length);
    if (!f) return -1;
    int rc = length > cap ? too_large(e, cap) : read_all(e, f, (size_t)length, cap, text, size);
    fclose(f);
    return rc;
}

cJSON *io_json_load(const err_ctx *e)
{
    char *text;
    size_t size;
    if (io_read_file(e, IO_CAP_JSON, &text, &size) != 0) return NULL;
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
