/* The model API and queue that vkbert serve's routes call, faked for fuzz_serve_request: the
 * tokenizing is the real io tokenizer's (tok_encode_cut), the rest is fixed numbers, so that the
 * routes' parsing, checks and replies run as in the server, without a device. */
#define _GNU_SOURCE /* memfd_create */
#include "serve_fakes.h"

#include "fuzz_util.h"
#include "io/tokenizer.h"

#include <limits.h>
#include <math.h>

#define FAKE_DIMENSION 4
#define FAKE_MAX_LABELS 3

struct vkbert_tokenizer {
    tokenizer *tok;
    int max_length;
};

struct vkbert_model {
    vkbert_tokenizer tokenizer;
    int labels;
};

struct vkbert_context {
    char error[256];
};

struct serve_queue {
    fake_outcome outcome;
    int healthy;
};

static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\na\nquery\n:\nhello\nworld\n"
                            "##s\n##ing\n!\n,\n.\n\xe4\xb8\xad\ncaf\xc3\xa9\n";
static const char *const label_names[FAKE_MAX_LABELS] = {"negative", "neutral", "positive"};

static vkbert_model model;
static vkbert_context context;
static serve_queue queue;

static void free_model(void)
{
    tok_free(model.tokenizer.tok);
}

vkbert_model *fake_model(void)
{
    static int state; /* 0 not yet, 1 loaded, -1 failed */
    if (state) return state > 0 ? &model : NULL;
    fuzz_file file;
    state = -1;
    if (fuzz_file_open(&file) != 0) return NULL;
    const char *path = fuzz_file_write(&file, (const uint8_t *)vocab, sizeof vocab - 1);
    char err[256] = "";
    if (path && tok_load(path, 1, &model.tokenizer.tok, err, sizeof err) == 0)
        state = 1;
    else
        fprintf(stderr, "%s\n", err);
    close(file.fd);
    atexit(free_model);
    return state > 0 ? &model : NULL;
}

vkbert_context *fake_context(void)
{
    return &context;
}

serve_queue *fake_queue(void)
{
    return &queue;
}

void fake_model_set(const fake_model_shape *shape)
{
    model.labels = shape->labels < FAKE_MAX_LABELS ? shape->labels : FAKE_MAX_LABELS;
    model.tokenizer.max_length = shape->max_length;
}

void fake_queue_set(fake_outcome outcome, int healthy)
{
    queue.outcome = outcome;
    queue.healthy = healthy;
}

/* ---- the model's public API ---- */

int vkbert_model_dimension(const vkbert_model *m)
{
    return m ? FAKE_DIMENSION : 0;
}

int vkbert_model_labels(const vkbert_model *m)
{
    return m ? m->labels : 0;
}

const char *vkbert_model_label(const vkbert_model *m, int index)
{
    return m && index >= 0 && index < m->labels ? label_names[index] : NULL;
}

const vkbert_tokenizer *vkbert_model_tokenizer(const vkbert_model *m)
{
    return m ? &m->tokenizer : NULL;
}

int vkbert_tokenizer_max_length(const vkbert_tokenizer *t)
{
    return t->max_length;
}

const char *vkbert_tokenizer_token(const vkbert_tokenizer *t, int32_t id)
{
    return tok_token(t->tok, id);
}

static vkbert_status fail(vkbert_status status, const char *why)
{
    snprintf(context.error, sizeof context.error, "%s", why);
    return status;
}

/* The one prompt the fake model has, to test prompt_name both ways. */
static vkbert_status find_prompt(const char *name, const char **prompt)
{
    *prompt = NULL;
    if (!name) return VKBERT_OK;
    if (strcmp(name, "query")) return fail(VKBERT_ERROR_INVALID_ARGUMENT, "no such prompt");
    *prompt = "query: ";
    return VKBERT_OK;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    char *s = malloc(n + m + 1);
    if (s) memcpy(s, a, n), memcpy(s + n, b, m + 1);
    return s;
}

vkbert_status vkbert_model_encode(const vkbert_model *m, const char *text, const char *pair,
                                  const vkbert_encode_options *o, vkbert_encoding *out)
{
    const char *prompt;
    vkbert_status st = find_prompt(o->prompt_name, &prompt);
    if (st) return st;
    char *joined = prompt && !pair ? join(prompt, text) : NULL, err[256];
    if (prompt && !pair && !joined) return fail(VKBERT_ERROR_OUT_OF_MEMORY, "out of memory");
    tok_ids t;
    int max = o->truncate > 0 ? m->tokenizer.max_length : INT_MAX;
    int rc = tok_encode_cut(m->tokenizer.tok, joined ? joined : text, pair, max, o->truncate_left,
                            &t, err, sizeof err);
    free(joined);
    if (rc) return fail(VKBERT_ERROR_INVALID_ARGUMENT, err);
    *out = (vkbert_encoding){.struct_size = sizeof *out,
                             .ids = t.ids,
                             .type_ids = t.type_ids,
                             .count = t.count,
                             .full_count = t.full_count,
                             .special_tokens_mask = t.special,
                             .offsets = t.offsets,
                             .attention_mask = t.mask};
    return VKBERT_OK;
}

