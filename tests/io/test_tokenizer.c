/* Tests for src/io/tokenizer: BERT's basic tokenization and WordPiece on a small vocabulary,
 * every expected id list worked out by hand from the algorithm (HuggingFace BertTokenizer). */
#define _POSIX_C_SOURCE 200809L

#include "io/tokenizer.h"
#include "test_dir.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The test vocabulary, one token per line: the id is the line number. */
static const char *const vocab_lines[] = {
    "[PAD]",    "[UNK]",
    "[CLS]",    "[SEP]",
    "[MASK]",   "hello",
    "world",    "hi",
    "!",        "?",
    "un",       "##aff",
    "##able",   "我",
    "爱",       "a",
    "##a",      "$",
    "Hello",    "H\u00e9llo", /* é composed */
    "aei",      "\u00c5\u00c9\u00ce",
    "",         "the",
    ",",        "\u00e9",
    "##\u00e9", "##\u1acd", /* marks newer than Unicode 8.0 */
    "##\u1df7", "\u1c8a",   /* small tje, U+1C89 lowercased (Unicode 16.0) */
};
enum {
    PAD = 0,
    UNK = 1,
    CLS = 2,
    SEP = 3,
    MASK = 4,
    HELLO = 5,
    WORLD = 6,
    HI = 7,
    BANG = 8,
    QMARK = 9,
    UN = 10,
    AFF = 11,
    ABLE = 12,
    WO = 13,
    AI = 14,
    A = 15,
    HASH_A = 16,
    DOLLAR = 17,
    HELLO_CAP = 18,
    HELLO_ACUTE = 19,
    AEI = 20,
    AEI_CAPS = 21,
    EMPTY = 22,
    THE = 23,
    COMMA = 24,
    E_ACUTE = 25,
    HASH_E_ACUTE = 26,
    HASH_MARK_1ACD = 27,
    HASH_MARK_1DF7 = 28,
    SMALL_TJE = 29,
    VOCAB_SIZE = 30,
};

static char tmpdir[TEST_DIR_SIZE];
static char vocab_path[256];
static tokenizer *lower, *cased; /* the vocabulary with do_lower_case 1 and 0 */
static char err[512];

static void path_in_tmp(char *out, const char *name)
{
    snprintf(out, 256, "%s/%s", tmpdir, name);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

/* Writes `lines` joined by `eol` (and ended by it). */
static void write_vocab(const char *path, const char *const *lines, size_t n, const char *eol)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", lines[i], eol);
    cr_assert_eq(fclose(f), 0);
}

static tokenizer *load(const char *path, int do_lower_case)
{
    tokenizer *t = NULL;
    int rc = tok_load(path, do_lower_case, &t, err, sizeof err);
    cr_assert_eq(rc, 0, "tok_load: %s", err);
    cr_assert_not_null(t);
    return t;
}

static void setup(void)
{
    test_dir_make(tmpdir, "tok");
    path_in_tmp(vocab_path, "vocab.txt");
    write_vocab(vocab_path, vocab_lines, VOCAB_SIZE, "\n");
    lower = load(vocab_path, 1);
    cased = load(vocab_path, 0);
}

static void teardown(void)
{
    tok_free(lower);
    tok_free(cased);
    lower = cased = NULL;
    test_dir_remove(tmpdir);
}

TestSuite(tokenizer, .init = setup, .fini = teardown);

/* ---- expectations ---- */

static void check(const tokenizer *t, const char *text, const char *pair, int max_len,
                  const int32_t *ids, const int32_t *types, int n)
{
    tok_ids got;
    int rc = tok_encode(t, text, pair, max_len, &got, err, sizeof err);
    cr_assert_eq(rc, 0, "tok_encode(\"%s\"): %s", text, err);
    cr_expect_eq(got.count, n, "\"%s\": %d ids, want %d", text, got.count, n);
    for (int i = 0; i < n && i < got.count; i++) {
        cr_expect_eq(got.ids[i], ids[i], "\"%s\": id %d is %d, want %d", text, i, got.ids[i],
                     ids[i]);
        if (types)
            cr_expect_eq(got.type_ids[i], types[i], "\"%s\": type %d is %d, want %d", text, i,
                         got.type_ids[i], types[i]);
        cr_expect_eq(got.mask[i], 1);
    }
    tok_ids_free(&got);
    cr_expect_null(got.ids);
}

