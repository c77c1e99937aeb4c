/* Model folders from text to results through the public API (vkbert_model_*), against a
 * double-precision reference of sentence-transformers' and transformers' semantics: every
 * pooling mode alone and combined, Dense modules with each activation, Normalize, prompts with
 * include_prompt, max_seq_length, plain folders, many texts in sorted batches, cross-encoders
 * and classifiers, and the errors of bad folders and calls. */
#define _POSIX_C_SOURCE 200809L

#include "io/bert_model.h"
#include "io/st_model.h"
#include "reference_bert.h"
#include "reference_st.h"
#include "model_check.h"
#include "st_folder.h"
#include "support.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char tmp[TEST_DIR_SIZE];

static void setup(void)
{
    test_dir_make(tmp, "model");
}

static void teardown(void)
{
    test_dir_remove(tmp);
}

TestSuite(model, .init = setup, .fini = teardown, .timeout = 300);

/* ---- folders ---- */

static bert_config small_config(int labels)
{
    return tiny_bert_small(MODEL_VOCAB_SIZE, labels);
}

/* A Pooling of `modes` over c's hidden states, prompts included, nothing else. */
static st_folder_spec pooling_spec(unsigned modes, const bert_config *c)
{
    return (st_folder_spec){.pool_modes = modes,
                            .word_embedding_dimension = c->hidden_size,
                            .include_prompt = 1,
                            .do_lower_case = -1};
}

/* ---- pooling ---- */

static void check_pooling(unsigned modes, int normalize)
{
    bert_config c = small_config(0);
    bert_weights w;
    st_folder_spec spec = pooling_spec(modes, &c);
    spec.normalize = normalize;
    char dir[256], name[32];
    snprintf(name, sizeof name, "pool%u", modes);
    model_write_st(tmp, name, &spec, &c, &w, dir);
    ref_st_pipeline p = {modes, 0, 0, NULL, normalize};
    model_check_embed(dir, NULL, NULL, &c, &w, &p, NULL, model_texts, MODEL_TEXT_COUNT, 0);
    bert_weights_free(&w);
}

Test(model, each_pooling_mode_alone)
{
    for (unsigned bit = ST_POOL_CLS; bit <= ST_POOL_LASTTOKEN; bit <<= 1)
        check_pooling(bit, 0);
}

Test(model, pooling_modes_combined_and_normalized)
{
    check_pooling(ST_POOL_CLS | ST_POOL_MEAN | ST_POOL_MAX, 1);
    check_pooling(ST_POOL_ALL, 0);
    check_pooling(ST_POOL_MEAN_SQRT_LEN | ST_POOL_LASTTOKEN, 1);
}

/* ---- Dense, Normalize ---- */

Test(model, dense_modules_with_every_activation)
{
    bert_config c = small_config(0);
    static const int acts[][2] = {
        {ST_ACT_TANH, ST_ACT_IDENTITY}, {ST_ACT_RELU, ST_ACT_GELU}, {ST_ACT_SIGMOID, ST_ACT_TANH}};
    for (int k = 0; k < 3; k++) {
        st_dense dense[2] = {{2 * c.hidden_size, 30, 1, acts[k][0], NULL, NULL},
                             {30, 13, k != 1, acts[k][1], NULL, NULL}};
        st_folder_dense_random(&dense[0], 100 + k);
        st_folder_dense_random(&dense[1], 200 + k);
        st_folder_spec spec = pooling_spec(ST_POOL_CLS | ST_POOL_MEAN, &c);
        spec.dense_count = 2;
        spec.dense = dense;
        spec.normalize = k != 0;
        char dir[256], name[32];
        bert_weights w;
        snprintf(name, sizeof name, "dense%d", k);
        model_write_st(tmp, name, &spec, &c, &w, dir);
        ref_st_pipeline p = {spec.pool_modes, 0, 2, dense, spec.normalize};
        model_check_embed(dir, NULL, NULL, &c, &w, &p, NULL, model_texts, MODEL_TEXT_COUNT, 0);
        bert_weights_free(&w);
        st_folder_dense_free(&dense[0]), st_folder_dense_free(&dense[1]);
    }
}

