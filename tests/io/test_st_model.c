/* Tests for src/io/st_model.c and st_modules.c: sentence-transformers folders written file by
 * file as sentence-transformers saves them (tests/support/st_folder.c) and read back field by
 * field; the spellings sentence-transformers accepts for pooling modes and activations; and every
 * folder the reader must refuse, with a message naming the file. */
#include "support.h"
#include "io/bert_model.h"
#include "io/half.h"
#include "io/st_model.h"
#include "st_edit.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[TEST_DIR_SIZE];

static void setup(void)
{
    test_dir_make(tmpdir, "st");
}

static void teardown(void)
{
    test_dir_remove(tmpdir);
}

TestSuite(st_model, .init = setup, .fini = teardown);

#define H ST_EDIT_H

static void path_of(char *out, const char *name)
{
    snprintf(out, 512, "%s/%s", tmpdir, name);
}

static void write_folder(const st_folder_spec *spec)
{
    st_edit_write_folder(tmpdir, spec);
}

/* Mean pooling, no Dense: the plainest folder. */
static st_folder_spec plain_spec(void)
{
    return (st_folder_spec){.pool_modes = ST_POOL_MEAN,
                            .word_embedding_dimension = H,
                            .include_prompt = 1,
                            .do_lower_case = -1};
}

static void load_ok(st_model *m)
{
    char err[512] = "";
    cr_assert_eq(st_model_load(tmpdir, m, err, sizeof err), 0, "%s", err);
}

#define REFUSED(...) st_edit_refused(tmpdir, (const char *const[]){__VA_ARGS__, NULL})

static cJSON *read_json(const char *name)
{
    return st_edit_read(tmpdir, name);
}

static void write_text(const char *name, const char *text)
{
    st_edit_write_text(tmpdir, name, text);
}

static void write_json(const char *name, cJSON *root)
{
    st_edit_write_json(tmpdir, name, root);
}

static void edit(const char *name, const char *key, cJSON *value)
{
    st_edit_field(tmpdir, name, key, value);
}

static void edit_module(int i, const char *key, cJSON *value)
{
    st_edit_module(tmpdir, i, key, value);
}

/* ---- round trips ---- */

static void assert_dense(const st_dense *got, const st_dense *want, int f16)
{
    cr_assert(got->in_features == want->in_features && got->out_features == want->out_features);
    cr_assert_eq(got->has_bias, want->has_bias);
    cr_assert_eq(got->activation, want->activation);
    size_t n = (size_t)want->in_features * (size_t)want->out_features;
    for (size_t i = 0; i < n; i++) {
        float w = f16 ? half_to_float(float_to_half(want->weight[i])) : want->weight[i];
        cr_assert_eq(got->weight[i], w, "weight[%zu]", i);
    }
    if (!want->has_bias) {
        cr_assert_null(got->bias);
        return;
    }
    for (int i = 0; i < want->out_features; i++) {
        float b = f16 ? half_to_float(float_to_half(want->bias[i])) : want->bias[i];
        cr_assert_eq(got->bias[i], b, "bias[%d]", i);
    }
}

