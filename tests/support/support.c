#define _POSIX_C_SOURCE 200809L /* posix_spawn */
#include "support.h"
#include "io/half.h"
#include "tune/tune.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static vkbert_context *make_context(int timestamps, const char *limits)
{
    vkbert_context_options options = {.struct_size = sizeof(vkbert_context_options),
                                      .validation = 1,
                                      .timestamps = timestamps,
                                      .limits = limits};
    vkbert_context *ctx = NULL;
    vkbert_status status = vkbert_context_create(&options, &ctx);
    cr_assert_eq(status, VKBERT_OK, "context: %s", vkbert_last_error(NULL));
    /* A run meant for another subgroup size (tests/CMakeLists.txt) must get it, or it would
     * pass without testing anything new. */
    const char *want = getenv("VKBERT_TEST_SUBGROUP_SIZE");
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    if (want && *want) {
        TEST_OK(vkbert_context_device(ctx, &info));
        cr_assert_eq(info.subgroup_size, (uint32_t)atoi(want), "subgroup size %u, not %s",
                     info.subgroup_size, want);
    }
    return ctx;
}

vkbert_context *test_context(int timestamps)
{
    return make_context(timestamps, NULL);
}

vkbert_context *test_context_limited(const char *limits)
{
    return make_context(0, limits);
}

void test_context_done(vkbert_context *ctx)
{
    char first[1024];
    uint32_t count = vkbert_validation_messages(ctx, first, sizeof first);
    unsigned before = atomic_load(&vkb_validation_total);
    vkbert_context_destroy(ctx);
    cr_assert_eq(count, 0, "%u validation messages, the first: %s", count, first);
    /* The object tracker reports every Vulkan object still alive when the device goes. */
    unsigned teardown = atomic_load(&vkb_validation_total) - before;
    cr_assert_eq(teardown, 0, "%u validation messages while destroying the context: %s", teardown,
                 vkb_validation_last);
}

void test_limits_refused(const char *limits, const char *words)
{
    vkbert_context_options options = {
        .struct_size = sizeof(vkbert_context_options), .validation = 1, .limits = limits};
    vkbert_context *ctx = NULL;
    vkbert_status status = vkbert_context_create(&options, &ctx);
    cr_assert_eq(status, VKBERT_ERROR_INVALID_ARGUMENT, "%s: %s", limits,
                 vkbert_status_name(status));
    cr_assert_null(ctx);
    cr_assert(strstr(vkbert_last_error(NULL), words), "%s: \"%s\" does not say \"%s\"", limits,
              vkbert_last_error(NULL), words);
}

test_weights test_weights_random(int embed_dim, uint64_t seed)
{
    test_weights w = {.embed_dim = embed_dim};
    ref_rng rng = {seed};
    double bound = 1.0 / sqrt((double)embed_dim);
    size_t e = (size_t)embed_dim;
    for (int z = 0; z < 4; z++) {
        w.w[z] = malloc(e * e * sizeof(float));
        w.b[z] = malloc(e * sizeof(float));
        cr_assert(w.w[z] && w.b[z]);
        ref_fill(&rng, w.w[z], e * e, -bound, bound);
        ref_fill(&rng, w.b[z], e, -bound, bound);
    }
    return w;
}

void test_weights_free(test_weights *w)
{
    for (int z = 0; z < 4; z++)
        free(w->w[z]), free(w->b[z]);
}

vkbert_attention_weights test_weights_api(const test_weights *w)
{
    return (vkbert_attention_weights){sizeof(vkbert_attention_weights),
                                      w->w[0],
                                      w->b[0],
                                      w->w[1],
                                      w->b[1],
                                      w->w[2],
                                      w->b[2],
                                      w->w[3],
                                      w->b[3]};
}

ref_layer test_weights_ref(const test_weights *w, int heads)
{
    return (ref_layer){w->embed_dim, heads,   w->w[0], w->b[0], w->w[1],
                       w->b[1],      w->w[2], w->b[2], w->w[3], w->b[3]};
}

float *test_poisoned(size_t n)
{
    float *data = malloc(n * sizeof *data);
    cr_assert(data);
    for (size_t i = 0; i < n; i++)
        data[i] = NAN;
    return data;
}

void test_assert_close(const float *got, const double *want, size_t n, double bound,
                       const char *what)
{
    ref_error err = ref_compare(got, want, n);
    cr_assert(err.relative_l2 <= bound, "%s: relative L2 error %.3g > %.3g", what, err.relative_l2,
              bound);
    cr_assert(err.max_abs <= 10 * bound * err.max_ref, "%s: max error %.3g > %.3g * %.3g", what,
              err.max_abs, 10 * bound, err.max_ref);
}

void test_assert_fp32_close(const float *got, const double *want, size_t n, const char *what)
{
    test_assert_close(got, want, n, 1e-5, what);
}

