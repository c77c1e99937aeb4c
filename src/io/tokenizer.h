/* The tokenizer of a model folder, as HuggingFace tokenizers' Tokenizer runs it (the Rust crate
 * that AutoTokenizer's fast tokenizers are): added tokens kept whole, then the tokenizer.json's
 * normalizer, pre-tokenizer, model (WordPiece, BPE, Unigram), truncation, post-processor and
 * padding, each a component of tok_pipeline.h; decode through its decoder. A folder with only
 * vocab.txt gets BERT's pipeline, as transformers builds it. docs/tokenizers.md says what is
 * read and what is refused. Plain C, no Vulkan. A loaded tokenizer is read-only: any number of
 * threads may encode with it at once. */
#ifndef VKBERT_IO_TOKENIZER_H
#define VKBERT_IO_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer;

/* One encoded input, `count` entries in each array (owned). */
typedef struct tok_ids {
    int32_t *ids;
    int32_t *type_ids; /* from the template: for BERT 0 for [CLS] A [SEP], 1 for B [SEP] */
    int32_t *mask;     /* 1, but 0 for padding that tokenizer.json's padding section adds */
    int32_t *special;  /* 1 for the tokens the post-processor (or padding) adds */
    /* [2 * count]: each token's [start, stop) in characters (code points) of the text it came
     * from (text or text_pair), as tokenizers' Python Encoding.offsets; (0, 0) for added ones */
    int32_t *offsets;
    int count;
    int full_count; /* tok_encode: the count had nothing been truncated */
} tok_ids;

/* Loads a model folder: DIR/tokenizer.json when present, else DIR/vocab.txt; either way
 * DIR/tokenizer_config.json and DIR/special_tokens_map.json when present (model_max_length,
 * special tokens, do_lower_case and the like; see tokenizer_json.c for what each path reads).
 * A component or option outside the supported ones is refused by name. A folder with only
 * SentencePiece's model file is refused with the way to make its tokenizer.json. On failure
 * returns -1, sets *out to NULL and writes "<file>: <problem>" to err ("<dir>/tokenizer.json:
 * normalizer: ..."). */
int tok_load_dir(const char *dir, tokenizer **out, char *err, size_t err_size);

/* Reads vocab.txt alone: one token per line, its id the line number from 0 (a trailing \r is
 * stripped; empty lines are tokens too, as in HuggingFace), with BertTokenizerFast's settings
 * and lowercasing (and accent stripping) when do_lower_case. [UNK], [CLS], [SEP] and [PAD]
 * must be present. On failure returns -1, sets *out to NULL and writes "<path>: <problem>". */
int tok_load(const char *vocab_path, int do_lower_case, tokenizer **out, char *err,
             size_t err_size);
void tok_free(tokenizer *t);

/* Sets *do_lower_case from tokenizer_config.json's boolean "do_lower_case". Returns 1 when it
 * was read, 0 when the file or the key is absent (the value unchanged; BERT uncased models
 * want 1), -1 when the file cannot be read or parsed or the key is not a boolean (unchanged). */
int tok_load_config(const char *tokenizer_config_json_path, int *do_lower_case);

/* The id of `token` (an added token's first, then the vocabulary's), or -1 when unknown. */
int32_t tok_id(const tokenizer *t, const char *token);
/* The token of `id`, or NULL when no token has it. */
const char *tok_token(const tokenizer *t, int32_t id);
/* The padding token's id (tokenizer_config.json's pad_token, "[PAD]" by default). */
int32_t tok_pad_id(const tokenizer *t);

/* A special token: its text (NULL when unset) and id (-1 when not in the vocabulary). */
typedef struct tok_special {
    const char *text;
    int32_t id;
} tok_special;

/* What a loaded tokenizer does, for `vkbert info`. Strings belong to the tokenizer. */
typedef struct tok_info {
    const char *source; /* "tokenizer.json" or "vocab.txt" */
    int32_t vocab_size; /* one past the largest id, added tokens included */
    int normalizer;     /* 0 when there is none: the flags below are all 0 then */
    int lowercase, strip_accents, handle_chinese_chars, clean_text;
    int pre_tokenizer; /* 1: BertPreTokenizer; 0: none, the whole text is one word */
    const char *continuing_subword_prefix;
    size_t max_input_chars_per_word;
    int model_max_length; /* 0 when the folder gives none */
    tok_special unk, sep, pad, cls, mask;
    int added_tokens; /* strings kept whole when they appear in text */
    int added_single; /* special tokens the template adds to one text */
    int added_pair;   /* and to a pair */
    /* Each component as its describe call writes it ("Unigram", "Sequence[Precompiled,
     * Replace]"), or "none"; strings owned by the tokenizer. */
    const char *model_desc, *normalizer_desc, *pre_tokenizer_desc, *post_processor_desc,
        *decoder_desc;
} tok_info;

void tok_describe(const tokenizer *t, tok_info *out);

/* Encodes `text` (and `text_pair`, which may be NULL), both UTF-8, into at most `max_len` ids,
 * truncating like HuggingFace's fast "longest_first" (tokenizers' truncation.rs): the room
 * left by the template's special tokens is shared so that the shorter text keeps its length
 * when it fits in half, else each gets half and the longer (the second on a tie) the odd one.
 * A single text is cut at the room. max_len must leave room for the special tokens (2, or 3
 * with a pair, for BERT); pass INT_MAX for no truncation. On failure returns -1, leaves *out
 * zeroed and writes the problem (e.g. "text: invalid UTF-8 at byte 7") to err. */
int tok_encode(const tokenizer *t, const char *text, const char *text_pair, int max_len,
               tok_ids *out, char *err, size_t err_size);
/* tok_encode's max_len for the tokenizer.json's own truncation and padding sections (none when
 * absent), as tokenizers' Tokenizer.from_file(path).encode applies them. Any other max_len
 * replaces both, as transformers does on every call. */
#define TOK_FILE_RULES (-1)
/* tok_encode, cutting each text from its start when `left` (tokenizers' TruncationDirection
 * Left: the same lengths kept, the special tokens kept). */
int tok_encode_cut(const tokenizer *t, const char *text, const char *text_pair, int max_len,
                   int left, tok_ids *out, char *err, size_t err_size);
void tok_ids_free(tok_ids *ids);

/* tokenizers' Tokenizer.decode: the tokens of ids[0..count) (special ones left out when
 * skip_special), through the tokenizer.json's decoder, or joined by spaces when it has none (the
 * WordPiece decoder's rules for vocab.txt folders). *text is allocated, NUL-terminated (free
 * it). An id outside the vocabulary is an error naming it. */
int tok_decode(const tokenizer *t, const int32_t *ids, size_t count, int skip_special, char **text,
               char *err, size_t err_size);

#endif
