/* The environment is read once, when a context is made (src/vk/vk_env.c): a variable set later
 * is not seen by that context and is seen by the next; vkbert_bench_override changes a tuning
 * variable on a live context, NULL restores what the environment said at creation, and a bad
 * name or value fails with a message naming it, as a bad value fails context creation. The
 * expectations come from the rules in vkbert.h, not from the library's answers. */
#include "support.h"
#include "tune/tune.h"

#include <stdlib.h>
#include <string.h>

/* The family a context picks with VKBERT_KERNELS unset: simd on CPU-backed devices
 * (src/tune/tune.c, docs/drivers.md), gpu elsewhere. */
static vkb_family by_device(const vkbert_context *ctx)
{
    return ctx->info.type == VKBERT_DEVICE_CPU ? VKB_FAMILY_SIMD : VKB_FAMILY_GPU;
}

static vkb_family other(vkb_family family)
{
    return family == VKB_FAMILY_SIMD ? VKB_FAMILY_GPU : VKB_FAMILY_SIMD;
}

/* No tuning variable and no tuning cache: the built-in choices, whatever ran the test. */
static void clean_environment(void)
{
    const char *names[] = {"VKBERT_KERNELS", "VKBERT_ATTENTION", "VKBERT_MATMUL_TILES",
                           "VKBERT_MATMUL_FALLBACK", "VKBERT_SIMD_SHUFFLE"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        unsetenv(names[i]);
    setenv("VKBERT_CACHE_DIR", "off", 1);
}

/* The attention path a small layer ran, as the public benchmark reports it. */
static bool runs_fused(vkbert_context *ctx)
{
    vkbert_bench_result r;
    memset(&r, 0x5a, sizeof r);
    r.struct_size = sizeof r;
    TEST_OK(vkbert_bench_attention(ctx, 1, 8, 32, 2, VKBERT_PRECISION_FP32, 1, &r));
    bool fused = strstr(r.config, " fused attention") != NULL;
    cr_assert(fused || strstr(r.config, "unfused attention"), "%.256s", r.config);
    return fused;
}

Test(env, set_after_creation_seen_by_the_next_context_only)
{
    clean_environment();
    vkbert_context *ctx = test_context(1);
    vkb_family family = by_device(ctx);
    cr_assert_eq(vkb_tune_family(ctx), family);
    cr_assert(runs_fused(ctx), "fused is the default where nothing was measured");
    setenv("VKBERT_KERNELS", vkb_family_name(other(family)), 1);
    setenv("VKBERT_ATTENTION", "unfused", 1);
    setenv("VKBERT_MATMUL_TILES", "not even tiles", 1); /* would fail a new context */
    cr_assert_eq(vkb_tune_family(ctx), family, "the context saw VKBERT_KERNELS set after it");
    cr_assert(runs_fused(ctx), "the context saw VKBERT_ATTENTION set after it");
    test_context_done(ctx);

    unsetenv("VKBERT_MATMUL_TILES");
    ctx = test_context(1);
    cr_assert_eq(vkb_tune_family(ctx), other(family));
    cr_assert_not(runs_fused(ctx));
    test_context_done(ctx);
}

Test(env, override_takes_effect_and_null_restores)
{
    clean_environment();
    setenv("VKBERT_ATTENTION", "unfused", 1);
    vkbert_context *ctx = test_context(1);
    vkb_family family = by_device(ctx);
    /* What the environment says now is not what NULL restores: the creation's copy is. */
    setenv("VKBERT_ATTENTION", "fused", 1);
    setenv("VKBERT_KERNELS", vkb_family_name(other(family)), 1);
    cr_assert_not(runs_fused(ctx));
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_ATTENTION", "fused"));
    cr_assert(runs_fused(ctx));
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_ATTENTION", NULL));
    cr_assert_not(runs_fused(ctx));
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_ATTENTION", "")); /* as if unset */
    cr_assert(runs_fused(ctx));

    TEST_OK(vkbert_bench_override(ctx, "VKBERT_KERNELS", vkb_family_name(other(family))));
    cr_assert_eq(vkb_tune_family(ctx), other(family));
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_KERNELS", NULL));
    cr_assert_eq(vkb_tune_family(ctx), family);

    TEST_OK(vkbert_bench_override(ctx, "VKBERT_SIMD_SHUFFLE", "0"));
    cr_assert_not(ctx->env.tuning.simd_shuffle);
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_SIMD_SHUFFLE", NULL));
    cr_assert(ctx->env.tuning.simd_shuffle, "unset means shuffles where the device has them");
    test_context_done(ctx);
}

/* The tiles asked for, snapped and checked as src/tune/tune.c documents: the simd family's to a
 * compiled register tile, the gpu family's kept when they fit. */
Test(env, override_of_the_tiles)
{
    clean_environment();
    vkbert_context *ctx = test_context(0);
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_KERNELS", "gpu"));
    char table[96], now[96];
    vkb_matmul_tiles t = vkb_tune_matmul(ctx, 256, 256, 256, 0, 0);
    vkb_matmul_describe(&t, table, sizeof table);
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_MATMUL_TILES", "8,8,4,1,8"));
    t = vkb_tune_matmul(ctx, 256, 256, 256, 0, 0);
    cr_assert(t.family == VKB_FAMILY_GPU && t.wg_x == 8 && t.wg_y == 8 && t.tm == 4 && t.tn4 == 1 &&
              t.bk == 8 && t.bm == 32 && t.bn == 32);
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_MATMUL_TILES", "16,8,8,1")); /* bk: 16 */
    t = vkb_tune_matmul(ctx, 256, 256, 256, 0, 0);
    cr_assert(t.wg_x == 16 && t.wg_y == 8 && t.tm == 8 && t.tn4 == 1 && t.bk == 16);
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_MATMUL_FALLBACK", "1"));
    cr_assert_eq(vkb_tune_matmul(ctx, 256, 256, 256, 0, 0).bk, 0, "the fallback has no slices");
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_MATMUL_FALLBACK", NULL));
    TEST_OK(vkbert_bench_override(ctx, "VKBERT_MATMUL_TILES", NULL));
    t = vkb_tune_matmul(ctx, 256, 256, 256, 0, 0);
    vkb_matmul_describe(&t, now, sizeof now);
    cr_assert_str_eq(now, table, "the table's own choice again");
    test_context_done(ctx);
}

static void assert_refused(vkbert_context *ctx, const char *name, const char *value,
                           const char *words)
{
    cr_assert_eq(vkbert_bench_override(ctx, name, value), VKBERT_ERROR_INVALID_ARGUMENT,
                 "%s=%s was taken", name ? name : "(null)", value ? value : "(null)");
    cr_assert(strstr(vkbert_last_error(ctx), words), "%s=%s: %s", name ? name : "(null)",
              value ? value : "(null)", vkbert_last_error(ctx));
}

Test(env, bad_overrides_fail_clearly_and_change_nothing)
{
    clean_environment();
    vkbert_context *ctx = test_context(0);
    vkb_tuning_env before = ctx->env.tuning;
    assert_refused(ctx, "VKBERT_DEVICE", "0", "no tuning variable");
    assert_refused(ctx, "VKBERT_KERNEL", "simd", "\"VKBERT_KERNEL\"");
    assert_refused(ctx, NULL, "simd", "name is NULL");
    assert_refused(ctx, "VKBERT_KERNELS", "cuda", "VKBERT_KERNELS");
    assert_refused(ctx, "VKBERT_ATTENTION", "flash", "fused or unfused");
    const char *tiles[] = {"1,2,3",    "1,2,3,4,", "0,8,4,1",  "8,8,4,1,16,2",
                           "8,8,-4,1", "a,b,c,d",  "8 ,8,4,1", "8,8,4,99999"};
    for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++)
        assert_refused(ctx, "VKBERT_MATMUL_TILES", tiles[i], "VKBERT_MATMUL_TILES");
    assert_refused(ctx, "VKBERT_MATMUL_FALLBACK", "yes", "0 or 1");
    assert_refused(ctx, "VKBERT_SIMD_SHUFFLE", "2", "VKBERT_SIMD_SHUFFLE");
    cr_assert(!memcmp(&before, &ctx->env.tuning, sizeof before), "a refused value was kept");
    cr_assert_eq(vkbert_bench_override(NULL, "VKBERT_KERNELS", "simd"),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(NULL), "ctx is NULL"));
    test_context_done(ctx);
}

