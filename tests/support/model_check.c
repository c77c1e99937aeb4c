/* See model_check.h. */
#include "model_check.h"

#include "reference_bert.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

const char *const model_vocab[MODEL_VOCAB_SIZE] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",     "sat",   "on",    "mat",  "a",
    "dog",   "ran",   "far",   "away",  "query",  ":",   "passage", "hello", "world", "!",    ".",
    ",",     "big",   "small", "red",   "blue",   "##s", "##ing",   "run",   "fast",  "slow", "and",
    "or",    "is",    "was",   "it",    "good",   "bad", "very",    "Cat"};

const char *const model_texts[MODEL_TEXT_COUNT] = {
    "the cat sat on the mat.",
    "a dog ran far away!",
    "hello",
    "the big red dog and the small blue cat were running very fast , or slow .",
    "it was good",
    "cats",
    "hello world hello world hello world hello world hello world hello world hello world",
};

/* A BERT folder at dir (random weights kept in *w for the reference). */
void model_write_bert(const char *dir, const bert_config *c, bert_weights *w, uint64_t seed)
{
    tiny_bert_folder(dir, c, seed, model_vocab, MODEL_VOCAB_SIZE, w);
}

/* A sentence-transformers folder in tmp/name around a random BERT. */
void model_write_st(const char *tmp, const char *name, const st_folder_spec *spec,
                    const bert_config *c, bert_weights *w, char *dir)
{
    char bert_dir[512], err[512];
    snprintf(dir, 256, "%s/%s", tmp, name);
    mkdir(dir, 0700);
    st_folder_transformer_dir(dir, spec, bert_dir, sizeof bert_dir);
    model_write_bert(bert_dir, c, w, 11);
    cr_assert_eq(st_folder_write(dir, spec, err, sizeof err), 0, "%s", err);
}

/* Embeds `count` texts with the model at dir and checks each against the reference of the
 * text with `prefix` prepended, truncated to max_len. */
void model_check_embed(const char *dir, const vkbert_model_config *config,
                       const vkbert_embed_options *options, const bert_config *c,
                       const bert_weights *w, const ref_st_pipeline *p, const char *prefix,
                       const char *const *in, int count, int max_len)
{
    vkbert_context *ctx = test_context(0);
    vkbert_model *m = NULL;
    vkbert_status status = vkbert_model_load(ctx, dir, config, &m);
    cr_assert_eq(status, VKBERT_OK, "load %s: %s", dir, vkbert_last_error(ctx));
    int dim = vkbert_model_dimension(m);
    float *got = test_poisoned((size_t)count * dim);
    status = vkbert_model_embed(m, in, count, options, got);
    cr_assert_eq(status, VKBERT_OK, "embed: %s", vkbert_last_error(ctx));
    double *want = malloc(4096 * sizeof *want);
    double bound = config && config->precision == VKBERT_PRECISION_FP16 ? 3e-3 : 1e-4;
    for (int i = 0; i < count; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", prefix ? prefix : "", in[i]);
        vkbert_encoding e = VKBERT_ENCODING_INIT;
        TEST_OK(vkbert_tokenizer_encode(vkbert_model_tokenizer(m), text, NULL, max_len, &e));
        int width = ref_st_embedding(c, w, p, e.ids, e.type_ids, e.count, want);
        cr_assert_eq(width, dim, "width %d, dimension %d", width, dim);
        char what[64];
        snprintf(what, sizeof what, "%s text %d", dir, i);
        test_assert_close(got + (size_t)i * dim, want, (size_t)dim, bound, what);
        vkbert_encoding_free(&e);
    }
    free(want), free(got);
    vkbert_model_destroy(m);
    test_context_done(ctx);
}

void model_reference_logits(const bert_config *c, const bert_weights *w, const vkbert_encoding *e,
                            double *logits)
{
    int h = c->hidden_size;
    double *hidden = malloc((size_t)e->count * h * sizeof *hidden);
    double *pooled = malloc((size_t)h * sizeof *pooled);
    ref_bert(c, w, 1, e->count, e->ids, e->type_ids, NULL, hidden, pooled);
    ref_st_dense(w->classifier_w, w->classifier_b, h, c->num_labels, ST_ACT_IDENTITY, pooled,
                 logits);
    free(hidden), free(pooled);
}

vkbert_model *model_load(vkbert_context *ctx, const char *dir)
{
    vkbert_model *m = NULL;
    vkbert_status status = vkbert_model_load(ctx, dir, NULL, &m);
    cr_assert_eq(status, VKBERT_OK, "load %s: %s", dir, vkbert_last_error(ctx));
    return m;
}
