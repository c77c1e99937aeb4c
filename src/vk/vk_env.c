/* The environment, read once when a context is made (docs/architecture.md): a variable set later
 * changes nothing on that context, so its choices cannot drift between two plans, and no thread
 * reads getenv while another sets a variable (POSIX leaves that undefined). Each variable is parsed
 * and checked where it is used (the device's here, the tuning variables in src/tune/tune_env.c);
 * a bad value fails context creation with a message that names it. */
#include "vk.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool vkb_env_unset(const char *value)
{
    return !value || !*value;
}

vkbert_status vkb_env_bad(vkbert_context *ctx, const char *name, const char *value,
                          const char *wanted)
{
    return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is \"%.64s\": %s", name, value, wanted);
}

vkbert_status vkb_env_switch(vkbert_context *ctx, const char *name, const char *value,
                             bool fallback, bool *out)
{
    if (vkb_env_unset(value))
        *out = fallback;
    else if (!strcmp(value, "0") || !strcmp(value, "1"))
        *out = value[0] == '1';
    else
        return vkb_env_bad(ctx, name, value, "0 or 1");
    return VKBERT_OK;
}

/* Digits only: strtoull alone would take a sign, spaces and a trailing rest. */
bool vkb_env_count(const char *at, const char **end, uint64_t max, uint64_t *out)
{
    if (*at < '0' || *at > '9') return false;
    errno = 0;
    char *stop;
    unsigned long long n = strtoull(at, &stop, 10);
    *end = stop;
    *out = n;
    return errno == 0 && n <= max;
}

/* ---- the device's variables ---- */

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
    if (vkb_env_unset(value)) return VKBERT_OK;
    if (!vkb_env_count(value, &end, UINT64_MAX, &ctx->env.timeout_ms) || *end)
        return vkb_env_bad(ctx, "VKBERT_TIMEOUT_MS", value, "milliseconds, a whole number");
    return VKBERT_OK;
}

static vkbert_status read_load_threads(vkbert_context *ctx)
{
    const char *name = "VKBERT_LOAD_THREADS", *value = getenv(name), *end;
    uint64_t n;
    ctx->env.load_threads = 0;
    if (vkb_env_unset(value)) return VKBERT_OK;
    if (!vkb_env_count(value, &end, 64, &n) || *end || !n)
        return vkb_env_bad(ctx, name, value, "a number of threads from 1 to 64");
    ctx->env.load_threads = (uint32_t)n;
    return VKBERT_OK;
}

static vkbert_status read_fault_hook(vkbert_context *ctx)
{
    const char *name = "VKBERT_FAULT_LOST_AFTER_PASSES", *value = getenv(name), *end;
    uint64_t n;
    ctx->faults.lost_after_passes = -1;
    if (vkb_env_unset(value)) return VKBERT_OK;
    if (!vkb_env_count(value, &end, INT64_MAX, &n) || *end)
        return vkb_env_bad(ctx, name, value, "a number of passes, a whole number");
    ctx->faults.lost_after_passes = (int64_t)n;
    return VKBERT_OK;
}

static vkbert_status read_device_env(vkbert_context *ctx)
{
    vkb_env *env = &ctx->env;
    vkbert_status status = vkb_env_switch(ctx, "VKBERT_VALIDATION", getenv("VKBERT_VALIDATION"),
                                          false, &env->validation);
    if (!status)
        status = vkb_env_switch(ctx, "VKBERT_FORCE_STAGING", getenv("VKBERT_FORCE_STAGING"), false,
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
    vkbert_status status = read_device_env(ctx);
    if (status) return status;
    /* The option wins over the variable, with the same values ("off", a path; "" is unset). */
    const char *setting = cache_dir && *cache_dir ? cache_dir : getenv("VKBERT_CACHE_DIR");
    if (!vkb_cache_dir_resolve(setting, env->cache_dir, sizeof env->cache_dir))
        env->cache_dir[0] = '\0';
    return VKBERT_OK;
}
