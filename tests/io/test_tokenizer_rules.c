/* Tests for the tokenizer pipeline's own rules (src/io/tokenizer*.c), each worked out by hand
 * from tokenizers' source: added tokens and their flags (added_vocabulary.rs), the
 * tokenizer.json's truncation and padding sections (utils/truncation.rs, utils/padding.rs),
 * character offsets (pre_tokenizer.rs), decode (tokenizer/mod.rs), the special tokens of a
 * SentencePiece-style folder, and the errors that name a component. The comparison with
 * tokenizers itself on many texts is tests/parity's. */
#define _POSIX_C_SOURCE 200809L

#include "io/tokenizer.h"
#include "test_dir.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]",  "[SEP]", "[MASK]", "a",     "b",
                                    "c",     "##b",   "\u00e9", "<x>",   "xx",     "hello", "!"};
enum { PAD, UNK, CLS, SEP, MASK, A, B, C, HASH_B, E_ACUTE, X_TAG, XX, HELLO, BANG, NEXT_ID };
#define VOCAB_SIZE ((int)(sizeof vocab / sizeof vocab[0]))

static char dir[TEST_DIR_SIZE], err[512];

static void setup(void)
{
    test_dir_make(dir, "tokrules");
}

static void teardown(void)
{
    test_dir_remove(dir);
}

TestSuite(tokenizer_rules, .init = setup, .fini = teardown);

static void write_file(const char *name, const char *text)
{
    char p[TEST_DIR_SIZE + 64];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f, "%s", p);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

static const char specials[] =
    "{\"id\":0,\"content\":\"[PAD]\",\"normalized\":false,\"special\":true},"
    "{\"id\":1,\"content\":\"[UNK]\",\"normalized\":false,\"special\":true},"
    "{\"id\":2,\"content\":\"[CLS]\",\"normalized\":false,\"special\":true},"
    "{\"id\":3,\"content\":\"[SEP]\",\"normalized\":false,\"special\":true}";

static int with_specials = 1; /* the added tokens start with [PAD], [UNK], [CLS], [SEP] */

static const char bert_processing[] =
    "{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",3],\"cls\":[\"[CLS]\",2]}";

/* A WordPiece tokenizer.json over `vocab`: BertNormalizer (lowercase when `lower`),
 * BertPreTokenizer, BertProcessing, the WordPiece decoder; `added` more added tokens (JSON
 * objects after the special ones), `extra` more top-level members first ("" for none). */
static void write_json(int lower, const char *added, const char *extra)
{
    char text[8192];
    int n = snprintf(text, sizeof text,
                     "{%s\"version\":\"1.0\",\"added_tokens\":[%s%s%s],"
                     "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,"
                     "\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":%s},"
                     "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"post_processor\":%s,"
                     "\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},"
                     "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
                     "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":100,"
                     "\"vocab\":{",
                     extra, with_specials ? specials : "", *added && with_specials ? "," : "",
                     added, lower ? "true" : "false", bert_processing);
    for (int i = 0; i < VOCAB_SIZE; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "\"%s\":%d%s", vocab[i], i,
                      i + 1 < VOCAB_SIZE ? "," : "}}}");
    cr_assert_lt(n, (int)sizeof text);
    write_file("tokenizer.json", text);
}

static tokenizer *load(void)
{
    tokenizer *t = NULL;
    cr_assert_eq(tok_load_dir(dir, &t, err, sizeof err), 0, "tok_load_dir: %s", err);
    return t;
}

static tok_ids encode(const tokenizer *t, const char *text, const char *pair, int max_len)
{
    tok_ids got;
    memset(&got, 0x5a, sizeof got); /* poisoned: every field must be written */
    cr_assert_eq(tok_encode(t, text, pair, max_len, &got, err, sizeof err), 0, "%s", err);
    return got;
}

/* ids and, for each, its character offsets (start, stop). */
static void expect_tokens(const tokenizer *t, const char *text, int max_len, const int32_t *ids,
                          const int32_t *offsets, int n)
{
    tok_ids got = encode(t, text, NULL, max_len);
    cr_expect_eq(got.count, n, "\"%s\": %d tokens, want %d", text, got.count, n);
    for (int i = 0; i < n && i < got.count; i++) {
        cr_expect_eq(got.ids[i], ids[i], "\"%s\": id %d is %d, want %d", text, i, got.ids[i],
                     ids[i]);
        cr_expect(got.offsets[2 * i] == offsets[2 * i] &&
                      got.offsets[2 * i + 1] == offsets[2 * i + 1],
                  "\"%s\": token %d at (%d, %d), want (%d, %d)", text, i, got.offsets[2 * i],
                  got.offsets[2 * i + 1], offsets[2 * i], offsets[2 * i + 1]);
    }
    tok_ids_free(&got);
}

