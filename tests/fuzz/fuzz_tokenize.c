/* libFuzzer harness for the text path of the tokenizer (src/io/tokenizer.c): UTF-8 checks,
 * cleaning, CJK spacing, lowercasing and accent stripping (NFD), punctuation splits, WordPiece
 * and longest-first truncation of pairs, against a small fixed vocabulary.
 *
 * Input: a flags byte (bit 0: lowercase, bit 1: a pair), a max_len byte (small values test
 * the refusals too), then the text, and after its first NUL the pair's second text. */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_util.h"
#include "io/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vocab[] = {
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "a",
    "un",
    "##aff",
    "##able",
    "##s",
    "##a",
    "##b",
    "hello",
    "world",
    "h\u00e9llo",
    "Hello",
    "caf\u00e9",
    "cafe",
    "e",
    "##e",
    "!",
    ",",
    ".",
    "-",
    "#",
    "##",
    "$",
    "\u4e2d",
    "\u6587",
    "\u3053\u3093",
    "##\u306b\u3061\u306f",
    "\xf0\x9f\x98\x80",
    "\u00df",
    "ss",
    "i\u0307",
    "\u0130",
    "",
};

static tokenizer *lower, *cased;

static void free_tokenizers(void)
{
    tok_free(lower);
    tok_free(cased);
}

static int setup(void)
{
    static int state; /* 0 not yet, 1 done, -1 failed */
    if (state) return state;
    fuzz_file file;
    char text[1024], err[256] = "";
    size_t n = 0;
    state = -1;
    for (size_t i = 0; i < sizeof vocab / sizeof vocab[0]; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\n", vocab[i]);
    if (n >= sizeof text || fuzz_file_open(&file) != 0) return state;
    const char *path = fuzz_file_write(&file, (const uint8_t *)text, n);
    if (path && tok_load(path, 1, &lower, err, sizeof err) == 0 &&
        tok_load(path, 0, &cased, err, sizeof err) == 0)
        state = 1;
    else
        fprintf(stderr, "%s\n", err);
    close(file.fd);
    atexit(free_tokenizers);
    return state;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (setup() < 0) {
        fuzz_setup_failed("loading the vocabulary");
        return 0;
    }
    if (size < 2) return 0;
    int flags = data[0], max_len = data[1];
    char *text = fuzz_strndup(data + 2, size - 2);
    if (!text) return 0;
    size_t len = strlen(text);
    const char *pair = flags & 2 && len < size - 2 ? text + len + 1 : NULL;
    tok_ids ids;
    char err[256];
    if (tok_encode(flags & 1 ? lower : cased, text, pair, max_len, &ids, err, sizeof err) == 0)
        tok_ids_free(&ids);
    free(text);
    return 0;
}
