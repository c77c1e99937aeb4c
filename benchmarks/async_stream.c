/* The overlap of host and device work on a stream of batches: each batch's texts are
 * tokenized on the host (the preparation), then embedded. (a) synchronously: prepare, embed,
 * prepare, embed...; (b) with jobs: batch i + 1 is prepared and submitted while batch i runs.
 * Also timed alone: the preparation of the whole stream, and the device's embedding of the
 * prepared stream, so a reader sees the bound: sync ~ prepare + device, async ~ max of them.
 * Medians and min-max over interleaved rounds. A random BERT written to a temp folder with a
 * generated vocabulary; results of (a) and (b) are compared.
 *   async_stream [batches=24] [batch=8] [seq_len=64] [hidden=128] [layers=2] [rounds=5]
 *                [words=0: seq_len/2..seq_len words a text; more are tokenized, then truncated] */
#include "io/bert_model.h"
#include "platform/platform.h"
#include "vkbert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB 3000

typedef struct stream {
    int batches, batch, seq_len, hidden;
    int words; /* of each text, before truncation to seq_len tokens (0: seq_len/2..seq_len) */
    vkbert_tokenizer *tokenizer;
    vkbert_encoder *encoder;
    int32_t *ids, *mask; /* [batches][batch][seq_len]: the prepared stream */
    float *sync, *async; /* [batches][batch][hidden] */
} stream;

static void word(int i, char *out, size_t size)
{
    snprintf(out, size, "w%c%c%d", 'a' + i % 26, 'a' + (i / 26) % 26, i);
}

/* config.json, model.safetensors and vocab.txt of a random model in a new temp folder. */
static int write_model(char *dir, size_t dir_size, int hidden, int layers)
{
    bert_config c = {.hidden_size = hidden,
                     .num_hidden_layers = layers,
                     .num_attention_heads = hidden / 32,
                     .intermediate_size = 4 * hidden,
                     .max_position_embeddings = 512,
                     .type_vocab_size = 2,
                     .vocab_size = VOCAB,
                     .layer_norm_eps = 1e-12};
    strcpy(c.hidden_act, "gelu");
    bert_weights w;
    char err[512], path[600];
    if (!plat_make_temp_dir(dir, dir_size) || bert_weights_random(&c, 1, &w)) return 1;
    int failed = bert_model_save(dir, &c, &w, 0, "", err, sizeof err);
    bert_weights_free(&w);
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = failed ? NULL : fopen(path, "w");
    if (!f) return 1;
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", f);
    for (int i = 5; i < VOCAB; i++) {
        char token[32];
        word(i, token, sizeof token);
        fprintf(f, "%s\n", token);
    }
    return fclose(f) != 0;
}

/* Batch i's texts (words of the vocabulary, some split into pieces, some unknown), tokenized
 * and padded into ids and mask. */
static int prepare(stream *s, int i, int32_t *ids, int32_t *mask)
{
    unsigned seed = 12345u + (unsigned)i * 7919u;
    size_t size = (size_t)(s->words ? s->words : s->seq_len) * 24 + 1;
    char *text = malloc(size);
    if (!text) return 1;
    for (int b = 0; b < s->batch; b++) {
        int words =
            s->words ? s->words : s->seq_len / 2 + (int)(seed % (unsigned)(s->seq_len / 2 + 1));
        size_t at = 0;
        for (int k = 0; k < words; k++) {
            seed = seed * 1103515245u + 12345u;
            char token[32];
            word(5 + (int)((seed >> 8) % (VOCAB - 5)), token, sizeof token);
            at += (size_t)snprintf(text + at, size - at, "%s%s", k ? (seed & 64 ? " " : ", ") : "",
                                   seed & 512 ? "Unknown" : token);
        }
        text[at] = '\0';
        vkbert_encoding e = VKBERT_ENCODING_INIT;
        if (vkbert_tokenizer_encode(s->tokenizer, text, NULL, s->seq_len, &e)) {
            free(text);
            return 1;
        }
        for (int t = 0; t < s->seq_len; t++) {
            ids[b * s->seq_len + t] = t < e.count ? e.ids[t] : 0;
            mask[b * s->seq_len + t] = t < e.count;
        }
        vkbert_encoding_free(&e);
    }
    free(text);
    return 0;
}

static size_t tokens(const stream *s)
{
    return (size_t)s->batch * s->seq_len;
}

static float *out_of(const stream *s, float *base, int i)
{
    return base + (size_t)i * s->batch * s->hidden;
}

static int run_prepare(stream *s)
{
    for (int i = 0; i < s->batches; i++)
        if (prepare(s, i, s->ids + i * tokens(s), s->mask + i * tokens(s))) return 1;
    return 0;
}

static int run_device(stream *s)
{
    for (int i = 0; i < s->batches; i++)
        if (vkbert_encoder_embed_host(s->encoder, s->batch, s->seq_len, s->ids + i * tokens(s),
                                      NULL, s->mask + i * tokens(s), 1, out_of(s, s->sync, i)))
            return 1;
    return 0;
}

