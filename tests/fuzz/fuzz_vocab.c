/* libFuzzer harness for vocab.txt (src/io/tokenizer.c): any bytes as the vocabulary, then,
 * when it loads, lookups of every token and encoding of fixed texts and of the input itself,
 * so that WordPiece runs against odd vocabularies (empty lines, NULs, "##" alone, CRs,
 * duplicates). */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_util.h"
#include "io/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const texts[] = {
    "Hello, world! un-affable [UNK] ##s",
    "H\u00e9llo \u4e2d\u6587 caf\u00e9\u0301 \t\r\n \xe2\x80\xa8 a##b",
    "supercalifragilisticexpialidocious",
};

static void encode(const tokenizer *t, const char *text, const char *pair, int max_len)
{
    tok_ids ids;
    char err[256];
    if (tok_encode(t, text, pair, max_len, &ids, err, sizeof err) == 0) tok_ids_free(&ids);
}

static void exercise(const tokenizer *t, const char *input)
{
    for (int32_t id = 0;; id++) {
        const char *tok = tok_token(t, id);
        if (!tok) break;
        (void)tok_id(t, tok);
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        encode(t, texts[i], NULL, 512);
    encode(t, input, texts[0], 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size);
    if (!path) return 0;
    tokenizer *t;
    char err[256];
    /* Lowercasing changes only encoding; the input's parity picks it, keeping the file as is. */
    if (tok_load(path, (int)(size & 1), &t, err, sizeof err) != 0) return 0;
    char *input = fuzz_strndup(data, size);
    if (input) exercise(t, input);
    free(input);
    tok_free(t);
    return 0;
}
