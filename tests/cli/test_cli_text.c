/* End-to-end tests of `vkbert info`, `embed`, `rerank`, `classify` (of texts and of pairs)
 * and `tokenize` on folders laid out as sentence-transformers and transformers save them: the
 * tool gives what the C API gives (which test_model checks against the double reference), in
 * the documented shapes. */
#define _POSIX_C_SOURCE 200809L

#include "io/bert_model.h"
#include "npy.h"
#include "st_folder.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                                    "cat",   "sat",   "on",    "mat",   "a",      "dog",
                                    "ran",   "query", ":",     "hello", "world",  "!"};
#define VOCAB_SIZE ((int)(sizeof vocab / sizeof *vocab))

static const char *const docs[] = {"the cat sat on the mat", "a dog ran", "hello world !",
                                   "the mat"};
#define DOCS 4

static char tmp[TEST_DIR_SIZE];
static char st_dir[256], classifier_dir[256], reranker_dir[256];
static st_dense dense;

static void write_bert(const char *dir, int labels, uint64_t seed)
{
    bert_config c = tiny_bert_config(16, 1, 2, 20, 40, VOCAB_SIZE);
    tiny_bert_classifier(&c, labels);
    tiny_bert_folder(dir, &c, seed, vocab, VOCAB_SIZE, NULL);
}

static const st_prompt prompts[] = {{"query", "query: "}};

static void setup(void)
{
    test_dir_make(tmp, "cli_text");
    snprintf(st_dir, sizeof st_dir, "%s/st", tmp);
    snprintf(classifier_dir, sizeof classifier_dir, "%s/classifier", tmp);
    snprintf(reranker_dir, sizeof reranker_dir, "%s/reranker", tmp);
    mkdir(st_dir, 0700);
    dense = (st_dense){32, 12, 1, ST_ACT_TANH, NULL, NULL};
    st_folder_dense_random(&dense, 3);
    st_folder_spec spec = {.pool_modes = ST_POOL_CLS | ST_POOL_MEAN,
                           .word_embedding_dimension = 16,
                           .include_prompt = 1,
                           .dense_count = 1,
                           .dense = &dense,
                           .normalize = 1,
                           .max_seq_length = 12,
                           .do_lower_case = -1,
                           .prompt_count = 1,
                           .prompts = prompts};
    char bert_dir[512], err[512];
    st_folder_transformer_dir(st_dir, &spec, bert_dir, sizeof bert_dir);
    write_bert(bert_dir, 0, 1);
    cr_assert_eq(st_folder_write(st_dir, &spec, err, sizeof err), 0, "%s", err);
    write_bert(classifier_dir, 3, 2);
    write_bert(reranker_dir, 1, 3);
}

static void teardown(void)
{
    st_folder_dense_free(&dense);
    test_dir_remove(tmp);
}

TestSuite(cli_text, .init = setup, .fini = teardown, .timeout = 120);

static cJSON *run_json(const char *const *args)
{
    test_cli_result r;
    test_run_cli(tmp, args, &r);
    cr_assert_eq(r.code, 0, "%s failed with %d:\n%s", args[0], r.code, r.err);
    cJSON *json = cJSON_Parse(r.out);
    cr_assert_not_null(json, "not JSON: %s", r.out);
    return json;
}

static vkbert_model *load(vkbert_context *ctx, const char *dir)
{
    vkbert_model *m = NULL;
    vkbert_status status = vkbert_model_load(ctx, dir, NULL, &m);
    cr_assert_eq(status, VKBERT_OK, "%s", vkbert_last_error(ctx));
    return m;
}

/* ---- info ---- */

Test(cli_text, info_json_says_what_the_folder_said)
{
    const char *args[] = {"info", "--model", st_dir, "--json", NULL};
    cJSON *j = run_json(args);
    const cJSON *pooling = cJSON_GetObjectItem(j, "pooling");
    cr_assert_eq(cJSON_GetArraySize(pooling), 2);
    cr_assert_str_eq(cJSON_GetArrayItem(pooling, 0)->valuestring, "cls_token");
    cr_assert_str_eq(cJSON_GetArrayItem(pooling, 1)->valuestring, "mean_tokens");
    cr_assert_eq(cJSON_GetObjectItem(j, "max_length")->valueint, 12);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "normalize")));
    cr_assert_eq(cJSON_GetObjectItem(j, "embedding_dimension")->valueint, 12);
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "dense"), 0);
    cr_assert_eq(cJSON_GetObjectItem(d, "in_features")->valueint, 32);
    cr_assert_str_eq(cJSON_GetObjectItem(d, "activation")->valuestring,
                     st_activation_name(ST_ACT_TANH));
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prompts"), "query")->valuestring,
                     "query: ");
    const cJSON *tok = cJSON_GetObjectItem(j, "tokenizer");
    cr_assert_str_eq(cJSON_GetObjectItem(tok, "source")->valuestring, "vocab.txt");
    const cJSON *mask = cJSON_GetObjectItem(cJSON_GetObjectItem(tok, "special_tokens"), "mask");
    cr_assert_eq(cJSON_GetObjectItem(mask, "id")->valueint, 4);
    /* BERT 16 x 1 layer: embeddings, one layer, the pooler; then the Dense module. */
    double h = 16, i = 20,
           bert = VOCAB_SIZE * h + 40 * h + 2 * h + 2 * h +
                  (4 * (h * h + h) + 2 * h + (i * h + i) + (h * i + h) + 2 * h) + (h * h + h);
    cr_assert_eq(cJSON_GetObjectItem(j, "parameters")->valuedouble, bert + 32 * 12 + 12);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "precision")->valuestring, "fp32");
    cJSON_Delete(j);

    test_cli_result r;
    const char *text[] = {"info", "--model", classifier_dir, NULL};
    test_run_cli(tmp, text, &r);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "BertForSequenceClassification"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "\"LABEL_0\", \"LABEL_1\", \"LABEL_2\""), "%s", r.out);
}

