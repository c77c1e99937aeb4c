/* Tests for tok_load_dir (src/io/tokenizer_json.c): folders written here, each with a
 * tokenizer.json and the same vocabulary as vocab.txt. The two must encode hard texts alike,
 * and the expected ids of the special-token cases are worked out by hand from HuggingFace's
 * rules (added_vocabulary.rs: non-normalized tokens match the raw text, case-sensitively). */
#define _POSIX_C_SOURCE 200809L

#include "io/tokenizer.h"
#include "st_folder.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const vocab[] = {
    "[PAD]", "[UNK]", "[CLS]",  "[SEP]",  "[MASK]", "a",   "b",      "x",
    "y",     "[",     "]",      "mask",   "##a",    "caf", "##e",    "##\u00e9",
    "Caf",   "e",     "\u4e2d", "\u6587", "hello",  "!",   "\u00e9",
};
enum { PAD, UNK, CLS, SEP, MASK, A, B, X, Y, LB, RB, MASK_LOWER, HASH_A, CAF, HASH_E };
#define VOCAB_SIZE ((int)(sizeof vocab / sizeof vocab[0]))

static char dir_json[TEST_DIR_SIZE], dir_txt[TEST_DIR_SIZE], err[512];

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f, "%s", p);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

static void remove_file(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
}

/* tokenizer.json over this file's vocabulary. */
static void write_tokenizer_json(const char *dir, const char *model_type, const char *normalizer,
                                 const char *pre, const char *post)
{
    st_folder_write_tokenizer_json(dir, vocab, VOCAB_SIZE, model_type, normalizer, pre, post);
}

static const char normalizer_lower[] =
    "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
    "\"strip_accents\":null,\"lowercase\":true}";
static const char normalizer_cased[] =
    "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
    "\"strip_accents\":null,\"lowercase\":false}";

static void setup(void)
{
    test_dir_make(dir_json, "tokjson");
    test_dir_make(dir_txt, "tokjson");
    char text[1024] = "";
    for (int i = 0; i < VOCAB_SIZE; i++)
        strcat(strcat(text, vocab[i]), "\n");
    write_file(dir_txt, "vocab.txt", text);
    write_tokenizer_json(dir_json, "WordPiece", normalizer_lower, NULL, NULL);
}

static void teardown(void)
{
    test_dir_remove(dir_json);
    test_dir_remove(dir_txt);
}

TestSuite(tokenizer_json, .init = setup, .fini = teardown);

static tokenizer *load_dir(const char *dir)
{
    tokenizer *t = NULL;
    cr_assert_eq(tok_load_dir(dir, &t, err, sizeof err), 0, "tok_load_dir(%s): %s", dir, err);
    cr_assert_not_null(t);
    return t;
}

static tok_ids encode(const tokenizer *t, const char *text, const char *pair, int max_len)
{
    tok_ids got;
    memset(&got, 0x5a, sizeof got); /* poisoned: every field must be written */
    cr_assert_eq(tok_encode(t, text, pair, max_len, &got, err, sizeof err), 0, "%s", err);
    return got;
}

/* Both folders give the same ids, types and mask for text (and pair). */
static void expect_same(const tokenizer *j, const tokenizer *v, const char *text, const char *pair,
                        int max_len)
{
    tok_ids a = encode(j, text, pair, max_len), b = encode(v, text, pair, max_len);
    cr_expect_eq(a.count, b.count, "\"%s\": %d ids from tokenizer.json, %d from vocab.txt", text,
                 a.count, b.count);
    for (int i = 0; i < a.count && i < b.count; i++) {
        cr_expect_eq(a.ids[i], b.ids[i], "\"%s\": id %d: %d vs %d", text, i, a.ids[i], b.ids[i]);
        cr_expect_eq(a.type_ids[i], b.type_ids[i], "\"%s\": type %d", text, i);
        cr_expect_eq(a.mask[i], 1);
    }
    tok_ids_free(&a);
    tok_ids_free(&b);
}

