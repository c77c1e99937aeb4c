/* The queue of pre-tokenized inputs and one scheduler thread per device.
 *
 * Request threads append their inputs in arrival order and sleep; each scheduler takes a
 * prefix of the queue as one batch, runs it on its device with the queue's mutex let go, and
 * hands each request its rows. The batching rule is text-embeddings-inference's
 * (core/src/queue.rs, padded models): entries in arrival order until one more would make
 * count x longest exceed max_batch_tokens, or the count reach max_batch_requests. Unlike TEI,
 * a batch holds one kind of work (embeddings, or scores with or without raw_scores), as
 * vkbert runs them through different calls; it stops at the first input of another kind, so
 * the order stays first come, first served. */
#define _POSIX_C_SOURCE 200809L

#include "serve.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

/* One serve_queue_run call, on its thread's stack until every input is accounted for. A
 * request's entries are appended under one lock and taken from the head only, so those still
 * queued always lie side by side. */
typedef struct request {
    serve_work *work;
    int remaining;         /* inputs not yet run, failed or dropped */
    serve_outcome outcome; /* SERVE_DONE until the first failure */
    unsigned checked;      /* the batch whose scheduler last looked at the client */
    pthread_cond_t done;
} request;

typedef struct entry {
    request *req;
    int index; /* into req->work->inputs */
} entry;

typedef struct scheduler {
    serve_queue *q;
    vkbert_context *ctx;
    vkbert_model *model;
    char device_name[128];
    pthread_t thread;
    int healthy;
    entry *batch;            /* [q->batch_capacity] */
    vkbert_encoding *inputs; /* [q->batch_capacity] */
    float *rows;             /* grown to the largest batch's, then kept */
    size_t row_capacity;
    char error[256]; /* the failed batch's message */
} scheduler;

struct serve_queue {
    serve_limits limits;
    serve_metrics *metrics;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* entries queued, or stopping */
    entry *ring;         /* [limits.max_queued_inputs] */
    int head, count;
    int batch_capacity;
    scheduler *schedulers[SERVE_MAX_DEVICES];
    int scheduler_count, healthy_count;
    int stopping, joining;
    unsigned batch_serial;
};

/* ---- under the lock ---- */

static int healthy(const serve_queue *q)
{
    return q->healthy_count > 0 && !q->stopping;
}

static void publish_gauges(serve_queue *q)
{
    serve_metrics_gauges(q->metrics, q->count, healthy(q));
}

static entry *slot(serve_queue *q, int i)
{
    return &q->ring[(q->head + i) % q->limits.max_queued_inputs];
}

static void pop(serve_queue *q)
{
    q->head = (q->head + 1) % q->limits.max_queued_inputs;
    q->count--;
}

/* `n` of the request's inputs are done with; the first failure is the one it reports. */
static void finish(request *req, int n, serve_outcome outcome, vkbert_status status,
                   const char *message)
{
    if (outcome != SERVE_DONE && req->outcome == SERVE_DONE) {
        req->outcome = outcome;
        req->work->status = status;
        snprintf(req->work->error, sizeof req->work->error, "%s", message);
    }
    req->remaining -= n;
    if (req->remaining == 0) pthread_cond_signal(&req->done);
}

/* TEI drops a queued entry whose response channel was closed by a client gone away
 * (core/src/queue.rs); here the request's socket says so: the peer of a closed socket reads as
 * end of file, a reset one as ECONNRESET. Anything else (data waiting, EAGAIN, an fd that is
 * not a socket) is a client still there. A client that only shut down its sending side reads
 * as end of file too: the FIN is the same, so it is taken as gone (docs/serving.md). */
