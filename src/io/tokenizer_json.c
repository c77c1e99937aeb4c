/* A model folder's tokenizer files, read as transformers' AutoTokenizer reads them for BERT:
 *
 * - tokenizer.json (tokenizers' serialization): model WordPiece (vocab, unk_token,
 *   continuing_subword_prefix, max_input_chars_per_word), normalizer BertNormalizer,
 *   pre_tokenizer BertPreTokenizer, post_processor TemplateProcessing or BertProcessing, each
 *   also null or a Sequence of one; added_tokens. Its truncation and padding are ignored:
 *   transformers sets both on every call, and tok_encode's max_len is that call's.
 * - else vocab.txt, set up as transformers' converter does (BertTokenizerFast): BertNormalizer
 *   from do_lower_case (default true), strip_accents (null: follow lowercase) and
 *   tokenize_chinese_chars (default true) of tokenizer_config.json, BERT's templates.
 *
 * Either way tokenizer_config.json gives model_max_length and the special tokens, which
 * special_tokens_map.json overrides, as from_pretrained does. A special token in the
 * vocabulary is kept whole in text (transformers adds it with normalized false when given as a
 * string). BertTokenizerFast replaces a tokenizer.json's BertNormalizer settings by its own
 * arguments, so with tokenizer_class BertTokenizer(Fast) those three keys (and their defaults)
 * win over tokenizer.json too. */
#include "tokenizer_internal.h"

#include "json_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* model_max_length above this means "none": transformers writes VERY_LARGE_INTEGER (1e30). */
#define MAX_SANE_LENGTH (1 << 20)

typedef struct folder {
    char json_path[4096], vocab_path[4096], config_path[4096], map_path[4096];
    char model_path[4096]; /* config.json */
    cJSON *config, *map;   /* NULL when the file is absent */
    int bert_model;        /* config.json says model_type "bert" */
} folder;

static const char *const special_keys[TOK_SPECIALS] = {"unk_token", "sep_token", "pad_token",
                                                       "cls_token", "mask_token"};

/* ---- JSON helpers ---- */

static const cJSON *member(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
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
 * "normalized", "special"}, ...]. A content given twice keeps its first entry. */
static int json_added_tokens(const err_ctx *c, tokenizer *t, const cJSON *list)
{
    if (!list || cJSON_IsNull(list)) return 0;
    if (!cJSON_IsArray(list)) return io_fail(c, "added_tokens: expected an array");
    const cJSON *v;
    int i = 0;
    cJSON_ArrayForEach(v, list)
    {
        char what[64];
        double id = 0;
        tok_added a;
        snprintf(what, sizeof what, "added_tokens[%d]", i++);
        if (parse_added(c, v, what, 0, &a) != 0) return -1;
        if (!cJSON_IsObject(v)) return io_fail(c, "%s: expected an object", what);
        if (get_int(c, member(v, "id"), what, 0, INT32_MAX - 1, &id) != 0) return -1;
        a.id = (int32_t)id;
        if (!tok_find_added(t, a.content, a.content_len) && tok_add(t, &a) != 0)
            return io_fail_oom(c, "out of memory");
    }
    return 0;
}

/* The config's value for `key`: special_tokens_map.json's first. */
static const cJSON *config_get(const folder *f, const char *key, const char **path)
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
    a.id = tok_id(t, a.content);
    if (a.id < 0 || tok_find_added(t, a.content, a.content_len)) return 0;
    return tok_add(t, &a) != 0 ? io_fail_oom(&c, "out of memory") : 0;
}

static int config_specials(tokenizer *t, const folder *f, char *err, size_t err_size)
{
    const char *path;
    for (int i = 0; i < TOK_SPECIALS; i++) {
        const cJSON *v = config_get(f, special_keys[i], &path);
        if (v && config_special(t, v, path, special_keys[i], &t->special[i], err, err_size))
            return -1;
    }
    const cJSON *list = config_get(f, "additional_special_tokens", &path), *v;
    err_ctx c = {path, err, err_size};
    if (list && !cJSON_IsArray(list))
        return io_fail(&c, "additional_special_tokens: expected an array");
    cJSON_ArrayForEach(v, list)
    {
        if (config_special(t, v, path, "additional_special_tokens", NULL, err, err_size)) return -1;
    }
    return 0;
}

/* ---- tokenizer.json's pieces ---- */

