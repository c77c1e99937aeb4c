/* End-to-end tests of `vkbert tokenize`, `encode` and `embed` (the binary named by
 * $VKBERT_CLI) on a tiny random BERT folder: ids worked out by hand, hidden states equal to the
 * C API's, unit-norm and CLS embeddings, and clean failures that name the problem. */
#define _POSIX_C_SOURCE 200809L

#include "io/bert_model.h"
#include "npy.h"
#include "st_folder.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ids from 0: [PAD] 0, [CLS] 2, [SEP] 3, hello 4, ... "." 16 */
static const char *const vocab[] = {"[PAD]", "[UNK]",    "[CLS]",  "[SEP]", "hello", "world",
                                    "the",   "cat",      "##s",    "sat",   "on",    "mat",
                                    "un",    "##believ", "##able", "!",     "."};
#define VOCAB_SIZE ((int)(sizeof vocab / sizeof *vocab))

static char tmpdir[TEST_DIR_SIZE];

static const char *path_in(const char *name)
{
    static char paths[8][256];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 256, "%s/%s", tmpdir, name);
    return p;
}

static void write_model(const char *dir, const char *act)
{
    bert_config c = tiny_bert_config(16, 2, 2, 24, 32, VOCAB_SIZE);
    snprintf(c.hidden_act, sizeof c.hidden_act, "%s", act);
    tiny_bert_folder(dir, &c, 7, vocab, VOCAB_SIZE, NULL);
}

static void setup(void)
{
    test_dir_make(tmpdir, "cli_bert");
    write_model(path_in("model"), "gelu");
}

static void teardown(void)
{
    test_dir_remove(tmpdir);
}

TestSuite(cli_bert, .init = setup, .fini = teardown, .timeout = 60);

/* ---- files ---- */

