/* The whole layer against the double-precision reference: random shapes, every mask form
 * and dtype, fully masked rows, the causal flag, dropout, plan replay, device tensors. */
#include "nn/attention/attention.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>

typedef struct case_shape {
    int batch, seq_len, heads, head_dim;
} case_shape;

/* A layer with random weights and a random input, ready to run and to check. */
typedef struct fixture {
    case_shape c;
    int e;
    size_t n;
    test_weights w;
    vkbert_attention *layer;
    float *x, *y;
    double *want;
} fixture;

static fixture setup(vkbert_context *ctx, case_shape c, uint64_t seed)
{
    fixture f = {.c = c, .e = c.heads * c.head_dim};
    f.n = (size_t)c.batch * c.seq_len * f.e;
    f.w = test_weights_random(f.e, seed);
    vkbert_attention_weights api = test_weights_api(&f.w);
    TEST_OK(vkbert_attention_create(ctx, f.e, c.heads, &api, NULL, &f.layer));
    f.x = malloc(f.n * sizeof *f.x);
    f.y = test_poisoned(f.n);
    f.want = malloc(f.n * sizeof *f.want);
    ref_rng rng = {seed ^ 0xabcdef};
    ref_fill(&rng, f.x, f.n, -1.0, 1.0);
    return f;
}

static void teardown(fixture *f)
{
    vkbert_attention_destroy(f->layer);
    test_weights_free(&f->w);
    free(f->x), free(f->y), free(f->want);
}

static void reference(fixture *f, const ref_mask *mask, const vkbert_attention_options *opt)
{
    ref_layer ref = test_weights_ref(&f->w, f->c.heads);
    ref_options ropt = {opt ? opt->causal : 0, opt ? opt->dropout : 0.0, opt ? opt->seed : 0,
                        opt ? opt->additive_mask : 0};
    ref_attention(&ref, f->c.batch, f->c.seq_len, f->x, mask, &ropt, f->want);
}

static void run_and_check(vkbert_context *ctx, fixture *f, const vkbert_mask *mask,
                          const ref_mask *rmask, const vkbert_attention_options *opt)
{
    for (size_t i = 0; i < f->n; i++)
        f->y[i] = NAN;
    vkbert_status status =
        vkbert_attention_forward_host(f->layer, f->c.batch, f->c.seq_len, f->x, mask, opt, f->y);
    cr_assert_eq(status, VKBERT_OK, "forward: %s", vkbert_last_error(ctx));
    reference(f, rmask, opt);
    char what[128];
    snprintf(what, sizeof what, "B %d S %d H %d D %d mask %d causal %d p %.2f", f->c.batch,
             f->c.seq_len, f->c.heads, f->c.head_dim, mask ? mask->ndim : 0, opt ? opt->causal : 0,
             opt ? (double)opt->dropout : 0.0);
    test_assert_fp32_close(f->y, f->want, f->n, what);
}

Test(attention, random_shapes)
{
    vkbert_context *ctx = test_context(0);
    int seqs[] = {1, 7, 64, 129, 384}, dims[] = {16, 32, 64, 80, 128};
    ref_rng rng = {77};
    for (int t = 0; t < 10; t++) {
        int s = seqs[t % 5], d = dims[(t * 3) % 5];
        int b = 1 + (int)ref_uniform(&rng, 0, s >= 129 ? 2 : 4);
        int h = 1 + (int)ref_uniform(&rng, 0, d >= 80 || s >= 129 ? 2 : 3);
        fixture f = setup(ctx, (case_shape){b, s, h, d}, 1000 + t);
        run_and_check(ctx, &f, NULL, NULL, NULL);
        teardown(&f);
    }
    test_context_done(ctx);
}

