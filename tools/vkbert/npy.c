/* .npy reader and float32 writer. The header is a Python dict literal; it is parsed by hand so
 * that any file NumPy writes (keys in any order, extra whitespace, trailing commas) loads, and
 * anything else is refused with a message instead of a crash. Data is assumed to be
 * little-endian on a little-endian host, as everywhere else in vkbert. */
#include "npy.h"

#include "platform/platform.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* NumPy aligns the start of the data to 64 bytes so that it can be memory-mapped. */
#define NPY_ALIGN 64

/* ---- messages: "<path>: <problem>", and the kind of the last failure ---- */

typedef struct err_ctx {
    const char *path;
    char *err;
    size_t size;
} err_ctx;

static _Thread_local npy_failure last_failure;

static int fail_as(const err_ctx *c, npy_failure kind, const char *fmt, va_list ap)
{
    last_failure = kind;
    if (!c->err || c->size == 0) return -1;
    int n = snprintf(c->err, c->size, "%s: ", c->path ? c->path : "(null)");
    if (n >= 0 && (size_t)n < c->size) vsnprintf(c->err + n, c->size - (size_t)n, fmt, ap);
    return -1;
}

/* Each writes the message, records its kind and returns -1. */
static int npy_fail(const err_ctx *c, const char *fmt, ...) PLAT_PRINTF(2, 3);
static int npy_fail_oom(const err_ctx *c, const char *fmt, ...) PLAT_PRINTF(2, 3);
static int npy_fail_open(const err_ctx *c, const char *fmt, ...) PLAT_PRINTF(2, 3);

static int npy_fail(const err_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_as(c, NPY_MALFORMED, fmt, ap);
    va_end(ap);
    return -1;
}

static int npy_fail_oom(const err_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_as(c, NPY_NO_MEMORY, fmt, ap);
    va_end(ap);
    return -1;
}

static int npy_fail_open(const err_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_as(c, NPY_UNREADABLE, fmt, ap);
    va_end(ap);
    return -1;
}

npy_failure npy_last_failure(void)
{
    return last_failure;
}

/* c->path, opened for reading when it is a regular file (not a folder or a device). */
static FILE *open_regular(const err_ctx *c, uint64_t *size)
{
    plat_file_kind kind;
    FILE *f = plat_open_regular(c->path, &kind, size);
    if (f) return f;
    if (kind == PLAT_MISSING)
        npy_fail_open(c, "cannot open: %s", strerror(errno));
    else
        npy_fail_open(c, "cannot read: not a regular file%s",
                      kind == PLAT_DIRECTORY ? " (a folder)" : "");
    return NULL;
}

/* IEEE 754 binary16 to float: every binary16 value is exact in float, so scaling the
 * significand by a power of two loses nothing. */
static float half_value(uint16_t h)
{
    int exponent = (h >> 10) & 0x1f;
    float significand = (float)(h & 0x3ff);
    float magnitude;
    if (exponent == 0x1f)
        magnitude = significand != 0.0f ? NAN : INFINITY;
    else if (exponent == 0)
        magnitude = ldexpf(significand, -24); /* subnormal */
    else
        magnitude = ldexpf(significand + 1024.0f, exponent - 25);
    return (h & 0x8000) ? -magnitude : magnitude;
}

/* ---- header dict parser ---- */

typedef struct hdr_parser {
    const char *begin;
    const char *p;
    const char *end;
    char msg[160]; /* the problem, without the path; npy_load adds it */
} hdr_parser;

typedef struct npy_header {
    char descr[16];
    int fortran;
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    int have_descr, have_fortran, have_shape;
} npy_header;

static int perr(hdr_parser *ps, const char *what)
{
    snprintf(ps->msg, sizeof ps->msg, "malformed header: %s at offset %td", what,
             ps->p - ps->begin);
    return -1;
}

static void skip_ws(hdr_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
                               *ps->p == '\r' || *ps->p == '\f' || *ps->p == '\v'))
        ps->p++;
}

/* Skips whitespace and reports whether the next character is c (without consuming it). */
static int peek(hdr_parser *ps, char c)
{
    skip_ws(ps);
    return ps->p < ps->end && *ps->p == c;
}

static int expect(hdr_parser *ps, char c, const char *what)
{
    if (!peek(ps, c)) return perr(ps, what);
    ps->p++;
    return 0;
}

/* A quoted string without escapes: header keys and descr never need any. */
static int parse_str(hdr_parser *ps, char *buf, size_t cap)
{
    skip_ws(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"')) return perr(ps, "expected a string");
    char quote = *ps->p++;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != quote) {
        if (n + 1 >= cap) return perr(ps, "string too long");
        buf[n++] = *ps->p++;
    }
    if (ps->p >= ps->end) return perr(ps, "unterminated string");
    ps->p++;
    buf[n] = '\0';
    return 0;
}

