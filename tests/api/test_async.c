/* The encoder on device tensors and asynchronous jobs: each against the host calls (the same
 * kernels, so equal within 1e-6; test_encoder checks those against the double reference),
 * and the device-tensor pass also against the reference itself. */
#include "io/bert_model.h"
#include "reference_bert.h"
#include "support.h"
#include "vk/vk.h"      /* volk first: the test records through the library's loader */
#include "vulkan_app.h" /* examples/: command buffers of the test's own */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
    vkbert_context *ctx;
    vkbert_encoder *encoder;
    bert_config config;
    bert_weights weights;
    char dir[TEST_DIR_SIZE];
} fixture;

static fixture setup(void)
{
    fixture f;
    memset(&f, 0, sizeof f);
    f.config = tiny_bert_config(32, 2, 4, 64, 40, 50);
    test_dir_make(f.dir, "async");
    tiny_bert_write(f.dir, &(tiny_bert){.config = f.config, .seed = 11, .prefix = ""}, &f.weights);
    f.ctx = test_context(0);
    vkbert_status status = vkbert_encoder_load(f.ctx, f.dir, NULL, &f.encoder);
    cr_assert_eq(status, VKBERT_OK, "load: %s", vkbert_last_error(f.ctx));
    return f;
}

static void teardown(fixture *f)
{
    vkbert_encoder_destroy(f->encoder);
    test_context_done(f->ctx);
    bert_weights_free(&f->weights);
    test_dir_remove(f->dir);
}

/* Random ids and types; sequence b keeps its first S - b tokens (at least one). */
typedef struct batch {
    int b, s;
    int32_t ids[256], types[256], mask[256];
    float fmask[256];
} batch;

static batch random_batch(int b, int s, uint64_t seed)
{
    batch x = {.b = b, .s = s};
    ref_rng rng = {seed};
    for (int i = 0; i < b * s; i++) {
        x.ids[i] = (int32_t)ref_uniform(&rng, 0, 50);
        x.types[i] = (int32_t)ref_uniform(&rng, 0, 2);
        x.mask[i] = i % s < (s - i / s > 0 ? s - i / s : 1);
        x.fmask[i] = (float)x.mask[i];
    }
    return x;
}

static void assert_equal(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabsf(got[i] - want[i]) <= 1e-6f * (1 + fabsf(want[i])),
                  "%s[%zu]: %g, the host call's %g", what, i, got[i], want[i]);
}

static vkbert_tensor *tensor(vkbert_context *ctx, vkbert_dtype dtype, int ndim, int64_t a,
                             int64_t b, int64_t c)
{
    int64_t shape[3] = {a, b, c};
    vkbert_tensor *t = NULL;
    TEST_OK(vkbert_tensor_create_typed(ctx, dtype, ndim, shape, &t));
    return t;
}

