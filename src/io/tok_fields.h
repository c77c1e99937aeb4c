/* Reading a tokenizer.json component's members, each failure a message naming the component
 * and the key ("decoder: Strip: start: expected an integer from 0 to ..."). The one set of
 * readers every component loader uses: normalizers, pre-tokenizers, models, post-processors and
 * decoders. `what` names the component ("model: BPE"), `key` the member. */
#ifndef VKBERT_IO_TOK_FIELDS_H
#define VKBERT_IO_TOK_FIELDS_H

#include "io_error.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Refuses a member of o whose key is not in known[] (NULL-terminated), by name: an option this
 * reader does not know could change what the component does. */
int tok_fields_known(const err_ctx *c, const cJSON *o, const char *what, const char *const *known);
/* o's "type": o must be an object with a string "type" (*type is cJSON's). */
int tok_field_type(const err_ctx *c, const cJSON *o, const char *what, const char **type);

/* A required string member; *s is cJSON's (NUL-terminated), *n its length. */
int tok_field_string(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                     const char **s, size_t *n);
/* An optional string member (serde's Option<String>): absent or null, *s is NULL. */
int tok_field_opt_string(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                         const char **s);
/* A required string member, copied: the caller frees *out; *n its length. */
int tok_field_copy(const err_ctx *c, const cJSON *o, const char *what, const char *key, char **out,
                   size_t *n);
/* A copy of s (NULL stays NULL); -1 when out of memory. */
int tok_strdup(const err_ctx *c, const char *s, char **out);

/* A boolean member: `def` when absent, or a failure when def < 0 (required). */
int tok_field_bool(const err_ctx *c, const cJSON *o, const char *what, const char *key, int def,
                   int *out);
/* An optional boolean member (serde's Option<bool>): absent or null, *out is left as it is. */
int tok_field_opt_bool(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                       int *out);

/* A whole number in [0, most] (v is the member itself; `key` names it after `what`, or is NULL
 * where `what` names it whole). */
int tok_field_number(const err_ctx *c, const cJSON *v, const char *what, const char *key,
                     double most, double *out);
/* The same, for a number that fits in 32 bits (max at most UINT32_MAX). */
int tok_field_uint(const err_ctx *c, const cJSON *v, const char *what, double max, uint32_t *out);
/* A required string member of exactly one character (Rust's `char`): its code point. */
int tok_field_char(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                   int32_t *out);

/* The code point at s[0..n) (valid UTF-8, n > 0) and its length in bytes. */
int32_t tok_utf8_decode(const char *s, size_t n, size_t *len);

#endif
