/* Pre-tokenized inputs (vkbert_model_encode, _embed_inputs, _score_inputs), the calls a server
 * batches with: inputs of several "requests" (different lengths, prompts left out of pooling,
 * pairs) run as one batch and equal the text calls of each text alone and the double
 * reference; truncation from either end against ids cut by hand; and every refused input. */
#define _POSIX_C_SOURCE 200809L

#include "io/bert_model.h"
#include "io/st_model.h"
#include "reference_bert.h"
#include "reference_st.h"
#include "st_folder.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const vocab[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",   "cat",  "sat",     "on",    "mat",
    "a",     "dog",   "ran",   "far",   "away",   "query", ":",    "passage", "hello", "world",
    "!",     ".",     ",",     "big",   "small",  "red",   "blue", "##s",     "##ing", "run",
    "fast",  "slow",  "and",   "or",    "is",     "was",   "it",   "good",    "bad",   "very"};
#define VOCAB_SIZE ((int)(sizeof vocab / sizeof *vocab))
#define CLS 2
#define SEP 3

static const char *const texts[] = {
    "the cat sat on the mat.",
    "a dog ran far away!",
    "hello",
    "the big red dog and the small blue cat were running very fast , or slow .",
    "it was good",
    "cats",
};
#define TEXT_COUNT ((int)(sizeof texts / sizeof *texts))

TestSuite(model_inputs, .init = test_tmpdir_setup, .fini = test_tmpdir_teardown, .timeout = 300);

static bert_config small_config(int labels)
{
    return tiny_bert_small(VOCAB_SIZE, labels);
}

static const st_prompt prompts[] = {{"query", "query: "}, {"passage", "passage : "}};

/* Mean pooling with prompts left out of it, "query" by default; max_seq_length when > 0. */
static void write_prompt_folder(const char *name, int max_seq_length, bert_config *c,
                                bert_weights *w, char *dir)
{
    *c = small_config(0);
    st_folder_spec spec = {.pool_modes = ST_POOL_MEAN,
                           .word_embedding_dimension = c->hidden_size,
                           .include_prompt = 0,
                           .normalize = 1,
                           .do_lower_case = -1,
                           .max_seq_length = max_seq_length,
                           .prompt_count = 2,
                           .prompts = prompts,
                           .default_prompt_name = "query"};
    char err[512];
    snprintf(dir, 256, "%s/%s", test_tmpdir, name);
    mkdir(dir, 0700);
    tiny_bert_folder(dir, c, 11, vocab, VOCAB_SIZE, w);
    cr_assert_eq(st_folder_write(dir, &spec, err, sizeof err), 0, "%s", err);
}

static vkbert_model *load(vkbert_context *ctx, const char *dir, const vkbert_model_config *config)
{
    vkbert_model *m = NULL;
    vkbert_status status = vkbert_model_load(ctx, dir, config, &m);
    cr_assert_eq(status, VKBERT_OK, "load %s: %s", dir, vkbert_last_error(ctx));
    return m;
}

/* The ids of `text` (and `pair`) with no limit, through the public tokenizer. */
static vkbert_encoding untruncated(vkbert_model *m, const char *text, const char *pair)
{
    vkbert_encoding e = VKBERT_ENCODING_INIT;
    TEST_OK(vkbert_tokenizer_encode(vkbert_model_tokenizer(m), text, pair, -1, &e));
    return e;
}

/* sentence-transformers' prompt_length: the prompt's ids less the final [SEP]. */
static int prompt_length(vkbert_model *m, const char *prompt)
{
    vkbert_encoding e = untruncated(m, prompt, NULL);
    int n = e.count - 1;
    vkbert_encoding_free(&e);
    return n;
}

static void assert_near(const float *got, const float *want, size_t n, const char *what)
{
    double *ref = malloc(n * sizeof *ref);
    for (size_t i = 0; i < n; i++)
        ref[i] = want[i];
    test_assert_close(got, ref, n, 1e-5, what);
    free(ref);
}

/* ---- embeddings: one batch of mixed requests ---- */

/* Request r of the batch: its prompt (by name, given, or the default), and the texts. */
typedef struct request {
    vkbert_embed_options embed;
    vkbert_encode_options encode;
    const char *prompt_text;
} request;