static void check_device_forward(fixture *f, int b, int s, int with_masks)
{
    vkbert_context *ctx = f->ctx;
    batch x = random_batch(b, s, (uint64_t)(b * 100 + s));
    size_t n = (size_t)b * s, h = 32;
    const int32_t *types = with_masks ? x.types : NULL, *mask = with_masks ? x.mask : NULL;
    float *want = test_poisoned(n * h), *want_pooled = test_poisoned(b * h);
    TEST_OK(vkbert_encoder_forward_host(f->encoder, b, s, x.ids, types, mask, want, want_pooled));

    vkbert_tensor *ids = tensor(ctx, VKBERT_DTYPE_INT32, 2, b, s, 0);
    vkbert_tensor *tt = tensor(ctx, VKBERT_DTYPE_INT32, 2, b, s, 0);
    vkbert_tensor *mt = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, b, s, 0);
    vkbert_tensor *hidden = tensor(ctx, VKBERT_DTYPE_FLOAT32, 3, b, s, (int64_t)h);
    vkbert_tensor *pooled = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, b, (int64_t)h, 0);
    vkbert_tensor *emb = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, b, (int64_t)h, 0);
    TEST_OK(vkbert_tensor_write_int32(ctx, ids, x.ids, n));
    TEST_OK(vkbert_tensor_write_int32(ctx, tt, x.types, n));
    TEST_OK(vkbert_tensor_write(ctx, mt, x.fmask, n));
    float *got = test_poisoned(n * h), *got_pooled = test_poisoned(b * h);
    for (int round = 0; round < 2; round++) { /* the second replays the recorded pass */
        TEST_OK(vkbert_encoder_forward(f->encoder, ids, with_masks ? tt : NULL,
                                       with_masks ? mt : NULL, hidden, pooled));
        TEST_OK(vkbert_tensor_read(ctx, hidden, got, n * h));
        TEST_OK(vkbert_tensor_read(ctx, pooled, got_pooled, b * h));
        assert_equal(got, want, n * h, "hidden");
        assert_equal(got_pooled, want_pooled, b * h, "pooled");
    }
    double *ref = malloc(n * h * 8);
    ref_bert(&f->config, &f->weights, b, s, x.ids, types, mask, ref, NULL);
    ref_error e = ref_compare(got, ref, n * h);
    cr_assert(e.relative_l2 <= 1e-4, "hidden against the reference: relative L2 %.3g",
              e.relative_l2);
    for (int normalize = 0; normalize < 2; normalize++) {
        float *want_emb = test_poisoned(b * h), *got_emb = test_poisoned(b * h);
        TEST_OK(
            vkbert_encoder_embed_host(f->encoder, b, s, x.ids, types, mask, normalize, want_emb));
        TEST_OK(vkbert_encoder_embed(f->encoder, ids, with_masks ? tt : NULL,
                                     with_masks ? mt : NULL, normalize, emb));
        TEST_OK(vkbert_tensor_read(ctx, emb, got_emb, b * h));
        assert_equal(got_emb, want_emb, b * h, "embeddings");
        free(want_emb), free(got_emb);
    }
    vkbert_tensor *all[] = {ids, tt, mt, hidden, pooled, emb};
    for (int i = 0; i < 6; i++)
        vkbert_tensor_destroy(ctx, all[i]);
    free(want), free(want_pooled), free(got), free(got_pooled), free(ref);
}

Test(async, device_tensors_equal_host_calls)
{
    fixture f = setup();
    check_device_forward(&f, 3, 7, 1); /* rows of 7 ids padded to 8: one copy per row */
    check_device_forward(&f, 2, 8, 1);
    check_device_forward(&f, 2, 5, 0);
    teardown(&f);
}

/* Ends `cmd` with the barrier the caller owes after vkbert's copies out, submits it on the
 * context's queue and waits. */
static void submit_commands(vkbert_context *ctx, VkCommandBuffer cmd)
{
    vulkan_app_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    cr_assert_eq(vkEndCommandBuffer(cmd), VK_SUCCESS);
    cr_assert_eq(vulkan_app_submit(ctx->device, ctx->queue, cmd), VK_SUCCESS);
}

/* vkbert_encoder_record into a command buffer of the test's own gives what
 * vkbert_encoder_forward and vkbert_encoder_embed give on the same tensors. */
