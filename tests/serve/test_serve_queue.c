/* The server's queue and schedulers (tools/vkbert/serve/serve_queue.c) on a real classifier
 * folder on the default device, and the metrics' Prometheus text (serve_metrics.c). Each
 * work's rows are checked against vkbert_model_embed_inputs or _score_inputs of that work
 * alone; how the inputs were batched is read back from the metrics, whose expectations follow
 * from the batching rule and the inputs' lengths. */
#define _POSIX_C_SOURCE 200809L

#include "prometheus_text.h"
#include "serve.h"
#include "st_folder.h"
#include "support.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                                    "cat",   "sat",   "on",    "mat",   "a",      "dog",
                                    "ran",   "far",   "away",  "hello", "world",  "!"};
#define VOCAB_SIZE ((int)(sizeof vocab / sizeof *vocab))
#define CLS_ID 2
#define SEP_ID 3
#define LABELS 3
#define MAX_INPUTS 4
#define MAX_JOBS 16

TestSuite(serve_queue, .init = test_tmpdir_setup, .fini = test_tmpdir_teardown, .timeout = 300);

/* ---- the model, the queue ---- */

typedef struct fixture {
    vkbert_context *ctx;
    vkbert_model *model;
    serve_metrics *metrics;
    serve_queue *queue;
} fixture;

/* A BertForSequenceClassification folder of 3 labels (it embeds too, mean-pooling), H 22. */
static void write_folder(char *dir)
{
    bert_config c = tiny_bert_small(VOCAB_SIZE, LABELS);
    snprintf(dir, 256, "%s/model", test_tmpdir);
    tiny_bert_folder(dir, &c, 5, vocab, VOCAB_SIZE, NULL);
}

static void load(fixture *f, const char *dir)
{
    f->ctx = test_context(0);
    vkbert_status status = vkbert_model_load(f->ctx, dir, NULL, &f->model);
    cr_assert_eq(status, VKBERT_OK, "load %s: %s", dir, vkbert_last_error(f->ctx));
    cr_assert_eq(vkbert_model_labels(f->model), LABELS);
}

static fixture open_model(void)
{
    char dir[256];
    write_folder(dir);
    fixture f = {0};
    load(&f, dir);
    return f;
}

/* A queue with one scheduler on the fixture's model; 0 limits take TEI's defaults. */
static void start_queue(fixture *f, serve_limits limits)
{
    if (!limits.max_batch_tokens) limits.max_batch_tokens = 16384;
    if (!limits.max_queued_inputs) limits.max_queued_inputs = 512 * 32;
    f->metrics = serve_metrics_create();
    cr_assert_not_null(f->metrics);
    f->queue = serve_queue_create(&limits, f->metrics);
    cr_assert_not_null(f->queue);
    cr_assert_eq(serve_queue_add_scheduler(f->queue, f->ctx, f->model, "test device"), 0);
    cr_assert_eq(serve_queue_healthy(f->queue), 1);
}

static void stop_queue(fixture *f)
{
    serve_queue_destroy(f->queue);
    serve_metrics_destroy(f->metrics);
    f->queue = NULL, f->metrics = NULL;
}

static void close_model(fixture *f)
{
    if (f->queue) stop_queue(f);
    vkbert_model_destroy(f->model);
    test_context_done(f->ctx);
}

/* ---- works ---- */

typedef struct job {
    serve_work work;
    vkbert_encoding inputs[MAX_INPUTS];
    float *want; /* the rows of the work run alone */
    serve_outcome outcome;
    pthread_barrier_t *start;
    serve_queue *queue;
} job;

static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

/* [CLS] random words [SEP], `length` ids in all. */
static void make_input(vkbert_encoding *in, int length, uint64_t *state)
{
    *in = (vkbert_encoding)VKBERT_ENCODING_INIT;
    in->ids = malloc((size_t)length * sizeof *in->ids);
    cr_assert_not_null(in->ids);
    in->ids[0] = CLS_ID;
    for (int i = 1; i < length - 1; i++)
        in->ids[i] = 5 + (int32_t)(next_random(state) % (VOCAB_SIZE - 5));
    in->ids[length - 1] = SEP_ID;
    in->count = in->full_count = length;
}