/* cls + mean, Dense 2H -> 6 (Tanh, bias) -> 4 (Identity, no bias), Normalize, prompts. */
static void round_trip(int subfolder, int f16)
{
    st_dense dense[2] = {{2 * H, 6, 1, ST_ACT_TANH, NULL, NULL},
                         {6, 4, 0, ST_ACT_IDENTITY, NULL, NULL}};
    st_folder_dense_random(&dense[0], 11);
    st_folder_dense_random(&dense[1], 12);
    const st_prompt prompts[] = {{"query", "query: "}, {"document", "passage: "}};
    st_folder_spec spec = {.transformer_in_subfolder = subfolder,
                           .pool_modes = ST_POOL_CLS | ST_POOL_MEAN,
                           .word_embedding_dimension = H,
                           .include_prompt = 0,
                           .dense_count = 2,
                           .dense = dense,
                           .dense_f16 = f16,
                           .normalize = 1,
                           .max_seq_length = 12,
                           .do_lower_case = 1,
                           .prompt_count = 2,
                           .prompts = prompts,
                           .default_prompt_name = "query"};
    write_folder(&spec);
    st_model m;
    load_ok(&m);
    char tdir[512];
    st_folder_transformer_dir(tmpdir, &spec, tdir, sizeof tdir);
    cr_assert_eq(m.has_modules, 1);
    cr_assert_str_eq(m.transformer_dir, tdir);
    cr_assert_eq(m.has_pooling, 1);
    cr_assert_eq(m.pool_modes, ST_POOL_CLS | ST_POOL_MEAN);
    cr_assert_eq(m.include_prompt, 0);
    cr_assert_eq(m.word_embedding_dimension, H);
    cr_assert_eq(m.dense_count, 2);
    assert_dense(&m.dense[0], &dense[0], f16);
    assert_dense(&m.dense[1], &dense[1], f16);
    cr_assert_eq(m.normalize, 1);
    cr_assert_eq(m.max_seq_length, 12);
    cr_assert_eq(m.do_lower_case, 1);
    cr_assert_eq(m.prompt_count, 2);
    cr_assert(strcmp(m.prompts[0].name, "query") == 0 && strcmp(m.prompts[0].text, "query: ") == 0);
    cr_assert(strcmp(m.prompts[1].name, "document") == 0 &&
              strcmp(m.prompts[1].text, "passage: ") == 0);
    cr_assert_str_eq(m.default_prompt_name, "query");
    st_model_free(&m);
    st_folder_dense_free(&dense[0]);
    st_folder_dense_free(&dense[1]);
}

Test(st_model, round_trip_root_f32)
{
    round_trip(0, 0);
}

Test(st_model, round_trip_subfolder_f16)
{
    round_trip(1, 1);
}

Test(st_model, plain_folder_and_defaults)
{
    st_folder_spec spec = plain_spec();
    spec.prompt_count = 0;
    write_folder(&spec);
    char path[512];
    path_of(path, "config_sentence_transformers.json");
    cr_assert_eq(unlink(path), 0);
    st_model m;
    load_ok(&m);
    cr_assert_str_eq(m.transformer_dir, tmpdir);
    cr_assert(m.dense_count == 0 && !m.dense && !m.normalize);
    cr_assert_eq(m.max_seq_length, 0, "null max_seq_length reads as none");
    cr_assert_eq(m.do_lower_case, -1);
    cr_assert(m.prompt_count == 0 && !m.default_prompt_name);
    st_model_free(&m);
}

