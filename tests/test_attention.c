/* The whole layer against the double-precision reference. */
#include "support.h"

#include <stdlib.h>
#include <string.h>

typedef struct case_shape {
    int batch, seq_len, heads, head_dim;
} case_shape;

static void run_case(vkbert_context *ctx, case_shape c, const vkbert_mask *mask,
                     const ref_mask *rmask, const vkbert_attention_options *opt, uint64_t seed)
{
    int e = c.heads * c.head_dim;
    test_weights w = test_weights_random(e, seed);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer = NULL;
    TEST_OK(vkbert_attention_create(ctx, e, c.heads, &api, &layer));
    size_t n = (size_t)c.batch * c.seq_len * e;
    float *x = malloc(n * sizeof *x), *y = test_poisoned(n);
    double *want = malloc(n * sizeof *want);
    ref_rng rng = {seed ^ 0xabcdef};
    ref_fill(&rng, x, n, -1.0, 1.0);
    vkbert_status status =
        vkbert_attention_forward_host(layer, c.batch, c.seq_len, x, mask, opt, y);
    cr_assert_eq(status, VKBERT_OK, "forward: %s", vkbert_last_error(ctx));
    ref_layer ref = test_weights_ref(&w, c.heads);
    ref_options ropt = {opt ? opt->causal : 0, opt ? opt->dropout : 0.0, opt ? opt->seed : 0};
    ref_attention(&ref, c.batch, c.seq_len, x, rmask, &ropt, want);
    char what[128];
    snprintf(what, sizeof what, "B %d S %d H %d D %d", c.batch, c.seq_len, c.heads, c.head_dim);
    test_assert_fp32_close(y, want, n, what);
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    free(x), free(y), free(want);
}

Test(attention, smoke)
{
    vkbert_context *ctx = test_context(0);
    run_case(ctx, (case_shape){2, 7, 4, 16}, NULL, NULL, NULL, 1);
    test_context_done(ctx);
}