static int json_vocab(const err_ctx *c, tokenizer *t, const cJSON *vocab)
{
    if (!cJSON_IsObject(vocab)) return io_fail(c, "model.vocab: expected an object");
    size_t entries = 0, bytes_needed = 0;
    double top = -1, id = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, vocab)
    {
        if (get_int(c, v, "model.vocab", 0, INT32_MAX / 2, &id) != 0) return -1;
        top = id > top ? id : top;
        entries++;
        bytes_needed += strlen(v->string) + 1;
    }
    /* ids far beyond the token count would only size a table of holes */
    if (top + 1 > 2.0 * (double)entries + 1024)
        return io_fail(c, "model.vocab: ids up to %.0f for %zu tokens", top, entries);
    if (tok_vocab_alloc(c, t, (int32_t)(top + 1), entries) != 0) return -1;
    char *p = t->text = malloc(bytes_needed ? bytes_needed : 1);
    if (!p) return io_fail_oom(c, "out of memory for the vocabulary");
    cJSON_ArrayForEach(v, vocab)
    {
        int32_t i = (int32_t)v->valuedouble;
        if (t->tokens[i]) return io_fail(c, "model.vocab: id %d given twice", (int)i);
        t->lens[i] = strlen(v->string);
        t->tokens[i] = memcpy(p, v->string, t->lens[i] + 1);
        p += t->lens[i] + 1;
        tok_vocab_insert(t, i);
    }
    return 0;
}

static int json_model(const err_ctx *c, tokenizer *t, const cJSON *m)
{
    const char *type = type_of(m);
    if (!cJSON_IsObject(m)) return io_fail(c, "model: expected an object");
    if (!type || strcmp(type, "WordPiece") != 0)
        return io_fail(c, "model type \"%s\" is not supported (WordPiece only)",
                       type ? type : "(none)");
    const cJSON *unk = member(m, "unk_token"), *prefix = member(m, "continuing_subword_prefix"),
                *max = member(m, "max_input_chars_per_word");
    if (json_vocab(c, t, member(m, "vocab")) != 0) return -1;
    if (unk && !cJSON_IsString(unk)) return io_fail(c, "model.unk_token: expected a string");
    if (prefix && !cJSON_IsString(prefix))
        return io_fail(c, "model.continuing_subword_prefix: expected a string");
    double chars = 100;
    if (max && get_int(c, max, "model.max_input_chars_per_word", 0, 1e15, &chars) != 0) return -1;
    t->max_word_chars = (size_t)chars;
    const char *unk_name = unk ? unk->valuestring : "[UNK]";
    t->unk = tok_lookup(t, 0, unk_name, strlen(unk_name));
    if (t->unk < 0) return io_fail(c, "model.unk_token \"%s\" is not in model.vocab", unk_name);
    if (tok_set_string(&t->special[TOK_UNK], unk_name, strlen(unk_name)) ||
        (prefix && tok_set_string(&t->prefix, prefix->valuestring, strlen(prefix->valuestring))))
        return io_fail_oom(c, "out of memory");
    t->prefix_len = strlen(t->prefix);
    return 0;
}

/* A "Sequence" of `key`: its only element, NULL when empty (as null), or an error. */
static int sequence_of_one(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                           const cJSON **only)
{
    const cJSON *list = member(o, key);
    int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (n < 0) return io_fail(c, "%s.%s: expected an array", what, key);
    if (n > 1) return io_fail(c, "%s: a Sequence of %d is not supported (one at most)", what, n);
    *only = n ? cJSON_GetArrayItem(list, 0) : NULL;
    return 0;
}

static int json_normalizer(const err_ctx *c, tokenizer *t, const cJSON *n)
{
    const char *type = type_of(n);
    t->normalize = n && !cJSON_IsNull(n);
    if (!t->normalize) return 0;
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *only = NULL;
        if (sequence_of_one(c, n, "normalizer", "normalizers", &only) != 0) return -1;
        return json_normalizer(c, t, only);
    }
    if (!type || strcmp(type, "BertNormalizer") != 0)
        return io_fail(c, "normalizer type \"%s\" is not supported (BertNormalizer only)",
                       type ? type : "(none)");
    const cJSON *strip = member(n, "strip_accents");
    if (get_bool(c, n, "normalizer.", "clean_text", 1, &t->clean) ||
        get_bool(c, n, "normalizer.", "handle_chinese_chars", 1, &t->chinese) ||
        get_bool(c, n, "normalizer.", "lowercase", 1, &t->lower))
        return -1;
    /* bert.rs: strip_accents.unwrap_or(lowercase) */
    if (!strip || cJSON_IsNull(strip)) return t->strip = t->lower, 0;
    return get_bool(c, n, "normalizer.", "strip_accents", 0, &t->strip);
}

static int json_pre_tokenizer(const err_ctx *c, tokenizer *t, const cJSON *p)
{
    const char *type = type_of(p);
    t->pre_split = p && !cJSON_IsNull(p);
    if (!t->pre_split) return 0;
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *only = NULL;
        if (sequence_of_one(c, p, "pre_tokenizer", "pretokenizers", &only) != 0) return -1;
        return json_pre_tokenizer(c, t, only);
    }
    if (!type || strcmp(type, "BertPreTokenizer") != 0)
        return io_fail(c, "pre_tokenizer type \"%s\" is not supported (BertPreTokenizer only)",
                       type ? type : "(none)");
    return 0;
}