Test(async, record_matches_device_calls)
{
    enum { B = 3, S = 7, H = 32, N = B * S };
    fixture f = setup();
    vkbert_context *ctx = f.ctx;
    batch x = random_batch(B, S, 77);
    vkbert_tensor *ids = tensor(ctx, VKBERT_DTYPE_INT32, 2, B, S, 0);
    vkbert_tensor *mt = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, B, S, 0);
    vkbert_tensor *hidden = tensor(ctx, VKBERT_DTYPE_FLOAT32, 3, B, S, H);
    vkbert_tensor *emb = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, B, H, 0);
    TEST_OK(vkbert_tensor_write_int32(ctx, ids, x.ids, N));
    TEST_OK(vkbert_tensor_write(ctx, mt, x.fmask, N));
    float *want = test_poisoned(N * H), *want_emb = test_poisoned(B * H);
    TEST_OK(vkbert_encoder_forward(f.encoder, ids, NULL, mt, hidden, NULL));
    TEST_OK(vkbert_tensor_read(ctx, hidden, want, N * H));
    TEST_OK(vkbert_encoder_embed(f.encoder, ids, NULL, mt, 1, emb));
    TEST_OK(vkbert_tensor_read(ctx, emb, want_emb, B * H));

    float *poison = test_poisoned(N * H), *got = test_poisoned(N * H);
    float *got_emb = test_poisoned(B * H);
    TEST_OK(vkbert_tensor_write(ctx, hidden, poison, N * H));
    TEST_OK(vkbert_tensor_write(ctx, emb, poison, B * H));
    VkCommandPool pool;
    VkCommandBuffer cmd;
    cr_assert_eq(vulkan_app_commands(ctx->device, ctx->queue_family, &pool, &cmd), VK_SUCCESS);
    cr_assert_eq(vkbert_encoder_record(f.encoder, cmd, ids, NULL, mt, 1, NULL, NULL, NULL),
                 VKBERT_ERROR_INVALID_ARGUMENT, "no output must be refused");
    TEST_OK(vkbert_encoder_record(f.encoder, cmd, ids, NULL, mt, 1, hidden, NULL, emb));
    submit_commands(ctx, cmd);
    TEST_OK(vkbert_tensor_read(ctx, hidden, got, N * H));
    TEST_OK(vkbert_tensor_read(ctx, emb, got_emb, B * H));
    assert_equal(got, want, N * H, "recorded hidden");
    assert_equal(got_emb, want_emb, B * H, "recorded embeddings");
    vkDestroyCommandPool(ctx->device, pool, NULL);
    cr_expect_eq(vkbert_validation_messages(ctx, NULL, 0), 0);
    vkbert_tensor *all[] = {ids, mt, hidden, emb};
    for (int i = 0; i < 4; i++)
        vkbert_tensor_destroy(ctx, all[i]);
    free(want), free(want_emb), free(poison), free(got), free(got_emb);
    teardown(&f);
}

Test(async, int32_tensors)
{
    fixture f = setup();
    vkbert_tensor *t = tensor(f.ctx, VKBERT_DTYPE_INT32, 2, 3, 5, 0);
    cr_assert_eq(vkbert_tensor_dtype(t), VKBERT_DTYPE_INT32);
    int32_t in[15], out[15];
    for (int i = 0; i < 15; i++)
        in[i] = i * 1000003 - 7, out[i] = -1;
    TEST_OK(vkbert_tensor_write_int32(f.ctx, t, in, 15));
    TEST_OK(vkbert_tensor_read_int32(f.ctx, t, out, 15));
    cr_assert_arr_eq(in, out, sizeof in);
    float floats[15];
    cr_assert_eq(vkbert_tensor_write(f.ctx, t, floats, 15), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(f.ctx), "int32"), "%s", vkbert_last_error(f.ctx));
    cr_assert_eq(vkbert_tensor_read_int32(f.ctx, t, out, 14), VKBERT_ERROR_INVALID_ARGUMENT);
    vkbert_tensor *g = tensor(f.ctx, VKBERT_DTYPE_FLOAT32, 2, 3, 5, 0);
    cr_assert_eq(vkbert_tensor_read_int32(f.ctx, g, out, 15), VKBERT_ERROR_INVALID_ARGUMENT);
    int64_t shape[2] = {3, 5};
    vkbert_tensor *bad = NULL;
    cr_assert_eq(vkbert_tensor_create_typed(f.ctx, VKBERT_DTYPE_INT64, 2, shape, &bad),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    vkbert_tensor_destroy(f.ctx, t);
    vkbert_tensor_destroy(f.ctx, g);
    teardown(&f);
}

