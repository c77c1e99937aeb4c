/* End-to-end tests of the vkbert command-line tool (the binary named by $VKBERT_CLI): usage
 * and exit codes, `devices`, `demo`, `attention` against the double-precision reference, and
 * every kind of malformed file, which must fail with a message naming the file, never a crash. */
#define _POSIX_C_SOURCE 200809L

#include "io/half.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "reference.h"
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- the temp directory ---- */

static char tmpdir[TEST_DIR_SIZE];
static int tmp_paths_used;

/* Every test gets a layer, an input and their files (defined below). */
static void make_fixture(void);
static void free_fixture(void);

static void setup(void)
{
    test_dir_make(tmpdir, "cli");
    tmp_paths_used = 0;
    make_fixture();
}

static void teardown(void)
{
    free_fixture();
    test_dir_remove(tmpdir);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 120);

/* A path in the temp directory, valid for the whole test. */
static const char *tmp_path(const char *name)
{
    static char paths[32][256];
    cr_assert_lt(tmp_paths_used, 32, "too many temp paths in one test");
    char *p = paths[tmp_paths_used++];
    snprintf(p, sizeof paths[0], "%s/%s", tmpdir, name);
    return p;
}

/* ---- running the tool ---- */

typedef test_cli_result run_result;

static size_t read_file(const char *path, void *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static void run_cli(run_result *r, const char *const *args)
{
    test_run_cli(tmpdir, args, r);
}

static void expect_success(run_result *r, const char *const *args)
{
    run_cli(r, args);
    cr_assert_eq(r->code, 0, "exit code %d; stderr:\n%s", r->code, r->err);
}

/* Expects exit `code` with a "vkbert: " message on stderr that contains `needle`. */
static void expect_failure(const char *const *args, int code, const char *needle)
{
    static run_result r;
    run_cli(&r, args);
    cr_assert_eq(r.code, code, "exit code %d, expected %d; stderr:\n%s", r.code, code, r.err);
    cr_assert(strncmp(r.err, "vkbert: ", 8) == 0, "stderr lacks 'vkbert: ':\n%s", r.err);
    if (needle) cr_assert(strstr(r.err, needle), "stderr lacks '%s':\n%s", needle, r.err);
}

/* ---- writing files ---- */

static void write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* An .npy file of any dtype, written by hand (npy_save_f32 writes only float32). */
static void write_npy(const char *path, const char *descr, int ndim, const int64_t *shape,
                      const void *data, size_t nbytes)
{
    char dims[128] = "(", header[256];
    for (int i = 0; i < ndim; i++)
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%lld, ", (long long)shape[i]);
    if (ndim > 1) dims[strlen(dims) - 2] = '\0';
    strcat(dims, ")");
    int len = snprintf(header, sizeof header,
                       "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, dims);
    while ((10 + len + 1) % 64)
        header[len++] = ' ';
    header[len++] = '\n';
    uint8_t *file = malloc(10 + (size_t)len + nbytes);
    memcpy(file, "\x93NUMPY\x01\x00", 8);
    file[8] = (uint8_t)(len & 0xFF), file[9] = (uint8_t)(len >> 8);
    memcpy(file + 10, header, (size_t)len);
    if (nbytes) memcpy(file + 10 + len, data, nbytes);
    write_bytes(path, file, 10 + (size_t)len + nbytes);
    free(file);
}

static void save_f32(const char *path, int ndim, const int64_t *shape, const float *data)
{
    char err[512];
    cr_assert_eq(npy_save_f32(path, ndim, shape, data, err, sizeof err), 0, "%s", err);
}

static void truncate_file(const char *path, double fraction)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_eq(truncate(path, (off_t)((double)size * fraction)), 0);
}

/* ---- layers ---- */

static const char *const names[8] = {"q_proj.weight",   "q_proj.bias",   "k_proj.weight",
                                     "k_proj.bias",     "v_proj.weight", "v_proj.bias",
                                     "out_proj.weight", "out_proj.bias"};

typedef struct layer {
    int e, heads;
    float *w[8]; /* in the order of names[] */
} layer;

static void make_layer(layer *l, int e, int heads, uint64_t seed)
{
    ref_rng rng = {seed};
    l->e = e, l->heads = heads;
    for (int i = 0; i < 8; i++) {
        size_t n = i % 2 ? (size_t)e : (size_t)e * e;
        l->w[i] = malloc(n * sizeof(float));
        ref_fill(&rng, l->w[i], n, -0.5, 0.5);
    }
}

static void free_layer(layer *l)
{
    for (int i = 0; i < 8; i++)
        free(l->w[i]);
}

/* Writes the layer's tensors except `skip` (-1: none); tensor `odd` (-1: none) gets shape
 * [E, E+1] and its own data. */
static void save_layer_ex(const char *path, const layer *l, const char *prefix, st_dtype dtype,
                          int skip, int odd)
{
    const char *keys[8];
    char full[8][64];
    st_dtype dtypes[8];
    int ndims[8], count = 0;
    int64_t shapes[8][2];
    const int64_t *shape_ptrs[8];
    const float *data[8];
    float *wide = calloc((size_t)l->e * (l->e + 1), sizeof(float));
    for (int i = 0; i < 8; i++) {
        if (i == skip) continue;
        snprintf(full[count], sizeof full[count], "%s%s", prefix, names[i]);
        keys[count] = full[count], dtypes[count] = dtype, ndims[count] = i % 2 ? 1 : 2;
        shapes[count][0] = l->e, shapes[count][1] = i == odd ? l->e + 1 : l->e;
        shape_ptrs[count] = shapes[count];
        data[count] = i == odd ? wide : l->w[i];
        count++;
    }
    char err[512];
    int rc = st_save(path, count, keys, dtypes, ndims, shape_ptrs, data, err, sizeof err);
    free(wide);
    cr_assert_eq(rc, 0, "%s", err);
}

static void save_layer(const char *path, const layer *l)
{
    save_layer_ex(path, l, "", ST_F32, -1, -1);
}

static void make_input(float **x, int b, int s, int e, uint64_t seed)
{
    ref_rng rng = {seed};
    size_t n = (size_t)b * s * e;
    *x = malloc(n * sizeof **x);
    ref_fill(&rng, *x, n, -1.0, 1.0);
}

/* Reads Y, checks its shape and compares it with the reference within docs/semantics.md's
 * fp32 bounds. */
static float *check_output(const char *path, const layer *l, int b, int s, const float *x,
                           const ref_mask *mask, const ref_options *options)
{
    npy_array y;
    char err[512];
    cr_assert_eq(npy_load(path, &y, err, sizeof err), 0, "%s", err);
    cr_assert_eq(y.dtype, NPY_FLOAT32);
    cr_assert_eq(y.ndim, 3);
    cr_assert(y.shape[0] == b && y.shape[1] == s && y.shape[2] == l->e, "wrong output shape");
    size_t n = (size_t)b * s * l->e;
    double *want = malloc(n * sizeof *want);
    ref_layer rl = {l->e,    l->heads, l->w[0], l->w[1], l->w[2],
                    l->w[3], l->w[4],  l->w[5], l->w[6], l->w[7]};
    ref_attention(&rl, b, s, x, mask, options, want);
    ref_error e = ref_compare(y.data, want, n);
    free(want);
    cr_expect_leq(e.relative_l2, 1e-5, "relative L2 error %g", e.relative_l2);
    cr_expect_leq(e.max_abs, 1e-4 * e.max_ref, "max abs error %g, max|ref| %g", e.max_abs,
                  e.max_ref);
    return y.data; /* the caller frees */
}

/* The common case: E 32, 4 heads, batch 2, seq 7. */
enum { E = 32, H = 4, B = 2, S = 7 };

typedef struct fixture {
    layer l;
    float *x;
    const char *w_path, *x_path, *y_path;
} fixture;

static fixture fx;

static void make_fixture(void)
{
    make_layer(&fx.l, E, H, 11);
    make_input(&fx.x, B, S, E, 12);
    fx.w_path = tmp_path("w.safetensors");
    fx.x_path = tmp_path("x.npy");
    fx.y_path = tmp_path("y.npy");
    save_layer(fx.w_path, &fx.l);
    int64_t shape[3] = {B, S, E};
    save_f32(fx.x_path, 3, shape, fx.x);
}

static void free_fixture(void)
{
    free_layer(&fx.l);
    free(fx.x);
}

/* ---- usage and exit codes ---- */

Test(cli, help_exits_0)
{
    static run_result r;
    const char *top[] = {"--help", NULL};
    expect_success(&r, top);
    cr_assert(strstr(r.out, "usage"), "stdout:\n%s", r.out);
    const char *cmds[] = {"devices", "attention", "demo"};
    for (int i = 0; i < 3; i++) {
        const char *args[] = {cmds[i], "--help", NULL};
        expect_success(&r, args);
        cr_assert(strstr(r.out, "usage: vkbert"), "stdout of %s --help:\n%s", cmds[i], r.out);
    }
}

Test(cli, version_is_the_libraries)
{
    static run_result r;
    const char *args[] = {"--version", NULL};
    expect_success(&r, args);
    char want[64];
    snprintf(want, sizeof want, "vkbert %d.%d.%d\n", VKBERT_VERSION_MAJOR, VKBERT_VERSION_MINOR,
             VKBERT_VERSION_PATCH);
    cr_assert_str_eq(r.out, want);
}

Test(cli, usage_errors_exit_2)
{
    const char *none[] = {NULL};
    const char *unknown_cmd[] = {"frobnicate", NULL};
    const char *unknown_opt[] = {"demo", "--bogus", "1", NULL};
    const char *missing[] = {"attention", "--weights", "w", "--input", "x", "--heads", "4", NULL};
    const char *bad_int[] = {"demo", "--batch", "two", NULL};
    const char *bad_dropout[] = {"attention", "--dropout", "1.5", NULL};
    const char *bad_seed[] = {"attention", "--seed", "-1", NULL};
    const char *bad_precision[] = {"demo", "--precision", "fp8", NULL};
    static run_result r;
    run_cli(&r, none);
    cr_assert_eq(r.code, 2);
    expect_failure(unknown_cmd, 2, "frobnicate");
    expect_failure(unknown_opt, 2, "--bogus");
    expect_failure(missing, 2, "--output");
    expect_failure(bad_int, 2, "--batch");
    expect_failure(bad_dropout, 2, "--dropout");
    expect_failure(bad_seed, 2, "--seed");
    expect_failure(bad_precision, 2, "fp8");
}

Test(cli, devices_lists_one)
{
    static run_result r;
    const char *args[] = {"devices", NULL};
    expect_success(&r, args);
    cr_assert(strstr(r.out, "device 0:"), "stdout:\n%s", r.out);
    cr_assert(strstr(r.out, "usable"), "stdout:\n%s", r.out);
    cr_assert(strstr(r.out, "subgroup size"), "stdout:\n%s", r.out);
    cr_assert(strstr(r.out, "subgroup size control"), "stdout:\n%s", r.out);
}

Test(cli, demo_small)
{
    static run_result r;
    const char *args[] = {"demo", "--batch", "1", "--seq",        "16", "--embed",
                          "64",   "--heads", "4", "--iterations", "2",  NULL};
    expect_success(&r, args);
    cr_assert(strstr(r.out, "device:"), "stdout:\n%s", r.out);
    cr_assert(strstr(r.out, "GFLOP/s"), "stdout:\n%s", r.out);
    cr_assert(strstr(r.out, "relative L2"), "stdout:\n%s", r.out);
}

Test(cli, demo_fp16)
{
    static run_result r;
    const char *args[] = {"demo",    "--batch",     "1",       "--seq", "16",
                          "--embed", "64",          "--heads", "4",     "--iterations",
                          "1",       "--precision", "fp16",    NULL};
    expect_success(&r, args);
    cr_assert(strstr(r.out, "fp16 bound"), "stdout:\n%s", r.out);
}

/* ---- attention end to end ---- */

Test(cli, attention_f32)
{
    static run_result r;
    const char *args[] = {"attention", "--weights", fx.w_path,  "--input", fx.x_path,
                          "--heads",   "4",         "--output", fx.y_path, NULL};
    expect_success(&r, args);
    free(check_output(fx.y_path, &fx.l, B, S, fx.x, NULL, NULL));
}

Test(cli, attention_f16_prefixed)
{
    save_layer_ex(fx.w_path, &fx.l, "attn.", ST_F16, -1, -1);
    for (int i = 0; i < 8; i++) /* the reference sees the weights the file holds */
        for (size_t k = 0; k < (i % 2 ? (size_t)E : (size_t)E * E); k++)
            fx.l.w[i][k] = half_to_float(float_to_half(fx.l.w[i][k]));
    static run_result r;
    const char *args[] = {"attention", "--weights", fx.w_path,  "--input", fx.x_path,
                          "--heads",   "4",         "--output", fx.y_path, NULL};
    expect_success(&r, args);
    free(check_output(fx.y_path, &fx.l, B, S, fx.x, NULL, NULL));
}

Test(cli, attention_causal)
{
    static run_result r;
    const char *args[] = {"attention", "--weights", fx.w_path,  "--input", fx.x_path, "--heads",
                          "4",         "--causal",  "--output", fx.y_path, NULL};
    expect_success(&r, args);
    ref_options opt = {1, 0.0, 0, 0};
    free(check_output(fx.y_path, &fx.l, B, S, fx.x, NULL, &opt));
}

/* An int64 [B,S] key-padding mask whose second batch is all zeros: those rows are out_bias. */
Test(cli, attention_int64_key_padding)
{
    int64_t mask[B * S];
    float maskf[B * S];
    for (int i = 0; i < B * S; i++)
        mask[i] = i < S ? (i % 3 != 1) * 7 : 0;
    for (int i = 0; i < B * S; i++)
        maskf[i] = mask[i] != 0;
    int64_t shape[2] = {B, S};
    const char *m_path = tmp_path("mask.npy");
    write_npy(m_path, "<i8", 2, shape, mask, sizeof mask);
    static run_result r;
    const char *args[] = {"attention", "--weights", fx.w_path, "--input",  fx.x_path, "--heads",
                          "4",         "--mask",    m_path,    "--output", fx.y_path, NULL};
    expect_success(&r, args);
    ref_mask rm = {maskf, {S, 0, 0, 1}};
    float *y = check_output(fx.y_path, &fx.l, B, S, fx.x, &rm, NULL);
    for (int i = 0; i < S; i++)
        for (int c = 0; c < E; c++)
            cr_assert_float_eq(y[(size_t)(S + i) * E + c], fx.l.w[7][c], 1e-6,
                               "y[1][%d][%d] is not out_proj.bias", i, c);
    free(y);
}

/* A bool [S,S] banded mask shared by the batch. */
Test(cli, attention_bool_band)
{
    uint8_t mask[S * S];
    float maskf[S * S];
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++)
            mask[i * S + j] = abs(i - j) <= 2, maskf[i * S + j] = abs(i - j) <= 2;
    int64_t shape[2] = {S, S};
    const char *m_path = tmp_path("band.npy");
    write_npy(m_path, "|b1", 2, shape, mask, sizeof mask);
    static run_result r;
    const char *args[] = {"attention", "--weights", fx.w_path, "--input",  fx.x_path, "--heads",
                          "4",         "--mask",    m_path,    "--output", fx.y_path, NULL};
    expect_success(&r, args);
    ref_mask rm = {maskf, {0, 0, S, 1}};
    free(check_output(fx.y_path, &fx.l, B, S, fx.x, &rm, NULL));
}

