/* The environment, read once when a context is made (docs/architecture.md): a variable set later
 * changes nothing on that context, so its choices cannot drift between two plans, and no thread
 * reads getenv while another sets a variable (POSIX leaves that undefined). Each variable is parsed
 * and checked here; a bad value fails context creation with a message that names it. */
#include "vk.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An empty variable counts as unset, as a shell's `VAR= cmd` means it. */
static bool unset(const char *value)
{
    return !value || !*value;
}

static vkbert_status bad(vkbert_context *ctx, const char *name, const char *value,
                         const char *wanted)
{
    return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is \"%.64s\": %s", name, value, wanted);
}

static vkbert_status parse_switch(vkbert_context *ctx, const char *name, const char *value,
                                  bool fallback, bool *out)
{
    if (unset(value))
        *out = fallback;
    else if (!strcmp(value, "0") || !strcmp(value, "1"))
        *out = value[0] == '1';
    else
        return bad(ctx, name, value, "0 or 1");
    return VKBERT_OK;
}

/* One of `words` (its index plus one), 0 when unset. */
static vkbert_status parse_word(vkbert_context *ctx, const char *name, const char *value,
                                const char *const words[2], int *out)
{
    char wanted[64];
    *out = 0;
    if (unset(value)) return VKBERT_OK;
    for (int i = 0; i < 2; i++)
        if (!strcmp(value, words[i])) *out = i + 1;
    snprintf(wanted, sizeof wanted, "%s or %s", words[0], words[1]);
    return *out ? VKBERT_OK : bad(ctx, name, value, wanted);
}

/* Unsigned decimal digits only: strtoull alone would take a sign, spaces and a trailing rest. */
static bool parse_count(const char *at, const char **end, uint64_t max, uint64_t *out)
{
    if (*at < '0' || *at > '9') return false;
    errno = 0;
    char *stop;
    unsigned long long n = strtoull(at, &stop, 10);
    *end = stop;
    *out = n;
    return errno == 0 && n <= max;
}

/* ---- the tuning variables: a parser each, on the field it fills ---- */

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

/* The numbers are checked against the device where they are used (src/tune/tune.c); here only
 * their form, and that none is zero but the depth (0: no shared memory). */
static vkbert_status parse_tiles(vkbert_context *ctx, const char *name, const char *value,
                                 vkb_tuning_env *t)
{
    vkb_env_tiles tiles = {.bk = 16};
    if (unset(value)) {
        t->tiles = (vkb_env_tiles){0};
        return VKBERT_OK;
    }
    uint32_t *fields[] = {&tiles.wg_x, &tiles.wg_y, &tiles.tm, &tiles.tn4, &tiles.bk};
    const char *at = value;
    int count = 0;
    bool ok = true;
    while (ok && count < 5) {
        uint64_t n;
        ok = parse_count(at, &at, 65535, &n) && (n > 0 || count == 4);
        if (ok) *fields[count++] = (uint32_t)n;
        if (!ok || *at != ',') break;
        at++;
    }
    if (!ok || count < 4 || *at)
        return bad(ctx, name, value, "wg_x,wg_y,tm,tn4[,bk], positive numbers (bk may be 0)");
    tiles.set = true;
    t->tiles = tiles;
    return VKBERT_OK;
}

static vkbert_status parse_fallback(vkbert_context *ctx, const char *name, const char *value,
                                    vkb_tuning_env *t)
{
    return parse_switch(ctx, name, value, false, &t->matmul_fallback);
}

static vkbert_status parse_shuffle(vkbert_context *ctx, const char *name, const char *value,
                                   vkb_tuning_env *t)
{
    return parse_switch(ctx, name, value, true, &t->simd_shuffle);
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
    size_t offset, size; /* of the field it fills, restored from tuning_at_creation */
} tuning_vars[] = {
    {"VKBERT_KERNELS", parse_kernels, FIELD(kernels)},
    {"VKBERT_ATTENTION", parse_attention, FIELD(attention)},
    {"VKBERT_MATMUL_TILES", parse_tiles, FIELD(tiles)},
    {"VKBERT_MATMUL_FALLBACK", parse_fallback, FIELD(matmul_fallback)},
    {"VKBERT_SIMD_SHUFFLE", parse_shuffle, FIELD(simd_shuffle)},
    {"VKBERT_INT8_PATH", parse_int8, FIELD(int8_path)},
};

#define TUNING_VARS (sizeof tuning_vars / sizeof *tuning_vars)

