/* vkbert serve itself: listens first (the routes answer 503 while loading), loads one model
 * per device, starts their schedulers, then waits for SIGTERM or SIGINT and shuts down in
 * order: no new connections, the accepted requests finish, the queue drains, then the
 * devices go. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "serve.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct serving {
    serve_config config;
    serve_server server;
    serve_http *http;
    vkbert_context *ctx[SERVE_MAX_DEVICES];
    vkbert_model *model[SERVE_MAX_DEVICES];
    int count; /* models loaded */
} serving;

/* The folder's last path component, as TEI names a model by its id. */
static void folder_name(const char *dir, char *out, size_t size)
{
    size_t end = strlen(dir);
    while (end > 1 && strchr(PLAT_SEPARATORS, dir[end - 1]))
        end--;
    size_t start = end;
    while (start > 0 && !strchr(PLAT_SEPARATORS, dir[start - 1]))
        start--;
    snprintf(out, size, "%.*s", (int)(end - start), dir + start);
}

static void device_name(const vkbert_context *ctx, char *out, size_t size)
{
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    if (vkbert_context_device(ctx, &info)) snprintf(info.name, sizeof info.name, "?");
    snprintf(out, size, "%s", info.name);
}

static void append_device(serve_server *s, const vkbert_context *ctx)
{
    char name[256];
    size_t n = strlen(s->device_names);
    device_name(ctx, name, sizeof name);
    snprintf(s->device_names + n, sizeof s->device_names - n, "%s%s", n ? ", " : "", name);
}

/* TEI refuses to start when one input of the model's maximum length would not fit in a
 * batch (router/src/lib.rs: max_batch_tokens against max_input_length). */
static int check_batch_tokens(const serving *sv, const vkbert_model *model)
{
    int max_length = vkbert_tokenizer_max_length(vkbert_model_tokenizer(model));
    if (sv->config.max_batch_tokens >= max_length) return 0;
    return cli_error("--max-batch-tokens %d is below the model's maximum length %d: an input "
                     "that long would fit in no batch",
                     sv->config.max_batch_tokens, max_length);
}

/* One context and model per device: config.devices, else the default device. */
static int load_models(serving *sv)
{
    vkbert_model_config mc = VKBERT_MODEL_CONFIG_INIT;
    mc.precision = sv->config.precision;
    int count = sv->config.device_count ? sv->config.device_count : 1;
    for (int i = 0; i < count; i++) {
        char device[16];
        snprintf(device, sizeof device, "%d", sv->config.devices[i]);
        int code = cli_model_open(sv->config.device_count ? device : NULL, sv->config.model_dir,
                                  &mc, 0, &sv->ctx[i], &sv->model[i]);
        sv->count = i + 1; /* what failed half-way is freed with the rest */
        if (!code) code = check_batch_tokens(sv, sv->model[i]);
        if (code) return code;
        append_device(&sv->server, sv->ctx[i]);
    }
    return 0;
}

static int start_queue(serving *sv)
{
    const serve_config *c = &sv->config;
    long long queued = (long long)c->max_concurrent_requests * c->max_client_batch_size;
    serve_limits limits = {c->max_batch_tokens, c->max_batch_requests,
                           queued > 1 << 30 ? 1 << 30 : (int)queued};
    sv->server.queue = serve_queue_create(&limits, sv->server.metrics);
    if (!sv->server.queue) return cli_error("cannot create the queue: out of host memory");
    for (int i = 0; i < sv->count; i++) {
        char name[256];
        device_name(sv->ctx[i], name, sizeof name);
        if (serve_queue_add_scheduler(sv->server.queue, sv->ctx[i], sv->model[i], name))
            return cli_error("cannot start the scheduler thread of device %s", name);
    }
    return 0;
}