static void expect_ids(const tokenizer *t, const char *text, const int32_t *want, int n)
{
    tok_ids got = encode(t, text, NULL, INT_MAX);
    cr_expect_eq(got.count, n, "\"%s\": %d ids, want %d", text, got.count, n);
    for (int i = 0; i < n && i < got.count; i++)
        cr_expect_eq(got.ids[i], want[i], "\"%s\": id %d is %d, want %d", text, i, got.ids[i],
                     want[i]);
    tok_ids_free(&got);
}

#define EXPECT(t, text, ...)                                                                       \
    expect_ids(t, text, (const int32_t[]){__VA_ARGS__},                                            \
               (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t)))

static const char *const hard_texts[] = {
    "a b x y",
    "Caf\u00e9 caf\u00e9 CAFE cafe", /* accents, stripped when lowercasing */
    "Cafe\u0301",                    /* decomposed */
    "\u4e2d\u6587a\u4e2d",           /* CJK spaced out */
    "a [MASK] b",
    "[SEP][SEP]",
    "x[CLS]y",
    "[mask] [Mask]",                     /* not the token: it is not normalized */
    "a\001b\x7f\t\u200bx\u00a0y\u3000a", /* control and space characters */
    "hello! hello!!",
    "",
    "   ",
};

Test(tokenizer_json, same_as_vocab_txt)
{
    char long_word[256];
    memset(long_word, 'a', 101);
    long_word[101] = '\0';
    const char *cased_cfg = "{\"do_lower_case\": false}";
    for (int cased = 0; cased < 2; cased++) {
        if (cased) {
            write_tokenizer_json(dir_json, "WordPiece", normalizer_cased, NULL, NULL);
            write_file(dir_txt, "tokenizer_config.json", cased_cfg);
        }
        tokenizer *j = load_dir(dir_json), *v = load_dir(dir_txt);
        for (size_t i = 0; i < sizeof hard_texts / sizeof hard_texts[0]; i++)
            expect_same(j, v, hard_texts[i], NULL, INT_MAX);
        expect_same(j, v, long_word, NULL, INT_MAX);
        long_word[100] = '\0';
        expect_same(j, v, long_word, NULL, INT_MAX);
        long_word[100] = 'a';
        expect_same(j, v, "a b x y a b", "x y [MASK] a", 7);
        tok_info ij, iv;
        tok_describe(j, &ij);
        tok_describe(v, &iv);
        cr_expect_str_eq(ij.source, "tokenizer.json");
        cr_expect_str_eq(iv.source, "vocab.txt");
        cr_expect_eq(ij.lowercase, !cased);
        cr_expect_eq(iv.lowercase, !cased);
        cr_expect_eq(ij.strip_accents, !cased); /* null follows lowercase */
        cr_expect_eq(iv.strip_accents, !cased);
        tok_free(j);
        tok_free(v);
    }
}

Test(tokenizer_json, special_tokens_in_text)
{
    tokenizer *t = load_dir(dir_json);
    EXPECT(t, "a [MASK] b", CLS, A, MASK, B, SEP);
    EXPECT(t, "[SEP][SEP]", CLS, SEP, SEP, SEP);
    EXPECT(t, "x[CLS]y", CLS, X, CLS, Y, SEP);
    EXPECT(t, "[mask]", CLS, LB, MASK_LOWER, RB, SEP);
    EXPECT(t, "[MASK]a", CLS, MASK, A, SEP);
    EXPECT(t, "aa[PAD]", CLS, A, HASH_A, PAD, SEP);
    tok_free(t);
    t = load_dir(dir_txt);
    EXPECT(t, "x[CLS]y", CLS, X, CLS, Y, SEP);
    EXPECT(t, "[mask]", CLS, LB, MASK_LOWER, RB, SEP);
    tok_free(t);
}

