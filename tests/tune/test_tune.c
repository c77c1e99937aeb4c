/* The on-disk caches: the pipeline cache (src/vk/vk_cache.c) is written when a context ends,
 * read by the next, and a damaged, cut or foreign file is ignored and replaced; the tuning
 * cache (src/tune/tune_cache.c) steers the table (src/tune/tune.c) and is ignored where it is
 * corrupt, foreign or beyond the device's limits. Each test works in a fresh directory of its own
 * (Criterion runs each test in its own process, so setenv stays inside the test). */
#include "support.h"
#include "tune/tune.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void make_dirs(const char *dir)
{
    char *path = strdup(dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            cr_assert(!mkdir(path, 0700) || errno == EEXIST, "mkdir %s", path);
            *p = '/';
        }
    cr_assert(!mkdir(path, 0700) || errno == EEXIST, "mkdir %s", path);
    free(path);
}

/* A fresh directory under the build tree's cache (tests/CMakeLists.txt), else under /tmp. */
static char *fresh_dir(void)
{
    const char *parent = getenv("VKBERT_CACHE_DIR");
    if (!parent || !*parent || !strcmp(parent, "off")) parent = "/tmp";
    make_dirs(parent);
    char *dir = malloc(strlen(parent) + 32);
    cr_assert(dir);
    sprintf(dir, "%s/test_tune.XXXXXX", parent);
    cr_assert(mkdtemp(dir), "mkdtemp in %s", parent);
    return dir;
}

/* A fresh directory as VKBERT_CACHE_DIR (setenv copies the string). */
static void use_fresh_cache(void)
{
    char *dir = fresh_dir();
    setenv("VKBERT_CACHE_DIR", dir, 1);
    free(dir);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    fclose(f);
}

static uint8_t *read_file(const char *path, size_t *size)
{
    uint8_t *data = vkb_cache_read(path, (size_t)1 << 30, size);
    cr_assert(data, "cannot read %s", path);
    return data;
}

/* Makes pipelines: one small attention layer, run once. */
static void run_layer(vkbert_context *ctx)
{
    test_weights w = test_weights_random(8, 1);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer;
    float x[2 * 8] = {0.5f, -1.0f, 2.0f}, y[2 * 8];
    TEST_OK(vkbert_attention_create(ctx, 8, 2, &api, NULL, &layer));
    TEST_OK(vkbert_attention_forward_host(layer, 1, 2, x, NULL, NULL, y));
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
}

static void pipeline_path(const vkbert_context *ctx, char *out, size_t size)
{
    cr_assert(vkb_cache_path(ctx, VKB_CACHE_PIPELINES, out, size));
}

/* One context that makes pipelines; returns the bytes it started from. */
static size_t one_run(char *path, size_t size)
{
    vkbert_context *ctx = test_context(0);
    size_t loaded = ctx->pipeline_cache_loaded;
    if (path) pipeline_path(ctx, path, size);
    run_layer(ctx);
    test_context_done(ctx);
    return loaded;
}

/* ---- the pipeline cache ---- */

Test(pipeline_cache, written_at_destroy_and_reused)
{
    use_fresh_cache();
    char path[4096];
    cr_assert_eq(one_run(path, sizeof path), 0, "an empty directory has no cache to load");
    struct stat st;
    cr_assert(!stat(path, &st), "%s was not written", path);
    cr_assert_eq(st.st_mode & 0777, 0600);
    size_t loaded = one_run(NULL, 0);
    cr_assert_gt(loaded, 0, "the second context did not load %s", path);
    cr_assert_eq(loaded + 24, (size_t)st.st_size, "the driver data is all but the trailer");
}

Test(pipeline_cache, makes_its_directory_private)
{
    char *dir = fresh_dir(), nested[4200];
    snprintf(nested, sizeof nested, "%s/a/b/vkbert", dir);
    setenv("VKBERT_CACHE_DIR", nested, 1);
    one_run(NULL, 0);
    cr_assert_eq(count_entries(nested), 1);
    struct stat st;
    cr_assert(!stat(nested, &st) && S_ISDIR(st.st_mode));
    cr_assert_eq(st.st_mode & 0777, 0700);
    free(dir);
}

/* Writes `data` over the cache file, checks the next context starts empty without error, and
 * that it leaves a file the one after it loads. */
static void ignored_then_replaced(const char *path, const void *data, size_t size)
{
    write_file(path, data, size);
    cr_assert_eq(one_run(NULL, 0), 0, "a bad file was loaded");
    cr_assert_gt(one_run(NULL, 0), 0, "the bad file was not replaced");
}