vkbert_status vkbert_tokenizer_encode(const vkbert_tokenizer *t, const char *text, const char *pair,
                                      int max_length, vkbert_encoding *out)
{
    tok_ids ids;
    char err[256];
    /* As the real one: 0 the folder's limit, -1 none. */
    int max = max_length < 0 ? INT_MAX : max_length ? max_length : t->max_length;
    if (tok_encode(t->tok, text, pair, max, &ids, err, sizeof err))
        return fail(VKBERT_ERROR_INVALID_ARGUMENT, err);
    free(ids.mask);
    free(ids.special);
    free(ids.offsets);
    out->ids = ids.ids;
    out->type_ids = ids.type_ids;
    out->count = ids.count;
    out->prompt_tokens = 0;
    out->full_count = ids.full_count;
    return VKBERT_OK;
}

void vkbert_encoding_free(vkbert_encoding *e)
{
    free(e->ids);
    free(e->type_ids);
    free(e->special_tokens_mask);
    free(e->offsets);
    free(e->attention_mask);
    e->ids = e->type_ids = e->special_tokens_mask = e->offsets = e->attention_mask = NULL;
}

vkbert_status vkbert_tokenizer_decode(const vkbert_tokenizer *t, const int32_t *ids, int count,
                                      int skip_special_tokens, char **text)
{
    char err[256];
    if (tok_decode(t->tok, ids, (size_t)count, skip_special_tokens, text, err, sizeof err))
        return fail(VKBERT_ERROR_INVALID_ARGUMENT, err);
    return VKBERT_OK;
}

/* The prompts as find_prompt has them: "query", not the default. */
vkbert_status vkbert_model_describe(vkbert_model *m, char **json)
{
    (void)m;
    *json = join("{\"pooling\":[\"mean_tokens\",\"lasttoken\"],\"prompts\":{\"query\":"
                 "\"query: \"},",
                 "\"default_prompt_name\":null,\"max_length\":8}");
    return *json ? VKBERT_OK : VKBERT_ERROR_OUT_OF_MEMORY;
}

void vkbert_free(void *memory)
{
    free(memory);
}

const char *vkbert_last_error(const vkbert_context *ctx)
{
    return ctx->error;
}

const char *vkbert_version_string(void)
{
    return "fuzz";
}

/* ---- the queue ---- */

int serve_queue_healthy(serve_queue *q)
{
    return q->healthy;
}

int serve_queue_depth(serve_queue *q)
{
    (void)q;
    return 0;
}

/* Rows from the inputs' ids, so that the scores differ and their order is tested. */
static void fill_rows(serve_work *w)
{
    for (int i = 0; i < w->count; i++) {
        const vkbert_encoding *in = &w->inputs[i];
        for (int j = 0; j < w->width; j++)
            w->rows[(size_t)i * w->width + j] =
                (float)((in->count ? in->ids[(i + j) % in->count] : 0) - j) / 7.0f;
    }
    if (w->count && w->width) w->rows[0] = queue.outcome == FAKE_NAN ? NAN : w->rows[0];
}

static serve_outcome failed(serve_work *w, vkbert_status status)
{
    w->status = status;
    snprintf(w->error, sizeof w->error, "the fake batch failed");
    return SERVE_FAILED;
}

serve_outcome serve_queue_run(serve_queue *q, serve_work *w)
{
    fill_rows(w);
    switch (q->outcome) {
    case FAKE_FAILED:
        return failed(w, VKBERT_ERROR_DEVICE_LIMIT);
    case FAKE_INVALID:
        return failed(w, VKBERT_ERROR_INVALID_ARGUMENT);
    case FAKE_LOST:
        return failed(w, VKBERT_ERROR_DEVICE_LOST);
    case FAKE_OVERLOADED:
        return SERVE_OVERLOADED;
    case FAKE_UNHEALTHY:
        return SERVE_UNHEALTHY;
    case FAKE_GONE:
        return SERVE_GONE;
    default:
        return SERVE_DONE;
    }
}