static void run_dropout(const char *seed, const char *out)
{
    static run_result r;
    const char *args[] = {"attention", "--weights", fx.w_path,   "--input", fx.x_path,
                          "--heads",   "4",         "--dropout", "0.3",     "--seed",
                          seed,        "--output",  out,         NULL};
    expect_success(&r, args);
}

Test(cli, attention_dropout_seeded)
{
    const char *a = tmp_path("a.npy"), *b = tmp_path("b.npy"), *c = tmp_path("c.npy");
    run_dropout("12345678901234", a);
    run_dropout("12345678901234", b);
    run_dropout("99", c);
    static uint8_t ba[16384], bb[16384], bc[16384];
    size_t na = read_file(a, ba, sizeof ba), nb = read_file(b, bb, sizeof bb);
    size_t nc = read_file(c, bc, sizeof bc);
    cr_assert(na == nb && memcmp(ba, bb, na) == 0, "the same seed gave different files");
    cr_assert(na == nc && memcmp(ba, bc, na) != 0, "different seeds gave the same file");
    ref_options opt = {0, 0.3, 12345678901234ull, 0};
    free(check_output(a, &fx.l, B, S, fx.x, NULL, &opt));
}

/* ---- malformed files: exit 1, a message naming the file, no crash ---- */

static void expect_attention_failure(const char *w, const char *x, const char *mask,
                                     const char *needle)
{
    const char *args[] = {"attention", "--weights", w,          "--input", x,
                          "--heads",   "4",         "--output", fx.y_path, mask ? "--mask" : NULL,
                          mask,        NULL};
    expect_failure(args, 1, needle);
}

