/* safetensors reader and writer. The whole file is mapped read-only and every header field
 * is checked before a tensor points into it, so a malformed file gives a message, never a
 * crash. Offsets are arbitrary, so data is only ever read through memcpy. */
#include "safetensors.h"

#include "half.h"
#include "io_error.h"
#include "platform/platform.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Integers above 2^53 cannot be represented exactly by cJSON's doubles. */
#define MAX_JSON_INT 9007199254740992.0
/* cJSON prints numbers from 1e15 up in exponent form, which other readers reject as offsets. */
#define MAX_SAVED_INT 999999999999999.0

static const struct {
    const char *name;
    st_dtype dtype;
    size_t size;
} dtype_table[] = {
    {"F32", ST_F32, 4}, {"F16", ST_F16, 2}, {"BF16", ST_BF16, 2}, {"F64", ST_F64, 8},
    {"I64", ST_I64, 8}, {"I32", ST_I32, 4}, {"U8", ST_U8, 1},     {"BOOL", ST_BOOL, 1},
};

#define DTYPE_COUNT (sizeof dtype_table / sizeof dtype_table[0])

const char *st_dtype_name(st_dtype dtype)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtype_table[i].dtype == dtype) return dtype_table[i].name;
    return "unknown";
}

static size_t dtype_size(st_dtype dtype)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtype_table[i].dtype == dtype) return dtype_table[i].size;
    return 0;
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- reading ---- */

/* The file is mapped, not read: a model's weights are only touched once, while converting,
 * and the page cache serves them without a copy. */
static int map_file(const err_ctx *c, const uint8_t **buf, size_t *size)
{
    const void *data = NULL;
    const char *failed = plat_map_file(c->path, &data, size);
    *buf = data;
    if (failed && errno == ENOMEM) return io_fail_oom(c, "cannot %s: %s", failed, strerror(errno));
    if (failed && strcmp(failed, "read") == 0) /* a FIFO, device or folder: never opened to wait */
        return io_fail_open(c, "cannot read: not a regular file%s",
                            errno == EISDIR ? " (a folder)" : "");
    return failed ? io_fail_open(c, "cannot %s: %s", failed, strerror(errno)) : 0;
}

/* A JSON number that is an exact non-negative integer. */
static int json_index(const cJSON *item, uint64_t *out)
{
    if (!cJSON_IsNumber(item)) return -1;
    double v = item->valuedouble;
    if (!(v >= 0.0 && v <= MAX_JSON_INT)) return -1; /* also rejects NaN */
    uint64_t u = (uint64_t)v;
    if ((double)u != v) return -1;
    *out = u;
    return 0;
}

static int parse_dtype(const err_ctx *c, const cJSON *entry, st_tensor *t)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    if (!d) return io_fail(c, "tensor '%s' has no dtype", t->name);
    if (!cJSON_IsString(d)) return io_fail(c, "tensor '%s': dtype is not a string", t->name);
    for (size_t i = 0; i < DTYPE_COUNT; i++) {
        if (strcmp(dtype_table[i].name, d->valuestring) == 0) {
            t->dtype = dtype_table[i].dtype;
            return 0;
        }
    }
    return io_fail(c, "tensor '%s' has unknown dtype '%s'", t->name, d->valuestring);
}

static int parse_shape(const err_ctx *c, const cJSON *entry, st_tensor *t)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    if (!s) return io_fail(c, "tensor '%s' has no shape", t->name);
    if (!cJSON_IsArray(s)) return io_fail(c, "tensor '%s': shape is not an array", t->name);
    int n = cJSON_GetArraySize(s);
    if (n > ST_MAX_DIMS)
        return io_fail(c, "tensor '%s' has %d dimensions, at most %d are supported", t->name, n,
                       ST_MAX_DIMS);
    size_t count = 1;
    int i = 0;
    for (const cJSON *dim = s->child; dim; dim = dim->next, i++) {
        uint64_t d;
        if (json_index(dim, &d) != 0)
            return io_fail(c, "tensor '%s': shape entry %d is not a non-negative integer", t->name,
                           i);
        if (d > SIZE_MAX || (d != 0 && count > SIZE_MAX / d))
            return io_fail(c, "tensor '%s': shape is too large", t->name);
        count *= (size_t)d;
        t->shape[i] = (int64_t)d;
    }
    t->ndim = n;
    t->count = count;
    return 0;
}

