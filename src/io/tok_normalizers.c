/* The normalizers of tokenizer.json, each as tokenizers has it: tokenizers/src/normalizers/
 * (unicode.rs: NFC, NFD, NFKC, NFKD, Nmt; utils.rs: Sequence, Lowercase; strip.rs: Strip,
 * StripAccents; replace.rs; prepend.rs; bert.rs: BertNormalizer; byte_level.rs; precompiled.rs,
 * in tok_charsmap.c) and the NormalizedString methods they call (tok_norm.c). The loader
 * refuses a type or a key it does not know, by name. */
#include "tok_norm_ops.h"
#include "tok_fields.h"
#include "tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum norm_kind {
    N_NFC,
    N_NFD,
    N_NFKC,
    N_NFKD,
    N_NMT,
    N_LOWERCASE,
    N_STRIP,
    N_STRIP_ACCENTS,
    N_REPLACE,
    N_PREPEND,
    N_BERT,
    N_BYTE_LEVEL,
    N_PRECOMPILED,
    N_SEQUENCE,
} norm_kind;

/* The type names, in norm_kind's order, and the keys each takes. */
static const struct {
    const char *name;
    const char *keys[6];
} KINDS[] = {
    {"NFC", {"type", NULL}},
    {"NFD", {"type", NULL}},
    {"NFKC", {"type", NULL}},
    {"NFKD", {"type", NULL}},
    {"Nmt", {"type", NULL}},
    {"Lowercase", {"type", NULL}},
    {"Strip", {"type", "strip_left", "strip_right", NULL}},
    {"StripAccents", {"type", NULL}},
    {"Replace", {"type", "pattern", "content", NULL}},
    {"Prepend", {"type", "prepend", NULL}},
    {"BertNormalizer",
     {"type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase", NULL}},
    {"ByteLevel", {"type", NULL}},
    {"Precompiled", {"type", "precompiled_charsmap", NULL}},
    {"Sequence", {"type", "normalizers", NULL}},
};

#define COUNT(a) (sizeof(a) / sizeof *(a))

struct tok_normalizer {
    norm_kind kind;
    int left, right;                          /* Strip */
    int clean, chinese, strip_accents, lower; /* BertNormalizer */
    char *text;                               /* Replace's content, Prepend's prefix */
    size_t text_len;
    char *literal; /* Replace's {"String": ...} pattern, or NULL for a regex */
    size_t literal_len;
    tok_regex *regex;
    tok_charsmap *charsmap;
    tok_normalizer **items; /* Sequence */
    size_t count;
};

void tok_normalizer_free(tok_normalizer *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->count; i++)
        tok_normalizer_free(n->items[i]);
    free(n->items);
    free(n->text);
    free(n->literal);
    tok_regex_free(n->regex);
    tok_charsmap_free(n->charsmap);
    free(n);
}

/* ------------------------------------------------------------------------------ loading ---- */

static int load_replace(const err_ctx *c, const cJSON *j, tok_normalizer *n)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "pattern");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "String");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "Regex");
    if (!cJSON_IsObject(p) || cJSON_GetArraySize(p) != 1 || (!s && !r))
        return io_fail(c, "normalizer: Replace: pattern: not {\"String\": ...} or "
                          "{\"Regex\": ...}");
    if (tok_field_copy(c, j, "normalizer: Replace", "content", &n->text, &n->text_len) != 0)
        return -1;
    if (s) {
        if (tok_field_copy(c, p, "normalizer: Replace: pattern", "String", &n->literal,
                           &n->literal_len) != 0)
            return -1;
        /* tokenizers matches the empty pattern between characters; not supported */
        if (n->literal_len == 0) return io_fail(c, "normalizer: Replace: pattern: empty");
        return 0;
    }
    const char *regex = NULL;
    size_t len = 0;
    if (tok_field_string(c, p, "normalizer: Replace: pattern", "Regex", &regex, &len) != 0)
        return -1;
    return tok_regex_compile(c, regex, len, &n->regex);
}