/* One template piece: {"Sequence": {"id": "A", "type_id": 0}} or {"SpecialToken": {"id":
 * "[CLS]", "type_id": 0}}, whose ids come from special_tokens. */
static int json_piece(const err_ctx *c, tokenizer *t, const cJSON *v, const cJSON *specials,
                      const char *what, tok_piece *p)
{
    const cJSON *seq = member(v, "Sequence"), *sp = member(v, "SpecialToken"), *o = seq ? seq : sp;
    const cJSON *id = member(o, "id"), *ids;
    double type_id = 0, x = 0;
    if (!o || !cJSON_IsString(id) || get_int(c, member(o, "type_id"), what, 0, INT32_MAX, &type_id))
        return io_fail(c, "%s: expected a Sequence or a SpecialToken with an id and a type_id",
                       what);
    p->type_id = (int32_t)type_id;
    if (seq) {
        p->seq = strcmp(id->valuestring, "A") == 0 ? 0 : strcmp(id->valuestring, "B") == 0 ? 1 : -1;
        if (p->seq < 0)
            return io_fail(c, "%s: sequence \"%s\" is neither A nor B", what, id->valuestring);
        return 0;
    }
    ids = member(member(specials, id->valuestring), "ids");
    if (!cJSON_IsArray(ids))
        return io_fail(c, "%s: special token \"%s\" has no ids in special_tokens", what,
                       id->valuestring);
    p->seq = -1;
    p->first = t->n_tpl_ids;
    p->count = (size_t)cJSON_GetArraySize(ids);
    int32_t *grown = realloc(t->tpl_ids, (t->n_tpl_ids + p->count + 1) * sizeof *grown);
    if (!grown) return io_fail_oom(c, "out of memory");
    t->tpl_ids = grown;
    cJSON_ArrayForEach(v, ids)
    {
        if (get_int(c, v, what, 0, INT32_MAX - 1, &x) != 0) return -1;
        t->tpl_ids[t->n_tpl_ids++] = (int32_t)x;
    }
    return 0;
}

static int json_template(const err_ctx *c, tokenizer *t, const cJSON *pp, const char *key,
                         tok_template *tp)
{
    char what[64];
    const cJSON *list = member(pp, key), *v;
    if (!cJSON_IsArray(list)) return io_fail(c, "post_processor.%s: expected an array", key);
    tp->pieces = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *tp->pieces);
    if (!tp->pieces) return io_fail_oom(c, "out of memory");
    cJSON_ArrayForEach(v, list)
    {
        tok_piece *p = &tp->pieces[tp->n];
        snprintf(what, sizeof what, "post_processor.%s[%zu]", key, tp->n++);
        if (json_piece(c, t, v, member(pp, "special_tokens"), what, p) != 0) return -1;
        if (p->seq == 1 && strcmp(key, "single") == 0)
            return io_fail(c, "%s: the single template cannot use sequence B", what);
        tp->added += (int)p->count;
    }
    return 0;
}

/* BertProcessing: {"sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}. */
static int json_bert_processing(const err_ctx *c, tokenizer *t, const cJSON *pp)
{
    double ids[2];
    const char *keys[2] = {"cls", "sep"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = member(pp, keys[i]);
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 ||
            !cJSON_IsString(cJSON_GetArrayItem(v, 0)))
            return io_fail(c, "post_processor.%s: expected [token, id]", keys[i]);
        if (get_int(c, cJSON_GetArrayItem(v, 1), "post_processor id", 0, INT32_MAX - 1, &ids[i]))
            return -1;
    }
    return tok_bert_template(t, (int32_t)ids[0], (int32_t)ids[1]) ? io_fail_oom(c, "out of memory")
                                                                  : 0;
}

static int json_post_processor(const err_ctx *c, tokenizer *t, const cJSON *pp)
{
    const char *type = type_of(pp);
    if (!pp || cJSON_IsNull(pp)) {
        /* tokenizer/mod.rs without a post-processor: the texts as they are, B with type 1 */
        const tok_piece p[] = {{0, 0, 0, 0}, {1, 1, 0, 0}};
        t->single.pieces = malloc(sizeof p);
        t->pair.pieces = malloc(sizeof p);
        if (!t->single.pieces || !t->pair.pieces) return io_fail_oom(c, "out of memory");
        memcpy(t->single.pieces, p, sizeof p);
        memcpy(t->pair.pieces, p, sizeof p);
        t->single.n = 1;
        t->pair.n = 2;
        return 0;
    }
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *only = NULL;
        if (sequence_of_one(c, pp, "post_processor", "processors", &only) != 0) return -1;
        return json_post_processor(c, t, only);
    }
    if (type && strcmp(type, "BertProcessing") == 0) return json_bert_processing(c, t, pp);
    if (!type || strcmp(type, "TemplateProcessing") != 0)
        return io_fail(c,
                       "post_processor type \"%s\" is not supported (TemplateProcessing or "
                       "BertProcessing only)",
                       type ? type : "(none)");
    if (json_template(c, t, pp, "single", &t->single) != 0) return -1;
    return json_template(c, t, pp, "pair", &t->pair);
}