/* fp16: the dense weights, the attention activations and the word table stored as fp16. */
Test(model, fp16_within_the_fp16_bound)
{
    bert_config c = small_config(0);
    st_dense dense = {2 * c.hidden_size, 24, 1, ST_ACT_GELU, NULL, NULL};
    st_folder_dense_random(&dense, 7);
    st_folder_spec spec = pooling_spec(ST_POOL_CLS | ST_POOL_MEAN, &c);
    spec.dense_count = 1;
    spec.dense = &dense;
    spec.normalize = 1;
    char dir[256];
    bert_weights w;
    model_write_st(tmp, "fp16", &spec, &c, &w, dir);
    ref_st_pipeline p = {spec.pool_modes, 0, 1, &dense, 1};
    vkbert_model_config fp16 = {.struct_size = sizeof(vkbert_model_config),
                                .precision = VKBERT_PRECISION_FP16};
    model_check_embed(dir, &fp16, NULL, &c, &w, &p, NULL, model_texts, MODEL_TEXT_COUNT, 0);
    bert_weights_free(&w);
    st_folder_dense_free(&dense);
}

/* ---- prompts, lengths, plain folders, many texts ---- */

static const st_prompt prompts[] = {{"query", "query: "}, {"passage", "passage : "}};

/* prompt_length as sentence-transformers computes it: the prompt's ids less the last [SEP]. */
static int prompt_tokens(const char *dir, const char *prompt)
{
    vkbert_tokenizer *t;
    vkbert_encoding e = VKBERT_ENCODING_INIT;
    TEST_OK(vkbert_tokenizer_load(dir, &t));
    TEST_OK(vkbert_tokenizer_encode(t, prompt, NULL, 0, &e));
    int n = e.count - 1;
    vkbert_encoding_free(&e);
    vkbert_tokenizer_destroy(t);
    return n;
}

Test(model, prompts_default_named_given_and_left_out_of_pooling)
{
    bert_config c = small_config(0);
    bert_weights w;
    st_folder_spec spec = pooling_spec(ST_POOL_MEAN | ST_POOL_WEIGHTEDMEAN, &c);
    spec.include_prompt = 0;
    spec.normalize = 1;
    spec.prompt_count = 2;
    spec.prompts = prompts;
    spec.default_prompt_name = "query";
    char dir[256];
    model_write_st(tmp, "prompts", &spec, &c, &w, dir);
    ref_st_pipeline p = {spec.pool_modes, prompt_tokens(dir, "query: "), 0, NULL, 1};
    cr_assert_eq(p.prompt_tokens, 3, "[CLS] query : is 3 tokens, not %d", p.prompt_tokens);
    model_check_embed(dir, NULL, NULL, &c, &w, &p, "query: ", model_texts, MODEL_TEXT_COUNT, 0);
    vkbert_embed_options named = {.struct_size = sizeof(vkbert_embed_options),
                                  .prompt_name = "passage"};
    p.prompt_tokens = prompt_tokens(dir, "passage : ");
    model_check_embed(dir, NULL, &named, &c, &w, &p, "passage : ", model_texts, MODEL_TEXT_COUNT,
                      0);
    vkbert_embed_options given = {.struct_size = sizeof(vkbert_embed_options),
                                  .prompt = "hello world "};
    p.prompt_tokens = prompt_tokens(dir, "hello world ");
    model_check_embed(dir, NULL, &given, &c, &w, &p, "hello world ", model_texts, MODEL_TEXT_COUNT,
                      0);
    bert_weights_free(&w);
}

Test(model, max_seq_length_truncates_and_no_truncate_refuses)
{
    bert_config c = small_config(0);
    bert_weights w;
    st_folder_spec spec = pooling_spec(ST_POOL_MAX, &c);
    spec.max_seq_length = 9;
    char dir[256];
    model_write_st(tmp, "short", &spec, &c, &w, dir);
    ref_st_pipeline p = {ST_POOL_MAX, 0, 0, NULL, 0};
    model_check_embed(dir, NULL, NULL, &c, &w, &p, NULL, model_texts, MODEL_TEXT_COUNT, 9);

    vkbert_context *ctx = test_context(0);
    vkbert_model *m;
    vkbert_model_config strict = {.struct_size = sizeof(vkbert_model_config), .no_truncate = 1};
    TEST_OK(vkbert_model_load(ctx, dir, &strict, &m));
    float out[64];
    cr_assert_eq(vkbert_model_embed(m, &model_texts[3], 1, NULL, out),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), "limit of 9"), "%s", vkbert_last_error(ctx));
    TEST_OK(vkbert_model_embed(m, &model_texts[2], 1, NULL, out)); /* "hello" fits */
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
}

