/* JSON files of a model folder (config.json, modules.json...): read whole and parsed with
 * cJSON, errors as "<path>: <problem>". Plain C, no Vulkan. */
#ifndef VKBERT_IO_JSON_FILE_H
#define VKBERT_IO_JSON_FILE_H

#include "io_error.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

/* dir/name in a new string (free it), or NULL when out of memory. */
char *io_path_join(const char *dir, const char *name);

/* 1 when path names an existing file or folder. */
int io_path_exists(const char *path);

/* dir/model.safetensors (free it). When the folder has none, NULL with a message naming
 * dir/model.safetensors, or dir/pytorch_model.bin when only that is there, followed by `how`
 * (how to convert it). */
char *io_safetensors_path(const err_ctx *e, const char *dir, const char *how);

/* e->path opened for binary reading when it is a regular file (see plat_open_regular), its
 * size in *size; else NULL with the message written ("not a regular file" for a FIFO, device
 * or folder) and errno kept from the open (ENOENT: missing). */
FILE *io_open_regular(const err_ctx *e, uint64_t *size);

/* The most read of a file read whole, so that a huge file (or a link to one) is refused, not
 * read until memory runs out. Each is many times the largest real file: config.json and the
 * other configs are a few KB, and 4 MiB still holds an id2label of 100k labels; a 250k-word
 * tokenizer.json is about 17 MB, and tokenizer_config.json can list all its added tokens again;
 * a 250k-word vocab.txt is about 3 MB. */
#define IO_CAP_JSON ((size_t)4 << 20)
#define IO_CAP_TOKENIZER ((size_t)64 << 20)
#define IO_CAP_VOCAB ((size_t)16 << 20)

/* The whole regular file e->path, NUL-terminated (free it), when at most `cap` bytes; else -1
 * with the message written, and errno as io_open_regular leaves it. */
int io_read_file(const err_ctx *e, size_t cap, char **text, size_t *size);

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
