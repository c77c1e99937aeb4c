/* The route table, the error bodies, and the routes that run no model: /health, /info and
 * /metrics (text-embeddings-inference's router/src/http/server.rs and router/src/lib.rs). */
#include "serve_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const serve_route serve_routes[] = {
    {"POST", "/v1/embeddings", serve_openai_embeddings},
    /* TEI serves the OpenAI route under both paths (server.rs, run). */
    {"POST", "/embeddings", serve_openai_embeddings},
    {"POST", "/embed", serve_tei_embed},
    {"POST", "/rerank", serve_tei_rerank},
    {"POST", "/predict", serve_tei_predict},
    {"POST", "/tokenize", serve_tei_tokenize},
    {"GET", "/health", serve_tei_health},
    {"GET", "/info", serve_tei_info},
    {"GET", "/metrics", serve_metrics_route},
    /* last, so that the fuzzer's corpus keeps the indices of the routes before it */
    {"POST", "/decode", serve_tei_decode},
};
const int serve_route_count = (int)(sizeof serve_routes / sizeof *serve_routes);

static char *vformat(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

/* `error` as the body (serve_json_reply), or a fixed one when memory ran out. */
static serve_reply error_reply(int status, cJSON *root)
{
    serve_reply r = serve_json_reply(status, root, 0);
    if (r.status == status) return r;
    static const char oom[] = "{\"error\":\"out of host memory\",\"error_type\":\"Backend\"}";
    r.status = status;
    r.body = malloc(sizeof oom);
    if (r.body) memcpy(r.body, oom, sizeof oom);
    return r;
}

serve_reply serve_error(int status, const char *type, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *message = vformat(fmt, ap);
    va_end(ap);
    /* TEI's ErrorResponse (router/src/lib.rs): ErrorType serializes as its variant name. */
    cJSON *root = message ? cJSON_CreateObject() : NULL;
    cJSON_AddStringToObject(root, "error", message);
    cJSON_AddStringToObject(root, "error_type", type);
    free(message);
    return error_reply(status, root);
}

serve_reply serve_openai_error(int status, const char *type, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *message = vformat(fmt, ap);
    va_end(ap);
    cJSON *root = message ? cJSON_CreateObject() : NULL;
    cJSON *error = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(error, "message", message);
    cJSON_AddStringToObject(error, "type", type);
    cJSON_AddNumberToObject(error, "code", status);
    free(message);
    return error_reply(status, root);
}

static int healthy(const serve_server *s)
{
    return s->state == SERVE_READY && s->queue && serve_queue_healthy(s->queue);
}

static serve_reply text_reply(char *body, const char *content_type)
{
    if (!body) return serve_error(500, "Backend", "out of host memory");
    serve_reply r = {200, body, content_type, 0};
    return r;
}

static char *copy(const char *text)
{
    size_t n = strlen(text) + 1;
    char *s = malloc(n);
    return s ? memcpy(s, text, n) : NULL;
}

/* TEI's health: 200 with no body, else 503 {"error": "unhealthy", "error_type": "Unhealthy"}. */
serve_reply serve_tei_health(serve_server *s, const serve_call *call)
{
    (void)call;
    if (!healthy(s)) return serve_error(503, "Unhealthy", "unhealthy");
    return text_reply(copy(""), "text/plain; charset=utf-8");
}

serve_reply serve_metrics_route(serve_server *s, const serve_call *call)
{
    (void)call;
    if (s->metrics)
        serve_metrics_gauges(s->metrics, s->queue ? serve_queue_depth(s->queue) : 0, healthy(s));
    char *text = s->metrics ? serve_metrics_render(s->metrics) : copy("");
    return text_reply(text, "text/plain; version=0.0.4");
}

/* TEI's pooling names (text_embeddings_backend's Pool: cls, mean, splade, last_token) for
 * sentence-transformers' modes; others keep their own name. */
static const char *tei_pool(const char *mode)
{
    static const char *const map[][2] = {
        {"cls_token", "cls"}, {"mean_tokens", "mean"}, {"lasttoken", "last_token"}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(map[i][0], mode)) return map[i][1];
    return mode;
}

static void add_pooling(cJSON *embedding, const cJSON *described)
{
    char pooling[256] = "";
    const cJSON *mode;
    cJSON_ArrayForEach(mode, cJSON_GetObjectItemCaseSensitive(described, "pooling"))
    {
        if (!cJSON_IsString(mode)) continue;
        size_t at = strlen(pooling);
        snprintf(pooling + at, sizeof pooling - at, "%s%s", at ? "," : "",
                 tei_pool(mode->valuestring));
    }
    cJSON_AddStringToObject(embedding, "pooling", pooling);
}

/* TEI's ModelType (lib.rs): "classifier" for two labels or more, "reranker" for one, both with
 * id2label and label2id; else "embedding" with its pooling. */
static void add_model_type(cJSON *info, serve_server *s, const cJSON *described)
{
    cJSON *type = cJSON_AddObjectToObject(info, "model_type");
    int labels = vkbert_model_labels(s->model);
    if (!labels) {
        add_pooling(cJSON_AddObjectToObject(type, "embedding"), described);
        return;
    }
    cJSON *kind = cJSON_AddObjectToObject(type, labels == 1 ? "reranker" : "classifier");
    cJSON *id2label = cJSON_AddObjectToObject(kind, "id2label");
    cJSON *label2id = cJSON_AddObjectToObject(kind, "label2id");
    for (int i = 0; i < labels; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i);
        cJSON_AddStringToObject(id2label, id, vkbert_model_label(s->model, i));
        cJSON_AddNumberToObject(label2id, vkbert_model_label(s->model, i), i);
    }
}

