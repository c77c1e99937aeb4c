/* A tokenizer folder small enough to know by heart, for the tests of the public tokenizer's
 * offsets, masks, file rules and decoding (the API's, the tool's). */
#ifndef VKBERT_TEST_TOK_FOLDER_H
#define VKBERT_TEST_TOK_FOLDER_H

/* The vocabulary, ids 0 to 9 in this order. */
#define TOK_FOLDER_VOCAB                                                                           \
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", "мир", "no"

/* dir/vocab.txt of TOK_FOLDER_VOCAB (dir must exist). */
void tok_folder_write_vocab(const char *dir);

/* dir/tokenizer.json as transformers saves BERT's (lowercasing BertNormalizer,
 * BertPreTokenizer, BertProcessing, the WordPiece decoder) over TOK_FOLDER_VOCAB, with a
 * truncation section (6 ids) and a padding one (to 8 with [PAD], id 0): the file's rules. */
void tok_folder_write_rules_json(const char *dir);

#endif
