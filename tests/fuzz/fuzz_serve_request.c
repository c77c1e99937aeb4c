/* libFuzzer harness for vkbert serve's request handling (tools/vkbert/serve): every route of
 * serve_routes, with its body checks (UTF-8, NUL bytes, JSON, duplicate keys), its fields, TEI's
 * input and batch rules, tokenizing, the queue's outcomes and the JSON or text it answers.
 * The model and the queue are serve_fakes.c's: no device, no thread, no socket.
 *
 * Input: a route byte (an index into serve_routes), a flags byte, then the body.
 * Flags: bits 0-1 the model (embeddings, re-ranker, classifier of 3 labels, embeddings); bit 2
 * --auto-truncate; bits 3-5 the queue's outcome (fake_outcome); bit 6 a small
 * --max-client-batch-size (2, else 32) and tokenizer limit (5, else 16); bit 7 a server that
 * is not ready (loading, or shutting down when bit 0 is set too). */
#define _GNU_SOURCE
#include "fuzz_util.h"
#include "serve_fakes.h"
#include "serve_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static serve_config config;
static serve_server server;

static int setup(void)
{
    if (!fake_model()) return -1;
    if (server.config) return 0;
    config.max_batch_tokens = 16384;
    config.max_concurrent_requests = 512;
    config.payload_limit = 2000000;
    config.model_dir = "/fuzz/model";
    server.config = &config;
    server.metrics = serve_metrics_create();
    server.queue = fake_queue();
    server.model = fake_model();
    server.context = fake_context();
    snprintf(server.model_name, sizeof server.model_name, "fuzz-model");
    snprintf(server.device_names, sizeof server.device_names, "fake");
    return 0;
}

static void configure(int flags)
{
    static const int labels[] = {0, 1, 3, 0};
    int small = flags & 64;
    fake_model_shape shape = {labels[flags & 3], small ? 5 : 16};
    fake_model_set(&shape);
    fake_queue_set((fake_outcome)((flags >> 3) & 7), 1);
    config.auto_truncate = (flags & 4) != 0;
    config.max_client_batch_size = small ? 2 : 32;
    server.state = !(flags & 128) ? SERVE_READY : flags & 1 ? SERVE_STOPPING : SERVE_LOADING;
}

/* What every reply must be: a status, and a body that is JSON where it says so. */
static void check(const serve_reply *r)
{
    if (!r->status) {
        if (r->body) abort();
        return;
    }
    if (r->status < 200 || r->status > 599 || !r->body || !r->content_type) abort();
    if (strcmp(r->content_type, "application/json")) return;
    cJSON *parsed = cJSON_Parse(r->body);
    if (!parsed) abort();
    cJSON_Delete(parsed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (setup()) {
        fuzz_setup_failed("loading the vocabulary");
        return 0;
    }
    if (size < 2) return 0;
    const serve_route *route = &serve_routes[data[0] % serve_route_count];
    configure(data[1]);
    /* As serve_http.c hands it over: the body's bytes, NULs included, then a NUL. */
    char *body = malloc(size - 2 + 1);
    if (!body) return 0;
    memcpy(body, data + 2, size - 2);
    body[size - 2] = '\0';
    serve_call call = {route->method, route->path, body, size - 2, -1, 0.0};
    serve_reply reply = route->run(&server, &call);
    check(&reply);
    free(reply.body);
    free(body);
    return 0;
}