#define IDS(...)                                                                                   \
    (const int32_t[])                                                                              \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }
#define EXPECT(t, text, ids, offsets)                                                              \
    expect_tokens(t, text, INT_MAX, ids, offsets, (int)(sizeof(ids) / sizeof(int32_t)))

Test(tokenizer_rules, lstrip_takes_the_spaces_before)
{
    write_json(1, "{\"id\":10,\"content\":\"<x>\",\"lstrip\":true,\"normalized\":false}", "");
    tokenizer *t = load();
    EXPECT(t, "a  <x>b", IDS(CLS, A, X_TAG, B, SEP), IDS(0, 0, 0, 1, 1, 6, 6, 7, 0, 0));
    /* not past the end of the match before it */
    EXPECT(t, "<x> <x>", IDS(CLS, X_TAG, X_TAG, SEP), IDS(0, 0, 0, 3, 3, 7, 0, 0));
    tok_free(t);
}

Test(tokenizer_rules, rstrip_takes_the_spaces_after)
{
    write_json(1, "{\"id\":10,\"content\":\"<x>\",\"rstrip\":true,\"normalized\":false}", "");
    tokenizer *t = load();
    EXPECT(t, "a<x>  b", IDS(CLS, A, X_TAG, B, SEP), IDS(0, 0, 0, 1, 1, 6, 6, 7, 0, 0));
    EXPECT(t, "<x>\u3000", IDS(CLS, X_TAG, SEP), IDS(0, 0, 0, 4, 0, 0)); /* any White_Space */
    tok_free(t);
}

Test(tokenizer_rules, single_word_needs_no_word_character_beside)
{
    write_json(1, "{\"id\":11,\"content\":\"xx\",\"single_word\":true,\"normalized\":false}", "");
    tokenizer *t = load();
    EXPECT(t, "xx a", IDS(CLS, XX, A, SEP), IDS(0, 0, 0, 2, 3, 4, 0, 0));
    EXPECT(t, "!xx!", IDS(CLS, BANG, XX, BANG, SEP), IDS(0, 0, 0, 1, 1, 3, 3, 4, 0, 0));
    /* inside a word it is not the token: WordPiece finds no ##xx, so [UNK] */
    EXPECT(t, "axx", IDS(CLS, UNK, SEP), IDS(0, 0, 0, 3, 0, 0));
    EXPECT(t, "xx\u00e9", IDS(CLS, UNK, SEP), IDS(0, 0, 0, 3, 0, 0)); /* é is \w */
    tok_free(t);
}

Test(tokenizer_rules, normalized_tokens_match_the_normalized_text)
{
    /* "B C" lowercased is "b c", matched in the normalized text; not in the vocabulary, it
     * takes the next id */
    write_json(1, "{\"id\":14,\"content\":\"B C\",\"normalized\":true}", "");
    tokenizer *t = load();
    EXPECT(t, "a b c", IDS(CLS, A, NEXT_ID, SEP), IDS(0, 0, 0, 1, 2, 5, 0, 0));
    EXPECT(t, "A B C!", IDS(CLS, A, NEXT_ID, BANG, SEP), IDS(0, 0, 0, 1, 2, 5, 5, 6, 0, 0));
    cr_expect_eq(tok_id(t, "B C"), NEXT_ID);
    cr_expect_str_eq(tok_token(t, NEXT_ID), "B C");
    tok_free(t);
    /* not normalized: matched as it is, in the raw text only */
    write_json(1, "{\"id\":14,\"content\":\"B C\",\"normalized\":false}", "");
    t = load();
    EXPECT(t, "a b c", IDS(CLS, A, B, C, SEP), IDS(0, 0, 0, 1, 2, 3, 4, 5, 0, 0));
    EXPECT(t, "a B C", IDS(CLS, A, NEXT_ID, SEP), IDS(0, 0, 0, 1, 2, 5, 0, 0));
    tok_free(t);
}