static int match_word(hdr_parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return 0;
    ps->p += n;
    return 1;
}

static int parse_bool(hdr_parser *ps, int *out)
{
    skip_ws(ps);
    if (match_word(ps, "True"))
        *out = 1;
    else if (match_word(ps, "False"))
        *out = 0;
    else
        return perr(ps, "fortran_order must be True or False");
    return 0;
}

static int parse_dim(hdr_parser *ps, int64_t *out)
{
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '-') return perr(ps, "negative dimension in shape");
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return perr(ps, "expected an integer");
    int64_t v = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        int d = *ps->p++ - '0';
        if (v > (INT64_MAX - d) / 10) return perr(ps, "dimension too large");
        v = v * 10 + d;
    }
    if (ps->p < ps->end && *ps->p == 'L') ps->p++; /* Python 2 long literals */
    *out = v;
    return 0;
}

/* Accepts (), (5,), (5), (2, 3) and (2, 3,). */
static int parse_shape(hdr_parser *ps, npy_header *h)
{
    if (expect(ps, '(', "shape must be a tuple") != 0) return -1;
    h->ndim = 0;
    for (;;) {
        if (peek(ps, ')')) break;
        if (h->ndim == NPY_MAX_DIMS) return perr(ps, "shape has more than 8 dimensions");
        if (parse_dim(ps, &h->shape[h->ndim]) != 0) return -1;
        h->ndim++;
        if (peek(ps, ',')) {
            ps->p++;
            continue;
        }
        if (!peek(ps, ')')) return perr(ps, "expected ',' or ')' in shape");
    }
    ps->p++;
    return 0;
}

static int parse_entry(hdr_parser *ps, npy_header *h)
{
    char key[32];
    if (parse_str(ps, key, sizeof key) != 0) return -1;
    if (expect(ps, ':', "expected ':' after a key") != 0) return -1;
    int *seen;
    int rc;
    if (strcmp(key, "descr") == 0) {
        seen = &h->have_descr;
        rc = parse_str(ps, h->descr, sizeof h->descr);
    } else if (strcmp(key, "fortran_order") == 0) {
        seen = &h->have_fortran;
        rc = parse_bool(ps, &h->fortran);
    } else if (strcmp(key, "shape") == 0) {
        seen = &h->have_shape;
        rc = parse_shape(ps, h);
    } else {
        snprintf(ps->msg, sizeof ps->msg, "malformed header: unknown key '%s'", key);
        return -1;
    }
    if (rc != 0) return -1;
    if (*seen) {
        snprintf(ps->msg, sizeof ps->msg, "malformed header: key '%s' appears twice", key);
        return -1;
    }
    *seen = 1;
    return 0;
}

static int parse_header(hdr_parser *ps, npy_header *h)
{
    memset(h, 0, sizeof *h);
    if (expect(ps, '{', "expected '{'") != 0) return -1;
    for (;;) {
        if (peek(ps, '}')) break;
        if (parse_entry(ps, h) != 0) return -1;
        if (peek(ps, ',')) {
            ps->p++;
            continue;
        }
        if (!peek(ps, '}')) return perr(ps, "expected ',' or '}'");
    }
    ps->p++;
    skip_ws(ps);
    if (ps->p != ps->end) return perr(ps, "unexpected text after '}'");
    const char *missing = !h->have_descr     ? "descr"
                          : !h->have_fortran ? "fortran_order"
                          : !h->have_shape   ? "shape"
                                             : NULL;
    if (missing) {
        snprintf(ps->msg, sizeof ps->msg, "malformed header: missing key '%s'", missing);
        return -1;
    }
    return 0;
}

/* ---- dtypes ---- */

static const struct {
    const char *code; /* descr without the byte-order character */
    npy_dtype dtype;
    size_t size;
    const char *name;
} dtype_table[] = {
    {"f4", NPY_FLOAT32, 4, "float32"}, {"f2", NPY_FLOAT16, 2, "float16"},
    {"f8", NPY_FLOAT64, 8, "float64"}, {"b1", NPY_BOOL, 1, "bool"},
    {"u1", NPY_UINT8, 1, "uint8"},     {"i4", NPY_INT32, 4, "int32"},
    {"i8", NPY_INT64, 8, "int64"},
};

#define DTYPE_COUNT (sizeof dtype_table / sizeof dtype_table[0])