Test(st_model, no_modules_json)
{
    char path[512], err[512] = "";
    path_of(path, "config_sentence_transformers.json");
    write_text("config_sentence_transformers.json", "not read");
    st_model m;
    cr_assert_eq(st_model_load(tmpdir, &m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(m.has_modules, 0);
    cr_assert(!m.transformer_dir && !m.prompts);
}

/* ---- pooling ---- */

/* Pooling.forward's concatenation order, spelled out independently of the library's table. */
static const char *const forward_order[] = {
    "cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"};

Test(st_model, every_pooling_combination)
{
    for (unsigned modes = 1; modes <= ST_POOL_ALL; modes++) {
        st_folder_spec spec = plain_spec();
        spec.pool_modes = modes;
        write_folder(&spec);
        st_model m;
        load_ok(&m);
        cr_assert_eq(m.pool_modes, modes, "modes %u", modes);
        int pieces = 0;
        for (unsigned b = modes; b; b &= b - 1)
            pieces++;
        cr_assert_eq(st_pool_width(m.pool_modes, H), pieces * H);
        st_model_free(&m);
    }
}

Test(st_model, pooling_mode_names)
{
    static const char *const key_names[] = {"cls_token",           "max_tokens",
                                            "mean_tokens",         "mean_sqrt_len_tokens",
                                            "weightedmean_tokens", "lasttoken"};
    for (unsigned i = 0; i < 6; i++) {
        unsigned bit = 0;
        cr_assert_eq(st_pool_mode_parse(forward_order[i], &bit), 0, "%s", forward_order[i]);
        cr_assert_eq(bit, 1u << i, "%s", forward_order[i]);
        cr_assert_eq(st_pool_mode_parse(key_names[i], &bit), 0, "%s", key_names[i]);
        cr_assert_eq(bit, 1u << i, "%s", key_names[i]);
        cr_assert_str_eq(st_pool_mode_name(1u << i), forward_order[i]);
    }
    unsigned bit = 0;
    cr_assert_eq(st_pool_mode_parse("MEAN", &bit), 0, "Pooling lowercases the mode");
    cr_assert_eq(bit, (unsigned)ST_POOL_MEAN);
    cr_assert_eq(st_pool_mode_parse("median", &bit), -1);
    cr_assert_eq(st_pool_mode_parse("", &bit), -1);
    cr_assert_null(st_pool_mode_name(ST_POOL_CLS | ST_POOL_MAX));
}

/* Pooling's pooling_mode string replaces the pooling_mode_* flags. */
Test(st_model, pooling_mode_string_overrides_flags)
{
    for (unsigned i = 0; i < 6; i++) {
        st_folder_spec spec = plain_spec();
        spec.pool_modes = ST_POOL_ALL;
        write_folder(&spec);
        char upper[32];
        snprintf(upper, sizeof upper, "%s", forward_order[i]);
        upper[0] = (char)(upper[0] - 'a' + 'A');
        edit("1_Pooling/config.json", "pooling_mode", cJSON_CreateString(upper));
        st_model m;
        load_ok(&m);
        cr_assert_eq(m.pool_modes, 1u << i, "%s", upper);
        st_model_free(&m);
    }
}

/* Pooling.__init__'s defaults: mean_tokens on, the rest off, include_prompt on. */
Test(st_model, pooling_defaults)
{
    st_folder_spec spec = plain_spec();
    spec.include_prompt = 0;
    write_folder(&spec);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "word_embedding_dimension", H);
    write_json("1_Pooling/config.json", root);
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.pool_modes, (unsigned)ST_POOL_MEAN);
    cr_assert_eq(m.include_prompt, 1);
    st_model_free(&m);
}

/* ---- Dense activations ---- */

static void write_one_dense(int activation, int has_bias)
{
    st_dense d = {H, 5, has_bias, activation, NULL, NULL};
    st_folder_dense_random(&d, 5);
    st_folder_spec spec = plain_spec();
    spec.dense_count = 1;
    spec.dense = &d;
    write_folder(&spec);
    st_folder_dense_free(&d);
}

Test(st_model, activation_names)
{
    static const struct {
        const char *name;
        int act;
    } cases[] = {
        {"torch.nn.modules.activation.Tanh", ST_ACT_TANH},
        {"torch.nn.Tanh", ST_ACT_TANH},
        {"torch.nn.modules.Tanh", ST_ACT_TANH},
        {"torch.nn.modules.linear.Identity", ST_ACT_IDENTITY},
        {"torch.nn.Identity", ST_ACT_IDENTITY},
        {"torch.nn.modules.activation.ReLU", ST_ACT_RELU},
        {"torch.nn.modules.activation.GELU", ST_ACT_GELU},
        {"torch.nn.modules.activation.Sigmoid", ST_ACT_SIGMOID},
        {"torch.nn.Sigmoid", ST_ACT_SIGMOID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_one_dense(ST_ACT_TANH, 1);
        edit("2_Dense/config.json", "activation_function", cJSON_CreateString(cases[i].name));
        st_model m;
        load_ok(&m);
        cr_assert_eq(m.dense[0].activation, cases[i].act, "%s", cases[i].name);
        st_model_free(&m);
    }
    cr_assert_str_eq(st_activation_name(ST_ACT_TANH), "torch.nn.modules.activation.Tanh");
    cr_assert_str_eq(st_activation_name(ST_ACT_IDENTITY), "torch.nn.modules.linear.Identity");
    cr_assert_null(st_activation_name(99));
}

Test(st_model, unknown_activation)
{
    write_one_dense(ST_ACT_TANH, 1);
    edit("2_Dense/config.json", "activation_function",
         cJSON_CreateString("torch.nn.modules.activation.SiLU"));
    REFUSED("2_Dense/config.json", "SiLU");
}

/* ---- prompts ---- */

Test(st_model, null_prompt_and_default)
{
    st_folder_spec spec = plain_spec();
    write_folder(&spec);
    cJSON *prompts = cJSON_CreateObject();
    cJSON_AddNullToObject(prompts, "query");
    edit("config_sentence_transformers.json", "prompts", prompts);
    edit("config_sentence_transformers.json", "default_prompt_name", cJSON_CreateString("query"));
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.prompt_count, 1);
    cr_assert_str_eq(m.prompts[0].text, "");
    cr_assert_str_eq(m.default_prompt_name, "query");
    st_model_free(&m);
}