#define LIST(...) ((const int32_t[]){__VA_ARGS__})
#define COUNT(...) ((int)(sizeof LIST(__VA_ARGS__) / sizeof(int32_t)))
/* One text, no truncation: the ids, types all 0. */
#define EXPECT(t, text, ...) check(t, text, NULL, 512, LIST(__VA_ARGS__), NULL, COUNT(__VA_ARGS__))
#define EXPECT_PAIR(t, a, b, max_len, ids, types)                                                  \
    do {                                                                                           \
        const int32_t ids_[] = ids, types_[] = types;                                              \
        cr_assert_eq(sizeof ids_, sizeof types_);                                                  \
        check(t, a, b, max_len, ids_, types_, (int)(sizeof ids_ / sizeof ids_[0]));                \
    } while (0)
#define L(...)                                                                                     \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }

static void expect_error(const tokenizer *t, const char *text, const char *pair, int max_len,
                         const char *message)
{
    tok_ids got;
    memset(&got, 0x5a, sizeof got);
    err[0] = '\0';
    cr_assert_eq(tok_encode(t, text, pair, max_len, &got, err, sizeof err), -1);
    cr_expect_null(got.ids);
    cr_expect_eq(got.count, 0);
    cr_expect_not_null(strstr(err, message), "error \"%s\" lacks \"%s\"", err, message);
}

/* ---- basic tokenization ---- */

Test(tokenizer, plain_words)
{
    EXPECT(lower, "hello world", CLS, HELLO, WORLD, SEP);
    EXPECT(cased, "hello world", CLS, HELLO, WORLD, SEP);
    EXPECT(lower, "the hello", CLS, THE, HELLO, SEP);
    EXPECT(lower, "goodbye", CLS, UNK, SEP);
}

Test(tokenizer, lower_case_strips_accents)
{
    EXPECT(lower, "H\u00e9llo", CLS, HELLO, SEP);
    EXPECT(lower, "HELLO", CLS, HELLO, SEP);
    EXPECT(lower, "\u00c5\u00c9\u00ce", CLS, AEI, SEP); /* åéî -> a e i + dropped marks */
    EXPECT(lower, "He\u0301llo", CLS, HELLO, SEP);      /* already decomposed */
    EXPECT(lower, "\u00e9", CLS, UNK, SEP);             /* stripped to "e", not in the vocab */
}

Test(tokenizer, cased_keeps_case_and_accents)
{
    EXPECT(cased, "H\u00e9llo", CLS, HELLO_ACUTE, SEP);
    EXPECT(cased, "Hello hello", CLS, HELLO_CAP, HELLO, SEP);
    EXPECT(cased, "\u00c5\u00c9\u00ce", CLS, AEI_CAPS, SEP);
    EXPECT(cased, "HELLO", CLS, UNK, SEP);
    EXPECT(cased, "He\u0301llo", CLS, UNK, SEP); /* no NFC: the mark stays in the word */
    EXPECT(cased, "\u00e9", CLS, E_ACUTE, SEP);
}

Test(tokenizer, punctuation_runs)
{
    EXPECT(lower, "hi!!?", CLS, HI, BANG, BANG, QMARK, SEP);
    EXPECT(lower, "hello,world", CLS, HELLO, COMMA, WORLD, SEP);
    EXPECT(lower, "hi$", CLS, HI, DOLLAR, SEP); /* ASCII symbols count as punctuation */
    /* « » (Pi, Pf) and … (Po) split too; they are not in the vocabulary */
    EXPECT(lower, "\u00abhi\u00bb", CLS, UNK, HI, UNK, SEP);
    EXPECT(lower, "hi\u2026hi", CLS, HI, UNK, HI, SEP);
    EXPECT(lower, "!", CLS, BANG, SEP);
}

Test(tokenizer, cjk_ideographs_are_single_tokens)
{
    EXPECT(lower, "我爱", CLS, WO, AI, SEP);
    EXPECT(cased, "hi我爱hello", CLS, HI, WO, AI, HELLO, SEP);
    /* Hangul is not in BERT's CJK blocks: "hi한" stays one word, and "##한" is unknown */
    EXPECT(lower, "hi\ud55c", CLS, UNK, SEP);
}

