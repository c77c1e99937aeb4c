/* text-embeddings-inference's model routes: /embed, /rerank, /predict, and the tokenizer's:
 * /tokenize, /decode. The request and response shapes and the checks are TEI's
 * (router/src/http/types.rs and server.rs). */
#define _POSIX_C_SOURCE 200809L

#include "serve_json.h"

#include <stdlib.h>
#include <string.h>

/* What every route below holds, freed by request_end. */
typedef struct request {
    serve_fail fail;
    cJSON *root;
    serve_inputs inputs;
    float *rows;
} request;

static int request_begin(serve_server *s, const serve_call *call, request *q)
{
    memset(q, 0, sizeof *q);
    if (serve_check_ready(s, &q->fail)) return -1;
    return (q->root = serve_parse_body(s, call, &q->fail)) ? 0 : -1;
}

/* The reply (`ok`, or the failure), with everything the request held freed. */
static serve_reply request_end(request *q, cJSON *ok)
{
    serve_reply r = ok ? serve_json_reply(200, ok, q->inputs.tokens) : serve_fail_reply(&q->fail);
    r.tokens = q->inputs.tokens;
    serve_inputs_free(&q->inputs);
    cJSON_Delete(q->root);
    free(q->rows);
    return r;
}

/* truncate (absent or null: --auto-truncate's, as TEI's req.truncate.unwrap_or) and
 * truncation_direction, as TEI's requests carry them. */
static int truncation_fields(const cJSON *root, serve_encode_opts *o, serve_fail *f)
{
    return serve_field_bool(root, "truncate", 1, &o->truncate, f) ||
           serve_field_direction(root, &o->truncate_left, f);
}

static int embed_fields(serve_server *s, const cJSON *root, serve_encode_opts *o, int *normalize,
                        int *dimensions, serve_fail *f)
{
    int present;
    return truncation_fields(root, o, f) || serve_field_bool(root, "normalize", 0, normalize, f) ||
           serve_field_string(root, "prompt_name", &o->prompt_name, f) ||
           serve_field_int(root, "dimensions", 1, vkbert_model_dimension(s->model), dimensions,
                           &present, f);
}

serve_reply serve_tei_embed(serve_server *s, const serve_call *call)
{
    request q;
    serve_encode_opts o = serve_encode_defaults(s);
    int normalize = 1, dimensions = 0, width = 0;
    if (request_begin(s, call, &q) || embed_fields(s, q.root, &o, &normalize, &dimensions, &q.fail))
        return request_end(&q, NULL);
    /* TEI's Infer::embed refuses a classifier (core/src/infer.rs). */
    if (vkbert_model_labels(s->model) > 0) {
        serve_fail_set(&q.fail, "Backend", "Model is not an embedding model");
        return request_end(&q, NULL);
    }
    width = vkbert_model_dimension(s->model);
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(q.root, "inputs");
    if (serve_inputs_parse(s, inputs, "inputs", 1, &o, &q.inputs, &q.fail) ||
        serve_run(s, call, SERVE_TASK_EMBED, 0, &q.inputs, width, &q.rows, &q.fail))
        return request_end(&q, NULL);
    serve_embeddings_finish(q.rows, q.inputs.count, width, dimensions, normalize);
    int d = dimensions ? dimensions : width;
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; out && i < q.inputs.count; i++)
        cJSON_AddItemToArray(out, serve_json_floats(q.rows + (size_t)i * d, d));
    return request_end(&q, out);
}

typedef struct ranked {
    int index;
    float score;
} ranked;

/* TEI sorts by score ascending and reverses (server.rs, rerank and predict): highest first,
 * and equal scores in reverse index order. */
static int by_score_desc(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return y->index - x->index;
}

static ranked *rank_rows(const float *scores, int n, int stride)
{
    ranked *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    for (int i = 0; r && i < n; i++)
        r[i] = (ranked){i, scores[(size_t)i * stride]};
    if (r) qsort(r, (size_t)n, sizeof *r, by_score_desc);
    return r;
}

/* Only the shape of the list here: its items are read after the size checks. */
static int texts_field(const cJSON *root, const cJSON **texts, serve_fail *f)
{
    *texts = cJSON_GetObjectItemCaseSensitive(root, "texts");
    if (!*texts) return serve_fail_status(f, 422, "missing field `texts`");
    return cJSON_IsArray(*texts) ? 0
                                 : serve_fail_status(f, 422, "`texts` must be a list of strings");
}