Test(cli, weights_truncated)
{
    truncate_file(fx.w_path, 0.5);
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.w_path);
}

Test(cli, weights_header_past_end)
{
    uint8_t bytes[8 + 2] = {0x00, 0x10, 0, 0, 0, 0, 0, 0, '{', '}'}; /* 4096-byte header */
    write_bytes(fx.w_path, bytes, sizeof bytes);
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.w_path);
}

Test(cli, weights_missing_file)
{
    const char *w = tmp_path("absent.safetensors");
    expect_attention_failure(w, fx.x_path, NULL, w);
}

/* All 8 tensors of a layer with E = 4, k_proj.weight as I32, written by hand. */
Test(cli, weights_wrong_dtype)
{
    char json[2048] = "{";
    size_t offset = 0;
    for (int i = 0; i < 8; i++) {
        size_t bytes = (i % 2 ? 4 : 16) * 4;
        snprintf(json + strlen(json), sizeof json - strlen(json),
                 "%s\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
                 i ? "," : "", names[i], i == 2 ? "I32" : "F32", i % 2 ? "[4]" : "[4,4]", offset,
                 offset + bytes);
        offset += bytes;
    }
    strcat(json, "}");
    size_t hlen = strlen(json);
    uint8_t *file = calloc(8 + hlen + offset, 1);
    for (int i = 0; i < 8; i++)
        file[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(file + 8, json, hlen);
    write_bytes(fx.w_path, file, 8 + hlen + offset);
    free(file);
    expect_attention_failure(fx.w_path, fx.x_path, NULL, "I32");
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.w_path);
}