static int parse_offsets(const err_ctx *c, const cJSON *entry, size_t data_size, uint64_t *begin,
                         uint64_t *end)
{
    const char *name = entry->string;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!o) return io_fail(c, "tensor '%s' has no data_offsets", name);
    if (!cJSON_IsArray(o) || cJSON_GetArraySize(o) != 2 || json_index(o->child, begin) != 0 ||
        json_index(o->child->next, end) != 0)
        return io_fail(c, "tensor '%s': data_offsets is not 2 non-negative integers", name);
    if (*begin > *end)
        return io_fail(c, "tensor '%s': data_offsets begin %llu is after end %llu", name,
                       (unsigned long long)*begin, (unsigned long long)*end);
    if (*end > data_size)
        return io_fail(c, "tensor '%s': data_offsets end %llu is past the data area (%zu bytes)",
                       name, (unsigned long long)*end, data_size);
    return 0;
}

static int parse_entry(const err_ctx *c, const cJSON *entry, const uint8_t *data, size_t data_size,
                       st_tensor *t)
{
    if (!cJSON_IsObject(entry))
        return io_fail(c, "tensor '%s' is not a JSON object", entry->string);
    t->name = dup_string(entry->string);
    if (!t->name) return io_fail_oom(c, "out of memory");
    uint64_t begin = 0, end = 0;
    if (parse_dtype(c, entry, t) != 0 || parse_shape(c, entry, t) != 0 ||
        parse_offsets(c, entry, data_size, &begin, &end) != 0)
        return -1;
    size_t item = dtype_size(t->dtype);
    if (t->count > SIZE_MAX / item) return io_fail(c, "tensor '%s': shape is too large", t->name);
    t->nbytes = (size_t)(end - begin);
    if (t->nbytes != t->count * item)
        return io_fail(c, "tensor '%s': data_offsets give %zu bytes but %zu %s elements need %zu",
                       t->name, t->nbytes, t->count, st_dtype_name(t->dtype), t->count * item);
    t->data = data + begin;
    return 0;
}

