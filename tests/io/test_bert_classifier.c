/* Tests for the sequence-classification part of src/io/bert_model.c and bert_config.c: a
 * BertForSequenceClassification folder with 1 and 3 labels written and read back, the rules
 * transformers' PretrainedConfig applies to id2label, num_labels and problem_type, and the
 * heads and folders the loader must ignore or refuse. */
#include "support.h"
#include "io/bert_model.h"
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[TEST_DIR_SIZE];

static void setup(void)
{
    test_dir_make(tmpdir, "cls");
}

static void teardown(void)
{
    test_dir_remove(tmpdir);
}

TestSuite(bert_classifier, .init = setup, .fini = teardown);

static void path_of(char *out, const char *name)
{
    snprintf(out, 512, "%s/%s", tmpdir, name);
}

static bert_config small_config(int num_labels, bert_problem problem)
{
    bert_config c = tiny_bert_config(12, 1, 3, 20, 10, 17);
    c.num_labels = num_labels;
    c.problem_type = problem;
    return c;
}

/* A random classifier saved under "bert." as HF saves BertForSequenceClassification, then
 * config.json rewritten with these label names (NULL: the defaults). */
static void save_classifier(const bert_config *c, bert_weights *w, const char *const *labels)
{
    char err[512] = "", path[512];
    tiny_bert_write(tmpdir, &(tiny_bert){.config = *c, .seed = 21, .prefix = "bert."}, w);
    cr_assert_eq(w->has_classifier, 1);
    path_of(path, "config.json");
    bert_config named = *c;
    strcpy(named.architecture, "BertForSequenceClassification");
    cr_assert_eq(bert_config_save(path, &named, labels, err, sizeof err), 0, "%s", err);
}

static void load_ok(bert_model *m)
{
    char err[512] = "";
    cr_assert_eq(bert_model_load(tmpdir, m, err, sizeof err), 0, "%s", err);
}

static void assert_refused(const char *const *needles)
{
    char err[512] = "";
    bert_model m;
    cr_assert_eq(bert_model_load(tmpdir, &m, err, sizeof err), -1);
    cr_assert(!m.weights.layers && !m.labels, "a failed load leaves the model zeroed");
    for (int k = 0; needles[k]; k++)
        cr_assert(strstr(err, needles[k]), "message \"%s\" lacks \"%s\"", err, needles[k]);
}

#define REFUSED(...) assert_refused((const char *const[]){__VA_ARGS__, NULL})

/* Replaces (or, with value NULL, removes) one field of config.json. */
static void edit_config(const char *key, cJSON *value)
{
    char path[512], text[16384];
    path_of(path, "config.json");
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *root = cJSON_Parse(text);
    cr_assert_not_null(root);
    cJSON_DeleteItemFromObjectCaseSensitive(root, key);
    if (value) cJSON_AddItemToObject(root, key, value);
    char *out = cJSON_Print(root);
    f = fopen(path, "wb");
    fputs(out, f);
    fclose(f);
    free(out);
    cJSON_Delete(root);
}

static void assert_floats(const float *got, const float *want, size_t n, const char *what)
{
    cr_assert_not_null(got, "%s is NULL", what);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s[%zu]", what, i);
}

static void round_trip(int num_labels, bert_problem problem, const char *const *labels)
{
    bert_config c = small_config(num_labels, problem);
    bert_weights w;
    save_classifier(&c, &w, labels);
    bert_model m;
    load_ok(&m);
    cr_assert_str_eq(m.config.architecture, "BertForSequenceClassification");
    cr_assert_eq(m.config.num_labels, num_labels);
    cr_assert_eq(m.config.problem_type, problem);
    cr_assert(m.weights.has_classifier && m.weights.has_pooler);
    size_t h = (size_t)c.hidden_size, n = (size_t)num_labels;
    assert_floats(m.weights.classifier_w, w.classifier_w, n * h, "classifier_w");
    assert_floats(m.weights.classifier_b, w.classifier_b, n, "classifier_b");
    assert_floats(m.weights.pooler_w, w.pooler_w, h * h, "pooler_w");
    for (int i = 0; i < num_labels; i++)
        cr_assert_str_eq(m.labels[i], labels[i]);
    bert_model_free(&m);
    bert_weights_free(&w);
}