/* ---- refused folders ---- */

Test(st_model, default_prompt_not_among_prompts)
{
    const st_prompt prompts[] = {{"query", "q: "}};
    st_folder_spec spec = plain_spec();
    spec.prompt_count = 1;
    spec.prompts = prompts;
    spec.default_prompt_name = "document";
    write_folder(&spec);
    REFUSED("config_sentence_transformers.json", "default_prompt_name", "document");
}

Test(st_model, missing_module_folder)
{
    write_one_dense(ST_ACT_TANH, 1);
    char path[512];
    path_of(path, "2_Dense");
    test_dir_remove(path);
    REFUSED("2_Dense", "missing");
}

Test(st_model, normalize_needs_no_folder)
{
    st_folder_spec spec = plain_spec();
    spec.normalize = 1;
    write_folder(&spec);
    char path[512];
    path_of(path, "2_Normalize");
    cr_assert_eq(rmdir(path), 0);
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.normalize, 1);
    st_model_free(&m);
}

Test(st_model, unknown_module_type)
{
    st_folder_spec spec = plain_spec();
    spec.normalize = 1;
    write_folder(&spec);
    edit_module(2, "type", cJSON_CreateString("sentence_transformers.models.WordWeights"));
    REFUSED("modules.json", "WordWeights", "cannot run");
}

Test(st_model, class_path_type_accepted)
{
    st_folder_spec spec = plain_spec();
    write_folder(&spec);
    edit_module(1, "type", cJSON_CreateString("sentence_transformers.models.Pooling.Pooling"));
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.has_pooling, 1);
    st_model_free(&m);
}

Test(st_model, orders_vkbert_cannot_run)
{
    st_dense d = {H, H, 1, ST_ACT_TANH, NULL, NULL};
    st_folder_dense_random(&d, 9);
    st_folder_spec spec = plain_spec();
    spec.dense_count = 1;
    spec.dense = &d;
    spec.normalize = 1;
    write_folder(&spec);
    st_folder_dense_free(&d);
    cJSON *root = read_json("modules.json");
    /* Dense (2) and Normalize (3) swapped: Normalize, then Dense. */
    cJSON *dense = cJSON_DetachItemFromArray(root, 2);
    cJSON_AddItemToArray(root, dense);
    write_json("modules.json", root);
    REFUSED("modules.json", "module 3 is Dense", "in that order");
    root = read_json("modules.json");
    cJSON_DeleteItemFromArray(root, 1); /* no Pooling */
    write_json("modules.json", root);
    REFUSED("modules.json", "module 1 is Normalize");
    root = read_json("modules.json");
    cJSON_DeleteItemFromArray(root, 0); /* no Transformer */
    write_json("modules.json", root);
    REFUSED("modules.json", "module 0 is Normalize");
}

