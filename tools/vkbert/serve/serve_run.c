/* One request's inputs: TEI's input rules, tokenizing with the model's own pipeline, and one
 * serve_work through the queue. */
#include "serve_json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

serve_encode_opts serve_encode_defaults(const serve_server *s)
{
    return (serve_encode_opts){NULL, s->config->auto_truncate, 0};
}

int serve_inputs_alloc(serve_inputs *x, int count, serve_fail *f)
{
    memset(x, 0, sizeof *x);
    x->in = calloc((size_t)count, sizeof *x->in);
    x->hand = calloc((size_t)count, 1);
    if (!x->in || !x->hand) {
        serve_inputs_free(x);
        return serve_fail_set(f, "Backend", "out of host memory");
    }
    for (int i = 0; i < count; i++)
        x->in[i] = (vkbert_encoding)VKBERT_ENCODING_INIT;
    x->count = count;
    return 0;
}

void serve_inputs_free(serve_inputs *x)
{
    for (int i = 0; x->in && i < x->count; i++) {
        if (!x->hand[i]) {
            vkbert_encoding_free(&x->in[i]);
            continue;
        }
        free(x->in[i].ids);
        free(x->in[i].type_ids);
    }
    free(x->in);
    free(x->hand);
    memset(x, 0, sizeof *x);
}

/* TEI's length rule (core/src/tokenization.rs, encode_input): after truncation, when asked
 * for, an input over the limit is a Validation error in these words. */
static int too_long(int limit, int given, serve_fail *f)
{
    return serve_fail_set(f, "Validation", "`inputs` must have less than %d tokens. Given: %d",
                          limit, given);
}

/* vkbert_model_encode leaves its message on the model's context, this thread's copy of it: an
 * unknown prompt name is the invalid argument a request can make, which TEI refuses as a
 * Validation error (core/src/tokenization.rs); anything else the tokenizer refuses is TEI's
 * Tokenizer error. */
static int encode_failed(const serve_server *s, vkbert_status st, serve_fail *f)
{
    const char *why = vkbert_last_error(s->context);
    if (st == VKBERT_ERROR_INVALID_ARGUMENT) return serve_fail_set(f, "Validation", "%s", why);
    if (st == VKBERT_ERROR_OUT_OF_MEMORY) return serve_fail_set(f, "Backend", "out of host memory");
    return serve_fail_set(f, "Tokenizer", "%s", why);
}

int serve_inputs_text(const serve_server *s, serve_inputs *x, int i, const char *text,
                      const char *pair, const serve_encode_opts *o, serve_fail *f)
{
    /* TEI's EncodingInput::is_empty: an empty text, or a pair of two (tokenization.rs). */
    if (!text[0] && (!pair || !pair[0]))
        return serve_fail_set(f, "Validation", "`inputs` cannot be empty");
    vkbert_encode_options eo = VKBERT_ENCODE_OPTIONS_INIT;
    eo.prompt_name = o->prompt_name;
    eo.truncate = 1; /* always cut, so that full_count says how long it was */
    eo.truncate_left = o->truncate_left;
    vkbert_encoding *in = &x->in[i];
    vkbert_status st = vkbert_model_encode(s->model, text, pair, &eo, in);
    if (st) return encode_failed(s, st, f);
    x->tokens += in->count;
    if (!o->truncate && in->full_count > in->count) return too_long(in->count, in->full_count, f);
    return 0;
}

int serve_ids_read(const cJSON *ids, int32_t *out, int n, const vkbert_tokenizer *t, serve_fail *f)
{
    int at = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, ids)
    {
        double d = v->valuedouble;
        /* TEI's InputType::Ids is a Vec<u32>. */
        if (!cJSON_IsNumber(v) || d != floor(d) || d < 0 || d > UINT32_MAX)
            return serve_fail_status(f, 422, "a token id must be an integer in [0, 2^32)");
        if (d > INT32_MAX || !vkbert_tokenizer_token(t, (int32_t)d))
            return serve_fail_set(f, "Tokenizer", "token id %.0f is not in the vocabulary", d);
        if (at < n) out[at] = (int32_t)d;
        at++;
    }
    return 0;
}

int serve_inputs_ids(const serve_server *s, serve_inputs *x, int i, const cJSON *ids,
                     const serve_encode_opts *o, serve_fail *f)
{
    int n = cJSON_GetArraySize(ids);
    if (!n) return serve_fail_set(f, "Validation", "`inputs` cannot be empty");
    const vkbert_tokenizer *t = vkbert_model_tokenizer(s->model);
    int limit = vkbert_tokenizer_max_length(t);
    vkbert_encoding *in = &x->in[i];
    x->hand[i] = 1;
    if (!(in->ids = malloc((size_t)n * sizeof *in->ids)))
        return serve_fail_set(f, "Backend", "out of host memory");
    if (serve_ids_read(ids, in->ids, n, t, f)) return -1;
    in->full_count = in->count = n;
    x->tokens += n;
    if (n <= limit) return 0;
    if (!o->truncate) return too_long(limit, n, f);
    /* TEI truncates ids as a text: from the end, or from the start with "Left". */
    if (o->truncate_left) memmove(in->ids, in->ids + (n - limit), (size_t)limit * sizeof *in->ids);
    in->count = limit;
    x->tokens -= n - limit;
    return 0;
}

