/* The tokenizer's models (src/io/tok_model.c, tok_wordpiece.c, tok_bpe.c, tok_unigram.c) on
 * small vocabularies whose results follow from tokenizers' rules by hand: WordPiece's greedy
 * longest match, BPE's lowest rank first (leftmost among equals), Unigram's best path (the
 * first of equal paths kept), unknowns, byte fallback, affixes, the "type"-less guess, and the
 * refusals. tests/parity/test_tok_models.py compares them with tokenizers itself. */
#include "io/tok_pipeline.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>

typedef struct want {
    int32_t id;
    size_t start, end;
} want;

static tok_model *load(const char *json)
{
    char err[256] = "";
    err_ctx c = {"test", err, sizeof err};
    cJSON *j = cJSON_Parse(json);
    cr_assert(j, "bad test JSON: %s", json);
    tok_model *m = NULL;
    cr_assert_eq(tok_model_load(&c, j, &m), 0, "%s", err);
    cJSON_Delete(j);
    return m;
}

/* The model's load fails with a message holding `needle`. */
static void refused(const char *json, const char *needle)
{
    char err[256] = "";
    err_ctx c = {"test", err, sizeof err};
    cJSON *j = cJSON_Parse(json);
    cr_assert(j, "bad test JSON: %s", json);
    tok_model *m = (tok_model *)&c; /* poisoned: a refusal must clear it */
    cr_assert_eq(tok_model_load(&c, j, &m), -1, "%s was loaded", json);
    cr_assert_null(m);
    cr_assert(strstr(err, needle), "\"%s\" lacks \"%s\"", err, needle);
    cJSON_Delete(j);
}

/* The tokens of `word`, appended after a poisoned one that must stay. */
static void expect(const tok_model *m, const char *word, const want *w, size_t n)
{
    char err[256] = "";
    err_ctx c = {"test", err, sizeof err};
    tok_toks toks = {0};
    cr_assert_eq(tok_toks_push(&c, &toks, -77, 99, 99), 0);
    cr_assert_eq(tok_model_run(&c, m, word, strlen(word), &toks), 0, "%s: %s", word, err);
    cr_assert_eq(toks.n, n + 1, "%s: %zu tokens, not %zu", word, toks.n - 1, n);
    cr_assert_eq(toks.v[0].id, -77);
    for (size_t i = 0; i < n; i++) {
        const tok_tok *t = &toks.v[i + 1];
        cr_assert(t->id == w[i].id && t->start == w[i].start && t->end == w[i].end,
                  "%s: token %zu is %d [%zu, %zu), not %d [%zu, %zu)", word, i, (int)t->id,
                  t->start, t->end, (int)w[i].id, w[i].start, w[i].end);
    }
    free(toks.v);
}

static void run_fails(const tok_model *m, const char *word, const char *needle)
{
    char err[256] = "";
    err_ctx c = {"test", err, sizeof err};
    tok_toks toks = {0};
    cr_assert_eq(tok_model_run(&c, m, word, strlen(word), &toks), -1, "%s ran", word);
    cr_assert(strstr(err, needle), "\"%s\" lacks \"%s\"", err, needle);
    free(toks.v);
}

#define EXPECT(m, word, ...)                                                                       \
    do {                                                                                           \
        const want w_[] = {__VA_ARGS__};                                                           \
        expect(m, word, w_, sizeof w_ / sizeof w_[0]);                                             \
    } while (0)

/* ---- WordPiece ---- */

#define WP_VOCAB                                                                                   \
    "\"vocab\": {\"[UNK]\": 0, \"un\": 1, \"##aff\": 2, \"##able\": 3, \"a\": 4, \"##a\": 5,"      \
    " \"\xc3\xa9\": 6, \"##af\": 7}"