static int parse_descr(const err_ctx *c, const char *descr, npy_dtype *dtype, size_t *size)
{
    char order = descr[0] && strchr("<>=|", descr[0]) ? descr[0] : '\0';
    const char *code = order ? descr + 1 : descr;
    size_t i = 0;
    while (i < DTYPE_COUNT && strcmp(dtype_table[i].code, code) != 0)
        i++;
    if (i == DTYPE_COUNT) return npy_fail(c, "unsupported dtype '%s'", descr);
    /* Byte order only matters for multi-byte types; '=' is native, i.e. little-endian here. */
    if (dtype_table[i].size > 1) {
        if (order == '>')
            return npy_fail(c, "big-endian data is not supported (dtype '%s')", descr);
        if (order != '<' && order != '=')
            return npy_fail(c, "dtype '%s' has no valid byte order", descr);
    }
    *dtype = dtype_table[i].dtype;
    *size = dtype_table[i].size;
    return 0;
}

const char *npy_dtype_name(npy_dtype dtype)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtype_table[i].dtype == dtype) return dtype_table[i].name;
    return "unknown";
}

/* ---- loading ---- */

static void format_shape(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, ndim == 1 ? ",)" : ")");
}

/* Product of the shape times item_size, or -1 when it does not fit in size_t. */
static int shape_bytes(int ndim, const int64_t *shape, size_t item_size, size_t *count,
                       size_t *bytes)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (uint64_t)shape[i] > SIZE_MAX) return -1;
        size_t d = (size_t)shape[i];
        if (d != 0 && n > SIZE_MAX / d) return -1;
        n *= d;
    }
    if (n > SIZE_MAX / item_size) return -1;
    *count = n;
    *bytes = n * item_size;
    return 0;
}

/* Checks magic and version; returns where the header text starts and how long it is. */
static int read_preamble(const err_ctx *c, FILE *f, size_t fsize, size_t *start, size_t *hlen)
{
    unsigned char pre[12];
    size_t got = fread(pre, 1, fsize < sizeof pre ? fsize : sizeof pre, f);
    if (fsize == 0) return npy_fail(c, "file is empty, not an .npy file");
    if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return npy_fail(c, "bad magic, not an .npy file");
    if (got < 8)
        return npy_fail(c, "file is truncated inside the version field (%zu bytes)", fsize);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3)
        return npy_fail(c, "unsupported .npy format version %d.%d", major, minor);
    *start = major == 1 ? 10 : 12;
    if (got < *start)
        return npy_fail(c, "file is truncated inside the header length (%zu bytes)", fsize);
    *hlen = major == 1 ? (size_t)pre[8] | (size_t)pre[9] << 8
                       : (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                             (size_t)pre[11] << 24;
    if (*hlen > fsize - *start)
        return npy_fail(c, "header length %zu runs past the end of the file (%zu bytes)", *hlen,
                        fsize);
    return 0;
}

static int read_header(const err_ctx *c, FILE *f, size_t start, size_t hlen, npy_header *h)
{
    char *text = malloc(hlen + 1);
    if (!text) return npy_fail_oom(c, "out of memory reading a %zu-byte header", hlen);
    if (fseek(f, (long)start, SEEK_SET) != 0 || fread(text, 1, hlen, f) != hlen) {
        free(text);
        return npy_fail(c, "read error in the header");
    }
    hdr_parser ps = {.begin = text, .p = text, .end = text + hlen, .msg = {0}};
    int rc = parse_header(&ps, h);
    free(text);
    if (rc != 0) return npy_fail(c, "%s", ps.msg);
    if (h->fortran)
        return npy_fail(c, "Fortran-order (fortran_order: True) arrays are not supported");
    return 0;
}

static int read_data(const err_ctx *c, FILE *f, size_t avail, const npy_header *h, npy_array *out)
{
    size_t bytes;
    char shape[200];
    format_shape(shape, sizeof shape, h->ndim, h->shape);
    if (shape_bytes(h->ndim, h->shape, out->item_size, &out->count, &bytes) != 0)
        return npy_fail(c, "shape %s is too large", shape);
    const char *dname = npy_dtype_name(out->dtype);
    if (avail < bytes)
        return npy_fail(c, "data is truncated: shape %s of %s needs %zu bytes, file has %zu", shape,
                        dname, bytes, avail);
    if (avail > bytes)
        return npy_fail(c, "file has %zu bytes of data but shape %s of %s needs only %zu", avail,
                        shape, dname, bytes);
    void *data = malloc(bytes ? bytes : 1);
    if (!data) return npy_fail_oom(c, "out of memory for %zu bytes of data", bytes);
    if (fread(data, 1, bytes, f) != bytes) {
        free(data);
        return npy_fail(c, "read error in the data");
    }
    out->data = data;
    return 0;
}

