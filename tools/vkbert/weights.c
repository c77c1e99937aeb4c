/* Host weights of one attention layer, and reading them from a safetensors file with an
 * optional common prefix ("attn.", "layer.0.attention."...) through the library. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cli_weight_names[CLI_TENSORS] = {
    "q_proj.weight", "q_proj.bias", "k_proj.weight",   "k_proj.bias",
    "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias",
};

static int is_weight(int index)
{
    return index % 2 == 0;
}

int cli_weights_alloc(cli_weights *w, int e)
{
    memset(w, 0, sizeof *w);
    w->embed_dim = e;
    for (int i = 0; i < CLI_TENSORS; i++) {
        size_t n = is_weight(i) ? (size_t)e * (size_t)e : (size_t)e;
        w->tensor[i] = malloc(n * sizeof(float));
        if (!w->tensor[i]) {
            cli_weights_free(w);
            return -1;
        }
    }
    return 0;
}

void cli_weights_free(cli_weights *w)
{
    for (int i = 0; i < CLI_TENSORS; i++) {
        free(w->tensor[i]);
        w->tensor[i] = NULL;
    }
}

vkbert_attention_weights cli_weights_view(const cli_weights *w)
{
    vkbert_attention_weights v = VKBERT_ATTENTION_WEIGHTS_INIT;
    v.q_weight = w->tensor[CLI_QW], v.q_bias = w->tensor[CLI_QB];
    v.k_weight = w->tensor[CLI_KW], v.k_bias = w->tensor[CLI_KB];
    v.v_weight = w->tensor[CLI_VW], v.v_bias = w->tensor[CLI_VB];
    v.out_weight = w->tensor[CLI_OW], v.out_bias = w->tensor[CLI_OB];
    return v;
}

/* ---- reading ---- */

int cli_weights_load(const char *path, cli_weights *w)
{
    vkbert_attention_weights file = VKBERT_ATTENTION_WEIGHTS_INIT;
    int e = 0;
    memset(w, 0, sizeof *w);
    if (vkbert_attention_weights_load(path, &file, &e)) return cli_api_error(NULL, NULL);
    const float *tensors[CLI_TENSORS] = {file.q_weight,   file.q_bias,   file.k_weight,
                                         file.k_bias,     file.v_weight, file.v_bias,
                                         file.out_weight, file.out_bias};
    int code = cli_weights_alloc(w, e) ? cli_error("%s: out of host memory", path) : 0;
    for (int i = 0; !code && i < CLI_TENSORS; i++) {
        size_t n = is_weight(i) ? (size_t)e * (size_t)e : (size_t)e;
        memcpy(w->tensor[i], tensors[i], n * sizeof(float));
    }
    vkbert_attention_weights_free(&file);
    return code;
}
