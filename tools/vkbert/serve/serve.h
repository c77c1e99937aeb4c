/* vkbert serve: an HTTP server for a model folder, with the OpenAI embeddings route and
 * text-embeddings-inference's (TEI's) routes, batching the inputs of concurrent requests.
 *
 * The parts, and what each never knows:
 * - serve_config.c: the flags and their environment variables; knows nothing else.
 * - serve_main.c: `vkbert serve` itself: starts the HTTP side, loads one model per device,
 *   starts their schedulers, waits for SIGTERM/SIGINT and shuts down in order.
 * - serve_http.c: libmicrohttpd. Bodies, the payload limit, the API key, the concurrency limit
 *   (429), routing to the table below, the log line and the request metrics. Never parses JSON.
 * - serve_openai.c, serve_tei.c, serve_reply.c: the routes. JSON in (cJSON), tokenizing with
 *   vkbert_model_encode, one serve_work per request through the queue, JSON out. Never touch
 *   libmicrohttpd or a device.
 * - serve_queue.c: the queue and one scheduler thread per device. Only it calls the device.
 * - serve_metrics.c: counters and histograms, and their Prometheus text.
 *
 * POSIX only (threads, sockets, signals): built where libmicrohttpd is found. */
#ifndef VKBERT_SERVE_H
#define VKBERT_SERVE_H

#include "platform/platform.h"
#include "vkbert.h"

#include <stddef.h>
#include <stdint.h>

#define SERVE_MAX_DEVICES 16

/* ---------------------------------------------------------------- configuration --------- */

typedef struct serve_config {
    const char *model_dir;
    const char *host; /* "127.0.0.1" */
    int port;         /* 8080 */
    int devices[SERVE_MAX_DEVICES];
    int device_count; /* 0: the default device (VKBERT_DEVICE, else the first) */
    vkbert_precision precision;
    int max_batch_tokens;          /* TEI: 16384; padded tokens of one forward pass */
    int max_batch_requests;        /* TEI: none (0); inputs of one forward pass */
    int max_client_batch_size;     /* TEI: 32; inputs of one request */
    int max_concurrent_requests;   /* TEI: 512; requests in flight, more get 429 */
    size_t payload_limit;          /* TEI: 2000000 bytes of body */
    const char *api_key;           /* NULL: none needed */
    const char *served_model_name; /* NULL: the folder's last path component */
    int auto_truncate;             /* TEI: true; `truncate` when a request leaves it out */
    int quiet;                     /* no per-request log line */
    int request_deadline_ms;       /* 30000; to receive one request's headers and body */
    int drain_deadline_ms;         /* 30000; from SIGTERM to closing what is still in flight */
    int max_connections_per_ip;    /* -1: half the connection limit; 0: no limit */
} serve_config;

/* Reads argv (after "serve") over the defaults and the VKBERT_SERVE_* environment variables
 * (a flag wins over its variable). Returns CLI_EXIT_OK, or prints the usage problem and returns
 * CLI_EXIT_USAGE; 1 for --help (usage printed, caller exits 0). */
int serve_config_parse(int argc, char **argv, serve_config *out);

/* ---------------------------------------------------------------- metrics --------------- */

typedef struct serve_metrics serve_metrics;

serve_metrics *serve_metrics_create(void);
void serve_metrics_destroy(serve_metrics *m);
/* One finished HTTP request: its route ("/embed"; "other" for unknown ones), status, time,
 * and the tokens it ran. Thread-safe, as are all below. */
void serve_metrics_request(serve_metrics *m, const char *route, int status, double ms, int tokens);
/* One forward pass: its inputs, real and padded tokens, and its time on the device. */
void serve_metrics_batch(serve_metrics *m, int inputs, int tokens, int padded_tokens,
                         double inference_ms);
/* One input's wait in the queue, from its request's arrival to its batch's start. */
void serve_metrics_queue_time(serve_metrics *m, double ms);
/* The queue's depth now, and whether the server is healthy, as gauges. */
void serve_metrics_gauges(serve_metrics *m, int queued_inputs, int healthy);
/* The Prometheus text exposition format (version 0.0.4); malloc'd. */
char *serve_metrics_render(serve_metrics *m);