Test(tokenizer, whitespace_and_control_cleanup)
{
    EXPECT(lower, "\thello\r\nworld  ", CLS, HELLO, WORLD, SEP);
    EXPECT(lower, "hello\u00a0world", CLS, HELLO, WORLD, SEP); /* no-break space, Zs */
    EXPECT(lower, "hello\u3000world", CLS, HELLO, WORLD, SEP); /* ideographic space, Zs */
    EXPECT(lower, "hello\u2028world", CLS, HELLO, WORLD, SEP); /* line separator */
    /* dropped, not turned into spaces: U+200B (Cf), U+0001 and U+007F (Cc), U+FFFD, U+E000 */
    EXPECT(lower, "hel\u200blo", CLS, HELLO, SEP);
    EXPECT(lower, "hel\x01lo\x7f", CLS, HELLO, SEP);
    EXPECT(lower, "hel\ufffdlo", CLS, HELLO, SEP);
    EXPECT(lower, "hel\ue000lo", CLS, HELLO, SEP);
}

/* HuggingFace's classes are Unicode 8.0's (its unicode_categories crate), its lowercase that of
 * its Rust (Unicode 16.0): a code point assigned or recategorized since is classed as there. */
Test(tokenizer, unicode_versions_of_huggingface)
{
    EXPECT(lower, "hel\u0378lo", CLS, UNK, SEP);        /* unassigned: kept, not dropped */
    EXPECT(lower, "hi \U0001fae9", CLS, HI, UNK, SEP);  /* an emoji of Unicode 16.0 */
    EXPECT(lower, "hel\u08e2lo", CLS, UNK, SEP);        /* Cf since 9.0: not a control */
    EXPECT(lower, "hi\u2e43hi", CLS, UNK, SEP);         /* Po since 9.0: no split */
    EXPECT(lower, "hi\u166dhi", CLS, HI, UNK, HI, SEP); /* Po in 8.0, So since 12.0 */
    EXPECT(lower, "hello\u1ac0", CLS, UNK, SEP);        /* Mn since 14.0: not stripped */
    EXPECT(lower, "hello\u1734", CLS, HELLO, SEP);      /* Mn in 8.0, Mc since 14.0 */
    EXPECT(cased, "hello\u1734", CLS, UNK, SEP);
    /* NFD leaves marks newer than its tables in place (U+1DF7 has class 228, U+1ACD 230) */
    EXPECT(lower, "a\u1acd\u1df7", CLS, A, HASH_MARK_1ACD, HASH_MARK_1DF7, SEP);
    EXPECT(lower, "a\u1df7\u1acd", CLS, A, HASH_MARK_1DF7, HASH_MARK_1ACD, SEP);
    EXPECT(lower, "\u1c89", CLS, SMALL_TJE, SEP);
    EXPECT(cased, "\u1c89", CLS, UNK, SEP);
}

Test(tokenizer, empty_text)
{
    EXPECT(lower, "", CLS, SEP);
    EXPECT(lower, " \t\r\n\u200b ", CLS, SEP);
    EXPECT(lower, "\u0301", CLS, SEP); /* a lone accent strips to nothing */
}

Test(tokenizer, invalid_utf8)
{
    expect_error(lower,
                 "ab\xff"
                 "cd",
                 NULL, 512, "text: invalid UTF-8 at byte 2");
    expect_error(lower, "hi\xc3", NULL, 512, "invalid UTF-8 at byte 2");       /* truncated */
    expect_error(lower, "\xed\xa0\x80", NULL, 512, "invalid UTF-8 at byte 0"); /* surrogate */
    expect_error(lower, "a \xc0\xaf", NULL, 512, "invalid UTF-8 at byte 2");   /* overlong */
    expect_error(lower, "hello", "x\x80", 512, "text pair: invalid UTF-8 at byte 1");
}

/* ---- WordPiece ---- */

Test(tokenizer, wordpiece_split)
{
    EXPECT(lower, "unaffable", CLS, UN, AFF, ABLE, SEP);
    EXPECT(lower, "unaff", CLS, UN, AFF, SEP);
    EXPECT(lower, "aaa", CLS, A, HASH_A, HASH_A, SEP);
    EXPECT(lower, "unaffable!", CLS, UN, AFF, ABLE, BANG, SEP);
}