Test(pipeline_cache, corrupt_file_ignored_and_replaced)
{
    use_fresh_cache();
    char path[4096];
    one_run(path, sizeof path);
    size_t size;
    uint8_t *data = read_file(path, &size);
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)(i * 37 + 11);
    ignored_then_replaced(path, data, size);
    /* One flipped bit in the driver's data, wherever it lies: the checksum catches it. */
    free(data);
    data = read_file(path, &size);
    data[size - 25] ^= 0x40;
    ignored_then_replaced(path, data, size);
    free(data);
    /* A whole file with bytes after it: its header still matches, its trailer no longer ends
     * the file (lavapipe writes no more than the header, so only this reaches the trailer). */
    data = read_file(path, &size);
    uint8_t *longer = calloc(size + 100, 1);
    memcpy(longer, data, size);
    ignored_then_replaced(path, longer, size + 100);
    free(longer);
    free(data);
    ignored_then_replaced(path, "", 0);
}

Test(pipeline_cache, truncated_file_ignored_and_replaced)
{
    use_fresh_cache();
    char path[4096];
    one_run(path, sizeof path);
    size_t size;
    uint8_t *data = read_file(path, &size);
    ignored_then_replaced(path, data, size - 1);
    ignored_then_replaced(path, data, 20); /* not even a header */
    free(data);
}

/* FNV-1a over the driver data, as src/vk/vk_cache.c's trailer holds it. */
static uint64_t fnv1a(const uint8_t *data, size_t size)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

Test(pipeline_cache, other_device_ignored_and_replaced)
{
    use_fresh_cache();
    char path[4096];
    one_run(path, sizeof path);
    size_t size;
    uint8_t *data = read_file(path, &size);
    size_t driver = size - 24;
    /* A whole file, trailer and all, whose header names another pipelineCacheUUID (bytes
     * 16-31) or another deviceID (bytes 12-15). */
    int fields[] = {16 + 5, 12};
    for (int f = 0; f < 2; f++) {
        uint8_t *foreign = malloc(size);
        memcpy(foreign, data, size);
        foreign[fields[f]] ^= 0x5a;
        uint64_t h = fnv1a(foreign, driver);
        memcpy(foreign + driver + 16, &h, 8); /* little-endian host assumed, as on every CI */
        ignored_then_replaced(path, foreign, size);
        free(foreign);
    }
    free(data);
}

/* The driver and the validation layer keep caches of their own under XDG_CACHE_HOME (Mesa's
 * mesa_shader_cache, for one): only vkbert's are looked for. */
Test(pipeline_cache, off_writes_nothing)
{
    char *home = fresh_dir(), xdg[4200], ours[4300];
    snprintf(xdg, sizeof xdg, "%s/.cache", home);
    setenv("HOME", home, 1);
    setenv("VKBERT_CACHE_DIR", "off", 1);
    for (int run = 0; run < 2; run++) {
        if (run) setenv("XDG_CACHE_HOME", xdg, 1);
        one_run(NULL, 0);
        cr_assert_eq(one_run(NULL, 0), 0);
        snprintf(ours, sizeof ours, "%s/vkbert", xdg);
        cr_assert_eq(count_entries(ours), -1, "%s was made with VKBERT_CACHE_DIR=off", ours);
    }
    setenv("VKBERT_CACHE_DIR", "", 1); /* empty: as if unset, so the home cache is used */
    one_run(NULL, 0);
    cr_assert_eq(count_entries(ours), 1);
    free(home);
}

/* The resolution that context creation makes (src/vk/vk_env.c); VKBERT_CACHE_DIR's value is
 * passed in, the home is looked up. */
Test(pipeline_cache, directory_from_the_environment)
{
    char dir[4096];
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    setenv("HOME", "/home/h", 1);
    cr_assert(vkb_cache_dir_resolve(NULL, dir, sizeof dir));
    cr_assert_str_eq(dir, "/x/cache/vkbert");
    setenv("XDG_CACHE_HOME", "relative", 1); /* invalid by the XDG spec */
    cr_assert(vkb_cache_dir_resolve("", dir, sizeof dir), "empty: as if unset");
    cr_assert_str_eq(dir, "/home/h/.cache/vkbert");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "", 1);
    cr_assert_not(vkb_cache_dir_resolve(NULL, dir, sizeof dir), "an empty HOME disables the cache");
    cr_assert(vkb_cache_dir_resolve("/elsewhere", dir, sizeof dir));
    cr_assert_str_eq(dir, "/elsewhere");
    cr_assert_not(vkb_cache_dir_resolve("off", dir, sizeof dir));
}

