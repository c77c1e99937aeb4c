/* Sentence-transformers folders for the reader's tests: a tiny one written whole, its JSON
 * files edited field by field, and the check that the reader refuses one. Any failure here
 * fails the test. */
#ifndef VKBERT_TEST_ST_EDIT_H
#define VKBERT_TEST_ST_EDIT_H

#include "st_folder.h"

#include <cjson/cJSON.h>

/* The hidden size of st_edit_write_folder's BERT. */
#define ST_EDIT_H 8

/* A tiny BERT (hidden ST_EDIT_H, 16 positions, 20 ids) where the spec puts it, then the
 * spec's sentence-transformers files, into dir. */
void st_edit_write_folder(const char *dir, const st_folder_spec *spec);

/* dir/name parsed (cJSON_Delete it), or written from text or from root (which this frees). */
cJSON *st_edit_read(const char *dir, const char *name);
void st_edit_write_text(const char *dir, const char *name, const char *text);
void st_edit_write_json(const char *dir, const char *name, cJSON *root);

/* Replaces (or, with value NULL, removes) one field of an object file; of modules.json's
 * entry i. Both take value. */
void st_edit_field(const char *dir, const char *name, const char *key, cJSON *value);
void st_edit_module(const char *dir, int i, const char *key, cJSON *value);

/* st_model_load(dir) must fail, leave the model zeroed and name each of `needles`
 * (NULL-terminated) in its message. */
void st_edit_refused(const char *dir, const char *const *needles);

#endif
