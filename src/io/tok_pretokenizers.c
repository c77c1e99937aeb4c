/* Loading the pre-tokenizers from tokenizer.json, with the keys, defaults and refusals of
 * tokenizers' deserializers (tokenizers/src/pre_tokenizers/mod.rs and each type's file:
 * metaspace.rs, byte_level.rs, whitespace.rs, punctuation.rs, digits.rs, split.rs, bert.rs,
 * sequence.rs; SplitDelimiterBehavior in tokenizers/src/tokenizer/normalizer.rs). A key that
 * tokenizers would ignore is refused here, by name: nothing is read but what is understood. */
#include "tok_norm_ops.h"
#include "tok_pretokenizers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GPT-2's pattern, as byte_level.rs has it. */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
/* whitespace.rs's pattern, in the regex crate's meaning. */
static const char whitespace_pattern[] = "\\w+|[^\\w\\s]+";

static const char *const behavior_names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                             "MergedWithNext", "Contiguous"};

typedef struct pretok_type {
    const char *name;
    pretok_kind kind;
    const char *keys; /* the keys it reads besides "type", space-separated */
} pretok_type;

static const pretok_type types[] = {
    {"Metaspace", PRETOK_METASPACE, "replacement add_prefix_space prepend_scheme split str_rep"},
    {"ByteLevel", PRETOK_BYTE_LEVEL, "add_prefix_space trim_offsets use_regex"},
    {"Whitespace", PRETOK_WHITESPACE, ""},
    {"WhitespaceSplit", PRETOK_WHITESPACE_SPLIT, ""},
    {"Punctuation", PRETOK_PUNCTUATION, "behavior"},
    {"Digits", PRETOK_DIGITS, "individual_digits"},
    {"Split", PRETOK_SPLIT, "pattern behavior invert"},
    {"BertPreTokenizer", PRETOK_BERT, ""},
    {"Sequence", PRETOK_SEQUENCE, "pretokenizers"},
};

/* Whether `key` is one of the space-separated words of `keys`. */
static int key_listed(const char *keys, const char *key)
{
    size_t n = strlen(key);
    for (const char *k = keys; *k;) {
        size_t len = strcspn(k, " ");
        if (len == n && strncmp(k, key, n) == 0) return 1;
        k += len + (k[len] == ' ');
    }
    return 0;
}

static int check_keys(const err_ctx *c, const cJSON *j, const pretok_type *t)
{
    for (const cJSON *item = j->child; item; item = item->next)
        if (strcmp(item->string, "type") != 0 && !key_listed(t->keys, item->string))
            return io_fail(c, "pre_tokenizer: %s: unknown key \"%s\"", t->name, item->string);
    return 0;
}

/* A boolean key: *out keeps its default when the key is absent and `required` is 0. */
static int read_bool(const err_ctx *c, const cJSON *j, const char *type, const char *key,
                     int required, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v && !required) return 0;
    if (!v) return io_fail(c, "pre_tokenizer: %s: missing key \"%s\"", type, key);
    if (!cJSON_IsBool(v)) return io_fail(c, "pre_tokenizer: %s: %s: not a boolean", type, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

static int read_behavior(const err_ctx *c, const cJSON *j, const char *type, int required,
                         tok_behavior *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "behavior");
    if (!v && !required) return 0;
    if (!v) return io_fail(c, "pre_tokenizer: %s: missing key \"behavior\"", type);
    if (!cJSON_IsString(v)) return io_fail(c, "pre_tokenizer: %s: behavior: not a string", type);
    for (size_t i = 0; i < sizeof behavior_names / sizeof *behavior_names; i++)
        if (strcmp(v->valuestring, behavior_names[i]) == 0) {
            *out = (tok_behavior)i;
            return 0;
        }
    return io_fail(c, "pre_tokenizer: %s: behavior: unknown \"%s\"", type, v->valuestring);
}

