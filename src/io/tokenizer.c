/* BERT's WordPiece tokenizer: the vocabulary, its hash table, vocab.txt, and the calls on a
 * loaded tokenizer; see tokenizer.h. The text path is in tokenizer_text.c, the model folder
 * (tokenizer.json, tokenizer_config.json) in tokenizer_json.c. */
#include "tokenizer_internal.h"

#include "json_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- growable arrays ---- */

static size_t grown(size_t cap, size_t need)
{
    size_t c = cap ? cap : 64;
    while (c < need)
        c *= 2;
    return c;
}

int ints_reserve(ints *a, size_t more)
{
    if (a->n + more <= a->cap) return 0;
    size_t cap = grown(a->cap, a->n + more);
    int32_t *v = realloc(a->v, cap * sizeof *v);
    if (!v) return -1;
    a->v = v;
    a->cap = cap;
    return 0;
}

int ints_push(ints *a, int32_t x)
{
    if (ints_reserve(a, 1) != 0) return -1;
    a->v[a->n++] = x;
    return 0;
}

static int bytes_reserve(bytes *b, size_t more)
{
    if (b->n + more <= b->cap) return 0;
    size_t cap = grown(b->cap, b->n + more);
    char *v = realloc(b->v, cap);
    if (!v) return -1;
    b->v = v;
    b->cap = cap;
    return 0;
}

int bytes_put(bytes *b, const char *s, size_t n)
{
    if (n == 0) return 0;
    if (bytes_reserve(b, n) != 0) return -1;
    memcpy(b->v + b->n, s, n);
    b->n += n;
    return 0;
}

int bytes_put_char(bytes *b, int32_t c)
{
    if (bytes_reserve(b, 4) != 0) return -1;
    b->n += (size_t)utf8proc_encode_char(c, (utf8proc_uint8_t *)b->v + b->n);
    return 0;
}

/* ---- the vocabulary's hash table ---- */

static uint32_t fnv1a(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

/* A piece inside a word is looked up as prefix + piece without building that string. */
static size_t piece_hash(const tokenizer *t, int inner, const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    if (inner) h = fnv1a(h, t->prefix, t->prefix_len);
    return fnv1a(h, s, n);
}

static int piece_is(const tokenizer *t, int32_t id, int inner, const char *s, size_t n)
{
    size_t skip = inner ? t->prefix_len : 0;
    const char *tok = t->tokens[id];
    return t->lens[id] == n + skip && (!inner || memcmp(tok, t->prefix, skip) == 0) &&
           memcmp(tok + skip, s, n) == 0;
}

/* The table is at most half full, so a probe always reaches an empty slot. */
static size_t probe(const tokenizer *t, int inner, const char *s, size_t n)
{
    size_t i = piece_hash(t, inner, s, n) & t->slot_mask;
    while (t->slots[i] >= 0 && !piece_is(t, t->slots[i], inner, s, n))
        i = (i + 1) & t->slot_mask;
    return i;
}

int32_t tok_lookup(const tokenizer *t, int inner, const char *s, size_t n)
{
    return t->slots[probe(t, inner, s, n)];
}

int tok_vocab_alloc(const err_ctx *c, tokenizer *t, int32_t count, size_t entries)
{
    size_t cap = 16;
    while (cap < 2 * entries)
        cap *= 2;
    size_t n = count > 0 ? (size_t)count : 1;
    t->tokens = calloc(n, sizeof *t->tokens);
    t->lens = calloc(n, sizeof *t->lens);
    t->slots = malloc(cap * sizeof *t->slots);
    if (!t->tokens || !t->lens || !t->slots)
        return io_fail_oom(c, "out of memory for %zu tokens", entries);
    memset(t->slots, 0xff, cap * sizeof *t->slots); /* all -1 */
    t->slot_mask = cap - 1;
    t->count = count;
    return 0;
}

void tok_vocab_insert(tokenizer *t, int32_t id)
{
    /* A token given twice keeps its later id, as HuggingFace's dict (and serde's map) do. */
    t->slots[probe(t, 0, t->tokens[id], t->lens[id])] = id;
    t->entries++;
}

/* ---- files ---- */

/* One token per line; the line ending (\n or \r\n) is not part of it. Empty lines are tokens
 * too, as in HuggingFace's load_vocab. */
int tok_vocab_lines(const err_ctx *c, tokenizer *t, char *text, size_t size)
{
    t->text = text;
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    if (size > 0 && text[size - 1] != '\n') lines++;
    if (lines > INT32_MAX / 2) return io_fail(c, "too many tokens (%zu lines)", lines);
    if (tok_vocab_alloc(c, t, (int32_t)lines, lines) != 0) return -1;
    size_t start = 0;
    int32_t id = 0;
    for (size_t i = 0; i <= size; i++) {
        int line_end = i < size ? text[i] == '\n' : i > start; /* or a last line without \n */
        if (!line_end) continue;
        size_t end = i > start && text[i - 1] == '\r' ? i - 1 : i;
        /* HF reads the file as UTF-8 and fails; such a token would never match */
        if (tok_utf8_prefix(text + start, end - start) != end - start)
            return io_fail(c, "line %d is not valid UTF-8", (int)id + 1);
        text[end] = '\0';
        t->tokens[id] = text + start;
        t->lens[id] = end - start;
        tok_vocab_insert(t, id++);
        start = i + 1;
    }
    return 0;
}

/* ---- the tokenizer ---- */

static const char *const default_specials[TOK_SPECIALS] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]",
                                                           "[MASK]"};