static request make_request(const char *name, const char *prompt, const char *text)
{
    request r = {.embed = VKBERT_EMBED_OPTIONS_INIT, .encode = VKBERT_ENCODE_OPTIONS_INIT};
    r.embed.prompt_name = r.encode.prompt_name = name;
    r.embed.prompt = r.encode.prompt = prompt;
    r.prompt_text = text;
    return r;
}

Test(model_inputs, mixed_prompts_and_lengths_in_one_batch_equal_the_text_calls)
{
    bert_config c;
    bert_weights w;
    char dir[256];
    write_prompt_folder("mixed", 0, &c, &w, dir);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, dir, NULL);
    int dim = vkbert_model_dimension(m);
    request requests[3] = {make_request(NULL, NULL, "query: "),
                           make_request("passage", NULL, "passage : "),
                           make_request(NULL, "hello world ", "hello world ")};
    enum { N = 3 * TEXT_COUNT };
    vkbert_encoding inputs[N];
    /* Interleaved, so that neighbours in the batch differ in prompt and length. */
    for (int i = 0; i < N; i++) {
        request *r = &requests[i % 3];
        inputs[i] = (vkbert_encoding)VKBERT_ENCODING_INIT;
        TEST_OK(vkbert_model_encode(m, texts[i / 3], NULL, &r->encode, &inputs[i]));
        int want = prompt_length(m, r->prompt_text);
        cr_assert_eq(inputs[i].prompt_tokens, want, "input %d: prompt_tokens %d, not %d", i,
                     inputs[i].prompt_tokens, want);
        cr_assert_eq(inputs[i].full_count, inputs[i].count);
    }
    for (int normalize = -1; normalize <= 1; normalize++) {
        float *got = test_poisoned((size_t)N * dim), *alone = test_poisoned((size_t)dim);
        TEST_OK(vkbert_model_embed_inputs(m, inputs, N, normalize, got));
        double *want = malloc((size_t)dim * sizeof *want);
        for (int i = 0; i < N; i++) {
            request *r = &requests[i % 3];
            r->embed.normalize = normalize;
            TEST_OK(vkbert_model_embed(m, &texts[i / 3], 1, &r->embed, alone));
            char what[64];
            snprintf(what, sizeof what, "input %d, normalize %d, text call", i, normalize);
            assert_near(got + (size_t)i * dim, alone, (size_t)dim, what);
            ref_st_pipeline p = {ST_POOL_MEAN, prompt_length(m, r->prompt_text), 0, NULL,
                                 normalize >= 0};
            ref_st_embedding(&c, &w, &p, inputs[i].ids, inputs[i].type_ids, inputs[i].count, want);
            snprintf(what, sizeof what, "input %d, normalize %d, reference", i, normalize);
            test_assert_close(got + (size_t)i * dim, want, (size_t)dim, 1e-4, what);
        }
        free(got), free(alone), free(want);
    }
    for (int i = 0; i < N; i++)
        vkbert_encoding_free(&inputs[i]);
    cr_assert_null(inputs[0].ids, "freed inputs are emptied");
    vkbert_model_destroy(m);
    test_context_done(ctx);
    bert_weights_free(&w);
}

/* ---- scores: pairs of several queries, and a classifier ---- */

Test(model_inputs, pairs_of_several_queries_equal_rerank_alone)
{
    bert_config c = small_config(1);
    bert_weights w;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/reranker", test_tmpdir);
    tiny_bert_folder(dir, &c, 21, vocab, VOCAB_SIZE, &w);
    bert_weights_free(&w);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, dir, NULL);
    const char *queries[2] = {"the dog ran", "is it a big red cat or a small blue dog"};
    enum { N = 2 * TEXT_COUNT };
    vkbert_encoding inputs[N];
    for (int i = 0; i < N; i++) {
        inputs[i] = (vkbert_encoding)VKBERT_ENCODING_INIT;
        TEST_OK(vkbert_model_encode(m, queries[i % 2], texts[i / 2], NULL, &inputs[i]));
        cr_assert_eq(inputs[i].prompt_tokens, 0, "a pair has no prompt");
    }
    for (int raw = 0; raw <= 1; raw++) {
        float *got = test_poisoned(N), alone;
        TEST_OK(vkbert_model_score_inputs(m, inputs, N, raw, got));
        for (int i = 0; i < N; i++) {
            TEST_OK(vkbert_model_rerank(m, queries[i % 2], &texts[i / 2], 1, raw, &alone));
            cr_assert(fabsf(got[i] - alone) <= 1e-5f * (1 + fabsf(alone)),
                      "pair %d raw %d: %g vs %g", i, raw, got[i], alone);
        }
        free(got);
    }
    for (int i = 0; i < N; i++)
        vkbert_encoding_free(&inputs[i]);
    vkbert_model_destroy(m);
    test_context_done(ctx);
}

