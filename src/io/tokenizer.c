/* The tokenizer as tokenizers' Tokenizer holds it: the components (tok_pipeline.h), the added
 * vocabulary and the calls on a loaded tokenizer; see tokenizer.h. The added vocabulary
 * follows tokenizers' tokenizers/src/tokenizer/added_vocabulary.rs (add_tokens, token_to_id,
 * simple_id_to_token), decoding tokenizers/src/tokenizer/mod.rs (Tokenizer::decode). The
 * encode path is in tokenizer_text.c, the model folder in tokenizer_json.c. */
#include "tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static const char *const default_specials[TOK_SPECIALS] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]",
                                                           "[MASK]"};

int tok_set_string(char **field, const char *s, size_t n)
{
    char *v = malloc(n + 1);
    if (!v) return -1;
    if (n) memcpy(v, s, n);
    v[n] = '\0';
    free(*field);
    *field = v;
    return 0;
}

tokenizer *tok_new(void)
{
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->source = "vocab.txt";
    int failed = 0;
    for (int i = 0; i < TOK_SPECIALS; i++)
        failed |=
            tok_set_string(&t->special[i], default_specials[i], strlen(default_specials[i])) != 0;
    if (failed) {
        tok_free(t);
        return NULL;
    }
    return t;
}

void tok_free(tokenizer *t)
{
    if (!t) return;
    tok_model_free(t->model);
    tok_normalizer_free(t->normalizer);
    tok_pretokenizer_free(t->pre_tokenizer);
    tok_post_free(t->post);
    tok_decoder_free(t->decoder);
    for (size_t i = 0; i < t->n_added; i++) {
        free(t->added[i].content);
        free(t->added[i].match);
    }
    free(t->added);
    free(t->subword_prefix);
    for (int i = 0; i < TOK_SPECIALS; i++)
        free(t->special[i]);
    free(t);
}

/* ---- growable byte strings ---- */

static int bytes_reserve(bytes *b, size_t more)
{
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + more)
        cap *= 2;
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

/* ---- the added vocabulary ---- */

const tok_added *tok_find_added(const tokenizer *t, const char *s, size_t n)
{
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].content_len == n && memcmp(t->added[i].content, s, n) == 0)
            return &t->added[i];
    return NULL;
}

static const tok_added *added_by_id(const tokenizer *t, int32_t id)
{
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) return &t->added[i];
    return NULL;
}

/* add_tokens' next id: past the largest added id when that is at or past the model's size,
 * else the model's size. */
static int32_t next_added_id(const tokenizer *t)
{
    int32_t size = tok_model_size(t->model), top = -1;
    for (size_t i = 0; i < t->n_added; i++)
        top = t->added[i].id > top ? t->added[i].id : top;
    if (top < 0) return size;
    return top >= size || size == 0 ? top + 1 : size;
}

int tok_add(const err_ctx *c, tokenizer *t, const tok_added *a)
{
    if (a->content_len == 0) return 0;
    tok_added *same = (tok_added *)tok_find_added(t, a->content, a->content_len);
    if (same) { /* the same content again: its id kept, the later flags taken */
        int32_t id = same->id;
        char *content = same->content, *match = same->match;
        *same = *a;
        same->id = id, same->content = content, same->match = match;
        return 0;
    }
    int32_t id = tok_model_id(t->model, a->content, a->content_len);
    if (id < 0) id = next_added_id(t);
    tok_added *v = realloc(t->added, (t->n_added + 1) * sizeof *v);
    if (!v) return io_fail_oom(c, "out of memory for %zu added tokens", t->n_added + 1);
    t->added = v;
    tok_added *d = &v[t->n_added];
    *d = *a;
    d->id = id;
    d->content = d->match = NULL;
    if (tok_set_string(&d->content, a->content, a->content_len) != 0)
        return io_fail_oom(c, "out of memory for an added token");
    t->n_added++;
    return 0;
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
        /* transformers adds a special token given as a string with normalized false */
        tok_added a = {.content = t->special[i], .content_len = len, .special = 1};
        if (tok_add(c, t, &a) != 0) return -1;
    }
    return 0;
}

/* The normalizer's output for one added token's content. */
static int normalized_form(const err_ctx *c, const tokenizer *t, tok_added *a)
{
    tok_norm n;
    if (tok_norm_init(c, &n, a->content, a->content_len, 0) != 0) return -1;
    int rc = tok_normalizer_run(c, t->normalizer, &n);
    if (rc == 0 && tok_set_string(&a->match, n.s, n.n) != 0)
        rc = io_fail_oom(c, "out of memory for an added token");
    a->match_len = n.n;
    tok_norm_free(&n);
    return rc;
}

static void describe(tokenizer *t)
{
    tok_model_describe(t->model, t->desc[0], TOK_DESC_SIZE);
    snprintf(t->desc[1], TOK_DESC_SIZE, "none");
    snprintf(t->desc[2], TOK_DESC_SIZE, "none");
    snprintf(t->desc[3], TOK_DESC_SIZE, "none");
    snprintf(t->desc[4], TOK_DESC_SIZE, "none");
    if (t->normalizer) tok_normalizer_describe(t->normalizer, t->desc[1], TOK_DESC_SIZE);
    if (t->pre_tokenizer) tok_pretokenizer_describe(t->pre_tokenizer, t->desc[2], TOK_DESC_SIZE);
    if (t->post) tok_post_describe(t->post, t->desc[3], TOK_DESC_SIZE);
    if (t->decoder) tok_decoder_describe(t->decoder, t->desc[4], TOK_DESC_SIZE);
}