/* A context keeps the directory it was made with; the next one takes the new setting. */
Test(pipeline_cache, directory_read_once)
{
    char *first = fresh_dir(), *second = fresh_dir(), dir[4096];
    setenv("VKBERT_CACHE_DIR", first, 1);
    vkbert_context *ctx = test_context(0);
    setenv("VKBERT_CACHE_DIR", second, 1);
    cr_assert(vkb_cache_dir(ctx, dir, sizeof dir));
    cr_assert_str_eq(dir, first);
    run_layer(ctx);
    test_context_done(ctx);
    cr_assert_eq(count_entries(first), 1, "the pipeline cache went to the directory at creation");
    cr_assert_eq(count_entries(second), 0);
    ctx = test_context(0);
    cr_assert(vkb_cache_dir(ctx, dir, sizeof dir));
    cr_assert_str_eq(dir, second);
    test_context_done(ctx);
    free(first), free(second);
}

/* A context made with the cache_dir option keeps its caches there, whatever VKBERT_CACHE_DIR
 * says; the variable's directory (poisoned: nothing may go there) and value stay as they were.
 * The option takes the variable's values: "off" for none, "" as if not given. */
static vkbert_context *context_caching_in(const char *cache_dir)
{
    vkbert_context_options options = {
        .struct_size = sizeof(vkbert_context_options), .validation = 1, .cache_dir = cache_dir};
    vkbert_context *ctx = NULL;
    vkbert_status status = vkbert_context_create(&options, &ctx);
    cr_assert_eq(status, VKBERT_OK, "context: %s", vkbert_last_error(NULL));
    return ctx;
}

Test(pipeline_cache, option_wins_over_the_environment)
{
    char *mine = fresh_dir(), *poisoned = fresh_dir(), dir[4096];
    setenv("VKBERT_CACHE_DIR", poisoned, 1);
    vkbert_context *ctx = context_caching_in(mine);
    cr_assert(vkb_cache_dir(ctx, dir, sizeof dir));
    cr_assert_str_eq(dir, mine);
    run_layer(ctx);
    test_context_done(ctx);
    cr_assert_eq(count_entries(mine), 1, "the pipeline cache went to cache_dir");
    ctx = context_caching_in(mine);
    cr_assert_gt(ctx->pipeline_cache_loaded, 0, "the next context read it from there");
    test_context_done(ctx);
    ctx = context_caching_in("off");
    cr_assert_not(vkb_cache_dir(ctx, dir, sizeof dir));
    run_layer(ctx);
    test_context_done(ctx);
    ctx = context_caching_in("");
    cr_assert(vkb_cache_dir(ctx, dir, sizeof dir));
    cr_assert_str_eq(dir, poisoned, "an empty cache_dir is the variable's");
    test_context_done(ctx);
    cr_assert_eq(count_entries(poisoned), 0, "VKBERT_CACHE_DIR's directory was written");
    cr_assert_str_eq(getenv("VKBERT_CACHE_DIR"), poisoned);
    free(mine), free(poisoned);
}

Test(pipeline_cache, startup_times)
{
    use_fresh_cache();
    vkbert_context *ctx = test_context(0);
    double context_ms = -1, pipelines_ms = -1;
    TEST_OK(vkbert_context_startup_ms(ctx, &context_ms, &pipelines_ms));
    cr_assert(context_ms > 0 && pipelines_ms == 0, "%g %g", context_ms, pipelines_ms);
    run_layer(ctx);
    TEST_OK(vkbert_context_startup_ms(ctx, NULL, &pipelines_ms));
    cr_assert_gt(pipelines_ms, 0);
    test_context_done(ctx);
    cr_assert_eq(vkbert_context_startup_ms(NULL, NULL, NULL), VKBERT_ERROR_INVALID_ARGUMENT);
}

/* ---- the tuning cache ---- */

