/* A model folder's tokenizer files, read as transformers' AutoTokenizer reads them:
 *
 * - tokenizer.json (tokenizers' tokenizers/src/tokenizer/serialization.rs): version "1.0";
 *   model, normalizer, pre_tokenizer, post_processor and decoder through the components'
 *   loaders (null: none); added_tokens, each added as AddedVocabulary::add_tokens adds it;
 *   truncation and padding (utils/truncation.rs, utils/padding.rs), applied when tok_encode
 *   is asked for the file's rules.
 * - else vocab.txt, made into the pipeline transformers' BertTokenizer builds
 *   (tokenizer_vocab.c).
 * - a folder with only SentencePiece's model file is refused with the way to make its
 *   tokenizer.json.
 *
 * Either way tokenizer_config.json gives model_max_length and the special tokens, which
 * special_tokens_map.json overrides, as from_pretrained does. A special token in the
 * vocabulary is kept whole in text (transformers adds it with normalized false when given as a
 * string). BertTokenizer replaces a tokenizer.json's BertNormalizer settings by its own
 * arguments, so with tokenizer_class BertTokenizer(Fast) those three keys (and their
 * defaults) win over tokenizer.json too. */
#define _POSIX_C_SOURCE 200809L

#include "tokenizer_internal.h"

#include "json_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* model_max_length above this means "none": transformers writes VERY_LARGE_INTEGER (1e30). */
#define MAX_SANE_LENGTH (1 << 20)

static const char *const special_keys[TOK_SPECIALS] = {"unk_token", "sep_token", "pad_token",
                                                       "cls_token", "mask_token"};
/* The names a special token takes when the folder names none: BERT's, else SentencePiece's
 * and RoBERTa's (XLM-R's <s>, </s>, <pad>). */
static const char *const fallback_specials[TOK_SPECIALS] = {"<unk>", "</s>", "<pad>", "<s>",
                                                            "<mask>"};

/* ---- JSON helpers ---- */