Test(tokenizer, unknown_word_is_one_unk)
{
    EXPECT(lower, "xyz", CLS, UNK, SEP);
    EXPECT(lower, "unxyz", CLS, UNK, SEP);   /* "un" matches, then nothing: the whole word */
    EXPECT(lower, "affable", CLS, UNK, SEP); /* "aff" exists only as "##aff" */
    EXPECT(lower, "hi unxyz hi", CLS, HI, UNK, HI, SEP);
}

/* A word of `n` copies of `unit`, then: [CLS] first (##rest)x(n-1) [SEP], or [CLS] [UNK] [SEP]. */
static void check_long_word(const tokenizer *t, const char *unit, int n, int32_t first,
                            int32_t rest, int unknown)
{
    size_t len = strlen(unit);
    char *word = malloc(len * (size_t)n + 1);
    int32_t want[130];
    for (int i = 0; i < n; i++)
        memcpy(word + len * (size_t)i, unit, len);
    word[len * (size_t)n] = '\0';
    int count = 0;
    want[count++] = CLS;
    if (unknown) want[count++] = UNK;
    for (int i = 0; i < n && !unknown; i++)
        want[count++] = i == 0 ? first : rest;
    want[count++] = SEP;
    check(t, word, NULL, 512, want, NULL, count);
    free(word);
}

Test(tokenizer, long_words)
{
    check_long_word(lower, "a", 100, A, HASH_A, 0);
    check_long_word(lower, "a", 101, A, HASH_A, 1);
    check_long_word(lower, "A", 100, A, HASH_A, 0);
    /* code points, not bytes: 100 two-byte characters still fit */
    check_long_word(cased, "\u00e9", 100, E_ACUTE, HASH_E_ACUTE, 0);
    check_long_word(cased, "\u00e9", 101, E_ACUTE, HASH_E_ACUTE, 1);
}

/* ---- pairs and truncation ---- */

Test(tokenizer, pair_type_ids)
{
    EXPECT_PAIR(lower, "hello world", "hi!", 512, L(CLS, HELLO, WORLD, SEP, HI, BANG, SEP),
                L(0, 0, 0, 0, 1, 1, 1));
    EXPECT_PAIR(lower, "hello", "", 512, L(CLS, HELLO, SEP, SEP), L(0, 0, 0, 1));
    EXPECT_PAIR(lower, "", "", 512, L(CLS, SEP, SEP), L(0, 0, 1));
}

Test(tokenizer, truncate_single)
{
    EXPECT_PAIR(lower, "hello world hi", NULL, 5, L(CLS, HELLO, WORLD, HI, SEP), L(0, 0, 0, 0, 0));
    EXPECT_PAIR(lower, "hello world hi", NULL, 4, L(CLS, HELLO, WORLD, SEP), L(0, 0, 0, 0));
    EXPECT_PAIR(lower, "hello world hi", NULL, 2, L(CLS, SEP), L(0, 0));
    EXPECT_PAIR(lower, "unaffable", NULL, 4, L(CLS, UN, AFF, SEP), L(0, 0, 0, 0));
}

/* tokenizers' truncation.rs as its comment states it, with s the shorter text (the first on
 * a tie) and l the longer: nothing when both fit; the shorter whole and the longer the rest
 * when the shorter fits in half the room; else half each, the longer the odd one. */
static void expected_lengths(int n1, int n2, int room, int *k1, int *k2)
{
    int first_shorter = n1 <= n2, s = first_shorter ? n1 : n2, l = first_shorter ? n2 : n1;
    if (s + l > room && 2 * s <= room) {
        l = room - s;
    } else if (s + l > room) {
        s = room / 2;
        l = room - s;
    }
    *k1 = first_shorter ? s : l;
    *k2 = first_shorter ? l : s;
}