Test(bert_classifier, one_label_regression)
{
    round_trip(1, BERT_PROBLEM_REGRESSION, (const char *const[]){"score"});
}

Test(bert_classifier, three_labels)
{
    static const char *const labels[] = {"negative", "neutral", "positive"};
    round_trip(3, BERT_PROBLEM_SINGLE_LABEL, labels);
    round_trip(3, BERT_PROBLEM_MULTI_LABEL, labels);
    round_trip(3, BERT_PROBLEM_NONE, labels);
}

/* HF's names: the classifier at the top level, the encoder and pooler under "bert.". */
Test(bert_classifier, tensor_names)
{
    bert_config c = small_config(3, BERT_PROBLEM_NONE);
    bert_weights w;
    save_classifier(&c, &w, NULL);
    char path[512], err[512] = "";
    path_of(path, "model.safetensors");
    st_file f;
    cr_assert_eq(st_load(path, &f, err, sizeof err), 0, "%s", err);
    const st_tensor *t = st_find(&f, "classifier.weight");
    cr_assert(t && t->ndim == 2 && t->shape[0] == 3 && t->shape[1] == 12);
    t = st_find(&f, "classifier.bias");
    cr_assert(t && t->ndim == 1 && t->shape[0] == 3);
    cr_assert_not_null(st_find(&f, "bert.pooler.dense.weight"));
    cr_assert_null(st_find(&f, "bert.classifier.weight"));
    st_free(&f);
    bert_weights_free(&w);
}

/* PretrainedConfig: no id2label gives num_labels (else 2) labels named LABEL_i; an id2label
 * decides num_labels whatever "num_labels" says. */
Test(bert_classifier, label_defaults)
{
    bert_config c = small_config(3, BERT_PROBLEM_NONE);
    bert_weights w;
    save_classifier(&c, &w, NULL);
    edit_config("id2label", NULL);
    edit_config("label2id", NULL);
    edit_config("num_labels", cJSON_CreateNumber(3));
    bert_model m;
    load_ok(&m);
    cr_assert_eq(m.config.num_labels, 3);
    cr_assert(strcmp(m.labels[0], "LABEL_0") == 0 && strcmp(m.labels[2], "LABEL_2") == 0);
    bert_model_free(&m);
    edit_config("num_labels", NULL);
    REFUSED("model.safetensors", "classifier.weight", "[3, 12]", "[2, 12]");
    static const char *const labels[] = {"a", "b", "c"};
    bert_weights_free(&w);
    save_classifier(&c, &w, labels);
    edit_config("num_labels", cJSON_CreateNumber(5));
    load_ok(&m);
    cr_assert_eq(m.config.num_labels, 3);
    cr_assert_str_eq(m.labels[1], "b");
    bert_model_free(&m);
    bert_weights_free(&w);
}

Test(bert_classifier, bert_model_config_defaults)
{
    bert_config c = small_config(0, BERT_PROBLEM_NONE);
    bert_weights w;
    tiny_bert_write(tmpdir, &(tiny_bert){.config = c, .seed = 1}, &w);
    cr_assert_eq(w.has_classifier, 0);
    bert_model m;
    load_ok(&m);
    cr_assert_str_eq(m.config.architecture, "BertModel");
    cr_assert_eq(m.config.num_labels, 2);
    cr_assert_eq(m.config.problem_type, BERT_PROBLEM_NONE);
    cr_assert(!m.weights.has_classifier && !m.labels && !m.weights.classifier_w);
    bert_model_free(&m);
    bert_weights_free(&w);
}