vkbert_status vkb_env_override(vkbert_context *ctx, const char *name, const char *value)
{
    if (!name) return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "name is NULL");
    for (size_t i = 0; i < TUNING_VARS; i++) {
        const struct tuning_var *v = &tuning_vars[i];
        if (strcmp(name, v->name)) continue;
        /* Nothing the context keeps depends on these: pipelines are keyed by their module and
         * constants, and plans already made keep the kernels they recorded. */
        if (value) return v->parse(ctx, v->name, value, &ctx->env.tuning);
        memcpy((char *)&ctx->env.tuning + v->offset,
               (const char *)&ctx->env.tuning_at_creation + v->offset, v->size);
        return VKBERT_OK;
    }
    return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                    "\"%.64s\" is no tuning variable: VKBERT_KERNELS, VKBERT_ATTENTION, "
                    "VKBERT_MATMUL_TILES, VKBERT_MATMUL_FALLBACK, VKBERT_SIMD_SHUFFLE or "
                    "VKBERT_INT8_PATH",
                    name);
}

/* ---- the rest, which only context creation uses ---- */

static vkbert_status copy_text(vkbert_context *ctx, const char *name, char *out, size_t size)
{
    const char *value = getenv(name);
    if (!value) value = "";
    int n = snprintf(out, size, "%s", value);
    if (n < 0 || (size_t)n >= size)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is longer than %zu characters",
                        name, size - 1);
    return VKBERT_OK;
}

static vkbert_status read_timeout(vkbert_context *ctx)
{
    const char *value = getenv("VKBERT_TIMEOUT_MS"), *end;
    ctx->env.timeout_ms = 0;
    if (unset(value)) return VKBERT_OK;
    if (!parse_count(value, &end, UINT64_MAX, &ctx->env.timeout_ms) || *end)
        return bad(ctx, "VKBERT_TIMEOUT_MS", value, "milliseconds, a whole number");
    return VKBERT_OK;
}

static vkbert_status read_load_threads(vkbert_context *ctx)
{
    const char *name = "VKBERT_LOAD_THREADS", *value = getenv(name), *end;
    uint64_t n;
    ctx->env.load_threads = 0;
    if (unset(value)) return VKBERT_OK;
    if (!parse_count(value, &end, 64, &n) || *end || !n)
        return bad(ctx, name, value, "a number of threads from 1 to 64");
    ctx->env.load_threads = (uint32_t)n;
    return VKBERT_OK;
}

static vkbert_status read_fault_hook(vkbert_context *ctx)
{
    const char *name = "VKBERT_FAULT_LOST_AFTER_PASSES", *value = getenv(name), *end;
    uint64_t n;
    ctx->env.lost_after_passes = -1;
    if (unset(value)) return VKBERT_OK;
    if (!parse_count(value, &end, INT64_MAX, &n) || *end)
        return bad(ctx, name, value, "a number of passes, a whole number");
    ctx->env.lost_after_passes = (int64_t)n;
    return VKBERT_OK;
}

static vkbert_status read_device_env(vkbert_context *ctx)
{
    vkb_env *env = &ctx->env;
    vkbert_status status = parse_switch(ctx, "VKBERT_VALIDATION", getenv("VKBERT_VALIDATION"),
                                        false, &env->validation);
    if (!status)
        status = parse_switch(ctx, "VKBERT_FORCE_STAGING", getenv("VKBERT_FORCE_STAGING"), false,
                              &env->force_staging);
    if (!status) status = read_timeout(ctx);
    if (!status) status = read_fault_hook(ctx);
    if (!status) status = read_load_threads(ctx);
    if (!status) status = copy_text(ctx, "VKBERT_DEVICE", env->device, sizeof env->device);
    if (!status) status = copy_text(ctx, "VKBERT_LIMITS", env->limits, sizeof env->limits);
    return status;
}

vkbert_status vkb_env_read(vkbert_context *ctx, const char *cache_dir)
{
    vkb_env *env = &ctx->env;
    memset(env, 0, sizeof *env);
    for (size_t i = 0; i < TUNING_VARS; i++) {
        const char *name = tuning_vars[i].name;
        vkbert_status status = tuning_vars[i].parse(ctx, name, getenv(name), &env->tuning);
        if (status) return status;
    }
    env->tuning_at_creation = env->tuning;
    vkbert_status status = read_device_env(ctx);
    if (status) return status;
    /* The option wins over the variable, with the same values ("off", a path; "" is unset). */
    const char *setting = cache_dir && *cache_dir ? cache_dir : getenv("VKBERT_CACHE_DIR");
    if (!vkb_cache_dir_resolve(setting, env->cache_dir, sizeof env->cache_dir))
        env->cache_dir[0] = '\0';
    return VKBERT_OK;
}