static const char tuned[] =
    "{\"matmul\": [{\"family\": \"simd\", \"m\": 1024, \"n\": 768, \"k\": 768, \"batch\": 1,"
    " \"wg_x\": 4, \"wg_y\": 8, \"tm\": 8, \"tn4\": 2, \"bk\": 0, \"ms\": 1.5},"
    " {\"family\": \"gpu\", \"m\": 1024, \"n\": 768, \"k\": 768, \"batch\": 1,"
    " \"wg_x\": 8, \"wg_y\": 8, \"tm\": 4, \"tn4\": 1, \"bk\": 8}],"
    " \"attention\": [{\"family\": \"simd\", \"batch\": 8, \"seq\": 128,"
    " \"score_bytes\": 6291456, \"fused\": false}]}";

static vkb_matmul_tiles tiles(const vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k,
                              uint32_t batch)
{
    return vkb_tune_matmul_batched(ctx, m, n, k, batch, 0, 0);
}

static void assert_tiles(vkb_matmul_tiles t, const char *want)
{
    char got[96];
    vkb_matmul_describe(&t, got, sizeof got);
    cr_assert_str_eq(got, want);
}

/* What the table chooses without the cache. */
static void assert_builtin(vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k, uint32_t batch)
{
    vkb_tune_cache *cache = ctx->tune;
    ctx->tune = NULL;
    char want[96];
    vkb_matmul_tiles t = tiles(ctx, m, n, k, batch);
    vkb_matmul_describe(&t, want, sizeof want);
    ctx->tune = cache;
    assert_tiles(tiles(ctx, m, n, k, batch), want);
    cr_assert(strcmp(want, "simd wg 4x8 tile 8x8") &&
                  strcmp(want, "gpu smem 32x32x8 wg 8x8 tile 4x4"),
              "the test's tiles must differ from the table's");
}

/* Saves `tuned` through the public API and returns a new context, which loads it. */
static vkbert_context *tuned_context(void)
{
    use_fresh_cache();
    vkbert_context *ctx = test_context(0);
    char path[4096];
    TEST_OK(vkbert_tune_save(ctx, tuned, path, sizeof path));
    cr_assert(strstr(path, "/tune-"), "%s", path);
    test_context_done(ctx);
    ctx = test_context(0);
    cr_assert(ctx->tune, "the new context did not load %s", path);
    return ctx;
}

/* The context reads the environment once: the tests change its copy. */
static void override(vkbert_context *ctx, const char *name, const char *value)
{
    TEST_OK(vkbert_bench_override(ctx, name, value));
}

Test(tune_cache, chosen_tiles_returned)
{
    vkbert_context *ctx = tuned_context();
    override(ctx, "VKBERT_KERNELS", "simd");
    assert_tiles(tiles(ctx, 1024, 768, 768, 1), "simd wg 4x8 tile 8x8");
    assert_tiles(tiles(ctx, 1024, 256, 768, 3), "simd wg 4x8 tile 8x8"); /* the same work */
    assert_tiles(tiles(ctx, 4096, 768, 768, 1), "simd wg 4x8 tile 8x8"); /* bigger: still */
    /* Far smaller, or far shallower (the per-head products): the built-in table. */
    assert_builtin(ctx, 64, 64, 768, 1);
    assert_builtin(ctx, 128, 128, 64, 96);
    override(ctx, "VKBERT_KERNELS", "gpu");
    assert_tiles(tiles(ctx, 1024, 768, 768, 1), "gpu smem 32x32x8 wg 8x8 tile 4x4");
    override(ctx, "VKBERT_MATMUL_FALLBACK", "1"); /* the fallback was not measured */
    assert_builtin(ctx, 1024, 768, 768, 1);
    override(ctx, "VKBERT_MATMUL_FALLBACK", NULL);
    override(ctx, "VKBERT_MATMUL_TILES", "16,16,4,1,16"); /* the override wins over the cache */
    assert_tiles(tiles(ctx, 1024, 768, 768, 1), "gpu smem 64x64x16 wg 16x16 tile 4x4");
    override(ctx, "VKBERT_MATMUL_TILES", NULL);
    test_context_done(ctx);
}

Test(tune_cache, attention_path_from_the_cache)
{
    vkbert_context *ctx = tuned_context();
    cr_assert_not(vkb_tune_attention_fused(ctx, 6291456));
    cr_assert_not(vkb_tune_attention_fused(ctx, 3 * 6291456)); /* nearest within 4x */
    cr_assert(vkb_tune_attention_fused(ctx, 64 * 6291456ull), "beyond 4x: the default");
    cr_assert(vkb_tune_attention_fused(ctx, (uint64_t)ctx->props.limits.maxStorageBufferRange + 4),
              "scores that cannot be held run fused whatever the cache says");
    override(ctx, "VKBERT_ATTENTION", "fused");
    cr_assert(vkb_tune_attention_fused(ctx, 6291456), "the override wins over the cache");
    override(ctx, "VKBERT_ATTENTION", NULL);
    override(ctx, "VKBERT_KERNELS", "gpu");
    cr_assert(vkb_tune_attention_fused(ctx, 6291456), "measured for the simd family only");
    test_context_done(ctx);
}

