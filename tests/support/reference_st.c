/* See reference_st.h. Each rule names the line of sentence-transformers it follows. */
#include "reference_st.h"

#include "io/st_model.h"
#include "reference_bert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The first kept row, row 0 when none is (attention_mask.argmax in 6.2: the first token
 * after the prompt where include_prompt is false). */
static void pool_cls(const double *x, int seq, int h, const int32_t *keep, double *out)
{
    int first = 0;
    while (first < seq && !keep[first])
        first++;
    first = first < seq ? first : 0;
    memcpy(out, x + (size_t)first * h, (size_t)h * sizeof *out);
}

/* Padding is set to -1e9 before the max, so a sequence without tokens gives -1e9. */
static void pool_max(const double *x, int seq, int h, const int32_t *keep, double *out)
{
    for (int j = 0; j < h; j++) {
        double m = -INFINITY;
        for (int s = 0; s < seq; s++) {
            double v = keep[s] ? x[(size_t)s * h + j] : -1e9;
            m = v > m ? v : m;
        }
        out[j] = m;
    }
}

/* sum(w * x) / clamp(sum(w), 1e-9); weights 1 (mean) or the 1-based position (weightedmean);
 * with sqrt_len the divisor is sqrt(clamp(count, 1e-9)). */
static void pool_weighted(const double *x, int seq, int h, const int32_t *keep, int positions,
                          int sqrt_len, double *out)
{
    double total = 0;
    for (int s = 0; s < seq; s++)
        total += keep[s] ? (positions ? s + 1.0 : 1.0) : 0.0;
    total = total > 1e-9 ? total : 1e-9;
    double divisor = sqrt_len ? sqrt(total) : total;
    for (int j = 0; j < h; j++) {
        double sum = 0;
        for (int s = 0; s < seq; s++)
            sum += keep[s] ? (positions ? s + 1.0 : 1.0) * x[(size_t)s * h + j] : 0.0;
        out[j] = sum / divisor;
    }
}

/* The last position whose mask is 1; zeros when there is none (Pooling gathers from
 * token_embeddings * mask). */
static void pool_last(const double *x, int seq, int h, const int32_t *keep, double *out)
{
    int last = -1;
    for (int s = 0; s < seq; s++)
        if (keep[s]) last = s;
    for (int j = 0; j < h; j++)
        out[j] = last < 0 ? 0.0 : x[(size_t)last * h + j];
}

int ref_st_pool(const double *hidden, const int32_t *mask, int seq, int h, unsigned modes,
                int prompt_tokens, double *out)
{
    int32_t keep[4096];
    for (int s = 0; s < seq && s < 4096; s++)
        keep[s] = s < prompt_tokens ? 0 : mask[s] != 0;
    int width = 0;
    for (unsigned bit = 1; bit <= ST_POOL_LASTTOKEN; bit <<= 1) {
        if (!(modes & bit)) continue;
        double *o = out + width;
        if (bit == ST_POOL_CLS) pool_cls(hidden, seq, h, keep, o);
        if (bit == ST_POOL_MAX) pool_max(hidden, seq, h, keep, o);
        if (bit == ST_POOL_MEAN) pool_weighted(hidden, seq, h, keep, 0, 0, o);
        if (bit == ST_POOL_MEAN_SQRT_LEN) pool_weighted(hidden, seq, h, keep, 0, 1, o);
        if (bit == ST_POOL_WEIGHTEDMEAN) pool_weighted(hidden, seq, h, keep, 1, 0, o);
        if (bit == ST_POOL_LASTTOKEN) pool_last(hidden, seq, h, keep, o);
        width += h;
    }
    return width;
}

static double activate(int act, double v)
{
    switch (act) {
    case ST_ACT_TANH:
        return tanh(v);
    case ST_ACT_RELU:
        return v > 0 ? v : 0;
    case ST_ACT_GELU:
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case ST_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-v));
    default:
        return v;
    }
}

void ref_st_dense(const float *w, const float *b, int in, int out, int act, const double *x,
                  double *y)
{
    for (int o = 0; o < out; o++) {
        double sum = b ? b[o] : 0.0;
        for (int i = 0; i < in; i++)
            sum += (double)w[(size_t)o * in + i] * x[i];
        y[o] = activate(act, sum);
    }
}

void ref_st_normalize(double *v, int n)
{
    double sq = 0;
    for (int i = 0; i < n; i++)
        sq += v[i] * v[i];
    double norm = sqrt(sq) > 1e-12 ? sqrt(sq) : 1e-12;
    for (int i = 0; i < n; i++)
        v[i] /= norm;
}

int ref_st_embedding(const bert_config *c, const bert_weights *w, const ref_st_pipeline *p,
                     const int32_t *ids, const int32_t *type_ids, int seq, double *out)
{
    int h = c->hidden_size;
    double *hidden = malloc((size_t)seq * h * sizeof *hidden);
    double *a = malloc(4096 * sizeof *a), *b = malloc(4096 * sizeof *b);
    int32_t *mask = malloc((size_t)seq * sizeof *mask);
    for (int s = 0; s < seq; s++)
        mask[s] = 1;
    ref_bert(c, w, 1, seq, ids, type_ids, NULL, hidden, NULL);
    int width = ref_st_pool(hidden, mask, seq, h, p->modes, p->prompt_tokens, a);
    for (int i = 0; i < p->dense_count; i++) {
        const st_dense *d = &p->dense[i];
        ref_st_dense(d->weight, d->has_bias ? d->bias : NULL, d->in_features, d->out_features,
                     d->activation, a, b);
        width = d->out_features;
        memcpy(a, b, (size_t)width * sizeof *a);
    }
    if (p->normalize) ref_st_normalize(a, width);
    memcpy(out, a, (size_t)width * sizeof *out);
    free(hidden), free(a), free(b), free(mask);
    return width;
}
