/* `vkbert tokenize`'s offsets and special-tokens mask, its --file-rules, `vkbert decode`, and
 * the tokenizer's components in `vkbert info`: the tool prints what the public calls give
 * (vkbert_tokenizer_encode, _decode, vkbert_model_describe), in the documented shapes. */
#define _POSIX_C_SOURCE 200809L

#include "support.h"
#include "test_dir.h"
#include "tiny_bert.h"
#include "tok_folder.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char tmp[TEST_DIR_SIZE], vocab_dir[TEST_DIR_SIZE + 16], json_dir[TEST_DIR_SIZE + 16];

static void setup(void)
{
    test_dir_make(tmp, "cli_tokens");
    snprintf(vocab_dir, sizeof vocab_dir, "%s/vocab", tmp);
    snprintf(json_dir, sizeof json_dir, "%s/json", tmp);
    mkdir(vocab_dir, 0700);
    mkdir(json_dir, 0700);
    tok_folder_write_vocab(vocab_dir);
    tok_folder_write_rules_json(json_dir);
}

static void teardown(void)
{
    test_dir_remove(tmp);
}

TestSuite(cli_tokens, .init = setup, .fini = teardown, .timeout = 120);

static cJSON *run_json(const char *const *args)
{
    test_cli_result r;
    test_run_cli(tmp, args, &r);
    cr_assert_eq(r.code, 0, "%s failed with %d:\n%s", args[0], r.code, r.err);
    cJSON *json = cJSON_Parse(r.out);
    cr_assert_not_null(json, "not JSON: %s", r.out);
    return json;
}

static void assert_row(const cJSON *j, const char *key, int row, const int32_t *want, int n)
{
    const cJSON *v = cJSON_GetArrayItem(cJSON_GetObjectItem(j, key), row);
    cr_assert_eq(cJSON_GetArraySize(v), n, "%s[%d] has %d entries, not %d", key, row,
                 cJSON_GetArraySize(v), n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(cJSON_GetArrayItem(v, i)->valueint, want ? want[i] : 1, "%s[%d][%d]", key, row,
                     i);
}

/* Every row of the tool's JSON against the library's encoding of the same text. */
static void assert_as_api(const cJSON *j, int row, const char *dir, const char *text,
                          const char *pair, int max_length)
{
    vkbert_tokenizer *t = NULL;
    TEST_OK(vkbert_tokenizer_load(dir, &t));
    vkbert_encoding e = VKBERT_ENCODING_INIT;
    TEST_OK(vkbert_tokenizer_encode(t, text, pair, max_length, &e));
    assert_row(j, "input_ids", row, e.ids, e.count);
    assert_row(j, "token_type_ids", row, e.type_ids, e.count);
    assert_row(j, "attention_mask", row, e.attention_mask, e.count);
    assert_row(j, "special_tokens_mask", row, e.special_tokens_mask, e.count);
    const cJSON *offsets = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "offsets"), row);
    cr_assert_eq(cJSON_GetArraySize(offsets), e.count);
    for (int i = 0; i < e.count; i++) {
        const cJSON *span = cJSON_GetArrayItem(offsets, i);
        cr_assert_eq(cJSON_GetArraySize(span), 2);
        cr_assert(cJSON_GetArrayItem(span, 0)->valueint == e.offsets[2 * i] &&
                      cJSON_GetArrayItem(span, 1)->valueint == e.offsets[2 * i + 1],
                  "offsets[%d][%d]", row, i);
    }
    vkbert_encoding_free(&e);
    vkbert_tokenizer_destroy(t);
}

Test(cli_tokens, tokenize_prints_offsets_and_special_tokens)
{
    const char *args[] = {"tokenize", "--model",    vocab_dir, "--pair",
                          "no",       "мир worlds", "hello",   NULL};
    cJSON *j = run_json(args);
    assert_as_api(j, 0, vocab_dir, "мир worlds", "no", 0);
    assert_as_api(j, 1, vocab_dir, "hello", "no", 0);
    /* by heart: [CLS] мир world ##s [SEP] no [SEP], offsets in characters */
    const int32_t special[] = {1, 0, 0, 0, 1, 0, 1};
    assert_row(j, "special_tokens_mask", 0, special, 7);
    const cJSON *worlds =
        cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "offsets"), 0), 2);
    cr_assert(cJSON_GetArrayItem(worlds, 0)->valueint == 4 &&
              cJSON_GetArrayItem(worlds, 1)->valueint == 9);
    cJSON_Delete(j);
}