/* Pairs of "hello" x n1 and "hi" x n2 at every max_len from 3 to the untruncated length. */
Test(tokenizer, truncate_longest_first)
{
    const int sizes[][2] = {{5, 2}, {1, 4}, {3, 3}, {4, 4}, {8, 4}, {4, 8}, {0, 6}, {7, 1}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n1 = sizes[k][0], n2 = sizes[k][1];
        char a[128] = "", b[128] = "";
        for (int i = 0; i < n1; i++)
            strcat(a, "hello ");
        for (int i = 0; i < n2; i++)
            strcat(b, "hi ");
        for (int max_len = 3; max_len <= n1 + n2 + 4; max_len++) {
            int k1, k2, count = 0;
            int32_t ids[32], types[32];
            expected_lengths(n1, n2, max_len - 3, &k1, &k2);
            ids[count] = CLS, types[count++] = 0;
            for (int i = 0; i < k1; i++)
                ids[count] = HELLO, types[count++] = 0;
            ids[count] = SEP, types[count++] = 0;
            for (int i = 0; i < k2; i++)
                ids[count] = HI, types[count++] = 1;
            ids[count] = SEP, types[count++] = 1;
            check(lower, a, b, max_len, ids, types, count);
        }
    }
}

/* A few cases worked out by hand from tokenizers' truncation.rs (budget = max_len - 3), as
 * literal lengths: the shorter keeps its length when it fits in half the budget, else each
 * gets half and the odd token goes to the longer (to the second on a tie). */