Test(tokenizer_rules, longest_match_first)
{
    write_json(0,
               "{\"id\":14,\"content\":\"ab\",\"normalized\":false},"
               "{\"id\":15,\"content\":\"abc\",\"normalized\":false}",
               "");
    tokenizer *t = load();
    EXPECT(t, "abcab", IDS(CLS, NEXT_ID + 1, NEXT_ID, SEP), IDS(0, 0, 0, 3, 3, 5, 0, 0));
    tok_free(t);
}

Test(tokenizer_rules, character_offsets)
{
    write_json(0, "", "");
    tokenizer *t = load();
    /* bytes would be (0, 2), (3, 6), (7, 8) */
    EXPECT(t, "\u00e9 a\u00e9 b", IDS(CLS, E_ACUTE, UNK, B, SEP),
           IDS(0, 0, 0, 1, 2, 4, 5, 6, 0, 0));
    tok_ids got = encode(t, "\u00e9", "a\u00e9 b", INT_MAX);
    const int32_t want[] = {0, 0, 0, 1, 0, 0, 0, 2, 3, 4, 0, 0};
    cr_assert_eq(got.count, 6);
    for (int i = 0; i < 12; i++)
        cr_expect_eq(got.offsets[i], want[i], "pair offset %d", i);
    tok_ids_free(&got);
    tok_free(t);
}

Test(tokenizer_rules, truncation_section)
{
    write_json(1, "",
               "\"truncation\":{\"direction\":\"Left\",\"max_length\":5,"
               "\"strategy\":\"LongestFirst\",\"stride\":0},");
    tokenizer *t = load();
    /* the file's rules: 3 tokens of room, the last kept */
    expect_tokens(t, "a b c a b", TOK_FILE_RULES, IDS(CLS, C, A, B, SEP),
                  IDS(0, 0, 4, 5, 6, 7, 8, 9, 0, 0), 5);
    /* any other limit replaces them: right, at the caller's length */
    expect_tokens(t, "a b c a b", 4, IDS(CLS, A, B, SEP), IDS(0, 0, 0, 1, 2, 3, 0, 0), 4);
    tok_ids got = encode(t, "a b c a b", NULL, INT_MAX);
    cr_expect_eq(got.count, 7);
    cr_expect_eq(got.full_count, 7);
    tok_ids_free(&got);
    got = encode(t, "a b c a b", NULL, TOK_FILE_RULES);
    cr_expect_eq(got.full_count, 7);
    tok_ids_free(&got);
    tok_free(t);
}

Test(tokenizer_rules, truncation_strategies)
{
    write_json(1, "",
               "\"truncation\":{\"direction\":\"Right\",\"max_length\":7,"
               "\"strategy\":\"OnlySecond\",\"stride\":0},");
    tokenizer *t = load();
    tok_ids got = encode(t, "a b c", "a b c a", TOK_FILE_RULES); /* 3 + 4 + 3 > 7 */
    const int32_t want[] = {CLS, A, B, C, SEP, A, SEP};
    cr_assert_eq(got.count, 7);
    for (int i = 0; i < 7; i++)
        cr_expect_eq(got.ids[i], want[i], "id %d", i);
    tok_ids_free(&got);
    /* only the second may be cut, and there is none; or it is too short */
    cr_expect_eq(tok_encode(t, "a b c a b c", NULL, TOK_FILE_RULES, &got, err, sizeof err), -1);
    cr_expect_not_null(strstr(err, "only_second"), "%s", err);
    cr_expect_eq(tok_encode(t, "a b c a b", "a", TOK_FILE_RULES, &got, err, sizeof err), -1);
    cr_expect_not_null(strstr(err, "too short"), "%s", err);
    tok_free(t);
    write_json(1, "",
               "\"truncation\":{\"direction\":\"Right\",\"max_length\":4,"
               "\"strategy\":\"LongestFirst\",\"stride\":2},");
    t = load();
    cr_expect_eq(tok_encode(t, "a b c", NULL, TOK_FILE_RULES, &got, err, sizeof err), -1);
    cr_expect_not_null(strstr(err, "stride"), "%s", err);
    tok_free(t);
}

static void expect_array(const int32_t *got, const int32_t *want, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "%s %d: %d, want %d", what, i, got[i], want[i]);
}

