/* Tests for src/io: half conversions, .npy and safetensors loading/saving, and every kind of
 * malformed file the loaders must refuse with a message naming the file. */
#define _POSIX_C_SOURCE 200809L

#include "support.h"
#include "io/half.h"
#include "io/io_error.h"
#include "io/npy.h"
#include "io/safetensors.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- temp directory and file helpers ---- */

static char tmpdir[64];

static void setup(void)
{
    strcpy(tmpdir, "/tmp/vkbert_io_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp failed");
}

static void teardown(void)
{
    test_remove_dir(tmpdir);
}

static void tmp_path(char *out, const char *name)
{
    snprintf(out, 256, "%s/%s", tmpdir, name);
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static size_t read_bytes(const char *path, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* Writes an .npy file by hand: magic, version, header dict padded to 64 bytes, then data. */
static void write_npy(const char *path, int major, const char *dict, const void *data, size_t n)
{
    uint8_t buf[4096];
    size_t pre = major == 1 ? 10 : 12;
    size_t len = strlen(dict);
    size_t hlen = (pre + len + 1 + 63) / 64 * 64 - pre;
    cr_assert(pre + hlen + n <= sizeof buf);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    for (size_t b = 0; b < pre - 8; b++)
        buf[8 + b] = (uint8_t)(hlen >> (8 * b));
    memcpy(buf + pre, dict, len);
    memset(buf + pre + len, ' ', hlen - len);
    buf[pre + hlen - 1] = '\n';
    if (n) memcpy(buf + pre + hlen, data, n);
    write_bytes(path, buf, pre + hlen + n);
}

/* Writes a safetensors file with an exact header text (no padding). */
static void write_st(const char *path, const char *json, const void *data, size_t n)
{
    uint8_t buf[4096];
    size_t len = strlen(json);
    cr_assert(8 + len + n <= sizeof buf);
    for (int b = 0; b < 8; b++)
        buf[b] = (uint8_t)((uint64_t)len >> (8 * b));
    memcpy(buf + 8, json, len);
    if (n) memcpy(buf + 8 + len, data, n);
    write_bytes(path, buf, 8 + len + n);
}

static void expect_npy_error(const char *path, const char *word)
{
    npy_array a;
    memset(&a, 0x5a, sizeof a);
    char err[512] = "";
    cr_assert_eq(npy_load(path, &a, err, sizeof err), -1, "%s should not load", path);
    cr_assert_not_null(strstr(err, path), "message '%s' does not name the file", err);
    cr_assert_not_null(strstr(err, word), "message '%s' does not mention '%s'", err, word);
    cr_assert_null(a.data);
    cr_assert_eq(a.count, 0);
    npy_free(&a);
}

static void expect_st_error(const char *path, const char *word)
{
    st_file f;
    memset(&f, 0x5a, sizeof f);
    char err[512] = "";
    cr_assert_eq(st_load(path, &f, err, sizeof err), -1, "%s should not load", path);
    cr_assert_not_null(strstr(err, path), "message '%s' does not name the file", err);
    cr_assert_not_null(strstr(err, word), "message '%s' does not mention '%s'", err, word);
    cr_assert_null(f.buffer);
    cr_assert_null(f.tensors);
    cr_assert_eq(f.count, 0);
    st_free(&f);
}

/* ---- half ---- */

Test(half, exact_values)
{
    static const struct {
        uint16_t h;
        float f;
    } cases[] = {
        {0x3c00, 1.0f},
        {0xc100, -2.5f},
        {0x7bff, 65504.0f},
        {0x0001, 0x1p-24f},
        {0x03ff, 1023 * 0x1p-24f},
        {0x0400, 0x1p-14f},
        {0x3555, 0.333251953125f},
        {0x7c00, INFINITY},
        {0xfc00, -INFINITY},
        {0x0000, 0.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(half_to_float(cases[i].h), cases[i].f, "half 0x%04x", cases[i].h);
        cr_assert_eq(float_to_half(cases[i].f), cases[i].h, "float %g", (double)cases[i].f);
    }
    cr_assert_eq(float_to_half(-0.0f), 0x8000);
    cr_assert(signbit(half_to_float(0x8000)) && half_to_float(0x8000) == 0.0f);
}

Test(half, nan_and_overflow)
{
    uint16_t h = float_to_half(NAN);
    cr_assert_eq(h & 0x7c00, 0x7c00);
    cr_assert_neq(h & 0x03ff, 0, "NaN must not become infinity");
    cr_assert(isnan(half_to_float(0x7e00)));
    cr_assert(isnan(half_to_float(0xfc01)));
    cr_assert_eq(float_to_half(65519.99f), 0x7bff);
    cr_assert_eq(float_to_half(65520.0f), 0x7c00, "65520 ties to even, which is inf");
    cr_assert_eq(float_to_half(-1e10f), 0xfc00);
    cr_assert_eq(float_to_half(1e-10f), 0x0000);
}

Test(half, round_to_nearest_even)
{
    cr_assert_eq(float_to_half(1.0f + 0x1p-11f), 0x3c00, "tie rounds down to even");
    cr_assert_eq(float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02, "tie rounds up to even");
    cr_assert_eq(float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01, "above tie rounds up");
    cr_assert_eq(float_to_half(1.0f + 0x1p-11f - 0x1p-20f), 0x3c00, "below tie rounds down");
    cr_assert_eq(float_to_half(0x1p-25f), 0x0000, "subnormal tie to even zero");
    cr_assert_eq(float_to_half(3 * 0x1p-25f), 0x0002, "subnormal tie up to even");
    cr_assert_eq(float_to_half(0x1p-25f * 1.25f), 0x0001);
    cr_assert_eq(float_to_half(1023.5f * 0x1p-24f), 0x0400, "rounds into the normal range");
    cr_assert_eq(float_to_half(2047.5f), 0x6800, "mantissa carry bumps the exponent");
}

Test(half, all_bit_patterns_round_trip)
{
    int nans = 0;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = half_to_float((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            cr_assert(isnan(f));
            cr_assert(isnan(half_to_float(float_to_half(f))));
            nans++;
            continue;
        }
        cr_assert_eq(float_to_half(f), h, "0x%04x -> %g -> 0x%04x", h, (double)f, float_to_half(f));
    }
    cr_assert_eq(nans, 2 * 1023);
}

Test(half, bf16)
{
    cr_assert_eq(bf16_to_float(0x3f80), 1.0f);
    cr_assert_eq(bf16_to_float(0xc020), -2.5f);
    cr_assert_eq(bf16_to_float(0x7f80), INFINITY);
    cr_assert(isnan(bf16_to_float(0x7fc0)));
}

/* ---- npy ---- */

TestSuite(npy, .init = setup, .fini = teardown);

Test(npy, f32_round_trip_2d)
{
    char p[256], err[512] = "";
    tmp_path(p, "a.npy");
    const int64_t shape[2] = {2, 3};
    const float v[6] = {1.5f, -2.0f, 3.25f, 1e-3f, -7e8f, 42.0f};
    cr_assert_eq(npy_save_f32(p, 2, shape, v, err, sizeof err), 0, "%s", err);

    uint8_t raw[512];
    size_t n = read_bytes(p, raw, sizeof raw);
    cr_assert_eq(memcmp(raw, "\x93NUMPY\x01\x00", 8), 0);
    size_t hlen = raw[8] | (size_t)raw[9] << 8;
    cr_assert_eq((10 + hlen) % 64, 0, "data must start at a multiple of 64");
    cr_assert_eq(raw[10 + hlen - 1], '\n');
    cr_assert_eq(n, 10 + hlen + sizeof v);
    cr_assert_not_null(strstr((char *)raw + 10, "'shape': (2, 3)"));

    npy_array a;
    cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.dtype, NPY_FLOAT32);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 2);
    cr_assert_eq(a.shape[1], 3);
    cr_assert_eq(a.count, 6);
    cr_assert_eq(a.item_size, 4);
    float out[6];
    npy_to_f32(&a, out);
    cr_assert_arr_eq(out, v, sizeof v);
    npy_free(&a);
    cr_assert_null(a.data);
}

Test(npy, f32_round_trip_0d_and_1d)
{
    char p[256], err[512] = "";
    npy_array a;
    tmp_path(p, "scalar.npy");
    const float s = -3.75f;
    cr_assert_eq(npy_save_f32(p, 0, NULL, &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.ndim, 0);
    cr_assert_eq(a.count, 1);
    float out[5];
    npy_to_f32(&a, out);
    cr_assert_eq(out[0], s);
    npy_free(&a);

    tmp_path(p, "vec.npy");
    const int64_t shape[1] = {5};
    const float v[5] = {5, 4, 3, 2, 1};
    cr_assert_eq(npy_save_f32(p, 1, shape, v, err, sizeof err), 0, "%s", err);
    uint8_t raw[256];
    read_bytes(p, raw, sizeof raw);
    cr_assert_not_null(strstr((char *)raw + 10, "(5,)"), "1-d shape must be a Python tuple");
    cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.ndim, 1);
    cr_assert_eq(a.shape[0], 5);
    npy_to_f32(&a, out);
    cr_assert_arr_eq(out, v, sizeof v);
    npy_free(&a);
}

Test(npy, empty_dimension)
{
    char p[256], err[512] = "";
    npy_array a;
    tmp_path(p, "empty.npy");
    const int64_t shape[2] = {0, 3};
    cr_assert_eq(npy_save_f32(p, 2, shape, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.count, 0);
    cr_assert_eq(a.shape[1], 3);
    npy_free(&a);
}

Test(npy, every_dtype)
{
    const float f4[3] = {1.5f, -2.0f, 1e20f};
    const uint16_t f2[3] = {0x3c00, 0xc100, 0x7bff};
    const double f8[3] = {0.1, -1e300, 3.0};
    const uint8_t b1[3] = {0, 1, 1};
    const uint8_t u1[3] = {0, 200, 255};
    const int32_t i4[3] = {-7, 2147483647, 12};
    const int64_t i8[3] = {-5, 1LL << 40, 9};
    static const char *names[] = {"float32", "float16", "float64", "bool",
                                  "uint8",   "int32",   "int64"};
    const struct {
        const char *descr;
        npy_dtype dtype;
        const void *data;
        size_t size;
        float expect[3];
    } cases[] = {
        {"<f4", NPY_FLOAT32, f4, 4, {1.5f, -2.0f, 1e20f}},
        {"=f4", NPY_FLOAT32, f4, 4, {1.5f, -2.0f, 1e20f}},
        {"<f2", NPY_FLOAT16, f2, 2, {1.0f, -2.5f, 65504.0f}},
        {"<f8", NPY_FLOAT64, f8, 8, {0.1f, -INFINITY, 3.0f}},
        {"|b1", NPY_BOOL, b1, 1, {0.0f, 1.0f, 1.0f}},
        {"<b1", NPY_BOOL, b1, 1, {0.0f, 1.0f, 1.0f}},
        {"|u1", NPY_UINT8, u1, 1, {0.0f, 200.0f, 255.0f}},
        {"u1", NPY_UINT8, u1, 1, {0.0f, 200.0f, 255.0f}},
        {"<i4", NPY_INT32, i4, 4, {-7.0f, 2147483648.0f, 12.0f}},
        {"<i8", NPY_INT64, i8, 8, {-5.0f, 1099511627776.0f, 9.0f}},
    };
    char p[256], err[512] = "", dict[128];
    tmp_path(p, "t.npy");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (3,), }",
                 cases[i].descr);
        write_npy(p, 1, dict, cases[i].data, 3 * cases[i].size);
        npy_array a;
        cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "%s: %s", cases[i].descr, err);
        cr_assert_eq(a.dtype, cases[i].dtype, "%s", cases[i].descr);
        cr_assert_eq(a.item_size, cases[i].size);
        cr_assert_str_eq(npy_dtype_name(a.dtype), names[a.dtype]);
        float out[3];
        npy_to_f32(&a, out);
        for (int k = 0; k < 3; k++)
            cr_assert_eq(out[k], cases[i].expect[k], "%s[%d] = %g", cases[i].descr, k,
                         (double)out[k]);
        npy_free(&a);
    }
}

