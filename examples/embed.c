/* Text to embedding from C: load a model folder (HuggingFace or sentence-transformers) with its
 * own pipeline and embed two texts. Usage: embed MODEL_DIR [TEXT...] */
#include <vkbert.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [TEXT...]\n", argv[0]);
        return 2;
    }
    const char *defaults[] = {"A man is eating food.", "Someone is having a meal."};
    const char *const *texts = argc > 2 ? (const char *const *)argv + 2 : defaults;
    int count = argc > 2 ? argc - 2 : 2;

    vkbert_context *ctx = NULL;
    vkbert_model *model = NULL;
    float *embeddings = NULL;
    if (vkbert_context_create(NULL, &ctx)) {
        fprintf(stderr, "no device: %s\n", vkbert_last_error(NULL));
        return 1;
    }
    int code = 1;
    if (vkbert_model_load(ctx, argv[1], NULL, &model) == VKBERT_OK) {
        int dim = vkbert_model_dimension(model);
        embeddings = malloc((size_t)count * (size_t)dim * sizeof *embeddings);
        if (embeddings && vkbert_model_embed(model, texts, count, NULL, embeddings) == VKBERT_OK) {
            for (int i = 0; i < count; i++)
                printf("%-40.40s [%d] %+.4f %+.4f ...\n", texts[i], dim,
                       embeddings[(size_t)i * dim], embeddings[(size_t)i * dim + 1]);
            code = 0;
        }
    }
    if (code) fprintf(stderr, "%s\n", vkbert_last_error(ctx));
    free(embeddings);
    vkbert_model_destroy(model);
    vkbert_context_destroy(ctx);
    return code;
}