static void assert_creation_refused(const char *name, const char *value)
{
    const char *saved = getenv(name);
    char *restore = saved ? strdup(saved) : NULL;
    setenv(name, value, 1);
    vkbert_context *ctx = NULL;
    cr_assert_eq(vkbert_context_create(NULL, &ctx), VKBERT_ERROR_INVALID_ARGUMENT, "%s=%s", name,
                 value);
    cr_assert_null(ctx);
    cr_assert(strstr(vkbert_last_error(NULL), name), "%s=%s: %s", name, value,
              vkbert_last_error(NULL));
    if (restore)
        setenv(name, restore, 1);
    else
        unsetenv(name);
    free(restore);
}

Test(env, bad_values_fail_context_creation)
{
    clean_environment();
    assert_creation_refused("VKBERT_KERNELS", "cuda");
    assert_creation_refused("VKBERT_ATTENTION", "sometimes");
    assert_creation_refused("VKBERT_MATMUL_TILES", "8x8");
    assert_creation_refused("VKBERT_MATMUL_FALLBACK", "on");
    assert_creation_refused("VKBERT_SIMD_SHUFFLE", "off");
    assert_creation_refused("VKBERT_FORCE_STAGING", "yes");
    assert_creation_refused("VKBERT_VALIDATION", "true");
    assert_creation_refused("VKBERT_TIMEOUT_MS", "-5");
    assert_creation_refused("VKBERT_TIMEOUT_MS", "10s");
    assert_creation_refused("VKBERT_FAULT_LOST_AFTER_PASSES", "-1");
    assert_creation_refused("VKBERT_FAULT_LOST_AFTER_PASSES", "two");
    char long_list[2048];
    memset(long_list, 'a', sizeof long_list - 1);
    long_list[sizeof long_list - 1] = '\0';
    assert_creation_refused("VKBERT_LIMITS", long_list);
    /* Empty counts as unset. */
    setenv("VKBERT_KERNELS", "", 1);
    setenv("VKBERT_TIMEOUT_MS", "", 1);
    vkbert_context *ctx = test_context(0);
    cr_assert_eq(vkb_tune_family(ctx), by_device(ctx));
    test_context_done(ctx);
}