static const cJSON *member(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static int absent(const cJSON *v)
{
    return !v || cJSON_IsNull(v);
}

/* A boolean member: `def` when absent. */
static int get_bool(const err_ctx *c, const cJSON *o, const char *where, const char *key, int def,
                    int *out)
{
    const cJSON *v = member(o, key);
    if (!v) return *out = def, 0;
    if (!cJSON_IsBool(v)) return io_fail(c, "%s%s: expected true or false", where, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* An integer in [lo, hi]. */
static int get_int(const err_ctx *c, const cJSON *v, const char *what, double lo, double hi,
                   double *out)
{
    /* the range first: converting a double outside long long's is undefined behaviour */
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= lo && d <= hi && d == floor(d)))
        return io_fail(c, "%s: expected an integer from %.0f to %.0f", what, lo, hi);
    *out = d;
    return 0;
}

static const char *type_of(const cJSON *o)
{
    const cJSON *v = member(o, "type");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int is_type(const cJSON *o, const char *type)
{
    const char *t = type_of(o);
    return t && strcmp(t, type) == 0;
}

static int read_json(const char *path, int optional, cJSON **root, char *err, size_t err_size)
{
    err_ctx c = {path, err, err_size};
    char *text;
    size_t size;
    *root = NULL;
    if (io_read_file(&c, IO_CAP_TOKENIZER, &text, &size) != 0)
        return optional && errno == ENOENT ? 0 : -1;
    size_t valid = tok_utf8_prefix(text, size); /* as serde_json reads only a str */
    if (valid != size) {
        free(text);
        return io_fail(&c, "not valid UTF-8 (at byte %zu)", valid);
    }
    *root = cJSON_ParseWithLength(text, size);
    free(text);
    if (!*root) return io_fail(&c, "not valid JSON");
    if (cJSON_IsObject(*root)) return 0;
    /* the callers free only what they were given back */
    cJSON_Delete(*root);
    *root = NULL;
    return io_fail(&c, "not a JSON object");
}

/* ---- added and special tokens ---- */

/* An AddedToken object, or a plain string for a special token (normalized false then, as
 * transformers' AddedToken(special=True) has it). */
static int parse_added(const err_ctx *c, const cJSON *v, const char *what, int special,
                       tok_added *a)
{
    memset(a, 0, sizeof *a);
    a->special = special;
    if (cJSON_IsString(v)) {
        a->content = v->valuestring;
        a->content_len = strlen(v->valuestring);
        return 0;
    }
    const cJSON *content = member(v, "content");
    if (!cJSON_IsObject(v) || !cJSON_IsString(content))
        return io_fail(c, "%s: expected a string or an object with a \"content\" string", what);
    a->content = content->valuestring;
    a->content_len = strlen(content->valuestring);
    char where[128];
    snprintf(where, sizeof where, "%s.", what);
    if (get_bool(c, v, where, "special", special, &a->special) != 0) return -1;
    return get_bool(c, v, where, "single_word", 0, &a->single_word) ||
                   get_bool(c, v, where, "lstrip", 0, &a->lstrip) ||
                   get_bool(c, v, where, "rstrip", 0, &a->rstrip) ||
                   get_bool(c, v, where, "normalized", !a->special, &a->normalized)
               ? -1
               : 0;
}

/* tokenizer.json's added_tokens: [{"id", "content", "single_word", "lstrip", "rstrip",
 * "normalized", "special"}, ...]. The ids are the vocabulary's, as tokenizers gives them (the
 * file's "id" only checked to be one). */
static int json_added_tokens(const err_ctx *c, tokenizer *t, const cJSON *list)
{
    if (absent(list)) return 0;
    if (!cJSON_IsArray(list)) return io_fail(c, "added_tokens: expected an array");
    const cJSON *v;
    int i = 0;
    cJSON_ArrayForEach(v, list)
    {
        char what[64];
        double id = 0;
        tok_added a;
        snprintf(what, sizeof what, "added_tokens[%d]", i++);
        if (!cJSON_IsObject(v)) return io_fail(c, "%s: expected an object", what);
        if (parse_added(c, v, what, 0, &a) != 0) return -1;
        if (get_int(c, member(v, "id"), what, 0, INT32_MAX - 1, &id) != 0) return -1;
        if (tok_add(c, t, &a) != 0) return -1;
    }
    return 0;
}

/* The config's value for `key`: special_tokens_map.json's first. */
const cJSON *tok_folder_get(const tok_folder *f, const char *key, const char **path)
{
    const cJSON *v = f->map ? member(f->map, key) : NULL;
    *path = f->map_path;
    if (v) return v;
    *path = f->config_path;
    return f->config ? member(f->config, key) : NULL;
}

/* Adds a special token given in the config, when it has an id; the names for tok_describe. */
static int config_special(tokenizer *t, const cJSON *v, const char *path, const char *key,
                          char **name, char *err, size_t err_size)
{
    err_ctx c = {path, err, err_size};
    tok_added a;
    if (cJSON_IsNull(v)) {
        if (name) free(*name), *name = NULL;
        return 0;
    }
    if (parse_added(&c, v, key, 1, &a) != 0) return -1;
    if (name && tok_set_string(name, a.content, a.content_len) != 0)
        return io_fail_oom(&c, "out of memory");
    if (tok_id(t, a.content) < 0 || tok_find_added(t, a.content, a.content_len)) return 0;
    return tok_add(&c, t, &a);
}

/* The folder's special tokens; a role it leaves unnamed whose BERT name has no id takes the
 * SentencePiece name when that has one. */
int tok_folder_specials(tokenizer *t, const tok_folder *f, char *err, size_t err_size)
{
    const char *path;
    for (int i = 0; i < TOK_SPECIALS; i++) {
        const cJSON *v = tok_folder_get(f, special_keys[i], &path);
        if (v && config_special(t, v, path, special_keys[i], &t->special[i], err, err_size))
            return -1;
        if (!v && t->special[i] && tok_id(t, t->special[i]) < 0 &&
            tok_id(t, fallback_specials[i]) >= 0 &&
            tok_set_string(&t->special[i], fallback_specials[i], strlen(fallback_specials[i])))
            return io_fail_oom(&(err_ctx){path, err, err_size}, "out of memory");
    }
    const cJSON *list = tok_folder_get(f, "additional_special_tokens", &path), *v;
    err_ctx c = {path, err, err_size};
    if (list && !cJSON_IsArray(list))
        return io_fail(&c, "additional_special_tokens: expected an array");
    cJSON_ArrayForEach(v, list)
    {
        if (config_special(t, v, path, "additional_special_tokens", NULL, err, err_size)) return -1;
    }
    return 0;
}

/* ---- the components ---- */

/* BertNormalizer's settings, for tok_describe (bert.rs: strip_accents unset follows lowercase). */
static void note_normalizer(tokenizer *t, const cJSON *n)
{
    if (is_type(n, "Sequence")) {
        const cJSON *list = member(n, "normalizers");
        if (cJSON_GetArraySize(list) == 1) n = cJSON_GetArrayItem(list, 0);
    }
    t->bert_normalizer = is_type(n, "BertNormalizer");
    if (!t->bert_normalizer) return;
    const cJSON *strip = member(n, "strip_accents");
    t->clean_text = !cJSON_IsFalse(member(n, "clean_text"));
    t->chinese_chars = !cJSON_IsFalse(member(n, "handle_chinese_chars"));
    t->lowercase = !cJSON_IsFalse(member(n, "lowercase"));
    t->strip_accents = absent(strip) ? t->lowercase : cJSON_IsTrue(strip);
}

/* WordPiece's prefix and word limit, and the model's unknown token, for tok_describe. */
static int note_model(const err_ctx *c, tokenizer *t, const cJSON *m)
{
    const cJSON *prefix = member(m, "continuing_subword_prefix"), *unk = member(m, "unk_token");
    const cJSON *max = member(m, "max_input_chars_per_word");
    if (cJSON_IsString(prefix) &&
        tok_set_string(&t->subword_prefix, prefix->valuestring, strlen(prefix->valuestring)))
        return io_fail_oom(c, "out of memory");
    t->max_word_chars = cJSON_IsNumber(max) && max->valuedouble >= 0 && max->valuedouble < 1e15
                            ? (size_t)max->valuedouble
                        : is_type(m, "WordPiece") ? 100
                                                  : 0;
    if (is_type(m, "Unigram")) { /* unk_id: an index into [[piece, score], ...] */
        const cJSON *id = member(m, "unk_id");
        const cJSON *piece = cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < 1e9
                                 ? cJSON_GetArrayItem(member(m, "vocab"), (int)id->valuedouble)
                                 : NULL;
        unk = cJSON_GetArrayItem(piece, 0);
    }
    if (cJSON_IsString(unk) &&
        tok_set_string(&t->special[TOK_UNK], unk->valuestring, strlen(unk->valuestring)))
        return io_fail_oom(c, "out of memory");
    return 0;
}

/* The five components of a tokenizer.json (or of the JSON made for vocab.txt). */
int tok_load_components(const err_ctx *c, tokenizer *t, const cJSON *root)
{
    const cJSON *m = member(root, "model"), *n = member(root, "normalizer"),
                *p = member(root, "pre_tokenizer"), *pp = member(root, "post_processor"),
                *d = member(root, "decoder");
    if (absent(m)) return io_fail(c, "model: missing");
    if (tok_model_load(c, m, &t->model) != 0 || note_model(c, t, m) != 0) return -1;
    if (!absent(n) && tok_normalizer_load(c, n, &t->normalizer) != 0) return -1;
    note_normalizer(t, n);
    if (!absent(p) && tok_pretokenizer_load(c, p, &t->pre_tokenizer) != 0) return -1;
    if (!absent(pp) && tok_post_load(c, pp, &t->post) != 0) return -1;
    return !absent(d) && tok_decoder_load(c, d, &t->decoder) != 0 ? -1 : 0;
}

/* ---- truncation and padding ---- */

static int get_direction(const err_ctx *c, const cJSON *o, const char *what, int *left)
{
    const cJSON *v = member(o, "direction");
    *left = 0;
    if (absent(v)) return 0;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "Right") == 0) return 0;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "Left") == 0) return *left = 1, 0;
    return io_fail(c, "%s.direction: expected \"Left\" or \"Right\"", what);
}