Test(cli, weights_wrong_shape)
{
    save_layer_ex(fx.w_path, &fx.l, "layer.0.attention.", ST_F32, -1, 2); /* k [E, E+1] */
    expect_attention_failure(fx.w_path, fx.x_path, NULL, "layer.0.attention.k_proj.weight");
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.w_path);
}

Test(cli, weights_missing_key)
{
    save_layer_ex(fx.w_path, &fx.l, "attn.", ST_F32, 5, -1); /* no v_proj.bias */
    expect_attention_failure(fx.w_path, fx.x_path, NULL, "attn.v_proj.bias");
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.w_path);
}

Test(cli, heads_not_dividing)
{
    const char *args[] = {"attention", "--weights", fx.w_path,  "--input", fx.x_path,
                          "--heads",   "5",         "--output", fx.y_path, NULL};
    expect_failure(args, 1, "--heads 5");
}

Test(cli, input_embed_mismatch)
{
    float *x;
    make_input(&x, B, S, E + 4, 3);
    int64_t shape[3] = {B, S, E + 4};
    save_f32(fx.x_path, 3, shape, x);
    free(x);
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.x_path);
}

Test(cli, input_truncated)
{
    truncate_file(fx.x_path, 0.6);
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.x_path);
}

Test(cli, input_not_float32)
{
    double x[B * S * E] = {0};
    int64_t shape[3] = {B, S, E};
    write_npy(fx.x_path, "<f8", 3, shape, x, sizeof x);
    expect_attention_failure(fx.w_path, fx.x_path, NULL, "float32");
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.x_path);
}

Test(cli, input_wrong_ndim)
{
    int64_t shape[2] = {B * S, E};
    save_f32(fx.x_path, 2, shape, fx.x);
    expect_attention_failure(fx.w_path, fx.x_path, NULL, fx.x_path);
}

Test(cli, mask_not_broadcasting)
{
    float mask[3 * 5];
    for (int i = 0; i < 15; i++)
        mask[i] = 1.0f;
    int64_t shape[2] = {3, 5};
    const char *m_path = tmp_path("bad_mask.npy");
    save_f32(m_path, 2, shape, mask);
    expect_attention_failure(fx.w_path, fx.x_path, m_path, m_path);
    expect_attention_failure(fx.w_path, fx.x_path, m_path, "mask");
}

Test(cli, mask_wrong_dtype)
{
    double mask[S] = {1, 1, 1, 1, 1, 1, 1};
    int64_t shape[1] = {S};
    const char *m_path = tmp_path("f64_mask.npy");
    write_npy(m_path, "<f8", 1, shape, mask, sizeof mask);
    expect_attention_failure(fx.w_path, fx.x_path, m_path, m_path);
}