Test(tokenizer_json, cased_keeps_case_and_accents)
{
    write_tokenizer_json(dir_json, "WordPiece", normalizer_cased, NULL, NULL);
    tokenizer *t = load_dir(dir_json);
    EXPECT(t, "Caf\u00e9", CLS, 16, HASH_E + 1, SEP); /* Caf ##é */
    EXPECT(t, "caf\u00e9 cafe", CLS, CAF, HASH_E + 1, CAF, HASH_E, SEP);
    tok_free(t);
    write_tokenizer_json(dir_json, "WordPiece", normalizer_lower, NULL, NULL);
    t = load_dir(dir_json);
    EXPECT(t, "Caf\u00e9", CLS, CAF, HASH_E, SEP); /* caf ##e */
    tok_free(t);
}

/* Lengths the fast longest_first rule gives, worked out from its statement: the shorter text
 * (the first on a tie) keeps its length when it fits in half the room; else half each, the
 * odd one to the longer. */
static void rule(int n1, int n2, int room, int *k1, int *k2)
{
    int shorter_first = n1 <= n2, s = shorter_first ? n1 : n2, l = shorter_first ? n2 : n1;
    if (s + l > room) {
        if (2 * s > room) s = room / 2;
        l = room - s;
    }
    *k1 = shorter_first ? s : l;
    *k2 = shorter_first ? l : s;
}

Test(tokenizer_json, pair_truncation_budgets)
{
    tokenizer *t = load_dir(dir_json);
    const char *texts[] = {"a", "a b", "a b x", "a b x y a", "a b x y a b x y a"};
    int lens[] = {1, 2, 3, 5, 9};
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 5; k++)
            for (int max_len = 3; max_len <= 22; max_len++) {
                int k1, k2;
                rule(lens[i], lens[k], max_len - 3, &k1, &k2);
                tok_ids got = encode(t, texts[i], texts[k], max_len);
                int ones = 0;
                for (int n = 0; n < got.count; n++)
                    ones += got.type_ids[n];
                cr_expect_eq(got.count, k1 + k2 + 3, "%d+%d at %d", lens[i], lens[k], max_len);
                cr_expect_eq(ones, k2 + 1, "%d+%d at %d: second text", lens[i], lens[k], max_len);
                tok_ids_free(&got);
            }
    tok_ids got = encode(t, "a b x y a", NULL, 4); /* a single text cuts at the room */
    cr_expect_eq(got.count, 4);
    cr_expect_eq(got.ids[2], B);
    tok_ids_free(&got);
    tok_free(t);
}

Test(tokenizer_json, template_type_ids)
{
    const char *post =
        "{\"type\":\"TemplateProcessing\","
        "\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":5}},"
        "{\"Sequence\":{\"id\":\"A\",\"type_id\":2}}],"
        "\"pair\":[{\"Sequence\":{\"id\":\"B\",\"type_id\":7}},"
        "{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":3}},"
        "{\"Sequence\":{\"id\":\"A\",\"type_id\":4}}],"
        "\"special_tokens\":{\"[CLS]\":{\"id\":\"[CLS]\",\"ids\":[2],\"tokens\":[\"[CLS]\"]},"
        "\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":[3,4],\"tokens\":[\"[SEP]\",\"[MASK]\"]}}}";
    write_tokenizer_json(dir_json, "WordPiece", normalizer_lower, NULL, post);
    tokenizer *t = load_dir(dir_json);
    tok_info info;
    tok_describe(t, &info);
    cr_expect_eq(info.added_single, 1);
    cr_expect_eq(info.added_pair, 2);
    tok_ids got = encode(t, "a b", NULL, INT_MAX);
    const int32_t ids1[] = {CLS, A, B}, types1[] = {5, 2, 2};
    cr_assert_eq(got.count, 3);
    for (int i = 0; i < 3; i++)
        cr_expect(got.ids[i] == ids1[i] && got.type_ids[i] == types1[i], "single %d", i);
    tok_ids_free(&got);
    got = encode(t, "a", "x y", INT_MAX);
    const int32_t ids2[] = {X, Y, SEP, MASK, A}, types2[] = {7, 7, 3, 3, 4};
    cr_assert_eq(got.count, 5);
    for (int i = 0; i < 5; i++)
        cr_expect(got.ids[i] == ids2[i] && got.type_ids[i] == types2[i], "pair %d", i);
    tok_ids_free(&got);
    tok_free(t);
}

