/* Faults: out-of-memory injected at every buffer a forward pass creates, a submission that
 * times out, a lost device. Each is an error with a message, frees what was made, and leaves
 * the context either working (memory) or refusing all later work (lost, timed out). */
#define _POSIX_C_SOURCE 200809L

#include "io/bert_model.h"
#include "st_folder.h"
#include "support.h"
#include "vk/vk.h"

#include <stdlib.h>
#include <string.h>

typedef struct layer_case {
    test_weights w;
    vkbert_attention *layer;
    int batch, seq_len, e;
    float *x, *y;
    double *want;
} layer_case;

static layer_case make_case(vkbert_context *ctx, int batch, int seq_len, int e, uint64_t seed)
{
    layer_case c = {.batch = batch, .seq_len = seq_len, .e = e};
    size_t n = (size_t)batch * seq_len * e;
    c.w = test_weights_random(e, seed);
    vkbert_attention_weights api = test_weights_api(&c.w);
    TEST_OK(vkbert_attention_create(ctx, e, 4, &api, NULL, &c.layer));
    c.x = malloc(n * sizeof *c.x);
    c.y = test_poisoned(n);
    c.want = malloc(n * sizeof *c.want);
    ref_rng rng = {seed};
    ref_fill(&rng, c.x, n, -1, 1);
    ref_layer ref = test_weights_ref(&c.w, 4);
    ref_options opt = {0};
    ref_attention(&ref, batch, seq_len, c.x, NULL, &opt, c.want);
    return c;
}

static void free_case(layer_case *c)
{
    vkbert_attention_destroy(c->layer);
    test_weights_free(&c->w);
    free(c->x), free(c->y), free(c->want);
}

static vkbert_status forward(layer_case *c)
{
    return vkbert_attention_forward_host(c->layer, c->batch, c->seq_len, c->x, NULL, NULL, c->y);
}

Test(faults, out_of_memory_at_every_allocation_of_a_forward)
{
    vkbert_context *ctx = test_context(0);
    layer_case c = make_case(ctx, 1, 19, 32, 1);
    VkDeviceSize in_use = ctx->in_use_bytes;
    uint32_t failures = 0;
    for (uint32_t n = 1;; n++) {
        ctx->allocation_count = 0;
        ctx->fail_allocation_at = n;
        vkbert_status status = forward(&c);
        ctx->fail_allocation_at = 0;
        if (status == VKBERT_OK) break; /* past the last allocation */
        cr_assert_eq(status, VKBERT_ERROR_OUT_OF_MEMORY, "allocation %u: %s", n,
                     vkbert_status_name(status));
        cr_assert(strstr(vkbert_last_error(ctx), "injected"), "%s", vkbert_last_error(ctx));
        cr_assert_eq(ctx->in_use_bytes, in_use, "allocation %u: %llu bytes left behind", n,
                     (unsigned long long)(ctx->in_use_bytes - in_use));
        failures++;
        cr_assert_lt(n, 100, "a forward should make far fewer buffers");
    }
    cr_assert_geq(failures, 3, "only %u allocations were injected", failures);
    test_assert_fp32_close(c.y, c.want, (size_t)c.seq_len * c.e, "after the injected failures");
    free_case(&c);
    test_context_done(ctx);
}

Test(faults, out_of_memory_while_creating_a_layer)
{
    vkbert_context *ctx = test_context(0);
    test_weights w = test_weights_random(32, 2);
    vkbert_attention_weights api = test_weights_api(&w);
    for (uint32_t n = 1;; n++) {
        ctx->allocation_count = 0;
        ctx->fail_allocation_at = n;
        vkbert_attention *layer = NULL;
        vkbert_status status = vkbert_attention_create(ctx, 32, 4, &api, NULL, &layer);
        ctx->fail_allocation_at = 0;
        if (status == VKBERT_OK) {
            vkbert_attention_destroy(layer);
            break;
        }
        cr_assert_eq(status, VKBERT_ERROR_OUT_OF_MEMORY);
        cr_assert_null(layer);
        cr_assert_eq(ctx->in_use_bytes, 0, "allocation %u: buffers left behind", n);
        cr_assert_lt(n, 20);
    }
    test_weights_free(&w);
    test_context_done(ctx);
}

/* Every later call refuses with VKBERT_ERROR_DEVICE_LOST, and destroying still works. */
static void expect_lost_from_now_on(vkbert_context *ctx, layer_case *c)
{
    cr_assert_eq(forward(c), VKBERT_ERROR_DEVICE_LOST);
    cr_assert(strstr(vkbert_last_error(ctx), "destroy this context"), "%s", vkbert_last_error(ctx));
    vkbert_tensor *t = NULL;
    int64_t shape[1] = {4};
    cr_assert_eq(vkbert_tensor_create(ctx, 1, shape, &t), VKBERT_ERROR_DEVICE_LOST);
    vkbert_attention *other = NULL;
    vkbert_attention_weights api = test_weights_api(&c->w);
    cr_assert_eq(vkbert_attention_create(ctx, c->e, 4, &api, NULL, &other),
                 VKBERT_ERROR_DEVICE_LOST);
}