Test(async, bad_tensor_arguments)
{
    fixture f = setup();
    vkbert_context *ctx = f.ctx;
    vkbert_tensor *ids = tensor(ctx, VKBERT_DTYPE_INT32, 2, 2, 4, 0);
    vkbert_tensor *fids = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, 2, 4, 0);
    vkbert_tensor *short_mask = tensor(ctx, VKBERT_DTYPE_INT32, 2, 2, 3, 0);
    vkbert_tensor *hidden = tensor(ctx, VKBERT_DTYPE_FLOAT32, 3, 2, 4, 32);
    vkbert_tensor *short_hidden = tensor(ctx, VKBERT_DTYPE_FLOAT32, 3, 2, 3, 32);
    vkbert_tensor *emb = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, 2, 31, 0);
    struct {
        vkbert_status status;
        const char *words;
    } cases[] = {
        {vkbert_encoder_forward(f.encoder, fids, NULL, NULL, hidden, NULL), "input_ids is float32"},
        {vkbert_encoder_forward(f.encoder, ids, NULL, NULL, short_hidden, NULL),
         "hidden has shape"},
        {vkbert_encoder_forward(f.encoder, NULL, NULL, NULL, hidden, NULL), "input_ids is NULL"},
        {vkbert_encoder_forward(f.encoder, ids, NULL, NULL, NULL, NULL), "hidden is NULL"},
        {vkbert_encoder_forward(f.encoder, ids, fids, NULL, hidden, NULL), "token_type_ids"},
        {vkbert_encoder_forward(f.encoder, ids, NULL, short_mask, hidden, NULL),
         "attention_mask has shape"},
        {vkbert_encoder_embed(f.encoder, ids, NULL, NULL, 1, emb), "embeddings has shape"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_assert_eq(cases[i].status, VKBERT_ERROR_INVALID_ARGUMENT, "case %zu", i);
        (void)cases[i].words;
    }
    /* the message of the last one */
    cr_assert(strstr(vkbert_last_error(ctx), "embeddings has shape [2,31]"), "%s",
              vkbert_last_error(ctx));
    cr_assert_eq(vkbert_encoder_forward(NULL, ids, NULL, NULL, hidden, NULL),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    vkbert_tensor *all[] = {ids, fids, short_mask, hidden, short_hidden, emb};
    for (int i = 0; i < 6; i++)
        vkbert_tensor_destroy(ctx, all[i]);
    teardown(&f);
}

/* Every element written (the poison gone) and finite. */
static void assert_finite(const float *got, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(isfinite(got[i]), "%s[%zu]: %g", what, i, got[i]);
}

/* A failed device-tensor call: the status, the message, and outputs written over the poison. */
static void expect_bad_ids(vkbert_context *ctx, vkbert_status status, const char *message,
                           vkbert_tensor *out, size_t n)
{
    cr_assert_eq(status, VKBERT_ERROR_INVALID_ARGUMENT, "%s", vkbert_status_name(status));
    cr_assert(strstr(vkbert_last_error(ctx), message), "%s", vkbert_last_error(ctx));
    float *got = test_poisoned(n);
    TEST_OK(vkbert_tensor_read(ctx, out, got, n));
    assert_finite(got, n, message);
    free(got);
}

/* Ids in device tensors never reach the host: the embedding kernel checks them (vkbert.h). A
 * bad token type reads as type 0, a bad input id embeds as zeros, the call fails saying which,
 * and the next good call on the same tensors (the recorded pass replayed) succeeds. */
Test(async, device_ids_are_checked)
{
    enum { B = 2, S = 5, H = 32, N = B * S };
    fixture f = setup();
    vkbert_context *ctx = f.ctx;
    batch x = random_batch(B, S, 21);
    vkbert_tensor *ids = tensor(ctx, VKBERT_DTYPE_INT32, 2, B, S, 0);
    vkbert_tensor *tt = tensor(ctx, VKBERT_DTYPE_INT32, 2, B, S, 0);
    vkbert_tensor *hidden = tensor(ctx, VKBERT_DTYPE_FLOAT32, 3, B, S, H);
    vkbert_tensor *emb = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, B, H, 0);
    float *poison = test_poisoned(N * H), *want = test_poisoned(N * H), *got = test_poisoned(N * H);
    int32_t bad[N];
    memcpy(bad, x.types, sizeof bad);
    bad[3] = 2, x.types[3] = 0; /* the host call's equivalent */
    TEST_OK(vkbert_encoder_forward_host(f.encoder, B, S, x.ids, x.types, NULL, want, NULL));
    TEST_OK(vkbert_tensor_write_int32(ctx, ids, x.ids, N));
    TEST_OK(vkbert_tensor_write_int32(ctx, tt, bad, N));
    TEST_OK(vkbert_tensor_write(ctx, hidden, poison, N * H));
    expect_bad_ids(ctx, vkbert_encoder_forward(f.encoder, ids, tt, NULL, hidden, NULL),
                   "token_type_ids holds an id outside [0, 2)", hidden, N * H);
    TEST_OK(vkbert_tensor_read(ctx, hidden, got, N * H));
    assert_equal(got, want, N * H, "hidden with a token type read as 0");

    TEST_OK(vkbert_tensor_write_int32(ctx, tt, x.types, N));
    memcpy(bad, x.ids, sizeof bad);
    bad[4] = 50, bad[7] = -3;
    TEST_OK(vkbert_tensor_write_int32(ctx, ids, bad, N));
    TEST_OK(vkbert_tensor_write(ctx, hidden, poison, N * H));
    TEST_OK(vkbert_tensor_write(ctx, emb, poison, B * H));
    expect_bad_ids(ctx, vkbert_encoder_forward(f.encoder, ids, tt, NULL, hidden, NULL),
                   "input_ids holds an id outside [0, 50)", hidden, N * H);
    expect_bad_ids(ctx, vkbert_encoder_embed(f.encoder, ids, tt, NULL, 1, emb),
                   "input_ids holds an id outside [0, 50)", emb, B * H);

    TEST_OK(vkbert_tensor_write_int32(ctx, ids, x.ids, N));
    TEST_OK(vkbert_tensor_write(ctx, hidden, poison, N * H));
    TEST_OK(vkbert_encoder_forward(f.encoder, ids, tt, NULL, hidden, NULL));
    TEST_OK(vkbert_tensor_read(ctx, hidden, got, N * H));
    assert_equal(got, want, N * H, "hidden after the bad calls");
    float *want_emb = test_poisoned(B * H), *got_emb = test_poisoned(B * H);
    TEST_OK(vkbert_encoder_embed_host(f.encoder, B, S, x.ids, x.types, NULL, 1, want_emb));
    TEST_OK(vkbert_encoder_embed(f.encoder, ids, tt, NULL, 1, emb));
    TEST_OK(vkbert_tensor_read(ctx, emb, got_emb, B * H));
    assert_equal(got_emb, want_emb, B * H, "embeddings after the bad calls");
    vkbert_tensor *all[] = {ids, tt, hidden, emb};
    for (int i = 0; i < 4; i++)
        vkbert_tensor_destroy(ctx, all[i]);
    free(poison), free(want), free(got), free(want_emb), free(got_emb);
    teardown(&f);
}