/* TEI's rerank checks, in its order (server.rs): texts empty (Empty), a model that is not a
 * one-label classifier (Backend), a batch over max_client_batch_size (Validation). */
static int rerank_checks(const serve_server *s, int n, serve_fail *f)
{
    if (!n) return serve_fail_set(f, "Empty", "`texts` cannot be empty");
    if (vkbert_model_labels(s->model) != 1)
        return serve_fail_set(f, "Backend", "model is not a re-ranker model");
    int max = s->config->max_client_batch_size;
    if (n > max)
        return serve_fail_set(f, "Validation", "batch size %d > maximum allowed batch size %d", n,
                              max);
    return 0;
}

static int rerank_inputs(serve_server *s, const cJSON *root, serve_encode_opts *o, serve_inputs *x,
                         serve_fail *f)
{
    const cJSON *query = cJSON_GetObjectItemCaseSensitive(root, "query"), *texts, *t;
    if (!query) return serve_fail_status(f, 422, "missing field `query`");
    if (!cJSON_IsString(query)) return serve_fail_status(f, 422, "`query` must be a string");
    if (texts_field(root, &texts, f) || truncation_fields(root, o, f)) return -1;
    int n = cJSON_GetArraySize(texts), i = 0;
    if (rerank_checks(s, n, f) || serve_inputs_alloc(x, n, f)) return -1;
    cJSON_ArrayForEach(t, texts)
    {
        if (!cJSON_IsString(t))
            return serve_fail_status(f, 422, "`texts` must be a list of strings");
        if (serve_inputs_text(s, x, i++, query->valuestring, t->valuestring, o, f)) return -1;
    }
    return 0;
}

/* The texts by index, read once: a cJSON array is a linked list. */
static const char **texts_by_index(const cJSON *root, int n)
{
    const char **texts = malloc((size_t)(n ? n : 1) * sizeof *texts);
    const cJSON *t;
    int i = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(root, "texts"))
    {
        if (texts && i < n) texts[i++] = t->valuestring;
    }
    return texts;
}

static cJSON *rerank_json(const cJSON *root, const float *scores, int n, int return_text)
{
    ranked *r = rank_rows(scores, n, 1);
    const char **texts = return_text ? texts_by_index(root, n) : NULL;
    cJSON *out = r && (texts || !return_text) ? cJSON_CreateArray() : NULL;
    for (int i = 0; out && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", r[i].index);
        if (return_text) cJSON_AddStringToObject(o, "text", texts[r[i].index]);
        cJSON_AddItemToObject(o, "score", serve_json_float(r[i].score));
        cJSON_AddItemToArray(out, o);
    }
    free(texts);
    free(r);
    return out;
}

serve_reply serve_tei_rerank(serve_server *s, const serve_call *call)
{
    request q;
    serve_encode_opts o = serve_encode_defaults(s);
    int raw_scores = 0, return_text = 0;
    if (request_begin(s, call, &q) ||
        serve_field_bool(q.root, "raw_scores", 0, &raw_scores, &q.fail) ||
        serve_field_bool(q.root, "return_text", 0, &return_text, &q.fail) ||
        rerank_inputs(s, q.root, &o, &q.inputs, &q.fail) ||
        serve_run(s, call, SERVE_TASK_SCORE, raw_scores, &q.inputs, 1, &q.rows, &q.fail))
        return request_end(&q, NULL);
    return request_end(&q, rerank_json(q.root, q.rows, q.inputs.count, return_text));
}

/* One sequence of TEI's PredictInput (types.rs): [text] or [text, pair]. */
static int predict_sequence(const cJSON *v, const char **text, const char **pair)
{
    const cJSON *a = cJSON_IsArray(v) ? v->child : NULL, *b = a ? a->next : NULL;
    if (!cJSON_IsString(a) || (b && (!cJSON_IsString(b) || b->next))) return -1;
    *text = a->valuestring;
    *pair = b ? b->valuestring : NULL;
    return 0;
}

/* TEI's PredictInput: a string, a pair [a, b] (both one input), or a batch of [a] and [a, b];
 * *batch says which. Fills texts[2 * i] and texts[2 * i + 1] (NULL: no pair). A batch's size
 * is checked before its items are read (TEI checks it for a batch only, server.rs predict): a
 * body under the payload limit holds ~300k of them. */
