/* The post-processors' loaded form, shared by their loader (tok_post.c) and their run
 * (tok_post_run.c). */
#ifndef VKBERT_IO_TOK_POST_INTERNAL_H
#define VKBERT_IO_TOK_POST_INTERNAL_H

#include "tok_pipeline.h"

typedef enum post_kind {
    POST_TEMPLATE,
    POST_BERT,
    POST_ROBERTA,
    POST_BYTE_LEVEL,
    POST_SEQUENCE,
} post_kind;

/* A template's special token: its ids and their strings. */
typedef struct tpl_special {
    const char *name; /* the special_tokens key (cJSON's string, copied) */
    int32_t *ids;
    char **strs;
    size_t *lens;
    size_t n;
} tpl_special;

/* One piece of a template: a sequence (0 for $A, 1 for $B) or a special token. */
typedef struct tpl_piece {
    int seq; /* -1 for a special token */
    int32_t type_id;
    const tpl_special *special;
} tpl_piece;

typedef struct tpl_side {
    tpl_piece *v;
    size_t n;
} tpl_side;

/* Bert's and Roberta's [token, id]. */
typedef struct post_named {
    char *s;
    size_t len;
    int32_t id;
} post_named;

struct tok_post {
    post_kind kind;
    tpl_side single, pair;
    tpl_special *specials;
    size_t n_specials;
    char *names; /* the special tokens' names, NUL-separated */
    post_named sep, cls;
    int trim_offsets, add_prefix_space;
    tok_post **procs;
    size_t n_procs;
};

#endif