static int width_of(const fixture *f, serve_task task)
{
    return task == SERVE_TASK_EMBED ? vkbert_model_dimension(f->model) : LABELS;
}

/* The work of `count` inputs of these lengths, its rows poisoned, its reference computed on
 * `ref` (the fixture's model unless that one is meant to fail). */
static void make_job(job *j, vkbert_model *ref, const fixture *f, serve_task task, int raw,
                     int count, const int *lengths, uint64_t seed)
{
    memset(j, 0, sizeof *j);
    uint64_t state = seed;
    for (int i = 0; i < count; i++)
        make_input(&j->inputs[i], lengths[i], &state);
    int width = width_of(f, task);
    j->work = (serve_work){.task = task,
                           .raw_scores = raw,
                           .count = count,
                           .inputs = j->inputs,
                           .width = width,
                           .rows = test_poisoned((size_t)count * width),
                           .client_fd = -1};
    j->want = malloc((size_t)count * width * sizeof *j->want);
    cr_assert_not_null(j->want);
    vkbert_status status = task == SERVE_TASK_EMBED
                               ? vkbert_model_embed_inputs(ref, j->inputs, count, -1, j->want)
                               : vkbert_model_score_inputs(ref, j->inputs, count, raw, j->want);
    cr_assert_eq(status, VKBERT_OK, "reference: %s", vkbert_status_name(status));
}

/* Lengths from 3 to 40 and 1 to MAX_INPUTS - 1 inputs, varying with i; with `kinds`, every
 * third work scores (with raw_scores every other time), else all embed. */
static void make_varied_job(job *j, const fixture *f, int i, int kinds)
{
    int lengths[MAX_INPUTS];
    int count = 1 + i % (MAX_INPUTS - 1);
    for (int k = 0; k < count; k++)
        lengths[k] = 3 + (i * 7 + k * 13) % 38;
    serve_task task = kinds && i % 3 == 2 ? SERVE_TASK_SCORE : SERVE_TASK_EMBED;
    make_job(j, f->model, f, task, i % 2, count, lengths, 100 + (uint64_t)i);
}

static void check_rows(const job *j, const char *what)
{
    cr_assert_eq(j->outcome, SERVE_DONE, "%s: outcome %d (%s)", what, (int)j->outcome,
                 j->work.error);
    size_t n = (size_t)j->work.count * j->work.width;
    double *want = malloc(n * sizeof *want);
    cr_assert_not_null(want);
    for (size_t i = 0; i < n; i++)
        want[i] = j->want[i];
    test_assert_fp32_close(j->work.rows, want, n, what);
    free(want);
}

static void free_job(job *j)
{
    for (int i = 0; i < j->work.count; i++)
        free(j->inputs[i].ids);
    free(j->work.rows);
    free(j->want);
}

static int job_tokens(const job *j)
{
    int tokens = 0;
    for (int i = 0; i < j->work.count; i++)
        tokens += j->inputs[i].count;
    return tokens;
}

static void *job_thread(void *arg)
{
    job *j = arg;
    pthread_barrier_wait(j->start);
    j->work.arrived_ms = serve_now_ms();
    j->outcome = serve_queue_run(j->queue, &j->work);
    return NULL;
}

/* Runs every job's work on a thread of its own, all released at once; `meanwhile`, when
 * given, acts on the queue as they go. */