static int predict_parse(const serve_server *s, const cJSON *v, const char ***texts, int *count,
                         int *batch, serve_fail *f)
{
    static const char shape[] = "`inputs` must be a string, a pair of strings [string, string] "
                                "or a batch of mixed strings and pairs [[string], [string, "
                                "string], ...]";
    int max = s->config->max_client_batch_size, i = 0;
    if (!v) return serve_fail_status(f, 422, "missing field `inputs`");
    *batch = cJSON_IsArray(v) && cJSON_IsArray(v->child);
    *count = *batch ? cJSON_GetArraySize(v) : 1;
    if (*count > max)
        return serve_fail_set(f, "Validation", "batch size %d > maximum allowed batch size %d",
                              *count, max);
    if (!(*texts = calloc((size_t)*count * 2, sizeof **texts)))
        return serve_fail_set(f, "Backend", "out of host memory");
    if (cJSON_IsString(v)) return (*texts)[0] = v->valuestring, 0;
    if (!*batch)
        return predict_sequence(v, *texts, *texts + 1) ? serve_fail_status(f, 422, shape) : 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        if (predict_sequence(e, *texts + 2 * i, *texts + 2 * i + 1))
            return serve_fail_status(f, 422, shape);
        i++;
    }
    return 0;
}

static int predict_inputs(serve_server *s, const cJSON *root, serve_inputs *x, int *batch,
                          serve_fail *f)
{
    serve_encode_opts o = serve_encode_defaults(s);
    const char **texts = NULL;
    int n = 0, r = 0;
    r = truncation_fields(root, &o, f) ||
        predict_parse(s, cJSON_GetObjectItemCaseSensitive(root, "inputs"), &texts, &n, batch, f);
    /* TEI's Infer::predict refuses a model without labels (core/src/infer.rs). */
    if (!r && vkbert_model_labels(s->model) < 1)
        r = serve_fail_set(f, "Backend", "Model is not a classifier model");
    r = r || serve_inputs_alloc(x, n, f);
    for (int i = 0; !r && i < n; i++)
        r = serve_inputs_text(s, x, i, texts[2 * i], texts[2 * i + 1], &o, f);
    free(texts);
    return r ? -1 : 0;
}

static cJSON *predictions_json(const serve_server *s, const float *scores, int labels)
{
    ranked *r = rank_rows(scores, labels, 1);
    cJSON *out = r ? cJSON_CreateArray() : NULL;
    for (int i = 0; out && i < labels; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "score", serve_json_float(r[i].score));
        cJSON_AddStringToObject(o, "label", vkbert_model_label(s->model, r[i].index));
        cJSON_AddItemToArray(out, o);
    }
    free(r);
    return out;
}

serve_reply serve_tei_predict(serve_server *s, const serve_call *call)
{
    request q;
    int raw_scores = 0, batch = 0;
    if (request_begin(s, call, &q) ||
        serve_field_bool(q.root, "raw_scores", 0, &raw_scores, &q.fail) ||
        predict_inputs(s, q.root, &q.inputs, &batch, &q.fail))
        return request_end(&q, NULL);
    int labels = vkbert_model_labels(s->model);
    if (serve_run(s, call, SERVE_TASK_SCORE, raw_scores, &q.inputs, labels, &q.rows, &q.fail))
        return request_end(&q, NULL);
    /* TEI's PredictResponse: one list for a single input, a list of lists for a batch. */
    if (!batch) return request_end(&q, predictions_json(s, q.rows, labels));
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; out && i < q.inputs.count; i++)
        cJSON_AddItemToArray(out, predictions_json(s, q.rows + (size_t)i * labels, labels));
    return request_end(&q, out);
}

/* The prompt vkbert_model_encode put before each text (nn/model/model_inputs.c's rule): the
 * request's prompt_name, else the folder's default prompt for an embedding model; read from the
 * model's description. *out is malloc'd, NULL for none. */
static int prompt_of(serve_server *s, const char *name, char **out, serve_fail *f)
{
    *out = NULL;
    if (!name && vkbert_model_labels(s->model) > 0) return 0;
    char *json = NULL;
    if (vkbert_model_describe(s->model, &json))
        return serve_fail_set(f, "Backend", "%s", vkbert_last_error(s->context));
    cJSON *d = cJSON_Parse(json);
    vkbert_free(json);
    if (!d) return serve_fail_set(f, "Backend", "out of host memory");
    const cJSON *fallback = cJSON_GetObjectItemCaseSensitive(d, "default_prompt_name");
    const char *key = name ? name : cJSON_IsString(fallback) ? fallback->valuestring : NULL;
    const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(d, "prompts");
    const cJSON *p = key ? cJSON_GetObjectItemCaseSensitive(prompts, key) : NULL;
    int failed = cJSON_IsString(p) && !(*out = strdup(p->valuestring));
    cJSON_Delete(d);
    return failed ? serve_fail_set(f, "Backend", "out of host memory") : 0;
}