Test(tokenizer, truncate_longest_first_literal_cases)
{
    static const int cases[][5] = {
        /* n1, n2, budget, kept of the first, kept of the second */
        {8, 4, 7, 4, 3},  {4, 8, 7, 3, 4},  {3, 3, 5, 2, 3}, {2, 10, 7, 2, 5},
        {10, 2, 7, 5, 2}, {5, 5, 10, 5, 5}, {6, 6, 5, 2, 3}, {9, 1, 4, 3, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char a[128] = "", b[128] = "";
        for (int i = 0; i < cases[k][0]; i++)
            strcat(a, "hello ");
        for (int i = 0; i < cases[k][1]; i++)
            strcat(b, "hi ");
        tok_ids got;
        cr_assert_eq(tok_encode(lower, a, b, cases[k][2] + 3, &got, err, sizeof err), 0, "%s", err);
        int first = 0, second = 0;
        for (int i = 0; i < got.count; i++) {
            first += got.ids[i] == HELLO;
            second += got.ids[i] == HI;
        }
        cr_expect(first == cases[k][3] && second == cases[k][4],
                  "%d + %d at budget %d kept %d + %d, want %d + %d", cases[k][0], cases[k][1],
                  cases[k][2], first, second, cases[k][3], cases[k][4]);
        tok_ids_free(&got);
    }
}

Test(tokenizer, max_len_too_small)
{
    expect_error(lower, "hello", NULL, 1, "max_len 1");
    expect_error(lower, "hello", NULL, 0, "max_len 0");
    expect_error(lower, "hello", "hi", 2, "max_len 2");
}

/* ---- the vocabulary ---- */

Test(tokenizer, ids_are_line_numbers)
{
    for (int32_t id = 0; id < VOCAB_SIZE; id++) {
        cr_expect_eq(tok_id(lower, vocab_lines[id]), id, "\"%s\"", vocab_lines[id]);
        cr_expect_str_eq(tok_token(lower, id), vocab_lines[id]);
    }
    cr_expect_eq(tok_id(lower, "aff"), -1);
    cr_expect_eq(tok_id(lower, "##"), -1);
    cr_expect_eq(tok_id(lower, "Hello"), HELLO_CAP); /* lookup is exact, never lowercased */
    cr_expect_null(tok_token(lower, -1));
    cr_expect_null(tok_token(lower, VOCAB_SIZE));
}

Test(tokenizer, crlf_and_no_final_newline)
{
    char p[256];
    path_in_tmp(p, "crlf.txt");
    write_vocab(p, vocab_lines, VOCAB_SIZE, "\r\n");
    tokenizer *t = load(p, 1);
    for (int32_t id = 0; id < VOCAB_SIZE; id++)
        cr_expect_eq(tok_id(t, vocab_lines[id]), id);
    EXPECT(t, "unaffable hello", CLS, UN, AFF, ABLE, HELLO, SEP);
    tok_free(t);

    path_in_tmp(p, "nofinal.txt");
    write_text(p, "[PAD]\n[UNK]\n[CLS]\n[SEP]\nlast");
    t = load(p, 1);
    cr_expect_eq(tok_id(t, "last"), 4);
    cr_expect_null(tok_token(t, 5));
    EXPECT(t, "last", 2, 4, 3);
    tok_free(t);
}

Test(tokenizer, duplicate_token_keeps_last_id)
{
    char p[256];
    path_in_tmp(p, "dup.txt");
    write_text(p, "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhi\nhi\n");
    tokenizer *t = load(p, 1);
    cr_expect_eq(tok_id(t, "hi"), 5);
    /* transformers' vocabulary is the dict's: the earlier id has no token left */
    cr_expect_null(tok_token(t, 4));
    cr_expect_str_eq(tok_token(t, 5), "hi");
    tok_free(t);
}

Test(tokenizer, large_vocabulary_lookup)
{
    enum { N = 5000 };
    char p[256];
    path_in_tmp(p, "large.txt");
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n", f);
    for (int i = 4; i < N; i++)
        fprintf(f, "%s%d\n", i % 2 ? "##w" : "w", i);
    cr_assert_eq(fclose(f), 0);
    tokenizer *t = load(p, 1);
    char name[32];
    for (int i = 4; i < N; i++) {
        snprintf(name, sizeof name, "%s%d", i % 2 ? "##w" : "w", i);
        cr_assert_eq(tok_id(t, name), i, "%s", name);
    }
    cr_expect_eq(tok_id(t, "w5000"), -1);
    EXPECT(t, "w4", 2, 4, 3);
    tok_free(t);
}

static void expect_load_error(const char *path, const char *message)
{
    tokenizer *t = (tokenizer *)&t; /* not NULL: tok_load must clear it */
    err[0] = '\0';
    cr_assert_eq(tok_load(path, 1, &t, err, sizeof err), -1);
    cr_expect_null(t);
    cr_expect_not_null(strstr(err, path), "error \"%s\" does not name %s", err, path);
    cr_expect_not_null(strstr(err, message), "error \"%s\" lacks \"%s\"", err, message);
}

Test(tokenizer, load_errors)
{
    char p[256];
    path_in_tmp(p, "missing.txt");
    expect_load_error(p, "cannot open");
    expect_load_error(tmpdir, "cannot read");

    path_in_tmp(p, "no_unk.txt");
    write_text(p, "[PAD]\n[CLS]\n[SEP]\nhello\n");
    expect_load_error(p, "[UNK]");
    path_in_tmp(p, "no_pad.txt");
    write_text(p, "[UNK]\n[CLS]\n[SEP]\n");
    expect_load_error(p, "[PAD]");
    path_in_tmp(p, "empty.txt");
    write_text(p, "");
    expect_load_error(p, "[UNK]");
    /* transformers reads vocab.txt as UTF-8 and fails; a Latin-1 token would never match */
    path_in_tmp(p, "latin1.txt");
    write_text(p, "[PAD]\n[UNK]\n[CLS]\n[SEP]\ncaf\xe9\n");
    expect_load_error(p, "line 5 is not valid UTF-8");
    path_in_tmp(p, "surrogate.txt");
    write_text(p, "[PAD]\n\xed\xa0\x80\n");
    expect_load_error(p, "line 2 is not valid UTF-8");
}

/* ---- tokenizer_config.json ---- */

static int config(const char *json, int start, int *value)
{
    char p[256];
    path_in_tmp(p, "tokenizer_config.json");
    if (json) write_text(p, json);
    *value = start;
    return tok_load_config(p, value);
}

Test(tokenizer, config_do_lower_case)
{
    int v;
    cr_expect_eq(config("{\"do_lower_case\": false, \"model_max_length\": 512}", 1, &v), 1);
    cr_expect_eq(v, 0);
    cr_expect_eq(config("{\"do_lower_case\": true}", 0, &v), 1);
    cr_expect_eq(v, 1);
    cr_expect_eq(config("{\"model_max_length\": 512}", 1, &v), 0); /* key absent */
    cr_expect_eq(v, 1);
    cr_expect_eq(config("{\"do_lower_case\": \"yes\"}", 1, &v), -1);
    cr_expect_eq(v, 1);
    cr_expect_eq(config("{\"do_lower_case\": fal", 0, &v), -1);
    cr_expect_eq(v, 0);
    char p[256];
    path_in_tmp(p, "tokenizer_config.json");
    unlink(p);
    cr_expect_eq(config(NULL, 1, &v), 0); /* file absent */
    cr_expect_eq(v, 1);
}