static int client_gone(int fd)
{
    if (fd < 0) return 0;
    char byte;
    ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* Takes the entries of the request at the head of the queue out; returns how many. */
static int pop_request(serve_queue *q)
{
    request *req = slot(q, 0)->req;
    int n = 0;
    while (q->count > 0 && slot(q, 0)->req == req) {
        pop(q);
        n++;
    }
    return n;
}

static int same_kind(const serve_work *a, const serve_work *b)
{
    return a->task == b->task && (a->task != SERVE_TASK_SCORE || a->raw_scores == b->raw_scores);
}

/* Whether `count` inputs, the longest `longest` tokens, make an allowed batch. */
static int fits(const serve_queue *q, int count, int longest)
{
    const serve_limits *l = &q->limits;
    if (count > q->batch_capacity) return 0;
    if (l->max_batch_requests > 0 && count > l->max_batch_requests) return 0;
    return l->max_batch_tokens <= 0 || (long long)count * longest <= l->max_batch_tokens;
}

/* Moves the next batch from the head of the queue into s->batch; returns its size. Each
 * request met is checked once for a gone client, and dropped whole if so. */
static int take_batch(scheduler *s)
{
    serve_queue *q = s->q;
    unsigned serial = ++q->batch_serial;
    int n = 0, longest = 0;
    while (q->count > 0) {
        entry e = *slot(q, 0);
        const serve_work *w = e.req->work;
        if (e.req->checked != serial) {
            e.req->checked = serial;
            if (client_gone(w->client_fd)) {
                finish(e.req, pop_request(q), SERVE_GONE, VKBERT_OK, "the client went away");
                continue;
            }
        }
        int length = w->inputs[e.index].count;
        if (length < longest) length = longest;
        if (n > 0 && (!same_kind(w, s->batch[0].req->work) || !fits(q, n + 1, length))) break;
        s->batch[n++] = e;
        longest = length;
        pop(q);
    }
    return n;
}

/* With no device left, or past the shutdown's deadline, nothing queued will run: fail it
 * rather than leave it waiting. */
static void fail_queued(serve_queue *q, vkbert_status status, const char *message)
{
    while (q->count > 0) {
        request *req = slot(q, 0)->req;
        finish(req, pop_request(q), SERVE_UNHEALTHY, status, message);
    }
}

/* The rows are already copied; hands each entry its outcome. A lost device stops its
 * scheduler, and the last one fails the queue. */
static void finish_batch(scheduler *s, int n, vkbert_status status, int width)
{
    serve_queue *q = s->q;
    serve_outcome outcome = status == VKBERT_OK                  ? SERVE_DONE
                            : status == VKBERT_ERROR_DEVICE_LOST ? SERVE_UNHEALTHY
                                                                 : SERVE_FAILED;
    for (int i = 0; i < n; i++) {
        serve_work *w = s->batch[i].req->work;
        if (outcome == SERVE_DONE && w->width != width) {
            char message[160];
            snprintf(message, sizeof message, "serve_work.width is %d, the model's rows %d",
                     w->width, width);
            finish(s->batch[i].req, 1, SERVE_FAILED, VKBERT_ERROR_INVALID_ARGUMENT, message);
        } else {
            finish(s->batch[i].req, 1, outcome, status, s->error);
        }
    }
    if (status == VKBERT_ERROR_DEVICE_LOST && s->healthy) {
        s->healthy = 0;
        if (--q->healthy_count == 0) {
            char message[sizeof s->error];
            snprintf(message, sizeof message, "the last device (%.60s) was lost: %.160s",
                     s->device_name, s->error);
            fail_queued(q, VKBERT_ERROR_DEVICE_LOST, message);
        }
        publish_gauges(q);
    }
}

/* ---- on the scheduler's thread, without the lock ---- */

static int batch_width(const scheduler *s)
{
    const serve_work *w = s->batch[0].req->work;
    return w->task == SERVE_TASK_EMBED ? vkbert_model_dimension(s->model)
                                       : vkbert_model_labels(s->model);
}

static vkbert_status run_model(scheduler *s, int n, float *rows, size_t floats)
{
    const serve_work *w = s->batch[0].req->work;
    vkbert_status status;
    /* Embeddings are never normalized here: the route applies TEI's `normalize` and the
     * `dimensions` truncation itself. A result that is not finite fails the call with every
     * row written: then only the requests whose rows are not finite fail (serve_run), not the
     * others batched with them. Zeroed rows tell it from a shape over the device's limits,
     * which writes nothing. */
    memset(rows, 0, floats * sizeof *rows);
    if (w->task == SERVE_TASK_EMBED)
        status = vkbert_model_embed_inputs(s->model, s->inputs, n, -1, rows);
    else
        status = vkbert_model_score_inputs(s->model, s->inputs, n, w->raw_scores, rows);
    if (status == VKBERT_ERROR_DEVICE_LIMIT && !serve_all_finite(rows, floats)) return VKBERT_OK;
    if (status != VKBERT_OK) snprintf(s->error, sizeof s->error, "%s", vkbert_last_error(s->ctx));
    return status;
}

static vkbert_status ensure_rows(scheduler *s, size_t floats)
{
    if (floats <= s->row_capacity) return VKBERT_OK;
    float *rows = realloc(s->rows, floats * sizeof *rows);
    if (!rows) {
        snprintf(s->error, sizeof s->error, "serve queue: no memory for %zu result floats", floats);
        return VKBERT_ERROR_OUT_OF_MEMORY;
    }
    s->rows = rows;
    s->row_capacity = floats;
    return VKBERT_OK;
}

/* Runs s->batch[0..n) as one pass and copies each row into its work's rows. */
static vkbert_status run_batch(scheduler *s, int n, int width)
{
    int tokens = 0, longest = 0;
    for (int i = 0; i < n; i++) {
        s->inputs[i] = s->batch[i].req->work->inputs[s->batch[i].index];
        tokens += s->inputs[i].count;
        if (s->inputs[i].count > longest) longest = s->inputs[i].count;
    }
    size_t row = width > 0 ? (size_t)width : 1;
    vkbert_status status = ensure_rows(s, (size_t)n * row);
    if (status != VKBERT_OK) return status;
    double start = serve_now_ms();
    status = run_model(s, n, s->rows, (size_t)n * row);
    double end = serve_now_ms();
    serve_metrics_batch(s->q->metrics, n, tokens, n * longest, end - start);
    for (int i = 0; i < n; i++) {
        serve_work *w = s->batch[i].req->work;
        serve_metrics_queue_time(s->q->metrics, start - w->arrived_ms);
        /* The request waits until this entry is finished, so its rows are still ours. */
        if (status == VKBERT_OK && w->width == width)
            memcpy(w->rows + (size_t)s->batch[i].index * row, s->rows + (size_t)i * row,
                   row * sizeof *s->rows);
    }
    return status;
}

static void *scheduler_main(void *arg)
{
    scheduler *s = arg;
    serve_queue *q = s->q;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (s->healthy && q->count == 0 && !q->stopping)
            pthread_cond_wait(&q->wake, &q->lock);
        /* Stopping still runs what is queued; a lost device takes nothing more. */
        if (!s->healthy || q->count == 0) break;
        int n = take_batch(s);
        publish_gauges(q);
        if (n == 0) continue;
        pthread_mutex_unlock(&q->lock);
        int width = batch_width(s);
        vkbert_status status = run_batch(s, n, width);
        pthread_mutex_lock(&q->lock);
        finish_batch(s, n, status, width);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* ---- the calls ---- */

serve_queue *serve_queue_create(const serve_limits *limits, serve_metrics *metrics)
{
    if (!limits || limits->max_queued_inputs <= 0) return NULL;
    serve_queue *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->limits = *limits;
    q->metrics = metrics;
    q->ring = calloc((size_t)limits->max_queued_inputs, sizeof *q->ring);
    /* Each input has a token at least, so max_batch_tokens bounds a batch's count too. */
    q->batch_capacity = limits->max_queued_inputs;
    if (limits->max_batch_requests > 0 && limits->max_batch_requests < q->batch_capacity)
        q->batch_capacity = limits->max_batch_requests;
    if (limits->max_batch_tokens > 0 && limits->max_batch_tokens < q->batch_capacity)
        q->batch_capacity = limits->max_batch_tokens;
    int locked = pthread_mutex_init(&q->lock, NULL) == 0;
    int waked = locked && pthread_cond_init(&q->wake, NULL) == 0;
    if (!q->ring || !waked) {
        if (locked) pthread_mutex_destroy(&q->lock);
        free(q->ring);
        free(q);
        return NULL;
    }
    publish_gauges(q);
    return q;
}

static void scheduler_free(scheduler *s)
{
    if (!s) return;
    free(s->batch);
    free(s->inputs);
    free(s->rows);
    free(s);
}

static scheduler *scheduler_new(serve_queue *q, vkbert_context *ctx, vkbert_model *model,
                                const char *device_name)
{
    scheduler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->q = q;
    s->ctx = ctx;
    s->model = model;
    s->healthy = 1;
    snprintf(s->device_name, sizeof s->device_name, "%s", device_name ? device_name : "");
    s->batch = calloc((size_t)q->batch_capacity, sizeof *s->batch);
    s->inputs = calloc((size_t)q->batch_capacity, sizeof *s->inputs);
    if (s->batch && s->inputs) return s;
    scheduler_free(s);
    return NULL;
}

int serve_queue_add_scheduler(serve_queue *q, vkbert_context *ctx, vkbert_model *model,
                              const char *device_name)
{
    scheduler *s = scheduler_new(q, ctx, model, device_name);
    if (!s) return -1;
    pthread_mutex_lock(&q->lock);
    int ok = !q->stopping && q->scheduler_count < SERVE_MAX_DEVICES &&
             pthread_create(&s->thread, NULL, scheduler_main, s) == 0;
    if (ok) {
        q->schedulers[q->scheduler_count++] = s;
        q->healthy_count++;
        publish_gauges(q);
    }
    pthread_mutex_unlock(&q->lock);
    if (!ok) scheduler_free(s);
    return ok ? 0 : -1;
}

/* Why the queue takes no more work now, or SERVE_DONE when it does. */
static serve_outcome refusal(const serve_queue *q, const serve_work *work)
{
    if (!healthy(q)) return SERVE_UNHEALTHY;
    if (work->count > q->limits.max_queued_inputs - q->count) return SERVE_OVERLOADED;
    return SERVE_DONE;
}

serve_outcome serve_queue_run(serve_queue *q, serve_work *work)
{
    work->status = VKBERT_OK;
    work->error[0] = 0;
    if (work->count <= 0) return SERVE_DONE;
    request req = {.work = work, .remaining = work->count, .outcome = SERVE_DONE};
    /* No condition variable to wait on is a resource exhausted, as a full queue is. */
    if (pthread_cond_init(&req.done, NULL) != 0) return SERVE_OVERLOADED;
    pthread_mutex_lock(&q->lock);
    serve_outcome refused = refusal(q, work);
    if (refused == SERVE_DONE) {
        for (int i = 0; i < work->count; i++) {
            *slot(q, q->count) = (entry){&req, i};
            q->count++;
        }
        publish_gauges(q);
        pthread_cond_broadcast(&q->wake);
        while (req.remaining > 0)
            pthread_cond_wait(&req.done, &q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    pthread_cond_destroy(&req.done);
    return refused != SERVE_DONE ? refused : req.outcome;
}

int serve_queue_healthy(serve_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int h = healthy(q);
    pthread_mutex_unlock(&q->lock);
    return h;
}

int serve_queue_depth(serve_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int depth = q->count;
    pthread_mutex_unlock(&q->lock);
    return depth;
}

void serve_queue_stop(serve_queue *q)
{
    if (!q) return;
    pthread_mutex_lock(&q->lock);
    int join = !q->joining;
    q->stopping = 1;
    q->joining = 1;
    publish_gauges(q);
    pthread_cond_broadcast(&q->wake);
    pthread_mutex_unlock(&q->lock);
    /* The schedulers list no longer changes: add_scheduler refuses once stopping. */
    for (int i = 0; join && i < q->scheduler_count; i++)
        pthread_join(q->schedulers[i]->thread, NULL);
}

void serve_queue_abandon(serve_queue *q, const char *why)
{
    if (!q) return;
    pthread_mutex_lock(&q->lock);
    q->stopping = 1;
    fail_queued(q, VKBERT_OK, why);
    pthread_mutex_unlock(&q->lock);
    serve_queue_stop(q);
}

void serve_queue_destroy(serve_queue *q)
{
    if (!q) return;
    serve_queue_stop(q);
    for (int i = 0; i < q->scheduler_count; i++)
        scheduler_free(q->schedulers[i]);
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}

double serve_now_ms(void)
{
    return plat_now_ms();
}