Test(npy, versions_2_and_3)
{
    const float v[4] = {9, -8, 7, -6};
    char p[256], err[512] = "";
    tmp_path(p, "v.npy");
    for (int major = 2; major <= 3; major++) {
        write_npy(p, major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", v,
                  sizeof v);
        npy_array a;
        cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "v%d: %s", major, err);
        cr_assert_eq(a.ndim, 2);
        cr_assert_eq(a.count, 4);
        float out[4];
        npy_to_f32(&a, out);
        cr_assert_arr_eq(out, v, sizeof v);
        npy_free(&a);
    }
}

Test(npy, header_variants)
{
    static const char *dicts[] = {
        "{'shape': (2,3), 'descr': '<f4', 'fortran_order': False}",
        "{ \"fortran_order\" : False , \"shape\" : ( 2 , 3 , ) , \"descr\" : \"<f4\" , }",
        "{'descr':'<f4','fortran_order':False,'shape':(2L, 3L)}",
    };
    const float v[6] = {1, 2, 3, 4, 5, 6};
    char p[256], err[512] = "";
    tmp_path(p, "h.npy");
    for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++) {
        write_npy(p, 1, dicts[i], v, sizeof v);
        npy_array a;
        cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "%s: %s", dicts[i], err);
        cr_assert_eq(a.ndim, 2);
        cr_assert_eq(a.shape[0], 2);
        cr_assert_eq(a.shape[1], 3);
        npy_free(&a);
    }
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4)}", v, 16);
    npy_array a;
    cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.ndim, 1);
    cr_assert_eq(a.shape[0], 4);
    npy_free(&a);
}

