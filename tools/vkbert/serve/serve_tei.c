/* text-embeddings-inference's model routes: /embed, /rerank, /predict. The request and
 * response shapes and the checks are TEI's (router/src/http/types.rs and server.rs). */
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

/* Whether the input starts with the template's first `lead` tokens and ends with the rest. */
static int template_split(const vkbert_encoding *in, const vkbert_encoding *e, int lead)
{
    if (e->count > in->count) return 0;
    for (int i = 0; i < e->count; i++) {
        int at = i < lead ? i : in->count - (e->count - i);
        if (in->ids[at] != e->ids[i]) return 0;
    }
    return 1;
}

/* How many of the template's special tokens come before the text, and (*specials) how many
 * there are: the empty text's encoding is the template alone ([CLS] [SEP]). Splits are tried
 * from the middle out, so that a text that starts with [SEP] still splits [CLS] | [SEP]. */
static int template_lead(const vkbert_tokenizer *t, const vkbert_encoding *in, int *specials)
{
    vkbert_encoding e = VKBERT_ENCODING_INIT;
    int lead = -1;
    *specials = 0;
    if (vkbert_tokenizer_encode(t, "", NULL, -1, &e)) return 0;
    for (int step = 0; lead < 0 && step <= 2 * e.count; step++) {
        int c = (e.count + 1) / 2 + (step % 2 ? -(step + 1) / 2 : step / 2);
        if (c >= 0 && c <= e.count && template_split(in, &e, c)) lead = c;
    }
    if (lead >= 0) *specials = e.count;
    vkbert_encoding_free(&e);
    return lead < 0 ? 0 : lead;
}

/* TEI's SimpleToken (types.rs): start and stop are Option<usize>, null for special tokens;
 * vkbert's tokenizer keeps no offsets, so they are null for every token, and text is the
 * vocabulary's token instead of the input's characters. */
static cJSON *tokens_json(const serve_server *s, const vkbert_encoding *in, int add_special)
{
    const vkbert_tokenizer *t = vkbert_model_tokenizer(s->model);
    int specials, lead = template_lead(t, in, &specials), trail = specials - lead;
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; out && i < in->count; i++) {
        int special = i < lead || i >= in->count - trail;
        if (special && !add_special) continue;
        cJSON *o = cJSON_CreateObject();
        const char *text = vkbert_tokenizer_token(t, in->ids[i]);
        cJSON_AddNumberToObject(o, "id", in->ids[i]);
        cJSON_AddStringToObject(o, "text", text ? text : "");
        cJSON_AddBoolToObject(o, "special", special);
        cJSON_AddNullToObject(o, "start");
        cJSON_AddNullToObject(o, "stop");
        cJSON_AddItemToArray(out, o);
    }
    return out;
}

/* TEI's /tokenize (server.rs, tokenize): TokenizeInput is a string or a list of strings (no
 * token ids), add_special_tokens (true) and prompt_name; no truncation is asked for, but
 * vkbert_model_encode cuts at the model's limit. Runs nothing on the device. */
serve_reply serve_tei_tokenize(serve_server *s, const serve_call *call)
{
    request q;
    serve_encode_opts o = {NULL, 1, 0};
    int add_special = 1;
    if (request_begin(s, call, &q) ||
        serve_field_bool(q.root, "add_special_tokens", 0, &add_special, &q.fail) ||
        serve_field_string(q.root, "prompt_name", &o.prompt_name, &q.fail) ||
        serve_inputs_parse(s, cJSON_GetObjectItemCaseSensitive(q.root, "inputs"), "inputs", 0, &o,
                           &q.inputs, &q.fail))
        return request_end(&q, NULL);
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; out && i < q.inputs.count; i++)
        cJSON_AddItemToArray(out, tokens_json(s, &q.inputs.in[i], add_special));
    return request_end(&q, out);
}