int tok_set_string(char **field, const char *s, size_t n)
{
    char *v = malloc(n + 1);
    if (!v) return -1;
    memcpy(v, s, n);
    v[n] = '\0';
    free(*field);
    *field = v;
    return 0;
}

tokenizer *tok_new(void)
{
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    /* BertTokenizer(Fast)'s defaults; strip_accents unset follows lowercase. */
    t->source = "vocab.txt";
    t->normalize = t->clean = t->chinese = t->strip = t->lower = 1;
    t->pre_split = 1;
    t->max_word_chars = 100;
    t->unk = -1;
    int failed = tok_set_string(&t->prefix, "##", 2) != 0;
    for (int i = 0; i < TOK_SPECIALS; i++)
        failed |=
            tok_set_string(&t->special[i], default_specials[i], strlen(default_specials[i])) != 0;
    t->prefix_len = 2;
    if (failed) {
        tok_free(t);
        return NULL;
    }
    return t;
}

void tok_free(tokenizer *t)
{
    if (!t) return;
    free(t->text);
    free(t->tokens);
    free(t->lens);
    free(t->slots);
    free(t->prefix);
    for (size_t i = 0; i < t->n_added; i++) {
        free(t->added[i].content);
        free(t->added[i].match);
    }
    free(t->added);
    free(t->tpl_ids);
    free(t->single.pieces);
    free(t->pair.pieces);
    for (int i = 0; i < TOK_SPECIALS; i++)
        free(t->special[i]);
    free(t);
}

int tok_add(tokenizer *t, const tok_added *a)
{
    tok_added *v = realloc(t->added, (t->n_added + 1) * sizeof *v);
    if (!v) return -1;
    t->added = v;
    tok_added *d = &v[t->n_added];
    *d = *a;
    d->content = d->match = NULL;
    if (tok_set_string(&d->content, a->content, a->content_len) != 0) return -1;
    t->n_added++;
    return 0;
}

const tok_added *tok_find_added(const tokenizer *t, const char *s, size_t n)
{
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].content_len == n && memcmp(t->added[i].content, s, n) == 0)
            return &t->added[i];
    return NULL;
}

static int set_template(tok_template *tp, const tok_piece *pieces, size_t n)
{
    tp->pieces = malloc(n * sizeof *pieces);
    if (!tp->pieces) return -1;
    memcpy(tp->pieces, pieces, n * sizeof *pieces);
    tp->n = n;
    tp->added = 0;
    for (size_t i = 0; i < n; i++)
        tp->added += (int)pieces[i].count;
    return 0;
}

/* HuggingFace's BERT templates: "[CLS] $A [SEP]" and "[CLS] $A [SEP] $B:1 [SEP]:1". */
int tok_bert_template(tokenizer *t, int32_t cls, int32_t sep)
{
    const tok_piece p[] = {{-1, 0, 0, 1}, {0, 0, 0, 0}, {-1, 0, 1, 1}, {1, 1, 0, 0}, {-1, 1, 1, 1}};
    t->tpl_ids = malloc(2 * sizeof *t->tpl_ids);
    if (!t->tpl_ids) return -1;
    t->tpl_ids[0] = cls;
    t->tpl_ids[1] = sep;
    t->n_tpl_ids = 2;
    return set_template(&t->single, p, 3) || set_template(&t->pair, p, 5) ? -1 : 0;
}

static int32_t special_id(const tokenizer *t, int which)
{
    const char *s = t->special[which];
    return s ? tok_id(t, s) : -1;
}