/* ---- embed ---- */

Test(cli_text, embed_gives_the_apis_embeddings)
{
    char out[300];
    snprintf(out, sizeof out, "%s/e.npy", tmp);
    const char *args[] = {"embed", "--model", st_dir,  "--prompt-name", "query", "--output", out,
                          "--",    docs[0],   docs[1], docs[2],         docs[3], NULL};
    test_cli_result r;
    test_run_cli(tmp, args, &r);
    cr_assert_eq(r.code, 0, "%s", r.err);
    npy_array e;
    char err[512];
    cr_assert_eq(npy_load(out, &e, err, sizeof err), 0, "%s", err);
    cr_assert(e.ndim == 2 && e.shape[0] == DOCS && e.shape[1] == 12);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, st_dir);
    float want[DOCS * 12];
    vkbert_embed_options query = VKBERT_EMBED_OPTIONS_INIT;
    query.prompt_name = "query";
    TEST_OK(vkbert_model_embed(m, docs, DOCS, &query, want));
    for (int k = 0; k < DOCS * 12; k++)
        cr_assert_float_eq(((const float *)e.data)[k], want[k], 1e-6, "element %d", k);
    vkbert_model_destroy(m);
    test_context_done(ctx);
    npy_free(&e);
}

/* BertNormalizer's clean_text drops U+0000: a stdin line with NUL bytes embeds as the line
 * without them, not cut at the first. */
Test(cli_text, embed_stdin_line_drops_nul_bytes)
{
    char in[300];
    snprintf(in, sizeof in, "%s/in.txt", tmp);
    FILE *f = fopen(in, "wb");
    cr_assert_not_null(f);
    static const char lines[] = "the c\0at sat\0\nhello\n";
    fwrite(lines, 1, sizeof lines - 1, f);
    fclose(f);
    const char *args[] = {"embed", "--model", st_dir, NULL};
    test_cli_result r;
    test_run_cli_stdin(tmp, in, args, &r);
    unlink(in);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cJSON *j = cJSON_Parse(r.out);
    const cJSON *rows = cJSON_GetObjectItem(j, "embeddings");
    cr_assert_eq(cJSON_GetArraySize(rows), 2, "%s", r.out);
    const char *texts[] = {"the cat sat", "hello"};
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, st_dir);
    float want[2 * 12];
    TEST_OK(vkbert_model_embed(m, texts, 2, NULL, want));
    for (int k = 0; k < 2 * 12; k++) {
        const cJSON *v = cJSON_GetArrayItem(cJSON_GetArrayItem(rows, k / 12), k % 12);
        cr_assert_float_eq(v->valuedouble, want[k], 1e-6, "element %d", k);
    }
    vkbert_model_destroy(m);
    test_context_done(ctx);
    cJSON_Delete(j);
}

/* ---- rerank, classify ---- */

Test(cli_text, rerank_json_is_sorted_and_matches_the_api)
{
    const char *args[] = {"rerank", "--model", reranker_dir, "--query", "the cat", "--json",
                          docs[0],  docs[1],   docs[2],      docs[3],   NULL};
    cJSON *j = run_json(args);
    cr_assert_eq(cJSON_GetArraySize(j), DOCS);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, reranker_dir);
    float want[DOCS];
    TEST_OK(vkbert_model_rerank(m, "the cat", docs, DOCS, 0, want));
    int seen = 0;
    double last = 2;
    for (const cJSON *item = j->child; item; item = item->next) {
        int index = cJSON_GetObjectItem(item, "index")->valueint;
        double score = cJSON_GetObjectItem(item, "score")->valuedouble;
        cr_assert(index >= 0 && index < DOCS && !(seen & (1 << index)), "index %d", index);
        seen |= 1 << index;
        cr_assert(score <= last, "not sorted: %g after %g", score, last);
        cr_assert_float_eq(score, want[index], 1e-6, "document %d", index);
        last = score;
    }
    vkbert_model_destroy(m);
    test_context_done(ctx);
    cJSON_Delete(j);
    const char *classifier[] = {"rerank", "--model", classifier_dir, "--query", "q", "x", NULL};
    test_cli_result r;
    test_run_cli(tmp, classifier, &r);
    cr_assert_eq(r.code, 1);
    cr_assert_not_null(strstr(r.err, "one label"), "%s", r.err);
}

