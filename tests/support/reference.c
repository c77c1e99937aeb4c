/* Double-precision CPU reference of the attention layer. Plain loops: it is the proof, not
 * the product. */
#include "reference.h"

#include "io/random.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0, c[1] = (uint32_t)p1, c[2] = n2, c[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

int ref_dropped(uint64_t seed, double p, uint32_t b, uint32_t h, uint32_t i, uint32_t j)
{
    uint32_t c[4] = {j / 4, i, h, b};
    philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
    uint32_t below = (uint32_t)llround(p * 16777216.0);
    return (c[j % 4] >> 8) < below;
}

static int kept(const ref_mask *mask, int causal, size_t b, size_t h, size_t i, size_t j)
{
    if (causal && j > i) return 0;
    if (!mask || !mask->data) return 1;
    return mask->data[b * mask->stride[0] + h * mask->stride[1] + i * mask->stride[2] +
                      j * mask->stride[3]] != 0.0f;
}

void ref_softmax(const double *scores, int batch, int heads, int seq_len, double scale,
                 const ref_mask *mask, const ref_options *opt, double *p)
{
    size_t s = (size_t)seq_len;
    int causal = opt && opt->causal;
    double drop = opt ? opt->dropout : 0.0;
    for (size_t b = 0; b < (size_t)batch; b++)
        for (size_t h = 0; h < (size_t)heads; h++)
            for (size_t i = 0; i < s; i++) {
                const double *row = scores + ((b * heads + h) * s + i) * s;
                double *out = p + ((b * heads + h) * s + i) * s;
                /* -inf drops a masked key; HuggingFace's additive mask leaves it the lowest
                 * float, which still counts when every key of the row is masked. */
                double masked = opt && opt->additive ? -FLT_MAX : -INFINITY;
                double max = -INFINITY, sum = 0.0;
                for (size_t j = 0; j < s; j++)
                    max = fmax(max, kept(mask, causal, b, h, i, j) ? row[j] * scale : masked);
                for (size_t j = 0; j < s; j++) {
                    double v = kept(mask, causal, b, h, i, j) ? row[j] * scale : masked;
                    out[j] = v == -INFINITY ? 0.0 : exp(v - max);
                    sum += out[j];
                }
                for (size_t j = 0; j < s; j++) {
                    out[j] = max == -INFINITY ? 0.0 : out[j] / sum; /* fully masked: zeros */
                    if (drop > 0.0)
                        out[j] = ref_dropped(opt->seed, drop, (uint32_t)b, (uint32_t)h, (uint32_t)i,
                                             (uint32_t)j)
                                     ? 0.0
                                     : (drop < 1.0 ? out[j] / (1.0 - drop) : 0.0);
                }
            }
}

/* out[m][o] = sum_i in[m][i] * w[o][i] + bias[o] */
static void linear(const double *in, const float *w, const float *bias, size_t rows, size_t e,
                   double *out)
{
    for (size_t m = 0; m < rows; m++)
        for (size_t o = 0; o < e; o++) {
            double acc = bias[o];
            const float *wr = w + o * e;
            for (size_t i = 0; i < e; i++)
                acc += in[m * e + i] * wr[i];
            out[m * e + o] = acc;
        }
}

void ref_attention(const ref_layer *l, int batch, int seq_len, const float *x, const ref_mask *mask,
                   const ref_options *options, double *y)
{
    size_t n = (size_t)batch * seq_len * l->embed_dim;
    double *xd = malloc(n * sizeof *xd);
    for (size_t i = 0; i < n; i++)
        xd[i] = x[i];
    ref_attention_d(l, batch, seq_len, xd, mask, options, y);
    free(xd);
}

void ref_attention_d(const ref_layer *l, int batch, int seq_len, const double *xd,
                     const ref_mask *mask, const ref_options *options, double *y)
{
    size_t e = (size_t)l->embed_dim, hn = (size_t)l->heads, d = e / hn, s = (size_t)seq_len;
    size_t rows = (size_t)batch * s;
    double *q = malloc(rows * e * sizeof *q);
    double *k = malloc(rows * e * sizeof *k), *v = malloc(rows * e * sizeof *v);
    double *o = calloc(rows * e, sizeof *o);
    double *scores = malloc((size_t)batch * hn * s * s * sizeof *scores);
    double *p = malloc((size_t)batch * hn * s * s * sizeof *p);
    linear(xd, l->wq, l->bq, rows, e, q);
    linear(xd, l->wk, l->bk, rows, e, k);
    linear(xd, l->wv, l->bv, rows, e, v);
    /* Heads are read in place: Q[b,h,i,:] is q[(b*S+i)*E + h*D + :]. */
    for (size_t b = 0; b < (size_t)batch; b++)
        for (size_t h = 0; h < hn; h++)
            for (size_t i = 0; i < s; i++)
                for (size_t j = 0; j < s; j++) {
                    double acc = 0.0;
                    for (size_t t = 0; t < d; t++)
                        acc += q[(b * s + i) * e + h * d + t] * k[(b * s + j) * e + h * d + t];
                    scores[((b * hn + h) * s + i) * s + j] = acc;
                }
    ref_softmax(scores, batch, (int)hn, seq_len, 1.0 / sqrt((double)d), mask, options, p);
    for (size_t b = 0; b < (size_t)batch; b++)
        for (size_t h = 0; h < hn; h++)
            for (size_t i = 0; i < s; i++)
                for (size_t j = 0; j < s; j++) {
                    double w = p[((b * hn + h) * s + i) * s + j];
                    if (w == 0.0) continue;
                    for (size_t t = 0; t < d; t++)
                        o[(b * s + i) * e + h * d + t] += w * v[(b * s + j) * e + h * d + t];
                }
    linear(o, l->wo, l->bo, rows, e, y);
    free(q), free(k), free(v), free(o), free(scores), free(p);
}

ref_error ref_compare(const float *got, const double *want, size_t n)
{
    double diff2 = 0.0, ref2 = 0.0;
    ref_error err = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        double dv = (double)got[i] - want[i];
        if (isnan(dv)) dv = INFINITY; /* NaN must fail every bound */
        diff2 += dv * dv;
        ref2 += want[i] * want[i];
        err.max_abs = fmax(err.max_abs, fabs(dv));
        err.max_ref = fmax(err.max_ref, fabs(want[i]));
    }
    err.relative_l2 = ref2 > 0.0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    return err;
}

double ref_uniform(ref_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * (double)(vkb_random_next(&rng->state) >> 11) * 0x1.0p-53;
}

void ref_fill(ref_rng *rng, float *data, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        data[i] = (float)ref_uniform(rng, lo, hi);
}
