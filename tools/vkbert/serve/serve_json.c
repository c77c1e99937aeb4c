/* The routes' shared JSON side: failures as values, the body's checks, fields, numbers. */
#include "serve_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TEI's From<&ErrorType> for StatusCode (router/src/http/server.rs). */
static int tei_status(const char *type)
{
    static const struct {
        const char *type;
        int status;
    } map[] = {{"Unhealthy", 503}, {"Backend", 424},    {"Overloaded", 429},
               {"Tokenizer", 422}, {"Validation", 413}, {"Empty", 400}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(map[i].type, type)) return map[i].status;
    return 500;
}

static void fail_vset(serve_fail *f, int status, const char *type, const char *fmt, va_list ap)
{
    f->status = status;
    f->type = type;
    vsnprintf(f->message, sizeof f->message, fmt, ap);
}

int serve_fail_set(serve_fail *f, const char *type, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_vset(f, tei_status(type), type, fmt, ap);
    va_end(ap);
    return -1;
}

int serve_fail_status(serve_fail *f, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_vset(f, status, "Validation", fmt, ap);
    va_end(ap);
    return -1;
}

serve_reply serve_fail_reply(const serve_fail *f)
{
    if (!f->status) {
        serve_reply gone = {0, NULL, "application/json", 0};
        return gone;
    }
    return serve_error(f->status, f->type, "%s", f->message);
}

int serve_check_ready(const serve_server *s, serve_fail *f)
{
    if (s->state == SERVE_LOADING || !s->model || !s->queue)
        return serve_fail_set(f, "Unhealthy", "the model is loading");
    if (s->state == SERVE_STOPPING)
        return serve_fail_set(f, "Unhealthy", "the server is shutting down");
    if (!serve_queue_healthy(s->queue))
        return serve_fail_set(f, "Unhealthy", "no device is healthy");
    return 0;
}

/* Length of the UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF), or 0 when it is not one. */
static size_t utf8_sequence(const unsigned char *p, size_t left)
{
    if (p[0] < 0x80) return 1;
    size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (!n || n > left || p[0] > 0xf4) return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && p[0] == 0xe0 && p[1] < 0xa0) return 0;
    if (n == 3 && p[0] == 0xed && p[1] >= 0xa0) return 0;
    if (n == 4 && p[0] == 0xf0 && p[1] < 0x90) return 0;
    if (n == 4 && p[0] == 0xf4 && p[1] >= 0x90) return 0;
    return n;
}

/* The offset of the first byte that is not UTF-8, or `size` when all are. */
static size_t utf8_invalid_at(const char *body, size_t size)
{
    const unsigned char *p = (const unsigned char *)body;
    size_t at = 0;
    while (at < size) {
        size_t n = utf8_sequence(p + at, size - at);
        if (!n) return at;
        at += n;
    }
    return size;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key of the object named twice, or NULL. serde's derived structs refuse a duplicate
 * field ("duplicate field `inputs`", 422 through axum), where cJSON would take the first: a
 * proxy that takes the last would then see another request. Sorted, as a 2 MB body can name
 * ~200k keys. */
static const char *duplicate_key(const cJSON *object, int *out_of_memory)
{
    int n = cJSON_GetArraySize(object);
    *out_of_memory = 0;
    if (n < 2) return NULL;
    const char **names = malloc((size_t)n * sizeof *names);
    if (!names) return *out_of_memory = 1, NULL;
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, object) names[i++] = v->string;
    qsort(names, (size_t)n, sizeof *names, by_name);
    const char *twice = NULL;
    for (i = 1; i < n && !twice; i++)
        if (strcmp(names[i - 1], names[i]) == 0) twice = names[i];
    free(names);
    return twice;
}

/* JSON's \u0000 escape: cJSON decodes it to a NUL that ends its string there, so a text would
 * lose the rest. A UTF-8 body never holds the byte 0xFF: each such escape becomes one before
 * parsing, and the strings are mended after. */
#define NUL_MARK '\xff'

static int is_nul_escape(const char *b, size_t at, size_t size)
{
    return size - at >= 6 && memcmp(b + at, "\\u0000", 6) == 0;
}

static int has_nul_escape(const char *b, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (b[i] != '\\') continue;
        if (is_nul_escape(b, i, size)) return 1;
        i++; /* the escaped character, which may be a backslash itself */
    }
    return 0;
}

/* A copy of b[0..*size) with each \u0000 escape as NUL_MARK, *size its length; NULL when out
 * of memory. */
static char *mark_nuls(const char *b, size_t *size)
{
    char *out = malloc(*size + 1);
    size_t n = 0;
    for (size_t i = 0; out && i < *size; i++) {
        if (b[i] == '\\' && is_nul_escape(b, i, *size)) {
            out[n++] = NUL_MARK;
            i += 5;
            continue;
        }
        if (b[i] == '\\' && i + 1 < *size) out[n++] = b[i++];
        out[n++] = b[i];
    }
    if (out) out[n] = 0, *size = n;
    return out;
}

static void drop_marks(char *s)
{
    char *to = s;
    for (; *s; s++)
        if (*s != NUL_MARK) *to++ = *s;
    *to = 0;
}

/* A field name holding U+0000 is refused; so is a string value unless the model's tokenizer
 * drops U+0000 (clean_text), where dropping it first gives the same tokens. */
static int mend_nuls(cJSON *v, int drop, serve_fail *f)
{
    for (; v; v = v->next) {
        if (v->string && strchr(v->string, NUL_MARK))
            return serve_fail_status(f, 422, "a field name holds U+0000");
        if (cJSON_IsString(v) && strchr(v->valuestring, NUL_MARK)) {
            if (!drop)
                return serve_fail_set(f, "Tokenizer",
                                      "a text holds U+0000, which this model's tokenizer keeps "
                                      "(its normalizer does not clean text): not supported");
            drop_marks(v->valuestring);
        }
        if (mend_nuls(v->child, drop, f)) return -1;
    }
    return 0;
}

