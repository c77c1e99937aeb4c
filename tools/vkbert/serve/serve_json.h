/* What the routes share (serve_json.c, serve_run.c): a failure as a value each route renders in
 * its own error shape, request parsing and checks, one request's inputs through the queue, and
 * JSON numbers. Private to serve_openai.c, serve_tei.c and serve_reply.c. */
#ifndef VKBERT_SERVE_JSON_H
#define VKBERT_SERVE_JSON_H

#include "serve.h"

#include <cjson/cJSON.h>

/* A failure with TEI's error type and status (router/src/http/server.rs, From<&ErrorType> for
 * StatusCode: Empty 400, Tokenizer 422, Validation 413, Overloaded 429, Backend 424, Unhealthy
 * 503), or a status of its own for the body's syntax (400) and shape (422) as axum's Json
 * extractor answers them. status 0: the client is gone, nothing to send. */
typedef struct serve_fail {
    int status;
    const char *type;
    char message[512];
} serve_fail;

/* Sets *f to `type` with TEI's status for it; returns -1, for `return serve_fail_set(...)`. */
int serve_fail_set(serve_fail *f, const char *type, const char *fmt, ...) PLAT_PRINTF(3, 4);
/* The same with an explicit status (the body's syntax and shape). */
int serve_fail_status(serve_fail *f, int status, const char *fmt, ...) PLAT_PRINTF(3, 4);
/* TEI's error body for *f. */
serve_reply serve_fail_reply(const serve_fail *f);

/* 0 when the model routes may run; else -1 with 503 Unhealthy in *f. */
int serve_check_ready(const serve_server *s, serve_fail *f);
/* The body as a JSON object: NULL with *f set when it is not UTF-8 (400), not JSON (400) or
 * not an object (422). A string's \u0000 is dropped where the model's tokenizer drops it
 * (s->drops_nul), else refused (422), never left to end the string early. */
cJSON *serve_parse_body(const serve_server *s, const serve_call *call, serve_fail *f);

/* Optional fields: absent (or null where `nullable`) leaves *out as it is. A value of another
 * type is a 422 naming the field. */
int serve_field_bool(const cJSON *o, const char *name, int nullable, int *out, serve_fail *f);
int serve_field_string(const cJSON *o, const char *name, const char **out, serve_fail *f);
/* An integer field in [lo, hi]; *present says whether it was given. */
int serve_field_int(const cJSON *o, const char *name, int lo, int hi, int *out, int *present,
                    serve_fail *f);
/* TEI's truncation_direction, "Right" (default) or "Left": *left 1 for "Left". */
int serve_field_direction(const cJSON *o, int *left, serve_fail *f);

/* One request's inputs, tokenized. `hand` marks the rows made here from token ids (freed with
 * free, not vkbert_encoding_free). */
typedef struct serve_inputs {
    vkbert_encoding *in;
    unsigned char *hand;
    int count;
    int tokens; /* the sum of the counts */
} serve_inputs;

typedef struct serve_encode_opts {
    const char *prompt_name;
    int truncate; /* 1: cut at the model's limit; 0: longer inputs are an error */
    int truncate_left;
} serve_encode_opts;

/* The options before a request's own fields: no prompt name, truncation as --auto-truncate
 * says, from the right. */
serve_encode_opts serve_encode_defaults(const serve_server *s);

int serve_inputs_alloc(serve_inputs *x, int count, serve_fail *f);
void serve_inputs_free(serve_inputs *x);
/* Tokenizes input i (a text, or a pair when `pair` is not NULL) with TEI's checks. */
int serve_inputs_text(const serve_server *s, serve_inputs *x, int i, const char *text,
                      const char *pair, const serve_encode_opts *o, serve_fail *f);
/* Input i from a JSON array of token ids, used as given (no special tokens added). */
int serve_inputs_ids(const serve_server *s, serve_inputs *x, int i, const cJSON *ids,
                     const serve_encode_opts *o, serve_fail *f);
/* Whether v is a JSON array of numbers only (an empty one too). */
int serve_is_ids(const cJSON *v);
/* The token ids of a JSON array of numbers into out[0..n): TEI's Vec<u32> (anything else a
 * 422), each in the vocabulary (else a Tokenizer error naming it). */
int serve_ids_read(const cJSON *ids, int32_t *out, int n, const vkbert_tokenizer *t, serve_fail *f);
/* TEI's Input: a string, a list of token ids, or a list of those (`ids` 0: strings only).
 * Checks TEI's batch rules and tokenizes every input into *x. */
int serve_inputs_parse(const serve_server *s, const cJSON *v, const char *field, int ids,
                       const serve_encode_opts *o, serve_inputs *x, serve_fail *f);

/* Runs the inputs as one serve_work; *rows (malloc'd, [count][width]) on success. A
 * non-finite result is a 424 Backend failure. */
int serve_run(serve_server *s, const serve_call *call, serve_task task, int raw_scores,
              const serve_inputs *x, int width, float **rows, serve_fail *f);

/* Embeddings in place, in double precision: each row cut to `dimensions` columns (packed to
 * that width), then divided by its L2 norm when `normalize` (torch's F.normalize eps). */
void serve_embeddings_finish(float *rows, int count, int width, int dimensions, int normalize);

/* A float32 as the shortest JSON number that reads back as the same float32. */
cJSON *serve_json_float(float v);
cJSON *serve_json_floats(const float *v, int n);
/* A reply of `root` (deleted here), printed without spaces, as application/json. */
serve_reply serve_json_reply(int status, cJSON *root, int tokens);

#endif