/* What only creation uses is read then too: the fence timeout, and staging. */
Test(env, creation_values_taken_at_creation)
{
    clean_environment();
    setenv("VKBERT_TIMEOUT_MS", "1234", 1);
    setenv("VKBERT_FORCE_STAGING", "1", 1);
    vkbert_context *ctx = test_context(0);
    cr_assert_eq(ctx->timeout_ns, 1234ull * 1000000ull);
    cr_assert_not(ctx->host_visible_device_memory, "VKBERT_FORCE_STAGING=1 stages");
    cr_assert_eq(ctx->env.lost_after_passes, -1, "the fault hook is off when unset");
    test_context_done(ctx);
}

/* Staged copies larger than the staging buffer's bound (16 MiB, src/vk/vk_memory.c) go in
 * pieces, at offsets that are no multiple of it, and the buffer stays within the bound. */
Test(env, staged_copies_in_bounded_pieces)
{
    clean_environment();
    setenv("VKBERT_FORCE_STAGING", "1", 1);
    vkbert_context *ctx = test_context(0);
    size_t n = (size_t)10 << 20, skip = 1001; /* 40 MiB of floats, the first `skip` left out */
    float *data = malloc(n * sizeof *data), *got = test_poisoned(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (float)(i % 65521); /* exact in fp32; a misplaced piece shows */
    vkb_buffer buffer = {0};
    TEST_OK(vkb_buffer_create(ctx, n * sizeof *data, &buffer));
    TEST_OK(vkb_buffer_upload(ctx, &buffer, skip * 4, data + skip, (n - skip) * 4));
    TEST_OK(vkb_buffer_download(ctx, &buffer, skip * 4, got + skip, (n - skip) * 4));
    cr_assert_leq(ctx->staging.size, (VkDeviceSize)16 << 20, "staging of %llu bytes",
                  (unsigned long long)ctx->staging.size);
    for (size_t i = skip; i < n; i++)
        cr_assert_eq(got[i], (float)(i % 65521), "element %zu: %g", i, got[i]);
    vkb_buffer_destroy(ctx, &buffer);
    free(data), free(got);
    test_context_done(ctx);
}
