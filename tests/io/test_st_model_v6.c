/* Tests for src/io/st_model.c and st_modules.c on the folders sentence-transformers 6.2 saves
 * (tests/support/st_folder.c with v6 set) and on its rules for older ones: the module paths it
 * imports, sentence_bert_config.json's task and modality, Pooling's pooling_mode string or
 * list and embedding_dimension, Dense's and Normalize's new keys, and a CrossEncoder's
 * folder with its activation_fn (or, before v6, config.json's). */
#include "support.h"
#include "io/st_model.h"
#include "st_edit.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[TEST_DIR_SIZE];

static void setup(void)
{
    test_dir_make(tmpdir, "st6");
}

static void teardown(void)
{
    test_dir_remove(tmpdir);
}

TestSuite(st_model_v6, .init = setup, .fini = teardown);

#define H ST_EDIT_H
#define REFUSED(...) st_edit_refused(tmpdir, (const char *const[]){__VA_ARGS__, NULL})

static st_folder_spec v6_spec(unsigned modes)
{
    return (st_folder_spec){.v6 = 1,
                            .pool_modes = modes,
                            .word_embedding_dimension = H,
                            .include_prompt = 1,
                            .do_lower_case = -1};
}

static st_folder_spec cross_encoder_spec(const char *activation_fn)
{
    return (st_folder_spec){
        .v6 = 1, .cross_encoder = 1, .activation_fn = activation_fn, .do_lower_case = -1};
}

static void load_ok(st_model *m)
{
    char err[512] = "";
    cr_assert_eq(st_model_load(tmpdir, m, err, sizeof err), 0, "%s", err);
}

/* ---- SentenceTransformer.save ---- */

/* cls + max (a list), Dense 2H -> 5 (GELU), Normalize with its config.json, a prompt; the
 * length only in tokenizer_config.json. */
Test(st_model_v6, round_trip)
{
    st_dense d = {2 * H, 5, 1, ST_ACT_GELU, NULL, NULL};
    st_folder_dense_random(&d, 4);
    const st_prompt prompts[] = {{"query", "query: "}};
    st_folder_spec spec = v6_spec(ST_POOL_CLS | ST_POOL_MAX);
    spec.include_prompt = 0, spec.dense_count = 1, spec.dense = &d, spec.normalize = 1;
    spec.max_seq_length = 12, spec.prompt_count = 1, spec.prompts = prompts;
    spec.default_prompt_name = "query";
    st_edit_write_folder(tmpdir, &spec);
    st_folder_dense_free(&d);
    cJSON *pooling = st_edit_read(tmpdir, "1_Pooling/config.json");
    cr_assert(cJSON_IsArray(cJSON_GetObjectItem(pooling, "pooling_mode")));
    cJSON_Delete(pooling);
    st_model m;
    load_ok(&m);
    cr_assert(m.has_modules && m.has_pooling && !m.cross_encoder);
    cr_assert_eq(m.pool_modes, ST_POOL_CLS | ST_POOL_MAX);
    cr_assert_eq(m.include_prompt, 0);
    cr_assert_eq(m.word_embedding_dimension, H);
    cr_assert(m.dense_count == 1 && m.dense[0].activation == ST_ACT_GELU);
    cr_assert_eq(m.normalize, 1);
    cr_assert_eq(m.max_seq_length, 0, "v6 keeps the length in tokenizer_config.json");
    cr_assert_eq(m.do_lower_case, -1);
    cr_assert_str_eq(m.default_prompt_name, "query");
    cr_assert_eq(m.score_activation, ST_SCORES_NONE);
    st_model_free(&m);
}

/* One mode as a string, several as a list in Pooling's order. */
Test(st_model_v6, every_pooling_combination)
{
    for (unsigned modes = 1; modes <= ST_POOL_ALL; modes++) {
        st_folder_spec spec = v6_spec(modes);
        st_edit_write_folder(tmpdir, &spec);
        st_model m;
        load_ok(&m);
        cr_assert_eq(m.pool_modes, modes, "modes %u", modes);
        st_model_free(&m);
    }
}

