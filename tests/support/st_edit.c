/* See st_edit.h. */
#include "st_edit.h"

#include <criterion/criterion.h>

#include "io/bert_model.h"
#include "io/st_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st_edit_write_folder(const char *dir, const st_folder_spec *spec)
{
    char tdir[512], err[512] = "";
    st_folder_transformer_dir(dir, spec, tdir, sizeof tdir);
    tiny_bert spec_bert = {
        .config = tiny_bert_config(ST_EDIT_H, 1, 2, 12, 16, 20), .seed = 3, .prefix = ""};
    tiny_bert_write(tdir, &spec_bert, NULL);
    cr_assert_eq(st_folder_write(dir, spec, err, sizeof err), 0, "%s", err);
}

cJSON *st_edit_read(const char *dir, const char *name)
{
    char path[512], text[16384];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *root = cJSON_Parse(text);
    cr_assert_not_null(root, "%s", path);
    return root;
}

void st_edit_write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

void st_edit_write_json(const char *dir, const char *name, cJSON *root)
{
    char *text = cJSON_Print(root);
    st_edit_write_text(dir, name, text);
    free(text);
    cJSON_Delete(root);
}

void st_edit_field(const char *dir, const char *name, const char *key, cJSON *value)
{
    cJSON *root = st_edit_read(dir, name);
    cJSON_DeleteItemFromObjectCaseSensitive(root, key);
    if (value) cJSON_AddItemToObject(root, key, value);
    st_edit_write_json(dir, name, root);
}

void st_edit_module(const char *dir, int i, const char *key, cJSON *value)
{
    cJSON *root = st_edit_read(dir, "modules.json");
    cJSON *entry = cJSON_GetArrayItem(root, i);
    cJSON_ReplaceItemInObjectCaseSensitive(entry, key, value);
    st_edit_write_json(dir, "modules.json", root);
}

void st_edit_refused(const char *dir, const char *const *needles)
{
    char err[512] = "";
    st_model m;
    cr_assert_eq(st_model_load(dir, &m, err, sizeof err), -1);
    cr_assert(!m.has_modules && !m.transformer_dir && !m.dense && !m.prompts,
              "a failed load leaves the model zeroed");
    for (int k = 0; needles[k]; k++)
        cr_assert(strstr(err, needles[k]), "message \"%s\" lacks \"%s\"", err, needles[k]);
}