static void run_all(fixture *f, job *jobs, int n, void (*meanwhile)(fixture *))
{
    pthread_t threads[MAX_JOBS];
    pthread_barrier_t start;
    cr_assert_eq(pthread_barrier_init(&start, NULL, (unsigned)n + 1), 0);
    for (int i = 0; i < n; i++) {
        jobs[i].start = &start;
        jobs[i].queue = f->queue;
        cr_assert_eq(pthread_create(&threads[i], NULL, job_thread, &jobs[i]), 0);
    }
    pthread_barrier_wait(&start);
    if (meanwhile) meanwhile(f);
    for (int i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
}

static void stop_now(fixture *f)
{
    serve_queue_stop(f->queue);
}

/* ---- the metrics text ---- */

static double metric_of(serve_metrics *m, const char *sample)
{
    char *text = serve_metrics_render(m);
    cr_assert_not_null(text);
    double value = test_metric(text, sample);
    free(text);
    return value;
}

static void check_metrics(serve_metrics *m)
{
    char *text = serve_metrics_render(m);
    cr_assert_not_null(text);
    test_check_exposition(text);
    free(text);
}

/* ---- the queue ---- */

/* Concurrent requests share passes, and each gets what it would alone. */
Test(serve_queue, concurrent_requests_batch_together_and_match_alone)
{
    fixture f = open_model();
    job jobs[12];
    int inputs = 0, tokens = 0;
    for (int i = 0; i < 12; i++) {
        make_varied_job(&jobs[i], &f, i, 0);
        inputs += jobs[i].work.count;
        tokens += job_tokens(&jobs[i]);
    }
    start_queue(&f, (serve_limits){0});
    run_all(&f, jobs, 12, NULL);
    for (int i = 0; i < 12; i++) {
        char what[32];
        snprintf(what, sizeof what, "work %d", i);
        check_rows(&jobs[i], what);
    }
    /* A pass per work at least, were no two works ever batched together. */
    double batches = metric_of(f.metrics, "vkbert_batches_total");
    cr_assert_lt(batches, 12, "%g passes for 12 works: none batched together", batches);
    cr_assert_eq(metric_of(f.metrics, "vkbert_batch_size_count"), batches);
    cr_assert_eq(metric_of(f.metrics, "vkbert_batch_size_sum"), inputs);
    cr_assert_eq(metric_of(f.metrics, "vkbert_batch_tokens_real_total"), tokens);
    cr_assert_eq(metric_of(f.metrics, "vkbert_queue_duration_seconds_count"), inputs);
    cr_assert_eq(metric_of(f.metrics, "vkbert_queue_size"), 0);
    cr_assert_eq(metric_of(f.metrics, "vkbert_healthy"), 1);
    check_metrics(f.metrics);
    for (int i = 0; i < 12; i++)
        free_job(&jobs[i]);
    close_model(&f);
}

/* Embeddings, scores and raw scores in one stream: each batch holds one kind. */
Test(serve_queue, each_kind_of_work_gets_its_own_rows)
{
    fixture f = open_model();
    job jobs[12];
    for (int i = 0; i < 12; i++)
        make_varied_job(&jobs[i], &f, i, 1);
    start_queue(&f, (serve_limits){0});
    run_all(&f, jobs, 12, NULL);
    for (int i = 0; i < 12; i++)
        check_rows(&jobs[i], jobs[i].work.task == SERVE_TASK_EMBED ? "embedding" : "scores");
    for (int i = 0; i < 12; i++)
        free_job(&jobs[i]);
    close_model(&f);
}

Test(serve_queue, max_batch_requests_one_runs_one_input_a_pass)
{
    fixture f = open_model();
    job jobs[8];
    int inputs = 0;
    for (int i = 0; i < 8; i++) {
        make_varied_job(&jobs[i], &f, i, 1);
        inputs += jobs[i].work.count;
    }
    start_queue(&f, (serve_limits){.max_batch_requests = 1});
    run_all(&f, jobs, 8, NULL);
    for (int i = 0; i < 8; i++)
        check_rows(&jobs[i], "work");
    cr_assert_eq(metric_of(f.metrics, "vkbert_batches_total"), inputs);
    cr_assert_eq(metric_of(f.metrics, "vkbert_batch_size_bucket{le=\"1\"}"), inputs);
    check_metrics(f.metrics);
    for (int i = 0; i < 8; i++)
        free_job(&jobs[i]);
    close_model(&f);
}

/* count x longest stays within max_batch_tokens, except an input longer than it alone. */
Test(serve_queue, max_batch_tokens_bounds_the_padded_tokens)
{
    fixture f = open_model();
    job jobs[12];
    for (int i = 0; i < 12; i++)
        make_varied_job(&jobs[i], &f, i, 1);
    /* 64 is one of vkbert_batch_tokens' bounds, and every input has 40 tokens at most. */
    start_queue(&f, (serve_limits){.max_batch_tokens = 64});
    run_all(&f, jobs, 12, NULL);
    for (int i = 0; i < 12; i++)
        check_rows(&jobs[i], "work");
    double batches = metric_of(f.metrics, "vkbert_batches_total");
    cr_assert_eq(metric_of(f.metrics, "vkbert_batch_tokens_bucket{le=\"64\"}"), batches);
    check_metrics(f.metrics);
    stop_queue(&f);

    /* Below 2 x 40 and 40 + 12, each input runs alone, the long ones over the limit. */
    job alone;
    make_job(&alone, f.model, &f, SERVE_TASK_EMBED, 0, 3, (const int[]){40, 40, 12}, 9);
    start_queue(&f, (serve_limits){.max_batch_tokens = 32});
    alone.work.arrived_ms = serve_now_ms();
    alone.outcome = serve_queue_run(f.queue, &alone.work);
    check_rows(&alone, "inputs over max_batch_tokens");
    cr_assert_eq(metric_of(f.metrics, "vkbert_batches_total"), 3);
    cr_assert_eq(metric_of(f.metrics, "vkbert_batch_size_bucket{le=\"1\"}"), 3);
    free_job(&alone);
    for (int i = 0; i < 12; i++)
        free_job(&jobs[i]);
    close_model(&f);
}

/* A work over the free room is refused at once; what was accepted completes. */
Test(serve_queue, overload_is_refused_while_accepted_work_completes)
{
    fixture f = open_model();
    job jobs[MAX_JOBS];
    for (int i = 0; i < MAX_JOBS - 1; i++)
        make_varied_job(&jobs[i], &f, i, 1);
    const int lengths[MAX_INPUTS] = {5, 6, 7, 8};
    make_job(&jobs[MAX_JOBS - 1], f.model, &f, SERVE_TASK_EMBED, 0, 4, lengths, 77);
    /* Room for 3 inputs: the last work's 4 never fit, the others' 1 to 3 when the queue has
     * room as they arrive. */
    start_queue(&f, (serve_limits){.max_queued_inputs = 3});
    run_all(&f, jobs, MAX_JOBS, NULL);
    cr_assert_eq(jobs[MAX_JOBS - 1].outcome, SERVE_OVERLOADED);
    for (size_t i = 0; i < 4 * (size_t)jobs[MAX_JOBS - 1].work.width; i++)
        cr_assert(isnan(jobs[MAX_JOBS - 1].work.rows[i]), "a refused work's rows were written");
    int done = 0;
    for (int i = 0; i < MAX_JOBS - 1; i++) {
        if (jobs[i].outcome == SERVE_OVERLOADED) continue;
        check_rows(&jobs[i], "accepted work");
        done++;
    }
    cr_assert_gt(done, 0);
    cr_assert_eq(serve_queue_depth(f.queue), 0);
    /* Exactly the room (work 14 has 3 inputs), once the queue is empty, is accepted. */
    jobs[MAX_JOBS - 2].outcome = serve_queue_run(f.queue, &jobs[MAX_JOBS - 2].work);
    check_rows(&jobs[MAX_JOBS - 2], "a work the size of the queue");
    check_metrics(f.metrics);
    for (int i = 0; i < MAX_JOBS; i++)
        free_job(&jobs[i]);
    close_model(&f);
}

/* A closed peer drops the request before its inputs run; an open one runs. */
Test(serve_queue, a_gone_client_is_dropped_before_it_runs)
{
    fixture f = open_model();
    job gone, alive;
    make_job(&gone, f.model, &f, SERVE_TASK_EMBED, 0, 2, (const int[]){6, 9}, 3);
    make_job(&alive, f.model, &f, SERVE_TASK_SCORE, 0, 2, (const int[]){6, 9}, 4);
    int closed[2], open[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, closed), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, open), 0);
    close(closed[1]);
    gone.work.client_fd = closed[0];
    alive.work.client_fd = open[0];
    start_queue(&f, (serve_limits){0});

    cr_assert_eq(serve_queue_run(f.queue, &gone.work), SERVE_GONE);
    for (size_t i = 0; i < 2 * (size_t)gone.work.width; i++)
        cr_assert(isnan(gone.work.rows[i]), "a gone client's rows were written");
    cr_assert_eq(metric_of(f.metrics, "vkbert_batches_total"), 0, "a gone client's inputs ran");

    alive.outcome = serve_queue_run(f.queue, &alive.work);
    check_rows(&alive, "an open client");
    cr_assert_eq(metric_of(f.metrics, "vkbert_batches_total"), 1);
    close(closed[0]), close(open[0]), close(open[1]);
    free_job(&gone), free_job(&alive);
    close_model(&f);
}

