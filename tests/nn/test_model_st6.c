/* Model folders as sentence-transformers 6.2 saves them, through the public API against the
 * double reference: a SentenceTransformer (pooling_mode list, cls after a left-out prompt,
 * Dense, Normalize's config, the length in tokenizer_config.json); the length rule between
 * max_seq_length and model_max_length; CrossEncoders whose saved activation_fn governs rerank
 * and classify, as v6 saves it and as v4/v5 did in config.json. */
#define _POSIX_C_SOURCE 200809L

#include "io/st_model.h"
#include "model_check.h"
#include "st_edit.h"
#include "support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char tmp[TEST_DIR_SIZE];

static void setup(void)
{
    test_dir_make(tmp, "model6");
}

static void teardown(void)
{
    test_dir_remove(tmp);
}

TestSuite(model_st6, .init = setup, .fini = teardown, .timeout = 300);

static int max_length_of(const char *dir)
{
    vkbert_tokenizer *t;
    TEST_OK(vkbert_tokenizer_load(dir, &t));
    int n = vkbert_tokenizer_max_length(t);
    vkbert_tokenizer_destroy(t);
    return n;
}

/* ---- SentenceTransformer.save ---- */

/* cls + mean with the default prompt left out of pooling: 6.2's cls is the first token after
 * the prompt. Dense (GELU), Normalize; 9 ids at most (tokenizer_config.json). */
Test(model_st6, sentence_transformer_folder)
{
    bert_config c = tiny_bert_small(MODEL_VOCAB_SIZE, 0);
    bert_weights w;
    st_dense dense = {2 * c.hidden_size, 13, 1, ST_ACT_GELU, NULL, NULL};
    st_folder_dense_random(&dense, 3);
    const st_prompt prompts[] = {{"query", "query: "}};
    st_folder_spec spec = {.v6 = 1,
                           .pool_modes = ST_POOL_CLS | ST_POOL_MEAN,
                           .word_embedding_dimension = c.hidden_size,
                           .dense_count = 1,
                           .dense = &dense,
                           .normalize = 1,
                           .max_seq_length = 9,
                           .do_lower_case = -1,
                           .prompt_count = 1,
                           .prompts = prompts,
                           .default_prompt_name = "query"};
    char dir[256];
    model_write_st(tmp, "st6", &spec, &c, &w, dir);
    cr_assert_eq(max_length_of(dir), 9);
    ref_st_pipeline p = {spec.pool_modes, 3, 1, &dense, 1}; /* [CLS] query : */
    model_check_embed(dir, NULL, NULL, &c, &w, &p, "query: ", model_texts, MODEL_TEXT_COUNT, 9);
    st_folder_dense_free(&dense);
    bert_weights_free(&w);
}

/* Transformer.__init__: sentence_bert_config.json's max_seq_length replaces the tokenizer's
 * model_max_length, even a larger one; max_position_embeddings (64) caps both. */
Test(model_st6, max_seq_length_replaces_model_max_length)
{
    static const struct {
        int max_seq_length, model_max_length, want;
    } cases[] = {{12, 30, 12}, {40, 30, 40}, {0, 30, 30}, {100, 30, 64}, {0, 0, 64}};
    bert_config c = tiny_bert_small(MODEL_VOCAB_SIZE, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st_folder_spec spec = {.pool_modes = ST_POOL_MEAN,
                               .word_embedding_dimension = c.hidden_size,
                               .include_prompt = 1,
                               .max_seq_length = cases[i].max_seq_length,
                               .do_lower_case = -1};
        char dir[256], name[32], number[32];
        bert_weights w;
        snprintf(name, sizeof name, "len%zu", i);
        model_write_st(tmp, name, &spec, &c, &w, dir);
        bert_weights_free(&w);
        snprintf(number, sizeof number, "{\"model_max_length\": %d}", cases[i].model_max_length);
        st_edit_write_text(dir, "tokenizer_config.json",
                           cases[i].model_max_length ? number : "{\"model_max_length\": 1e30}");
        cr_assert_eq(max_length_of(dir), cases[i].want, "case %zu", i);
    }
}

/* ---- CrossEncoder.save ---- */

/* A CrossEncoder folder of `labels` at tmp/name with `activation_fn` (NULL: none saved). */
static void write_cross_encoder(const char *name, int labels, const char *activation_fn,
                                bert_config *c, bert_weights *w, char *dir)
{
    *c = tiny_bert_small(MODEL_VOCAB_SIZE, labels);
    st_folder_spec spec = {
        .v6 = 1, .cross_encoder = 1, .activation_fn = activation_fn, .do_lower_case = -1};
    model_write_st(tmp, name, &spec, c, w, dir);
}

static double activate(int act, double x)
{
    switch (act) {
    case ST_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case ST_ACT_TANH:
        return tanh(x);
    default:
        return x;
    }
}

