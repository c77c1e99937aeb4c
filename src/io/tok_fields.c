/* Reading tokenizer.json components' members with messages that name the component and the key
 * (tok_fields.h). The shapes follow tokenizers' serde definitions: a `char` is a one-character
 * string, a `usize`/`u32` a non-negative integer, an `Option` absent or null. */
#include "tok_fields.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tok_fields_known(const err_ctx *c, const cJSON *o, const char *what, const char *const *known)
{
    if (!cJSON_IsObject(o)) return io_fail(c, "%s: expected an object", what);
    for (const cJSON *m = o->child; m; m = m->next) {
        size_t i = 0;
        while (known[i] && strcmp(known[i], m->string) != 0)
            i++;
        if (!known[i]) return io_fail(c, "%s: unknown key \"%s\"", what, m->string);
    }
    return 0;
}

int tok_field_type(const err_ctx *c, const cJSON *o, const char *what, const char **type)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    if (!cJSON_IsObject(o) || !cJSON_IsString(t) || !t->valuestring)
        return io_fail(c, "%s: expected an object with a \"type\"", what);
    *type = t->valuestring;
    return 0;
}

int tok_field_string(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                     const char **s, size_t *n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return io_fail(c, "%s: %s: missing", what, key);
    if (!cJSON_IsString(v) || !v->valuestring)
        return io_fail(c, "%s: %s: expected a string", what, key);
    *s = v->valuestring;
    *n = strlen(v->valuestring);
    return 0;
}

int tok_field_opt_string(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                         const char **s)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    size_t n;
    *s = NULL;
    if (!v || cJSON_IsNull(v)) return 0;
    return tok_field_string(c, o, what, key, s, &n);
}

int tok_strdup(const err_ctx *c, const char *s, char **out)
{
    *out = NULL;
    if (!s) return 0;
    size_t n = strlen(s);
    *out = malloc(n + 1);
    if (!*out) return io_fail_oom(c, "out of memory for a string of %zu bytes", n);
    memcpy(*out, s, n + 1);
    return 0;
}

int tok_field_copy(const err_ctx *c, const cJSON *o, const char *what, const char *key, char **out,
                   size_t *n)
{
    const char *s = NULL;
    *out = NULL;
    if (tok_field_string(c, o, what, key, &s, n) != 0) return -1;
    return tok_strdup(c, s, out);
}

int tok_field_bool(const err_ctx *c, const cJSON *o, const char *what, const char *key, int def,
                   int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) {
        if (def < 0) return io_fail(c, "%s: %s: missing", what, key);
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return io_fail(c, "%s: %s: expected true or false", what, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

int tok_field_opt_bool(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                       int *out)
{
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, key))) return 0;
    return tok_field_bool(c, o, what, key, *out, out);
}

int tok_field_number(const err_ctx *c, const cJSON *v, const char *what, const char *key,
                     double most, double *out)
{
    /* the range first: converting a double outside the integer's is undefined behaviour */
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (d >= 0 && d <= most && d == floor(d)) {
        *out = d;
        return 0;
    }
    if (key) return io_fail(c, "%s: %s: expected an integer from 0 to %.0f", what, key, most);
    return io_fail(c, "%s: expected an integer from 0 to %.0f", what, most);
}

int tok_field_uint(const err_ctx *c, const cJSON *v, const char *what, double max, uint32_t *out)
{
    double d = 0;
    if (tok_field_number(c, v, what, NULL, max, &d) != 0) return -1;
    *out = (uint32_t)d;
    return 0;
}

int32_t tok_utf8_decode(const char *s, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t k = u[0] < 0x80 ? 1 : u[0] < 0xE0 ? 2 : u[0] < 0xF0 ? 3 : 4;
    if (k > n) k = n;
    int32_t cp = k == 1 ? u[0] : u[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++)
        cp = (cp << 6) | (u[i] & 0x3F);
    *len = k;
    return cp;
}

int tok_field_char(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                   int32_t *out)
{
    const char *s = NULL;
    size_t n = 0, len;
    if (tok_field_string(c, o, what, key, &s, &n) != 0) return -1;
    if (n == 0 || (*out = tok_utf8_decode(s, n, &len), len != n))
        return io_fail(c, "%s: %s: expected one character", what, key);
    return 0;
}