static cJSON *mode_list(const char *a, const char *b)
{
    cJSON *list = cJSON_CreateArray();
    if (a) cJSON_AddItemToArray(list, cJSON_CreateString(a));
    if (b) cJSON_AddItemToArray(list, cJSON_CreateString(b));
    return list;
}

/* Pooling.forward concatenates in the list's order; vkbert in its own. */
Test(st_model_v6, pooling_lists_vkbert_cannot_run)
{
    st_folder_spec spec = v6_spec(ST_POOL_MEAN);
    const char *cfg = "1_Pooling/config.json";
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, cfg, "pooling_mode", mode_list("mean", "cls"));
    REFUSED(cfg, "\"cls\" after", "cls, max, mean");
    st_edit_field(tmpdir, cfg, "pooling_mode", mode_list("max", "max"));
    REFUSED(cfg, "\"max\" after");
    st_edit_field(tmpdir, cfg, "pooling_mode", mode_list(NULL, NULL));
    REFUSED(cfg, "empty list");
    st_edit_field(tmpdir, cfg, "pooling_mode", mode_list("cls", "median"));
    REFUSED(cfg, "median");
    st_edit_field(tmpdir, cfg, "pooling_mode", cJSON_CreateNumber(3));
    REFUSED(cfg, "pooling_mode");
}

/* pooling_mode wins over the old flags; embedding_dimension over word_embedding_dimension. */
Test(st_model_v6, new_pooling_keys_win)
{
    st_folder_spec spec = v6_spec(ST_POOL_LASTTOKEN);
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, "1_Pooling/config.json", "pooling_mode_cls_token", cJSON_CreateTrue());
    st_edit_field(tmpdir, "1_Pooling/config.json", "word_embedding_dimension",
                  cJSON_CreateNumber(99));
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.pool_modes, (unsigned)ST_POOL_LASTTOKEN);
    cr_assert_eq(m.word_embedding_dimension, H);
    st_model_free(&m);
    st_edit_field(tmpdir, "1_Pooling/config.json", "embedding_dimension", NULL);
    load_ok(&m);
    cr_assert_eq(m.word_embedding_dimension, 99);
    st_model_free(&m);
    st_edit_field(tmpdir, "1_Pooling/config.json", "word_embedding_dimension", NULL);
    REFUSED("1_Pooling/config.json", "word_embedding_dimension");
}

/* ---- module paths ---- */

/* What util.import_from_string resolves to each class in 6.2 (aliases included), for module
 * 0 (Transformer) .. 3 (Normalize) of a v6 folder with a Dense. */