/* "int8_path": checked when saved, kept when later results do not say, ignored as "dot" where
 * the device has no integer dot product; VKBERT_INT8_PATH wins over it. */
Test(tune_cache, int8_path_from_the_cache)
{
    use_fresh_cache();
    vkbert_context *ctx = test_context(0);
    cr_assert_eq(vkbert_tune_save(ctx, "{\"int8_path\": \"fast\"}", NULL, 0),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    TEST_OK(vkbert_tune_save(ctx, "{\"int8_path\": \"dot\"}", NULL, 0));
    TEST_OK(vkbert_tune_save(ctx, "{}", NULL, 0)); /* nothing new: the path kept */
    test_context_done(ctx);
    ctx = test_context(0);
    bool dot = false;
    TEST_OK(vkb_tune_int8_dot(ctx, &dot));
    cr_assert_eq(vkb_tune_cache_int8_dot(ctx), ctx->int8_dot ? 1 : -1);
    cr_assert_eq(dot, ctx->int8_dot, "the measured dot, where the device has it");
    override(ctx, "VKBERT_INT8_PATH", "dequant");
    TEST_OK(vkb_tune_int8_dot(ctx, &dot));
    cr_assert_not(dot, "the override wins over the cache");
    test_context_done(ctx);
    ctx = test_context_limited("integer_dot_product=0");
    TEST_OK(vkb_tune_int8_dot(ctx, &dot));
    cr_assert_not(dot, "a measured dot where the device has none is ignored");
    cr_assert_eq(vkb_tune_cache_int8_dot(ctx), -1);
    test_context_done(ctx);
}

/* Tuning one family keeps what was measured for the other (VKBERT_KERNELS forces either). */
Test(tune_cache, other_family_kept)
{
    vkbert_context *ctx = tuned_context();
    const char *gpu_only =
        "{\"matmul\": [{\"family\": \"gpu\", \"m\": 1024, \"n\": 768, \"k\": 768, \"batch\": 1,"
        " \"wg_x\": 16, \"wg_y\": 8, \"tm\": 8, \"tn4\": 1, \"bk\": 16}]}";
    TEST_OK(vkbert_tune_save(ctx, gpu_only, NULL, 0));
    TEST_OK(vkbert_tune_save(ctx, "{}", NULL, 0)); /* nothing new: everything kept */
    test_context_done(ctx);
    ctx = test_context(0);
    override(ctx, "VKBERT_KERNELS", "gpu");
    assert_tiles(tiles(ctx, 1024, 768, 768, 1), "gpu smem 64x64x16 wg 16x8 tile 8x4");
    cr_assert(vkb_tune_attention_fused(ctx, 6291456), "no gpu attention entry was saved");
    override(ctx, "VKBERT_KERNELS", "simd");
    assert_tiles(tiles(ctx, 1024, 768, 768, 1), "simd wg 4x8 tile 8x8");
    cr_assert_not(vkb_tune_attention_fused(ctx, 6291456), "the simd entry was lost");
    test_context_done(ctx);
}

Test(tune_cache, entries_beyond_the_limits_ignored)
{
    vkbert_context *ctx = tuned_context();
    override(ctx, "VKBERT_KERNELS", "gpu");
    /* Limits lowered after loading: the entry is checked again at every use. */
    uint32_t shared = ctx->props.limits.maxComputeSharedMemorySize;
    ctx->props.limits.maxComputeSharedMemorySize = 1024;
    assert_builtin(ctx, 1024, 768, 768, 1);
    ctx->props.limits.maxComputeSharedMemorySize = shared;

    /* Saving refuses what the device cannot run: 128x128 slices 256 deep need 270 KB, and
     * 5x1 is no compiled register tile. */
    const char *too_big = "{\"matmul\": [{\"family\": \"gpu\", \"m\": 1024, \"n\": 768, \"k\": "
                          "768, \"batch\": 1, \"wg_x\": 16, \"wg_y\": 16, \"tm\": 8, \"tn4\": 2,"
                          " \"bk\": 256}]}";
    const char *not_compiled = "{\"matmul\": [{\"family\": \"simd\", \"m\": 1024, \"n\": 768, "
                               "\"k\": 768, \"batch\": 1, \"wg_x\": 8, \"wg_y\": 4, \"tm\": 5, "
                               "\"tn4\": 1, \"bk\": 0}]}";
    cr_assert_eq(vkbert_tune_save(ctx, too_big, NULL, 0), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "matmul entry 0"), "%s", vkbert_last_error(ctx));
    cr_assert_eq(vkbert_tune_save(ctx, not_compiled, NULL, 0), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_tune_save(ctx, "[1, 2]", NULL, 0), VKBERT_ERROR_INVALID_ARGUMENT);
    test_context_done(ctx);
}