static int json_truncation(const err_ctx *c, tokenizer *t, const cJSON *o)
{
    if (absent(o)) return 0;
    if (!cJSON_IsObject(o)) return io_fail(c, "truncation: expected an object or null");
    static const char *const names[] = {"LongestFirst", "OnlyFirst", "OnlySecond"};
    tok_truncation *r = &t->truncation;
    const cJSON *s = member(o, "strategy");
    double max = 0, stride = 0;
    if (get_int(c, member(o, "max_length"), "truncation.max_length", 0, INT32_MAX, &max) ||
        get_int(c, member(o, "stride"), "truncation.stride", 0, INT32_MAX, &stride) ||
        get_direction(c, o, "truncation", &r->left))
        return -1;
    int k = 0;
    while (k < 3 && !(cJSON_IsString(s) && strcmp(s->valuestring, names[k]) == 0))
        k++;
    if (k == 3)
        return io_fail(c,
                       "truncation.strategy: \"%s\" is not LongestFirst, OnlyFirst or "
                       "OnlySecond",
                       cJSON_IsString(s) ? s->valuestring : "(none)");
    r->max_length = (size_t)max, r->stride = (size_t)stride, r->strategy = (tok_strategy)k;
    t->has_truncation = 1;
    return 0;
}

static int json_padding(const err_ctx *c, tokenizer *t, const cJSON *o)
{
    if (absent(o)) return 0;
    if (!cJSON_IsObject(o)) return io_fail(c, "padding: expected an object or null");
    tok_padding *p = &t->padding;
    const cJSON *s = member(o, "strategy"), *fixed = member(s, "Fixed"),
                *multiple = member(o, "pad_to_multiple_of");
    double x = 0;
    if (cJSON_IsObject(s) && fixed) {
        if (get_int(c, fixed, "padding.strategy.Fixed", 0, INT32_MAX, &x) != 0) return -1;
        p->fixed = (size_t)x;
    } else if (!(cJSON_IsString(s) && strcmp(s->valuestring, "BatchLongest") == 0)) {
        return io_fail(c, "padding.strategy: expected \"BatchLongest\" or {\"Fixed\": n}");
    }
    if (!absent(multiple)) {
        if (get_int(c, multiple, "padding.pad_to_multiple_of", 0, INT32_MAX, &x) != 0) return -1;
        p->multiple = (size_t)x;
    }
    if (get_int(c, member(o, "pad_id"), "padding.pad_id", 0, INT32_MAX, &x) != 0) return -1;
    p->pad_id = (int32_t)x;
    if (get_int(c, member(o, "pad_type_id"), "padding.pad_type_id", 0, INT32_MAX, &x) != 0)
        return -1;
    p->pad_type_id = (int32_t)x;
    if (get_direction(c, o, "padding", &p->left) != 0) return -1;
    t->has_padding = 1;
    return 0;
}