Test(npy, malformed_headers)
{
    static const struct {
        const char *dict;
        const char *word;
    } cases[] = {
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", "big-endian"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", "Fortran"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", "unsupported dtype"},
        {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", "byte order"},
        {"{'descr': '<f4', 'fortran_order': False, }", "missing key 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", "negative"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", "8"},
        {"{'descr': '<f4', 'fortran_order': Nope, 'shape': (2,), }", "fortran_order"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "twice"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unknown key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "after"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "shape"},
        {"{'descr: '<f4'", "malformed"},
        {"not a dict", "malformed"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",
         "too large"},
    };
    const float v[2] = {1, 2};
    char p[256];
    tmp_path(p, "bad.npy");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_npy(p, 1, cases[i].dict, v, sizeof v);
        expect_npy_error(p, cases[i].word);
    }
}

Test(npy, malformed_files)
{
    char p[256];
    const float v[6] = {1, 2, 3, 4, 5, 6};
    tmp_path(p, "empty.npy");
    write_bytes(p, "", 0);
    expect_npy_error(p, "empty");

    tmp_path(p, "magic.npy");
    write_bytes(p, "\x93NUMPX\x01\x00\x10\x00{}", 12);
    expect_npy_error(p, "magic");
    cr_assert_eq(io_last_kind(), IO_MALFORMED);

    tmp_path(p, "short.npy");
    write_bytes(p, "\x93NUMPY\x01", 7);
    expect_npy_error(p, "truncated");
    write_bytes(p, "\x93NUMPY\x02\x00\x10", 9);
    expect_npy_error(p, "truncated");

    tmp_path(p, "version.npy");
    write_bytes(p, "\x93NUMPY\x05\x00\x02\x00{}", 12);
    expect_npy_error(p, "version 5.0");

    tmp_path(p, "hlen.npy");
    write_bytes(p, "\x93NUMPY\x01\x00\xff\x7f{'descr'", 17);
    expect_npy_error(p, "header length 32767 runs past the end of the file (17 bytes)");

    tmp_path(p, "trunc.npy");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", v, 20);
    expect_npy_error(p, "needs 24 bytes, file has 20");

    tmp_path(p, "long.npy");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", v, 24);
    expect_npy_error(p, "needs only 20");

    tmp_path(p, "missing.npy");
    expect_npy_error(p, "cannot open");
    cr_assert_eq(io_last_kind(), IO_UNREADABLE);
    expect_npy_error(tmpdir, "cannot read");
    cr_assert_eq(io_last_kind(), IO_UNREADABLE);
}

Test(npy, save_rejects_bad_arguments)
{
    char p[256], err[512] = "";
    tmp_path(p, "s.npy");
    const int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t neg[1] = {-1};
    const float v = 1.0f;
    cr_assert_eq(npy_save_f32(p, 9, shape, &v, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, p));
    cr_assert_eq(npy_save_f32(p, 1, neg, &v, err, sizeof err), -1);
    cr_assert_eq(npy_save_f32(p, 1, shape, NULL, err, sizeof err), -1);
    cr_assert_eq(access(p, F_OK), -1, "nothing must be written");
}

/* ---- safetensors ---- */

TestSuite(st, .init = setup, .fini = teardown);

Test(st, round_trip)
{
    char p[256], err[512] = "";
    tmp_path(p, "w.safetensors");
    const float a[6] = {1.5f, -2.0f, 3.25f, 1e-3f, -7e8f, 42.0f};
    const float b[3] = {1.0f, -2.5f, 1.0f + 0x1p-11f}; /* the last rounds to 1.0 in F16 */
    const float c[1] = {-0.125f};
    const char *names[3] = {"half.weight", "layer.0.w", "scalar"};
    const st_dtype dtypes[3] = {ST_F16, ST_F32, ST_F32};
    const int ndims[3] = {1, 2, 0};
    const int64_t sb[1] = {3}, sa[2] = {2, 3};
    const int64_t *shapes[3] = {sb, sa, NULL};
    const float *data[3] = {b, a, c};
    cr_assert_eq(st_save(p, 3, names, dtypes, ndims, shapes, data, err, sizeof err), 0, "%s", err);

    uint8_t raw[1024];
    size_t n = read_bytes(p, raw, sizeof raw);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | raw[i];
    cr_assert_eq(hlen % 8, 0, "header must be padded to 8 bytes");
    cr_assert_eq(raw[8], '{');
    cr_assert_eq(n, 8 + hlen + 6 * 4 + 4 + 3 * 2);

    st_file f;
    cr_assert_eq(st_load(p, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.count, 3);
    cr_assert_str_eq(f.tensors[0].name, "half.weight", "header keeps the caller's order");
    const st_tensor *t = st_find(&f, "layer.0.w");
    cr_assert_not_null(t);
    cr_assert_eq(t->dtype, ST_F32);
    cr_assert_eq(t->ndim, 2);
    cr_assert_eq(t->shape[1], 3);
    cr_assert_eq(t->nbytes, 24);
    cr_assert_eq(((const uint8_t *)t->data - f.buffer) % 4, 0, "F32 data stays aligned");
    float out[6];
    cr_assert_eq(st_to_f32(t, out), 0);
    cr_assert_arr_eq(out, a, sizeof a);

    t = st_find(&f, "half.weight");
    cr_assert_eq(t->dtype, ST_F16);
    cr_assert_eq(st_to_f32(t, out), 0);
    cr_assert_eq(out[0], 1.0f);
    cr_assert_eq(out[1], -2.5f);
    cr_assert_eq(out[2], 1.0f);

    t = st_find(&f, "scalar");
    cr_assert_eq(t->ndim, 0);
    cr_assert_eq(t->count, 1);
    cr_assert_eq(st_to_f32(t, out), 0);
    cr_assert_eq(out[0], -0.125f);
    cr_assert_null(st_find(&f, "nope"));
    st_free(&f);
    cr_assert_null(f.buffer);
}

Test(st, hand_written_dtypes_and_unaligned_offsets)
{
    /* A U8 first puts the F32 at offset 1, so a cast would be misaligned. */
    uint8_t data[1 + 8 + 4 + 8 + 4];
    const float f32[2] = {3.5f, -1.25f};
    const uint16_t bf16[2] = {0x3f80, 0xc020};
    const double f64 = -6.5;
    const uint16_t f16[2] = {0x7bff, 0x0001};
    data[0] = 7;
    memcpy(data + 1, f32, 8);
    memcpy(data + 9, bf16, 4);
    memcpy(data + 13, &f64, 8);
    memcpy(data + 21, f16, 4);
    const char *json = "{\"__metadata__\":{\"format\":\"pt\"},"
                       "\"u\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                       "\"f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]},"
                       "\"b\":{\"dtype\":\"BF16\",\"shape\":[1,2],\"data_offsets\":[9,13]},"
                       "\"d\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[13,21]},"
                       "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[21,25]},"
                       "\"z\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[25,25]}}";
    char p[256], err[512] = "";
    tmp_path(p, "hand.safetensors");
    write_st(p, json, data, sizeof data);
    st_file f;
    cr_assert_eq(st_load(p, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.count, 6, "__metadata__ is not a tensor");
    float out[2];
    cr_assert_eq(st_to_f32(st_find(&f, "f"), out), 0);
    cr_assert_eq(out[0], 3.5f);
    cr_assert_eq(out[1], -1.25f);
    cr_assert_eq(st_to_f32(st_find(&f, "b"), out), 0);
    cr_assert_eq(out[0], 1.0f);
    cr_assert_eq(out[1], -2.5f);
    cr_assert_eq(st_to_f32(st_find(&f, "d"), out), 0);
    cr_assert_eq(out[0], -6.5f);
    cr_assert_eq(st_to_f32(st_find(&f, "h"), out), 0);
    cr_assert_eq(out[0], 65504.0f);
    cr_assert_eq(out[1], 0x1p-24f);
    const st_tensor *u = st_find(&f, "u");
    cr_assert_eq(u->dtype, ST_U8);
    cr_assert_eq(*(const uint8_t *)u->data, 7);
    cr_assert_eq(st_to_f32(u, out), -1, "U8 is not a float dtype");
    cr_assert_eq(st_to_f32(st_find(&f, "z"), out), -1);
    cr_assert_str_eq(st_dtype_name(ST_BF16), "BF16");
    st_free(&f);
}

Test(st, malformed_headers)
{
    static const struct {
        const char *json;
        const char *word;
    } cases[] = {
        {"{\"a\":", "not valid JSON"},
        {"[1, 2]", "not a JSON object"},
        {"{\"a\":[1]}", "'a' is not a JSON object"},
        {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", "'a' has no dtype"},
        {"{\"a\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}", "dtype"},
        {"{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,8]}}", "unknown dtype"},
        {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", "'a' has no shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", "not an array"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", "non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", "non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", "shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}",
         "9 dimensions"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", "'a' has no data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", "after end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,80]}}", "past the data"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
         "'a': data_offsets give 8 bytes but 3 F32 elements need 12"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1048576,1048576,1048576,1048576],"
         "\"data_offsets\":[0,8]}}",
         "too large"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}",
         "non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
         "twice"},
    };
    const float v[4] = {1, 2, 3, 4};
    char p[256];
    tmp_path(p, "bad.safetensors");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_st(p, cases[i].json, v, 8);
        expect_st_error(p, cases[i].word);
    }
    /* A NUL inside the header must not cut the JSON short silently. */
    write_bytes(p, "\x04\0\0\0\0\0\0\0{}\0 ", 12);
    expect_st_error(p, "NUL");
}