/* A BertModel folder without modules.json mean-pools and does not normalize; --pooling and
 * --normalize override it. */
Test(model, plain_folder_mean_pools_and_overrides_apply)
{
    bert_config c = small_config(0);
    bert_weights w;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/plain", tmp);
    model_write_bert(dir, &c, &w, 5);
    ref_st_pipeline p = {ST_POOL_MEAN, 0, 0, NULL, 0};
    model_check_embed(dir, NULL, NULL, &c, &w, &p, NULL, model_texts, MODEL_TEXT_COUNT, 0);
    vkbert_embed_options prompt = {.struct_size = sizeof(vkbert_embed_options),
                                   .prompt = "hello world "}; /* no Pooling module */
    model_check_embed(dir, NULL, &prompt, &c, &w, &p, "hello world ", model_texts, MODEL_TEXT_COUNT,
                      0);
    vkbert_model_config over = {
        .struct_size = sizeof(vkbert_model_config), .pooling = "cls,lasttoken", .normalize = 1};
    ref_st_pipeline q = {ST_POOL_CLS | ST_POOL_LASTTOKEN, 0, 0, NULL, 1};
    model_check_embed(dir, &over, NULL, &c, &w, &q, NULL, model_texts, MODEL_TEXT_COUNT, 0);
    bert_weights_free(&w);
}

/* 75 texts of many lengths: batches of 32 sorted by length, results in input order. */
Test(model, many_texts_in_sorted_batches_keep_their_order)
{
    bert_config c = small_config(0);
    bert_weights w;
    st_folder_spec spec = pooling_spec(ST_POOL_MEAN, &c);
    spec.normalize = 1;
    char dir[256];
    model_write_st(tmp, "many", &spec, &c, &w, dir);
    enum { N = 75 };
    char *many[N];
    ref_rng rng = {99};
    for (int i = 0; i < N; i++) {
        many[i] = calloc(512, 1);
        int words = 1 + (int)ref_uniform(&rng, 0, 40);
        for (int k = 0; k < words; k++) {
            strcat(many[i],
                   model_vocab[5 + (int)ref_uniform(&rng, 0, MODEL_VOCAB_SIZE - 5 - 1e-9)]);
            strcat(many[i], " ");
        }
    }
    ref_st_pipeline p = {ST_POOL_MEAN, 0, 0, NULL, 1};
    model_check_embed(dir, NULL, NULL, &c, &w, &p, NULL, (const char *const *)many, N, 0);
    for (int i = 0; i < N; i++)
        free(many[i]);
    bert_weights_free(&w);
}

/* ---- cross-encoders and classifiers ---- */

/* logits[labels] of BertForSequenceClassification on one input: classifier(pooler(hidden)). */
/* vkbert_embed_options.normalize overrides, for one call, both the folder's Normalize module
 * and the model's config; the next call without it is back to the model's choice. */
Test(model, normalize_per_call_overrides_folder_and_config)
{
    bert_config c = small_config(0);
    bert_weights w;
    st_folder_spec spec = pooling_spec(ST_POOL_MEAN, &c);
    spec.normalize = 1;
    char dir[256];
    model_write_st(tmp, "normalized", &spec, &c, &w, dir);
    ref_st_pipeline raw = {ST_POOL_MEAN, 0, 0, NULL, 0}, unit = {ST_POOL_MEAN, 0, 0, NULL, 1};
    vkbert_embed_options never = {.struct_size = sizeof(vkbert_embed_options), .normalize = -1},
                         always = {.struct_size = sizeof(vkbert_embed_options), .normalize = 1};
    model_check_embed(dir, NULL, &never, &c, &w, &raw, NULL, model_texts, MODEL_TEXT_COUNT, 0);
    vkbert_model_config off = {.struct_size = sizeof(vkbert_model_config), .normalize = -1};
    model_check_embed(dir, &off, &always, &c, &w, &unit, NULL, model_texts, MODEL_TEXT_COUNT, 0);
    model_check_embed(dir, &off, NULL, &c, &w, &raw, NULL, model_texts, MODEL_TEXT_COUNT, 0);

    vkbert_context *ctx = test_context(0);
    vkbert_model *m = model_load(ctx, dir);
    float out[64];
    vkbert_embed_options bad = {.struct_size = sizeof(vkbert_embed_options), .normalize = 2};
    cr_assert_eq(vkbert_model_embed(m, model_texts, 1, &bad, out), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), "normalize"), "%s", vkbert_last_error(ctx));
    /* normalize came with the struct's first published size (0.2.0): a size ending before it
     * is no vkbert's, not a request for the default */
    vkbert_embed_options short_size = VKBERT_EMBED_OPTIONS_INIT;
    short_size.struct_size = offsetof(vkbert_embed_options, normalize);
    short_size.normalize = 1;
    cr_assert_eq(vkbert_model_embed(m, model_texts, 1, &short_size, out),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), "VKBERT_EMBED_OPTIONS_INIT"), "%s",
                       vkbert_last_error(ctx));
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
}

