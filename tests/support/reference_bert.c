/* Double-precision BertModel: plain loops, the proof for the encoder. */
#include "reference_bert.h"

#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* In place over rows of n: LayerNorm(x + residual) * gamma + beta (residual may be NULL). */
static void layer_norm(double *x, const double *residual, size_t rows, size_t n, const float *gamma,
                       const float *beta, double eps)
{
    for (size_t r = 0; r < rows; r++) {
        double *v = x + r * n, mean = 0, var = 0;
        for (size_t j = 0; j < n; j++)
            mean += v[j] += residual ? residual[r * n + j] : 0.0;
        mean /= n;
        for (size_t j = 0; j < n; j++)
            var += (v[j] - mean) * (v[j] - mean);
        var /= n;
        for (size_t j = 0; j < n; j++)
            v[j] = (v[j] - mean) / sqrt(var + eps) * gamma[j] + beta[j];
    }
}

/* out[r][o] = act(sum_i in[r][i] w[o][i] + b[o]); act 0 none, 1 GELU (erf), 2 tanh */
static void dense(const double *in, const float *w, const float *b, size_t rows, size_t n_in,
                  size_t n_out, int act, double *out)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            double acc = b[o];
            for (size_t i = 0; i < n_in; i++)
                acc += in[r * n_in + i] * w[o * n_in + i];
            if (act == 1) acc = 0.5 * acc * (1.0 + erf(acc / sqrt(2.0)));
            if (act == 2) acc = tanh(acc);
            out[r * n_out + o] = acc;
        }
}

static void embeddings(const bert_config *c, const bert_weights *w, size_t batch, size_t seq,
                       const int32_t *ids, const int32_t *types, double *x)
{
    size_t h = (size_t)c->hidden_size;
    for (size_t m = 0; m < batch * seq; m++)
        for (size_t j = 0; j < h; j++)
            x[m * h + j] = (double)w->word[(size_t)ids[m] * h + j] +
                           w->position[(m % seq) * h + j] +
                           w->token_type[(size_t)(types ? types[m] : 0) * h + j];
    layer_norm(x, NULL, batch * seq, h, w->ln_gamma, w->ln_beta, c->layer_norm_eps);
}

static void layer(const bert_config *c, const bert_layer_weights *lw, int batch, int seq,
                  const ref_mask *mask, double *x, double *scratch)
{
    size_t h = (size_t)c->hidden_size, rows = (size_t)batch * seq;
    double *attn = scratch, *inter = scratch + rows * h, *out = inter + rows * c->intermediate_size;
    ref_layer rl = {
        c->hidden_size, c->num_attention_heads, lw->q_w,       lw->q_b, lw->k_w, lw->k_b, lw->v_w,
        lw->v_b,        lw->attn_out_w,         lw->attn_out_b};
    ref_options opt = {0, 0.0, 0, 1}; /* HuggingFace's additive mask */
    ref_attention_d(&rl, batch, seq, x, mask, &opt, attn);
    layer_norm(attn, x, rows, h, lw->attn_ln_gamma, lw->attn_ln_beta, c->layer_norm_eps);
    dense(attn, lw->inter_w, lw->inter_b, rows, h, (size_t)c->intermediate_size, 1, inter);
    dense(inter, lw->out_w, lw->out_b, rows, (size_t)c->intermediate_size, h, 0, out);
    layer_norm(out, attn, rows, h, lw->out_ln_gamma, lw->out_ln_beta, c->layer_norm_eps);
    memcpy(x, out, rows * h * sizeof *x);
}

void ref_bert(const bert_config *c, const bert_weights *w, int batch, int seq_len,
              const int32_t *input_ids, const int32_t *token_type_ids,
              const int32_t *attention_mask, double *hidden, double *pooled)
{
    size_t h = (size_t)c->hidden_size, rows = (size_t)batch * seq_len;
    float *keep = malloc(rows * sizeof *keep);
    for (size_t i = 0; i < rows; i++)
        keep[i] = attention_mask ? attention_mask[i] != 0 : 1.0f;
    ref_mask mask = {keep, {(size_t)seq_len, 0, 0, 1}};
    double *scratch = malloc(rows * (2 * h + (size_t)c->intermediate_size) * sizeof *scratch);
    embeddings(c, w, (size_t)batch, (size_t)seq_len, input_ids, token_type_ids, hidden);
    for (int l = 0; l < c->num_hidden_layers; l++)
        layer(c, &w->layers[l], batch, seq_len, &mask, hidden, scratch);
    if (pooled && w->has_pooler) {
        double *first = malloc((size_t)batch * h * sizeof *first);
        for (int b = 0; b < batch; b++)
            memcpy(first + b * h, hidden + (size_t)b * seq_len * h, h * sizeof *first);
        dense(first, w->pooler_w, w->pooler_b, (size_t)batch, h, h, 2, pooled);
        free(first);
    }
    free(keep);
    free(scratch);
}
