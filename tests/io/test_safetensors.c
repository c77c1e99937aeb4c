/* Tests for src/io's safetensors loading and saving, and every kind of malformed file the
 * loader must refuse with a message naming the file. */
#define _POSIX_C_SOURCE 200809L

#include "support.h"
#include "io/safetensors.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- file helpers ---- */

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
    test_write_bytes(path, buf, 8 + len + n);
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

/* ---- safetensors ---- */

TestSuite(st, .init = test_tmpdir_setup, .fini = test_tmpdir_teardown);

Test(st, round_trip)
{
    char p[256], err[512] = "";
    test_tmp_path(p, "w.safetensors");
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
    size_t n = test_read_bytes(p, raw, sizeof raw);
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
    test_tmp_path(p, "hand.safetensors");
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
    test_tmp_path(p, "bad.safetensors");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_st(p, cases[i].json, v, 8);
        expect_st_error(p, cases[i].word);
    }
    /* A NUL inside the header must not cut the JSON short silently. */
    test_write_bytes(p, "\x04\0\0\0\0\0\0\0{}\0 ", 12);
    expect_st_error(p, "NUL");
}

#define F32(name, n, b, e)                                                                         \
    "\"" name "\":{\"dtype\":\"F32\",\"shape\":[" #n "],\"data_offsets\":[" #b "," #e "]}"

/* The data areas as the safetensors library requires them (each case checked against 0.8.0):
 * in offset order, one after the other from 0 to the end of the file. */
Test(st, data_areas_disjoint_and_contiguous)
{
    static const struct {
        const char *json;
        size_t data;
        const char *word; /* NULL: loads */
    } cases[] = {
        {"{" F32("a", 2, 0, 8) "," F32("b", 2, 0, 8) "}", 8, "must not overlap"},
        {"{" F32("a", 2, 0, 8) "," F32("b", 2, 4, 12) "}", 12,
         "'b': data_offsets begin at 4, not at 8"},
        {"{" F32("a", 1, 0, 4) "," F32("b", 1, 8, 12) "}", 12,
         "'b': data_offsets begin at 8, not at 4"},
        {"{" F32("a", 1, 4, 8) "}", 8, "'a': data_offsets begin at 4, not at 0"},
        {"{" F32("a", 1, 0, 4) "}", 8, "data ends at byte 4 of the 8-byte data area"},
        {"{" F32("a", 2, 0, 8) "," F32("z", 0, 4, 4) "}", 8, "'z'"},
        {"{}", 4, "data ends at byte 0 of the 4-byte data area"},
        {"{" F32("a", 1, 4, 8) "," F32("b", 1, 0, 4) "}", 8, NULL},
        {"{" F32("a", 0, 4, 4) "," F32("z", 0, 4, 4) "," F32("b", 1, 0, 4) "}", 4, NULL},
    };
    const float v[3] = {1, 2, 3};
    char p[256], err[512] = "";
    test_tmp_path(p, "areas.safetensors");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_st(p, cases[i].json, v, cases[i].data);
        if (cases[i].word) {
            expect_st_error(p, cases[i].word);
            continue;
        }
        st_file f;
        cr_assert_eq(st_load(p, &f, err, sizeof err), 0, "case %zu: %s", i, err);
        st_free(&f);
    }
}

Test(st, malformed_files)
{
    char p[256];
    test_tmp_path(p, "empty.safetensors");
    test_write_bytes(p, "", 0);
    expect_st_error(p, "file is 0 bytes, shorter than the 8-byte header length");

    test_tmp_path(p, "short.safetensors");
    test_write_bytes(p, "\x02\0\0\0", 4);
    expect_st_error(p, "4 bytes");

    test_tmp_path(p, "zero.safetensors");
    test_write_bytes(p, "\0\0\0\0\0\0\0\0{}", 10);
    expect_st_error(p, "header length is 0");

    test_tmp_path(p, "weights.safetensors");
    uint8_t buf[120] = {0x9f, 0x86, 0x01}; /* 99999 */
    memcpy(buf + 8, "{}", 2);
    test_write_bytes(p, buf, sizeof buf);
    expect_st_error(p, "header length 99999 runs past the end of the file (120 bytes)");

    test_tmp_path(p, "huge.safetensors");
    test_write_bytes(p, "\xff\xff\xff\xff\xff\xff\xff\xff{}", 10);
    expect_st_error(p, "runs past the end");

    test_tmp_path(p, "missing.safetensors");
    expect_st_error(p, "cannot open");
    expect_st_error(test_tmpdir, "cannot read");
}

Test(st, save_rejects_bad_arguments)
{
    char p[256], err[512] = "";
    test_tmp_path(p, "s.safetensors");
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