Test(model, rerank_scores_pairs_as_a_cross_encoder)
{
    bert_config c = small_config(1);
    bert_weights w;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/reranker", tmp);
    model_write_bert(dir, &c, &w, 21);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = model_load(ctx, dir);
    cr_assert_eq(vkbert_model_labels(m), 1);
    float scores[MODEL_TEXT_COUNT], raw[MODEL_TEXT_COUNT];
    const char *query = "the dog ran";
    TEST_OK(vkbert_model_rerank(m, query, model_texts, MODEL_TEXT_COUNT, 0, scores));
    TEST_OK(vkbert_model_rerank(m, query, model_texts, MODEL_TEXT_COUNT, 1, raw));
    for (int i = 0; i < MODEL_TEXT_COUNT; i++) {
        vkbert_encoding e = VKBERT_ENCODING_INIT;
        TEST_OK(vkbert_tokenizer_encode(vkbert_model_tokenizer(m), query, model_texts[i], 0, &e));
        double logit;
        model_reference_logits(&c, &w, &e, &logit);
        double sig = 1.0 / (1.0 + exp(-logit));
        cr_assert(fabs(raw[i] - logit) <= 1e-4 * (1 + fabs(logit)), "raw %d: %g vs %g", i, raw[i],
                  logit);
        cr_assert(fabs(scores[i] - sig) <= 1e-5, "score %d: %g vs %g", i, scores[i], sig);
        vkbert_encoding_free(&e);
    }
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
}

/* Softmax for single-label classifiers, sigmoid per label for multi-label ones. */
static void check_classify(int multi_label)
{
    bert_config c = small_config(3);
    c.problem_type = multi_label ? BERT_PROBLEM_MULTI_LABEL : BERT_PROBLEM_NONE;
    bert_weights w;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/classifier%d", tmp, multi_label);
    model_write_bert(dir, &c, &w, 31);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = model_load(ctx, dir);
    cr_assert_eq(vkbert_model_labels(m), 3);
    cr_assert_str_eq(vkbert_model_label(m, 2), "LABEL_2");
    float *scores = test_poisoned(3 * MODEL_TEXT_COUNT);
    TEST_OK(vkbert_model_classify(m, model_texts, MODEL_TEXT_COUNT, scores));
    for (int i = 0; i < MODEL_TEXT_COUNT; i++) {
        vkbert_encoding e = VKBERT_ENCODING_INIT;
        TEST_OK(vkbert_tokenizer_encode(vkbert_model_tokenizer(m), model_texts[i], NULL, 0, &e));
        double logits[3], want[3], sum = 0;
        model_reference_logits(&c, &w, &e, logits);
        for (int j = 0; j < 3; j++)
            sum += want[j] = multi_label ? 1.0 / (1.0 + exp(-logits[j])) : exp(logits[j]);
        for (int j = 0; j < 3; j++) {
            double p = multi_label ? want[j] : want[j] / sum;
            cr_assert(fabs(scores[3 * i + j] - p) <= 1e-5, "text %d label %d: %g vs %g", i, j,
                      scores[3 * i + j], p);
        }
        vkbert_encoding_free(&e);
    }
    float one;
    cr_assert_eq(vkbert_model_rerank(m, "q", model_texts, 1, 0, &one),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), "one label"), "%s", vkbert_last_error(ctx));
    free(scores);
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
}

Test(model, classify_gives_softmax_or_sigmoid_scores)
{
    check_classify(0);
    check_classify(1);
}