Test(attention, odd_head_dims)
{
    vkbert_context *ctx = test_context(0);
    /* The last is E 4096: each weight matrix is 64 MiB, half of lavapipe's storage range. */
    /* The last two: heads longer than the fused kernel holds go unfused. */
    case_shape shapes[] = {{2, 5, 3, 17},   {1, 9, 1, 255}, {3, 4, 2, 256}, {1, 1, 5, 18},
                           {1, 3, 16, 256}, {2, 6, 1, 300}, {1, 7, 2, 260}};
    for (int t = 0; t < 7; t++) {
        fixture f = setup(ctx, shapes[t], 50 + t);
        run_and_check(ctx, &f, NULL, NULL, NULL);
        teardown(&f);
    }
    test_context_done(ctx);
}

/* ---- masks ---- */

typedef struct mask_form {
    int ndim;
    int64_t shape[4];
    size_t stride_bhij[4]; /* dense element strides over (b, h, i, j) for the reference */
} mask_form;

static void fill_mask(vkbert_dtype dtype, void *data, size_t i, int keep)
{
    switch (dtype) {
    case VKBERT_DTYPE_FLOAT32:
        ((float *)data)[i] = keep ? 0.75f : 0.0f;
        break;
    case VKBERT_DTYPE_INT32:
        ((int32_t *)data)[i] = keep ? -3 : 0;
        break;
    case VKBERT_DTYPE_INT64:
        ((int64_t *)data)[i] = keep ? 5 : 0;
        break;
    default:
        ((uint8_t *)data)[i] = keep ? 1 : 0;
    }
}

static void check_mask(vkbert_context *ctx, fixture *f, mask_form form, vkbert_dtype dtype,
                       double masked_share, int causal, uint64_t seed)
{
    size_t count = 1;
    for (int i = 0; i < form.ndim; i++)
        count *= (size_t)form.shape[i];
    static const size_t sizes[] = {4, 1, 1, 4, 8};
    void *data = malloc(count * sizes[dtype]);
    float *ref_values = malloc(count * sizeof *ref_values);
    ref_rng rng = {seed};
    for (size_t i = 0; i < count; i++) {
        int keep = ref_uniform(&rng, 0, 1) >= masked_share;
        fill_mask(dtype, data, i, keep);
        ref_values[i] = (float)keep;
    }
    vkbert_mask mask = {sizeof(vkbert_mask), data, dtype, form.ndim, {0}};
    memcpy(mask.shape, form.shape, sizeof form.shape);
    ref_mask rmask = {ref_values, {0}};
    memcpy(rmask.stride, form.stride_bhij, sizeof rmask.stride);
    vkbert_attention_options opt = {.struct_size = sizeof(vkbert_attention_options),
                                    .causal = causal};
    run_and_check(ctx, f, &mask, &rmask, &opt);
    free(data), free(ref_values);
}