/* Device-tensor masks keep the host API's rule, 0 masks and anything else keeps: an int32
 * mask of 0, 1 and -7, and a float32 mask of 0.0, -0.0, 2.0 and -1.0, give what the host
 * call gives with the 0/1 mask. */
Test(async, int32_and_float_masks)
{
    enum { B = 3, S = 7, H = 32, N = B * S };
    fixture f = setup();
    vkbert_context *ctx = f.ctx;
    batch x = random_batch(B, S, 31);
    int32_t imask[N];
    float fmask[N];
    for (int i = 0; i < N; i++) {
        imask[i] = x.mask[i] ? (i % 2 ? 1 : -7) : 0;
        fmask[i] = x.mask[i] ? (i % 2 ? 2.0f : -1.0f) : (i % 2 ? 0.0f : -0.0f);
    }
    float *want = test_poisoned(N * H), *want_pooled = test_poisoned(B * H);
    float *want_emb = test_poisoned(B * H);
    TEST_OK(
        vkbert_encoder_forward_host(f.encoder, B, S, x.ids, x.types, x.mask, want, want_pooled));
    TEST_OK(vkbert_encoder_embed_host(f.encoder, B, S, x.ids, x.types, x.mask, 0, want_emb));
    vkbert_tensor *ids = tensor(ctx, VKBERT_DTYPE_INT32, 2, B, S, 0);
    vkbert_tensor *tt = tensor(ctx, VKBERT_DTYPE_INT32, 2, B, S, 0);
    vkbert_tensor *masks[2] = {tensor(ctx, VKBERT_DTYPE_INT32, 2, B, S, 0),
                               tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, B, S, 0)};
    vkbert_tensor *hidden = tensor(ctx, VKBERT_DTYPE_FLOAT32, 3, B, S, H);
    vkbert_tensor *pooled = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, B, H, 0);
    vkbert_tensor *emb = tensor(ctx, VKBERT_DTYPE_FLOAT32, 2, B, H, 0);
    TEST_OK(vkbert_tensor_write_int32(ctx, ids, x.ids, N));
    TEST_OK(vkbert_tensor_write_int32(ctx, tt, x.types, N));
    TEST_OK(vkbert_tensor_write_int32(ctx, masks[0], imask, N));
    TEST_OK(vkbert_tensor_write(ctx, masks[1], fmask, N));
    for (int k = 0; k < 2; k++) {
        float *got = test_poisoned(N * H), *got_pooled = test_poisoned(B * H);
        float *got_emb = test_poisoned(B * H);
        TEST_OK(vkbert_tensor_write(ctx, hidden, got, N * H));
        TEST_OK(vkbert_tensor_write(ctx, pooled, got_pooled, B * H));
        TEST_OK(vkbert_tensor_write(ctx, emb, got_emb, B * H));
        TEST_OK(vkbert_encoder_forward(f.encoder, ids, tt, masks[k], hidden, pooled));
        TEST_OK(vkbert_encoder_embed(f.encoder, ids, tt, masks[k], 0, emb));
        TEST_OK(vkbert_tensor_read(ctx, hidden, got, N * H));
        TEST_OK(vkbert_tensor_read(ctx, pooled, got_pooled, B * H));
        TEST_OK(vkbert_tensor_read(ctx, emb, got_emb, B * H));
        const char *what = k ? "float32 mask" : "int32 mask";
        assert_equal(got, want, N * H, what);
        assert_equal(got_pooled, want_pooled, B * H, what);
        assert_equal(got_emb, want_emb, B * H, what);
        free(got), free(got_pooled), free(got_emb);
    }
    vkbert_tensor *all[] = {ids, tt, masks[0], masks[1], hidden, pooled, emb};
    for (int i = 0; i < 7; i++)
        vkbert_tensor_destroy(ctx, all[i]);
    free(want), free(want_pooled), free(want_emb);
    teardown(&f);
}

