/* JSON files of a model folder (config.json, modules.json...): read whole and parsed with
 * cJSON, errors as "<path>: <problem>". Plain C, no Vulkan. */
#ifndef VKBERT_IO_JSON_FILE_H
#define VKBERT_IO_JSON_FILE_H

#include "io_error.h"

#include <cjson/cJSON.h>

/* dir/name in a new string (free it), or NULL when out of memory. */
char *io_path_join(const char *dir, const char *name);

/* 1 when path names an existing file or folder. */
int io_path_exists(const char *path);

/* dir/model.safetensors (free it). When the folder has none, NULL with a message naming
 * dir/model.safetensors, or dir/pytorch_model.bin when only that is there, followed by `how`
 * (how to convert it). */
char *io_safetensors_path(const err_ctx *e, const char *dir, const char *how);

/* The whole file e->path, NUL-terminated (free it); NULL with the message written. */
char *io_read_text(const err_ctx *e);

/* The parsed file (cJSON_Delete it); NULL with the message written when it cannot be read
 * or is not valid JSON. */
cJSON *io_json_load(const err_ctx *e);

/* The fields of a parsed object, messages "field '<key>' ...". A missing or null optional
 * field leaves *out as it is. */
int io_json_positive_int(const err_ctx *e, const cJSON *obj, const char *key, int required,
                         int *out);
int io_json_bool(const err_ctx *e, const cJSON *obj, const char *key, int required, int *out);
/* A string field's value, pointing into obj; NULL when absent or null. -1 when not a string. */
int io_json_string(const err_ctx *e, const cJSON *obj, const char *key, const char **out);

/* Writes `root` as indented JSON and a newline. */
int io_json_save(const err_ctx *e, const cJSON *root);

#endif
