/* Reading a tokenizer.json "decoder" (tok_pipeline.h's tok_decoder_load), with the members and
 * defaults of tokenizers' serde definitions: tokenizers/src/decoders/mod.rs (the type tag),
 * decoders/bpe.rs, byte_fallback.rs, fuse.rs, sequence.rs, strip.rs, wordpiece.rs,
 * pre_tokenizers/metaspace.rs (its Deserialize: prepend_scheme "always" by default,
 * add_prefix_space false only with "never"), pre_tokenizers/byte_level.rs and
 * normalizers/replace.rs. CTC, a speech model's decoder, is refused by name. */
#include "tok_decoders_internal.h"
#include "tok_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load_metaspace(const err_ctx *c, const cJSON *j, tok_decoder *d)
{
    static const char *const known[] = {
        "type", "replacement", "add_prefix_space", "prepend_scheme", "split", "str_rep", NULL};
    const char *what = "decoder: Metaspace", *scheme = "always";
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "prepend_scheme");
    int add_prefix_space, split;
    if (tok_fields_known(c, j, what, known) != 0 ||
        tok_field_char(c, j, what, "replacement", &d->replacement) != 0 ||
        tok_field_bool(c, j, what, "add_prefix_space", 1, &add_prefix_space) != 0 ||
        tok_field_bool(c, j, what, "split", 1, &split) != 0)
        return -1;
    if (v && !cJSON_IsString(v)) return io_fail(c, "%s: prepend_scheme: expected a string", what);
    if (v) scheme = v->valuestring;
    if (strcmp(scheme, "always") != 0 && strcmp(scheme, "first") != 0 &&
        strcmp(scheme, "never") != 0)
        return io_fail(c, "%s: prepend_scheme: \"%s\" (expected first, never or always)", what,
                       scheme);
    d->prepend_never = strcmp(scheme, "never") == 0;
    if (!add_prefix_space && !d->prepend_never)
        return io_fail(c, "%s: add_prefix_space false with prepend_scheme \"%s\"", what, scheme);
    return 0;
}

static int load_byte_level(const err_ctx *c, const cJSON *j, tok_decoder *d)
{
    static const char *const known[] = {"type", "add_prefix_space", "trim_offsets", "use_regex",
                                        NULL};
    const char *what = "decoder: ByteLevel";
    int unused; /* the pre-tokenizer's and the post-processor's options, read as tokenizers does */
    (void)d;
    if (tok_fields_known(c, j, what, known) != 0 ||
        tok_field_bool(c, j, what, "add_prefix_space", -1, &unused) != 0 ||
        tok_field_bool(c, j, what, "trim_offsets", -1, &unused) != 0)
        return -1;
    return tok_field_bool(c, j, what, "use_regex", 1, &unused);
}

static int load_wordpiece(const err_ctx *c, const cJSON *j, tok_decoder *d)
{
    static const char *const known[] = {"type", "prefix", "cleanup", NULL};
    const char *what = "decoder: WordPiece";
    if (tok_fields_known(c, j, what, known) != 0 ||
        tok_field_copy(c, j, what, "prefix", &d->prefix, &d->prefix_len) != 0)
        return -1;
    return tok_field_bool(c, j, what, "cleanup", -1, &d->cleanup);
}

static int load_strip(const err_ctx *c, const cJSON *j, tok_decoder *d)
{
    static const char *const known[] = {"type", "content", "start", "stop", NULL};
    const char *what = "decoder: Strip";
    if (tok_fields_known(c, j, what, known) != 0 ||
        tok_field_char(c, j, what, "content", &d->content) != 0 ||
        tok_field_uint(c, cJSON_GetObjectItemCaseSensitive(j, "start"), "decoder: Strip: start",
                       UINT32_MAX, &d->start) != 0)
        return -1;
    return tok_field_uint(c, cJSON_GetObjectItemCaseSensitive(j, "stop"), "decoder: Strip: stop",
                          UINT32_MAX, &d->stop);
}

/* {"String": s} or {"Regex": r}. */
static int load_replace(const err_ctx *c, const cJSON *j, tok_decoder *d)
{
    static const char *const known[] = {"type", "pattern", "content", NULL};
    const char *what = "decoder: Replace";
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "pattern");
    if (tok_fields_known(c, j, what, known) != 0 ||
        tok_field_copy(c, j, what, "content", &d->content_str, &d->content_len) != 0)
        return -1;
    const cJSON *body = cJSON_IsObject(p) && p->child && !p->child->next ? p->child : NULL;
    int regex = body && strcmp(body->string, "Regex") == 0;
    if (!body || (!regex && strcmp(body->string, "String") != 0) || !cJSON_IsString(body))
        return io_fail(c, "%s: pattern: expected {\"String\": ...} or {\"Regex\": ...}", what);
    if (!regex) return tok_field_copy(c, p, what, "String", &d->pattern, &d->pattern_len);
    const char *s = body->valuestring;
    if (tok_regex_compile(c, s, strlen(s), &d->regex) != 0) return -1;
    return 0;
}