static int load_bert(const err_ctx *c, const cJSON *j, tok_normalizer *n)
{
    const char *what = "normalizer: BertNormalizer";
    if (tok_field_bool(c, j, what, "clean_text", -1, &n->clean) != 0 ||
        tok_field_bool(c, j, what, "handle_chinese_chars", -1, &n->chinese) != 0 ||
        tok_field_bool(c, j, what, "lowercase", -1, &n->lower) != 0)
        return -1;
    n->strip_accents = n->lower; /* None: strip when lowercasing */
    return tok_field_opt_bool(c, j, what, "strip_accents", &n->strip_accents);
}

static int load_sequence(const err_ctx *c, const cJSON *j, tok_normalizer *n)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "normalizers");
    if (!cJSON_IsArray(list)) return io_fail(c, "normalizer: Sequence: normalizers: not a list");
    size_t size = (size_t)cJSON_GetArraySize(list);
    n->items = calloc(size ? size : 1, sizeof *n->items);
    if (!n->items) return io_fail_oom(c, "normalizer: Sequence: out of memory");
    const cJSON *item;
    cJSON_ArrayForEach(item, list)
    {
        if (tok_normalizer_load(c, item, &n->items[n->count]) != 0) return -1;
        n->count++;
    }
    return 0;
}

static int load_options(const err_ctx *c, const cJSON *j, tok_normalizer *n)
{
    const char *text = NULL;
    size_t len = 0;
    switch (n->kind) {
    case N_STRIP:
        return tok_field_bool(c, j, "normalizer: Strip", "strip_left", -1, &n->left) != 0 ||
                       tok_field_bool(c, j, "normalizer: Strip", "strip_right", -1, &n->right) != 0
                   ? -1
                   : 0;
    case N_REPLACE:
        return load_replace(c, j, n);
    case N_PREPEND:
        return tok_field_copy(c, j, "normalizer: Prepend", "prepend", &n->text, &n->text_len);
    case N_BERT:
        return load_bert(c, j, n);
    case N_PRECOMPILED:
        if (tok_field_string(c, j, "normalizer: Precompiled", "precompiled_charsmap", &text,
                             &len) != 0)
            return -1;
        return tok_charsmap_load(c, text, len, &n->charsmap);
    case N_SEQUENCE:
        return load_sequence(c, j, n);
    default:
        return 0;
    }
}

int tok_normalizer_load(const err_ctx *c, const cJSON *j, tok_normalizer **out)
{
    *out = NULL;
    const char *type = NULL;
    if (tok_field_type(c, j, "normalizer", &type) != 0) return -1;
    size_t kind = 0;
    while (kind < COUNT(KINDS) && strcmp(KINDS[kind].name, type) != 0)
        kind++;
    if (kind == COUNT(KINDS)) return io_fail(c, "normalizer: unsupported type \"%s\"", type);
    char what[64];
    snprintf(what, sizeof what, "normalizer: %s", type);
    if (tok_fields_known(c, j, what, KINDS[kind].keys) != 0) return -1;
    tok_normalizer *n = calloc(1, sizeof *n);
    if (!n) return io_fail_oom(c, "normalizer: out of memory");
    n->kind = (norm_kind)kind;
    if (load_options(c, j, n) != 0) {
        tok_normalizer_free(n);
        return -1;
    }
    *out = n;
    return 0;
}

/* ------------------------------------------------------------------------------ running ---- */