int tok_prepare_added(const err_ctx *c, tokenizer *t)
{
    memset(t->first_bytes, 0, sizeof t->first_bytes);
    for (size_t i = 0; i < t->n_added; i++) {
        tok_added *a = &t->added[i];
        if (tok_utf8_prefix(a->content, a->content_len) != a->content_len)
            return io_fail(c, "added token %d is not valid UTF-8", (int)a->id);
        if (a->normalized && t->normalizer) {
            if (normalized_form(c, t, a) != 0) return -1;
        } else {
            if (tok_set_string(&a->match, a->content, a->content_len) != 0)
                return io_fail_oom(c, "out of memory for an added token");
            a->match_len = a->content_len;
        }
        /* an empty pattern would match everywhere: it is never searched for */
        if (a->match_len == 0) continue;
        unsigned char b = (unsigned char)a->match[0];
        t->first_bytes[a->normalized][b >> 3] |= (unsigned char)(1u << (b & 7));
    }
    describe(t);
    return 0;
}

/* ---- lookups ---- */

/* tokenizers' token_to_id: the added tokens first, then the model's vocabulary. */
int32_t tok_id(const tokenizer *t, const char *token)
{
    if (!t || !token) return -1;
    size_t n = strlen(token);
    const tok_added *a = tok_find_added(t, token, n);
    return a ? a->id : tok_model_id(t->model, token, n);
}

const char *tok_token(const tokenizer *t, int32_t id)
{
    if (!t || id < 0) return NULL;
    const tok_added *a = added_by_id(t, id);
    size_t len;
    return a ? a->content : tok_model_token(t->model, id, &len);
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
    out->vocab_size = tok_model_size(t->model);
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].id >= out->vocab_size) out->vocab_size = t->added[i].id + 1;
    out->normalizer = t->normalizer != NULL;
    out->lowercase = t->bert_normalizer && t->lowercase;
    out->strip_accents = t->bert_normalizer && t->strip_accents;
    out->handle_chinese_chars = t->bert_normalizer && t->chinese_chars;
    out->clean_text = t->bert_normalizer && t->clean_text;
    out->pre_tokenizer = t->pre_tokenizer != NULL;
    out->continuing_subword_prefix = t->subword_prefix ? t->subword_prefix : "";
    out->max_input_chars_per_word = t->max_word_chars;
    out->model_max_length = t->model_max_length;
    tok_special *s[TOK_SPECIALS] = {&out->unk, &out->sep, &out->pad, &out->cls, &out->mask};
    for (int i = 0; i < TOK_SPECIALS; i++) {
        s[i]->text = t->special[i];
        s[i]->id = special_id(t, i);
    }
    out->added_tokens = (int)t->n_added;
    out->added_single = t->post ? (int)tok_post_added(t->post, 0) : 0;
    out->added_pair = t->post ? (int)tok_post_added(t->post, 1) : 0;
    out->model_desc = t->desc[0];
    out->normalizer_desc = t->desc[1];
    out->pre_tokenizer_desc = t->desc[2];
    out->post_processor_desc = t->desc[3];
    out->decoder_desc = t->desc[4];
}

/* ---- decode ---- */

/* simple_id_to_token: an added token as it was searched for (its normalized form, so that
 * the decoder can undo the normalizer), else the model's. */
static const char *decode_token(const tokenizer *t, int32_t id, size_t *len)
{
    const tok_added *a = added_by_id(t, id);
    if (a) return *len = a->match_len, a->match;
    return tok_model_token(t->model, id, len);
}

static int is_special_text(const tokenizer *t, const char *s, size_t n)
{
    const tok_added *a = tok_find_added(t, s, n);
    return a && a->special;
}

static int join(const err_ctx *c, const tok_strs *s, const char *sep, char **text)
{
    size_t total = 1, sep_len = strlen(sep);
    for (size_t i = 0; i < s->n; i++)
        total += s->lens[i] + (i ? sep_len : 0);
    char *out = malloc(total), *p = out;
    if (!out) return io_fail_oom(c, "out of memory for a text of %zu bytes", total);
    for (size_t i = 0; i < s->n; i++) {
        if (i) memcpy(p, sep, sep_len), p += sep_len;
        memcpy(p, s->v[i], s->lens[i]);
        p += s->lens[i];
    }
    *p = 0;
    *text = out;
    return 0;
}

int tok_decode(const tokenizer *t, const int32_t *ids, size_t count, int skip_special, char **text,
               char *err, size_t err_size)
{
    err_ctx c = {"tok_decode", err, err_size};
    if (!text) return io_fail(&c, "no output given");
    *text = NULL;
    if (!t || (!ids && count)) return io_fail(&c, "no tokenizer or ids given");
    tok_strs tokens = {0};
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        size_t len = 0;
        const char *s = ids[i] >= 0 ? decode_token(t, ids[i], &len) : NULL;
        /* the special set holds contents, and tokenizers asks it with the token's text */
        if (!s)
            rc = io_fail(&c, "id %d is not in the vocabulary", (int)ids[i]);
        else if (!(skip_special && is_special_text(t, s, len)))
            rc = tok_strs_push(&c, &tokens, s, len);
    }
    if (rc == 0 && t->decoder) rc = tok_decoder_run(&c, t->decoder, &tokens);
    if (rc == 0) rc = join(&c, &tokens, t->decoder ? "" : " ", text);
    tok_strs_free(&tokens);
    return rc;
}