static int load_metaspace(const err_ctx *c, const cJSON *j, tok_pretokenizer *p)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "replacement");
    if (!cJSON_IsString(r))
        return io_fail(c, "pre_tokenizer: Metaspace: replacement: %s",
                       r ? "not a string" : "missing");
    size_t n = strlen(r->valuestring), len = 0;
    if (n > 0) p->replacement = tok_utf8_next(r->valuestring, n, &len);
    if (n == 0 || len != n || n > 4)
        return io_fail(c, "pre_tokenizer: Metaspace: replacement: \"%s\" is not one character",
                       r->valuestring);
    memcpy(p->replacement_utf8, r->valuestring, n);
    p->replacement_len = n;

    p->prepend = PREPEND_ALWAYS;
    const cJSON *scheme = cJSON_GetObjectItemCaseSensitive(j, "prepend_scheme");
    if (scheme) {
        static const char *const names[] = {"always", "first", "never"};
        size_t i = 0;
        while (i < 3 && !(cJSON_IsString(scheme) && strcmp(scheme->valuestring, names[i]) == 0))
            i++;
        if (i == 3)
            return io_fail(c, "pre_tokenizer: Metaspace: prepend_scheme: not first, always or "
                              "never");
        p->prepend = (pretok_prepend)i;
    }
    /* the older key: false must come with the scheme never (the default, always, is refused as
     * tokenizers refuses it) */
    int add_prefix_space = 1;
    if (read_bool(c, j, "Metaspace", "add_prefix_space", 0, &add_prefix_space) != 0) return -1;
    if (!add_prefix_space && p->prepend != PREPEND_NEVER)
        return io_fail(c, "pre_tokenizer: Metaspace: add_prefix_space false does not match "
                          "prepend_scheme");
    const cJSON *rep = cJSON_GetObjectItemCaseSensitive(j, "str_rep");
    if (rep && !cJSON_IsString(rep))
        return io_fail(c, "pre_tokenizer: Metaspace: str_rep: not a string");
    p->split = 1;
    return read_bool(c, j, "Metaspace", "split", 0, &p->split);
}

static int set_pattern(const err_ctx *c, tok_pretokenizer *p, const char *pattern, int is_regex)
{
    p->pattern = malloc(strlen(pattern) + 1);
    if (!p->pattern) return io_fail_oom(c, "pre_tokenizer: out of memory");
    strcpy(p->pattern, pattern);
    p->pattern_is_regex = is_regex;
    return 0;
}

static int load_split(const err_ctx *c, const cJSON *j, tok_pretokenizer *p)
{
    const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(j, "pattern");
    if (!cJSON_IsObject(pattern))
        return io_fail(c, "pre_tokenizer: Split: pattern: %s",
                       pattern ? "not an object" : "missing");
    const cJSON *inner = pattern->child;
    if (!inner || inner->next || !cJSON_IsString(inner) ||
        (strcmp(inner->string, "String") != 0 && strcmp(inner->string, "Regex") != 0))
        return io_fail(c, "pre_tokenizer: Split: pattern: not one String or Regex string");
    int is_regex = strcmp(inner->string, "Regex") == 0;
    if (read_behavior(c, j, "Split", 1, &p->behavior) != 0 ||
        read_bool(c, j, "Split", "invert", 1, &p->invert) != 0 ||
        set_pattern(c, p, inner->valuestring, is_regex) != 0)
        return -1;
    int rc = is_regex
                 ? tok_regex_compile(c, inner->valuestring, strlen(inner->valuestring), &p->regex)
                 : tok_regex_compile_literal(c, inner->valuestring, strlen(inner->valuestring),
                                             &p->regex);
    if (rc == 0) return 0;
    /* the regex's own message, less its "<path>: ", before this one overwrites it */
    char why[256];
    const char *own = c->err ? strstr(c->err, ": ") : NULL;
    snprintf(why, sizeof why, "%s", own ? own + 2 : "");
    return io_fail(c, "pre_tokenizer: Split: pattern: %s", why);
}

static int load_sequence(const err_ctx *c, const cJSON *j, tok_pretokenizer *p)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers");
    if (!cJSON_IsArray(list))
        return io_fail(c, "pre_tokenizer: Sequence: pretokenizers: %s",
                       list ? "not an array" : "missing");
    size_t n = (size_t)cJSON_GetArraySize(list);
    p->children = calloc(n ? n : 1, sizeof *p->children);
    if (!p->children) return io_fail_oom(c, "pre_tokenizer: out of memory");
    for (const cJSON *item = list->child; item; item = item->next)
        if (tok_pretokenizer_load(c, item, &p->children[p->count++]) != 0) return -1;
    return 0;
}

