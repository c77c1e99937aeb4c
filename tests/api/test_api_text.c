/* The public tokenizer's offsets, special-tokens and attention masks, the tokenizer.json's own
 * truncation and padding (VKBERT_TOKENIZER_FILE_RULES), and vkbert_tokenizer_decode: what
 * vkbert_tokenizer_encode and _decode hand a caller, on folders small enough to know by heart.
 * (Their parity with HuggingFace tokenizers is tested under tests/parity.) */
#include "support.h"
#include "test_dir.h"
#include "tok_folder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD VKBERT_ERROR_INVALID_ARGUMENT

static vkbert_tokenizer *vocab_folder(char *dir)
{
    test_dir_make(dir, "api_text");
    tok_folder_write_vocab(dir);
    vkbert_tokenizer *t = NULL;
    TEST_OK(vkbert_tokenizer_load(dir, &t));
    return t;
}

/* With the file's rules: truncation to 6 ids, padding to 8. */
static vkbert_tokenizer *json_folder(char *dir)
{
    test_dir_make(dir, "api_text_json");
    tok_folder_write_rules_json(dir);
    vkbert_tokenizer *t = NULL;
    TEST_OK(vkbert_tokenizer_load(dir, &t));
    return t;
}

static void assert_ints(const int32_t *got, const int32_t *want, int n, const char *what)
{
    cr_assert_not_null(got, "%s is NULL", what);
    for (int i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s[%d] is %d, not %d", what, i, got[i], want[i]);
}

/* Offsets count characters: "мир" is 3 of them (6 bytes), so "worlds" starts at 4. */
Test(api_text, offsets_and_masks)
{
    char dir[TEST_DIR_SIZE];
    vkbert_tokenizer *t = vocab_folder(dir);
    vkbert_encoding e = VKBERT_ENCODING_INIT;
    TEST_OK(vkbert_tokenizer_encode(t, "мир worlds", "no", 0, &e));
    const int32_t ids[] = {2, 8, 6, 7, 3, 9, 3}, types[] = {0, 0, 0, 0, 0, 1, 1};
    const int32_t special[] = {1, 0, 0, 0, 1, 0, 1}, ones[] = {1, 1, 1, 1, 1, 1, 1};
    const int32_t offsets[] = {0, 0, 0, 3, 4, 9, 9, 10, 0, 0, 0, 2, 0, 0};
    cr_assert_eq(e.count, 7);
    assert_ints(e.ids, ids, 7, "ids");
    assert_ints(e.type_ids, types, 7, "type_ids");
    assert_ints(e.special_tokens_mask, special, 7, "special_tokens_mask");
    assert_ints(e.offsets, offsets, 14, "offsets");
    assert_ints(e.attention_mask, ones, 7, "attention_mask");
    vkbert_encoding_free(&e);
    cr_assert(!e.special_tokens_mask && !e.offsets && !e.attention_mask);
    vkbert_tokenizer_destroy(t);
    test_dir_remove(dir);
}

/* The file's truncation (6) and padding (to 8) only with VKBERT_TOKENIZER_FILE_RULES; a
 * vocab.txt folder has no such sections, so nothing is cut or added there. */
Test(api_text, file_rules)
{
    char dir[TEST_DIR_SIZE];
    vkbert_tokenizer *t = json_folder(dir);
    vkbert_encoding e = VKBERT_ENCODING_INIT;
    const char *text = "hello world hello world hello";
    TEST_OK(vkbert_tokenizer_encode(t, text, NULL, VKBERT_TOKENIZER_FILE_RULES, &e));
    const int32_t ids[] = {2, 5, 6, 5, 6, 3, 0, 0}, special[] = {1, 0, 0, 0, 0, 1, 1, 1};
    const int32_t mask[] = {1, 1, 1, 1, 1, 1, 0, 0};
    cr_assert_eq(e.count, 8);
    assert_ints(e.ids, ids, 8, "ids");
    assert_ints(e.special_tokens_mask, special, 8, "special_tokens_mask");
    assert_ints(e.attention_mask, mask, 8, "attention_mask");
    cr_assert(e.offsets[12] == 0 && e.offsets[13] == 0 && e.offsets[8] == 18, "offsets");
    vkbert_encoding_free(&e);
    TEST_OK(vkbert_tokenizer_encode(t, text, NULL, -1, &e));
    cr_assert_eq(e.count, 7, "no limit: the file's sections are not applied");
    vkbert_encoding_free(&e);
    cr_assert_eq(vkbert_tokenizer_encode(t, text, NULL, -3, &e), BAD);
    cr_assert(strstr(vkbert_last_error(NULL), "VKBERT_TOKENIZER_FILE_RULES"), "%s",
              vkbert_last_error(NULL));
    vkbert_tokenizer_destroy(t);
    test_dir_remove(dir);
    t = vocab_folder(dir);
    TEST_OK(vkbert_tokenizer_encode(t, text, NULL, VKBERT_TOKENIZER_FILE_RULES, &e));
    cr_assert(e.count == 7 && e.full_count == 7);
    vkbert_encoding_free(&e);
    vkbert_tokenizer_destroy(t);
    test_dir_remove(dir);
}

static void assert_decodes(const vkbert_tokenizer *t, const int32_t *ids, int n, int skip,
                           const char *want)
{
    char *text = (char *)"poison";
    TEST_OK(vkbert_tokenizer_decode(t, ids, n, skip, &text));
    cr_assert_str_eq(text, want);
    vkbert_free(text);
}

Test(api_text, decode)
{
    char dir[TEST_DIR_SIZE];
    vkbert_tokenizer *t = json_folder(dir);
    const int32_t ids[] = {2, 5, 6, 7, 3, 9, 3, 0};
    assert_decodes(t, ids, 8, 1, "hello worlds no");
    assert_decodes(t, ids, 8, 0, "[CLS] hello worlds [SEP] no [SEP] [PAD]");
    assert_decodes(t, ids, 0, 1, "");
    const int32_t bad[] = {5, 10};
    char *text = (char *)"poison";
    cr_assert_eq(vkbert_tokenizer_decode(t, bad, 2, 1, &text), BAD);
    cr_assert_null(text);
    cr_assert(strstr(vkbert_last_error(NULL), "10"), "%s", vkbert_last_error(NULL));
    cr_assert_eq(vkbert_tokenizer_decode(t, NULL, 1, 1, &text), BAD);
    cr_assert_eq(vkbert_tokenizer_decode(t, ids, -1, 1, &text), BAD);
    cr_assert_eq(vkbert_tokenizer_decode(t, ids, 1, 1, NULL), BAD);
    vkbert_tokenizer_destroy(t);
    test_dir_remove(dir);
    /* vocab.txt: the WordPiece decoder's rules */
    t = vocab_folder(dir);
    assert_decodes(t, ids, 7, 1, "hello worlds no");
    vkbert_tokenizer_destroy(t);
    test_dir_remove(dir);
}