int serve_is_ids(const cJSON *v)
{
    if (!cJSON_IsArray(v)) return 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) if (!cJSON_IsNumber(e)) return 0;
    return 1;
}

static int encode_one(const serve_server *s, const cJSON *v, int ids, int i,
                      const serve_encode_opts *o, serve_inputs *x, serve_fail *f)
{
    if (cJSON_IsString(v)) return serve_inputs_text(s, x, i, v->valuestring, NULL, o, f);
    if (ids && serve_is_ids(v)) return serve_inputs_ids(s, x, i, v, o, f);
    return -2;
}

/* TEI's untagged Input (types.rs): a string, a flat list of numbers (one input of token ids),
 * else a Batch of them. `[]` is an empty batch, 400 Empty, as TEI's Input of strings reads it
 * and as OpenAI answers an empty input (later TEI versions read it as one empty list of ids,
 * 413); over max_client_batch_size, 413 Validation (server.rs, embed). */
int serve_inputs_parse(const serve_server *s, const cJSON *v, const char *field, int ids,
                       const serve_encode_opts *o, serve_inputs *x, serve_fail *f)
{
    const char *shape =
        ids ? "a string, a list of token ids, or a list of those" : "a string or a list of strings";
    if (!v) return serve_fail_status(f, 422, "missing field `%s`", field);
    int empty = cJSON_IsArray(v) && !cJSON_GetArraySize(v);
    int single = cJSON_IsString(v) || (ids && !empty && serve_is_ids(v));
    if (!single && !cJSON_IsArray(v))
        return serve_fail_status(f, 422, "`%s` must be %s", field, shape);
    int n = single ? 1 : cJSON_GetArraySize(v);
    if (!n) return serve_fail_set(f, "Empty", "`%s` cannot be empty", field);
    int max = s->config->max_client_batch_size;
    if (!single && n > max)
        return serve_fail_set(f, "Validation", "batch size %d > maximum allowed batch size %d", n,
                              max);
    if (serve_inputs_alloc(x, n, f)) return -1;
    if (single) return encode_one(s, v, ids, 0, o, x, f) ? -1 : 0;
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        int r = encode_one(s, e, ids, i++, o, x, f);
        if (r == -2) return serve_fail_status(f, 422, "`%s` must be %s", field, shape);
        if (r) return -1;
    }
    return 0;
}

int serve_all_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

static int outcome_fail(serve_outcome outcome, const serve_work *w, serve_fail *f)
{
    switch (outcome) {
    case SERVE_DONE:
        return 0;
    case SERVE_GONE:
        f->status = 0;
        return -1;
    case SERVE_OVERLOADED:
        /* TEI's TextEmbeddingsError::Overloaded (core/src/lib.rs). */
        return serve_fail_set(f, "Overloaded", "Model is overloaded");
    case SERVE_UNHEALTHY:
        return serve_fail_set(f, "Unhealthy", "%s",
                              w->error[0] ? w->error : "no device is healthy");
    case SERVE_FAILED:
        break;
    }
    if (w->status == VKBERT_ERROR_DEVICE_LOST)
        return serve_fail_set(f, "Unhealthy", "the device was lost: %s", w->error);
    if (w->status == VKBERT_ERROR_INVALID_ARGUMENT)
        return serve_fail_status(f, 422, "%s", w->error);
    return serve_fail_set(f, "Backend", "%s", w->error);
}

int serve_run(serve_server *s, const serve_call *call, serve_task task, int raw_scores,
              const serve_inputs *x, int width, float **rows, serve_fail *f)
{
    serve_work w;
    memset(&w, 0, sizeof w);
    w.task = task;
    w.raw_scores = raw_scores;
    w.count = x->count;
    w.inputs = x->in;
    w.width = width;
    w.client_fd = call->client_fd;
    w.arrived_ms = call->arrived_ms;
    size_t n = (size_t)x->count * (size_t)width;
    *rows = NULL;
    if (!(w.rows = malloc(n * sizeof *w.rows)))
        return serve_fail_set(f, "Backend", "out of host memory");
    if (outcome_fail(serve_queue_run(s->queue, &w), &w, f)) return free(w.rows), -1;
    /* TEI refuses a NaN score as a Backend error (server.rs, predict and rerank); JSON has no
     * NaN or infinity at all. The batch ran on (serve_queue.c): only this request fails. */
    if (!serve_all_finite(w.rows, n)) {
        free(w.rows);
        return serve_fail_set(f, "Backend",
                              "the model produced non-finite values (inf or NaN): its weights or "
                              "activations exceed the range of its floating-point type");
    }
    *rows = w.rows;
    return 0;
}