Test(tok_models, wordpiece_longest_match_from_the_left)
{
    tok_model *m = load(
        "{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
        "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 5, " WP_VOCAB "}");
    EXPECT(m, "unaff", {1, 0, 2}, {2, 2, 5});
    EXPECT(m,
           "\xc3\xa9"
           "a",
           {6, 0, 2}, {5, 2, 3});
    /* a part no piece matches makes the whole word one [UNK]; so does a sixth character */
    EXPECT(m, "unx", {0, 0, 3});
    EXPECT(m, "unaffable", {0, 0, 9});
    EXPECT(m, "aaaaa", {4, 0, 1}, {5, 1, 2}, {5, 2, 3}, {5, 3, 4}, {5, 4, 5});
    cr_assert_eq(tok_model_id(m, "##able", 6), 3);
    cr_assert_eq(tok_model_id(m, "able", 4), -1);
    size_t len = 0;
    cr_assert_str_eq(tok_model_token(m, 2, &len), "##aff");
    cr_assert_eq(len, 5);
    cr_assert_null(tok_model_token(m, 8, &len));
    cr_assert_eq(tok_model_size(m), 8);
    tok_model_free(m);
}

Test(tok_models, wordpiece_unk_token_missing_is_an_error_only_when_needed)
{
    tok_model *m = load("{\"unk_token\": \"<nope>\", \"continuing_subword_prefix\": \"##\", "
                        "\"max_input_chars_per_word\": 100, " WP_VOCAB "}");
    EXPECT(m, "un", {1, 0, 2});
    run_fails(m, "unx", "unk_token");
    tok_model_free(m);
}

/* ---- BPE ---- */

#define BPE_VOCAB                                                                                  \
    "\"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"bc\": 4, \"abc\": 5, \"<unk>\": 6,"    \
    " \"aa\": 7, \"<0x78>\": 8}"

Test(tok_models, bpe_lowest_rank_first)
{
    tok_model *m = load("{\"type\": \"BPE\", " BPE_VOCAB ", \"merges\": "
                        "[[\"b\", \"c\"], [\"a\", \"b\"], [\"ab\", \"c\"]]}");
    EXPECT(m, "abc", {0, 0, 1}, {4, 1, 3}); /* b c outranks a b, and a bc is no merge */
    EXPECT(m, "abab", {3, 0, 2}, {3, 2, 4});
    tok_model_free(m);
    m = load("{\"type\": \"BPE\", " BPE_VOCAB ", \"merges\": "
             "[\"a b\", \"b c\", \"ab c\", \"a a\"]}");
    EXPECT(m, "abc", {5, 0, 3});
    EXPECT(m, "aaa", {7, 0, 2}, {0, 2, 3}); /* equal ranks: the leftmost first */
    tok_model_free(m);
}

Test(tok_models, bpe_unknowns)
{
    const char *fused =
        "{\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true, " BPE_VOCAB
        ", \"merges\": []}";
    tok_model *m = load(fused);
    EXPECT(m, "ayyb", {0, 0, 1}, {6, 1, 3}, {1, 3, 4});
    tok_model_free(m);
    m = load("{\"type\": \"BPE\", \"unk_token\": \"<unk>\", " BPE_VOCAB ", \"merges\": []}");
    EXPECT(m, "ayyb", {0, 0, 1}, {6, 1, 2}, {6, 2, 3}, {1, 3, 4});
    tok_model_free(m);
    /* no unk_token: the character is dropped, and the offsets after it move up */
    m = load("{\"type\": \"BPE\", " BPE_VOCAB ", \"merges\": []}");
    EXPECT(m, "ayb", {0, 0, 1}, {1, 1, 2});
    tok_model_free(m);
    /* byte fallback: x has its byte's token; y has none and is unk */
    m = load("{\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"byte_fallback\": true, " BPE_VOCAB
             ", \"merges\": []}");
    EXPECT(m, "axy", {0, 0, 1}, {8, 1, 2}, {6, 2, 3});
    tok_model_free(m);
}

Test(tok_models, bpe_ignore_merges_and_affixes)
{
    tok_model *m = load("{\"type\": \"BPE\", \"ignore_merges\": true, " BPE_VOCAB
                        ", \"merges\": [[\"a\", \"b\"]]}");
    EXPECT(m, "abc", {5, 0, 3});
    EXPECT(m, "abb", {3, 0, 2}, {1, 2, 3});
    tok_model_free(m);
    m = load("{\"type\": \"BPE\", \"continuing_subword_prefix\": \"##\", \"end_of_word_suffix\":"
             " \"</w>\", \"vocab\": {\"a\": 0, \"##b</w>\": 1, \"ab</w>\": 2, \"##b\": 3}, "
             "\"merges\": [[\"a\", \"##b</w>\"]]}");
    EXPECT(m, "ab", {2, 0, 2});
    tok_model_free(m);
}