/* Once the only device is lost, the queue is unhealthy and refuses all work; nothing queued
 * is left waiting. */
Test(serve_queue, a_lost_device_makes_the_queue_unhealthy)
{
    fixture ref = open_model();
    job jobs[8];
    for (int i = 0; i < 8; i++)
        make_varied_job(&jobs[i], &ref, i, 1);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/model", test_tmpdir);
    /* The context reads the hook when it is made: every pass after its first fails. */
    cr_assert_eq(setenv("VKBERT_FAULT_LOST_AFTER_PASSES", "1", 1), 0);
    fixture f = {0};
    load(&f, dir);
    unsetenv("VKBERT_FAULT_LOST_AFTER_PASSES");
    /* One input a pass: 8 works need many passes, so the device is lost among them. */
    start_queue(&f, (serve_limits){.max_batch_requests = 1});
    run_all(&f, jobs, 8, NULL);
    int lost = 0;
    for (int i = 0; i < 8; i++) {
        if (jobs[i].outcome == SERVE_DONE) {
            check_rows(&jobs[i], "a work done before the loss");
            continue;
        }
        cr_assert_eq(jobs[i].outcome, SERVE_UNHEALTHY, "work %d: %d", i, (int)jobs[i].outcome);
        cr_assert_eq(jobs[i].work.status, VKBERT_ERROR_DEVICE_LOST);
        cr_assert_neq(jobs[i].work.error[0], 0, "no message");
        lost++;
    }
    cr_assert_gt(lost, 0);
    cr_assert_eq(serve_queue_healthy(f.queue), 0);
    cr_assert_eq(serve_queue_depth(f.queue), 0);
    cr_assert_eq(metric_of(f.metrics, "vkbert_healthy"), 0);
    cr_assert_eq(serve_queue_run(f.queue, &jobs[0].work), SERVE_UNHEALTHY);
    check_metrics(f.metrics);
    for (int i = 0; i < 8; i++)
        free_job(&jobs[i]);
    close_model(&f);
    close_model(&ref);
}