Test(st_model_v6, module_paths)
{
    static const struct {
        int module;
        const char *type;
    } ok[] = {
        {0, "sentence_transformers.models.Transformer"},
        {0, "sentence_transformers.models.Transformer.Transformer"},
        {0, "sentence_transformers.base.modules.Transformer"},
        {0, "sentence_transformers.sentence_transformer.modules.Transformer"},
        {0, "sentence_transformers.cross_encoder.modules.Transformer"},
        {1, "sentence_transformers.models.Pooling"},
        {1, "sentence_transformers.sentence_transformer.modules.Pooling"},
        {2, "sentence_transformers.models.Dense"},
        {2, "sentence_transformers.base.modules.Dense"},
        {2, "sentence_transformers.sparse_encoder.modules.Dense"},
        {3, "sentence_transformers.models.Normalize"},
        {3, "sentence_transformers.sentence_transformer.modules.normalize.Normalize"},
        {3, "sentence_transformers.sentence_transformer.modules.Normalize"},
    };
    static const struct {
        int module;
        const char *type;
    } refused[] = {
        {1, "sentence_transformers.base.modules.Pooling"},
        {1, "sentence_transformers.cross_encoder.modules.Pooling"},
        {1, "sentence_transformers.models.Dense.Pooling"},
        {3, "sentence_transformers.cross_encoder.modules.Normalize"},
        {0, "sentence_transformers.base.modules.transformer.Transformer.extra"},
        {0, "Transformer"},
        {0, "my_package.Transformer"},
    };
    st_dense d = {H, 3, 1, ST_ACT_TANH, NULL, NULL};
    st_folder_dense_random(&d, 6);
    st_folder_spec spec = v6_spec(ST_POOL_MEAN);
    spec.dense_count = 1, spec.dense = &d, spec.normalize = 1;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        st_edit_write_folder(tmpdir, &spec);
        st_edit_module(tmpdir, ok[i].module, "type", cJSON_CreateString(ok[i].type));
        st_model m;
        load_ok(&m);
        cr_assert(m.has_pooling && m.dense_count == 1 && m.normalize, "%s", ok[i].type);
        st_model_free(&m);
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        st_edit_write_folder(tmpdir, &spec);
        st_edit_module(tmpdir, refused[i].module, "type", cJSON_CreateString(refused[i].type));
        REFUSED("modules.json", "cannot run", refused[i].type);
    }
    st_folder_dense_free(&d);
}

/* ---- sentence_bert_config.json ---- */

Test(st_model_v6, transformer_tasks_and_modalities_vkbert_cannot_run)
{
    static const char *const cfg = "sentence_bert_config.json";
    st_folder_spec spec = v6_spec(ST_POOL_MEAN);
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, cfg, "transformer_task", cJSON_CreateString("fill-mask"));
    REFUSED(cfg, "transformer_task", "fill-mask", "feature-extraction");
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, cfg, "module_output_name", cJSON_CreateString("sentence_embedding"));
    REFUSED(cfg, "modality_config", "last_hidden_state", "token_embeddings");
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, cfg, "module_output_name", NULL);
    REFUSED(cfg, "module_output_name");
    st_edit_write_folder(tmpdir, &spec);
    cJSON *mc = cJSON_CreateObject();
    cJSON *text = cJSON_AddObjectToObject(mc, "text");
    cJSON_AddStringToObject(text, "method", "forward");
    cJSON_AddStringToObject(text, "method_output_name", "pooler_output");
    st_edit_field(tmpdir, cfg, "modality_config", mc);
    REFUSED(cfg, "modality_config");
    st_edit_write_folder(tmpdir, &spec);
    cJSON *kwargs = cJSON_CreateObject();
    cJSON_AddObjectToObject(kwargs, "text");
    st_edit_field(tmpdir, cfg, "processing_kwargs", kwargs);
    REFUSED(cfg, "processing_kwargs");
}

/* Without modality_config (folders of v5 and before), the task's defaults hold: module_output_name
 * is not read. An empty processing_kwargs is no change. */
Test(st_model_v6, task_defaults)
{
    static const char *const cfg = "sentence_bert_config.json";
    st_folder_spec spec = v6_spec(ST_POOL_MEAN);
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, cfg, "modality_config", NULL);
    st_edit_field(tmpdir, cfg, "module_output_name", cJSON_CreateString("anything"));
    st_edit_field(tmpdir, cfg, "processing_kwargs", cJSON_CreateObject());
    st_model m;
    load_ok(&m);
    cr_assert(m.has_pooling && !m.cross_encoder);
    st_model_free(&m);
}

/* ---- Dense and Normalize ---- */

static void write_dense_folder(int normalize)
{
    st_dense d = {H, 3, 1, ST_ACT_RELU, NULL, NULL};
    st_folder_dense_random(&d, 8);
    st_folder_spec spec = v6_spec(ST_POOL_MEAN);
    spec.dense_count = 1, spec.dense = &d, spec.normalize = normalize;
    st_edit_write_folder(tmpdir, &spec);
    st_folder_dense_free(&d);
}

