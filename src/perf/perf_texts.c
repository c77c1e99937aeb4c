/* The encoder benchmark over texts of mixed lengths (vkbert_bench_encoder_shape's lengths):
 * the set run in batches, padded to each batch's longest or packed, with sentence embeddings
 * read back as an embedding service would. */
#include "perf/perf_texts.h"

#include <stdlib.h>
#include <string.h>

/* The same token for a (text, position) in every case, so the cases differ only in batching. */
static int32_t token(const vkbert_encoder *e, int text, int position)
{
    uint64_t v = (uint64_t)text * 7919u + (uint64_t)position * 131u + 1000u;
    return (int32_t)(v % (uint64_t)e->config.vocab_size);
}

/* Batch `in` of texts [first, first + in->batch): packed rows with offsets, or rows of the
 * batch's longest with a mask. */
static void fill_batch(const vkbert_encoder *e, const vkbert_bench_encoder_shape *s, int first,
                       bool ragged, encoder_batch *in, int32_t *ids, int32_t *mask,
                       int32_t *offsets)
{
    int longest = 0, at = 0;
    for (int b = 0; b < in->batch; b++)
        longest = s->lengths[first + b] > longest ? s->lengths[first + b] : longest;
    in->seq_len = longest;
    for (int b = 0; b < in->batch; b++) {
        int length = s->lengths[first + b], row = ragged ? at : b * longest;
        offsets[b] = at;
        for (int j = 0; j < (ragged ? length : longest); j++) {
            ids[row + j] = j < length ? token(e, first + b, j) : 0;
            mask[row + j] = j < length;
        }
        at += length;
    }
    offsets[in->batch] = at;
    in->ids = ids;
    in->mask = ragged ? NULL : mask;
    in->offsets = ragged ? offsets : NULL;
}

/* The batch's sentence embeddings. vkb_encoder_sentences packs a right-padded batch itself, so
 * the padded cases call the pass as given: else all three cases run the same packed work. */
static vkbert_status run_batch(vkbert_encoder *e, const encoder_batch *in, float *out)
{
    if (in->offsets) return vkb_encoder_sentences(e, in, 0, out);
    encoder_call c = {.in = *in, .kind = OUT_SENTENCES, .out = out};
    vkbert_status status = encoder_check_batch(e, &c.in);
    return status ? status : vkb_encoder_run_call(e, &c);
}

/* One pass over the set: the GPU time is the sum of its batches'. */
static vkbert_status run_set(vkbert_encoder *e, const vkbert_bench_encoder_shape *s, int32_t *ids,
                             int32_t *mask, int32_t *offsets, float *out, double *gpu)
{
    vkbert_status status = VKBERT_OK;
    *gpu = 0;
    for (int first = 0; first < s->texts && !status; first += s->batch) {
        int rest = s->texts - first;
        encoder_batch in = {.batch = rest < s->batch ? rest : s->batch};
        fill_batch(e, s, first, s->ragged, &in, ids, mask, offsets);
        status = run_batch(e, &in, out);
        if (!status) *gpu += e->plan->gpu_ms;
    }
    return status;
}

vkbert_status vkb_bench_mixed_runs(vkbert_context *ctx, vkbert_encoder *e,
                                   const vkbert_bench_encoder_shape *s, int runs, double *gpu,
                                   double *wall)
{
    size_t most = (size_t)s->batch * (size_t)s->seq_len;
    int32_t *ids = malloc(most * sizeof *ids), *mask = malloc(most * sizeof *mask);
    int32_t *offsets = malloc(((size_t)s->batch + 1) * sizeof *offsets);
    float *out = malloc((size_t)s->batch * vkb_encoder_embedding_width(e) * sizeof *out);
    vkbert_status status = VKBERT_OK;
    if (!ids || !mask || !offsets || !out)
        status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int r = -1; r < runs && !status; r++) { /* run -1 is the warm-up */
        double start = plat_now_ms(), ms;
        status = run_set(e, s, ids, mask, offsets, out, &ms);
        if (!status && r >= 0) gpu[r] = ms, wall[r] = plat_now_ms() - start;
    }
    free(ids);
    free(mask);
    free(offsets);
    free(out);
    return status;
}

vkbert_status vkb_bench_mixed_check(vkbert_context *ctx, const vkbert_bench_encoder_shape *s)
{
    if (s->texts < 1 || s->batch < 1)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "mixed lengths need texts and batch positive");
    for (int i = 0; i < s->texts; i++)
        if (s->lengths[i] < 1 || s->lengths[i] > s->seq_len)
            return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "lengths[%d] = %d is outside [1, seq_len %d]", i, s->lengths[i],
                            s->seq_len);
    return VKBERT_OK;
}

double vkb_bench_mixed_flops(const vkbert_bench_encoder_shape *s)
{
    double flops = 0, h = s->hidden;
    for (int i = 0; i < s->texts; i++) {
        double n = s->lengths[i];
        flops += 8.0 * n * h * h + 4.0 * n * n * h + 4.0 * n * h * s->intermediate;
    }
    return s->layers * flops;
}