/* ---- the two ways in ---- */

/* BertTokenizerFast.__init__ rebuilds a BertNormalizer whose lowercase, strip_accents or
 * handle_chinese_chars differ from its own do_lower_case, strip_accents and
 * tokenize_chinese_chars arguments (defaults true, None, true). AutoTokenizer makes one when
 * tokenizer_config.json names BertTokenizer(Fast), or names no class and config.json's
 * model_type is "bert" (its TOKENIZER_MAPPING). */
static int config_normalizer(const folder *f, tokenizer *t, int always, char *err, size_t size)
{
    const cJSON *cls = f->config ? member(f->config, "tokenizer_class") : NULL;
    int bert = cJSON_IsString(cls) ? strcmp(cls->valuestring, "BertTokenizer") == 0 ||
                                         strcmp(cls->valuestring, "BertTokenizerFast") == 0
                                   : f->bert_model;
    if (!t->normalize || (!always && !bert)) return 0;
    err_ctx c = {f->config_path, err, size};
    const cJSON *o = f->config, *strip = o ? member(o, "strip_accents") : NULL;
    if (get_bool(&c, o, "", "do_lower_case", 1, &t->lower) ||
        get_bool(&c, o, "", "tokenize_chinese_chars", 1, &t->chinese))
        return -1;
    if (!strip || cJSON_IsNull(strip)) return t->strip = t->lower, 0;
    return get_bool(&c, o, "", "strip_accents", 0, &t->strip);
}

static int load_json(const folder *f, const cJSON *root, tokenizer *t, char *err, size_t size)
{
    err_ctx c = {f->json_path, err, size};
    t->source = "tokenizer.json";
    if (json_model(&c, t, member(root, "model")) ||
        json_normalizer(&c, t, member(root, "normalizer")) ||
        json_pre_tokenizer(&c, t, member(root, "pre_tokenizer")) ||
        json_post_processor(&c, t, member(root, "post_processor")) ||
        json_added_tokens(&c, t, member(root, "added_tokens")) ||
        config_specials(t, f, err, size) || config_normalizer(f, t, 0, err, size) ||
        tok_add_specials(&c, t, 0))
        return -1;
    if (tok_pad_id(t) < 0)
        return io_fail(&c, "the padding token %s has no id",
                       t->special[TOK_PAD] ? t->special[TOK_PAD] : "(unset)");
    return tok_prepare_added(&c, t);
}

static int load_vocab(const folder *f, tokenizer *t, char *err, size_t size)
{
    err_ctx c = {f->vocab_path, err, size};
    char *text;
    size_t n;
    if (config_normalizer(f, t, 1, err, size) != 0 || io_read_file(&c, IO_CAP_VOCAB, &text, &n))
        return -1;
    if (tok_vocab_lines(&c, t, text, n) != 0 || config_specials(t, f, err, size) != 0) return -1;
    return tok_vocab_specials(&c, t);
}

static int model_max_length(const folder *f, tokenizer *t, char *err, size_t size)
{
    err_ctx c = {f->config_path, err, size};
    const cJSON *v = f->config ? member(f->config, "model_max_length") : NULL;
    double n = 0;
    if (!v || cJSON_IsNull(v)) return 0;
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

static int load_folder(folder *f, tokenizer *t, char *err, size_t size)
{
    cJSON *root = NULL;
    f->bert_model = is_bert_model(f->model_path);
    if (read_json(f->config_path, 1, &f->config, err, size) ||
        read_json(f->map_path, 1, &f->map, err, size) ||
        read_json(f->json_path, 1, &root, err, size))
        return -1;
    int rc = root ? load_json(f, root, t, err, size) : load_vocab(f, t, err, size);
    cJSON_Delete(root);
    return rc || model_max_length(f, t, err, size) ? -1 : 0;
}

int tok_load_dir(const char *dir, tokenizer **out, char *err, size_t err_size)
{
    err_ctx c = {dir, err, err_size};
    if (!out) return io_fail(&c, "no output given");
    *out = NULL;
    if (!dir) return io_fail(&c, "no folder given");
    folder f = {0};
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