/* Stopping refuses new work and still runs what was queued. */
Test(serve_queue, stop_runs_what_is_queued_and_refuses_the_rest)
{
    fixture f = open_model();
    job jobs[12];
    for (int i = 0; i < 12; i++)
        make_varied_job(&jobs[i], &f, i, 1);
    start_queue(&f, (serve_limits){0});
    run_all(&f, jobs, 12, stop_now);
    int done = 0, inputs = 0;
    for (int i = 0; i < 12; i++) {
        if (jobs[i].outcome == SERVE_UNHEALTHY) continue;
        check_rows(&jobs[i], "work queued before the stop");
        done++;
        inputs += jobs[i].work.count;
    }
    cr_assert_eq(metric_of(f.metrics, "vkbert_batch_size_sum"), inputs);
    cr_assert_eq(serve_queue_healthy(f.queue), 0);
    cr_assert_eq(serve_queue_run(f.queue, &jobs[0].work), SERVE_UNHEALTHY);
    cr_assert_eq(metric_of(f.metrics, "vkbert_healthy"), 0);
    for (int i = 0; i < 12; i++)
        free_job(&jobs[i]);
    close_model(&f);
}

#define SHUTTING_DOWN "the server is shutting down"

/* The drain's deadline as serve_main meets it, once the first pass is done: the queue is
 * still long then, as every input runs alone. */