/* ---- jobs ---- */

static const int shapes[][2] = {{2, 5}, {3, 8}, {1, 3}, {2, 5}, {4, 6}, {3, 8}, {2, 5}};
#define STREAM ((int)(sizeof shapes / sizeof *shapes))

Test(async, stream_equals_sync)
{
    fixture f = setup();
    batch x[STREAM];
    float *want[STREAM], *got[STREAM];
    for (int i = 0; i < STREAM; i++) {
        x[i] = random_batch(shapes[i][0], shapes[i][1], 1000 + (uint64_t)i);
        size_t n = (size_t)x[i].b * 32;
        want[i] = test_poisoned(n), got[i] = test_poisoned(n);
        TEST_OK(vkbert_encoder_embed_host(f.encoder, x[i].b, x[i].s, x[i].ids, x[i].types,
                                          x[i].mask, 1, want[i]));
    }
    vkbert_job *jobs[STREAM];
    for (int i = 0; i < STREAM; i++) { /* two in flight: submit i, then wait for i - 1 */
        TEST_OK(vkbert_encoder_embed_submit(f.encoder, x[i].b, x[i].s, x[i].ids, x[i].types,
                                            x[i].mask, 1, got[i], &jobs[i]));
        if (i) TEST_OK(vkbert_job_wait(jobs[i - 1]));
    }
    TEST_OK(vkbert_job_wait(jobs[STREAM - 1]));
    for (int i = 0; i < STREAM; i++) {
        assert_equal(got[i], want[i], (size_t)x[i].b * 32, "async embeddings");
        vkbert_job_destroy(jobs[i]);
        free(want[i]), free(got[i]);
    }
    teardown(&f);
}