Test(model_inputs, classifier_scores_equal_classify_alone)
{
    for (int multi = 0; multi <= 1; multi++) {
        bert_config c = small_config(3);
        c.problem_type = multi ? BERT_PROBLEM_MULTI_LABEL : BERT_PROBLEM_NONE;
        char dir[256];
        snprintf(dir, sizeof dir, "%s/classifier%d", test_tmpdir, multi);
        tiny_bert_folder(dir, &c, 31, vocab, VOCAB_SIZE, NULL);
        vkbert_context *ctx = test_context(0);
        vkbert_model *m = load(ctx, dir, NULL);
        vkbert_encoding inputs[TEXT_COUNT];
        for (int i = 0; i < TEXT_COUNT; i++) {
            inputs[i] = (vkbert_encoding)VKBERT_ENCODING_INIT;
            TEST_OK(vkbert_model_encode(m, texts[i], NULL, NULL, &inputs[i]));
        }
        float *got = test_poisoned(3 * TEXT_COUNT), alone[3];
        TEST_OK(vkbert_model_score_inputs(m, inputs, TEXT_COUNT, 0, got));
        for (int i = 0; i < TEXT_COUNT; i++) {
            TEST_OK(vkbert_model_classify(m, &texts[i], 1, alone));
            assert_near(got + 3 * i, alone, 3, "scores");
        }
        /* raw: the logits, whose softmax (or sigmoids) are the scores */
        TEST_OK(vkbert_model_score_inputs(m, inputs, TEXT_COUNT, 1, got));
        for (int i = 0; i < TEXT_COUNT; i++) {
            TEST_OK(vkbert_model_classify(m, &texts[i], 1, alone));
            double sum = 0, p[3];
            for (int j = 0; j < 3; j++)
                sum += p[j] = multi ? 1 / (1 + exp(-(double)got[3 * i + j])) : exp(got[3 * i + j]);
            for (int j = 0; j < 3; j++)
                cr_assert(fabs((multi ? p[j] : p[j] / sum) - alone[j]) <= 1e-5, "%d %d", i, j);
        }
        for (int i = 0; i < TEXT_COUNT; i++)
            vkbert_encoding_free(&inputs[i]);
        free(got);
        vkbert_model_destroy(m);
        test_context_done(ctx);
    }
}

/* ---- truncation ---- */

static vkbert_encoding encode_cut(vkbert_model *m, const char *text, const char *pair, int truncate,
                                  int left)
{
    vkbert_encode_options o = VKBERT_ENCODE_OPTIONS_INIT;
    o.truncate = truncate;
    o.truncate_left = left;
    o.prompt = ""; /* no prompt: the ids are the text's alone */
    vkbert_encoding in = VKBERT_ENCODING_INIT;
    TEST_OK(vkbert_model_encode(m, text, pair, &o, &in));
    return in;
}

static void assert_ids(const vkbert_encoding *in, const int32_t *want, const int32_t *types, int n,
                       const char *what)
{
    cr_assert_eq(in->count, n, "%s: %d ids, not %d", what, in->count, n);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(in->ids[i], want[i], "%s: ids[%d] %d, not %d", what, i, in->ids[i], want[i]);
        cr_assert_eq(in->type_ids[i], types ? types[i] : 0, "%s: type_ids[%d]", what, i);
    }
}