/* Parses the header text, which may be padded with trailing whitespace. */
static cJSON *parse_json(const err_ctx *c, const uint8_t *text, size_t len)
{
    if (memchr(text, '\0', len)) return io_fail(c, "header contains a NUL byte"), NULL;
    char *s = malloc(len + 1);
    if (!s) return io_fail_oom(c, "out of memory for a %zu-byte header", len), NULL;
    memcpy(s, text, len);
    s[len] = '\0';
    const char *stop = NULL;
    cJSON *json = cJSON_ParseWithOpts(s, &stop, 1);
    size_t at = stop ? (size_t)(stop - s) : 0;
    free(s);
    if (!json) return io_fail(c, "header is not valid JSON (error near byte %zu)", at), NULL;
    if (!cJSON_IsObject(json)) {
        cJSON_Delete(json);
        return io_fail(c, "header is not a JSON object"), NULL;
    }
    return json;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, so that a header with very many entries costs n log n, not n^2. */
static int check_unique(const err_ctx *c, const st_file *f)
{
    if (f->count < 2) return 0;
    char **names = malloc((size_t)f->count * sizeof *names);
    if (!names) return io_fail_oom(c, "out of memory for %d tensor names", f->count);
    for (int i = 0; i < f->count; i++)
        names[i] = f->tensors[i].name;
    qsort(names, (size_t)f->count, sizeof *names, compare_names);
    int rc = 0;
    for (int i = 1; i < f->count && rc == 0; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            rc = io_fail(c, "tensor '%s' appears twice in the header", names[i]);
    free(names);
    return rc;
}

static int compare_areas(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->data != y->data) return x->data < y->data ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* The reference reader's rule (safetensors' Metadata::validate): ordered by data_offsets, each
 * tensor's data starts where the one before ends, from 0 to the end of the file. So no two
 * tensors share or overlap bytes, and nothing is hidden in a gap. */
static int check_layout(const err_ctx *c, const st_file *f, const uint8_t *data, size_t data_size)
{
    const st_tensor **order = malloc((f->count > 0 ? (size_t)f->count : 1) * sizeof *order);
    if (!order) return io_fail_oom(c, "out of memory for %d tensors", f->count);
    for (int i = 0; i < f->count; i++)
        order[i] = &f->tensors[i];
    qsort(order, (size_t)f->count, sizeof *order, compare_areas);
    size_t at = 0;
    int rc = 0;
    for (int i = 0; i < f->count && rc == 0; i++) {
        size_t begin = (size_t)((const uint8_t *)order[i]->data - data);
        if (begin != at)
            rc = io_fail(c,
                         "tensor '%s': data_offsets begin at %zu, not at %zu where the data "
                         "before it ends (tensors must not overlap or leave gaps)",
                         order[i]->name, begin, at);
        at = begin + order[i]->nbytes;
    }
    free(order);
    if (rc == 0 && at != data_size)
        rc = io_fail(c, "the tensors' data ends at byte %zu of the %zu-byte data area", at,
                     data_size);
    return rc;
}

static int parse_tensors(const err_ctx *c, const cJSON *json, const uint8_t *data, size_t data_size,
                         st_file *f)
{
    int n = cJSON_GetArraySize(json);
    f->tensors = calloc(n > 0 ? (size_t)n : 1, sizeof *f->tensors);
    if (!f->tensors) return io_fail_oom(c, "out of memory for %d tensors", n);
    for (const cJSON *e = json->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        /* Counted before parsing so st_free releases a partly filled entry. */
        st_tensor *t = &f->tensors[f->count++];
        if (parse_entry(c, e, data, data_size, t) != 0) return -1;
    }
    return check_unique(c, f) != 0 ? -1 : check_layout(c, f, data, data_size);
}

static int parse_file(const err_ctx *c, st_file *f)
{
    if (f->size < 8)
        return io_fail(c, "file is %zu bytes, shorter than the 8-byte header length", f->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f->buffer[i];
    if (hlen == 0) return io_fail(c, "header length is 0");
    if (hlen > f->size - 8)
        return io_fail(c, "header length %llu runs past the end of the file (%zu bytes)",
                       (unsigned long long)hlen, f->size);
    cJSON *json = parse_json(c, f->buffer + 8, (size_t)hlen);
    if (!json) return -1;
    const uint8_t *data = f->buffer + 8 + hlen;
    int rc = parse_tensors(c, json, data, f->size - 8 - (size_t)hlen, f);
    cJSON_Delete(json);
    return rc;
}

int st_load(const char *path, st_file *out, char *err, size_t err_size)
{
    err_ctx c = {path, err, err_size};
    if (!out) return io_fail(&c, "no output given");
    memset(out, 0, sizeof *out);
    if (!path) return io_fail(&c, "no path given");
    st_file f = {0};
    if (map_file(&c, &f.buffer, &f.size) != 0) return -1;
    f.mapped = f.buffer != NULL;
    if (parse_file(&c, &f) != 0) {
        st_free(&f);
        return -1;
    }
    *out = f;
    return 0;
}

int st_parse(const void *data, size_t size, const char *name, st_file *out, char *err,
             size_t err_size)
{
    err_ctx c = {name, err, err_size};
    if (!out) return io_fail(&c, "no output given");
    memset(out, 0, sizeof *out);
    if (!data && size) return io_fail(&c, "no data given");
    st_file f = {.buffer = data, .size = size};
    if (parse_file(&c, &f) != 0) {
        st_free(&f);
        return -1;
    }
    *out = f;
    return 0;
}

void st_free(st_file *file)
{
    if (!file) return;
    for (int i = 0; i < file->count; i++)
        free(file->tensors[i].name);
    free(file->tensors);
    if (file->mapped) plat_unmap(file->buffer, file->size);
    memset(file, 0, sizeof *file);
}

const st_tensor *st_find(const st_file *file, const char *name)
{
    if (!file || !name) return NULL;
    for (int i = 0; i < file->count; i++)
        if (strcmp(file->tensors[i].name, name) == 0) return &file->tensors[i];
    return NULL;
}

static float element_to_f32(st_dtype dtype, const uint8_t *p)
{
    float f;
    uint16_t h;
    double d;
    switch (dtype) {
    case ST_F32:
        memcpy(&f, p, sizeof f);
        return f;
    case ST_F16:
        memcpy(&h, p, sizeof h);
        return half_to_float(h);
    case ST_BF16:
        memcpy(&h, p, sizeof h);
        return bf16_to_float(h);
    case ST_F64:
        memcpy(&d, p, sizeof d);
        return (float)d;
    default:
        return 0.0f;
    }
}

int st_convert_f32(st_dtype dtype, const void *data, size_t count, float *out)
{
    if ((!data || !out) && count) return -1;
    if (dtype != ST_F32 && dtype != ST_F16 && dtype != ST_BF16 && dtype != ST_F64) return -1;
    size_t item = dtype_size(dtype);
    const uint8_t *p = data;
    /* The loader's hot loop on a BF16 or F16 model: one dtype test per call, not per element. */
    if (dtype == ST_BF16)
        for (size_t i = 0; i < count; i++)
            out[i] = bf16_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    else if (dtype == ST_F16)
        for (size_t i = 0; i < count; i++)
            out[i] = half_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    else
        for (size_t i = 0; i < count; i++)
            out[i] = element_to_f32(dtype, p + i * item);
    return 0;
}

int st_to_f32(const st_tensor *tensor, float *out)
{
    if (!tensor) return -1;
    return st_convert_f32(tensor->dtype, tensor->data, tensor->count, out);
}

/* ---- writing ---- */

typedef struct save_args {
    int count;
    const char *const *names;
    const st_dtype *dtypes;
    const int *ndims;
    const int64_t *const *shapes;
    const float *const *data;
} save_args;

static int tensor_bytes(const save_args *a, int i, size_t *bytes)
{
    size_t n = dtype_size(a->dtypes[i]);
    for (int d = 0; d < a->ndims[i]; d++) {
        int64_t dim = a->shapes[i][d];
        if (dim < 0 || (uint64_t)dim > SIZE_MAX || (double)dim > MAX_SAVED_INT) return -1;
        if (dim != 0 && n > SIZE_MAX / (size_t)dim) return -1;
        n *= (size_t)dim;
    }
    *bytes = n;
    return 0;
}

static int check_tensor(const err_ctx *c, const save_args *a, int i)
{
    const char *name = a->names[i];
    if (!name) return io_fail(c, "tensor %d has no name", i);
    if (strcmp(name, "__metadata__") == 0) return io_fail(c, "'__metadata__' is a reserved name");
    for (int j = 0; j < i; j++)
        if (strcmp(a->names[j], name) == 0) return io_fail(c, "tensor '%s' given twice", name);
    if (a->dtypes[i] != ST_F32 && a->dtypes[i] != ST_F16)
        return io_fail(c, "tensor '%s': only F32 and F16 can be saved", name);
    if (a->ndims[i] < 0 || a->ndims[i] > ST_MAX_DIMS)
        return io_fail(c, "tensor '%s': %d dimensions (0 to %d supported)", name, a->ndims[i],
                       ST_MAX_DIMS);
    size_t bytes;
    if ((a->ndims[i] > 0 && !a->shapes[i]) || tensor_bytes(a, i, &bytes) != 0)
        return io_fail(c, "tensor '%s': missing, negative or too large shape", name);
    if (bytes > 0 && !a->data[i]) return io_fail(c, "tensor '%s' has no data", name);
    return 0;
}

/* F32 tensors come first in the data area so that they stay 4-byte aligned after F16 ones. */
static int data_order(const save_args *a, int k)
{
    int seen = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < a->count; i++)
            if ((a->dtypes[i] == ST_F32) == (pass == 0) && seen++ == k) return i;
    return -1;
}

static cJSON *tensor_json(const save_args *a, int i, size_t begin, size_t end)
{
    cJSON *t = cJSON_CreateObject();
    cJSON *shape = cJSON_AddArrayToObject(t, "shape");
    cJSON *offsets = cJSON_AddArrayToObject(t, "data_offsets");
    if (!cJSON_AddStringToObject(t, "dtype", st_dtype_name(a->dtypes[i])) || !shape || !offsets) {
        cJSON_Delete(t);
        return NULL;
    }
    int ok = 1;
    for (int d = 0; d < a->ndims[i]; d++)
        ok &= cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)a->shapes[i][d]));
    ok &= cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)begin));
    ok &= cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)end));
    if (!ok) {
        cJSON_Delete(t);
        return NULL;
    }
    return t;
}