Test(attention, every_mask_form_and_dtype)
{
    vkbert_context *ctx = test_context(0);
    int64_t b = 3, h = 2, s = 13;
    size_t S = (size_t)s;
    fixture f = setup(ctx, (case_shape){(int)b, (int)s, (int)h, 16}, 5);
    mask_form forms[] = {
        {1, {s}, {0, 0, 0, 1}},                              /* [S] */
        {2, {b, s}, {S, 0, 0, 1}},                           /* [B,S] key padding */
        {4, {b, 1, 1, s}, {S, 0, 0, 1}},                     /* [B,1,1,S] */
        {3, {b, s, s}, {S * S, 0, S, 1}},                    /* [B,S,S] per query */
        {4, {b, 1, s, s}, {S * S, 0, S, 1}},                 /* [B,1,S,S] */
        {4, {b, h, s, s}, {(size_t)h * S * S, S * S, S, 1}}, /* [B,H,S,S] per head */
        {2, {s, s}, {0, 0, S, 1}},                           /* [S,S] shared */
        {4, {1, h, 1, s}, {0, S, 0, 1}},                     /* any broadcastable 4-D */
    };
    vkbert_dtype dtypes[] = {VKBERT_DTYPE_BOOL, VKBERT_DTYPE_UINT8, VKBERT_DTYPE_INT32,
                             VKBERT_DTYPE_INT64, VKBERT_DTYPE_FLOAT32};
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 5; k++)
            check_mask(ctx, &f, forms[i], dtypes[k], 0.3, 0, i * 5 + k);
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, causal_alone_and_with_mask)
{
    vkbert_context *ctx = test_context(0);
    fixture f = setup(ctx, (case_shape){2, 64, 2, 32}, 8);
    vkbert_attention_options causal = {.struct_size = sizeof(vkbert_attention_options),
                                       .causal = 1};
    run_and_check(ctx, &f, NULL, NULL, &causal);
    mask_form padding = {2, {2, 64}, {64, 0, 0, 1}};
    check_mask(ctx, &f, padding, VKBERT_DTYPE_BOOL, 0.2, 1, 9);
    /* Eval again: the plan is re-recorded without the flag. */
    run_and_check(ctx, &f, NULL, NULL, NULL);
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, fully_masked_rows_give_out_bias)
{
    vkbert_context *ctx = test_context(0);
    int b = 2, s = 9, e = 32;
    fixture f = setup(ctx, (case_shape){b, s, 2, 16}, 11);
    /* Batch 1 has every key masked; batch 0 keeps keys 0..3. */
    uint8_t mask_data[2 * 9] = {1, 1, 1, 1, 0, 0, 0, 0, 0};
    vkbert_mask mask = {sizeof(vkbert_mask), mask_data, VKBERT_DTYPE_BOOL, 2, {b, s}};
    TEST_OK(vkbert_attention_forward_host(f.layer, b, s, f.x, &mask, NULL, f.y));
    for (size_t i = 0; i < f.n; i++)
        cr_assert(isfinite(f.y[i]), "y[%zu] = %g", i, f.y[i]);
    for (int row = s; row < 2 * s; row++)
        for (int o = 0; o < e; o++)
            cr_assert_eq(f.y[row * e + o], f.w.b[3][o], "row %d col %d: %g != out_bias %g", row, o,
                         f.y[row * e + o], f.w.b[3][o]);
    /* Causal with a mask that hides key 0 leaves query 0 without keys. */
    uint8_t hide0[9] = {0, 1, 1, 1, 1, 1, 1, 1, 1};
    vkbert_mask shared = {sizeof(vkbert_mask), hide0, VKBERT_DTYPE_BOOL, 1, {s}};
    vkbert_attention_options causal = {.struct_size = sizeof(vkbert_attention_options),
                                       .causal = 1};
    TEST_OK(vkbert_attention_forward_host(f.layer, b, s, f.x, &shared, &causal, f.y));
    for (int bb = 0; bb < b; bb++)
        for (int o = 0; o < e; o++)
            cr_assert_eq(f.y[bb * s * e + o], f.w.b[3][o]);
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, dropout_reproducible_and_matches_reference)
{
    vkbert_context *ctx = test_context(0);
    fixture f = setup(ctx, (case_shape){2, 33, 2, 16}, 12);
    vkbert_attention_options opt = {.struct_size = sizeof(vkbert_attention_options),
                                    .dropout = 0.25f,
                                    .seed = 0x123456789abcdefull};
    run_and_check(ctx, &f, NULL, NULL, &opt);
    float *again = malloc(f.n * 4), *other = malloc(f.n * 4);
    TEST_OK(vkbert_attention_forward_host(f.layer, 2, 33, f.x, NULL, &opt, again));
    cr_assert(!memcmp(f.y, again, f.n * 4), "the same seed gave a different result");
    opt.seed++;
    TEST_OK(vkbert_attention_forward_host(f.layer, 2, 33, f.x, NULL, &opt, other));
    cr_assert(memcmp(f.y, other, f.n * 4), "another seed gave the same result");
    free(again), free(other);
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, replay_with_new_inputs_and_shapes)
{
    vkbert_context *ctx = test_context(0);
    fixture f = setup(ctx, (case_shape){2, 10, 2, 16}, 13);
    ref_rng rng = {14};
    for (int t = 0; t < 3; t++) { /* same shape: the recorded command buffer is replayed */
        ref_fill(&rng, f.x, f.n, -2.0, 2.0);
        run_and_check(ctx, &f, NULL, NULL, NULL);
    }
    fixture g = f; /* a second shape on the same layer, then the first again */
    g.c.seq_len = 3, g.c.batch = 1;
    g.n = 3 * 32;
    run_and_check(ctx, &g, NULL, NULL, NULL);
    run_and_check(ctx, &f, NULL, NULL, NULL);
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, device_tensors_chain_two_layers)
{
    vkbert_context *ctx = test_context(0);
    fixture f = setup(ctx, (case_shape){2, 12, 4, 16}, 15);
    int64_t shape[3] = {2, 12, 64};
    vkbert_tensor *x, *mid, *y;
    TEST_OK(vkbert_tensor_create(ctx, 3, shape, &x));
    TEST_OK(vkbert_tensor_create(ctx, 3, shape, &mid));
    TEST_OK(vkbert_tensor_create(ctx, 3, shape, &y));
    TEST_OK(vkbert_tensor_write(ctx, x, f.x, f.n));
    TEST_OK(vkbert_attention_forward(f.layer, x, NULL, NULL, mid));
    TEST_OK(vkbert_attention_forward(f.layer, mid, NULL, NULL, y));
    TEST_OK(vkbert_tensor_read(ctx, y, f.y, f.n));
    reference(&f, NULL, NULL);
    for (size_t i = 0; i < f.n; i++)
        f.x[i] = (float)f.want[i];
    reference(&f, NULL, NULL);
    ref_error err = ref_compare(f.y, f.want, f.n);
    cr_assert(err.relative_l2 <= 2e-5, "two layers: relative L2 %.3g", err.relative_l2);
    vkbert_tensor_destroy(ctx, x), vkbert_tensor_destroy(ctx, mid), vkbert_tensor_destroy(ctx, y);
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, staging_path_of_discrete_gpus)
{
    setenv("VKBERT_FORCE_STAGING", "1", 1); /* each Criterion test runs in its own process */
    vkbert_context *ctx = test_context(0);
    fixture f = setup(ctx, (case_shape){3, 21, 3, 20}, 16);
    mask_form padding = {2, {3, 21}, {21, 0, 0, 1}};
    check_mask(ctx, &f, padding, VKBERT_DTYPE_INT64, 0.3, 0, 17);
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, timestamps_name_each_dispatch)
{
    vkbert_context *ctx = test_context(1);
    fixture f = setup(ctx, (case_shape){1, 16, 2, 16}, 18);
    run_and_check(ctx, &f, NULL, NULL, NULL);
    vkbert_timing timings[16];
    uint32_t count = 0;
    TEST_OK(vkbert_attention_timings(f.layer, timings, 16, &count));
    cr_assert(count == 3 || count == 9, "%u dispatches: fused makes 3, unfused 9", count);
    double total = 0;
    for (uint32_t i = 0; i < count; i++) {
        cr_assert(timings[i].name && *timings[i].name);
        cr_assert(timings[i].milliseconds >= 0.0 && timings[i].milliseconds < 1e4);
        total += timings[i].milliseconds;
    }
    cr_assert(total > 0.0, "no time measured");
    cr_assert_str_eq(timings[0].name, "qkv_projection");
    cr_assert_str_eq(timings[count - 1].name, "out_projection");
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, scores_beyond_one_storage_buffer)
{
    /* B*H*S*S floats = 19 MB of scores, past a storage range capped at 16 MiB (a cap, so that
     * the case means the same on every device and stays small), so the layer must run fused
     * whatever VKBERT_ATTENTION says. */
    vkbert_context *ctx = test_context_limited("max_storage_buffer_range=16m");
    fixture f = setup(ctx, (case_shape){2, 1100, 2, 16}, 19);
    vkbert_attention_options causal = {.struct_size = sizeof(vkbert_attention_options),
                                       .causal = 1};
    run_and_check(ctx, &f, NULL, NULL, &causal);
    char what[128];
    vkb_attention_describe(f.layer, what, sizeof what);
    cr_assert(strstr(what, "fused") && !strstr(what, "unfused"), "ran \"%s\", not fused", what);
    teardown(&f);
    test_context_done(ctx);
}

