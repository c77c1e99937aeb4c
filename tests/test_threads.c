/* Threads and lifetimes: forward passes from 4 threads at once, each on its own context, all
 * checked against double; and 200 contexts and layers made and destroyed, with host memory
 * flat and no Vulkan object left alive (the validation layer's object tracker reports any at
 * device destruction, which test_context_done turns into a failure). */
#include "support.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define PASSES 3

typedef struct worker {
    int index;
    vkbert_status status;
    char error[1024];
    double worst_error;
} worker;

static void *run_worker(void *arg)
{
    worker *wk = arg;
    vkbert_context_options options = {.validation = 1};
    vkbert_context *ctx = NULL;
    wk->status = vkbert_context_create(&options, &ctx);
    if (wk->status) {
        snprintf(wk->error, sizeof wk->error, "%s", vkbert_last_error(NULL));
        return NULL;
    }
    int b = 1 + wk->index % 2, s = 17 + 8 * wk->index, heads = 2, e = 32;
    size_t n = (size_t)b * s * e;
    test_weights w = test_weights_random(e, 100 + (uint64_t)wk->index);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer = NULL;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *want = malloc(n * sizeof *want);
    wk->status = vkbert_attention_create(ctx, e, heads, &api, &layer);
    ref_layer ref = test_weights_ref(&w, heads);
    ref_options opt = {0};
    for (int pass = 0; pass < PASSES && !wk->status; pass++) {
        ref_rng rng = {(uint64_t)(wk->index * 10 + pass)};
        ref_fill(&rng, x, n, -1, 1);
        wk->status = vkbert_attention_forward_host(layer, b, s, x, NULL, NULL, y);
        if (wk->status) break;
        ref_attention(&ref, b, s, x, NULL, &opt, want);
        double err = ref_compare(y, want, n).relative_l2;
        if (err > wk->worst_error) wk->worst_error = err;
    }
    if (wk->status) snprintf(wk->error, sizeof wk->error, "%s", vkbert_last_error(ctx));
    if (!wk->status && vkbert_validation_messages(ctx, wk->error, sizeof wk->error))
        wk->status = VKBERT_ERROR_VALIDATION;
    vkbert_attention_destroy(layer);
    vkbert_context_destroy(ctx);
    test_weights_free(&w);
    free(x), free(y), free(want);
    return NULL;
}

Test(threads, a_context_per_thread)
{
    pthread_t threads[THREADS];
    worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker){.index = i};
        cr_assert_eq(pthread_create(&threads[i], NULL, run_worker, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(workers[i].status, VKBERT_OK, "thread %d: %s: %s", i,
                     vkbert_status_name(workers[i].status), workers[i].error);
        cr_assert_leq(workers[i].worst_error, 1e-5, "thread %d: relative L2 %.3g", i,
                      workers[i].worst_error);
    }
}

/* Resident set size in KiB, from /proc/self/statm. */
static long resident_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f);
    long pages_total = 0, pages_resident = 0;
    cr_assert_eq(fscanf(f, "%ld %ld", &pages_total, &pages_resident), 2);
    fclose(f);
    return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void make_and_destroy(const test_weights *w, const float *x, float *y)
{
    vkbert_context *ctx = test_context(0);
    vkbert_attention_weights api = test_weights_api(w);
    vkbert_attention *layer = NULL;
    TEST_OK(vkbert_attention_create(ctx, 32, 2, &api, &layer));
    TEST_OK(vkbert_attention_forward_host(layer, 1, 8, x, NULL, NULL, y));
    vkbert_attention_destroy(layer);
    test_context_done(ctx);
}

Test(threads, two_hundred_contexts_and_layers)
{
    test_weights w = test_weights_random(32, 7);
    float x[8 * 32], y[8 * 32];
    ref_rng rng = {8};
    ref_fill(&rng, x, 8 * 32, -1, 1);
    for (int i = 0; i < 20; i++) /* the first ones grow caches that stay: not leaks */
        make_and_destroy(&w, x, y);
    long warm = resident_kib();
    for (int i = 20; i < 200; i++)
        make_and_destroy(&w, x, y);
    long grown = resident_kib() - warm;
    /* 180 more rounds: a leak of even 50 KiB a round would show as 9 MiB. */
    cr_assert_lt(grown, 4096, "resident memory grew by %ld KiB over 180 rounds", grown);
    test_weights_free(&w);
}