/* An int64 .npy [rows, cols] (npy_save_f32 writes float32 only). */
static void save_i64(const char *path, int rows, int cols, const int32_t *v)
{
    char header[128];
    int n = snprintf(header, sizeof header,
                     "{'descr': '<i8', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
    int total = (10 + n + 1 + 63) / 64 * 64;
    memset(header + n, ' ', (size_t)(total - 10 - n));
    header[total - 11] = '\n';
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    pre[8] = (unsigned char)((total - 10) & 0xff);
    pre[9] = (unsigned char)((total - 10) >> 8);
    fwrite(pre, 1, 10, f);
    fwrite(header, 1, (size_t)(total - 10), f);
    for (int i = 0; i < rows * cols; i++) {
        int64_t x = v[i];
        fwrite(&x, sizeof x, 1, f);
    }
    fclose(f);
}

static void load_f32(const char *path, npy_array *out, int ndim)
{
    char err[512];
    cr_assert_eq(npy_load(path, out, err, sizeof err), 0, "%s", err);
    cr_assert_eq(out->dtype, NPY_FLOAT32);
    cr_assert_eq(out->ndim, ndim);
}

static void run_ok(const char *const *args, test_cli_result *r)
{
    test_run_cli(tmpdir, args, r);
    cr_assert_eq(r->code, 0, "%s failed with %d:\n%s", args[0], r->code, r->err);
}

static void expect_failure(const char *const *args, const char *needle)
{
    test_cli_result r;
    test_run_cli(tmpdir, args, &r);
    cr_assert_eq(r.code, 1, "exit %d, stderr:\n%s", r.code, r.err);
    cr_assert(strncmp(r.err, "vkbert: ", 8) == 0, "stderr: %s", r.err);
    cr_assert_not_null(strstr(r.err, needle), "'%s' not in: %s", needle, r.err);
}

/* "Hello world!" and "The cats sat on the mat.", padded: what tokenize and embed produce. */
#define B 2
#define S 10
static const int32_t ids[B * S] = {2, 4, 5, 15, 3, 0, 0, 0, 0, 0, 2, 6, 7, 8, 9, 10, 6, 11, 16, 3};
static const int32_t mask[B * S] = {1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/* ---- tokenize ---- */

Test(cli_bert, tokenize_prints_the_ids)
{
    test_cli_result r;
    const char *args[] = {
        "tokenize", "--model", path_in("model"), "Hello world!", "The cats unbelievable xyz", NULL};
    run_ok(args, &r);
    cr_assert_str_eq(r.out,
                     "{\"input_ids\": [[2, 4, 5, 15, 3], [2, 6, 7, 8, 12, 13, 14, 1, 3]], "
                     "\"token_type_ids\": [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0]], "
                     "\"attention_mask\": [[1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1]], "
                     "\"special_tokens_mask\": [[1, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0, 0, 0, 1]], "
                     "\"offsets\": [[[0, 0], [0, 5], [6, 11], [11, 12], [0, 0]], [[0, 0], [0, 3], "
                     "[4, 7], [7, 8], [9, 11], [11, 17], [17, 21], [22, 25], [0, 0]]]}\n");
}

/* ---- encode ---- */

static void encode_files(void)
{
    save_i64(path_in("ids.npy"), B, S, ids);
    save_i64(path_in("mask.npy"), B, S, mask);
    test_cli_result r;
    const char *args[] = {
        "encode",           "--model",          path_in("model"),    "--input-ids",
        path_in("ids.npy"), "--attention-mask", path_in("mask.npy"), "--output",
        path_in("h.npy"),   "--pooled",         path_in("p.npy"),    NULL};
    run_ok(args, &r);
}

Test(cli_bert, encode_matches_the_api)
{
    encode_files();
    npy_array h, p;
    load_f32(path_in("h.npy"), &h, 3);
    load_f32(path_in("p.npy"), &p, 2);
    cr_assert(h.shape[0] == B && h.shape[1] == S && h.shape[2] == 16);
    cr_assert(p.shape[0] == B && p.shape[1] == 16);
    float want[B * S * 16];
    vkbert_context *ctx = test_context(0);
    vkbert_encoder *enc;
    TEST_OK(vkbert_encoder_load(ctx, path_in("model"), NULL, &enc));
    TEST_OK(vkbert_encoder_forward_host(enc, B, S, ids, NULL, mask, want, NULL));
    vkbert_encoder_destroy(enc);
    test_context_done(ctx);
    const float *got = h.data;
    for (size_t i = 0; i < h.count; i++) {
        cr_assert(isfinite(got[i]), "hidden[%zu] = %g", i, got[i]);
        cr_assert_float_eq(got[i], want[i], 1e-5, "hidden[%zu]: %g vs %g", i, got[i], want[i]);
    }
    npy_free(&h);
    npy_free(&p);
}

/* ---- embed ---- */

static void expect_unit_rows(const char *precision)
{
    test_cli_result r;
    const char *args[] = {"embed",       "--model", path_in("model"), "--normalize",
                          "--precision", precision, "Hello world!",   "The cats sat on the mat.",
                          NULL};
    run_ok(args, &r);
    cJSON *json = cJSON_Parse(r.out);
    cr_assert_not_null(json, "not JSON: %s", r.out);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(json, "embeddings");
    cr_assert_eq(cJSON_GetArraySize(rows), B);
    for (const cJSON *row = rows->child; row; row = row->next) {
        cr_assert_eq(cJSON_GetArraySize(row), 16);
        double sum = 0;
        for (const cJSON *x = row->child; x; x = x->next)
            sum += x->valuedouble * x->valuedouble;
        cr_assert_float_eq(sqrt(sum), 1.0, 1e-5, "norm %.9g", sqrt(sum));
    }
    cJSON_Delete(json);
}

Test(cli_bert, embed_normalize_gives_unit_rows)
{
    expect_unit_rows("fp32");
}

Test(cli_bert, embed_normalize_gives_unit_rows_fp16)
{
    expect_unit_rows("fp16");
}

Test(cli_bert, embed_cls_is_the_first_hidden_row)
{
    encode_files();
    test_cli_result r;
    const char *args[] = {"embed",
                          "--model",
                          path_in("model"),
                          "--pooling",
                          "cls",
                          "--output",
                          path_in("e.npy"),
                          "--",
                          "Hello world!",
                          "The cats sat on the mat.",
                          NULL};
    run_ok(args, &r);
    npy_array h, e;
    load_f32(path_in("h.npy"), &h, 3);
    load_f32(path_in("e.npy"), &e, 2);
    cr_assert(e.shape[0] == B && e.shape[1] == 16);
    const float *hv = h.data, *ev = e.data;
    for (int b = 0; b < B; b++)
        for (int k = 0; k < 16; k++)
            cr_assert_float_eq(ev[b * 16 + k], hv[(b * S) * 16 + k], 1e-5, "row %d, %d", b, k);
    npy_free(&h);
    npy_free(&e);
}

/* ---- failures ---- */

Test(cli_bert, missing_model_folder)
{
    save_i64(path_in("ids.npy"), B, S, ids);
    const char *missing = path_in("no_such_model");
    const char *args[] = {"encode",           "--model",  missing,          "--input-ids",
                          path_in("ids.npy"), "--output", path_in("h.npy"), NULL};
    expect_failure(args, "no_such_model");
    const char *embed[] = {"embed", "--model", missing, "hi", NULL};
    expect_failure(embed, "no_such_model");
}

Test(cli_bert, relu_config_is_refused)
{
    write_model(path_in("relu"), "relu");
    save_i64(path_in("ids.npy"), B, S, ids);
    const char *args[] = {"encode",           "--model",  path_in("relu"),  "--input-ids",
                          path_in("ids.npy"), "--output", path_in("h.npy"), NULL};
    expect_failure(args, "relu");
}

Test(cli_bert, float_input_ids_are_refused)
{
    float f[B * S];
    char err[512];
    for (int i = 0; i < B * S; i++)
        f[i] = (float)ids[i];
    int64_t shape[2] = {B, S};
    cr_assert_eq(npy_save_f32(path_in("f.npy"), 2, shape, f, err, sizeof err), 0, "%s", err);
    const char *args[] = {"encode",         "--model",  path_in("model"), "--input-ids",
                          path_in("f.npy"), "--output", path_in("h.npy"), NULL};
    expect_failure(args, "f.npy");
    expect_failure(args, "float32");
}

Test(cli_bert, help_and_usage_codes)
{
    const char *cmds[] = {"encode", "tokenize", "embed"};
    for (int i = 0; i < 3; i++) {
        test_cli_result r;
        const char *help[] = {cmds[i], "--help", NULL};
        test_run_cli(tmpdir, help, &r);
        cr_assert_eq(r.code, 0, "%s --help: %d", cmds[i], r.code);
        cr_assert_not_null(strstr(r.out, "usage: vkbert"));
        const char *bad[] = {cmds[i], "--bogus", NULL};
        test_run_cli(tmpdir, bad, &r);
        cr_assert_eq(r.code, 2, "%s --bogus: %d", cmds[i], r.code);
    }
}