/* rerank's scores: the activation's of the logit; --raw-scores the logit. */
static void check_rerank(const char *activation_fn, int act)
{
    bert_config c;
    bert_weights w;
    char dir[256];
    write_cross_encoder("ce1", 1, activation_fn, &c, &w, dir);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = model_load(ctx, dir);
    float scores[MODEL_TEXT_COUNT], raw[MODEL_TEXT_COUNT];
    const char *query = "the dog ran";
    TEST_OK(vkbert_model_rerank(m, query, model_texts, MODEL_TEXT_COUNT, 0, scores));
    TEST_OK(vkbert_model_rerank(m, query, model_texts, MODEL_TEXT_COUNT, 1, raw));
    for (int i = 0; i < MODEL_TEXT_COUNT; i++) {
        vkbert_encoding e = VKBERT_ENCODING_INIT;
        TEST_OK(vkbert_tokenizer_encode(vkbert_model_tokenizer(m), query, model_texts[i], 0, &e));
        double logit, want;
        model_reference_logits(&c, &w, &e, &logit);
        want = activate(act, logit);
        cr_assert(fabs(raw[i] - logit) <= 1e-4 * (1 + fabs(logit)), "raw %d", i);
        cr_assert(fabs(scores[i] - want) <= 1e-4 * (1 + fabs(want)), "%s %d: %g vs %g",
                  activation_fn ? activation_fn : "default", i, scores[i], want);
        vkbert_encoding_free(&e);
    }
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
    test_dir_remove(dir);
}

Test(model_st6, rerank_applies_the_saved_activation)
{
    check_rerank("torch.nn.modules.activation.Sigmoid", ST_ACT_SIGMOID);
    check_rerank("torch.nn.modules.linear.Identity", ST_ACT_IDENTITY);
    check_rerank("torch.nn.modules.activation.Tanh", ST_ACT_TANH);
    check_rerank(NULL, ST_ACT_SIGMOID); /* CrossEncoder's default for one label */
}

/* Three labels: classify (and score_inputs of pairs) apply the saved activation, not the
 * text-classification pipeline's softmax: Identity (CrossEncoder's default too) or Softmax. */
static void check_classify(const char *activation_fn, int softmax)
{
    bert_config c;
    bert_weights w;
    char dir[256];
    write_cross_encoder("ce3", 3, activation_fn, &c, &w, dir);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = model_load(ctx, dir);
    float scores[3 * MODEL_TEXT_COUNT], pair[3];
    TEST_OK(vkbert_model_classify(m, model_texts, MODEL_TEXT_COUNT, scores));
    for (int i = 0; i < MODEL_TEXT_COUNT; i++) {
        vkbert_encoding e = VKBERT_ENCODING_INIT;
        TEST_OK(vkbert_tokenizer_encode(vkbert_model_tokenizer(m), model_texts[i], NULL, 0, &e));
        double logits[3], sum = 0;
        model_reference_logits(&c, &w, &e, logits);
        for (int j = 0; j < 3; j++)
            sum += exp(logits[j]);
        for (int j = 0; j < 3; j++) {
            double want = softmax ? exp(logits[j]) / sum : logits[j];
            cr_assert(fabs(scores[3 * i + j] - want) <= 1e-4 * (1 + fabs(want)),
                      "text %d label %d: %g vs %g", i, j, scores[3 * i + j], want);
        }
        vkbert_encoding_free(&e);
    }
    vkbert_encoding in = VKBERT_ENCODING_INIT;
    TEST_OK(vkbert_model_encode(m, "the dog ran", "a cat", NULL, &in));
    TEST_OK(vkbert_model_score_inputs(m, &in, 1, 0, pair));
    vkbert_encoding e = {
        .struct_size = sizeof e, .ids = in.ids, .type_ids = in.type_ids, .count = in.count};
    double logits[3];
    model_reference_logits(&c, &w, &e, logits);
    cr_assert(softmax || fabs(pair[1] - logits[1]) <= 1e-4 * (1 + fabs(logits[1])),
              "a pair's scores: %g vs %g", pair[1], logits[1]);
    vkbert_encoding_free(&in);
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
    test_dir_remove(dir);
}

Test(model_st6, classify_applies_the_saved_activation)
{
    check_classify("torch.nn.modules.linear.Identity", 0);
    check_classify(NULL, 0);
    check_classify("torch.nn.modules.activation.Softmax", 1);
}

/* v4/v5's CrossEncoder.save: no modules.json, the activation in config.json. */
Test(model_st6, config_json_activation_of_an_old_cross_encoder)
{
    bert_config c = tiny_bert_small(MODEL_VOCAB_SIZE, 1);
    bert_weights w;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/ce_v4", tmp);
    model_write_bert(dir, &c, &w, 5);
    cJSON *st = cJSON_CreateObject();
    cJSON_AddStringToObject(st, "activation_fn", "torch.nn.modules.linear.Identity");
    st_edit_field(dir, "config.json", "sentence_transformers", st);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = model_load(ctx, dir);
    float score, raw;
    TEST_OK(vkbert_model_rerank(m, "the dog", model_texts, 1, 0, &score));
    TEST_OK(vkbert_model_rerank(m, "the dog", model_texts, 1, 1, &raw));
    cr_assert_eq(score, raw, "Identity: the logit itself");
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
}

/* sequence-classification over a checkpoint without a classifier: ST would make a random
 * one; vkbert says so. */
Test(model_st6, cross_encoder_without_a_classifier)
{
    bert_config c = tiny_bert_small(MODEL_VOCAB_SIZE, 0);
    bert_weights w;
    st_folder_spec spec = {.v6 = 1, .cross_encoder = 1, .do_lower_case = -1};
    char dir[256];
    model_write_st(tmp, "headless", &spec, &c, &w, dir);
    bert_weights_free(&w);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = NULL;
    cr_assert_eq(vkbert_model_load(ctx, dir, NULL, &m), VKBERT_ERROR_MALFORMED_FILE);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), "no classifier"), "%s",
                       vkbert_last_error(ctx));
    test_context_done(ctx);
}