Test(async, poll_third_submit_and_destroy)
{
    fixture f = setup();
    batch x = random_batch(3, 6, 5);
    size_t n = 3 * 6 * 32;
    float *want = test_poisoned(n), *want_pooled = test_poisoned(3 * 32);
    TEST_OK(
        vkbert_encoder_forward_host(f.encoder, 3, 6, x.ids, x.types, x.mask, want, want_pooled));
    float *got[3], *pooled[3];
    vkbert_job *jobs[3];
    for (int i = 0; i < 3; i++) {
        got[i] = test_poisoned(n), pooled[i] = test_poisoned(3 * 32);
        TEST_OK(vkbert_encoder_forward_submit(f.encoder, 3, 6, x.ids, x.types, x.mask, got[i],
                                              pooled[i], &jobs[i]));
    }
    /* the third submit finished the first: its outputs are written, its poll is OK at once */
    TEST_OK(vkbert_job_poll(jobs[0]));
    assert_equal(got[0], want, n, "hidden of the first job");
    vkbert_status status;
    while ((status = vkbert_job_poll(jobs[1])) == VKBERT_NOT_READY)
        usleep(100);
    cr_assert_eq(status, VKBERT_OK, "%s", vkbert_last_error(f.ctx));
    TEST_OK(vkbert_job_wait(jobs[1]));
    vkbert_job_destroy(jobs[2]); /* still running, perhaps: destroy waits, outputs written */
    for (int i = 0; i < 3; i++) {
        assert_equal(got[i], want, n, "hidden");
        assert_equal(pooled[i], want_pooled, 3 * 32, "pooled");
        free(got[i]), free(pooled[i]);
    }
    vkbert_job_destroy(jobs[0]);
    vkbert_job_destroy(jobs[1]);
    vkbert_job_destroy(NULL);
    free(want), free(want_pooled);
    teardown(&f);
}

