/* libFuzzer harness for tokenizer.json (src/io/tokenizer_json.c): the input is the
 * tokenizer.json of a model folder, loaded with tok_load_dir; a tokenizer that loads then
 * encodes fixed texts (special and added tokens inside them, accents, CJK, a word longer than
 * max_input_chars_per_word), a pair cut to a few ids and one under the file's own truncation and
 * padding, each decoded back, so that what the file set up (the vocabulary, the normalizer, the
 * pre-tokenizer, added tokens and their match texts, the post-processor, the decoder) is used.
 * Two folders, picked by the input's size: tokenizer.json alone (even), and beside it a
 * tokenizer_config.json that names BertTokenizerFast and its own special tokens (odd). */
#define _GNU_SOURCE /* memfd_create, mkdtemp, nftw */
#include "fuzz_util.h"
#include "io/tokenizer.h"

#include <limits.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* BertTokenizerFast rebuilds the normalizer from these and adds the special tokens it names. */
static const char tokenizer_config[] =
    "{\"tokenizer_class\": \"BertTokenizerFast\", \"do_lower_case\": false, "
    "\"tokenize_chinese_chars\": true, \"strip_accents\": null, \"model_max_length\": 512, "
    "\"unk_token\": \"[UNK]\", \"sep_token\": \"[SEP]\", \"pad_token\": \"[PAD]\", "
    "\"cls_token\": \"[CLS]\", \"mask_token\": {\"content\": \"[MASK]\", \"lstrip\": true}, "
    "\"additional_special_tokens\": [\"<extra>\"]}\n";

static const char *const texts[] = {
    "",
    "Hello [MASK] world,[SEP]unaffable[CLS]! <new> a<new>b  <extra> [mask]",
    "H\u00e9llo CAF\u00c9 cafe\u0301 na\u00efve \u00c5NGSTR\u00d6M \u0130stanbul \u00df",
    "\u4e2d\u6587\u5b57 \u3053\u3093\u306b\u3061\u306f \ud55c\uad6d\uc5b4 \xf0\x9f\x98\x80 \u2028x",
    "\t\r\n \x7f\xc2\xa0 hello\x01world -- $#!",
    ("<s> the<mask> caf\u00e9  \u2581x </s><unk> \ufb01ne \uff21 A\u030a "
     "\U0001F468\u200d\U0001F469 "
     "I've 12345 <0x41>"),
};

static char dirs[2][512], long_word[300];
static fuzz_file file = {.fd = -1};

static void remove_dirs(void)
{
    for (int i = 0; i < 2; i++)
        fuzz_remove_tree(dirs[i]);
}

static int setup(void)
{
    static int state; /* 0 not yet, 1 done, -1 failed */
    if (state) return state;
    state = -1;
    atexit(remove_dirs);
    /* past WordPiece's 100 characters, the default max_input_chars_per_word */
    for (size_t i = 0; i + 1 < sizeof long_word; i++)
        long_word[i] = "unaffable"[i % 9];
    if (fuzz_file_open(&file) != 0) return state;
    for (int i = 0; i < 2; i++)
        if (fuzz_make_dir(dirs[i], sizeof dirs[i], "tokenizer_json") != 0 ||
            fuzz_link_input(dirs[i], "tokenizer.json", &file) != 0)
            return state;
    if (fuzz_write_text(dirs[1], "tokenizer_config.json", tokenizer_config) == 0) state = 1;
    return state;
}

static void encode(const tokenizer *t, const char *text, const char *pair, int max_len)
{
    tok_ids ids;
    char err[256], *back;
    if (tok_encode(t, text, pair, max_len, &ids, err, sizeof err) != 0) return;
    for (int skip_special = 0; skip_special < 2; skip_special++)
        if (tok_decode(t, ids.ids, (size_t)ids.count, skip_special, &back, err, sizeof err) == 0)
            free(back);
    tok_ids_free(&ids);
}

static void use(const tokenizer *t)
{
    tok_info info;
    tok_describe(t, &info);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        encode(t, texts[i], NULL, INT_MAX);
    encode(t, long_word, NULL, INT_MAX);
    encode(t, texts[1], texts[2], 7);
    encode(t, texts[3], long_word, 3);
    encode(t, texts[5], texts[1], TOK_FILE_RULES);
    (void)tok_token(t, tok_id(t, "[MASK]"));
    (void)tok_pad_id(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (setup() < 0) {
        fuzz_setup_failed("creating the model folders in $TMPDIR or /tmp");
        return 0;
    }
    if (!fuzz_file_write(&file, data, size)) {
        fuzz_setup_failed("writing the memfd");
        return 0;
    }
    tokenizer *t;
    char err[512];
    if (tok_load_dir(dirs[size & 1], &t, err, sizeof err) != 0) return 0;
    use(t);
    tok_free(t);
    return 0;
}