static void add_limits(cJSON *info, const serve_config *c, const cJSON *described,
                       const serve_server *s)
{
    const cJSON *max_length = cJSON_GetObjectItemCaseSensitive(described, "max_length");
    cJSON_AddNumberToObject(info, "max_concurrent_requests", c->max_concurrent_requests);
    cJSON_AddNumberToObject(info, "max_input_length",
                            cJSON_IsNumber(max_length)
                                ? max_length->valuedouble
                                : vkbert_tokenizer_max_length(vkbert_model_tokenizer(s->model)));
    cJSON_AddNumberToObject(info, "max_batch_tokens", c->max_batch_tokens);
    if (c->max_batch_requests > 0)
        cJSON_AddNumberToObject(info, "max_batch_requests", c->max_batch_requests);
    else
        cJSON_AddNullToObject(info, "max_batch_requests");
    cJSON_AddNumberToObject(info, "max_client_batch_size", c->max_client_batch_size);
    /* The server's default for `truncate`, under TEI's name. */
    cJSON_AddBoolToObject(info, "auto_truncate", c->auto_truncate);
}

/* TEI's Info (lib.rs), plus the devices and the backend. */
serve_reply serve_tei_info(serve_server *s, const serve_call *call)
{
    (void)call;
    if (s->state != SERVE_READY || !s->model)
        return serve_error(503, "Unhealthy", "the model is loading");
    char *json = NULL;
    cJSON *described = vkbert_model_describe(s->model, &json) ? NULL : cJSON_Parse(json);
    vkbert_free(json);
    cJSON *info = cJSON_CreateObject();
    /* model_id is the folder as given (TEI's is the Hub id or path it loaded) */
    cJSON_AddStringToObject(info, "model_id", s->config->model_dir);
    cJSON_AddNullToObject(info, "model_sha");
    static const char *dtypes[] = {"float32", "float16", "int8"};
    cJSON_AddStringToObject(info, "model_dtype", dtypes[s->config->precision]);
    add_model_type(info, s, described);
    add_limits(info, s->config, described, s);
    cJSON_AddStringToObject(info, "served_model_name", s->model_name);
    cJSON_AddStringToObject(info, "version", vkbert_version_string());
    cJSON_AddNullToObject(info, "sha");
    cJSON_AddNullToObject(info, "docker_label");
    cJSON_AddStringToObject(info, "device", s->device_names);
    cJSON_AddStringToObject(info, "backend", "vulkan");
    cJSON_Delete(described);
    return serve_json_reply(200, info, 0);
}
