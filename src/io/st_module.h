/* Between st_model.c (modules.json and the root's files) and st_modules.c (each module's own
 * files). Internal to src/io. */
#ifndef VKBERT_IO_ST_MODULE_H
#define VKBERT_IO_ST_MODULE_H

#include "io_error.h"
#include "json_file.h"
#include "st_model.h"

/* Pooling's config.json into m's pool_modes, include_prompt, word_embedding_dimension. */
int st_pooling_parse(const err_ctx *e, const cJSON *root, st_model *m);
/* Dense's config.json into d's sizes, bias and activation. */
int st_dense_parse(const err_ctx *e, const cJSON *root, st_dense *d);
/* Normalize's config.json (v6): it must normalize the sentence embedding. */
int st_normalize_parse(const err_ctx *e, const cJSON *root);
/* mdir/model.safetensors into d's weight and bias (which the caller frees, also on failure). */
int st_dense_load_weights(const err_ctx *e, const char *mdir, st_dense *d);
/* ST_ACT_* for a class name Dense.load would import, or -1. */
int st_activation_parse(const char *name);

#endif