Test(cli_text, classify_json_lists_labels_by_score)
{
    const char *args[] = {"classify", "--model", classifier_dir, "--json", docs[0], docs[1], NULL};
    cJSON *j = run_json(args);
    cr_assert_eq(cJSON_GetArraySize(j), 2);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, classifier_dir);
    float want[2 * 3];
    TEST_OK(vkbert_model_classify(m, docs, 2, want));
    int t = 0;
    for (const cJSON *row = j->child; row; row = row->next, t++) {
        cr_assert_eq(cJSON_GetArraySize(row), 3);
        double sum = 0, last = 2;
        for (const cJSON *item = row->child; item; item = item->next) {
            const char *label = cJSON_GetObjectItem(item, "label")->valuestring;
            double score = cJSON_GetObjectItem(item, "score")->valuedouble;
            int index = label[6] - '0'; /* "LABEL_i" */
            cr_assert_float_eq(score, want[t * 3 + index], 1e-6, "text %d %s", t, label);
            cr_assert(score <= last);
            sum += score, last = score;
        }
        cr_assert_float_eq(sum, 1.0, 1e-5, "softmax sums to %g", sum);
    }
    vkbert_model_destroy(m);
    test_context_done(ctx);
    cJSON_Delete(j);
}

/* --query: each (query, text) pair, scored as vkbert_model_score_inputs scores it. */
Test(cli_text, classify_query_scores_pairs)
{
    const char *args[] = {"classify", "--model", classifier_dir, "--query",
                          "the cat",  "--json",  docs[1],        NULL};
    cJSON *j = run_json(args);
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = load(ctx, classifier_dir);
    vkbert_encoding in = VKBERT_ENCODING_INIT;
    float want[3];
    TEST_OK(vkbert_model_encode(m, "the cat", docs[1], NULL, &in));
    TEST_OK(vkbert_model_score_inputs(m, &in, 1, 0, want));
    for (const cJSON *item = j->child->child; item; item = item->next) {
        const char *label = cJSON_GetObjectItem(item, "label")->valuestring;
        double score = cJSON_GetObjectItem(item, "score")->valuedouble;
        cr_assert_float_eq(score, want[label[6] - '0'], 1e-6, "%s", label);
    }
    vkbert_encoding_free(&in);
    vkbert_model_destroy(m);
    test_context_done(ctx);
    cJSON_Delete(j);
}

/* ---- tokenize ---- */

Test(cli_text, tokenize_keeps_special_tokens_whole)
{
    const char *args[] = {"tokenize", "--model", st_dir, "the [MASK] sat[SEP]", NULL};
    cJSON *j = run_json(args);
    const cJSON *ids = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "input_ids"), 0);
    const int want[] = {2, 5, 4, 7, 3, 3}; /* [CLS] the [MASK] sat [SEP] [SEP] */
    cr_assert_eq(cJSON_GetArraySize(ids), 6, "%s", cJSON_PrintUnformatted(j));
    for (int i = 0; i < 6; i++)
        cr_assert_eq(cJSON_GetArrayItem(ids, i)->valueint, want[i], "id %d", i);
    cJSON_Delete(j);
}

/* ---- errors ---- */

/* Output that cannot be written fails every command, whatever it prints. */
Test(cli_text, a_full_stdout_fails_every_command)
{
    if (access("/dev/full", W_OK) != 0) {
        cr_log_warn("skipped: no writable /dev/full on this system");
        cr_skip_test("no writable /dev/full on this system");
    }
    const char *const commands[][8] = {
        {"embed", "--model", st_dir, "the cat", NULL},
        {"rerank", "--model", reranker_dir, "--query", "the cat", "a dog", NULL},
        {"classify", "--model", classifier_dir, "the cat", NULL},
        {"tokenize", "--model", st_dir, "the cat", NULL},
        {"decode", "--model", st_dir, "5", "6", NULL},
        {"info", "--model", st_dir, NULL},
        {"devices", NULL},
        {"--version", NULL},
        {"--help", NULL},
    };
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        test_cli_result r;
        test_run_cli_to(tmp, "/dev/full", commands[i], &r);
        cr_assert_eq(r.code, 1, "%s exited %d:\n%s", commands[i][0], r.code, r.err);
        cr_assert(strstr(r.err, "vkbert: writing the output failed: "), "%s: %s", commands[i][0],
                  r.err);
    }
}

Test(cli_text, unknown_module_type_names_the_file)
{
    char path[300];
    snprintf(path, sizeof path, "%s/modules.json", st_dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
          "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", "
          "\"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.LSTM\"}]",
          f);
    fclose(f);
    const char *args[] = {"embed", "--model", st_dir, "hi", NULL};
    test_cli_result r;
    test_run_cli(tmp, args, &r);
    cr_assert_eq(r.code, 1);
    cr_assert_not_null(strstr(r.err, "modules.json"), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "LSTM"), "%s", r.err);
}