/* A classifier folder still embeds, mean-pooling its encoder's hidden states. */
Test(model, a_classifier_folder_still_embeds)
{
    bert_config c = small_config(2);
    bert_weights w;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/cls_embed", tmp);
    model_write_bert(dir, &c, &w, 41);
    ref_st_pipeline p = {ST_POOL_MEAN, 0, 0, NULL, 0};
    model_check_embed(dir, NULL, NULL, &c, &w, &p, NULL, model_texts, 3, 0);
    bert_weights_free(&w);
}

/* ---- tokenizers ---- */

static const char cased_normalizer[] =
    "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
    "\"strip_accents\":null,\"lowercase\":false}";

/* The id of `token` in the model's tokenization of `text`, or -1. */
static int32_t find_token(const vkbert_model *m, const char *text, const char *token)
{
    const vkbert_tokenizer *t = vkbert_model_tokenizer(m);
    vkbert_encoding e = VKBERT_ENCODING_INIT;
    TEST_OK(vkbert_tokenizer_encode(t, text, NULL, 0, &e));
    int32_t want = vkbert_tokenizer_token_id(t, token), found = -1;
    for (int i = 0; i < e.count; i++)
        if (e.ids[i] == want) found = want;
    vkbert_encoding_free(&e);
    return found;
}

/* A folder with tokenizer.json and no vocab.txt runs. Folder k: 0 uncased; 1 a cased
 * normalizer and tokenizer_config.json's do_lower_case false (a cased model as transformers
 * saves one): "Cat" kept; 2 the cased normalizer alone, which AutoTokenizer's BertTokenizerFast
 * overrides with its default do_lower_case true: "cat". Each embeds as the reference of its own
 * tokens. */
Test(model, tokenizer_json_only_and_cased_folders)
{
    bert_config c = small_config(0);
    bert_weights w;
    const char *normalizers[] = {NULL, cased_normalizer, cased_normalizer};
    for (int k = 0; k < 3; k++) {
        char dir[256], path[300];
        snprintf(dir, sizeof dir, "%s/json%d", tmp, k);
        model_write_bert(dir, &c, &w, 51);
        snprintf(path, sizeof path, "%s/vocab.txt", dir);
        cr_assert_eq(remove(path), 0);
        st_folder_write_tokenizer_json(dir, model_vocab, MODEL_VOCAB_SIZE, "WordPiece",
                                       normalizers[k], NULL, NULL);
        snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
        FILE *f = k == 1 ? fopen(path, "w") : NULL;
        if (f) fputs("{\"do_lower_case\": false, \"tokenizer_class\": \"BertTokenizer\"}", f);
        if (f) fclose(f);
        int cased = k == 1;
        vkbert_context *ctx = test_context(0);
        vkbert_model *m = model_load(ctx, dir);
        cr_assert_eq(find_token(m, "the Cat [MASK]", "Cat") >= 0, cased, "folder %d", k);
        cr_assert_eq(find_token(m, "the Cat [MASK]", "cat") >= 0, !cased, "folder %d", k);
        cr_assert_geq(find_token(m, "the Cat [MASK]", "[MASK]"), 0, "[MASK] kept whole");
        vkbert_model_destroy(m);
        test_context_done(ctx);
        ref_st_pipeline p = {ST_POOL_MEAN, 0, 0, NULL, 0};
        const char *cased_texts[] = {"the Cat sat [MASK] on the mat.", "Cat cat CAT"};
        model_check_embed(dir, NULL, NULL, &c, &w, &p, NULL, cased_texts, 2, 0);
        bert_weights_free(&w);
    }
}

/* A Transformer in 0_Transformer, as older sentence-transformers folders have it: its
 * sentence_bert_config.json's max_seq_length still truncates. */
Test(model, transformer_in_a_subfolder_keeps_its_limit)
{
    bert_config c = small_config(0);
    bert_weights w;
    st_folder_spec spec = pooling_spec(ST_POOL_MEAN, &c);
    spec.transformer_in_subfolder = 1;
    spec.max_seq_length = 7;
    char dir[256];
    model_write_st(tmp, "subfolder", &spec, &c, &w, dir);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = model_load(ctx, dir);
    cr_assert_eq(vkbert_tokenizer_max_length(vkbert_model_tokenizer(m)), 7);
    vkbert_model_destroy(m);
    test_context_done(ctx);
    ref_st_pipeline p = {ST_POOL_MEAN, 0, 0, NULL, 0};
    model_check_embed(dir, NULL, NULL, &c, &w, &p, NULL, model_texts, MODEL_TEXT_COUNT, 7);
    vkbert_tokenizer *t;
    TEST_OK(vkbert_tokenizer_load(dir, &t)); /* the public tokenizer reads the same folder */
    cr_assert_eq(vkbert_tokenizer_max_length(t), 7);
    vkbert_tokenizer_destroy(t);
    bert_weights_free(&w);
}