/* unicode.rs's do_nmt: control characters dropped, some spaces made plain spaces. */
static int nmt_keep(int32_t c, const void *ctx)
{
    (void)ctx;
    return !((c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F ||
             c == 0x8F || c == 0x9F);
}

static int32_t nmt_space(int32_t c, const void *ctx)
{
    (void)ctx;
    int space = c == 0x9 || c == 0xA || c == 0xC || c == 0xD || c == 0x1680 ||
                (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
                c == 0xFEFF || c == 0xFFFD;
    return space ? ' ' : c;
}

/* bert.rs's do_clean_text: NUL, U+FFFD and control characters dropped, whitespace a space. */
static int bert_keep(int32_t c, const void *ctx)
{
    (void)ctx;
    return !(c == 0 || c == 0xFFFD || tok_is_control(c));
}

static int32_t bert_space(int32_t c, const void *ctx)
{
    (void)ctx;
    return tok_is_ws(c) ? ' ' : c;
}

static int keep_unless_accent(int32_t c, const void *ctx)
{
    (void)ctx;
    return !tok_nf_is_mark(c);
}

static int keep_unless_nonspacing(int32_t c, const void *ctx)
{
    (void)ctx;
    return !tok_is_mark(c);
}

/* NormalizedString::lowercase: Rust's to_lowercase, U+0130 the one that gives two. */
static int lowercase(const err_ctx *c, tok_norm *t)
{
    tok_changes out = {0};
    int rc = 0;
    for (size_t i = 0, len; i < t->n && rc == 0; i += len) {
        int32_t ch = tok_utf8_next(t->s + i, t->n - i, &len);
        if (ch == 0x130) {
            rc = tok_changes_push(c, &out, 'i', 0);
            if (rc == 0) rc = tok_changes_push(c, &out, 0x307, 1);
        } else {
            rc = tok_changes_push(c, &out, tok_lower(ch), 0);
        }
    }
    if (rc == 0) rc = tok_norm_transform_all(c, t, &out, 0);
    tok_changes_free(&out);
    return rc;
}

/* bert.rs's do_handle_chinese_chars: a space either side of each ideograph. */
static int space_ideographs(const err_ctx *c, tok_norm *t)
{
    tok_changes out = {0};
    int rc = 0;
    for (size_t i = 0, len; i < t->n && rc == 0; i += len) {
        int32_t ch = tok_utf8_next(t->s + i, t->n - i, &len);
        if (!tok_is_cjk(ch)) {
            rc = tok_changes_push(c, &out, ch, 0);
            continue;
        }
        rc = tok_changes_push(c, &out, ' ', 0);
        if (rc == 0) rc = tok_changes_push(c, &out, ch, 1);
        if (rc == 0) rc = tok_changes_push(c, &out, ' ', 1);
    }
    if (rc == 0) rc = tok_norm_transform_all(c, t, &out, 0);
    tok_changes_free(&out);
    return rc;
}

static int run_bert(const err_ctx *c, const tok_normalizer *n, tok_norm *t)
{
    if (n->clean &&
        (tok_norm_filter(c, t, bert_keep, NULL) != 0 || tok_norm_map(c, t, bert_space, NULL) != 0))
        return -1;
    if (n->chinese && space_ideographs(c, t) != 0) return -1;
    if (n->strip_accents &&
        (tok_nf_run(c, t, 0, 0) != 0 || tok_norm_filter(c, t, keep_unless_nonspacing, NULL) != 0))
        return -1;
    return n->lower ? lowercase(c, t) : 0;
}

/* The character GPT-2's byte-level alphabet shows byte b as (processors/byte_level.rs's
 * bytes_char): printable Latin-1 as itself, the others as U+0100 on, in byte order. */
static int32_t byte_char(unsigned b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return (int32_t)b;
    unsigned shown_before = b <= 0x20 ? b : b <= 0xA0 ? b - 0x5E : 0x43; /* 0xAD is the last */
    return (int32_t)(0x100 + shown_before);
}

static int run_byte_level(const err_ctx *c, tok_norm *t)
{
    tok_changes out = {0};
    int rc = 0;
    for (size_t i = 0, len; i < t->n && rc == 0; i += len) {
        tok_utf8_next(t->s + i, t->n - i, &len);
        for (size_t k = 0; k < len && rc == 0; k++)
            rc = tok_changes_push(c, &out, byte_char((unsigned char)t->s[i + k]), k > 0);
    }
    if (rc == 0 && t->n) rc = tok_norm_transform_all(c, t, &out, 0);
    tok_changes_free(&out);
    return rc;
}

/* Every non-overlapping occurrence of the literal, left to right. */
static int find_literal(const err_ctx *c, const tok_normalizer *n, const tok_norm *t, tok_span **m,
                        size_t *count, size_t *cap)
{
    for (size_t i = 0; i + n->literal_len <= t->n;) {
        if (memcmp(t->s + i, n->literal, n->literal_len) != 0) {
            i++;
            continue;
        }
        if (*count == *cap) {
            size_t grown = *cap ? *cap * 2 : 16;
            tok_span *v = realloc(*m, grown * sizeof *v);
            if (!v) return io_fail_oom(c, "normalizer: Replace: out of memory");
            *m = v;
            *cap = grown;
        }
        (*m)[(*count)++] = (tok_span){i, i + n->literal_len};
        i += n->literal_len;
    }
    return 0;
}

static int run_replace(const err_ctx *c, const tok_normalizer *n, tok_norm *t)
{
    if (t->n == 0) return 0; /* find_matches has no match in an empty text, even an empty one */
    tok_span *m = NULL;
    size_t count = 0, cap = 0;
    int rc = n->regex ? tok_regex_all(c, n->regex, t->s, t->n, &m, &count, &cap)
                      : find_literal(c, n, t, &m, &count, &cap);
    if (rc == 0) rc = tok_norm_replace(c, t, m, count, n->text, n->text_len);
    free(m);
    return rc;
}

int tok_normalizer_run(const err_ctx *c, const tok_normalizer *n, tok_norm *t)
{
    switch (n->kind) {
    case N_NFC:
        return tok_nf_run(c, t, 0, 1);
    case N_NFD:
        return tok_nf_run(c, t, 0, 0);
    case N_NFKC:
        return tok_nf_run(c, t, 1, 1);
    case N_NFKD:
        return tok_nf_run(c, t, 1, 0);
    case N_NMT:
        return tok_norm_filter(c, t, nmt_keep, NULL) != 0 ? -1
                                                          : tok_norm_map(c, t, nmt_space, NULL);
    case N_LOWERCASE:
        return lowercase(c, t);
    case N_STRIP:
        return tok_norm_strip(c, t, n->left, n->right);
    case N_STRIP_ACCENTS:
        return tok_norm_filter(c, t, keep_unless_accent, NULL);
    case N_REPLACE:
        return run_replace(c, n, t);
    case N_PREPEND:
        return tok_norm_prepend(c, t, n->text, n->text_len);
    case N_BERT:
        return run_bert(c, n, t);
    case N_BYTE_LEVEL:
        return run_byte_level(c, t);
    case N_PRECOMPILED:
        return tok_charsmap_run(c, n->charsmap, t);
    case N_SEQUENCE:
        for (size_t i = 0; i < n->count; i++)
            if (tok_normalizer_run(c, n->items[i], t) != 0) return -1;
        return 0;
    }
    return io_fail(c, "normalizer: unknown kind");
}

/* Writes s at out + *w (size bytes in all), *w moved on; 0 when it did not all fit. */
static int put(char *out, size_t size, size_t *w, const char *s)
{
    size_t n = strlen(s);
    if (*w + n >= size) return 0;
    memcpy(out + *w, s, n + 1);
    *w += n;
    return 1;
}

/* Writes n's description at out + *w, *w moved on; 0 when it did not all fit. */
static int describe(const tok_normalizer *n, char *out, size_t size, size_t *w)
{
    if (!put(out, size, w, KINDS[n->kind].name)) return 0;
    if (n->kind != N_SEQUENCE) return 1;
    if (!put(out, size, w, "[")) return 0;
    for (size_t i = 0; i < n->count; i++)
        if ((i && !put(out, size, w, ", ")) || !describe(n->items[i], out, size, w)) return 0;
    return put(out, size, w, "]");
}

void tok_normalizer_describe(const tok_normalizer *n, char *out, size_t size)
{
    if (size == 0) return;
    out[0] = 0;
    size_t w = 0;
    /* a description cut short for room ends in "...", never in a "]" that would read as whole */
    if (!describe(n, out, size, &w) && size >= 4)
        memcpy(out + (w + 4 <= size ? w : size - 4), "...", 4);
}