Test(tokenizer_rules, padding_section)
{
    write_json(1, "",
               "\"padding\":{\"strategy\":{\"Fixed\":7},\"direction\":\"Left\","
               "\"pad_to_multiple_of\":null,\"pad_id\":0,\"pad_type_id\":3,"
               "\"pad_token\":\"[PAD]\"},");
    tokenizer *t = load();
    tok_ids got = encode(t, "a b", NULL, TOK_FILE_RULES);
    cr_assert_eq(got.count, 7);
    expect_array(got.ids, IDS(PAD, PAD, PAD, CLS, A, B, SEP), 7, "id");
    expect_array(got.mask, IDS(0, 0, 0, 1, 1, 1, 1), 7, "mask");
    expect_array(got.special, IDS(1, 1, 1, 1, 0, 0, 1), 7, "special");
    expect_array(got.type_ids, IDS(3, 3, 3, 0, 0, 0, 0), 7, "type");
    expect_array(got.offsets, IDS(0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0), 14, "offset");
    tok_ids_free(&got);
    got = encode(t, "a b", NULL, INT_MAX); /* the caller's limit: no padding */
    cr_expect_eq(got.count, 4);
    tok_ids_free(&got);
    tok_free(t);
    /* BatchLongest pads a single text only up to the multiple */
    write_json(1, "",
               "\"padding\":{\"strategy\":\"BatchLongest\",\"direction\":\"Right\","
               "\"pad_to_multiple_of\":3,\"pad_id\":4,\"pad_type_id\":0,"
               "\"pad_token\":\"[MASK]\"},");
    t = load();
    got = encode(t, "a b", NULL, TOK_FILE_RULES);
    cr_assert_eq(got.count, 6);
    expect_array(got.ids, IDS(CLS, A, B, SEP, MASK, MASK), 6, "id");
    expect_array(got.mask, IDS(1, 1, 1, 1, 0, 0), 6, "mask");
    tok_ids_free(&got);
    tok_free(t);
}

static void expect_decode(const tokenizer *t, const int32_t *ids, size_t n, int skip,
                          const char *want)
{
    char *text = NULL;
    cr_assert_eq(tok_decode(t, ids, n, skip, &text, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(text, want);
    free(text);
}

Test(tokenizer_rules, decode)
{
    write_json(1, "{\"id\":14,\"content\":\"B C\",\"normalized\":true,\"special\":true}", "");
    tokenizer *t = load();
    const int32_t ids[] = {CLS, A, HASH_B, BANG, NEXT_ID, SEP};
    /* a normalized added token decodes as it was matched, lowercased; and skipping special
     * tokens asks the special set for that text, which holds "B C" only */
    expect_decode(t, ids, 6, 1, "ab! b c");
    expect_decode(t, ids, 6, 0, "[CLS] ab! b c [SEP]");
    expect_decode(t, ids, 4, 1, "ab!");
    expect_decode(t, ids, 0, 0, "");
    char *text = (char *)err;
    const int32_t bad[] = {A, 999};
    cr_expect_eq(tok_decode(t, bad, 2, 0, &text, err, sizeof err), -1);
    cr_expect_null(text);
    cr_expect_not_null(strstr(err, "999"), "%s", err);
    tok_free(t);
}

/* Each piece after the normalizer starts where its first byte came from, as tokenizers' slice
 * of it does: Metaspace's "first" prepends to none after a stripped space. */
Test(tokenizer_rules, pieces_start_where_their_text_came_from)
{
    write_file("tokenizer.json",
               "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[],"
               "\"normalizer\":{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true},"
               "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\u2581\","
               "\"prepend_scheme\":\"first\",\"split\":false},\"post_processor\":null,"
               "\"decoder\":null,\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
               "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":100,"
               "\"vocab\":{\"[UNK]\":0,\"a\":1,\"\u2581a\":2}}}");
    tokenizer *t = load();
    EXPECT(t, " a", IDS(1), IDS(1, 2));
    EXPECT(t, "a", IDS(2), IDS(0, 1));
    tok_ids got = encode(t, " a", "a", INT_MAX); /* no post-processor: type ids 0 and 1 */
    cr_assert_eq(got.count, 2);
    expect_array(got.ids, IDS(1, 2), 2, "id");
    expect_array(got.type_ids, IDS(0, 1), 2, "type");
    tok_ids_free(&got);
    tok_free(t);
}

Test(tokenizer_rules, bert_specials_only_in_a_bert_folder)
{
    /* a tokenizer.json alone keeps only its own added tokens whole, as from_file does */
    with_specials = 0;
    write_json(0, "", "");
    tokenizer *t = load();
    EXPECT(t, "[CLS]", IDS(CLS, UNK, UNK, UNK, SEP), IDS(0, 0, 0, 1, 1, 4, 4, 5, 0, 0));
    tok_free(t);
    /* in a BERT folder, BertTokenizer's special tokens too */
    write_file("config.json", "{\"model_type\": \"bert\"}");
    t = load();
    EXPECT(t, "[CLS]", IDS(CLS, CLS, SEP), IDS(0, 0, 0, 5, 0, 0));
    tok_free(t);
    with_specials = 1;
}

Test(tokenizer_rules, sentencepiece_specials_without_config)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"version\":\"1.0\",\"added_tokens\":["
             "{\"id\":0,\"content\":\"<s>\",\"normalized\":false,\"special\":true},"
             "{\"id\":1,\"content\":\"<pad>\",\"normalized\":false,\"special\":true},"
             "{\"id\":2,\"content\":\"</s>\",\"normalized\":false,\"special\":true},"
             "{\"id\":3,\"content\":\"<unk>\",\"normalized\":false,\"special\":true}],"
             "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
             "\"post_processor\":{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],"
             "\"cls\":[\"<s>\",0],\"trim_offsets\":true,\"add_prefix_space\":true},"
             "\"decoder\":null,\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"<unk>\","
             "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":100,"
             "\"vocab\":{\"<s>\":0,\"<pad>\":1,\"</s>\":2,\"<unk>\":3,\"a\":4}}}");
    write_file("tokenizer.json", text);
    tokenizer *t = load();
    tok_info info;
    tok_describe(t, &info);
    cr_expect_eq(tok_pad_id(t), 1);
    cr_expect_str_eq(info.cls.text, "<s>");
    cr_expect_eq(info.sep.id, 2);
    cr_expect_eq(info.unk.id, 3);
    cr_expect_eq(info.added_single, 2);
    cr_expect_eq(info.added_pair, 4);
    cr_expect_str_eq(info.decoder_desc, "none");
    cr_expect_str_eq(info.normalizer_desc, "none");
    cr_expect_not_null(strstr(info.post_processor_desc, "Roberta"), "%s", info.post_processor_desc);
    tok_ids got = encode(t, "a b", "a", INT_MAX);
    expect_array(got.ids, IDS(0, 4, 3, 2, 2, 4, 2), 7, "id");
    cr_expect_eq(got.count, 7);
    tok_ids_free(&got);
    tok_free(t);
}