/* ---- Unigram ---- */

#define UNI_VOCAB                                                                                  \
    "\"vocab\": [[\"<unk>\", 0], [\"a\", -1], [\"b\", -1], [\"ab\", -2], [\"c\", -1], "            \
    "[\"bc\", -1.5], [\"<0x78>\", -5]]"

Test(tok_models, unigram_best_path)
{
    tok_model *m = load("{\"type\": \"Unigram\", \"unk_id\": 0, " UNI_VOCAB "}");
    /* a b and ab tie at -2: ab reached position 2 first and is kept */
    EXPECT(m, "ab", {3, 0, 2});
    /* ab c (-3) against a bc (-2.5) */
    EXPECT(m, "abc", {1, 0, 1}, {5, 1, 3});
    /* unknown characters next to each other are one <unk> */
    EXPECT(m, "ayzb", {1, 0, 1}, {0, 1, 3}, {2, 3, 4});
    cr_assert_eq(tok_model_size(m), 7);
    tok_model_free(m);
}

Test(tok_models, unigram_byte_fallback_and_no_unk_id)
{
    tok_model *m =
        load("{\"type\": \"Unigram\", \"unk_id\": 0, \"byte_fallback\": true, " UNI_VOCAB "}");
    EXPECT(m, "axa", {1, 0, 1}, {6, 1, 2}, {1, 2, 3});
    EXPECT(m, "xy", {0, 0, 2}); /* y's byte has no token: the fused pair is <unk> */
    tok_model_free(m);
    m = load("{\"type\": \"Unigram\", \"unk_id\": null, " UNI_VOCAB "}");
    EXPECT(m, "ab", {3, 0, 2});
    run_fails(m, "ay", "unk_id");
    tok_model_free(m);
}

/* ---- which model, and what is refused ---- */

Test(tok_models, type_guessed_as_tokenizers_does)
{
    char about[256];
    tok_model *m = load("{" BPE_VOCAB ", \"merges\": []}");
    tok_model_describe(m, about, sizeof about);
    cr_assert(strncmp(about, "BPE(", 4) == 0, "%s", about);
    tok_model_free(m);
    m = load("{" UNI_VOCAB "}");
    tok_model_describe(m, about, sizeof about);
    cr_assert(strncmp(about, "Unigram(", 8) == 0, "%s", about);
    tok_model_free(m);
    m = load("{\"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"##\", "
             "\"max_input_chars_per_word\": 100, " WP_VOCAB "}");
    tok_model_describe(m, about, sizeof about);
    cr_assert(strncmp(about, "WordPiece(", 10) == 0, "%s", about);
    tok_model_free(m);
}

Test(tok_models, refusals_name_the_model_and_key)
{
    refused("{\"type\": \"WordLevel\", \"vocab\": {}, \"unk_token\": \"x\"}", "WordLevel");
    refused("{\"vocab\": {\"a\": 0}, \"unk_token\": \"a\"}", "WordLevel");
    refused("{\"type\": \"BPE\", \"dropout\": 0.1, " BPE_VOCAB ", \"merges\": []}", "dropout");
    refused("{\"type\": \"BPE\", \"extra\": 1, " BPE_VOCAB ", \"merges\": []}", "\"extra\"");
    refused("{\"type\": \"BPE\", " BPE_VOCAB ", \"merges\": [[\"a\", \"q\"]]}", "\"q\"");
    refused("{\"type\": \"BPE\", " BPE_VOCAB ", \"merges\": [\"a b c\"]}", "a b c");
    refused("{\"type\": \"BPE\", " BPE_VOCAB ", \"merges\": [[\"c\", \"a\"]]}", "\"ca\"");
    refused("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}", "id 0");
    refused("{\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}", "vocab");
    refused("{\"type\": \"Unigram\", \"unk_id\": 7, " UNI_VOCAB "}", "unk_id");
    refused("{\"type\": \"Unigram\", \"vocab\": [[\"a\"]]}", "vocab");
    refused("{\"type\": \"Unigram\", \"byte_fallback\": null, " UNI_VOCAB "}", "byte_fallback");
    refused("{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", " WP_VOCAB "}",
            "max_input_chars_per_word");
    refused("{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
            "\"max_input_chars_per_word\": 100, " WP_VOCAB "}",
            "continuing_subword_prefix");
    refused("[]", "model");
}
