/* WordPiece, as tokenizers' tokenizers/src/models/wordpiece/mod.rs (WordPiece::tokenize) and
 * serialization.rs read and run it: greedy longest match from the left, pieces after the first
 * looked up with continuing_subword_prefix before them; a word with a part no piece matches, or
 * longer than max_input_chars_per_word characters, is one unk_token over the whole word. */
#include "tok_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tok_wordpiece {
    tok_vocab vocab;
    char *unk, *prefix;
    size_t prefix_len;
    double max_chars;
    int32_t unk_id; /* -1: the unk_token is not in the vocabulary (an error when needed) */
};

static const char *const WORDPIECE_KEYS[] = {
    "type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab", NULL};

static int required_string(const err_ctx *c, const cJSON *j, const char *key, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsString(v)) return io_fail(c, "model: WordPiece: %s: expected a string", key);
    return tok_model_strdup(c, v->valuestring, out);
}

static int wordpiece_read(const err_ctx *c, const cJSON *j, tok_wordpiece *m)
{
    const char *what = "model: WordPiece";
    if (tok_model_known_keys(c, j, what, WORDPIECE_KEYS) != 0) return -1;
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(j, "max_input_chars_per_word");
    if (!max) return io_fail(c, "%s: max_input_chars_per_word: missing", what);
    if (tok_model_whole_number(c, max, what, "max_input_chars_per_word", 18446744073709551615.0,
                               &m->max_chars) != 0 ||
        required_string(c, j, "unk_token", &m->unk) != 0 ||
        required_string(c, j, "continuing_subword_prefix", &m->prefix) != 0 ||
        tok_vocab_from_object(c, cJSON_GetObjectItemCaseSensitive(j, "vocab"),
                              "model: WordPiece: vocab", &m->vocab) != 0)
        return -1;
    m->prefix_len = strlen(m->prefix);
    m->unk_id = tok_vocab_find(&m->vocab, m->unk, strlen(m->unk));
    return 0;
}

int tok_wordpiece_load(const err_ctx *c, const cJSON *j, tok_wordpiece **out)
{
    *out = NULL;
    tok_wordpiece *m = calloc(1, sizeof *m);
    if (!m) return io_fail_oom(c, "out of memory for the WordPiece model");
    if (wordpiece_read(c, j, m) != 0) {
        tok_wordpiece_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void tok_wordpiece_free(tok_wordpiece *m)
{
    if (!m) return;
    tok_vocab_free(&m->vocab);
    free(m->unk);
    free(m->prefix);
    free(m);
}

const tok_vocab *tok_wordpiece_vocab(const tok_wordpiece *m)
{
    return &m->vocab;
}

static size_t count_chars(const char *s, size_t n)
{
    size_t chars = 0;
    for (size_t i = 0; i < n; i++)
        chars += ((unsigned char)s[i] & 0xC0) != 0x80;
    return chars;
}

/* The end of the longest piece at s[start..n) in the vocabulary, or start when none is; its id
 * in *id. Pieces longer than the vocabulary's longest token are not tried. */
static size_t longest_piece(const tok_wordpiece *m, const char *s, size_t n, size_t start,
                            int32_t *id)
{
    size_t skip = start > 0 ? m->prefix_len : 0;
    size_t end = n;
    if (m->vocab.longest < skip) return start;
    if (end - start > m->vocab.longest - skip) {
        end = start + (m->vocab.longest - skip);
        while (end > start && ((unsigned char)s[end] & 0xC0) == 0x80)
            end--; /* back to a character boundary */
    }
    while (end > start) {
        *id = tok_vocab_find2(&m->vocab, m->prefix, skip, s + start, end - start);
        if (*id >= 0) return end;
        do
            end--;
        while (end > start && ((unsigned char)s[end] & 0xC0) == 0x80);
    }
    return start;
}

static int whole_word_unk(const err_ctx *c, const tok_wordpiece *m, size_t n, tok_toks *out,
                          size_t keep)
{
    out->n = keep; /* the pieces found so far give way to one unk_token */
    if (m->unk_id < 0)
        return io_fail(c, "model: WordPiece: unk_token \"%s\" is not in the vocabulary", m->unk);
    return tok_toks_push(c, out, m->unk_id, 0, n);
}

int tok_wordpiece_run(const err_ctx *c, const tok_wordpiece *m, const char *s, size_t n,
                      tok_toks *out)
{
    size_t keep = out->n;
    if ((double)count_chars(s, n) > m->max_chars) return whole_word_unk(c, m, n, out, keep);
    size_t start = 0;
    while (start < n) {
        int32_t id = -1;
        size_t end = longest_piece(m, s, n, start, &id);
        if (end == start) return whole_word_unk(c, m, n, out, keep);
        if (tok_toks_push(c, out, id, start, end) != 0) return -1;
        start = end;
    }
    return 0;
}

void tok_wordpiece_describe(const tok_wordpiece *m, char *out, size_t size)
{
    snprintf(out, size, "WordPiece(%d tokens, unk_token %s, continuing_subword_prefix %s)",
             (int)m->vocab.count, m->unk, m->prefix);
}
