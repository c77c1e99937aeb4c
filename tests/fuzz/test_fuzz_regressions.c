/* Every input the fuzz harnesses (tests/fuzz) found a bug with, replayed through the normal API
 * in the normal build: each must now give its result or its clear error, as listed below. The
 * inputs are in tests/fuzz/regressions/<harness>/, in the harness's own input format. */
#define _POSIX_C_SOURCE 200809L

#include "support.h"
#include "io/bert_model.h"
#include "fuzz/tiny_model.h"
#include "fuzz/tok_families.h"
#include "io/tok_pipeline.h"
#include "io/tokenizer.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[TEST_DIR_SIZE];
static char err[512];

static void setup(void)
{
    test_dir_make(tmpdir, "fuzzreg");
}

static void teardown(void)
{
    test_dir_remove(tmpdir);
}

TestSuite(fuzz_regressions, .init = setup, .fini = teardown);

/* tests/fuzz/<kind>/<harness>/<name> or, name NULL, the folder: the inputs lie beside this
 * file, which CMake compiles by its absolute path. */
static void input_path(char *path, size_t size, const char *kind, const char *harness,
                       const char *name)
{
    const char *slash = strrchr(__FILE__, '/');
    int dir_len = slash ? (int)(slash - __FILE__) : 1;
    snprintf(path, size, "%.*s/%s/%s%s%s", dir_len, slash ? __FILE__ : ".", kind, harness,
             name ? "/" : "", name ? name : "");
}

