/* The attention layer from C: make a context, upload weights, run a forward pass. */
#include <vkbert.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { E = 64, H = 4, B = 2, S = 16 };

static float *random_array(size_t n, float scale)
{
    float *a = malloc(n * sizeof *a);
    for (size_t i = 0; a && i < n; i++)
        a[i] = scale * (2.0f * rand() / (float)RAND_MAX - 1.0f);
    return a;
}

int main(void)
{
    vkbert_context *ctx = NULL;
    if (vkbert_context_create(NULL, &ctx) != VKBERT_OK) { /* VKBERT_DEVICE picks a device */
        fprintf(stderr, "vkbert: %s\n", vkbert_last_error(NULL));
        return 1;
    }
    float *w[4], *b[4], bound = 1.0f / sqrtf(E);
    for (int i = 0; i < 4; i++)
        w[i] = random_array(E * E, bound), b[i] = random_array(E, bound);
    /* Structs that may grow start from their _INIT macro, which sets struct_size. */
    vkbert_attention_weights weights = VKBERT_ATTENTION_WEIGHTS_INIT;
    weights.q_weight = w[0], weights.q_bias = b[0], weights.k_weight = w[1], weights.k_bias = b[1];
    weights.v_weight = w[2], weights.v_bias = b[2], weights.out_weight = w[3];
    weights.out_bias = b[3];
    vkbert_attention *layer = NULL;
    float *x = random_array(B * S * E, 1.0f), *y = malloc(B * S * E * sizeof *y);

    uint8_t keep[B][S]; /* key padding: the second sequence is 10 tokens long */
    for (int i = 0; i < B; i++)
        for (int j = 0; j < S; j++)
            keep[i][j] = i == 0 || j < 10;
    vkbert_mask mask = VKBERT_MASK_INIT;
    mask.data = keep, mask.dtype = VKBERT_DTYPE_BOOL, mask.ndim = 2;
    mask.shape[0] = B, mask.shape[1] = S;

    vkbert_status status = vkbert_attention_create(ctx, E, H, &weights, NULL, &layer);
    if (status == VKBERT_OK) status = vkbert_attention_forward_host(layer, B, S, x, &mask, NULL, y);
    if (status == VKBERT_OK) {
        vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
        vkbert_context_device(ctx, &info);
        printf("%s: y[0][0][0..3] = %.5f %.5f %.5f %.5f\n", info.name, y[0], y[1], y[2], y[3]);
    } else {
        fprintf(stderr, "vkbert: %s: %s\n", vkbert_status_name(status), vkbert_last_error(ctx));
    }
    vkbert_attention_destroy(layer);
    vkbert_context_destroy(ctx);
    for (int i = 0; i < 4; i++)
        free(w[i]), free(b[i]);
    free(x), free(y);
    return status == VKBERT_OK ? 0 : 1;
}