int tok_add_specials(const err_ctx *c, tokenizer *t, int require)
{
    for (int i = 0; i < TOK_SPECIALS; i++) {
        const char *name = t->special[i];
        size_t len = name ? strlen(name) : 0;
        int32_t id = name ? tok_id(t, name) : -1;
        if (id < 0 && require && i != TOK_MASK)
            return io_fail(c, "the vocabulary has no %s token", name ? name : "(unset)");
        if (id < 0 || tok_find_added(t, name, len)) continue;
        /* transformers adds a special token given as a string with normalized false. */
        tok_added a = {.content = t->special[i], .content_len = len, .id = id, .special = 1};
        if (tok_add(t, &a) != 0) return io_fail_oom(c, "out of memory");
    }
    return 0;
}

int tok_vocab_specials(const err_ctx *c, tokenizer *t)
{
    if (tok_add_specials(c, t, 1) != 0) return -1;
    t->unk = special_id(t, TOK_UNK);
    if (tok_bert_template(t, special_id(t, TOK_CLS), special_id(t, TOK_SEP)) != 0)
        return io_fail_oom(c, "out of memory");
    return tok_prepare_added(c, t);
}

int tok_load(const char *vocab_path, int do_lower_case, tokenizer **out, char *err, size_t err_size)
{
    err_ctx c = {vocab_path, err, err_size};
    if (!out) return io_fail(&c, "no output given");
    *out = NULL;
    if (!vocab_path) return io_fail(&c, "no path given");
    tokenizer *t = tok_new();
    if (!t) return io_fail_oom(&c, "out of memory");
    t->lower = t->strip = do_lower_case != 0;
    char *text;
    size_t size;
    if (io_read_file(&c, IO_CAP_VOCAB, &text, &size) != 0 ||
        tok_vocab_lines(&c, t, text, size) != 0 || tok_vocab_specials(&c, t) != 0) {
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int tok_load_config(const char *tokenizer_config_json_path, int *do_lower_case)
{
    err_ctx c = {tokenizer_config_json_path, NULL, 0}; /* no message: the result says it all */
    char *text;
    size_t size;
    if (!tokenizer_config_json_path || !do_lower_case) return -1;
    if (io_read_file(&c, IO_CAP_TOKENIZER, &text, &size) != 0) return errno == ENOENT ? 0 : -1;
    cJSON *root = cJSON_ParseWithLength(text, size);
    free(text);
    int rc = -1;
    if (cJSON_IsObject(root)) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "do_lower_case");
        rc = v ? (cJSON_IsBool(v) ? 1 : -1) : 0;
        if (rc == 1) *do_lower_case = cJSON_IsTrue(v) ? 1 : 0;
    }
    cJSON_Delete(root);
    return rc;
}

/* HuggingFace's token_to_id: the added tokens first, then the model's vocabulary. */
int32_t tok_id(const tokenizer *t, const char *token)
{
    if (!t || !token) return -1;
    size_t n = strlen(token);
    const tok_added *a = tok_find_added(t, token, n);
    return a ? a->id : tok_lookup(t, 0, token, n);
}

const char *tok_token(const tokenizer *t, int32_t id)
{
    if (!t || id < 0) return NULL;
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) return t->added[i].content;
    return id < t->count ? t->tokens[id] : NULL;
}

int32_t tok_pad_id(const tokenizer *t)
{
    return t ? special_id(t, TOK_PAD) : -1;
}

void tok_describe(const tokenizer *t, tok_info *out)
{
    memset(out, 0, sizeof *out);
    if (!t) return;
    out->source = t->source;
    out->vocab_size = t->count;
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].id >= out->vocab_size) out->vocab_size = t->added[i].id + 1;
    out->normalizer = t->normalize;
    out->lowercase = t->normalize && t->lower;
    out->strip_accents = t->normalize && t->strip;
    out->handle_chinese_chars = t->normalize && t->chinese;
    out->clean_text = t->normalize && t->clean;
    out->pre_tokenizer = t->pre_split;
    out->continuing_subword_prefix = t->prefix;
    out->max_input_chars_per_word = t->max_word_chars;
    out->model_max_length = t->model_max_length;
    tok_special *s[TOK_SPECIALS] = {&out->unk, &out->sep, &out->pad, &out->cls, &out->mask};
    for (int i = 0; i < TOK_SPECIALS; i++) {
        s[i]->text = t->special[i];
        s[i]->id = special_id(t, i);
    }
    out->added_tokens = (int)t->n_added;
    out->added_single = t->single.added;
    out->added_pair = t->pair.added;
}