/* The text the tokenizer saw (the prompt, then the input) and the byte where each of its
 * characters starts, one past the last at [chars]: the library's offsets count characters,
 * TEI's bytes. */
typedef struct seen_text {
    char *text;
    size_t *starts;
    int32_t chars;
} seen_text;

static int seen_make(const char *prompt, const char *input, seen_text *t)
{
    size_t a = prompt ? strlen(prompt) : 0, n = a + strlen(input);
    t->text = malloc(n + 1);
    t->starts = malloc((n + 1) * sizeof *t->starts);
    if (!t->text || !t->starts) return -1;
    memcpy(t->text, prompt ? prompt : "", a);
    memcpy(t->text + a, input, n - a + 1);
    t->chars = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)t->text[i] & 0xc0) != 0x80) t->starts[t->chars++] = i;
    t->starts[t->chars] = n;
    return 0;
}

static void seen_free(seen_text *t)
{
    free(t->text);
    free(t->starts);
}

/* TEI's SimpleToken (router/src/http/types.rs, core/src/tokenization.rs into_tokens): a special
 * token's text is its vocabulary entry, its start and stop null; any other token's are the byte
 * offsets of its span in the text the tokenizer saw (the prompt's included), and the text
 * there. Special tokens are those the template added: left out without add_special_tokens. */
static cJSON *token_json(const vkbert_tokenizer *t, const vkbert_encoding *in, int i,
                         const seen_text *seen)
{
    cJSON *o = cJSON_CreateObject();
    int special = in->special_tokens_mask[i] != 0;
    int32_t a = in->offsets[2 * i], b = in->offsets[2 * i + 1];
    if (!o || (!special && (a < 0 || a > b || b > seen->chars))) return cJSON_Delete(o), NULL;
    cJSON_AddNumberToObject(o, "id", in->ids[i]);
    if (special) {
        const char *text = vkbert_tokenizer_token(t, in->ids[i]);
        cJSON_AddStringToObject(o, "text", text ? text : "");
    } else {
        size_t start = seen->starts[a], stop = seen->starts[b];
        char *text = strndup(seen->text + start, stop - start);
        if (!text || !cJSON_AddStringToObject(o, "text", text)) cJSON_Delete(o), o = NULL;
        free(text);
        if (!o) return NULL;
    }
    cJSON_AddBoolToObject(o, "special", special);
    if (special) cJSON_AddNullToObject(o, "start"), cJSON_AddNullToObject(o, "stop");
    if (!special) {
        cJSON_AddNumberToObject(o, "start", (double)seen->starts[a]);
        cJSON_AddNumberToObject(o, "stop", (double)seen->starts[b]);
    }
    return o;
}

static cJSON *tokens_json(const serve_server *s, const vkbert_encoding *in, const char *prompt,
                          const char *input, int add_special, serve_fail *f)
{
    const vkbert_tokenizer *t = vkbert_model_tokenizer(s->model);
    if (in->count && (!in->special_tokens_mask || !in->offsets))
        return serve_fail_set(f, "Backend", "the tokenizer gave no offsets"), NULL;
    seen_text seen = {0};
    cJSON *out = seen_make(prompt, input, &seen) ? NULL : cJSON_CreateArray();
    for (int i = 0; out && i < in->count; i++) {
        if (in->special_tokens_mask[i] && !add_special) continue;
        cJSON *token = token_json(t, in, i, &seen);
        if (!token) cJSON_Delete(out), out = NULL;
        if (token) cJSON_AddItemToArray(out, token);
    }
    seen_free(&seen);
    if (!out) serve_fail_set(f, "Backend", "out of host memory, or offsets outside the text");
    return out;
}

/* The request's i-th text: inputs itself, or its i-th element. */
static const char *input_text(const cJSON *inputs, int i)
{
    const cJSON *v = cJSON_IsString(inputs) ? inputs : cJSON_GetArrayItem(inputs, i);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* TEI's /tokenize (server.rs, tokenize): TokenizeInput is a string or a list of strings (no
 * token ids), add_special_tokens (true) and prompt_name; no truncation is asked for, but
 * vkbert_model_encode cuts at the model's limit. Runs nothing on the device. */