static void print_listening(const serving *sv)
{
    const char *host = sv->config.host;
    int v6 = strchr(host, ':') != NULL; /* an IPv6 literal is bracketed in a URL (RFC 3986) */
    fprintf(stderr, "vkbert serve: listening on http://%s%s%s:%d (model %s on %s)\n", v6 ? "[" : "",
            host, v6 ? "]" : "", serve_http_port(sv->http), sv->server.model_name,
            sv->server.device_names);
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Stops taking connections and lets the accepted requests finish, each connection closing
 * after its answer, for at most --drain-deadline-ms: an orchestrator kills a process that
 * overstays its grace period, and that loses every answer. Only then does the state say so:
 * the routes refuse work once stopping, and a request whose body was still arriving at SIGTERM
 * is one already accepted. Past the deadline what is still queued fails (503) instead of
 * running; only the batches on a device finish, and shut_down closes every connection. */
static void drain(serving *sv)
{
    serve_http_quiesce(sv->http);
    double deadline = serve_now_ms() + sv->config.drain_deadline_ms;
    while (serve_http_in_flight(sv->http) > 0 && serve_now_ms() < deadline)
        sleep_ms(10);
    sv->server.state = SERVE_STOPPING;
    if (sv->server.queue) serve_queue_abandon(sv->server.queue, "the server is shutting down");
}

/* Frees everything; a validation message fails the run (cli_close). */
static int shut_down(serving *sv, int code)
{
    serve_http_stop(sv->http);
    if (sv->server.queue) serve_queue_destroy(sv->server.queue);
    for (int i = 0; i < sv->count; i++) {
        vkbert_model_destroy(sv->model[i]);
        code = cli_close(sv->ctx[i], code);
    }
    serve_metrics_destroy(sv->server.metrics);
    return code;
}

/* SIGTERM and SIGINT write a byte to a pipe that the main thread waits on. A handler, not
 * sigwait with the signals blocked: threads that libraries start before main (OpenBLAS's pool)
 * never inherit a mask, and a signal the kernel hands to one of them would kill the process.
 * write is async-signal-safe; errno is kept for the interrupted thread. SIGPIPE (a client that
 * went away while being written to) is ignored process-wide, so it can never kill it either. */
static int stop_pipe[2] = {-1, -1};

static void on_stop_signal(int signal_number)
{
    int saved = errno;
    unsigned char byte = (unsigned char)signal_number;
    if (write(stop_pipe[1], &byte, 1) < 0) {
        /* the pipe is full: a stop is already pending */
    }
    errno = saved;
}

static int catch_stop_signals(void)
{
    if (pipe(stop_pipe)) return cli_error("pipe: %s", strerror(errno));
    struct sigaction action;
    memset(&action, 0, sizeof action);
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    action.sa_handler = on_stop_signal;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    action.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &action, NULL);
    return CLI_EXIT_OK;
}

static void wait_for_stop_signal(void)
{
    unsigned char byte;
    while (read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
}

static int serve(serving *sv)
{
    sv->http = serve_http_start(&sv->server);
    if (!sv->http) return serve_metrics_destroy(sv->server.metrics), CLI_EXIT_FAILURE;
    int code = load_models(sv);
    if (!code) code = start_queue(sv);
    if (code) {
        drain(sv);
        return shut_down(sv, code);
    }
    sv->server.model = sv->model[0];
    sv->server.context = sv->ctx[0];
    sv->server.drops_nul = cli_model_drops_nul(sv->model[0]);
    /* the routes see the queue and the model before they see the state */
    atomic_thread_fence(memory_order_release);
    sv->server.state = SERVE_READY;
    /* before the listening line, which tells scripts the server is up */
    fputs(sv->config.api_key ? "vkbert serve: API key required on every route but /health and "
                               "/metrics\n"
                             : "vkbert serve: no API key, every client is let in\n",
          stderr);
    print_listening(sv);
    wait_for_stop_signal();
    drain(sv);
    code = shut_down(sv, CLI_EXIT_OK);
    fputs("vkbert serve: stopped\n", stderr);
    return code;
}

int serve_main(int argc, char **argv)
{
    serving sv;
    memset(&sv, 0, sizeof sv);
    int code = serve_config_parse(argc, argv, &sv.config);
    if (code == 1) return CLI_EXIT_OK; /* --help */
    if (code) return code;
    if (catch_stop_signals()) return CLI_EXIT_FAILURE;
    sv.server.config = &sv.config;
    sv.server.state = SERVE_LOADING;
    if (sv.config.served_model_name)
        snprintf(sv.server.model_name, sizeof sv.server.model_name, "%s",
                 sv.config.served_model_name);
    else
        folder_name(sv.config.model_dir, sv.server.model_name, sizeof sv.server.model_name);
    sv.server.metrics = serve_metrics_create();
    if (!sv.server.metrics) return cli_error("out of host memory");
    return serve(&sv);
}