/* ---------------------------------------------------------------- the queue ------------- */

typedef enum serve_task { SERVE_TASK_EMBED, SERVE_TASK_SCORE } serve_task;

/* One request's inputs. The route fills the first block; the queue the rest. */
typedef struct serve_work {
    serve_task task;
    int raw_scores; /* SERVE_TASK_SCORE: logits instead of vkbert_model_score_inputs' rule */
    int count;
    const vkbert_encoding *inputs; /* [count], the route's until serve_queue_run returns */
    int width;                     /* floats per row: the dimension, or the labels */
    float *rows;                   /* [count][width]: embeddings never normalized; scores */
    int client_fd;     /* the request's socket: dropped before it runs once closed; -1: unknown */
    double arrived_ms; /* serve_now_ms() when the request arrived */

    vkbert_status status; /* of the failed batch */
    char error[256];      /* its message */
} serve_work;

typedef enum serve_outcome {
    SERVE_DONE = 0,
    SERVE_OVERLOADED, /* the queue holds max_concurrent_requests' worth: 429 */
    SERVE_UNHEALTHY,  /* no device is healthy (lost), or shutting down: 503 */
    SERVE_FAILED,     /* a batch failed: work.status and work.error say why: 424 (or 400/422
                         when the status is VKBERT_ERROR_INVALID_ARGUMENT) */
    SERVE_GONE,       /* the client went away before its inputs ran; nothing to answer */
} serve_outcome;

typedef struct serve_queue serve_queue;

typedef struct serve_limits {
    int max_batch_tokens, max_batch_requests;
    int max_queued_inputs; /* more are refused with SERVE_OVERLOADED */
} serve_limits;

serve_queue *serve_queue_create(const serve_limits *limits, serve_metrics *metrics);
/* Starts a scheduler thread that owns `model` and its context `ctx` (whose vkbert_last_error
 * names a failed batch's cause) from now on; the queue never destroys them. Returns 0, or -1
 * when no thread could start or the queue is stopping. */
int serve_queue_add_scheduler(serve_queue *q, vkbert_context *ctx, vkbert_model *model,
                              const char *device_name);
/* Queues the work's inputs in arrival order and waits until all have run, failed or been
 * dropped. Thread-safe; many request threads wait at once. */
serve_outcome serve_queue_run(serve_queue *q, serve_work *work);
/* 1 while at least one scheduler's device works and the queue is not stopping. */
int serve_queue_healthy(serve_queue *q);
int serve_queue_depth(serve_queue *q);
/* Refuses new work (SERVE_UNHEALTHY), runs what is queued, joins the schedulers. */
void serve_queue_stop(serve_queue *q);
/* serve_queue_stop, but what is queued fails (SERVE_UNHEALTHY, `why` as its error) instead of
 * running: only the batches already on a device finish. */
void serve_queue_abandon(serve_queue *q, const char *why);
void serve_queue_destroy(serve_queue *q);

/* ---------------------------------------------------------------- routes ---------------- */

typedef enum serve_state { SERVE_LOADING, SERVE_READY, SERVE_STOPPING } serve_state;

/* What the routes read: set before the HTTP side starts, except as noted. */
typedef struct serve_server {
    const serve_config *config;
    serve_metrics *metrics;
    serve_queue *queue;      /* NULL while loading */
    vkbert_model *model;     /* the first device's, NULL while loading: encode, describe, labels */
    vkbert_context *context; /* its context: vkbert_last_error after a failed encode */
    char model_name[256];    /* --served-model-name, else the folder's name */
    char device_names[512];  /* the devices, joined by ", " */
    int drops_nul;           /* the tokenizer drops U+0000 (cli_model_drops_nul) */
    volatile int state;      /* serve_state: the main thread's; routes read it */
} serve_server;

