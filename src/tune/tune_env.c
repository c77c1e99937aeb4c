/* The tuning variables, which steer kernel choices: read once when the context is made, like
 * every variable (src/vk/vk_env.c says why), and replaceable one at a time on a live context by
 * vkbert_bench_override, which benchmarks and `vkbert tune` use to try choices. */
#include "tune/tune.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One of `words` (its index plus one), 0 when unset. */
static vkbert_status parse_word(vkbert_context *ctx, const char *name, const char *value,
                                const char *const words[2], int *out)
{
    char wanted[64];
    *out = 0;
    if (vkb_env_unset(value)) return VKBERT_OK;
    for (int i = 0; i < 2; i++)
        if (!strcmp(value, words[i])) *out = i + 1;
    snprintf(wanted, sizeof wanted, "%s or %s", words[0], words[1]);
    return *out ? VKBERT_OK : vkb_env_bad(ctx, name, value, wanted);
}

/* ---- a parser each, on the field it fills ---- */

/* The words in the order of their enums, after 0 for unset. */
static vkbert_status parse_kernels(vkbert_context *ctx, const char *name, const char *value,
                                   vkb_tuning_env *t)
{
    static const char *const words[2] = {"simd", "gpu"};
    int word;
    vkbert_status status = parse_word(ctx, name, value, words, &word);
    if (!status) t->kernels = (vkb_env_kernels)word;
    return status;
}

static vkbert_status parse_attention(vkbert_context *ctx, const char *name, const char *value,
                                     vkb_tuning_env *t)
{
    static const char *const words[2] = {"fused", "unfused"};
    int word;
    vkbert_status status = parse_word(ctx, name, value, words, &word);
    if (!status) t->attention = (vkb_env_attention)word;
    return status;
}

/* The numbers are checked against the device where they are used (tune.c); here only their
 * form, and that none is zero but the depth (0: no shared memory). */
static vkbert_status parse_tiles(vkbert_context *ctx, const char *name, const char *value,
                                 vkb_tuning_env *t)
{
    vkb_env_tiles tiles = {.bk = 16};
    if (vkb_env_unset(value)) {
        t->tiles = (vkb_env_tiles){0};
        return VKBERT_OK;
    }
    uint32_t *fields[] = {&tiles.wg_x, &tiles.wg_y, &tiles.tm, &tiles.tn4, &tiles.bk};
    const char *at = value;
    int count = 0;
    bool ok = true;
    while (ok && count < 5) {
        uint64_t n;
        ok = vkb_env_count(at, &at, 65535, &n) && (n > 0 || count == 4);
        if (ok) *fields[count++] = (uint32_t)n;
        if (!ok || *at != ',') break;
        at++;
    }
    if (!ok || count < 4 || *at)
        return vkb_env_bad(ctx, name, value,
                           "wg_x,wg_y,tm,tn4[,bk], positive numbers (bk may be 0)");
    tiles.set = true;
    t->tiles = tiles;
    return VKBERT_OK;
}

static vkbert_status parse_fallback(vkbert_context *ctx, const char *name, const char *value,
                                    vkb_tuning_env *t)
{
    return vkb_env_switch(ctx, name, value, false, &t->matmul_fallback);
}

static vkbert_status parse_shuffle(vkbert_context *ctx, const char *name, const char *value,
                                   vkb_tuning_env *t)
{
    return vkb_env_switch(ctx, name, value, true, &t->simd_shuffle);
}

static vkbert_status parse_int8(vkbert_context *ctx, const char *name, const char *value,
                                vkb_tuning_env *t)
{
    static const char *const words[2] = {"dot", "dequant"};
    int word;
    vkbert_status status = parse_word(ctx, name, value, words, &word);
    if (!status) t->int8_path = (vkb_env_int8)word;
    return status;
}

#define FIELD(f) offsetof(vkb_tuning_env, f), sizeof(((vkb_tuning_env *)0)->f)

static const struct tuning_var {
    const char *name;
    vkbert_status (*parse)(vkbert_context *, const char *, const char *, vkb_tuning_env *);
    size_t offset, size; /* of the field it fills, restored from at_creation */
} tuning_vars[] = {
    {"VKBERT_KERNELS", parse_kernels, FIELD(kernels)},
    {"VKBERT_ATTENTION", parse_attention, FIELD(attention)},
    {"VKBERT_MATMUL_TILES", parse_tiles, FIELD(tiles)},
    {"VKBERT_MATMUL_FALLBACK", parse_fallback, FIELD(matmul_fallback)},
    {"VKBERT_SIMD_SHUFFLE", parse_shuffle, FIELD(simd_shuffle)},
    {"VKBERT_INT8_PATH", parse_int8, FIELD(int8_path)},
};

#define TUNING_VARS (sizeof tuning_vars / sizeof *tuning_vars)

/* ---- the context's tuning ---- */

vkbert_status vkb_tuning_create(vkbert_context *ctx)
{
    vkb_tuning *tuning = calloc(1, sizeof *tuning);
    if (!tuning) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    ctx->tuning = tuning;
    for (size_t i = 0; i < TUNING_VARS; i++) {
        const char *name = tuning_vars[i].name;
        vkbert_status status = tuning_vars[i].parse(ctx, name, getenv(name), &tuning->env);
        if (status) return status;
    }
    tuning->at_creation = tuning->env;
    return VKBERT_OK;
}

void vkb_tuning_free(vkbert_context *ctx)
{
    if (!ctx->tuning) return;
    vkb_tune_cache_free(ctx);
    free(ctx->tuning);
    ctx->tuning = NULL;
}

vkbert_status vkb_tuning_override(vkbert_context *ctx, const char *name, const char *value)
{
    if (!name) return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "name is NULL");
    vkb_tuning *tuning = ctx->tuning;
    for (size_t i = 0; i < TUNING_VARS; i++) {
        const struct tuning_var *v = &tuning_vars[i];
        if (strcmp(name, v->name)) continue;
        /* Nothing the context keeps depends on these: pipelines are keyed by their module and
         * constants, and plans already made keep the kernels they recorded. */
        if (value) return v->parse(ctx, v->name, value, &tuning->env);
        memcpy((char *)&tuning->env + v->offset, (const char *)&tuning->at_creation + v->offset,
               v->size);
        return VKBERT_OK;
    }
    return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                    "\"%.64s\" is no tuning variable: VKBERT_KERNELS, VKBERT_ATTENTION, "
                    "VKBERT_MATMUL_TILES, VKBERT_MATMUL_FALLBACK, VKBERT_SIMD_SHUFFLE or "
                    "VKBERT_INT8_PATH",
                    name);
}