static void expect_load_error(const char *file, const char *message)
{
    tokenizer *t = (tokenizer *)&t; /* not NULL: tok_load_dir must clear it */
    err[0] = '\0';
    cr_assert_eq(tok_load_dir(dir, &t, err, sizeof err), -1, "loaded despite %s", message);
    cr_expect_null(t);
    cr_expect_not_null(strstr(err, file), "error \"%s\" does not name %s", err, file);
    cr_expect_not_null(strstr(err, message), "error \"%s\" lacks \"%s\"", err, message);
}

Test(tokenizer_rules, errors_name_the_section)
{
    write_json(1, "", "\"truncation\":{\"max_length\":5,\"strategy\":\"Longest\",\"stride\":0},");
    expect_load_error("tokenizer.json: truncation.strategy", "Longest");
    write_json(1, "", "\"padding\":{\"strategy\":\"Fixed\"},");
    expect_load_error("tokenizer.json: padding.strategy", "Fixed");
    write_json(1, "", "\"version\":\"2.0\",");
    expect_load_error("tokenizer.json: version", "1.0");
    write_json(1, "{\"id\":10,\"content\":\"<x>\",\"lstrip\":1}", "");
    expect_load_error("tokenizer.json: added_tokens[4]", "lstrip");
    write_file("tokenizer.json", "{\"model\":{\"type\":\"Frobnicate\",\"vocab\":{}}}");
    expect_load_error("tokenizer.json: model", "Frobnicate");
    write_json(1, "", "");
    char text[4096];
    FILE *f = fopen(strcat(strcpy(text, dir), "/tokenizer.json"), "rb");
    cr_assert_not_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *pre = strstr(text, "BertPreTokenizer");
    cr_assert_not_null(pre);
    memcpy(pre, "BertPreTokenizeX", 16);
    write_file("tokenizer.json", text);
    expect_load_error("tokenizer.json: pre_tokenizer", "BertPreTokenizeX");
}

Test(tokenizer_rules, sentencepiece_model_alone)
{
    write_file("sentencepiece.bpe.model", "not read");
    write_file("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n");
    expect_load_error("tokenizer.json", "save_pretrained");
    expect_load_error("sentencepiece.bpe.model", "AutoTokenizer");
}
