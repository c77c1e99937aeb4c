#define _XOPEN_SOURCE 700 /* mkdir */

#include "tiny_bert.h"

#include <criterion/criterion.h>

#include "io/half.h"

#include <stdio.h>
#include <sys/stat.h>

bert_config tiny_bert_config(int hidden, int layers, int heads, int intermediate, int positions,
                             int vocab_size)
{
    return (bert_config){.hidden_size = hidden,
                         .num_hidden_layers = layers,
                         .num_attention_heads = heads,
                         .intermediate_size = intermediate,
                         .max_position_embeddings = positions,
                         .type_vocab_size = 2,
                         .vocab_size = vocab_size,
                         .layer_norm_eps = 1e-12,
                         .hidden_act = "gelu"};
}

void tiny_bert_classifier(bert_config *c, int labels)
{
    if (!labels) return;
    snprintf(c->architecture, sizeof c->architecture, "BertForSequenceClassification");
    c->num_labels = labels;
}

bert_config tiny_bert_small(int vocab_size, int labels)
{
    bert_config c = tiny_bert_config(22, 2, 2, 36, 64, vocab_size);
    tiny_bert_classifier(&c, labels);
    return c;
}

/* Each weight replaced by the binary16 value the F16 file holds. */
static void round_to_f16(const bert_config *c, bert_weights *w)
{
    for (int i = 0; i < bert_tensor_count(w); i++) {
        bert_tensor t;
        bert_tensor_at(c, w, i, &t);
        size_t n = (size_t)t.shape[0] * (size_t)(t.ndim == 2 ? t.shape[1] : 1);
        for (size_t k = 0; k < n; k++)
            t.data[k] = half_to_float(float_to_half(t.data[k]));
    }
}

void tiny_bert_write(const char *dir, const tiny_bert *spec, bert_weights *w)
{
    bert_weights own;
    bert_weights *weights = w ? w : &own;
    char err[512] = "";
    mkdir(dir, 0777); /* an existing folder (mkdtemp's) is used as it is */
    cr_assert_eq(bert_weights_random(&spec->config, spec->seed, weights), 0);
    if (spec->edit) spec->edit(&spec->config, weights);
    cr_assert_eq(
        bert_model_save(dir, &spec->config, weights, spec->f16, spec->prefix, err, sizeof err), 0,
        "%s", err);
    if (spec->f16 && spec->keep_f16) round_to_f16(&spec->config, weights);
    if (!w) bert_weights_free(&own);
    if (spec->vocab) tiny_bert_write_vocab(dir, spec->vocab, spec->vocab_count);
}

void tiny_bert_folder(const char *dir, const bert_config *c, uint64_t seed,
                      const char *const *vocab, int vocab_count, bert_weights *w)
{
    tiny_bert spec = {.config = *c,
                      .seed = seed,
                      .prefix = c->num_labels ? "bert." : NULL,
                      .vocab = vocab,
                      .vocab_count = vocab_count};
    tiny_bert_write(dir, &spec, w);
}

void tiny_bert_write_vocab(const char *dir, const char *const *vocab, int vocab_count)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    for (int i = 0; i < vocab_count; i++)
        fprintf(f, "%s\n", vocab[i]);
    fclose(f);
}