/* ---- the three ways in ---- */

/* BertTokenizer rebuilds its BertNormalizer from its do_lower_case, strip_accents and
 * tokenize_chinese_chars arguments (defaults true, None, true). AutoTokenizer makes one when
 * tokenizer_config.json names BertTokenizer(Fast), or names no class and config.json's
 * model_type is "bert" (its TOKENIZER_MAPPING). `n` is the normalizer's JSON, changed in place
 * when it is a BertNormalizer (or a Sequence of that one). */
static int bert_folder(const tok_folder *f)
{
    const cJSON *cls = f->config ? member(f->config, "tokenizer_class") : NULL;
    return cJSON_IsString(cls) ? strcmp(cls->valuestring, "BertTokenizer") == 0 ||
                                     strcmp(cls->valuestring, "BertTokenizerFast") == 0
                               : f->bert_model;
}

int tok_folder_normalizer(const tok_folder *f, cJSON *n, int always, char *err, size_t size)
{
    int bert = bert_folder(f);
    if (is_type(n, "Sequence") && cJSON_GetArraySize(member(n, "normalizers")) == 1)
        n = cJSON_GetArrayItem(member(n, "normalizers"), 0);
    if (!is_type(n, "BertNormalizer") || (!always && !bert)) return 0;
    err_ctx c = {f->config_path, err, size};
    const cJSON *o = f->config, *strip = o ? member(o, "strip_accents") : NULL;
    int lower = 1, chinese = 1, strip_accents = 0;
    if (get_bool(&c, o, "", "do_lower_case", 1, &lower) ||
        get_bool(&c, o, "", "tokenize_chinese_chars", 1, &chinese) ||
        (!absent(strip) && get_bool(&c, o, "", "strip_accents", 0, &strip_accents)))
        return -1;
    cJSON *values[3] = {cJSON_CreateBool(lower), cJSON_CreateBool(chinese),
                        absent(strip) ? cJSON_CreateNull() : cJSON_CreateBool(strip_accents)};
    const char *keys[3] = {"lowercase", "handle_chinese_chars", "strip_accents"};
    int failed = 0;
    for (int i = 0; i < 3; i++) {
        cJSON_DeleteItemFromObjectCaseSensitive(n, keys[i]);
        failed |= !values[i] || !cJSON_AddItemToObject(n, keys[i], values[i]);
        if (failed && values[i]) cJSON_Delete(values[i]), values[i] = NULL;
    }
    return failed ? io_fail_oom(&c, "out of memory") : 0;
}

/* The special tokens the configs name kept whole, and BertTokenizer's defaults when the
 * folder's tokenizer is BERT's (a tokenizer.json alone keeps only its own added tokens, as
 * Tokenizer.from_file does); then the added tokens' match texts. */
