/* OpenAI's POST /v1/embeddings, as text-embeddings-inference serves it (router/src/http/
 * server.rs, openai_embed; types.rs, OpenAICompatRequest), with OpenAI's `dimensions`. */
#include "serve_json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* OpenAI's shape {"error": {"message", "type", "code"}} around TEI's OpenAICompatErrorResponse:
 * code is the HTTP status and type TEI's error type, except that bad input is OpenAI's
 * "invalid_request_error". */
static serve_reply openai_fail(const serve_fail *f)
{
    if (!f->status) return serve_fail_reply(f);
    int bad_input = f->status == 400 || f->status == 413 || f->status == 422;
    return serve_openai_error(f->status, bad_input ? "invalid_request_error" : f->type, "%s",
                              f->message);
}

/* Base64 (RFC 4648, standard alphabet, padded) of the floats' little-endian bytes: what the
 * openai clients ask for by default and decode as a Float32Array. */
static char *base64_floats(const float *v, int n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t bytes = (size_t)n * 4, at = 0;
    unsigned char *b = malloc(bytes ? bytes : 1);
    char *out = malloc((bytes + 2) / 3 * 4 + 1);
    for (int i = 0; b && i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++)
            b[4 * i + k] = (unsigned char)(u >> (8 * k));
    }
    for (size_t i = 0; b && out && i < bytes; i += 3) {
        uint32_t w = (uint32_t)b[i] << 16;
        if (i + 1 < bytes) w |= (uint32_t)b[i + 1] << 8;
        if (i + 2 < bytes) w |= b[i + 2];
        out[at++] = abc[w >> 18 & 63];
        out[at++] = abc[w >> 12 & 63];
        out[at++] = i + 1 < bytes ? abc[w >> 6 & 63] : '=';
        out[at++] = i + 2 < bytes ? abc[w & 63] : '=';
    }
    if (out) out[at] = 0;
    free(b);
    return out;
}

typedef struct openai_request {
    int base64;
    int dimensions;
} openai_request;

/* model and user are accepted and ignored (TEI: "dead_code"); encoding_format is "float" by
 * default or "base64" (TEI's EncodingFormat, snake_case); null is the default, as an optional
 * field of OpenAI's that clients may send as null. */
static int openai_fields(const serve_server *s, const cJSON *root, openai_request *r, serve_fail *f)
{
    const char *model = NULL, *user = NULL;
    int present;
    if (serve_field_string(root, "model", &model, f) || serve_field_string(root, "user", &user, f))
        return -1;
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "encoding_format");
    if (cJSON_IsNull(format)) format = NULL;
    if (format && !(cJSON_IsString(format) && (!strcmp(format->valuestring, "float") ||
                                               !strcmp(format->valuestring, "base64"))))
        return serve_fail_status(f, 422, "`encoding_format` must be \"float\" or \"base64\"");
    r->base64 = format && !strcmp(format->valuestring, "base64");
    return serve_field_int(root, "dimensions", 1, vkbert_model_dimension(s->model), &r->dimensions,
                           &present, f);
}

static cJSON *openai_json(const serve_server *s, const openai_request *r, const float *rows,
                          int count, int width, int tokens)
{
    cJSON *root = cJSON_CreateObject(), *data = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON_AddItemToObject(root, "data", data);
    for (int i = 0; data && i < count; i++) {
        cJSON *e = cJSON_CreateObject();
        const float *row = rows + (size_t)i * width;
        cJSON_AddStringToObject(e, "object", "embedding");
        char *b64 = r->base64 ? base64_floats(row, width) : NULL;
        if (r->base64 && !b64) return cJSON_Delete(e), cJSON_Delete(root), NULL;
        cJSON_AddItemToObject(e, "embedding",
                              b64 ? cJSON_CreateString(b64) : serve_json_floats(row, width));
        free(b64);
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddItemToArray(data, e);
    }
    /* TEI answers with its own model id (info.model_id), whatever the request named. */
    cJSON_AddStringToObject(root, "model", s->model_name);
    cJSON *usage = cJSON_AddObjectToObject(root, "usage");
    cJSON_AddNumberToObject(usage, "prompt_tokens", tokens);
    cJSON_AddNumberToObject(usage, "total_tokens", tokens);
    return root;
}

/* TEI's openai_embed: truncation as --auto-truncate says (the request has no field for it),
 * from the right, no prompt name, embeddings always normalized. */
serve_reply serve_openai_embeddings(serve_server *s, const serve_call *call)
{
    serve_fail f;
    serve_inputs x;
    serve_encode_opts o = serve_encode_defaults(s);
    openai_request r = {0, 0};
    float *rows = NULL;
    cJSON *root = NULL, *out = NULL;
    memset(&x, 0, sizeof x);
    int failed = serve_check_ready(s, &f) || !(root = serve_parse_body(s, call, &f)) ||
                 openai_fields(s, root, &r, &f);
    if (!failed && vkbert_model_labels(s->model) > 0)
        failed = serve_fail_set(&f, "Backend", "Model is not an embedding model");
    int width = failed ? 0 : vkbert_model_dimension(s->model);
    failed = failed ||
             serve_inputs_parse(s, cJSON_GetObjectItemCaseSensitive(root, "input"), "input", 1, &o,
                                &x, &f) ||
             serve_run(s, call, SERVE_TASK_EMBED, 0, &x, width, &rows, &f);
    if (!failed) {
        serve_embeddings_finish(rows, x.count, width, r.dimensions, 1);
        out = openai_json(s, &r, rows, x.count, r.dimensions ? r.dimensions : width, x.tokens);
        if (!out) failed = serve_fail_set(&f, "Backend", "out of host memory");
    }
    serve_reply reply = failed ? openai_fail(&f) : serve_json_reply(200, out, x.tokens);
    reply.tokens = x.tokens;
    serve_inputs_free(&x);
    cJSON_Delete(root);
    free(rows);
    return reply;
}