/* Dense.load (6.2): no activation_function is __init__'s Tanh; use_residual false is v5's
 * Dense; true is not run. */
Test(st_model_v6, dense_keys)
{
    static const char *const cfg = "2_Dense/config.json";
    write_dense_folder(0);
    st_edit_field(tmpdir, cfg, "activation_function", NULL);
    st_edit_field(tmpdir, cfg, "use_residual", cJSON_CreateFalse());
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.dense[0].activation, ST_ACT_TANH);
    st_model_free(&m);
    st_edit_field(tmpdir, cfg, "use_residual", cJSON_CreateTrue());
    REFUSED(cfg, "use_residual");
    write_dense_folder(0);
    st_edit_field(tmpdir, cfg, "activation_function",
                  cJSON_CreateString("torch.nn.modules.activation.Softmax"));
    REFUSED(cfg, "Softmax", "Identity, Tanh");
    st_edit_field(tmpdir, cfg, "activation_function", cJSON_CreateString("my_code.Swish"));
    REFUSED(cfg, "my_code.Swish");
}

Test(st_model_v6, normalize_config)
{
    write_dense_folder(1);
    st_edit_field(tmpdir, "3_Normalize/config.json", "module_input_name",
                  cJSON_CreateString("token_embeddings"));
    REFUSED("3_Normalize/config.json", "module_input_name", "token_embeddings");
    st_edit_write_text(tmpdir, "3_Normalize/config.json", "[");
    REFUSED("3_Normalize/config.json", "not valid JSON");
}

/* ---- CrossEncoder.save ---- */

Test(st_model_v6, cross_encoder_activations)
{
    static const struct {
        const char *name;
        int act;
    } cases[] = {
        {"torch.nn.modules.activation.Sigmoid", ST_ACT_SIGMOID},
        {"torch.nn.modules.linear.Identity", ST_ACT_IDENTITY},
        {"torch.nn.modules.activation.Tanh", ST_ACT_TANH},
        {"torch.nn.Softmax", ST_ACT_SOFTMAX},
        {"torch.nn.modules.activation.ReLU", ST_ACT_RELU},
        {"torch.nn.GELU", ST_ACT_GELU},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st_folder_spec spec = cross_encoder_spec(cases[i].name);
        st_edit_write_folder(tmpdir, &spec);
        st_model m;
        load_ok(&m);
        cr_assert(m.has_modules && m.cross_encoder && !m.has_pooling, "%s", cases[i].name);
        cr_assert_str_eq(m.transformer_dir, tmpdir);
        cr_assert_eq(m.score_activation, cases[i].act, "%s", cases[i].name);
        st_model_free(&m);
    }
}

/* No activation_fn: CrossEncoder's default (the caller picks it by the labels); not a
 * CrossEncoder's model_type: none read. */
Test(st_model_v6, cross_encoder_default_activation)
{
    st_folder_spec spec = cross_encoder_spec(NULL);
    st_edit_write_folder(tmpdir, &spec);
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.score_activation, ST_SCORES_DEFAULT);
    st_model_free(&m);
    st_edit_field(tmpdir, "config_sentence_transformers.json", "activation_fn",
                  cJSON_CreateString("torch.nn.modules.activation.Tanh"));
    st_edit_field(tmpdir, "config_sentence_transformers.json", "model_type",
                  cJSON_CreateString("SentenceTransformer"));
    load_ok(&m);
    cr_assert_eq(m.score_activation, ST_SCORES_NONE);
    st_model_free(&m);
}

