/* Start-up cost for `vkbert bench`: the time to create a context and the pipelines of one
 * BERT-base layer, cold (an empty cache directory) and warm (the same directory again). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One start: context, layer, one small forward (which makes its pipelines), destroy (which
 * writes the pipeline cache). */
static int one_start(const char *device, const char *cache_dir, double *context_ms,
                     double *pipelines_ms)
{
    enum { E = 768, H = 12, S = 8 };
    vkbert_context_options options = {
        .struct_size = sizeof(vkbert_context_options), .device = device, .cache_dir = cache_dir};
    vkbert_context *ctx = NULL;
    if (vkbert_context_create(&options, &ctx)) return -1;
    float *w = calloc((size_t)E * E, sizeof *w), *b = calloc(E, sizeof *b);
    float *x = calloc((size_t)S * E, sizeof *x), *y = calloc((size_t)S * E, sizeof *y);
    vkbert_attention_weights weights = {sizeof(vkbert_attention_weights), w, b, w, b, w, b, w, b};
    vkbert_attention *layer = NULL;
    int failed = !w || !b || !x || !y ||
                 vkbert_attention_create(ctx, E, H, &weights, NULL, &layer) ||
                 vkbert_attention_forward_host(layer, 1, S, x, NULL, NULL, y) ||
                 vkbert_context_startup_ms(ctx, context_ms, pipelines_ms);
    vkbert_attention_destroy(layer);
    vkbert_context_destroy(ctx);
    free(w), free(b), free(x), free(y);
    return failed ? -1 : 0;
}

int cli_measure_startup(const char *device, cli_startup *out)
{
    memset(out, 0, sizeof *out);
    char dir[1024];
    if (!plat_make_temp_dir(dir, sizeof dir)) return -1;
    /* The context's own cache directory: the process environment, which other threads may be
     * reading, stays as it is. */
    int failed = one_start(device, dir, &out->cold_context_ms, &out->cold_pipelines_ms) ||
                 one_start(device, dir, &out->warm_context_ms, &out->warm_pipelines_ms);
    if (plat_remove_dir(dir)) failed = 1;
    out->measured = !failed;
    return failed ? -1 : 0;
}