Test(st_model, no_pooling_module)
{
    st_folder_spec spec = plain_spec();
    write_folder(&spec);
    cJSON *root = read_json("modules.json");
    cJSON_DeleteItemFromArray(root, 1);
    write_json("modules.json", root);
    REFUSED("modules.json", "no Pooling module");
}

Test(st_model, unknown_pooling_mode)
{
    st_folder_spec spec = plain_spec();
    write_folder(&spec);
    edit("1_Pooling/config.json", "pooling_mode", cJSON_CreateString("median"));
    REFUSED("1_Pooling/config.json", "pooling_mode", "median");
}

/* Pooling.load_config (6.2): no pooling_mode_* flag true means mean, as none given does. */
Test(st_model, no_pooling_flag_means_mean)
{
    st_folder_spec spec = plain_spec();
    write_folder(&spec);
    edit("1_Pooling/config.json", "pooling_mode_mean_tokens", cJSON_CreateFalse());
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.pool_modes, (unsigned)ST_POOL_MEAN);
    st_model_free(&m);
}

/* 6.2 reads a missing flag as false, where v5's __init__ had mean_tokens on by default. */
Test(st_model, flags_given_are_the_modes)
{
    st_folder_spec spec = plain_spec();
    write_folder(&spec);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "word_embedding_dimension", H);
    cJSON_AddTrueToObject(root, "pooling_mode_cls_token");
    write_json("1_Pooling/config.json", root);
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.pool_modes, (unsigned)ST_POOL_CLS);
    st_model_free(&m);
}

Test(st_model, dense_shape_not_matching_weights)
{
    write_one_dense(ST_ACT_TANH, 1);
    edit("2_Dense/config.json", "in_features", cJSON_CreateNumber(H + 1));
    REFUSED("2_Dense/model.safetensors", "linear.weight", "[5, 9]");
    write_one_dense(ST_ACT_TANH, 0);
    edit("2_Dense/config.json", "bias", cJSON_CreateTrue());
    REFUSED("2_Dense/model.safetensors", "missing tensor 'linear.bias'");
    write_one_dense(ST_ACT_TANH, 1);
    edit("2_Dense/config.json", "bias", cJSON_CreateFalse());
    REFUSED("2_Dense/model.safetensors", "linear.bias", "bias: false");
}

Test(st_model, dense_on_token_embeddings)
{
    write_one_dense(ST_ACT_TANH, 1);
    edit("2_Dense/config.json", "module_input_name", cJSON_CreateString("token_embeddings"));
    REFUSED("2_Dense/config.json", "module_input_name", "token_embeddings");
}

Test(st_model, pytorch_model_bin_only)
{
    write_one_dense(ST_ACT_TANH, 1);
    char from[512], to[512];
    path_of(from, "2_Dense/model.safetensors");
    path_of(to, "2_Dense/pytorch_model.bin");
    cr_assert_eq(rename(from, to), 0);
    REFUSED("2_Dense/pytorch_model.bin", "safe_serialization=True");
}

Test(st_model, malformed_json)
{
    static const char *const files[] = {"modules.json", "1_Pooling/config.json",
                                        "sentence_bert_config.json",
                                        "config_sentence_transformers.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        st_folder_spec spec = plain_spec();
        write_folder(&spec);
        write_text(files[i], "{\"idx\": 0,");
        REFUSED(files[i], "not valid JSON");
    }
}

Test(st_model, bad_field_types)
{
    st_folder_spec spec = plain_spec();
    write_folder(&spec);
    edit("sentence_bert_config.json", "max_seq_length", cJSON_CreateNumber(-3));
    REFUSED("sentence_bert_config.json", "max_seq_length");
    write_folder(&spec);
    edit("1_Pooling/config.json", "include_prompt", cJSON_CreateString("yes"));
    REFUSED("1_Pooling/config.json", "include_prompt");
    write_folder(&spec);
    edit_module(1, "path", cJSON_CreateNumber(1));
    REFUSED("modules.json", "path");
}