serve_reply serve_tei_tokenize(serve_server *s, const serve_call *call)
{
    request q;
    serve_encode_opts o = {NULL, 1, 0};
    int add_special = 1;
    char *prompt = NULL;
    const cJSON *inputs = NULL;
    if (request_begin(s, call, &q) ||
        serve_field_bool(q.root, "add_special_tokens", 0, &add_special, &q.fail) ||
        serve_field_string(q.root, "prompt_name", &o.prompt_name, &q.fail) ||
        serve_inputs_parse(s, inputs = cJSON_GetObjectItemCaseSensitive(q.root, "inputs"), "inputs",
                           0, &o, &q.inputs, &q.fail) ||
        prompt_of(s, o.prompt_name, &prompt, &q.fail))
        return request_end(&q, NULL);
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; out && i < q.inputs.count; i++) {
        cJSON *tokens =
            tokens_json(s, &q.inputs.in[i], prompt, input_text(inputs, i), add_special, &q.fail);
        if (!tokens) cJSON_Delete(out), out = NULL;
        if (tokens) cJSON_AddItemToArray(out, tokens);
    }
    free(prompt);
    return request_end(&q, out);
}

/* One list of ids to its text: an empty one is TEI's Empty error (core/src/tokenization.rs,
 * decode); an id that is not an integer in [0, 2^32) is a 422, as TEI's Vec<u32> refuses it.
 * An id outside the vocabulary is a Tokenizer error naming it, as in /embed's token ids (TEI,
 * through tokenizers' decode, would leave it out). */
static cJSON *decoded_json(serve_server *s, const cJSON *ids, int skip, serve_fail *f)
{
    const vkbert_tokenizer *t = vkbert_model_tokenizer(s->model);
    int n = cJSON_GetArraySize(ids);
    if (!n) return serve_fail_set(f, "Empty", "`input_ids` cannot be empty"), NULL;
    int32_t *v = malloc((size_t)n * sizeof *v);
    char *text = NULL;
    if (!v) return serve_fail_set(f, "Backend", "out of host memory"), NULL;
    if (serve_ids_read(ids, v, n, t, f)) return free(v), NULL;
    vkbert_status st = vkbert_tokenizer_decode(t, v, n, skip, &text);
    free(v);
    if (st == VKBERT_ERROR_OUT_OF_MEMORY) serve_fail_set(f, "Backend", "out of host memory");
    if (st && st != VKBERT_ERROR_OUT_OF_MEMORY)
        serve_fail_set(f, "Tokenizer", "%s", vkbert_last_error(NULL));
    cJSON *out = text ? cJSON_CreateString(text) : NULL;
    vkbert_free(text);
    if (text && !out) serve_fail_set(f, "Backend", "out of host memory");
    return out;
}

/* A list of lists of numbers, not one list of numbers ([] is one). */
static int is_batch(const cJSON *ids)
{
    if (!cJSON_IsArray(ids) || serve_is_ids(ids)) return 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ids) if (!serve_is_ids(e)) return 0;
    return 1;
}

/* TEI's /decode (server.rs, decode): DecodeRequest's ids are one list of token ids or a list
 * of those (InputIds, untagged: [] is one empty list), skip_special_tokens (true); the
 * DecodeResponse is a list of strings, one for a single list. A batch over
 * max_client_batch_size is a 413 Validation error. Runs nothing on the device. */
serve_reply serve_tei_decode(serve_server *s, const serve_call *call)
{
    request q;
    int skip = 1;
    if (request_begin(s, call, &q) ||
        serve_field_bool(q.root, "skip_special_tokens", 0, &skip, &q.fail))
        return request_end(&q, NULL);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(q.root, "ids");
    int batch = is_batch(ids), n = cJSON_GetArraySize(ids);
    if (!ids)
        serve_fail_status(&q.fail, 422, "missing field `ids`");
    else if (!batch && !serve_is_ids(ids))
        serve_fail_status(&q.fail, 422, "`ids` must be a list of token ids or a list of those");
    else if (batch && n > s->config->max_client_batch_size)
        serve_fail_set(&q.fail, "Validation", "batch size %d > maximum allowed batch size %d", n,
                       s->config->max_client_batch_size);
    if (q.fail.status) return request_end(&q, NULL);
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; out && i < (batch ? n : 1); i++) {
        cJSON *text = decoded_json(s, batch ? cJSON_GetArrayItem(ids, i) : ids, skip, &q.fail);
        if (!text) cJSON_Delete(out), out = NULL;
        if (text) cJSON_AddItemToArray(out, text);
    }
    if (!out && !q.fail.status) serve_fail_set(&q.fail, "Backend", "out of host memory");
    return request_end(&q, out);
}