static int load_from(const err_ctx *c, FILE *f, uint64_t length, npy_array *out)
{
    size_t fsize = (size_t)length, start = 0, hlen = 0;
    npy_header h;
    if (length > SIZE_MAX)
        return npy_fail(c, "too large to read (%llu bytes)", (unsigned long long)length);
    if (read_preamble(c, f, fsize, &start, &hlen) != 0) return -1;
    if (read_header(c, f, start, hlen, &h) != 0) return -1;
    if (parse_descr(c, h.descr, &out->dtype, &out->item_size) != 0) return -1;
    if (read_data(c, f, fsize - start - hlen, &h, out) != 0) return -1;
    out->ndim = h.ndim;
    memcpy(out->shape, h.shape, sizeof h.shape);
    return 0;
}

int npy_load(const char *path, npy_array *out, char *err, size_t err_size)
{
    err_ctx c = {path, err, err_size};
    if (!out) return npy_fail(&c, "no output array given");
    memset(out, 0, sizeof *out);
    if (!path) return npy_fail(&c, "no path given");
    uint64_t length;
    FILE *f = open_regular(&c, &length);
    if (!f) return -1;
    npy_array tmp = {0};
    int rc = load_from(&c, f, length, &tmp);
    fclose(f);
    if (rc != 0) {
        free(tmp.data);
        return -1;
    }
    *out = tmp;
    return 0;
}

void npy_free(npy_array *array)
{
    if (!array) return;
    free(array->data);
    memset(array, 0, sizeof *array);
}

/* ---- saving ---- */

/* Builds the padded header text (ending in '\n') and returns its length, or 0 if too long. */
static size_t build_header(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    char shape_text[200];
    format_shape(shape_text, sizeof shape_text, ndim, shape);
    int n =
        snprintf(buf, cap, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape_text);
    if (n < 0 || (size_t)n >= cap) return 0;
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    size_t hlen = padded - 10;
    if (hlen > cap || hlen > 0xffff) return 0;
    memset(buf + n, ' ', hlen - (size_t)n);
    buf[hlen - 1] = '\n';
    return hlen;
}

static int write_all(FILE *f, size_t hlen, const char *header, const float *data, size_t bytes)
{
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    pre[8] = (unsigned char)(hlen & 0xff);
    pre[9] = (unsigned char)(hlen >> 8);
    if (fwrite(pre, 1, sizeof pre, f) != sizeof pre) return -1;
    if (fwrite(header, 1, hlen, f) != hlen) return -1;
    if (bytes && fwrite(data, 1, bytes, f) != bytes) return -1;
    return 0;
}

int npy_save_f32(const char *path, int ndim, const int64_t *shape, const float *data, char *err,
                 size_t err_size)
{
    err_ctx c = {path, err, err_size};
    size_t count, bytes;
    char header[512];
    if (!path) return npy_fail(&c, "no path given");
    if (ndim < 0 || ndim > NPY_MAX_DIMS)
        return npy_fail(&c, "cannot save %d dimensions (0 to %d supported)", ndim, NPY_MAX_DIMS);
    if (ndim > 0 && !shape) return npy_fail(&c, "no shape given");
    if (shape_bytes(ndim, shape, sizeof(float), &count, &bytes) != 0)
        return npy_fail(&c, "shape has a negative or too large dimension");
    if (count > 0 && !data) return npy_fail(&c, "no data given");
    size_t hlen = build_header(header, sizeof header, ndim, shape);
    if (hlen == 0) return npy_fail(&c, "header too long");
    FILE *f = fopen(path, "wb");
    if (!f) return npy_fail(&c, "cannot create: %s", strerror(errno));
    int rc = write_all(f, hlen, header, data, bytes);
    if (fclose(f) != 0) rc = -1;
    if (rc != 0) {
        remove(path);
        return npy_fail(&c, "write failed: %s", strerror(errno));
    }
    return 0;
}

/* ---- conversion ---- */

static float element_to_f32(npy_dtype dtype, const unsigned char *p)
{
    switch (dtype) {
    case NPY_FLOAT32: {
        float v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case NPY_FLOAT16: {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return half_value(v);
    }
    case NPY_FLOAT64: {
        double v;
        memcpy(&v, p, sizeof v);
        return (float)v;
    }
    case NPY_BOOL:
        return *p ? 1.0f : 0.0f;
    case NPY_UINT8:
        return (float)*p;
    case NPY_INT32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return (float)v;
    }
    case NPY_INT64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return (float)v;
    }
    }
    return 0.0f;
}

void npy_to_f32(const npy_array *array, float *out)
{
    if (!array || !out || !array->data) return;
    const unsigned char *p = array->data;
    if (array->dtype == NPY_FLOAT32) {
        memcpy(out, p, array->count * sizeof(float));
        return;
    }
    for (size_t i = 0; i < array->count; i++)
        out[i] = element_to_f32(array->dtype, p + i * array->item_size);
}