/* One HTTP request, its body complete. */
typedef struct serve_call {
    const char *method, *path;
    const char *body; /* NUL-terminated; body_size bytes before the NUL */
    size_t body_size;
    int client_fd;
    double arrived_ms;
} serve_call;

/* A route's answer. */
typedef struct serve_reply {
    int status;               /* HTTP status; 0: the client is gone (SERVE_GONE), send nothing */
    char *body;               /* malloc'd, NUL-terminated */
    const char *content_type; /* static */
    int tokens;               /* the request's tokens, for the log line and metrics */
} serve_reply;

typedef serve_reply (*serve_route_fn)(serve_server *s, const serve_call *call);

typedef struct serve_route {
    const char *method, *path;
    serve_route_fn run;
} serve_route;

/* Every route, in serve_reply.c's table; the HTTP side answers 404 for an unknown path and
 * 405 for a known path with another method. */
extern const serve_route serve_routes[];
extern const int serve_route_count;

/* The routes (serve_openai.c, serve_tei.c). */
serve_reply serve_openai_embeddings(serve_server *s, const serve_call *call);
serve_reply serve_tei_embed(serve_server *s, const serve_call *call);
serve_reply serve_tei_rerank(serve_server *s, const serve_call *call);
serve_reply serve_tei_predict(serve_server *s, const serve_call *call);
serve_reply serve_tei_tokenize(serve_server *s, const serve_call *call);
serve_reply serve_tei_decode(serve_server *s, const serve_call *call);
serve_reply serve_tei_health(serve_server *s, const serve_call *call);
serve_reply serve_tei_info(serve_server *s, const serve_call *call);
serve_reply serve_metrics_route(serve_server *s, const serve_call *call);

/* TEI's error body {"error": message, "error_type": type} with `status`; type is one of
 * "Validation", "Tokenizer", "Backend", "Overloaded", "Empty", "Unhealthy". */
serve_reply serve_error(int status, const char *type, const char *fmt, ...) PLAT_PRINTF(3, 4);
/* OpenAI's {"error": {"message", "type", "code"}} with `status`. */
serve_reply serve_openai_error(int status, const char *type, const char *fmt, ...)
    PLAT_PRINTF(3, 4);

/* ---------------------------------------------------------------- request deadline ------ */

/* serve_guard.c: shuts down the socket of a connection still receiving its request past a
 * deadline; libmicrohttpd then closes it. Knows sockets and time only; thread-safe. */
typedef struct serve_guard serve_guard;
typedef struct serve_guard_conn serve_guard_conn;

serve_guard *serve_guard_start(double deadline_ms);
void serve_guard_stop(serve_guard *g);
/* A new connection, receiving from now on; NULL when out of memory (then unguarded). */
serve_guard_conn *serve_guard_open(serve_guard *g, int fd);
/* Before its socket is closed. */
void serve_guard_close(serve_guard *g, serve_guard_conn *c);
/* Receiving (again, from now: the next request on a kept-alive connection) or not (its request
 * is whole). */
void serve_guard_receiving(serve_guard *g, serve_guard_conn *c, int receiving);

/* ---------------------------------------------------------------- HTTP and main --------- */

/* `vkbert serve` (argv[0] is "serve"): the process's exit code. */
int serve_main(int argc, char **argv);

typedef struct serve_http serve_http;

/* Listens on config->host:port with libmicrohttpd. NULL, with the reason on stderr, when it
 * cannot (port taken, bad host). */
serve_http *serve_http_start(serve_server *s);
/* Stops accepting connections; requests already in flight continue, and each connection
 * closes after its answer. */
void serve_http_quiesce(serve_http *h);
/* The port it listens on: config->port, or the one the system chose for port 0. */
int serve_http_port(const serve_http *h);
/* Requests in flight now. */
int serve_http_in_flight(serve_http *h);
void serve_http_stop(serve_http *h);

/* Milliseconds on a monotonic clock. */
double serve_now_ms(void);
/* 1 when every value of v[n] is finite. */
int serve_all_finite(const float *v, size_t n);

#endif