static int load_bpe(const err_ctx *c, const cJSON *j, tok_decoder *d)
{
    static const char *const known[] = {"type", "suffix", NULL};
    if (tok_fields_known(c, j, "decoder: BPEDecoder", known) != 0) return -1;
    return tok_field_copy(c, j, "decoder: BPEDecoder", "suffix", &d->suffix, &d->suffix_len);
}

/* ByteFallback and Fuse: no options. */
static int load_plain(const err_ctx *c, const cJSON *j, const char *type)
{
    static const char *const known[] = {"type", NULL};
    char what[48];
    snprintf(what, sizeof what, "decoder: %s", type);
    return tok_fields_known(c, j, what, known);
}

static int load_sequence(const err_ctx *c, const cJSON *j, tok_decoder *d)
{
    static const char *const known[] = {"type", "decoders", NULL};
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "decoders");
    if (tok_fields_known(c, j, "decoder: Sequence", known) != 0) return -1;
    if (!cJSON_IsArray(list)) return io_fail(c, "decoder: Sequence: decoders: expected a list");
    size_t n = (size_t)cJSON_GetArraySize(list);
    if (!(d->decoders = calloc(n ? n : 1, sizeof *d->decoders)))
        return io_fail_oom(c, "decoder: out of memory");
    for (const cJSON *v = list->child; v; v = v->next)
        if (tok_decoder_load(c, v, &d->decoders[d->n_decoders++]) != 0) return -1;
    return 0;
}

typedef struct dec_type {
    const char *name;
    dec_kind kind;
    int (*load)(const err_ctx *c, const cJSON *j, tok_decoder *d);
} dec_type;

static const dec_type types[] = {
    {"Metaspace", DEC_METASPACE, load_metaspace},
    {"ByteLevel", DEC_BYTE_LEVEL, load_byte_level},
    {"WordPiece", DEC_WORDPIECE, load_wordpiece},
    {"ByteFallback", DEC_BYTE_FALLBACK, NULL},
    {"Fuse", DEC_FUSE, NULL},
    {"Strip", DEC_STRIP, load_strip},
    {"Replace", DEC_REPLACE, load_replace},
    {"BPEDecoder", DEC_BPE, load_bpe},
    {"Sequence", DEC_SEQUENCE, load_sequence},
};

int tok_decoder_load(const err_ctx *c, const cJSON *j, tok_decoder **out)
{
    *out = NULL;
    const char *type = NULL;
    if (tok_field_type(c, j, "decoder", &type) != 0) return -1;
    size_t i = 0, count = sizeof types / sizeof types[0];
    while (i < count && strcmp(types[i].name, type) != 0)
        i++;
    if (i == count) return io_fail(c, "decoder: type \"%s\" is not supported", type);
    tok_decoder *d = calloc(1, sizeof *d);
    if (!d) return io_fail_oom(c, "decoder: out of memory");
    d->kind = types[i].kind;
    int rc = types[i].load ? types[i].load(c, j, d) : load_plain(c, j, types[i].name);
    if (rc != 0) {
        tok_decoder_free(d);
        return -1;
    }
    *out = d;
    return 0;
}

void tok_decoder_free(tok_decoder *d)
{
    if (!d) return;
    free(d->prefix);
    free(d->pattern);
    tok_regex_free(d->regex);
    free(d->content_str);
    free(d->suffix);
    for (size_t i = 0; i < d->n_decoders; i++)
        tok_decoder_free(d->decoders[i]);
    free(d->decoders);
    free(d);
}

void tok_decoder_describe(const tok_decoder *d, char *out, size_t size)
{
    if (!size) return;
    size_t i = 0, count = sizeof types / sizeof types[0];
    while (i < count && types[i].kind != d->kind)
        i++;
    snprintf(out, size, "%s%s", types[i].name, d->kind == DEC_SEQUENCE ? "[" : "");
    if (d->kind != DEC_SEQUENCE) return;
    size_t used = strlen(out);
    for (size_t k = 0; k < d->n_decoders && used + 1 < size; k++) {
        if (k) snprintf(out + used, size - used, ", ");
        used += strlen(out + used);
        tok_decoder_describe(d->decoders[k], out + used, size - used);
        used += strlen(out + used);
    }
    snprintf(out + used, size - used, "]");
}