static int finish(const err_ctx *c, const tok_folder *f, tokenizer *t, char *err, size_t size)
{
    if (tok_folder_specials(t, f, err, size) != 0 ||
        (bert_folder(f) && tok_add_specials(c, t, 0) != 0))
        return -1;
    return tok_prepare_added(c, t);
}

static int load_json(const tok_folder *f, cJSON *root, tokenizer *t, char *err, size_t size)
{
    err_ctx c = {f->json_path, err, size};
    const cJSON *version = member(root, "version");
    t->source = "tokenizer.json";
    if (version && !(cJSON_IsString(version) && strcmp(version->valuestring, "1.0") == 0))
        return io_fail(&c, "version: expected \"1.0\"");
    cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (tok_folder_normalizer(f, n, 0, err, size) || tok_load_components(&c, t, root) ||
        json_truncation(&c, t, member(root, "truncation")) ||
        json_padding(&c, t, member(root, "padding")) ||
        json_added_tokens(&c, t, member(root, "added_tokens")))
        return -1;
    return finish(&c, f, t, err, size);
}

static int model_max_length(const tok_folder *f, tokenizer *t, char *err, size_t size)
{
    err_ctx c = {f->config_path, err, size};
    const cJSON *v = f->config ? member(f->config, "model_max_length") : NULL;
    double n = 0;
    if (absent(v)) return 0;
    if (cJSON_IsNumber(v) && v->valuedouble > MAX_SANE_LENGTH) return 0;
    if (get_int(&c, v, "model_max_length", 1, MAX_SANE_LENGTH, &n) != 0) return -1;
    t->model_max_length = (int)n;
    return 0;
}

/* Whether config.json says model_type "bert"; a missing or unreadable one says no (the model
 * loader reports its problems). */
static int is_bert_model(const char *path)
{
    char ignored[256];
    cJSON *root = NULL;
    if (read_json(path, 1, &root, ignored, sizeof ignored) != 0 || !root) return 0;
    const cJSON *type = member(root, "model_type");
    int bert = cJSON_IsString(type) && strcmp(type->valuestring, "bert") == 0;
    cJSON_Delete(root);
    return bert;
}

/* SentencePiece's model file, which this reader does not parse: its name, or NULL. */
static const char *sentencepiece_file(const char *dir)
{
    static const char *const names[] = {"sentencepiece.bpe.model", "spiece.model"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0) return names[i];
    }
    return NULL;
}

static int load_folder(tok_folder *f, tokenizer *t, char *err, size_t size)
{
    cJSON *root = NULL;
    f->bert_model = is_bert_model(f->model_path);
    if (read_json(f->config_path, 1, &f->config, err, size) ||
        read_json(f->map_path, 1, &f->map, err, size) ||
        read_json(f->json_path, 1, &root, err, size))
        return -1;
    const char *spm = root ? NULL : sentencepiece_file(f->dir);
    if (spm) {
        err_ctx c = {f->json_path, err, size};
        return io_fail(&c,
                       "missing; the folder has SentencePiece's %s, which is read only as "
                       "tokenizer.json: make it with transformers, python -c \"from transformers "
                       "import AutoTokenizer as A; A.from_pretrained('%s').save_pretrained('%s')\"",
                       spm, f->dir, f->dir);
    }
    int rc = root ? load_json(f, root, t, err, size) : tok_load_vocab(f, t, err, size);
    cJSON_Delete(root);
    return rc || model_max_length(f, t, err, size) ? -1 : 0;
}

int tok_load_dir(const char *dir, tokenizer **out, char *err, size_t err_size)
{
    err_ctx c = {dir, err, err_size};
    if (!out) return io_fail(&c, "no output given");
    *out = NULL;
    if (!dir) return io_fail(&c, "no folder given");
    tok_folder f = {.dir = dir};
    snprintf(f.json_path, sizeof f.json_path, "%s/tokenizer.json", dir);
    snprintf(f.vocab_path, sizeof f.vocab_path, "%s/vocab.txt", dir);
    snprintf(f.config_path, sizeof f.config_path, "%s/tokenizer_config.json", dir);
    snprintf(f.map_path, sizeof f.map_path, "%s/special_tokens_map.json", dir);
    snprintf(f.model_path, sizeof f.model_path, "%s/config.json", dir);
    tokenizer *t = tok_new();
    int rc = t ? load_folder(&f, t, err, err_size) : io_fail_oom(&c, "out of memory");
    cJSON_Delete(f.config);
    cJSON_Delete(f.map);
    if (rc != 0) {
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}