vkb_buffer test_half_buffer(vkbert_context *ctx, float *data, size_t n)
{
    uint16_t *h = malloc(n * 2);
    cr_assert_not_null(h);
    for (size_t i = 0; i < n; i++) {
        h[i] = float_to_half(data[i]);
        data[i] = half_to_float(h[i]);
    }
    vkb_buffer buffer;
    TEST_OK(vkb_buffer_create(ctx, n * 2, &buffer));
    TEST_OK(vkb_buffer_upload(ctx, &buffer, 0, h, n * 2));
    free(h);
    return buffer;
}

void test_half_buffer_read(vkbert_context *ctx, const vkb_buffer *buffer, float *out, size_t n)
{
    uint16_t *h = malloc(n * 2);
    cr_assert_not_null(h);
    TEST_OK(vkb_buffer_download(ctx, buffer, 0, h, n * 2));
    for (size_t i = 0; i < n; i++)
        out[i] = half_to_float(h[i]);
    free(h);
}

vkb_buffer test_buffer(vkbert_context *ctx, const float *data, size_t n)
{
    vkb_buffer buffer;
    TEST_OK(vkb_buffer_create(ctx, n * sizeof(float), &buffer));
    TEST_OK(vkb_buffer_upload(ctx, &buffer, 0, data, n * sizeof(float)));
    return buffer;
}

void test_buffer_read(vkbert_context *ctx, const vkb_buffer *buffer, float *out, size_t n)
{
    TEST_OK(vkb_buffer_download(ctx, buffer, 0, out, n * sizeof(float)));
}

VkDescriptorPool test_pool(vkbert_context *ctx)
{
    VkDescriptorPool pool;
    TEST_OK(vkb_descriptor_pool(ctx, 16, &pool));
    return pool;
}

void test_run(vkbert_context *ctx, vkb_dispatch *dispatches, uint32_t count)
{
    VkCommandBuffer cmd = ctx->transfer_cmd;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    cr_assert_eq(vkBeginCommandBuffer(cmd, &begin), VK_SUCCESS);
    vkb_cmd_barrier(cmd);
    for (uint32_t i = 0; i < count; i++) {
        if (i) vkb_cmd_barrier(cmd);
        vkb_cmd_dispatch(cmd, &dispatches[i]);
    }
    vkb_cmd_barrier_to_host(cmd);
    vkb_cmd_barrier(cmd);
    cr_assert_eq(vkEndCommandBuffer(cmd), VK_SUCCESS);
    TEST_OK(vkb_submit_wait(ctx, cmd));
    for (uint32_t i = 0; i < count; i++)
        vkb_dispatch_release(ctx, &dispatches[i]);
}

void test_read_text(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    out[fread(out, 1, size - 1, f)] = '\0';
    fclose(f);
}

void test_write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

size_t test_read_bytes(const char *path, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static void run_cli(const char *dir, const char *stdin_path, const char *stdout_path,
                    const char *const *args, test_cli_result *r)
{
    const char *cli = getenv("VKBERT_CLI");
    cr_assert(cli && *cli, "set VKBERT_CLI to the path of the vkbert binary");
    char *argv[32] = {(char *)cli};
    for (int i = 0; args[i]; i++) {
        cr_assert_lt(i, 30, "too many arguments");
        argv[i + 1] = (char *)args[i];
    }
    char out[256], err[256];
    snprintf(out, sizeof out, "%s/stdout.txt", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, stdout_path ? stdout_path : out,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (stdin_path) posix_spawn_file_actions_addopen(&actions, 0, stdin_path, O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, cli, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    cr_assert_eq(rc, 0, "cannot run %s", cli);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    r->out[0] = '\0';
    if (!stdout_path) test_read_text(out, r->out, sizeof r->out);
    test_read_text(err, r->err, sizeof r->err);
    unlink(out);
    unlink(err);
    cr_assert(WIFEXITED(status), "vkbert died of signal %d; stderr:\n%s", WTERMSIG(status), r->err);
    r->code = WEXITSTATUS(status);
}

vkbert_context *test_context_sharing(const char *limits)
{
    vkbert_context *ctx = test_context_limited(limits);
    const char *off = getenv("VKBERT_SIMD_SHUFFLE");
    bool shuffle = (ctx->subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                   (ctx->subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    bool simd = vkb_tune_family(ctx) == VKB_FAMILY_SIMD;
    if (!simd || !shuffle || (off && !strcmp(off, "0"))) {
        test_context_done(ctx);
        cr_skip_test("no shuffles in the simd family here (%s)",
                     simd ? "no subgroup shuffle, or VKBERT_SIMD_SHUFFLE=0" : "VKBERT_KERNELS");
    }
    return ctx;
}

void test_run_cli(const char *dir, const char *const *args, test_cli_result *r)
{
    run_cli(dir, NULL, NULL, args, r);
}

void test_run_cli_to(const char *dir, const char *stdout_path, const char *const *args,
                     test_cli_result *r)
{
    run_cli(dir, NULL, stdout_path, args, r);
}

void test_run_cli_stdin(const char *dir, const char *stdin_path, const char *const *args,
                        test_cli_result *r)
{
    run_cli(dir, stdin_path, NULL, args, r);
}