/* cJSON's parse of b[0..size), or NULL with *at where it stopped. */
static cJSON *parse_json(const char *b, size_t size, size_t *at)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(b, size + 1, &end, 1);
    *at = end && end >= b ? (size_t)(end - b) : 0;
    return root;
}

/* The body as JSON, its \u0000 escapes marked (*escapes: whether it had any); NULL with *f
 * set. */
static cJSON *parse_marked(const char *body, size_t size, int *escapes, serve_fail *f)
{
    size_t at, marked_size = size;
    *escapes = has_nul_escape(body, size);
    char *marked = *escapes ? mark_nuls(body, &marked_size) : NULL;
    if (*escapes && !marked) return serve_fail_set(f, "Backend", "out of host memory"), NULL;
    cJSON *root = parse_json(marked ? marked : body, marked_size, &at);
    /* a syntax error's offset is the body's own, not the marked copy's */
    if (!root && marked) cJSON_Delete(parse_json(body, size, &at));
    free(marked);
    if (!root)
        serve_fail_status(f, 400, "Failed to parse the request body as JSON at byte %zu", at);
    return root;
}

cJSON *serve_parse_body(const serve_server *s, const serve_call *call, serve_fail *f)
{
    const char *body = call->body ? call->body : "";
    size_t size = call->body ? call->body_size : 0;
    size_t bad = utf8_invalid_at(body, size);
    /* serde_json reads only UTF-8, and a malformed body is axum's JsonSyntaxError: 400. */
    if (bad < size) {
        serve_fail_status(f, 400, "the request body is not valid UTF-8 (at byte %zu)", bad);
        return NULL;
    }
    /* A NUL byte is never valid JSON; cJSON would stop reading there. */
    if (memchr(body, 0, size)) {
        serve_fail_status(f, 400, "Failed to parse the request body as JSON: a NUL byte");
        return NULL;
    }
    int escapes;
    cJSON *root = parse_marked(body, size, &escapes, f);
    if (!root) return NULL;
    /* A body of the wrong shape is axum's JsonDataError: 422. */
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        serve_fail_status(f, 422, "the request body must be a JSON object");
        return NULL;
    }
    /* Only a body with a \u0000 escape has marks to mend: the others skip the walk. */
    if (escapes && mend_nuls(root->child, s->drops_nul, f)) {
        cJSON_Delete(root);
        return NULL;
    }
    int out_of_memory;
    const char *twice = duplicate_key(root, &out_of_memory);
    if (twice || out_of_memory) {
        if (out_of_memory)
            serve_fail_set(f, "Backend", "out of host memory");
        else
            serve_fail_status(f, 422, "duplicate field `%.64s`", twice);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int serve_field_bool(const cJSON *o, const char *name, int nullable, int *out, serve_fail *f)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v || (nullable && cJSON_IsNull(v))) return 0;
    if (!cJSON_IsBool(v)) return serve_fail_status(f, 422, "`%s` must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

int serve_field_string(const cJSON *o, const char *name, const char **out, serve_fail *f)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) return serve_fail_status(f, 422, "`%s` must be a string", name);
    *out = v->valuestring;
    return 0;
}

int serve_field_int(const cJSON *o, const char *name, int lo, int hi, int *out, int *present,
                    serve_fail *f)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    *present = 0;
    if (!v || cJSON_IsNull(v)) return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d == floor(d))) return serve_fail_status(f, 422, "`%s` must be an integer", name);
    if (d < lo || d > hi)
        return serve_fail_status(f, 422, "`%s` must be between %d and %d, not %.17g", name, lo, hi,
                                 d);
    *out = (int)d;
    *present = 1;
    return 0;
}

int serve_field_direction(const cJSON *o, int *left, serve_fail *f)
{
    const char *d = NULL;
    if (serve_field_string(o, "truncation_direction", &d, f)) return -1;
    /* TEI's TruncationDirection: the variant names, "Right" by default (types.rs). */
    if (!d || !strcmp(d, "Right")) return *left = 0, 0;
    if (!strcmp(d, "Left")) return *left = 1, 0;
    return serve_fail_status(f, 422, "`truncation_direction` must be \"Left\" or \"Right\"");
}

void serve_embeddings_finish(float *rows, int count, int width, int dimensions, int normalize)
{
    int d = dimensions > 0 && dimensions < width ? dimensions : width;
    for (int i = 0; i < count; i++) {
        const float *src = rows + (size_t)i * width;
        float *dst = rows + (size_t)i * d;
        double sum = 0;
        for (int j = 0; j < d; j++)
            sum += (double)src[j] * src[j];
        /* torch.nn.functional.normalize divides by max(norm, 1e-12): sentence-transformers'
         * Normalize module and its truncate_dim do the same. */
        double scale = normalize ? 1.0 / fmax(sqrt(sum), 1e-12) : 1.0;
        for (int j = 0; j < d; j++)
            dst[j] = (float)(src[j] * scale);
    }
}

cJSON *serve_json_float(float v)
{
    /* 9 significant digits read back as the same float32 (IEEE 754, FLT_DECIMAL_DIG). */
    char text[32];
    snprintf(text, sizeof text, "%.9g", (double)v);
    return cJSON_CreateRaw(text);
}

cJSON *serve_json_floats(const float *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, serve_json_float(v[i]));
    return a;
}

serve_reply serve_json_reply(int status, cJSON *root, int tokens)
{
    char *body = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!body) return serve_error(500, "Backend", "out of host memory");
    serve_reply r = {status, body, "application/json", tokens};
    return r;
}