/* Replaces this device's tuning file with `text`; the next context must come up without it. */
static void assert_file_ignored(const char *text)
{
    vkbert_context *ctx = test_context(0);
    char path[4096];
    cr_assert(vkb_cache_path(ctx, VKB_CACHE_TUNE, path, sizeof path));
    test_context_done(ctx);
    write_file(path, text, strlen(text));
    ctx = test_context(0);
    cr_assert_null(ctx->tune, "loaded: %s", text);
    test_context_done(ctx);
}

Test(tune_cache, corrupt_or_foreign_file_ignored)
{
    vkbert_context *ctx = tuned_context();
    char path[4096];
    cr_assert(vkb_cache_path(ctx, VKB_CACHE_TUNE, path, sizeof path));
    size_t size;
    char *good = (char *)read_file(path, &size);
    test_context_done(ctx);

    assert_file_ignored("{\"vkbert_tune\": 1, \"device\": {\"uuid\": ");
    assert_file_ignored("\x89PNG\r\n\x1a\n");
    assert_file_ignored("[]");
    /* Another device's results, and another version of the format. */
    char *uuid = strstr(good, "\"uuid\"");
    cr_assert(uuid);
    char *other = strdup(good);
    char *digit = strchr(other + (uuid - good) + 6, '"') + 1;
    *digit = *digit == 'f' ? '0' : 'f';
    assert_file_ignored(other);
    free(other);
    other = strdup(good);
    char *version = strstr(other, "\"vkbert_tune\":");
    cr_assert(version);
    version[strlen("\"vkbert_tune\":") + 1] = '9';
    assert_file_ignored(other);
    free(other);
    free(good);
}

Test(tune_cache, bad_entries_ignored_alone)
{
    vkbert_context *ctx = tuned_context();
    char path[4096];
    cr_assert(vkb_cache_path(ctx, VKB_CACHE_TUNE, path, sizeof path));
    size_t size;
    char *good = (char *)read_file(path, &size);
    test_context_done(ctx);
    /* A file with a first entry beyond the limits, a malformed one and the good ones. */
    char *matmul = strstr(good, "\"matmul\":");
    cr_assert(matmul);
    char *open = strchr(matmul, '[');
    const char *bad = "{\"family\": \"gpu\", \"m\": 1024, \"n\": 768, \"k\": 768, \"batch\": 1, "
                      "\"wg_x\": 16, \"wg_y\": 16, \"tm\": 8, \"tn4\": 2, \"bk\": 256}, "
                      "{\"family\": \"simd\", \"m\": -3}, ";
    size_t head = (size_t)(open + 1 - good);
    char *edited = malloc(size + strlen(bad) + 1);
    memcpy(edited, good, head);
    strcpy(edited + head, bad);
    strcat(edited, good + head);
    write_file(path, edited, strlen(edited));
    ctx = test_context(0);
    override(ctx, "VKBERT_KERNELS", "gpu");
    assert_tiles(tiles(ctx, 1024, 768, 768, 1), "gpu smem 32x32x8 wg 8x8 tile 4x4");
    override(ctx, "VKBERT_KERNELS", "simd");
    assert_tiles(tiles(ctx, 1024, 768, 768, 1), "simd wg 4x8 tile 8x8");
    test_context_done(ctx);
    free(edited);
    free(good);
}

Test(tune_cache, save_needs_a_cache)
{
    setenv("VKBERT_CACHE_DIR", "off", 1);
    vkbert_context *ctx = test_context(0);
    cr_assert_eq(vkbert_tune_save(ctx, tuned, NULL, 0), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "cache is off"), "%s", vkbert_last_error(ctx));
    test_context_done(ctx);
}
