/* Tokenizer folders for the public tokenizer's tests (tok_folder.h). */
#include "tok_folder.h"

#include <criterion/criterion.h>
#include <stdio.h>

static const char *const vocab[] = {TOK_FOLDER_VOCAB};
#define VOCAB_SIZE ((int)(sizeof vocab / sizeof *vocab))

static FILE *open_in(const char *dir, const char *name)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    return f;
}

void tok_folder_write_vocab(const char *dir)
{
    FILE *f = open_in(dir, "vocab.txt");
    for (int i = 0; i < VOCAB_SIZE; i++)
        fprintf(f, "%s\n", vocab[i]);
    cr_assert_eq(fclose(f), 0);
}

static void write_added(FILE *f)
{
    fputs("\"added_tokens\":[", f);
    for (int i = 0; i < 5; i++) /* the special tokens come first in the vocabulary */
        fprintf(f,
                "%s{\"id\":%d,\"content\":\"%s\",\"single_word\":false,\"lstrip\":false,"
                "\"rstrip\":false,\"normalized\":false,\"special\":true}",
                i ? "," : "", i, vocab[i]);
    fputs("],", f);
}

void tok_folder_write_rules_json(const char *dir)
{
    FILE *f = open_in(dir, "tokenizer.json");
    fputs("{\"version\":\"1.0\",\"truncation\":{\"direction\":\"Right\",\"max_length\":6,"
          "\"strategy\":\"LongestFirst\",\"stride\":0},\"padding\":{\"strategy\":{\"Fixed\":8},"
          "\"direction\":\"Right\",\"pad_to_multiple_of\":null,\"pad_id\":0,\"pad_type_id\":0,"
          "\"pad_token\":\"[PAD]\"},",
          f);
    write_added(f);
    fputs("\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,"
          "\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":true},"
          "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"post_processor\":{\"type\":"
          "\"BertProcessing\",\"sep\":[\"[SEP]\",3],\"cls\":[\"[CLS]\",2]},\"decoder\":{\"type\":"
          "\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},\"model\":{\"type\":\"WordPiece\","
          "\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
          "\"max_input_chars_per_word\":100,\"vocab\":{",
          f);
    for (int i = 0; i < VOCAB_SIZE; i++)
        fprintf(f, "%s\"%s\":%d", i ? "," : "", vocab[i], i);
    fputs("}}}", f);
    cr_assert_eq(fclose(f), 0);
}