Test(model_inputs, truncation_from_either_end_and_refusal)
{
    bert_config c;
    bert_weights w;
    char dir[256];
    write_prompt_folder("short", 9, &c, &w, dir);
    bert_weights_free(&w);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, dir, NULL);
    const char *text = texts[3];
    vkbert_encoding full = untruncated(m, text, NULL);
    int n = full.count;
    cr_assert_gt(n, 12);
    /* [CLS] the first 7 content ids [SEP], or [CLS] the last 7 [SEP] */
    int32_t right[9], left[9];
    right[0] = left[0] = CLS;
    right[8] = left[8] = SEP;
    for (int i = 1; i < 8; i++) {
        right[i] = full.ids[i];
        left[i] = full.ids[n - 1 - 8 + i];
    }
    vkbert_encoding in = encode_cut(m, text, NULL, 0, 0);
    assert_ids(&in, right, NULL, 9, "right");
    cr_assert_eq(in.full_count, n);
    vkbert_encoding_free(&in);
    in = encode_cut(m, text, NULL, 1, 1);
    assert_ids(&in, left, NULL, 9, "left");
    cr_assert_eq(in.full_count, n);
    vkbert_encoding_free(&in);

    /* A pair: "the dog" keeps its 2 ids (longest first), the document gets the other 4. */
    vkbert_encoding doc = untruncated(m, text, NULL);
    int32_t pair_right[9] = {CLS, 5, 11, SEP}, pair_left[9] = {CLS, 5, 11, SEP};
    int32_t types[9] = {0, 0, 0, 0, 1, 1, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        pair_right[4 + i] = doc.ids[1 + i];
        pair_left[4 + i] = doc.ids[n - 1 - 4 + i];
    }
    pair_right[8] = pair_left[8] = SEP;
    in = encode_cut(m, "the dog", text, 0, 0);
    assert_ids(&in, pair_right, types, 9, "pair, right");
    cr_assert_eq(in.full_count, n + 3);
    vkbert_encoding_free(&in);
    in = encode_cut(m, "the dog", text, 0, 1);
    assert_ids(&in, pair_left, types, 9, "pair, left");
    vkbert_encoding_free(&in);

    /* -1 refuses, naming the length and the limit */
    vkbert_encode_options strict = VKBERT_ENCODE_OPTIONS_INIT;
    strict.truncate = -1;
    in = (vkbert_encoding)VKBERT_ENCODING_INIT;
    cr_assert_eq(vkbert_model_encode(m, text, NULL, &strict, &in), VKBERT_ERROR_INVALID_ARGUMENT);
    char want[128];
    snprintf(want, sizeof want, "%d tokens, over the model's limit of 9", n + 2);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), want), "%s", vkbert_last_error(ctx));
    cr_assert_null(in.ids, "a refused input is left empty");
    vkbert_encoding_free(&in);
    vkbert_encoding_free(&full);
    vkbert_encoding_free(&doc);
    vkbert_model_destroy(m);

    /* A model loaded with no_truncate refuses by default; truncate 1 cuts anyway. */
    vkbert_model_config no_cut = VKBERT_MODEL_CONFIG_INIT;
    no_cut.no_truncate = 1;
    m = load(ctx, dir, &no_cut);
    cr_assert_eq(vkbert_model_encode(m, text, NULL, NULL, &in), VKBERT_ERROR_INVALID_ARGUMENT);
    in = encode_cut(m, text, NULL, 1, 0);
    cr_assert_eq(in.count, 9);
    vkbert_encoding_free(&in);
    vkbert_model_destroy(m);
    test_context_done(ctx);
}

/* A text cut from its start loses its prompt first: the prompt tokens left shrink with it. */
Test(model_inputs, left_truncation_cuts_the_prompt_first)
{
    bert_config c;
    bert_weights w;
    char dir[256];
    write_prompt_folder("prompt_cut", 9, &c, &w, dir);
    bert_weights_free(&w);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, dir, NULL);
    vkbert_encode_options o = VKBERT_ENCODE_OPTIONS_INIT;
    o.truncate_left = 1;
    vkbert_encoding in = VKBERT_ENCODING_INIT;
    /* "query: " is [CLS] query : (3); "the cat sat" 3 more: 8 ids fit in 9 */
    TEST_OK(vkbert_model_encode(m, "the cat sat", NULL, &o, &in));
    cr_assert_eq(in.prompt_tokens, 3);
    vkbert_encoding_free(&in);
    /* 6 content ids plus the prompt's 2: 1 cut, "query" goes, ":" stays */
    TEST_OK(vkbert_model_encode(m, "the cat sat on the mat", NULL, &o, &in));
    cr_assert_eq(in.count, 9);
    cr_assert_eq(in.ids[1], 16, "\":\" is first after [CLS], not %d", in.ids[1]);
    cr_assert_eq(in.prompt_tokens, 2);
    vkbert_encoding_free(&in);
    vkbert_model_destroy(m);
    test_context_done(ctx);
}