static size_t read_file_in(const char *kind, const char *harness, const char *name, char *buf,
                           size_t cap)
{
    char path[1024];
    input_path(path, sizeof path, kind, harness, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t n = fread(buf, 1, cap - 1, f);
    cr_assert_eq(fclose(f), 0);
    buf[n] = '\0';
    return n;
}

static size_t read_input(const char *harness, const char *name, char *buf, size_t cap)
{
    return read_file_in("regressions", harness, name, buf, cap);
}

static void write_file(const char *path, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* ---- config: fuzz_config's input is config.json, beside a fixed tiny model ---- */

static void expect_model_error(const char *name, const char *message)
{
    char text[4096], path[256];
    tiny_bert_write(tmpdir, &(tiny_bert){.config = tiny, .seed = 1}, NULL);
    size_t n = read_input("config", name, text, sizeof text);
    snprintf(path, sizeof path, "%s/config.json", tmpdir);
    write_file(path, text, n);
    bert_model m;
    err[0] = '\0';
    cr_assert_eq(bert_model_load(tmpdir, &m, err, sizeof err), -1, "%s loaded", name);
    cr_expect_not_null(strstr(err, message), "%s: error \"%s\" lacks \"%s\"", name, err, message);
}

/* The sizes come from config.json, and the weights were allocated from them before the file
 * was checked: 200 bytes of config asked for 7 GB (position embeddings), 32 GB (vocabulary) or
 * 256 GB (layer count near INT_MAX). The file is now checked first. */
Test(fuzz_regressions, config_oom_position_embeddings) /* as fuzz_config found it */
{
    expect_model_error("oom_position_embeddings",
                       "'embeddings.position_embeddings.weight' has shape [5, 4], expected "
                       "[444444445, 4]");
}

Test(fuzz_regressions, config_huge_vocab)
{
    expect_model_error("huge_vocab", "has shape [7, 4], expected [2000000000, 4]");
}

Test(fuzz_regressions, config_huge_layers)
{
    expect_model_error("huge_layers", "missing tensor 'encoder.layer.1.attention.self.query");
}

/* ---- tokenize: fuzz_tokenize's input is flags, max_len, text, NUL, pair ---- */

static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n";

static tok_ids encode_input(const char *name, int *rc)
{
    char text[4096], path[256];
    size_t n = read_input("tokenize", name, text, sizeof text);
    cr_assert_geq(n, 2);
    snprintf(path, sizeof path, "%s/vocab.txt", tmpdir);
    write_file(path, vocab, strlen(vocab));
    tokenizer *t;
    cr_assert_eq(tok_load(path, text[0] & 1, &t, err, sizeof err), 0, "%s", err);
    size_t len = strlen(text + 2);
    const char *pair = text[0] & 2 && len < n - 2 ? text + 2 + len + 1 : NULL;
    tok_ids ids;
    *rc = tok_encode(t, text + 2, pair, (unsigned char)text[1], &ids, err, sizeof err);
    tok_free(t);
    return ids;
}

/* An empty text (or one of only spaces and dropped characters) did NULL + 0 in add_words. */
Test(fuzz_regressions, tokenize_empty_text)
{
    int rc;
    tok_ids ids = encode_input("empty_text", &rc);
    cr_assert_eq(rc, 0, "%s", err);
    cr_expect_eq(ids.count, 2);
    cr_expect_eq(ids.ids[0], 2); /* [CLS] */
    cr_expect_eq(ids.ids[1], 3); /* [SEP] */
    tok_ids_free(&ids);
}

/* ---- tokenizer_json: fuzz_tokenizer_json's input is tokenizer.json (alone here) ---- */

static void expect_tokenizer_error(const char *name, const char *message)
{
    char text[4096], path[256];
    size_t n = read_input("tokenizer_json", name, text, sizeof text);
    snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
    write_file(path, text, n);
    tokenizer *t;
    err[0] = '\0';
    cr_assert_eq(tok_load_dir(tmpdir, &t, err, sizeof err), -1, "%s loaded", name);
    cr_expect_null(t);
    cr_expect_not_null(strstr(err, message), "%s: error \"%s\" lacks \"%s\"", name, err, message);
}

/* JSON whose top value is not an object (cJSON stops after the first value, so a string
 * followed by anything parses) was refused without its parse tree being freed: a leak that
 * the sanitizer build reports. */
Test(fuzz_regressions, tokenizer_json_string_root) /* as fuzz_tokenizer_json found it */
{
    expect_tokenizer_error("string_root", "tokenizer.json: not a JSON object");
}

Test(fuzz_regressions, tokenizer_json_not_an_object)
{
    expect_tokenizer_error("not_an_object", "tokenizer.json: not a JSON object");
}

/* An id of 1.8e96 (or any number beyond long long's range) was converted to long long, to
 * test that it is whole, before its range was checked: undefined behaviour. */
Test(fuzz_regressions, tokenizer_json_huge_vocab_id) /* as fuzz_tokenizer_json found it */
{
    expect_tokenizer_error("huge_vocab_id",
                           "model: WordPiece: vocab: ,: expected an integer from 0 to "
                           "2147483646");
}

Test(fuzz_regressions, tokenizer_json_huge_max_chars)
{
    expect_tokenizer_error("huge_max_chars",
                           "model: WordPiece: max_input_chars_per_word: expected an integer");
}

/* A decoder of Replaces of the empty string, each putting 300 bytes between every two
 * characters, decoded "hi" to 109 MB after three and to 32 GB after four (tokenizers does
 * too). The decoded text may now grow 64 times the tokens' bytes. */
Test(fuzz_regressions, tokenizer_json_decoder_growth) /* as fuzz_tokenizer_json would find it */
{
    char text[4096], path[256];
    size_t n = read_input("tokenizer_json", "decoder_growth", text, sizeof text);
    snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
    write_file(path, text, n);
    tokenizer *t;
    cr_assert_eq(tok_load_dir(tmpdir, &t, err, sizeof err), 0, "%s", err);
    tok_ids ids;
    cr_assert_eq(tok_encode(t, "hi", NULL, INT_MAX, &ids, err, sizeof err), 0, "%s", err);
    char *back = NULL;
    err[0] = '\0';
    cr_expect_eq(tok_decode(t, ids.ids, (size_t)ids.count, 0, &back, err, sizeof err), -1);
    cr_expect_null(back);
    cr_expect_not_null(strstr(err, "decoder: the text would grow to"), "error \"%s\"", err);
    cr_expect_not_null(strstr(err, "past 64 times the tokens'"), "error \"%s\"", err);
    tok_ids_free(&ids);
    tok_free(t);
}

/* The vocabulary's id table is dense: two tokens, one at id 1.7e9, took 27 GB (fuzz_tokenizer_json
 * found it as a BPE vocabulary). Ids far past the count are refused. */
Test(fuzz_regressions, tokenizer_json_sparse_vocab) /* as fuzz_tokenizer_json found it */
{
    expect_tokenizer_error("sparse_vocab", "model: BPE: vocab: id 1700000000 among 2 tokens: ids "
                                           "past 4 times the count plus 65536 are refused");
}

/* ---- regex: fuzz_regex's input is flags, pattern, NUL, text ---- */

/* The pattern's error, once it is compiled in the flags' dialect (Oniguruma's here). */
static void expect_regex_error(const char *name, const char *message)
{
    char input[4096];
    size_t n = read_input("regex", name, input, sizeof input);
    cr_assert_geq(n, 1);
    cr_assert_eq(input[0] & 1, 0, "%s: only Oniguruma's dialect is replayed", name);
    err_ctx c = {"fuzz_regex", err, sizeof err};
    tok_regex *r = NULL;
    err[0] = '\0';
    cr_assert_eq(tok_regex_compile(&c, input + 1, strlen(input + 1), &r), -1, "%s compiled", name);
    cr_expect_null(r);
    cr_expect_not_null(strstr(err, message), "%s: error \"%s\" lacks \"%s\"", name, err, message);
}

/* \C matched one byte inside a character, and the splits were cut there (PCRE2 allows it in
 * UTF mode); Oniguruma refuses it, and now so does vkbert. */
Test(fuzz_regressions, regex_backslash_c) /* as fuzz_regex found it */
{
    expect_regex_error("backslash_c", "\\C is disabled");
}

/* ---- normalizer: fuzz_normalizer's input is a byte, odd here, then a normalizer section ---- */

/* Replaces of a pattern matching the empty string, each inserting 200 bytes between every two
 * characters, made the text 200 times longer at each step: 22 s under the sanitizers for 1 KB
 * of tokenizer.json, and gigabytes a few steps on. A text may now grow 64 times its original. */
Test(fuzz_regressions, normalizer_replace_growth) /* as fuzz_normalizer found it */
{
    char input[4096];
    read_input("normalizer", "replace_growth", input, sizeof input);
    cr_assert_eq(input[0] & 1, 1);
    cJSON *j = cJSON_Parse(input + 1);
    cr_assert_not_null(j);
    err_ctx c = {"fuzz_normalizer", err, sizeof err};
    tok_normalizer *n;
    cr_assert_eq(tok_normalizer_load(&c, j, &n), 0, "%s", err);
    const char *text = "hello world";
    tok_norm t;
    cr_assert_eq(tok_norm_init(&c, &t, text, strlen(text), 0), 0);
    err[0] = '\0';
    cr_expect_eq(tok_normalizer_run(&c, n, &t), -1, "the text grew to %zu bytes", t.n);
    cr_expect_not_null(strstr(err, "normalizer: the text would grow to"), "error \"%s\"", err);
    cr_expect_not_null(strstr(err, "from 11 of the original, past 64 times"), "error \"%s\"", err);
    tok_norm_free(&t);
    tok_normalizer_free(n);
    cJSON_Delete(j);
}

/* ---- tokenize, the tokenizer.json families: fuzz_tokenize's flags pick one (bits 2-3) ---- */

static tokenizer *load_family(int family)
{
    static char json[65536];
    char path[256];
    size_t n =
        read_file_in("corpus", "tokenizer_json", tok_family_files[family], json, sizeof json);
    cr_assert_lt(n, sizeof json - 1, "%s: a larger buffer is needed", tok_family_files[family]);
    snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
    write_file(path, json, n);
    tokenizer *t;
    cr_assert_eq(tok_load_dir(tmpdir, &t, err, sizeof err), 0, "%s", err);
    return t;
}

/* One input as fuzz_tokenize runs it: an encoding refused, or one that keeps what the harness
 * checks; *replayed counts the family inputs. */
static void replay_family_input(const char *kind, const char *name, int *replayed)
{
    static char input[8192];
    size_t n = read_file_in(kind, "tokenize", name, input, sizeof input);
    int family = n >= 2 ? (input[0] >> 2) & 3 : 0;
    if (!family) return;
    size_t len = strlen(input + 2);
    const char *pair = input[0] & 2 && len < n - 2 ? input + 2 + len + 1 : NULL;
    tokenizer *t = load_family(family);
    tok_ids ids;
    if (tok_encode_cut(t, input + 2, pair, tok_family_max_len((unsigned char)input[1]),
                       input[0] & 16, &ids, err, sizeof err) == 0) {
        const char *broke = tok_family_check_ids(t, &ids, input + 2, pair);
        if (!broke)
            broke = tok_family_check_decode(t, family, &ids, input + 2,
                                            pair || ids.count != ids.full_count, input[0] & 1);
        cr_expect_null(broke, "%s/tokenize/%s: %s", kind, name, broke);
        tok_ids_free(&ids);
    }
    tok_free(t);
    ++*replayed;
}

static int replay_families(const char *kind)
{
    char path[1024];
    int replayed = 0;
    input_path(path, sizeof path, kind, "tokenize", NULL);
    DIR *dir = opendir(path);
    if (!dir) return 0; /* no regressions yet */
    for (struct dirent *e; (e = readdir(dir));)
        if (e->d_name[0] != '.') replay_family_input(kind, e->d_name, &replayed);
    closedir(dir);
    return replayed;
}

/* The family seeds and any family regression, in the normal build: what fuzz_tokenize checks
 * under the sanitizers holds here too. */
Test(fuzz_regressions, tokenize_families)
{
    cr_expect_gt(replay_families("corpus"), 0, "no family seeds in tests/fuzz/corpus/tokenize");
    replay_families("regressions");
}