Test(faults, lost_device)
{
    vkbert_context *ctx = test_context(0);
    layer_case c = make_case(ctx, 2, 9, 32, 3);
    TEST_OK(forward(&c));
    ctx->fail_next_submit = true;
    cr_assert_eq(forward(&c), VKBERT_ERROR_DEVICE_LOST);
    cr_assert(strstr(vkbert_last_error(ctx), "VK_ERROR_DEVICE_LOST"), "%s", vkbert_last_error(ctx));
    expect_lost_from_now_on(ctx, &c);
    free_case(&c);
    test_context_done(ctx);
}

Test(faults, timeout)
{
    /* 1 ms is far shorter than this pass on lavapipe (tens of ms): the wait times out with the
     * work still running; destroying the layer and the context waits for it first. */
    vkbert_context_options options = {
        .struct_size = sizeof(vkbert_context_options), .validation = 1, .timeout_ms = 1};
    vkbert_context *ctx = NULL;
    TEST_OK(vkbert_context_create(&options, &ctx));
    layer_case c = make_case(ctx, 4, 256, 256, 4);
    vkbert_status status = forward(&c);
    cr_assert_eq(status, VKBERT_ERROR_DEVICE_LOST, "%s", vkbert_status_name(status));
    cr_assert(strstr(vkbert_last_error(ctx), "timeout"), "%s", vkbert_last_error(ctx));
    expect_lost_from_now_on(ctx, &c);
    free_case(&c);
    test_context_done(ctx);
}

Test(faults, timeout_in_a_benchmark)
{
    /* The benchmark frees its command buffer, pool and buffers after the timed-out wait: they
     * must not be freed while the device still runs the pass (validation says so). */
    vkbert_context_options options = {.struct_size = sizeof(vkbert_context_options),
                                      .validation = 1,
                                      .timestamps = 1,
                                      .timeout_ms = 1};
    vkbert_context *ctx = NULL;
    TEST_OK(vkbert_context_create(&options, &ctx));
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    vkbert_status status = vkbert_bench_matmul(ctx, 1024, 1024, 1024, VKBERT_PRECISION_FP32, 1, &r);
    cr_assert_eq(status, VKBERT_ERROR_DEVICE_LOST, "%s", vkbert_status_name(status));
    test_context_done(ctx);
}

/* The test hook VKBERT_FAULT_LOST_AFTER_PASSES=N, read at creation: N encoder passes work, the
 * next fails as a lost device, and so does everything after it. */
Test(faults, lost_after_passes_hook)
{
    static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"};
    bert_config c = tiny_bert_config(8, 1, 2, 12, 16, 7);
    char dir[TEST_DIR_SIZE];
    test_dir_make(dir, "lost");
    tiny_bert_folder(dir, &c, 5, vocab, 7, NULL);
    setenv("VKBERT_FAULT_LOST_AFTER_PASSES", "2", 1);
    vkbert_context *ctx = test_context(0);
    unsetenv("VKBERT_FAULT_LOST_AFTER_PASSES"); /* read once: the context keeps its 2 */
    vkbert_model *m = NULL;
    TEST_OK(vkbert_model_load(ctx, dir, NULL, &m));
    const char *text[1] = {"a b"};
    int32_t ids[4] = {2, 5, 6, 3};
    vkbert_encoding in = VKBERT_ENCODING_INIT, mixed[3];
    in.ids = ids, in.count = 4;
    for (int i = 0; i < 3; i++) /* lengths and prompts differ: still one pass */
        mixed[i] = in, mixed[i].count = 2 + i, mixed[i].prompt_tokens = i;
    float out[3 * 8];
    TEST_OK(vkbert_model_embed(m, text, 1, NULL, out));
    TEST_OK(vkbert_model_embed_inputs(m, mixed, 3, 0, out));
    cr_assert_eq(vkbert_model_embed_inputs(m, &in, 1, 0, out), VKBERT_ERROR_DEVICE_LOST);
    cr_assert(strstr(vkbert_last_error(ctx), "VK_ERROR_DEVICE_LOST"), "%s", vkbert_last_error(ctx));
    cr_assert_eq(vkbert_model_embed(m, text, 1, NULL, out), VKBERT_ERROR_DEVICE_LOST);
    cr_assert(strstr(vkbert_last_error(ctx), "destroy this context"), "%s", vkbert_last_error(ctx));
    cr_assert_eq(vkbert_model_embed_inputs(m, &in, 1, 0, out), VKBERT_ERROR_DEVICE_LOST);
    vkbert_model_destroy(m);
    test_context_done(ctx);
    test_dir_remove(dir);
}
