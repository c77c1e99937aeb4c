/* The server's counters and histograms, and their Prometheus text (exposition format 0.0.4:
 * a HELP and a TYPE line per metric family, counters named *_total, histograms as cumulative
 * _bucket{le="..."} series ending at le="+Inf", then _sum and _count).
 *
 * Every label takes its values from a fixed table (routes, and statuses 0..599), so a flood of
 * unknown paths or odd statuses never grows memory. One mutex guards it all. */
#define _POSIX_C_SOURCE 200809L

#include "serve.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The routes of serve.h, then "other" for every path that is not one of them. */
static const char *const route_names[] = {
    "/v1/embeddings", "/embeddings", "/embed", "/rerank",  "/predict", "/tokenize",
    "/decode",        "/health",     "/info",  "/metrics", "other",
};
#define ROUTE_COUNT ((int)(sizeof route_names / sizeof *route_names))
/* HTTP statuses are three digits; 0 is serve_reply's "the client is gone". */
#define STATUS_COUNT 600

static const double seconds_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                        0.25,  0.5,    1,     2.5,  5,     10,   30};
static const double size_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
static const double token_bounds[] = {64,   128,  256,   512,   1024,  2048,
                                      4096, 8192, 16384, 32768, 65536, 131072};
#define MAX_BOUNDS 16

typedef struct histogram {
    const double *bounds;
    int bound_count;
    uint64_t counts[MAX_BOUNDS + 1]; /* per bucket, the last for values above every bound */
    uint64_t count;
    double sum;
} histogram;

struct serve_metrics {
    pthread_mutex_t lock;
    uint64_t requests[ROUTE_COUNT][STATUS_COUNT];
    uint64_t route_tokens[ROUTE_COUNT];
    histogram request_seconds[ROUTE_COUNT];
    histogram batch_size, batch_tokens, queue_seconds, inference_seconds;
    uint64_t batches, batch_tokens_real;
    int queue_size, healthy;
};

#define HISTOGRAM_OF(b) ((histogram){.bounds = (b), .bound_count = (int)(sizeof(b) / sizeof *(b))})

serve_metrics *serve_metrics_create(void)
{
    serve_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    for (int r = 0; r < ROUTE_COUNT; r++)
        m->request_seconds[r] = HISTOGRAM_OF(seconds_bounds);
    m->batch_size = HISTOGRAM_OF(size_bounds);
    m->batch_tokens = HISTOGRAM_OF(token_bounds);
    m->queue_seconds = HISTOGRAM_OF(seconds_bounds);
    m->inference_seconds = HISTOGRAM_OF(seconds_bounds);
    return m;
}

void serve_metrics_destroy(serve_metrics *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static void observe(histogram *h, double value)
{
    int b = 0;
    while (b < h->bound_count && value > h->bounds[b])
        b++;
    h->counts[b]++;
    h->count++;
    h->sum += value;
}

static int route_index(const char *route)
{
    for (int r = 0; route && r < ROUTE_COUNT - 1; r++)
        if (strcmp(route, route_names[r]) == 0) return r;
    return ROUTE_COUNT - 1;
}

void serve_metrics_request(serve_metrics *m, const char *route, int status, double ms, int tokens)
{
    if (!m) return;
    int r = route_index(route);
    if (status < 0 || status >= STATUS_COUNT) status = 0;
    pthread_mutex_lock(&m->lock);
    m->requests[r][status]++;
    if (tokens > 0) m->route_tokens[r] += (uint64_t)tokens;
    observe(&m->request_seconds[r], ms / 1e3);
    pthread_mutex_unlock(&m->lock);
}

void serve_metrics_batch(serve_metrics *m, int inputs, int tokens, int padded_tokens,
                         double inference_ms)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    m->batches++;
    m->batch_tokens_real += (uint64_t)(tokens > 0 ? tokens : 0);
    observe(&m->batch_size, inputs);
    observe(&m->batch_tokens, padded_tokens);
    observe(&m->inference_seconds, inference_ms / 1e3);
    pthread_mutex_unlock(&m->lock);
}

void serve_metrics_queue_time(serve_metrics *m, double ms)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    observe(&m->queue_seconds, ms / 1e3);
    pthread_mutex_unlock(&m->lock);
}

void serve_metrics_gauges(serve_metrics *m, int queued_inputs, int healthy)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    m->queue_size = queued_inputs;
    m->healthy = healthy;
    pthread_mutex_unlock(&m->lock);
}

/* ---- the text ---- */

/* A growing string; `failed` once an allocation did not succeed, and every later put is a
 * no-op, so render checks once at the end. */
typedef struct text {
    char *data;
    size_t size, capacity;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) PLAT_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...)
{
    for (int attempt = 0; attempt < 2 && !t->failed; attempt++) {
        va_list args;
        va_start(args, fmt);
        int n = vsnprintf(t->data + t->size, t->capacity - t->size, fmt, args);
        va_end(args);
        if (n < 0) break;
        if ((size_t)n < t->capacity - t->size) {
            t->size += (size_t)n;
            return;
        }
        size_t capacity = 2 * t->capacity + (size_t)n + 1;
        char *data = realloc(t->data, capacity);
        if (!data) break;
        t->data = data;
        t->capacity = capacity;
    }
    t->failed = 1;
}