Test(st, malformed_files)
{
    char p[256];
    tmp_path(p, "empty.safetensors");
    write_bytes(p, "", 0);
    expect_st_error(p, "file is 0 bytes, shorter than the 8-byte header length");

    tmp_path(p, "short.safetensors");
    write_bytes(p, "\x02\0\0\0", 4);
    expect_st_error(p, "4 bytes");

    tmp_path(p, "zero.safetensors");
    write_bytes(p, "\0\0\0\0\0\0\0\0{}", 10);
    expect_st_error(p, "header length is 0");

    tmp_path(p, "weights.safetensors");
    uint8_t buf[120] = {0x9f, 0x86, 0x01}; /* 99999 */
    memcpy(buf + 8, "{}", 2);
    write_bytes(p, buf, sizeof buf);
    expect_st_error(p, "header length 99999 runs past the end of the file (120 bytes)");

    tmp_path(p, "huge.safetensors");
    write_bytes(p, "\xff\xff\xff\xff\xff\xff\xff\xff{}", 10);
    expect_st_error(p, "runs past the end");

    tmp_path(p, "missing.safetensors");
    expect_st_error(p, "cannot open");
    expect_st_error(tmpdir, "cannot read");
}

Test(st, save_rejects_bad_arguments)
{
    char p[256], err[512] = "";
    tmp_path(p, "s.safetensors");
    const float v[2] = {1, 2};
    const int64_t s2[1] = {2}, neg[1] = {-2};
    const float *data[2] = {v, v};
    const int ndims[2] = {1, 1};
    const int64_t *shapes[2] = {s2, s2};
    const char *dup[2] = {"x", "x"};
    const st_dtype f32[2] = {ST_F32, ST_F32}, bf16[2] = {ST_BF16, ST_F32};
    const char *names[2] = {"x", "y"};
    cr_assert_eq(st_save(p, 2, dup, f32, ndims, shapes, data, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "twice"), "%s", err);
    cr_assert_eq(st_save(p, 2, names, bf16, ndims, shapes, data, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "F32 and F16"), "%s", err);
    const int64_t *bad_shapes[2] = {s2, neg};
    cr_assert_eq(st_save(p, 2, names, f32, ndims, bad_shapes, data, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, p), "%s", err);
    cr_assert_eq(access(p, F_OK), -1, "nothing must be written");

    st_file f;
    cr_assert_eq(st_save(p, 0, NULL, NULL, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st_load(p, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.count, 0);
    st_free(&f);
}

/* ---- out of host memory ---- */

/* A sanitizer reserves terabytes of address space for its shadow: no cap can be set under it. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_ADDRESS_CAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define NO_ADDRESS_CAP 1
#endif
#endif

/* Caps this process's address space (Criterion runs each test in a process of its own) at
 * what it uses now plus `room` bytes, so that any larger allocation fails as on a host out of
 * memory. Returns the old limit to restore. */
static struct rlimit cap_address_space(size_t room)
{
    struct rlimit old;
    cr_assert_eq(getrlimit(RLIMIT_AS, &old), 0);
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    struct rlimit capped = {pages * (size_t)sysconf(_SC_PAGESIZE) + room, old.rlim_max};
    cr_assert_eq(setrlimit(RLIMIT_AS, &capped), 0);
    return old;
}

/* A file of `bytes`, all zero past `head`, without writing them (sparse). */
static void write_sparse(const char *path, const void *head, size_t n, size_t bytes)
{
    write_bytes(path, head, n);
    cr_assert_eq(truncate(path, (off_t)bytes), 0);
}

Test(npy, out_of_memory_is_its_own_kind)
{
#ifdef NO_ADDRESS_CAP
    cr_skip_test("a sanitizer's shadow memory leaves no address space to cap");
#else
    char p[256], err[512] = "";
    tmp_path(p, "big.npy");
    /* 256 MiB of float32 zeros: 64M elements */
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (67108864,), }", NULL, 0);
    uint8_t head[4096];
    size_t n = read_bytes(p, head, sizeof head);
    write_sparse(p, head, n, n + ((size_t)256 << 20));
    struct rlimit old = cap_address_space((size_t)64 << 20);
    npy_array a;
    int rc = npy_load(p, &a, err, sizeof err);
    io_kind kind = io_last_kind();
    setrlimit(RLIMIT_AS, &old);
    cr_assert_eq(rc, -1);
    cr_assert_eq(kind, IO_NO_MEMORY, "kind %d: %s", kind, err);
    cr_assert(strstr(err, p) && strstr(err, "out of memory"), "%s", err);
#endif
}

/* Through the public API: a tokenizer folder too large for the memory left is
 * VKBERT_ERROR_OUT_OF_MEMORY, never INVALID_ARGUMENT; a missing folder is INVALID_ARGUMENT. */
Test(npy, out_of_memory_through_the_api)
{
#ifdef NO_ADDRESS_CAP
    cr_skip_test("a sanitizer's shadow memory leaves no address space to cap");
#else
    char p[256];
    tmp_path(p, "vocab.txt");
    write_sparse(p, "[PAD]\n", 6, (size_t)256 << 20);
    vkbert_tokenizer *t = NULL;
    struct rlimit old = cap_address_space((size_t)64 << 20);
    vkbert_status status = vkbert_tokenizer_load(tmpdir, &t);
    setrlimit(RLIMIT_AS, &old);
    cr_assert_eq(status, VKBERT_ERROR_OUT_OF_MEMORY, "%s: %s", vkbert_status_name(status),
                 vkbert_last_error(NULL));
    cr_assert(strstr(vkbert_last_error(NULL), "vocab.txt"), "%s", vkbert_last_error(NULL));
    tmp_path(p, "nothing_here");
    cr_assert_eq(vkbert_tokenizer_load(p, &t), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(NULL), "nothing_here"), "%s", vkbert_last_error(NULL));
#endif
}