/* The same tensors under another architecture are another head: AutoModel leaves it out. */
Test(bert_classifier, other_heads_ignored)
{
    static const char *const archs[] = {"BertModel", "BertForTokenClassification"};
    for (int i = 0; i < 2; i++) {
        bert_config c = small_config(3, BERT_PROBLEM_NONE);
        bert_weights w;
        save_classifier(&c, &w, NULL);
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateString(archs[i]));
        edit_config("architectures", a);
        bert_model m;
        load_ok(&m);
        cr_assert(!m.weights.has_classifier && !m.labels, "%s", archs[i]);
        cr_assert_str_eq(m.config.architecture, archs[i]);
        bert_model_free(&m);
        bert_weights_free(&w);
    }
}

/* Rewrites model.safetensors without one tensor. */
static void drop_tensor(const char *name)
{
    char path[512], err[512] = "";
    path_of(path, "model.safetensors");
    st_file f;
    cr_assert_eq(st_load(path, &f, err, sizeof err), 0, "%s", err);
    int n = 0;
    const char *names[64];
    st_dtype dtypes[64];
    int ndims[64];
    const int64_t *shapes[64];
    float *data[64];
    for (int i = 0; i < f.count; i++) {
        const st_tensor *t = &f.tensors[i];
        if (strcmp(t->name, name) == 0) continue;
        names[n] = t->name, dtypes[n] = ST_F32, ndims[n] = t->ndim, shapes[n] = t->shape;
        data[n] = malloc(t->count * sizeof(float));
        cr_assert_eq(st_to_f32(t, data[n]), 0);
        n++;
    }
    cr_assert_eq(
        st_save(path, n, names, dtypes, ndims, shapes, (const float *const *)data, err, sizeof err),
        0, "%s", err);
    for (int i = 0; i < n; i++)
        free(data[i]);
    st_free(&f);
}

Test(bert_classifier, missing_pooler_or_bias)
{
    bert_config c = small_config(3, BERT_PROBLEM_NONE);
    bert_weights w;
    save_classifier(&c, &w, NULL);
    drop_tensor("bert.pooler.dense.weight");
    REFUSED("model.safetensors", "missing tensor 'bert.pooler.dense.weight'");
    bert_weights_free(&w);
    save_classifier(&c, &w, NULL);
    drop_tensor("classifier.bias");
    REFUSED("model.safetensors", "missing tensor 'classifier.bias'");
    bert_weights_free(&w);
}

Test(bert_classifier, bad_label_fields)
{
    bert_config c = small_config(3, BERT_PROBLEM_NONE);
    bert_weights w;
    save_classifier(&c, &w, NULL);
    edit_config("problem_type", cJSON_CreateString("ranking"));
    REFUSED("config.json", "problem_type");
    edit_config("problem_type", cJSON_CreateNull());
    cJSON *ids = cJSON_CreateObject();
    cJSON_AddStringToObject(ids, "1", "a");
    cJSON_AddStringToObject(ids, "2", "b");
    edit_config("id2label", ids);
    REFUSED("config.json", "id2label", "\"2\"");
    ids = cJSON_CreateObject();
    cJSON_AddNumberToObject(ids, "0", 1);
    edit_config("id2label", ids);
    REFUSED("config.json", "id2label", "not a string");
    edit_config("id2label", cJSON_CreateString("a"));
    REFUSED("config.json", "id2label", "not an object");
    edit_config("id2label", NULL);
    edit_config("label2id", cJSON_CreateArray());
    REFUSED("config.json", "label2id", "not an object");
    edit_config("label2id", NULL);
    edit_config("num_labels", cJSON_CreateNumber(0));
    REFUSED("config.json", "num_labels");
    bert_weights_free(&w);
}

Test(bert_classifier, pytorch_model_bin_only)
{
    bert_config c = small_config(3, BERT_PROBLEM_NONE);
    bert_weights w;
    save_classifier(&c, &w, NULL);
    char from[512], to[512];
    path_of(from, "model.safetensors");
    path_of(to, "pytorch_model.bin");
    cr_assert_eq(rename(from, to), 0);
    REFUSED("pytorch_model.bin", "safe_serialization=True");
    bert_weights_free(&w);
}
