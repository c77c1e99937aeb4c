/* `vkbert bench --cpu`: a case timed with OpenBLAS on the host, the same shapes as the
 * device's. */
#include "bench_case.h"
#include "bench_stats.h"
#include "cli.h"
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef VKBERT_HAVE_OPENBLAS
#include <cblas.h>

/* y[rows][n] = x[rows][k] * w[n][k]^T + b: the bias rows first, then sgemm adds (beta 1). */
static void cpu_linear(const float *x, int rows, int n, int k, const float *w, const float *b,
                       float *y)
{
    for (int r = 0; r < rows; r++)
        memcpy(y + (size_t)r * n, b, (size_t)n * sizeof *b);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, k, 1.0f, x, k, w, k, 1.0f, y, n);
}

static void cpu_softmax_rows(float *s, int rows, int cols)
{
    for (int i = 0; i < rows; i++, s += cols) {
        float max = s[0], sum = 0.0f;
        for (int j = 1; j < cols; j++)
            max = s[j] > max ? s[j] : max;
        for (int j = 0; j < cols; j++)
            sum += s[j] = expf(s[j] - max);
        for (int j = 0; j < cols; j++)
            s[j] /= sum;
    }
}

/* Host buffers of one case: x, the weights (w: [4][E][E] then [4][E] biases, or the matmul's
 * W [N][K] and bias), the activations and one head's scores. */
typedef struct cpu_data {
    float *x, *w, *q, *k, *v, *o, *y, *scores;
} cpu_data;

/* Heads are read in place from the [B*S][E] rows (lda E), and P*V is written straight into
 * its columns of o: no head split or merge. */
static void cpu_attention(const bench_case *c, cpu_data *d)
{
    int e = c->embed, rows = c->batch * c->seq_len, s = c->seq_len, hd = e / c->heads;
    size_t ee = (size_t)e * e;
    const float *bias = d->w + 4 * ee;
    float *proj[3] = {d->q, d->k, d->v};
    for (int z = 0; z < 3; z++)
        cpu_linear(d->x, rows, e, e, d->w + z * ee, bias + z * e, proj[z]);
    float scale = 1.0f / sqrtf((float)hd);
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads; h++) {
            size_t at = (size_t)b * s * e + (size_t)h * hd;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, hd, scale, d->q + at, e,
                        d->k + at, e, 0.0f, d->scores, s);
            cpu_softmax_rows(d->scores, s, s);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, hd, s, 1.0f, d->scores, s,
                        d->v + at, e, 0.0f, d->o + at, e);
        }
    cpu_linear(d->o, rows, e, e, d->w + 3 * ee, bias + 3 * e, d->y);
}

static void cpu_run(const bench_case *c, cpu_data *d)
{
    if (c->m)
        cpu_linear(d->x, c->m, c->n, c->k, d->w, d->w + (size_t)c->n * c->k, d->y);
    else
        cpu_attention(c, d);
}

static int cpu_alloc(const bench_case *c, cpu_data *d)
{
    size_t x, w, act, scores = 1;
    if (c->m) {
        x = (size_t)c->m * c->k, w = (size_t)c->n * (c->k + 1), act = (size_t)c->m * c->n;
    } else {
        size_t e = (size_t)c->embed, s = (size_t)c->seq_len;
        x = act = (size_t)c->batch * s * e, w = 4 * e * (e + 1), scores = s * s;
    }
    float **all[] = {&d->x, &d->w, &d->q, &d->k, &d->v, &d->o, &d->y, &d->scores};
    size_t sizes[] = {x, w, act, act, act, act, act, scores};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!(*all[i] = calloc(sizes[i], sizeof(float)))) return -1;
    ref_rng rng = {0x5eed};
    double bound = 1.0 / sqrt(c->m ? c->k : c->embed); /* like nn.Linear's initialisation */
    ref_fill(&rng, d->x, x, -1.0, 1.0);
    ref_fill(&rng, d->w, w, -bound, bound);
    return 0;
}

#define CPU_MAX_RUNS 16

double bench_cpu_time(const bench_case *c, int runs)
{
    cpu_data d = {0};
    double median = 0.0, times[CPU_MAX_RUNS];
    runs = runs < CPU_MAX_RUNS ? runs : CPU_MAX_RUNS;
    if (!cpu_alloc(c, &d)) {
        cpu_run(c, &d);
        for (int i = 0; i < runs; i++) {
            double start = plat_now_ms();
            cpu_run(c, &d);
            times[i] = plat_now_ms() - start;
        }
        median = bench_spread_of(times, runs).median;
    }
    float *all[] = {d.x, d.w, d.q, d.k, d.v, d.o, d.y, d.scores};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    return median;
}
#else
double bench_cpu_time(const bench_case *c, int runs)
{
    (void)c, (void)runs;
    return 0.0;
}
#endif