Test(st_model_v6, cross_encoder_refusals)
{
    static const char *const root = "config_sentence_transformers.json";
    st_folder_spec spec = cross_encoder_spec("torch.nn.modules.activation.Hardtanh");
    st_edit_write_folder(tmpdir, &spec);
    REFUSED(root, "activation_fn", "Hardtanh", "Sigmoid");
    st_edit_field(tmpdir, root, "activation_fn", cJSON_CreateString("my_code.Scale"));
    REFUSED(root, "my_code.Scale");
    st_edit_field(tmpdir, root, "activation_fn", cJSON_CreateNumber(1));
    REFUSED(root, "activation_fn");
    /* A Pooling after a sequence-classification Transformer. */
    spec = v6_spec(ST_POOL_MEAN);
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, "sentence_bert_config.json", "transformer_task",
                  cJSON_CreateString("sequence-classification"));
    REFUSED("sentence_bert_config.json", "logits", "scores");
    st_edit_field(tmpdir, "sentence_bert_config.json", "modality_config", NULL);
    REFUSED("modules.json", "module 1 is Pooling", "only module");
    /* A feature-extraction Transformer alone. */
    spec = cross_encoder_spec(NULL);
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, "sentence_bert_config.json", "transformer_task",
                  cJSON_CreateString("feature-extraction"));
    st_edit_field(tmpdir, "sentence_bert_config.json", "modality_config", NULL);
    REFUSED("modules.json", "no Pooling module");
}

/* ---- a v4/v5 CrossEncoder: no modules.json, its activation in config.json ---- */

static void write_plain_bert(const char *config_key, cJSON *value)
{
    st_folder_spec spec = cross_encoder_spec(NULL);
    st_edit_write_folder(tmpdir, &spec);
    char path[512];
    snprintf(path, sizeof path, "%s/modules.json", tmpdir);
    cr_assert_eq(remove(path), 0);
    st_edit_field(tmpdir, "config.json", config_key, value);
}

static cJSON *st_key(const char *activation)
{
    cJSON *o = cJSON_CreateObject();
    if (activation)
        cJSON_AddStringToObject(o, "activation_fn", activation);
    else
        cJSON_AddNullToObject(o, "activation_fn");
    cJSON_AddStringToObject(o, "version", "4.0.1");
    return o;
}

Test(st_model_v6, config_json_activation)
{
    write_plain_bert("sentence_transformers", st_key("torch.nn.modules.linear.Identity"));
    st_model m;
    load_ok(&m);
    cr_assert(!m.has_modules && !m.transformer_dir);
    cr_assert_eq(m.score_activation, ST_ACT_IDENTITY);
    st_model_free(&m);
    write_plain_bert("sbert_ce_default_activation_function",
                     cJSON_CreateString("torch.nn.modules.activation.Tanh"));
    load_ok(&m);
    cr_assert_eq(m.score_activation, ST_ACT_TANH);
    st_model_free(&m);
    /* "activation_fn" null in the v4 key: the v3 key is not read (if/elif). */
    st_edit_field(tmpdir, "config.json", "sentence_transformers", st_key(NULL));
    load_ok(&m);
    cr_assert_eq(m.score_activation, ST_SCORES_NONE);
    st_model_free(&m);
    st_edit_field(tmpdir, "config.json", "sentence_transformers", st_key("torch.nn.Hardswish"));
    REFUSED("config.json", "Hardswish");
}

/* config_sentence_transformers.json's activation_fn wins over config.json's. */
Test(st_model_v6, saved_activation_wins)
{
    st_folder_spec spec = cross_encoder_spec("torch.nn.modules.activation.Sigmoid");
    st_edit_write_folder(tmpdir, &spec);
    st_edit_field(tmpdir, "config.json", "sentence_transformers",
                  st_key("torch.nn.modules.linear.Identity"));
    st_model m;
    load_ok(&m);
    cr_assert_eq(m.score_activation, ST_ACT_SIGMOID);
    st_model_free(&m);
    st_edit_field(tmpdir, "config_sentence_transformers.json", "activation_fn", NULL);
    load_ok(&m);
    cr_assert_eq(m.score_activation, ST_ACT_IDENTITY);
    st_model_free(&m);
}