/* ---- refusals ---- */

static void expect_refused(vkbert_context *ctx, vkbert_status status, const char *words)
{
    cr_assert_eq(status, VKBERT_ERROR_INVALID_ARGUMENT, "%s: %s", words,
                 vkbert_status_name(status));
    cr_assert_not_null(strstr(vkbert_last_error(ctx), words), "want \"%s\" in \"%s\"", words,
                       vkbert_last_error(ctx));
}

Test(model_inputs, bad_inputs_are_refused_naming_the_input)
{
    bert_config c;
    bert_weights w;
    char dir[256];
    write_prompt_folder("bad", 0, &c, &w, dir);
    bert_weights_free(&w);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, dir, NULL);
    int dim = vkbert_model_dimension(m);
    int32_t ids[2][4] = {{CLS, 5, 6, SEP}, {CLS, 7, 8, SEP}}, types[4] = {0, 0, 1, 1};
    int32_t many[65] = {0};
    vkbert_encoding in[2] = {VKBERT_ENCODING_INIT, VKBERT_ENCODING_INIT};
    for (int i = 0; i < 2; i++)
        in[i].ids = ids[i], in[i].count = 4;
    float *out = test_poisoned(2 * (size_t)dim);
    TEST_OK(vkbert_model_embed_inputs(m, in, 2, 0, out)); /* made by hand: fine as they are */
    ids[1][2] = VOCAB_SIZE;
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 2, 0, out), "input 1: ids[2]");
    ids[1][2] = -1;
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 2, 0, out), "input 1: ids[2] = -1");
    ids[1][2] = 8;
    types[3] = 2;
    in[0].type_ids = types;
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 2, 0, out), "input 0: type_ids[3]");
    in[0].type_ids = NULL;
    in[1].count = 0;
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 2, 0, out), "input 1 has 0 tokens");
    in[1].ids = many, in[1].count = 65;
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 2, 0, out), "input 1 has 65 tokens");
    in[1].ids = ids[1], in[1].count = 4;
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 0, 0, out), "count");
    expect_refused(ctx, vkbert_model_embed_inputs(m, NULL, 1, 0, out), "inputs");
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 1, 0, NULL), "output");
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 1, 2, out), "normalize is 2");
    in[1].struct_size = 4;
    expect_refused(ctx, vkbert_model_embed_inputs(m, in, 2, 0, out), "inputs[1].struct_size");
    in[1].struct_size = sizeof in[1];
    expect_refused(ctx, vkbert_model_score_inputs(m, in, 2, 0, out), "no classifier");

    vkbert_encoding e = VKBERT_ENCODING_INIT;
    vkbert_encode_options o = VKBERT_ENCODE_OPTIONS_INIT;
    expect_refused(ctx, vkbert_model_encode(m, NULL, NULL, NULL, &e), "text is NULL");
    o.truncate = 2;
    expect_refused(ctx, vkbert_model_encode(m, "a", NULL, &o, &e), "truncate is 2");
    o.truncate = 0;
    o.prompt_name = "nope";
    expect_refused(ctx, vkbert_model_encode(m, "a", NULL, &o, &e), "no prompt named \"nope\"");
    o.prompt = "x";
    expect_refused(ctx, vkbert_model_encode(m, "a", NULL, &o, &e), "not both");
    o = (vkbert_encode_options)VKBERT_ENCODE_OPTIONS_INIT;
    o.struct_size = 4;
    expect_refused(ctx, vkbert_model_encode(m, "a", NULL, &o, &e), "VKBERT_ENCODE_OPTIONS_INIT");
    e.struct_size = 0;
    cr_assert_eq(vkbert_model_encode(m, "a", NULL, NULL, &e), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(vkbert_last_error(NULL), "VKBERT_ENCODING_INIT"), "%s",
                       vkbert_last_error(NULL));
    free(out);
    vkbert_model_destroy(m);
    test_context_done(ctx);
}
