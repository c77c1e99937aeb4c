/* Helpers shared by the tests: a validated context, random layers, comparisons. */
#ifndef VKBERT_TEST_SUPPORT_H
#define VKBERT_TEST_SUPPORT_H

#include <criterion/criterion.h>

#include "reference.h"
#include "test_dir.h"
#include "tiny_bert.h"
#include "vkbert.h"
#include "vkbert_bench.h" /* the tests time and tune too */

#include <math.h>
#include <stdio.h>

/* A context on the default device with validation on; fails the test if it cannot be made. */
vkbert_context *test_context(int timestamps);
/* The same with vkbert_context_options.limits (applied after VKBERT_LIMITS). */
vkbert_context *test_context_limited(const char *limits);
/* Destroys the context after asserting that validation reported nothing. */
void test_context_done(vkbert_context *ctx);
/* Asserts that a context with this limits option is refused as INVALID_ARGUMENT, with no
 * context made and a message containing `words`. */
void test_limits_refused(const char *limits, const char *words);

/* A layer's weights in PyTorch's layout, random like nn.Linear's init. */
typedef struct test_weights {
    int embed_dim;
    float *w[4], *b[4]; /* q, k, v, out */
} test_weights;
test_weights test_weights_random(int embed_dim, uint64_t seed);
void test_weights_free(test_weights *w);
vkbert_attention_weights test_weights_api(const test_weights *w);
ref_layer test_weights_ref(const test_weights *w, int heads);

/* A float array filled with NaN: an element the GPU does not write fails any comparison. */
float *test_poisoned(size_t n);

/* Asserts docs/semantics.md's fp32 bound: relative L2 <= 1e-5 and max error <= 1e-4 * max|ref|. */
void test_assert_fp32_close(const float *got, const double *want, size_t n, const char *what);
/* Relative L2 error <= bound and every element within 10 * bound of the largest reference. */
void test_assert_close(const float *got, const double *want, size_t n, double bound,
                       const char *what);

#define TEST_OK(call)                                                                              \
    do {                                                                                           \
        vkbert_status status_ = (call);                                                            \
        cr_assert_eq(status_, VKBERT_OK, "%s: %s", #call, vkbert_status_name(status_));            \
    } while (0)

#endif

/* ---- the command-line tool ---- */

typedef struct test_cli_result {
    int code; /* the exit status; a death by signal fails the test */
    char out[16384], err[16384];
} test_cli_result;

/* Runs `$VKBERT_CLI args...` (args ends with NULL), stdout and stderr captured through files
 * in `dir`. */
void test_run_cli(const char *dir, const char *const *args, test_cli_result *r);
/* The same with stdout sent to `stdout_path` (such as /dev/full) instead; r->out is empty. */
void test_run_cli_to(const char *dir, const char *stdout_path, const char *const *args,
                     test_cli_result *r);
/* test_run_cli with stdin read from `stdin_path`. */
void test_run_cli_stdin(const char *dir, const char *stdin_path, const char *const *args,
                        test_cli_result *r);
/* A text file's contents, NUL-terminated, at most size - 1 bytes. */
void test_read_text(const char *path, char *out, size_t size);
/* A file of exactly these bytes; the first `cap` bytes of one (its size when smaller). */
void test_write_bytes(const char *path, const void *bytes, size_t n);
size_t test_read_bytes(const char *path, uint8_t *buf, size_t cap);

/* ---- for the kernel tests, which reach the internals ---- */
#include "ops/ops.h"

/* A device buffer holding `n` floats copied from `data`. */
vkb_buffer test_buffer(vkbert_context *ctx, const float *data, size_t n);
void test_buffer_read(vkbert_context *ctx, const vkb_buffer *buffer, float *out, size_t n);
/* fp16 buffers: `data` is rounded to fp16 in place, so a reference sees the stored values;
 * reading converts back to float. */
vkb_buffer test_half_buffer(vkbert_context *ctx, float *data, size_t n);
void test_half_buffer_read(vkbert_context *ctx, const vkb_buffer *buffer, float *out, size_t n);
/* Records the dispatches with barriers between them, submits, waits, releases them. */
void test_run(vkbert_context *ctx, vkb_dispatch *dispatches, uint32_t count);
VkDescriptorPool test_pool(vkbert_context *ctx);
/* test_context_limited where the simd family runs with subgroup shuffles in compute shaders
 * (the kernels that share rows by them); the test is skipped elsewhere (the gpu family,
 * VKBERT_SIMD_SHUFFLE=0, subgroup_operations without shuffle). */
vkbert_context *test_context_sharing(const char *limits);