/* ---- errors ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fputs(text, f) >= 0 && fclose(f) == 0, 1, "%s", path);
}

static void expect_load_error(const char *dir, const vkbert_model_config *config,
                              vkbert_status want, const char *needle)
{
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = (vkbert_model *)1;
    vkbert_status status = vkbert_model_load(ctx, dir, config, &m);
    cr_assert_eq(status, want, "%s: %s, not %s (%s)", dir, vkbert_status_name(status),
                 vkbert_status_name(want), vkbert_last_error(ctx));
    cr_assert_null(m);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), needle), "'%s' not in: %s", needle,
                       vkbert_last_error(ctx));
    test_context_done(ctx);
}

Test(model, bad_folders_and_calls_are_clear_errors)
{
    bert_config c = small_config(0);
    bert_weights w;
    st_folder_spec spec = pooling_spec(ST_POOL_MEAN, &c);
    spec.prompt_count = 1;
    spec.prompts = prompts;
    char dir[256];
    model_write_st(tmp, "errors", &spec, &c, &w, dir);
    vkbert_model_config bad_pool = {.struct_size = sizeof(vkbert_model_config),
                                    .pooling = "mean,median"};
    vkbert_model_config two_modes = {.struct_size = sizeof(vkbert_model_config),
                                     .pooling = "cls,mean"};
    bert_weights unused;
    st_dense narrow = {c.hidden_size, 8, 1, ST_ACT_TANH, NULL, NULL};
    st_folder_dense_random(&narrow, 9);
    st_folder_spec dense_spec = pooling_spec(ST_POOL_MEAN, &c);
    dense_spec.dense_count = 1;
    dense_spec.dense = &narrow;
    char dense_dir[256];
    model_write_st(tmp, "narrow", &dense_spec, &c, &unused, dense_dir);
    bert_weights_free(&unused);
    st_folder_dense_free(&narrow);
    expect_load_error(dense_dir, &two_modes, VKBERT_ERROR_INVALID_ARGUMENT,
                      "Dense module 0 takes 22 features");
    expect_load_error(dir, &bad_pool, VKBERT_ERROR_INVALID_ARGUMENT, "median");
    vkbert_model_config bad_length = {.struct_size = sizeof(vkbert_model_config), .max_length = 1};
    expect_load_error(dir, &bad_length, VKBERT_ERROR_INVALID_ARGUMENT, "max_length");
    char missing[300];
    snprintf(missing, sizeof missing, "%s/nothing_here", tmp);
    expect_load_error(missing, NULL, VKBERT_ERROR_INVALID_ARGUMENT, "nothing_here");
    /* Files that exist but are not what they claim: their own status, the file named. */
    write_file(dense_dir, "config.json", "{\"hidden_size\": \"wide\"}");
    expect_load_error(dense_dir, NULL, VKBERT_ERROR_MALFORMED_FILE, "config.json");
    write_file(dense_dir, "modules.json", "[{\"idx\": 0,");
    expect_load_error(dense_dir, NULL, VKBERT_ERROR_MALFORMED_FILE, "modules.json");

    vkbert_context *ctx = test_context(0);
    vkbert_model *m = model_load(ctx, dir);
    float out[64];
    vkbert_embed_options unknown = {.struct_size = sizeof(vkbert_embed_options),
                                    .prompt_name = "nope"};
    cr_assert_eq(vkbert_model_embed(m, model_texts, 1, &unknown, out),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), "nope"), "%s", vkbert_last_error(ctx));
    const char *holes[] = {"fine", NULL};
    cr_assert_eq(vkbert_model_embed(m, holes, 2, NULL, out), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_model_embed(m, model_texts, 0, NULL, out), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_model_classify(m, model_texts, 1, out), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_model_labels(m), 0);
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
}