static int run_sync(stream *s)
{
    int32_t *ids = s->ids, *mask = s->mask;
    for (int i = 0; i < s->batches; i++)
        if (prepare(s, i, ids, mask) ||
            vkbert_encoder_embed_host(s->encoder, s->batch, s->seq_len, ids, NULL, mask, 1,
                                      out_of(s, s->sync, i)))
            return 1;
    return 0;
}

/* Two in flight: batch i + 1 is prepared and submitted before batch i is waited for. */
static int run_async(stream *s)
{
    int32_t *ids = s->ids, *mask = s->mask; /* reusable once a submit returns */
    vkbert_job *running = NULL;
    int failed = 0;
    for (int i = 0; i < s->batches && !failed; i++) {
        vkbert_job *job = NULL;
        failed = prepare(s, i, ids, mask) ||
                 vkbert_encoder_embed_submit(s->encoder, s->batch, s->seq_len, ids, NULL, mask, 1,
                                             out_of(s, s->async, i), &job);
        if (running) failed |= vkbert_job_wait(running) != VKBERT_OK;
        vkbert_job_destroy(running);
        running = job;
    }
    if (running) failed |= vkbert_job_wait(running) != VKBERT_OK;
    vkbert_job_destroy(running);
    return failed;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef int (*mode_fn)(stream *);

int main(int argc, char **argv)
{
    stream s = {argc > 1 ? atoi(argv[1]) : 24,
                argc > 2 ? atoi(argv[2]) : 8,
                argc > 3 ? atoi(argv[3]) : 64,
                argc > 4 ? atoi(argv[4]) : 128,
                argc > 7 ? atoi(argv[7]) : 0,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL};
    int layers = argc > 5 ? atoi(argv[5]) : 2, rounds = argc > 6 ? atoi(argv[6]) : 5;
    if (s.batches < 1 || s.batch < 1 || s.seq_len < 4 || s.hidden < 32 || s.hidden % 32 ||
        rounds < 1 || rounds > 64 || s.words < 0 || s.words > 1000000)
        return fprintf(stderr, "bad arguments (hidden: a multiple of 32)\n"), 2;
    char dir[400];
    vkbert_context *ctx = NULL;
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    if (write_model(dir, sizeof dir, s.hidden, layers))
        return fprintf(stderr, "cannot write the model\n"), 1;
    if (vkbert_context_create(NULL, &ctx) || vkbert_context_device(ctx, &info) ||
        vkbert_tokenizer_load(dir, &s.tokenizer) || vkbert_encoder_load(ctx, dir, NULL, &s.encoder))
        return fprintf(stderr, "%s\n", vkbert_last_error(ctx)), 1;
    size_t n = (size_t)s.batches * tokens(&s), out = (size_t)s.batches * s.batch * s.hidden;
    s.ids = malloc(n * 4), s.mask = malloc(n * 4);
    s.sync = malloc(out * 4), s.async = malloc(out * 4);
    const char *names[] = {"host prepare alone", "device embed alone", "sync (a)", "async (b)"};
    mode_fn modes[] = {run_prepare, run_device, run_sync, run_async};
    double ms[4][64];
    if (run_prepare(&s) || run_device(&s) || run_async(&s)) /* warm-up: plans, pipelines */
        return fprintf(stderr, "%s\n", vkbert_last_error(ctx)), 1;
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < 4; m++) {
            if (m == 1 && run_prepare(&s)) return 1; /* the device mode reads all batches */
            double start = plat_now_ms();
            if (modes[m](&s)) return fprintf(stderr, "%s\n", vkbert_last_error(ctx)), 1;
            ms[m][r] = plat_now_ms() - start;
        }
    double worst = 0;
    for (size_t i = 0; i < out; i++)
        worst = fmax(worst, fabs((double)s.sync[i] - s.async[i]));
    printf("device: %s (%s)\n", info.name, info.driver);
    printf("stream: %d batches of %d x %d tokens (texts of %d words); BERT hidden %d, %d layers; "
           "%d rounds\n",
           s.batches, s.batch, s.seq_len, s.words, s.hidden, layers, rounds);
    printf("| mode | wall median ms | min-max ms |\n|---|---|---|\n");
    double median[4];
    for (int m = 0; m < 4; m++) {
        qsort(ms[m], (size_t)rounds, sizeof ms[m][0], cmp);
        median[m] = ms[m][rounds / 2];
        printf("| %s | %.1f | %.1f-%.1f |\n", names[m], median[m], ms[m][0], ms[m][rounds - 1]);
    }
    printf("sync/async: %.2f (bound: (prepare + device) / max(prepare, device) = %.2f)\n",
           median[2] / median[3], (median[0] + median[1]) / fmax(median[0], median[1]));
    printf("async results equal sync: max |difference| %.3g\n", worst);
    vkbert_encoder_destroy(s.encoder);
    vkbert_tokenizer_destroy(s.tokenizer);
    vkbert_context_destroy(ctx);
    free(s.ids), free(s.mask), free(s.sync), free(s.async);
    plat_remove_dir(dir);
    return worst > 1e-6;
}