/* A label value with the format's escapes: backslash, double quote and line feed. */
static void put_label_value(text *t, const char *value)
{
    put(t, "\"");
    for (const char *c = value; *c; c++) {
        if (*c == '\\')
            put(t, "\\\\");
        else if (*c == '"')
            put(t, "\\\"");
        else if (*c == '\n')
            put(t, "\\n");
        else
            put(t, "%c", *c);
    }
    put(t, "\"");
}

static void put_family(text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The samples of one histogram; `route` NULL for one without labels. */
static void put_histogram(text *t, const char *name, const char *route, const histogram *h)
{
    uint64_t cumulative = 0;
    for (int b = 0; b <= h->bound_count; b++) {
        cumulative += h->counts[b];
        put(t, "%s_bucket{", name);
        if (route) {
            put(t, "route=");
            put_label_value(t, route);
            put(t, ",");
        }
        if (b < h->bound_count)
            put(t, "le=\"%g\"} %llu\n", h->bounds[b], (unsigned long long)cumulative);
        else
            put(t, "le=\"+Inf\"} %llu\n", (unsigned long long)cumulative);
    }
    const char *suffixes[] = {"_sum", "_count"};
    for (int s = 0; s < 2; s++) {
        put(t, "%s%s", name, suffixes[s]);
        if (route) {
            put(t, "{route=");
            put_label_value(t, route);
            put(t, "}");
        }
        if (s == 0)
            put(t, " %.17g\n", h->sum);
        else
            put(t, " %llu\n", (unsigned long long)h->count);
    }
}

/* A {route,status} counter over the statuses from `first_status` on. */
static void put_status_counter(text *t, const serve_metrics *m, const char *name, int first_status)
{
    for (int r = 0; r < ROUTE_COUNT; r++)
        for (int s = first_status; s < STATUS_COUNT; s++) {
            if (!m->requests[r][s]) continue;
            put(t, "%s{route=", name);
            put_label_value(t, route_names[r]);
            put(t, ",status=\"%d\"} %llu\n", s, (unsigned long long)m->requests[r][s]);
        }
}

static void put_requests(text *t, const serve_metrics *m)
{
    put_family(t, "vkbert_requests_total", "counter", "HTTP requests by route and status.");
    put_status_counter(t, m, "vkbert_requests_total", 0);
    put_family(t, "vkbert_errors_total", "counter",
               "HTTP requests answered with a status of 400 or more.");
    put_status_counter(t, m, "vkbert_errors_total", 400);
    put_family(t, "vkbert_request_tokens_total", "counter", "Tokens of the requests by route.");
    for (int r = 0; r < ROUTE_COUNT; r++) {
        put(t, "vkbert_request_tokens_total{route=");
        put_label_value(t, route_names[r]);
        put(t, "} %llu\n", (unsigned long long)m->route_tokens[r]);
    }
    put_family(t, "vkbert_request_duration_seconds", "histogram",
               "Time from a request's arrival to its answer.");
    for (int r = 0; r < ROUTE_COUNT; r++)
        put_histogram(t, "vkbert_request_duration_seconds", route_names[r], &m->request_seconds[r]);
}

static void put_batches(text *t, const serve_metrics *m)
{
    put_family(t, "vkbert_batches_total", "counter", "Forward passes run.");
    put(t, "vkbert_batches_total %llu\n", (unsigned long long)m->batches);
    put_family(t, "vkbert_batch_tokens_real_total", "counter",
               "Tokens of the inputs run, without padding.");
    put(t, "vkbert_batch_tokens_real_total %llu\n", (unsigned long long)m->batch_tokens_real);
    put_family(t, "vkbert_batch_size", "histogram", "Inputs per forward pass.");
    put_histogram(t, "vkbert_batch_size", NULL, &m->batch_size);
    put_family(t, "vkbert_batch_tokens", "histogram",
               "Padded tokens per forward pass: inputs times the longest.");
    put_histogram(t, "vkbert_batch_tokens", NULL, &m->batch_tokens);
    put_family(t, "vkbert_queue_duration_seconds", "histogram",
               "Time from a request's arrival to the start of its input's forward pass.");
    put_histogram(t, "vkbert_queue_duration_seconds", NULL, &m->queue_seconds);
    put_family(t, "vkbert_inference_duration_seconds", "histogram",
               "Time of one forward pass on the device.");
    put_histogram(t, "vkbert_inference_duration_seconds", NULL, &m->inference_seconds);
    put_family(t, "vkbert_queue_size", "gauge", "Inputs waiting in the queue.");
    put(t, "vkbert_queue_size %d\n", m->queue_size);
    put_family(t, "vkbert_healthy", "gauge", "1 while a device works and the server runs.");
    put(t, "vkbert_healthy %d\n", m->healthy);
}

char *serve_metrics_render(serve_metrics *m)
{
    if (!m) return NULL;
    text t = {.capacity = 16384};
    t.data = malloc(t.capacity);
    if (!t.data) return NULL;
    pthread_mutex_lock(&m->lock);
    put_requests(&t, m);
    put_batches(&t, m);
    pthread_mutex_unlock(&m->lock);
    if (t.failed) {
        free(t.data);
        return NULL;
    }
    return t.data;
}