static void abandon_once_running(fixture *f)
{
    while (metric_of(f->metrics, "vkbert_batches_total") < 1)
        usleep(100);
    serve_queue_abandon(f->queue, SHUTTING_DOWN);
}

/* The rows of `j` that were written (poisoned ones were not), each checked against the work
 * run alone; how many. */
static int written_rows(const job *j)
{
    int written = 0;
    for (int r = 0; r < j->work.count; r++) {
        const float *row = j->work.rows + (size_t)r * j->work.width;
        if (isnan(row[0])) continue;
        double want[64];
        cr_assert_leq(j->work.width, 64);
        for (int k = 0; k < j->work.width; k++)
            want[k] = j->want[(size_t)r * j->work.width + k];
        test_assert_fp32_close(row, want, (size_t)j->work.width, "a row that ran");
        written++;
    }
    return written;
}

/* Past the drain's deadline what is still queued fails with the reason (503 on the route)
 * and never runs; the pass on the device when it came completes with its rows. */
Test(serve_queue, abandon_fails_what_is_queued_and_runs_nothing_after)
{
    fixture f = open_model();
    job jobs[MAX_JOBS];
    for (int i = 0; i < MAX_JOBS; i++)
        make_job(&jobs[i], f.model, &f, SERVE_TASK_EMBED, 0, 3, (const int[]){40, 40, 40},
                 200 + (uint64_t)i);
    start_queue(&f, (serve_limits){.max_batch_requests = 1});
    run_all(&f, jobs, MAX_JOBS, abandon_once_running);
    int ran = 0, abandoned = 0;
    for (int i = 0; i < MAX_JOBS; i++) {
        int written = written_rows(&jobs[i]);
        ran += written;
        if (jobs[i].outcome == SERVE_DONE) {
            cr_assert_eq(written, 3, "work %d done with %d rows", i, written);
            continue;
        }
        cr_assert_eq(jobs[i].outcome, SERVE_UNHEALTHY, "work %d: %d", i, (int)jobs[i].outcome);
        cr_assert_eq(jobs[i].work.status, VKBERT_OK);
        /* A thread that came after the abandon was refused at the door, with no message. */
        if (!jobs[i].work.error[0] && !written) continue;
        cr_assert_str_eq(jobs[i].work.error, SHUTTING_DOWN);
        abandoned++;
    }
    cr_assert_gt(abandoned, 0, "the first pass's end found nothing queued");
    cr_assert_gt(ran, 0);
    /* Every input that ran wrote its rows: none ran but those seen. */
    cr_assert_eq(metric_of(f.metrics, "vkbert_batch_size_sum"), ran);
    cr_assert_eq(serve_queue_depth(f.queue), 0);
    cr_assert_eq(serve_queue_healthy(f.queue), 0);
    cr_assert_eq(serve_queue_run(f.queue, &jobs[0].work), SERVE_UNHEALTHY);
    for (int i = 0; i < MAX_JOBS; i++)
        free_job(&jobs[i]);
    close_model(&f);
}

/* ---- without a device ---- */

Test(serve_queue, without_a_scheduler_the_queue_is_unhealthy)
{
    serve_metrics *m = serve_metrics_create();
    serve_queue *q = serve_queue_create(&(serve_limits){16384, 0, 64}, m);
    cr_assert_not_null(q);
    vkbert_encoding in = VKBERT_ENCODING_INIT;
    float row[4];
    serve_work work = {.count = 1, .inputs = &in, .width = 4, .rows = row, .client_fd = -1};
    cr_assert_eq(serve_queue_healthy(q), 0);
    cr_assert_eq(serve_queue_run(q, &work), SERVE_UNHEALTHY);
    cr_assert_eq(metric_of(m, "vkbert_healthy"), 0);
    serve_queue_destroy(q);
    serve_metrics_destroy(m);
}