static int load_fields(const err_ctx *c, const cJSON *j, tok_pretokenizer *p)
{
    switch (p->kind) {
    case PRETOK_METASPACE:
        return load_metaspace(c, j, p);
    case PRETOK_BYTE_LEVEL:
        p->use_regex = 1;
        if (read_bool(c, j, "ByteLevel", "add_prefix_space", 1, &p->add_prefix_space) != 0 ||
            read_bool(c, j, "ByteLevel", "trim_offsets", 1, &p->trim_offsets) != 0 ||
            read_bool(c, j, "ByteLevel", "use_regex", 0, &p->use_regex) != 0)
            return -1;
        return p->use_regex ? tok_regex_compile(c, gpt2_pattern, strlen(gpt2_pattern), &p->regex)
                            : 0;
    case PRETOK_WHITESPACE:
        return tok_regex_compile_rust(c, whitespace_pattern, strlen(whitespace_pattern), &p->regex);
    case PRETOK_PUNCTUATION:
        p->behavior = TOK_ISOLATED;
        return read_behavior(c, j, "Punctuation", 0, &p->behavior);
    case PRETOK_DIGITS:
        return read_bool(c, j, "Digits", "individual_digits", 1, &p->individual_digits);
    case PRETOK_SPLIT:
        return load_split(c, j, p);
    case PRETOK_SEQUENCE:
        return load_sequence(c, j, p);
    case PRETOK_WHITESPACE_SPLIT:
    case PRETOK_BERT:
        return 0;
    }
    return 0;
}

int tok_pretokenizer_load(const err_ctx *c, const cJSON *j, tok_pretokenizer **out)
{
    *out = NULL;
    if (!cJSON_IsObject(j)) return io_fail(c, "pre_tokenizer: not an object");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsString(type)) return io_fail(c, "pre_tokenizer: type: missing or not a string");
    const pretok_type *t = NULL;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (strcmp(type->valuestring, types[i].name) == 0) t = &types[i];
    if (!t) return io_fail(c, "pre_tokenizer: unsupported type \"%s\"", type->valuestring);
    if (check_keys(c, j, t) != 0) return -1;
    tok_pretokenizer *p = calloc(1, sizeof *p);
    if (!p) return io_fail_oom(c, "pre_tokenizer: out of memory");
    p->kind = t->kind;
    if (load_fields(c, j, p) != 0) {
        tok_pretokenizer_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void tok_pretokenizer_free(tok_pretokenizer *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->count; i++)
        tok_pretokenizer_free(p->children[i]);
    free(p->children);
    tok_regex_free(p->regex);
    free(p->pattern);
    free(p);
}

/* Appends to out[*used..size) what printf would, keeping it NUL-terminated and cut short. */
static void add(char *out, size_t size, size_t *used, const char *fmt, const char *a, const char *b)
{
    if (*used + 1 >= size) return;
    int n = snprintf(out + *used, size - *used, fmt, a, b);
    if (n > 0) *used = *used + (size_t)n < size ? *used + (size_t)n : size - 1;
}

static void describe(const tok_pretokenizer *p, char *out, size_t size, size_t *used)
{
    static const char *const schemes[] = {"always", "first", "never"};
    const char *name = "?";
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (types[i].kind == p->kind) name = types[i].name;
    switch (p->kind) {
    case PRETOK_METASPACE:
        add(out, size, used, "Metaspace(%s, %s", p->replacement_utf8, schemes[p->prepend]);
        add(out, size, used, "%s%s)", p->split ? ", split" : "", "");
        return;
    case PRETOK_BYTE_LEVEL:
        if (!p->add_prefix_space && !p->use_regex) {
            add(out, size, used, "ByteLevel%s%s", "", "");
            return;
        }
        add(out, size, used, "ByteLevel(%s%s)", p->add_prefix_space ? "prefix space" : "",
            p->use_regex ? (p->add_prefix_space ? ", regex" : "regex") : "");
        return;
    case PRETOK_PUNCTUATION:
        add(out, size, used, "Punctuation(%s)%s", behavior_names[p->behavior], "");
        return;
    case PRETOK_DIGITS:
        add(out, size, used, "Digits%s%s", p->individual_digits ? "(individual)" : "", "");
        return;
    case PRETOK_SPLIT:
        add(out, size, used, p->pattern_is_regex ? "Split(/%s/, %s" : "Split(\"%s\", %s",
            p->pattern, behavior_names[p->behavior]);
        add(out, size, used, "%s)%s", p->invert ? ", invert" : "", "");
        return;
    case PRETOK_SEQUENCE:
        add(out, size, used, "Sequence[%s%s", "", "");
        for (size_t i = 0; i < p->count; i++) {
            if (i) add(out, size, used, ", %s%s", "", "");
            describe(p->children[i], out, size, used);
        }
        add(out, size, used, "]%s%s", "", "");
        return;
    default:
        add(out, size, used, "%s%s", name, "");
        return;
    }
}

void tok_pretokenizer_describe(const tok_pretokenizer *p, char *out, size_t size)
{
    if (size == 0) return;
    out[0] = 0;
    size_t used = 0;
    if (p) describe(p, out, size, &used);
}
