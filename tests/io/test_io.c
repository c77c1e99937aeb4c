/* Tests for src/io: half conversions, .npy loading/saving, every kind of malformed file the
 * loader must refuse with a message naming the file, and host memory running out while loading
 * (safetensors: test_safetensors.c). */
#define _POSIX_C_SOURCE 200809L

#include "support.h"
#include "io/half.h"
#include "io/io_error.h"
#include "io/npy.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- file helpers ---- */

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
    test_write_bytes(path, buf, pre + hlen + n);
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

TestSuite(npy, .init = test_tmpdir_setup, .fini = test_tmpdir_teardown);

Test(npy, f32_round_trip_2d)
{
    char p[256], err[512] = "";
    test_tmp_path(p, "a.npy");
    const int64_t shape[2] = {2, 3};
    const float v[6] = {1.5f, -2.0f, 3.25f, 1e-3f, -7e8f, 42.0f};
    cr_assert_eq(npy_save_f32(p, 2, shape, v, err, sizeof err), 0, "%s", err);

    uint8_t raw[512];
    size_t n = test_read_bytes(p, raw, sizeof raw);
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
    test_tmp_path(p, "scalar.npy");
    const float s = -3.75f;
    cr_assert_eq(npy_save_f32(p, 0, NULL, &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(npy_load(p, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.ndim, 0);
    cr_assert_eq(a.count, 1);
    float out[5];
    npy_to_f32(&a, out);
    cr_assert_eq(out[0], s);
    npy_free(&a);

    test_tmp_path(p, "vec.npy");
    const int64_t shape[1] = {5};
    const float v[5] = {5, 4, 3, 2, 1};
    cr_assert_eq(npy_save_f32(p, 1, shape, v, err, sizeof err), 0, "%s", err);
    uint8_t raw[256];
    test_read_bytes(p, raw, sizeof raw);
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
    test_tmp_path(p, "empty.npy");
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
    test_tmp_path(p, "t.npy");
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
    test_tmp_path(p, "v.npy");
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
    test_tmp_path(p, "h.npy");
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
    test_tmp_path(p, "bad.npy");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_npy(p, 1, cases[i].dict, v, sizeof v);
        expect_npy_error(p, cases[i].word);
    }
}

Test(npy, malformed_files)
{
    char p[256];
    const float v[6] = {1, 2, 3, 4, 5, 6};
    test_tmp_path(p, "empty.npy");
    test_write_bytes(p, "", 0);
    expect_npy_error(p, "empty");

    test_tmp_path(p, "magic.npy");
    test_write_bytes(p, "\x93NUMPX\x01\x00\x10\x00{}", 12);
    expect_npy_error(p, "magic");
    cr_assert_eq(io_last_kind(), IO_MALFORMED);

    test_tmp_path(p, "short.npy");
    test_write_bytes(p, "\x93NUMPY\x01", 7);
    expect_npy_error(p, "truncated");
    test_write_bytes(p, "\x93NUMPY\x02\x00\x10", 9);
    expect_npy_error(p, "truncated");

    test_tmp_path(p, "version.npy");
    test_write_bytes(p, "\x93NUMPY\x05\x00\x02\x00{}", 12);
    expect_npy_error(p, "version 5.0");

    test_tmp_path(p, "hlen.npy");
    test_write_bytes(p, "\x93NUMPY\x01\x00\xff\x7f{'descr'", 17);
    expect_npy_error(p, "header length 32767 runs past the end of the file (17 bytes)");

    test_tmp_path(p, "trunc.npy");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", v, 20);
    expect_npy_error(p, "needs 24 bytes, file has 20");

    test_tmp_path(p, "long.npy");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", v, 24);
    expect_npy_error(p, "needs only 20");

    test_tmp_path(p, "missing.npy");
    expect_npy_error(p, "cannot open");
    cr_assert_eq(io_last_kind(), IO_UNREADABLE);
    expect_npy_error(test_tmpdir, "cannot read");
    cr_assert_eq(io_last_kind(), IO_UNREADABLE);
}

Test(npy, save_rejects_bad_arguments)
{
    char p[256], err[512] = "";
    test_tmp_path(p, "s.npy");
    const int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t neg[1] = {-1};
    const float v = 1.0f;
    cr_assert_eq(npy_save_f32(p, 9, shape, &v, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, p));
    cr_assert_eq(npy_save_f32(p, 1, neg, &v, err, sizeof err), -1);
    cr_assert_eq(npy_save_f32(p, 1, shape, NULL, err, sizeof err), -1);
    cr_assert_eq(access(p, F_OK), -1, "nothing must be written");
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

#ifndef NO_ADDRESS_CAP
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
    test_write_bytes(path, head, n);
    cr_assert_eq(truncate(path, (off_t)bytes), 0);
}
#endif

Test(npy, out_of_memory_is_its_own_kind)
{
#ifdef NO_ADDRESS_CAP
    cr_skip_test("a sanitizer's shadow memory leaves no address space to cap");
#else
    char p[256], err[512] = "";
    test_tmp_path(p, "big.npy");
    /* 256 MiB of float32 zeros: 64M elements */
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (67108864,), }", NULL, 0);
    uint8_t head[4096];
    size_t n = test_read_bytes(p, head, sizeof head);
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
    test_tmp_path(p, "vocab.txt");
    write_sparse(p, "[PAD]\n", 6, (size_t)12 << 20); /* under vocab.txt's cap (16 MiB) */
    vkbert_tokenizer *t = NULL;
    struct rlimit old = cap_address_space((size_t)8 << 20);
    vkbert_status status = vkbert_tokenizer_load(test_tmpdir, &t);
    setrlimit(RLIMIT_AS, &old);
    cr_assert_eq(status, VKBERT_ERROR_OUT_OF_MEMORY, "%s: %s", vkbert_status_name(status),
                 vkbert_last_error(NULL));
    cr_assert(strstr(vkbert_last_error(NULL), "vocab.txt"), "%s", vkbert_last_error(NULL));
    test_tmp_path(p, "nothing_here");
    cr_assert_eq(vkbert_tokenizer_load(p, &t), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(NULL), "nothing_here"), "%s", vkbert_last_error(NULL));
#endif
}
