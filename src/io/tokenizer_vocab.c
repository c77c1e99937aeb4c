/* A folder's vocab.txt, made into the pipeline transformers' BertTokenizer builds over it
 * (models/bert/tokenization_bert.py: BertNormalizer from do_lower_case, strip_accents and
 * tokenize_chinese_chars, BertPreTokenizer, WordPiece, BERT's template, the WordPiece decoder),
 * as the same components tokenizer.json gives (tok_pipeline.h), through their JSON; and
 * tok_load, tok_load_config. */
#include "tokenizer_internal.h"

#include "json_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* vocab.txt's lines: one token per line; the line ending (\n or \r\n) is not part of it, and
 * empty lines are tokens too, as in transformers' load_vocab. */
typedef struct line {
    const char *s;
    size_t n;
    int id, skip;
} line;

static int line_order(const void *a, const void *b)
{
    const line *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->s, y->s, n) : 0;
    if (c == 0) c = (x->n > y->n) - (x->n < y->n);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int split_lines(const err_ctx *c, char *text, size_t size, line **out, int *count)
{
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    if (size > 0 && text[size - 1] != '\n') lines++;
    if (lines > INT32_MAX / 2) return io_fail(c, "too many tokens (%zu lines)", lines);
    line *v = *out = malloc((lines ? lines : 1) * sizeof *v);
    if (!v) return io_fail_oom(c, "out of memory for %zu tokens", lines);
    int id = 0;
    for (size_t i = 0, start = 0; i <= size; i++) {
        int line_end = i < size ? text[i] == '\n' : i > start; /* or a last line without \n */
        if (!line_end) continue;
        size_t end = i > start && text[i - 1] == '\r' ? i - 1 : i;
        /* transformers reads the file as UTF-8 and fails; such a token would never match */
        if (tok_utf8_prefix(text + start, end - start) != end - start)
            return io_fail(c, "line %d is not valid UTF-8", id + 1);
        text[end] = '\0';
        v[id] = (line){text + start, end - start, id, 0};
        id++;
        start = i + 1;
    }
    *count = id;
    return 0;
}

/* The lines as WordPiece's vocab, the id the line number; a token given twice keeps its later
 * id, as transformers' dict does (the earlier id then has no token). */
static int vocab_lines(const err_ctx *c, char *text, size_t size, cJSON *vocab)
{
    line *v = NULL;
    int n = 0, rc = split_lines(c, text, size, &v, &n);
    if (rc == 0) qsort(v, (size_t)n, sizeof *v, line_order);
    for (int i = 0; rc == 0 && i + 1 < n; i++)
        v[i].skip = v[i].n == v[i + 1].n && memcmp(v[i].s, v[i + 1].s, v[i].n) == 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (v[i].skip) continue;
        cJSON *number = cJSON_CreateNumber(v[i].id);
        if (!number || !cJSON_AddItemToObject(vocab, v[i].s, number)) {
            cJSON_Delete(number);
            rc = io_fail_oom(c, "out of memory for the vocabulary");
        }
    }
    free(v);
    return rc;
}

static cJSON *add_object(cJSON *o, const char *key, const char *type)
{
    cJSON *v = cJSON_AddObjectToObject(o, key);
    return v && cJSON_AddStringToObject(v, "type", type) ? v : NULL;
}

/* BertTokenizer's pipeline over vocab.txt, as tokenizer.json's sections. */
static int vocab_json(const err_ctx *c, char *text, size_t size, cJSON *root)
{
    cJSON *m = add_object(root, "model", "WordPiece"), *vocab = cJSON_CreateObject();
    if (!m || !vocab || !cJSON_AddItemToObject(m, "vocab", vocab)) {
        cJSON_Delete(vocab);
        return io_fail_oom(c, "out of memory");
    }
    if (vocab_lines(c, text, size, vocab) != 0) return -1;
    cJSON *n = add_object(root, "normalizer", "BertNormalizer");
    cJSON *d = add_object(root, "decoder", "WordPiece");
    int ok = m && n && d && add_object(root, "pre_tokenizer", "BertPreTokenizer") &&
             cJSON_AddStringToObject(m, "continuing_subword_prefix", "##") &&
             cJSON_AddNumberToObject(m, "max_input_chars_per_word", 100) &&
             cJSON_AddTrueToObject(n, "clean_text") && cJSON_AddStringToObject(d, "prefix", "##") &&
             cJSON_AddTrueToObject(d, "cleanup");
    return ok ? 0 : io_fail_oom(c, "out of memory");
}

