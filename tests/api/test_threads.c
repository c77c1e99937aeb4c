/* Threads and lifetimes: forward passes from 4 threads at once, each on its own context, all
 * checked against double; and 200 contexts and layers made and destroyed, with host memory
 * flat and no Vulkan object left alive (the validation layer's object tracker reports any at
 * device destruction, which test_context_done turns into a failure); and a model load that
 * leaves its context to other calls while it reads the folder. */
#include "st_folder.h"
#include "support.h"

#include "platform/platform.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
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
    vkbert_context_options options = {.struct_size = sizeof(vkbert_context_options),
                                      .validation = 1};
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
    wk->status = vkbert_attention_create(ctx, e, heads, &api, NULL, &layer);
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

/* ---- threads sharing one context and one layer: their calls run one at a time ---- */

typedef struct sharer {
    int index;
    vkbert_context *ctx;
    vkbert_attention *layer;
    const test_weights *w;
    vkbert_status status;
    char error[1024];
    double worst_error;
    bool own_message; /* its bad call's message was its own, not another thread's */
} sharer;

static void *run_sharer(void *arg)
{
    sharer *sh = arg;
    int b = 1 + sh->index % 3, s = 5 + 7 * sh->index, e = 32;
    size_t n = (size_t)b * s * e;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *want = malloc(n * sizeof *want);
    ref_layer ref = test_weights_ref(sh->w, 2);
    ref_options opt = {0};
    char expected[64];
    snprintf(expected, sizeof expected, "count %d does not match", 1000 + sh->index);
    sh->own_message = true;
    vkbert_tensor *t = NULL;
    int64_t shape[1] = {1 + sh->index};
    sh->status = vkbert_tensor_create(sh->ctx, 1, shape, &t);
    for (int pass = 0; pass < 2 * PASSES && !sh->status; pass++) {
        ref_rng rng = {(uint64_t)(sh->index * 100 + pass)};
        ref_fill(&rng, x, n, -1, 1);
        sh->status = vkbert_attention_forward_host(sh->layer, b, s, x, NULL, NULL, y);
        if (sh->status) break;
        ref_attention(&ref, b, s, x, NULL, &opt, want);
        double err = ref_compare(y, want, n).relative_l2;
        if (err > sh->worst_error) sh->worst_error = err;
        /* A failing call while the others run: this thread reads its own message. */
        vkbert_tensor_write(sh->ctx, t, x, (size_t)(1000 + sh->index));
        if (!strstr(vkbert_last_error(sh->ctx), expected)) sh->own_message = false;
    }
    vkbert_tensor_destroy(sh->ctx, t);
    if (sh->status) snprintf(sh->error, sizeof sh->error, "%s", vkbert_last_error(sh->ctx));
    free(x), free(y), free(want);
    return NULL;
}

Test(threads, threads_sharing_a_context_and_a_layer)
{
    vkbert_context *ctx = test_context(0);
    test_weights w = test_weights_random(32, 11);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer = NULL;
    TEST_OK(vkbert_attention_create(ctx, 32, 2, &api, NULL, &layer));
    pthread_t threads[THREADS];
    sharer sharers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        sharers[i] = (sharer){.index = i, .ctx = ctx, .layer = layer, .w = &w};
        cr_assert_eq(pthread_create(&threads[i], NULL, run_sharer, &sharers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(sharers[i].status, VKBERT_OK, "thread %d: %s: %s", i,
                     vkbert_status_name(sharers[i].status), sharers[i].error);
        cr_assert_leq(sharers[i].worst_error, 1e-5, "thread %d: relative L2 %.3g", i,
                      sharers[i].worst_error);
        cr_assert(sharers[i].own_message, "thread %d read another thread's message", i);
    }
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    test_context_done(ctx);
}

#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define SANITIZED_ADDRESS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) /* clang */
#define SANITIZED_ADDRESS 1
#endif
#endif
#ifndef SANITIZED_ADDRESS
#define SANITIZED_ADDRESS 0
#endif

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
    TEST_OK(vkbert_attention_create(ctx, 32, 2, &api, NULL, &layer));
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
    /* 180 more rounds: a leak of even 50 KiB a round would show as 9 MiB. Under
     * AddressSanitizer (.ci/sanitize.sh) the resident size means nothing (freed memory waits
     * in its quarantine, its shadow and stack traces stay): LeakSanitizer, at this process's
     * exit, checks every allocation of the 200 rounds instead. */
    if (!SANITIZED_ADDRESS)
        cr_assert_lt(grown, 4096, "resident memory grew by %ld KiB over 180 rounds", grown);
    test_weights_free(&w);
}