static void expect_load_error(const char *dir, const char *file, const char *message)
{
    tokenizer *t = (tokenizer *)&t; /* not NULL: tok_load_dir must clear it */
    err[0] = '\0';
    cr_assert_eq(tok_load_dir(dir, &t, err, sizeof err), -1, "loaded despite %s", message);
    cr_expect_null(t);
    cr_expect_not_null(strstr(err, file), "error \"%s\" does not name %s", err, file);
    cr_expect_not_null(strstr(err, message), "error \"%s\" lacks \"%s\"", err, message);
}

Test(tokenizer_json, errors)
{
    /* a component outside the supported ones: the message names the section and the type */
    write_tokenizer_json(dir_json, "Frobnicate", normalizer_lower, NULL, NULL);
    expect_load_error(dir_json, "tokenizer.json: model", "Frobnicate");
    write_tokenizer_json(dir_json, "WordPiece", "{\"type\":\"Frobnicate\"}", NULL, NULL);
    expect_load_error(dir_json, "tokenizer.json: normalizer", "Frobnicate");
    write_tokenizer_json(dir_json, "WordPiece", normalizer_lower, "{\"type\":\"Frobnicate\"}",
                         NULL);
    expect_load_error(dir_json, "tokenizer.json: pre_tokenizer", "Frobnicate");
    write_tokenizer_json(dir_json, "WordPiece", normalizer_lower, NULL,
                         "{\"type\":\"Frobnicate\"}");
    expect_load_error(dir_json, "tokenizer.json: post_processor", "Frobnicate");
    /* and an option outside a supported one's */
    write_tokenizer_json(dir_json, "BPE", normalizer_lower, NULL, NULL);
    expect_load_error(dir_json, "tokenizer.json: model", "max_input_chars_per_word");
    write_file(dir_json, "tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", ");
    expect_load_error(dir_json, "tokenizer.json", "not valid JSON");
    write_file(dir_json, "tokenizer.json", "{\"model\": {\"vocab\": {\"caf\xe9\": 0}}}");
    expect_load_error(dir_json, "tokenizer.json", "not valid UTF-8 (at byte 25)");
    write_file(dir_json, "tokenizer.json",
               "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
               "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100}}");
    expect_load_error(dir_json, "tokenizer.json: model", "vocab");
    remove_file(dir_json, "tokenizer.json");
    expect_load_error(dir_json, "vocab.txt", "cannot open");
    write_file(dir_txt, "tokenizer_config.json", "{\"do_lower_case\": 1}");
    expect_load_error(dir_txt, "tokenizer_config.json", "do_lower_case");
}

Test(tokenizer_json, config_and_describe)
{
    write_file(dir_txt, "tokenizer_config.json",
               "{\"model_max_length\": 1000000000000000019884624838656, \"do_lower_case\": true,"
               " \"mask_token\": {\"content\": \"[MASK]\", \"lstrip\": true}}");
    tokenizer *t = load_dir(dir_txt);
    tok_info info;
    tok_describe(t, &info);
    cr_expect_eq(info.model_max_length, 0); /* transformers' "none" */
    cr_expect_eq(info.vocab_size, VOCAB_SIZE);
    cr_expect_eq(info.pad.id, PAD);
    cr_expect_eq(tok_pad_id(t), PAD);
    cr_expect_eq(info.mask.id, MASK);
    cr_expect_str_eq(info.continuing_subword_prefix, "##");
    cr_expect_eq(info.max_input_chars_per_word, 100);
    cr_expect_eq(info.added_single, 2);
    cr_expect_eq(info.added_pair, 3);
    EXPECT(t, "a   [MASK]", CLS, A, MASK, SEP); /* lstrip takes the spaces */
    tok_free(t);
    write_file(dir_txt, "tokenizer_config.json", "{\"model_max_length\": 128}");
    t = load_dir(dir_txt);
    tok_describe(t, &info);
    cr_expect_eq(info.model_max_length, 128);
    tok_free(t);
}