/* BERT's template over the ids of its [CLS] and [SEP] (transformers' BertTokenizer uses a
 * TemplateProcessing with the same output). */
static int bert_post(const err_ctx *c, tokenizer *t)
{
    cJSON *pp = cJSON_CreateObject();
    int ok = pp && cJSON_AddStringToObject(pp, "type", "BertProcessing");
    const char *keys[2] = {"cls", "sep"};
    const int which[2] = {TOK_CLS, TOK_SEP};
    for (int i = 0; ok && i < 2; i++) {
        cJSON *pair = cJSON_AddArrayToObject(pp, keys[i]);
        cJSON *name = cJSON_CreateString(t->special[which[i]]);
        cJSON *id = cJSON_CreateNumber(tok_id(t, t->special[which[i]]));
        ok = pair && name && id;
        if (ok)
            cJSON_AddItemToArray(pair, name), cJSON_AddItemToArray(pair, id);
        else
            cJSON_Delete(name), cJSON_Delete(id);
    }
    int rc = ok ? tok_post_load(c, pp, &t->post) : io_fail_oom(c, "out of memory");
    cJSON_Delete(pp);
    return rc;
}

int tok_load_vocab(const tok_folder *f, tokenizer *t, char *err, size_t size)
{
    err_ctx c = {f->vocab_path, err, size};
    char *text;
    size_t n;
    cJSON *root = cJSON_CreateObject();
    if (!root) return io_fail_oom(&c, "out of memory");
    int rc = io_read_file(&c, IO_CAP_VOCAB, &text, &n);
    if (rc == 0) {
        rc = vocab_json(&c, text, n, root);
        free(text);
    }
    if (rc == 0) {
        cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
        const char *path;
        const cJSON *unk = tok_folder_get(f, "unk_token", &path),
                    *content = cJSON_GetObjectItemCaseSensitive(unk, "content");
        cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
        const char *unk_name = cJSON_IsString(unk)       ? unk->valuestring
                               : cJSON_IsString(content) ? content->valuestring
                                                         : "[UNK]";
        rc = tok_folder_normalizer(f, norm, 1, err, size);
        if (rc == 0 && !cJSON_AddStringToObject(model, "unk_token", unk_name))
            rc = io_fail_oom(&c, "out of memory");
    }
    if (rc == 0) rc = tok_load_components(&c, t, root);
    cJSON_Delete(root);
    if (rc != 0 || tok_folder_specials(t, f, err, size) != 0 || tok_add_specials(&c, t, 1) != 0)
        return -1;
    return bert_post(&c, t) || tok_prepare_added(&c, t) ? -1 : 0;
}

int tok_load(const char *vocab_path, int do_lower_case, tokenizer **out, char *err, size_t err_size)
{
    err_ctx c = {vocab_path, err, err_size};
    if (!out) return io_fail(&c, "no output given");
    *out = NULL;
    if (!vocab_path) return io_fail(&c, "no path given");
    tok_folder f = {.dir = "."};
    snprintf(f.vocab_path, sizeof f.vocab_path, "%s", vocab_path);
    snprintf(f.config_path, sizeof f.config_path, "%s", vocab_path);
    f.config = cJSON_CreateObject();
    tokenizer *t = tok_new();
    int rc = t && f.config && cJSON_AddBoolToObject(f.config, "do_lower_case", do_lower_case != 0)
                 ? tok_load_vocab(&f, t, err, err_size)
                 : io_fail_oom(&c, "out of memory");
    cJSON_Delete(f.config);
    if (rc != 0) {
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int tok_load_config(const char *tokenizer_config_json_path, int *do_lower_case)
{
    err_ctx c = {tokenizer_config_json_path, NULL, 0}; /* no message: the result says it all */
    char *text;
    size_t size;
    if (!tokenizer_config_json_path || !do_lower_case) return -1;
    if (io_read_file(&c, IO_CAP_TOKENIZER, &text, &size) != 0) return errno == ENOENT ? 0 : -1;
    cJSON *root = cJSON_ParseWithLength(text, size);
    free(text);
    int rc = -1;
    if (cJSON_IsObject(root)) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "do_lower_case");
        rc = v ? (cJSON_IsBool(v) ? 1 : -1) : 0;
        if (rc == 1) *do_lower_case = cJSON_IsTrue(v) ? 1 : 0;
    }
    cJSON_Delete(root);
    return rc;
}