/* ---- a load leaves the context to other calls while it reads the folder ---- */

typedef struct loader {
    vkbert_context *ctx;
    const char *dir;
    int model; /* vkbert_model_load, else vkbert_encoder_load */
    vkbert_status status;
    atomic_int done;
    vkbert_encoder *encoder;
    vkbert_model *m;
} loader;

static void *run_loader(void *arg)
{
    loader *l = arg;
    l->status = l->model ? vkbert_model_load(l->ctx, l->dir, NULL, &l->m)
                         : vkbert_encoder_load(l->ctx, l->dir, NULL, &l->encoder);
    atomic_store(&l->done, 1);
    return NULL;
}

/* A small call on ctx: a tensor made, written, read back and destroyed. */
static void small_call(vkbert_context *ctx)
{
    float in[6] = {1, -2, 3, -4, 5, -6}, out[6] = {0};
    vkbert_tensor *t = NULL;
    TEST_OK(vkbert_tensor_create(ctx, 2, (int64_t[]){2, 3}, &t));
    TEST_OK(vkbert_tensor_write(ctx, t, in, 6));
    TEST_OK(vkbert_tensor_read(ctx, t, out, 6));
    vkbert_tensor_destroy(ctx, t);
    cr_assert_eq(memcmp(in, out, sizeof in), 0);
}

/* The loader's first open of a config.json waits here until the test lets it go: the load is
 * then reading the folder. The library refuses a FIFO there, so the wait is put in its open
 * itself: the test links with -Wl,--wrap=plat_open_regular (tests/CMakeLists.txt). */
FILE *__real_plat_open_regular(const char *path, plat_file_kind *kind, uint64_t *size);
FILE *__wrap_plat_open_regular(const char *path, plat_file_kind *kind, uint64_t *size);

static sem_t load_reading, load_go_on;
static atomic_int hold_next_config;

FILE *__wrap_plat_open_regular(const char *path, plat_file_kind *kind, uint64_t *size)
{
    static const char name[] = "config.json";
    size_t n = strlen(path), k = sizeof name - 1;
    if (n >= k && strcmp(path + n - k, name) == 0 && atomic_exchange(&hold_next_config, 0)) {
        sem_post(&load_reading);
        sem_wait(&load_go_on);
    }
    return __real_plat_open_regular(path, kind, size);
}

/* While the load waits in its reading of the folder, another call on the same context must
 * complete; were the lock held for the load, it would wait forever (the timeout fails the
 * test). Events are ordered by the semaphores, not by durations. */
Test(threads, a_load_leaves_the_context_to_other_calls, .timeout = 120)
{
    static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat"};
    vkbert_context *ctx = test_context(0);
    cr_assert_eq(sem_init(&load_reading, 0, 0), 0);
    cr_assert_eq(sem_init(&load_go_on, 0, 0), 0);
    for (int model = 0; model < 2; model++) {
        char dir[TEST_DIR_SIZE];
        test_dir_make(dir, "load");
        bert_config c = tiny_bert_small(6, 0);
        tiny_bert_folder(dir, &c, 11, vocab, 6, NULL);
        loader l = {.ctx = ctx, .dir = dir, .model = model};
        atomic_store(&hold_next_config, 1);
        pthread_t thread;
        cr_assert_eq(pthread_create(&thread, NULL, run_loader, &l), 0);
        cr_assert_eq(sem_wait(&load_reading), 0); /* the loader is opening config.json */
        small_call(ctx);
        cr_assert_eq(atomic_load(&l.done), 0, "the load ended before it could read config.json");
        cr_assert_eq(sem_post(&load_go_on), 0);
        cr_assert_eq(pthread_join(thread, NULL), 0);
        cr_assert_eq(l.status, VKBERT_OK, "%s", vkbert_last_error(ctx));
        cr_assert(model ? vkbert_model_dimension(l.m) == c.hidden_size
                        : vkbert_encoder_hidden_size(l.encoder) == c.hidden_size);
        vkbert_model_destroy(l.m);
        vkbert_encoder_destroy(l.encoder);
        test_dir_remove(dir);
    }
    sem_destroy(&load_reading);
    sem_destroy(&load_go_on);
    test_context_done(ctx);
}