Test(attention, fp16_within_fp16_bound)
{
    /* Weights and activations in fp16; a head longer than the fused kernel holds takes the
     * unfused path, with fp16 weights only. */
    vkbert_context *ctx = test_context(0);
    case_shape shapes[] = {{2, 33, 4, 16}, {1, 64, 2, 80}, {3, 7, 3, 17}, {1, 9, 1, 260}};
    for (int t = 0; t < 4; t++) {
        case_shape c = shapes[t];
        int e = c.heads * c.head_dim;
        fixture f = setup(ctx, c, 60 + t);
        vkbert_attention_weights api = test_weights_api(&f.w);
        vkbert_attention_config config = {sizeof(vkbert_attention_config), VKBERT_PRECISION_FP16};
        vkbert_attention *half = NULL;
        TEST_OK(vkbert_attention_create(ctx, e, c.heads, &api, &config, &half));
        vkbert_attention_options causal = {.struct_size = sizeof(vkbert_attention_options),
                                           .causal = t == 1};
        TEST_OK(vkbert_attention_forward_host(half, c.batch, c.seq_len, f.x, NULL, &causal, f.y));
        reference(&f, NULL, &causal);
        ref_error err = ref_compare(f.y, f.want, f.n);
        cr_assert(err.relative_l2 <= 3e-3, "fp16: relative L2 %.3g > 3e-3", err.relative_l2);
        cr_assert(err.relative_l2 > 1e-6, "fp16 weights gave fp32 accuracy: were they fp16?");
        char what[128];
        vkb_attention_describe(half, what, sizeof what);
        const char *want =
            c.head_dim <= 256 ? "fp16 weights and activations fused" : "fp16 weights unfused";
        cr_assert(strstr(what, want), "ran \"%s\", not \"%s\"", what, want);
        vkbert_attention_destroy(half);
        teardown(&f);
    }
    test_context_done(ctx);
}