Test(async, bad_job_arguments)
{
    fixture f = setup();
    batch x = random_batch(2, 4, 9);
    float out[2 * 32];
    vkbert_job *job = (vkbert_job *)&x; /* must be reset to NULL on failure */
    cr_assert_eq(vkbert_encoder_embed_submit(f.encoder, 2, 4, x.ids, NULL, NULL, 0, NULL, &job),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(job);
    cr_assert_eq(vkbert_encoder_embed_submit(f.encoder, 2, 4, x.ids, NULL, NULL, 0, out, NULL),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_encoder_embed_submit(f.encoder, 0, 4, x.ids, NULL, NULL, 0, out, &job),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    x.ids[3] = 50; /* outside the vocabulary */
    cr_assert_eq(vkbert_encoder_embed_submit(f.encoder, 2, 4, x.ids, NULL, NULL, 0, out, &job),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(f.ctx), "input_ids[3]"), "%s", vkbert_last_error(f.ctx));
    cr_assert_eq(vkbert_encoder_embed_submit(NULL, 2, 4, x.ids, NULL, NULL, 0, out, &job),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_job_wait(NULL), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_job_poll(NULL), VKBERT_ERROR_INVALID_ARGUMENT);
    teardown(&f);
}

Test(async, device_lost_fails_the_job)
{
    fixture f = setup();
    batch x = random_batch(2, 4, 3);
    float out[2 * 32];
    vkbert_job *job;
    TEST_OK(vkbert_encoder_embed_submit(f.encoder, 2, 4, x.ids, NULL, NULL, 0, out, &job));
    f.ctx->fail_next_submit = true; /* the wait reports VK_ERROR_DEVICE_LOST */
    cr_assert_eq(vkbert_job_wait(job), VKBERT_ERROR_DEVICE_LOST);
    cr_assert_eq(vkbert_job_poll(job), VKBERT_ERROR_DEVICE_LOST);
    vkbert_job_destroy(job);
    cr_assert_eq(vkbert_encoder_embed_host(f.encoder, 2, 4, x.ids, NULL, NULL, 0, out),
                 VKBERT_ERROR_DEVICE_LOST);
    vkbert_encoder_destroy(f.encoder);
    f.encoder = NULL;
    teardown(&f);
}

/* ---- threads sharing one encoder ---- */

#define SHARERS 3 /* one more than the encoder's slots: a submit finishes another's job */
#define ROUNDS 24

typedef struct sharer {
    vkbert_context *ctx;
    vkbert_encoder *encoder;
    const batch *x;
    const float *want;
    vkbert_status status;
    char error[1024];
    int wrong; /* rounds whose embeddings differ from the single-threaded call's */
} sharer;

/* Synchronous calls and jobs by turns: each job is destroyed at once, often while another
 * thread's submit is still waiting on its fence to take its slot. */
static void *run_sharer(void *arg)
{
    sharer *sh = arg;
    const batch *x = sh->x;
    size_t n = (size_t)x->b * 32;
    float *got = malloc(n * sizeof *got);
    for (int round = 0; round < ROUNDS && !sh->status; round++) {
        memset(got, 0xff, n * sizeof *got);
        vkbert_job *job = NULL;
        if (round % 2)
            sh->status = vkbert_encoder_embed_host(sh->encoder, x->b, x->s, x->ids, x->types,
                                                   x->mask, 1, got);
        else
            sh->status = vkbert_encoder_embed_submit(sh->encoder, x->b, x->s, x->ids, x->types,
                                                     x->mask, 1, got, &job);
        if (!sh->status && job) sh->status = vkbert_job_wait(job);
        vkbert_job_destroy(job);
        if (sh->status) break;
        for (size_t i = 0; i < n; i++)
            if (!(fabsf(got[i] - sh->want[i]) <= 1e-6f * (1 + fabsf(sh->want[i])))) {
                sh->wrong++;
                break;
            }
    }
    if (sh->status) snprintf(sh->error, sizeof sh->error, "%s", vkbert_last_error(sh->ctx));
    free(got);
    return NULL;
}

Test(async, threads_share_an_encoder)
{
    fixture f = setup();
    batch x[SHARERS];
    float *want[SHARERS];
    for (int i = 0; i < SHARERS; i++) {
        x[i] = random_batch(2 + i % 2, 5 + i, 300 + (uint64_t)i);
        want[i] = test_poisoned((size_t)x[i].b * 32);
        TEST_OK(vkbert_encoder_embed_host(f.encoder, x[i].b, x[i].s, x[i].ids, x[i].types,
                                          x[i].mask, 1, want[i]));
    }
    pthread_t threads[SHARERS];
    sharer sharers[SHARERS];
    for (int i = 0; i < SHARERS; i++) {
        sharers[i] = (sharer){.ctx = f.ctx, .encoder = f.encoder, .x = &x[i], .want = want[i]};
        cr_assert_eq(pthread_create(&threads[i], NULL, run_sharer, &sharers[i]), 0);
    }
    for (int i = 0; i < SHARERS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < SHARERS; i++) {
        cr_assert_eq(sharers[i].status, VKBERT_OK, "thread %d: %s: %s", i,
                     vkbert_status_name(sharers[i].status), sharers[i].error);
        cr_assert_eq(sharers[i].wrong, 0, "thread %d: %d rounds of wrong embeddings", i,
                     sharers[i].wrong);
        free(want[i]);
    }
    teardown(&f);
}