Test(cli_tokens, file_rules_truncate_and_pad_as_the_file_says)
{
    const char *text = "hello world hello world hello";
    const char *args[] = {"tokenize", "--model", json_dir, "--file-rules", text, NULL};
    cJSON *j = run_json(args);
    assert_as_api(j, 0, json_dir, text, NULL, VKBERT_TOKENIZER_FILE_RULES);
    const int32_t mask[] = {1, 1, 1, 1, 1, 1, 0, 0};
    assert_row(j, "attention_mask", 0, mask, 8);
    cJSON_Delete(j);
    const char *plain[] = {"tokenize", "--model", json_dir, text, NULL};
    j = run_json(plain);
    assert_as_api(j, 0, json_dir, text, NULL, 0);
    assert_row(j, "attention_mask", 0, NULL, 7);
    cJSON_Delete(j);
    const char *both[] = {"tokenize",      "--model", json_dir, "--file-rules",
                          "--no-truncate", text,      NULL};
    test_cli_result r;
    test_run_cli(tmp, both, &r);
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "--file-rules"), "%s", r.err);
}

/* The tool's JSON string, as the library decodes the same ids. */
static void assert_decodes(const char *const *args, const int32_t *ids, int n, int skip)
{
    vkbert_tokenizer *t = NULL;
    TEST_OK(vkbert_tokenizer_load(json_dir, &t));
    char *want = NULL;
    TEST_OK(vkbert_tokenizer_decode(t, ids, n, skip, &want));
    cJSON *j = run_json(args);
    cr_assert(cJSON_IsString(j), "%s", cJSON_PrintUnformatted(j));
    cr_assert_str_eq(j->valuestring, want);
    cJSON_Delete(j);
    vkbert_free(want);
    vkbert_tokenizer_destroy(t);
}

Test(cli_tokens, decode_prints_the_text_as_json)
{
    const int32_t ids[] = {2, 5, 6, 7, 8, 3};
    const char *args[] = {"decode", "--model", json_dir, "2", "5", "6", "7", "8", "3", NULL};
    assert_decodes(args, ids, 6, 1);
    const char *keep[] = {
        "decode", "--model", json_dir, "--keep-special-tokens", "2", "5", "6", "7", "8", "3", NULL};
    assert_decodes(keep, ids, 6, 0);
    test_cli_result r;
    const char *bad[] = {"decode", "--model", json_dir, "5", "99", NULL};
    test_run_cli(tmp, bad, &r);
    cr_assert_eq(r.code, 1, "%s", r.err);
    cr_assert(strstr(r.err, "99"), "the message names the id: %s", r.err);
    const char *word[] = {"decode", "--model", json_dir, "5", "five", NULL};
    test_run_cli(tmp, word, &r);
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "\"five\""), "%s", r.err);
}

/* info names each stage of the tokenizer, in the JSON and in the text. */
Test(cli_tokens, info_names_the_tokenizer_components)
{
    static const char *const vocab[] = {TOK_FOLDER_VOCAB};
    bert_config c = tiny_bert_config(16, 1, 2, 20, 40, 10);
    tiny_bert_folder(json_dir, &c, 1, vocab, 10, NULL);
    const char *args[] = {"info", "--model", json_dir, "--json", NULL};
    cJSON *j = run_json(args);
    const cJSON *components =
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "tokenizer"), "components");
    const char *const keys[] = {"model", "normalizer", "pre_tokenizer", "post_processor",
                                "decoder"};
    const char *const want[] = {"WordPiece", "BertNormalizer", "BertPreTokenizer", "BertProcessing",
                                "WordPiece"};
    for (int i = 0; i < 5; i++) {
        const cJSON *v = cJSON_GetObjectItem(components, keys[i]);
        cr_assert(cJSON_IsString(v), "components.%s is not a string", keys[i]);
        cr_assert(strstr(v->valuestring, want[i]), "components.%s is \"%s\"", keys[i],
                  v->valuestring);
    }
    cJSON_Delete(j);
    test_cli_result r;
    const char *text[] = {"info", "--model", json_dir, NULL};
    test_run_cli(tmp, text, &r);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "components") && strstr(r.out, "BertProcessing"), "%s", r.out);
}