/* The counters from what was recorded; a flood of unknown paths adds no series. */
Test(serve_queue, metrics_text_counts_what_was_recorded)
{
    serve_metrics *m = serve_metrics_create();
    cr_assert_not_null(m);
    serve_metrics_request(m, "/embed", 200, 3.5, 12);
    serve_metrics_request(m, "/embed", 200, 1200, 8);
    serve_metrics_request(m, "/embed", 429, 0.2, 0);
    serve_metrics_request(m, "/v1/embeddings", 413, 0.1, 0);
    serve_metrics_request(m, "/nowhere", 404, 0.1, 0);
    serve_metrics_batch(m, 3, 20, 30, 4.0);
    serve_metrics_batch(m, 1, 7, 7, 2.0);
    serve_metrics_queue_time(m, 0.5);
    serve_metrics_gauges(m, 5, 1);
    char *text = serve_metrics_render(m);
    cr_assert_not_null(text);
    test_check_exposition(text);
    cr_assert_eq(test_metric(text, "vkbert_requests_total{route=\"/embed\",status=\"200\"}"), 2);
    cr_assert_eq(test_metric(text, "vkbert_errors_total{route=\"/embed\",status=\"429\"}"), 1);
    cr_assert_null(strstr(text, "vkbert_errors_total{route=\"/embed\",status=\"200\"}"));
    cr_assert_eq(test_metric(text, "vkbert_errors_total{route=\"/v1/embeddings\",status=\"413\"}"),
                 1);
    cr_assert_eq(test_metric(text, "vkbert_requests_total{route=\"other\",status=\"404\"}"), 1);
    cr_assert_eq(test_metric(text, "vkbert_request_tokens_total{route=\"/embed\"}"), 20);
    /* 3.5 ms and 1.2 s: one at or under 5 ms, both under 2.5 s. */
    cr_assert_eq(
        test_metric(text, "vkbert_request_duration_seconds_bucket{route=\"/embed\",le=\"0.005\"}"),
        2);
    cr_assert_eq(
        test_metric(text, "vkbert_request_duration_seconds_bucket{route=\"/embed\",le=\"1\"}"), 2);
    cr_assert_eq(test_metric(text, "vkbert_request_duration_seconds_count{route=\"/embed\"}"), 3);
    cr_assert_eq(test_metric(text, "vkbert_batches_total"), 2);
    cr_assert_eq(test_metric(text, "vkbert_batch_tokens_real_total"), 27);
    cr_assert_eq(test_metric(text, "vkbert_batch_tokens_sum"), 37);
    cr_assert_eq(test_metric(text, "vkbert_batch_size_bucket{le=\"2\"}"), 1);
    cr_assert_eq(test_metric(text, "vkbert_batch_size_bucket{le=\"4\"}"), 2);
    cr_assert_float_eq(test_metric(text, "vkbert_inference_duration_seconds_sum"), 0.006, 1e-12);
    cr_assert_eq(test_metric(text, "vkbert_queue_size"), 5);
    cr_assert_eq(test_metric(text, "vkbert_healthy"), 1);

    size_t lines = 0;
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    free(text);
    for (int i = 0; i < 10000; i++) {
        char path[32];
        snprintf(path, sizeof path, "/random/%d", i);
        serve_metrics_request(m, path, 404, 0.1, 0);
    }
    text = serve_metrics_render(m);
    size_t after = 0;
    for (const char *c = text; *c; c++)
        after += *c == '\n';
    cr_assert_eq(after, lines, "unknown paths added series");
    cr_assert_eq(test_metric(text, "vkbert_requests_total{route=\"other\",status=\"404\"}"), 10001);
    free(text);
    serve_metrics_destroy(m);
}