/* The header JSON, unpadded, or NULL when out of memory or the data is too large. */
static char *build_header(const save_args *a)
{
    cJSON *root = cJSON_CreateObject();
    cJSON **entries = calloc((size_t)a->count + 1, sizeof *entries);
    size_t offset = 0, bytes = 0;
    int ok = root && entries;
    for (int k = 0; ok && k < a->count; k++) {
        int i = data_order(a, k);
        ok = tensor_bytes(a, i, &bytes) == 0 && offset + bytes >= offset &&
             (double)(offset + bytes) <= MAX_SAVED_INT;
        if (ok) entries[i] = tensor_json(a, i, offset, offset + bytes);
        ok = ok && entries[i];
        offset += bytes;
    }
    /* Added in the caller's order, whatever the data order. */
    for (int i = 0; ok && i < a->count; i++) {
        ok = cJSON_AddItemToObject(root, a->names[i], entries[i]);
        if (ok) entries[i] = NULL;
    }
    for (int i = 0; entries && i < a->count; i++)
        cJSON_Delete(entries[i]);
    free(entries);
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

static int write_tensor(FILE *f, const save_args *a, int i)
{
    size_t bytes;
    tensor_bytes(a, i, &bytes);
    if (a->dtypes[i] == ST_F32) return bytes && fwrite(a->data[i], 1, bytes, f) != bytes ? -1 : 0;
    uint16_t chunk[1024];
    size_t count = bytes / 2;
    for (size_t done = 0; done < count;) {
        size_t n = count - done < 1024 ? count - done : 1024;
        for (size_t j = 0; j < n; j++)
            chunk[j] = float_to_half(a->data[i][done + j]);
        if (fwrite(chunk, 2, n, f) != n) return -1;
        done += n;
    }
    return 0;
}

static int write_file(FILE *f, const save_args *a, const char *header)
{
    size_t len = strlen(header);
    size_t padded = (len + 7) / 8 * 8;
    uint8_t prefix[8];
    for (int b = 0; b < 8; b++)
        prefix[b] = (uint8_t)((uint64_t)padded >> (8 * b));
    if (fwrite(prefix, 1, 8, f) != 8 || fwrite(header, 1, len, f) != len) return -1;
    for (size_t k = len; k < padded; k++)
        if (fputc(' ', f) == EOF) return -1;
    for (int k = 0; k < a->count; k++)
        if (write_tensor(f, a, data_order(a, k)) != 0) return -1;
    return 0;
}

int st_save(const char *path, int count, const char *const *names, const st_dtype *dtypes,
            const int *ndims, const int64_t *const *shapes, const float *const *data, char *err,
            size_t err_size)
{
    err_ctx c = {path, err, err_size};
    save_args a = {count, names, dtypes, ndims, shapes, data};
    if (!path) return io_fail(&c, "no path given");
    if (count < 0 || (count > 0 && (!names || !dtypes || !ndims || !shapes || !data)))
        return io_fail(&c, "invalid tensor list");
    for (int i = 0; i < count; i++)
        if (check_tensor(&c, &a, i) != 0) return -1;
    char *header = build_header(&a);
    if (!header) return io_fail(&c, "cannot build the header (out of memory or too large)");
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(header);
        return io_fail(&c, "cannot create: %s", strerror(errno));
    }
    int rc = write_file(f, &a, header);
    free(header);
    if (fclose(f) != 0) rc = -1;
    if (rc != 0) {
        remove(path);
        return io_fail(&c, "write failed: %s", strerror(errno));
    }
    return 0;
}
