/* Reading a tokenizer.json component's members, each failure a message naming the component
 * and the key ("decoder: Strip: start: expected an integer from 0 to ..."). Shared by the
 * post-processors' and the decoders' loaders (tok_post.c, tok_decoders.c). */
#ifndef VKBERT_IO_TOK_FIELDS_H
#define VKBERT_IO_TOK_FIELDS_H

#include "io_error.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Refuses a member of o whose key is not in known[] (NULL-terminated), by name: an option this
 * reader does not know could change what the component does. */
int tok_fields_known(const err_ctx *c, const cJSON *o, const char *what, const char *const *known);
/* A required string member; *s is cJSON's (NUL-terminated), *n its length. */
int tok_field_string(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                     const char **s, size_t *n);
/* A boolean member: `def` when absent, or a failure when def < 0 (required). */
int tok_field_bool(const err_ctx *c, const cJSON *o, const char *what, const char *key, int def,
                   int *out);
/* An integer in [0, max] (v is the member itself, `what` names it whole). */
int tok_field_uint(const err_ctx *c, const cJSON *v, const char *what, double max, uint32_t *out);
/* A required string member of exactly one character (Rust's `char`): its code point. */
int tok_field_char(const err_ctx *c, const cJSON *o, const char *what, const char *key,
                   int32_t *out);

/* The code point at s[0..n) (valid UTF-8, n > 0) and its length in bytes. */
int32_t tok_utf8_decode(const char *s, size_t n, size_t *len);

#endif
