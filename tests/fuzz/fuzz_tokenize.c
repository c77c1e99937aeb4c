/* libFuzzer harness for the text path of the tokenizer (src/io/tokenizer.c): UTF-8 checks,
 * cleaning, CJK spacing, lowercasing and accent stripping (NFD), punctuation splits, WordPiece
 * and longest-first truncation of pairs, against a small fixed vocabulary; and the text through
 * each tokenizer.json family (tok_families.h: Unigram with Precompiled and Metaspace, byte-level
 * BPE, BPE with byte_fallback), encoded, checked and decoded.
 *
 * Input: a flags byte (bit 0: lowercase, or for a family skip_special when decoding; bit 1: a
 * pair; bits 2-3: the family, 0 for the vocabulary; bit 4: a family's text cut from the left),
 * a max_len byte (small values test the refusals too; for a family 0 is the file's own rules and
 * 255 none), then the text, and after its first NUL the pair's second text. */
#define _GNU_SOURCE /* memfd_create, mkdtemp, nftw */
#include "fuzz_util.h"
#include "io/tokenizer.h"
#include "tok_families.h"

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

static tokenizer *lower, *cased, *families[4];
static char family_dirs[4][512];

static void free_tokenizers(void)
{
    tok_free(lower);
    tok_free(cased);
    for (int i = 1; i < 4; i++) {
        tok_free(families[i]);
        fuzz_remove_tree(family_dirs[i]);
    }
}

/* tests/fuzz/CMakeLists.txt names the folder by its absolute path; the default is that folder
 * from the repository's root, where a build made by hand would be run. */
#ifndef VKBERT_FUZZ_DIR
#define VKBERT_FUZZ_DIR "tests/fuzz"
#endif

/* A family's seed (in tests/fuzz, VKBERT_FUZZ_DIR) as the tokenizer.json of a folder of its
 * own, loaded. */
static int load_family(int i, char *err, size_t err_size)
{
    char path[1024], *json = NULL;
    snprintf(path, sizeof path, "%s/corpus/tokenizer_json/%s", VKBERT_FUZZ_DIR,
             tok_family_files[i]);
    FILE *f = fopen(path, "rb");
    long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (json = calloc(1, (size_t)n + 1)) &&
        fread(json, 1, (size_t)n, f) != (size_t)n) {
        free(json);
        json = NULL;
    }
    if (f) fclose(f);
    int rc = json && fuzz_make_dir(family_dirs[i], sizeof family_dirs[i], "tokenize") == 0 &&
                     fuzz_write_text(family_dirs[i], "tokenizer.json", json) == 0
                 ? tok_load_dir(family_dirs[i], &families[i], err, err_size)
                 : -1;
    if (!json) snprintf(err, err_size, "cannot read %s", path);
    free(json);
    return rc;
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
        tok_load(path, 0, &cased, err, sizeof err) == 0 && load_family(1, err, sizeof err) == 0 &&
        load_family(2, err, sizeof err) == 0 && load_family(3, err, sizeof err) == 0)
        state = 1;
    else
        fprintf(stderr, "%s\n", err);
    close(file.fd);
    atexit(free_tokenizers);
    return state;
}

/* A family's encoding, checked and decoded; abort() on a broken guarantee, for libFuzzer. */
static void run_family(int flags, int family, int max_len, const char *text, const char *pair)
{
    tok_ids ids;
    char err[256];
    const tokenizer *t = families[family];
    if (tok_encode_cut(t, text, pair, tok_family_max_len((unsigned char)max_len), flags & 16, &ids,
                       err, sizeof err) != 0)
        return;
    const char *broke = tok_family_check_ids(t, &ids, text, pair);
    if (!broke)
        broke = tok_family_check_decode(t, family, &ids, text, pair || ids.count != ids.full_count,
                                        flags & 1);
    if (broke) {
        fprintf(stderr, "fuzz_tokenize: %s: %s\n", tok_family_files[family], broke);
        abort();
    }
    tok_ids_free(&ids);
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
    int family = (flags >> 2) & 3;
    tok_ids ids;
    char err[256];
    if (family)
        run_family(flags, family, max_len, text, pair);
    else if (tok_encode(flags & 1 ? lower : cased, text, pair, max_len, &ids, err, sizeof err) == 0)
        tok_ids_free(&ids);
    free(text);
    return 0;
}