Test(attention, additive_mask_as_huggingface)
{
    /* Key padding where batch 1 has no key at all: with the additive mask its rows average
     * every key's value, as HuggingFace's BERT does; with the boolean mask they give out_bias. */
    vkbert_context *ctx = test_context(0);
    int b = 2, s = 9;
    fixture f = setup(ctx, (case_shape){b, s, 2, 16}, 21);
    uint8_t keep[2 * 9] = {1, 1, 1, 0, 1, 1, 0, 0, 1};
    float keep_f[2 * 9];
    for (int i = 0; i < b * s; i++)
        keep_f[i] = keep[i];
    vkbert_mask mask = {sizeof(vkbert_mask), keep, VKBERT_DTYPE_BOOL, 2, {b, s}};
    ref_mask rmask = {keep_f, {(size_t)s, 0, 0, 1}};
    vkbert_attention_options additive = {.struct_size = sizeof(vkbert_attention_options),
                                         .additive_mask = 1};
    run_and_check(ctx, &f, &mask, &rmask, &additive);
    int differs = 0;
    for (int o = 0; o < 32; o++) /* batch 1, row 0: not out_bias */
        differs |= f.y[s * 32 + o] != f.w.b[3][o];
    cr_assert(differs, "the fully masked row gave out_bias under the additive mask");
    vkbert_attention_options causal_additive = {
        .struct_size = sizeof(vkbert_attention_options), .additive_mask = 1, .causal = 1};
    run_and_check(ctx, &f, &mask, &rmask, &causal_additive);
    teardown(&f);
    test_context_done(ctx);
}
