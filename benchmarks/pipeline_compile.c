/* What each embedded SPIR-V module costs the driver to compile: the wall time of making its
 * pipeline (vkb_pipeline_get, the library's own path: shader module, layouts,
 * vkCreateComputePipelines), of its first dispatch (where some drivers generate the code), and
 * the growth of the process's peak resident memory meanwhile. A development tool for portability
 * (phone drivers compile big shaders slowly and with a lot of memory); prints a markdown table
 * for docs/benchmarks.md.
 *
 * usage: pipeline_compile [REPEATS [TIMEOUT_S [NAME_SUBSTRING]]]
 *
 * How, and why so:
 * - Every module runs in a child process of its own, which opens a context, makes and
 *   dispatches the pipeline REPEATS times (medians reported) and exits: a compiler that crashes
 *   or runs out of memory (SwiftShader under `ulimit -v`) fails its row, not the table; a child
 *   past TIMEOUT_S is killed and reported as such. The parent never touches Vulkan.
 * - No caching anywhere: the context's pipeline cache is set aside (VK_NULL_HANDLE) while
 *   measuring, vkbert's on-disk caches are off (VKBERT_CACHE_DIR=off, so the tuning table's
 *   built-in choices apply, not a local `vkbert tune`), and Mesa's shader disk cache too.
 * - Peak memory: VmHWM is reset to the current RSS through /proc/self/clear_refs ("5", Linux
 *   4.0) after the context exists; the figure is VmHWM after the repeats minus VmRSS before.
 *   Where the reset is refused the row says so and the figure is only the growth of VmHWM.
 * - Specialization: the constants the library passes for a BERT-base layer (E 768, I 3072,
 *   sequence 128, batch 1) on this device, from the tuning table (src/tune/tune.c), family forced
 *   per module through VKBERT_KERNELS as a user could; see spec_rules. Binding types come
 *   from the SPIR-V itself. */
#define _POSIX_C_SOURCE 200809L /* fork, setenv, strsignal */
#include "benchmarks/shader_list.h"
#include "tune/tune.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPEATS 64

typedef struct compile_result {
    int ran;       /* the child reached the end and wrote this */
    int hwm_reset; /* /proc/self/clear_refs accepted the reset */
    int skipped;   /* the device cannot run the module: `error` says why */
    /* medians: making the pipeline, its first dispatch, a second dispatch, the first two
     * together; min and max of those two together */
    double create_ms, first_ms, later_ms, total_ms, min_ms, max_ms;
    double peak_mib;
    char spec[96];                   /* the constants used, for the table */
    char error[VKB_ERROR_SIZE + 16]; /* empty when every compile succeeded */
    vkbert_device_info info;
} compile_result;

/* ---- specialization, as the ops pass it (src/ops/X.c) ---- */

typedef struct spec_values {
    uint32_t v[VKB_MAX_SPEC];
    uint32_t count;
} spec_values;

/* BERT-base's FFN up-projection (M 128 tokens, N 3072, K 768) with bias and GELU: the
 * matmul with the largest epilogue. The family and shared-memory choice follow the module. */
static spec_values matmul_spec(const vkbert_context *ctx, const char *name)
{
    bool simd = strncmp(name, "matmul_simd", 11) == 0;
    bool fallback = !simd && strncmp(name, "matmul_gpu", 10) != 0;
    /* The context reads VKBERT_KERNELS and VKBERT_MATMUL_FALLBACK once (src/vk/vk_env.c): its
     * copy is changed for the question and put back. */
    vkb_tuning_env *tuning = &((vkbert_context *)ctx)->env.tuning, saved = *tuning;
    tuning->kernels = simd ? VKB_KERNELS_SIMD : VKB_KERNELS_GPU;
    tuning->matmul_fallback = fallback;
    vkb_matmul_tiles t = vkb_tune_matmul(ctx, 128, 3072, 768, 0, 0);
    *tuning = saved;
    /* The simd modules' register tile is in their name (CMakeLists.txt), and the library
     * passes that tile (matmul.c, simd_shader). */
    const char *tile = strrchr(name, '_');
    if (simd && tile) sscanf(tile + 1, "%ux%u", &t.tm, &t.tn4);
    return (spec_values){{t.wg_x, t.wg_y, t.tm, t.tn4, 0, 1, t.bk, 1, 0, 0, 0}, 11};
}

/* BERT-base's heads: 64 floats, 16 vec4, held whole (one slice; src/ops/attention_fused.c). */
static spec_values fused_spec(const vkbert_context *ctx, const char *name)
{
    (void)name;
    return (spec_values){{vkb_tune_fused_workgroup(ctx, 128), 0, 0, 16, 16}, 5};
}

static spec_values softmax_spec(const vkbert_context *ctx, const char *name)
{
    (void)name;
    return (spec_values){{vkb_tune_softmax_workgroup(ctx, 128)}, 1};
}

/* layer_norm, pool and l2_normalize: one row of E 768 per workgroup. */
static spec_values row_spec(const vkbert_context *ctx, const char *name)
{
    (void)name;
    return (spec_values){{vkb_tune_softmax_workgroup(ctx, 768)}, 1};
}

static spec_values embedding_spec(const vkbert_context *ctx, const char *name)
{
    (void)name;
    return (spec_values){{vkb_tune_softmax_workgroup(ctx, 768), 0}, 2};
}

static spec_values elementwise_spec(const vkbert_context *ctx, const char *name)
{
    (void)name;
    return (spec_values){{vkb_tune_elementwise_workgroup(ctx)}, 1};
}

/* First match wins; a module no rule names compiles with its shader's defaults (and its row
 * says so), which is right for fma_peak and copy_bandwidth and flags a rule to add. */
static const struct {
    const char *prefix;
    spec_values (*make)(const vkbert_context *ctx, const char *name);
} spec_rules[] = {
    {"matmul", matmul_spec},
    {"attention_fused", fused_spec},
    {"softmax", softmax_spec},
    {"layer_norm", row_spec},
    {"pool", row_spec},
    {"l2_normalize", row_spec},
    {"embedding", embedding_spec},
    {"head_split", elementwise_spec},
    {"head_merge", elementwise_spec},
};

static const char *no_spec[] = {"fma_peak", "copy_bandwidth"};

static spec_values module_spec(const vkbert_context *ctx, const char *name, char *text, size_t size)
{
    spec_values s = {{0}, 0};
    bool known = false;
    for (size_t i = 0; i < sizeof spec_rules / sizeof *spec_rules && !known; i++)
        if (strncmp(name, spec_rules[i].prefix, strlen(spec_rules[i].prefix)) == 0)
            s = spec_rules[i].make(ctx, name), known = true;
    for (size_t i = 0; i < sizeof no_spec / sizeof *no_spec; i++)
        known |= strcmp(name, no_spec[i]) == 0;
    snprintf(text, size, "%s", known ? (s.count ? "" : "none") : "shader defaults (no rule)");
    for (uint32_t i = 0; i < s.count; i++)
        snprintf(text + strlen(text), size - strlen(text), "%s%u", i ? "," : "", s.v[i]);
    return s;
}

/* ---- binding types, read from the SPIR-V (texel buffers are sampled images of Dim Buffer) */

enum {
    OP_CAPABILITY = 17,
    OP_TYPE_IMAGE = 25,
    OP_TYPE_SAMPLED_IMAGE = 27,
    OP_TYPE_POINTER = 32,
    OP_VARIABLE = 59,
    OP_DECORATE = 71,
    DECORATION_BINDING = 33,
    DIM_BUFFER = 5,
    CAPABILITY_STORAGE_BUFFER_16BIT = 4433,
};

/* fp16 storage buffers (the fp16-weight matmuls): a device without them cannot make the
 * pipeline, and the library never asks it to (matmul.c checks first). */
static bool needs_16bit_storage(const vkb_spirv *s)
{
    const uint32_t *w = s->code;
    size_t n = s->size / 4;
    for (size_t i = 5; i < n && (w[i] >> 16); i += w[i] >> 16)
        if ((w[i] & 0xFFFF) == OP_CAPABILITY && i + 1 < n &&
            w[i + 1] == CAPABILITY_STORAGE_BUFFER_16BIT)
            return true;
    return false;
}

/* types[b] for every binding b below 4; returns the binding count (0 on a malformed module). */
static uint32_t binding_types(const vkb_spirv *s, VkDescriptorType types[4])
{
    const uint32_t *w = s->code;
    size_t n = s->size / 4;
    uint32_t bound = n > 5 ? w[3] : 0, count = 0;
    uint32_t *binding = calloc(bound + 1, sizeof *binding); /* 1 + binding, per variable */
    uint32_t *pointee = calloc(bound + 1, sizeof *pointee); /* of pointers and variables */
    bool *texel = calloc(bound + 1, sizeof *texel);         /* image types of Dim Buffer */
    for (size_t i = 5; bound && i < n && (w[i] >> 16); i += w[i] >> 16) {
        uint32_t op = w[i] & 0xFFFF, len = w[i] >> 16;
        if (i + len > n) break;
        if (op == OP_DECORATE && len >= 4 && w[i + 2] == DECORATION_BINDING && w[i + 1] < bound)
            binding[w[i + 1]] = 1 + w[i + 3];
        else if (op == OP_TYPE_IMAGE && len >= 4 && w[i + 1] < bound)
            texel[w[i + 1]] = w[i + 3] == DIM_BUFFER;
        else if (op == OP_TYPE_SAMPLED_IMAGE && len >= 3 && w[i + 1] < bound && w[i + 2] < bound)
            texel[w[i + 1]] = texel[w[i + 2]];
        else if (op == OP_TYPE_POINTER && len >= 4 && w[i + 1] < bound && w[i + 3] < bound)
            pointee[w[i + 1]] = w[i + 3];
        else if (op == OP_VARIABLE && len >= 4 && w[i + 2] < bound && w[i + 1] < bound)
            pointee[w[i + 2]] = pointee[w[i + 1]];
    }
    for (uint32_t id = 0; id < bound; id++) {
        uint32_t b = binding[id] - 1;
        if (!binding[id] || b >= 4) continue;
        types[b] = texel[pointee[id]] ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                      : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        if (b + 1 > count) count = b + 1;
    }
    free(binding), free(pointee), free(texel);
    return count;
}

/* ---- the child: one module ---- */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* A "VmHWM:" or "VmRSS:" line of /proc/self/status, in KiB (-1: not found). */
static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0) kib = strtol(line + strlen(key), NULL, 10);
    if (f) fclose(f);
    return kib;
}

static int reset_hwm(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts `v`. */
static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What every repeat binds: a quarter of one small buffer per binding, and a pool for a set. */
#define PROBE_BYTES 65536
typedef struct module_setup {
    VkDescriptorType types[4];
    uint32_t bindings;
    spec_values spec;
    vkb_buffer buffer;
    vkb_view views[4];
    VkDescriptorPool pool;
} module_setup;

static vkbert_status setup(vkbert_context *ctx, const vkb_spirv *s, module_setup *m,
                           compile_result *r)
{
    m->bindings = binding_types(s, m->types);
    m->spec = module_spec(ctx, s->name, r->spec, sizeof r->spec);
    vkbert_status status = vkb_buffer_create(ctx, 4 * PROBE_BYTES, &m->buffer);
    for (uint32_t i = 0; i < 4 && !status; i++)
        m->views[i] = vkb_sub(&m->buffer, i * PROBE_BYTES, PROBE_BYTES);
    if (!status) status = vkb_descriptor_pool(ctx, 1, &m->pool);
    return status;
}

/* One workgroup with every push constant 0 (no rows, no tokens, no iterations), so that each
 * kernel returns at once: what the first one costs beyond a later one is code generation the
 * driver left for first use (Mesa 22.3's llvmpipe JITs a compute shader at its first dispatch,
 * llvmpipe_update_cs in lp_state_cs.c). */
static vkbert_status dispatch_ms(vkbert_context *ctx, const vkb_dispatch *d, double *ms)
{
    VkCommandBuffer cmd = ctx->transfer_cmd;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    double start = now_ms();
    vkBeginCommandBuffer(cmd, &begin);
    vkb_cmd_dispatch(cmd, d);
    vkEndCommandBuffer(cmd);
    vkbert_status status = vkb_submit_wait(ctx, cmd);
    *ms = now_ms() - start;
    return status;
}

/* times[0]: making the pipeline; [1]: its first dispatch; [2]: a second one. */
static vkbert_status compile_once(vkbert_context *ctx, const vkb_spirv *s, module_setup *m,
                                  double times[3])
{
    vkb_dispatch d;
    memset(&d, 0, sizeof d);
    d.name = s->name;
    d.push_size = 128; /* what Vulkan guarantees, and more than any shader reads */
    d.groups[0] = d.groups[1] = d.groups[2] = 1;
    double start = now_ms();
    vkbert_status status = vkb_pipeline_get(ctx, s, m->types, m->bindings, d.push_size, m->spec.v,
                                            m->spec.count, &d.pipeline);
    times[0] = now_ms() - start;
    if (!status) status = vkb_descriptor_set(ctx, m->pool, m->views, &d);
    if (!status) status = dispatch_ms(ctx, &d, &times[1]);
    if (!status) status = dispatch_ms(ctx, &d, &times[2]);
    vkb_dispatch_release(ctx, &d);
    vkResetDescriptorPool(ctx->device, m->pool, 0);
    vkb_pipelines_release(ctx); /* the next repeat compiles again */
    return status;
}

static void summarize(double times[][3], int repeats, compile_result *r)
{
    double create[MAX_REPEATS], first[MAX_REPEATS], later[MAX_REPEATS], total[MAX_REPEATS];
    for (int i = 0; i < repeats; i++) {
        create[i] = times[i][0], first[i] = times[i][1], later[i] = times[i][2];
        total[i] = times[i][0] + times[i][1];
    }
    r->create_ms = median(create, repeats);
    r->first_ms = median(first, repeats);
    r->later_ms = median(later, repeats);
    r->total_ms = median(total, repeats);
    r->min_ms = total[0], r->max_ms = total[repeats - 1];
}

static void compile_repeats(vkbert_context *ctx, const vkb_spirv *s, int repeats, compile_result *r)
{
    if (needs_16bit_storage(s) && !ctx->info.fp16_storage) {
        r->skipped = 1;
        snprintf(r->error, sizeof r->error, "needs storageBuffer16BitAccess, which %s lacks",
                 ctx->info.name);
        return;
    }
    module_setup m;
    memset(&m, 0, sizeof m);
    double times[MAX_REPEATS][3];
    vkbert_status status = setup(ctx, s, &m, r);
    r->hwm_reset = reset_hwm();
    long base = r->hwm_reset ? status_kib("VmRSS:") : status_kib("VmHWM:");
    for (int i = 0; i < repeats && !status; i++)
        status = compile_once(ctx, s, &m, times[i]);
    if (status)
        snprintf(r->error, sizeof r->error, "%s", vkbert_last_error(ctx));
    else if (atomic_load(&vkb_validation_total)) /* with VKBERT_VALIDATION=1 */
        snprintf(r->error, sizeof r->error, "validation: %s", vkb_validation_last);
    if (!r->error[0]) {
        r->peak_mib = (status_kib("VmHWM:") - base) / 1024.0;
        summarize(times, repeats, r);
    }
    if (m.pool) vkDestroyDescriptorPool(ctx->device, m.pool, NULL);
    vkb_buffer_destroy(ctx, &m.buffer);
}

static void child(const vkb_spirv *s, int repeats, int fd)
{
    compile_result r;
    memset(&r, 0, sizeof r);
    vkbert_context *ctx;
    vkbert_context_options options = VKBERT_CONTEXT_OPTIONS_INIT;
    if (vkbert_context_create(&options, &ctx)) {
        snprintf(r.error, sizeof r.error, "%s", vkbert_last_error(NULL));
    } else {
        r.info = (vkbert_device_info)VKBERT_DEVICE_INFO_INIT;
        vkbert_context_device(ctx, &r.info);
        VkPipelineCache cache = ctx->pipeline_cache;
        ctx->pipeline_cache = VK_NULL_HANDLE;
        compile_repeats(ctx, s, repeats, &r);
        ctx->pipeline_cache = cache;
        vkbert_context_destroy(ctx);
    }
    r.ran = 1;
    ssize_t written = write(fd, &r, sizeof r);
    _exit(written == (ssize_t)sizeof r ? 0 : 1);
}

/* ---- the parent ---- */

static void read_result(int fd, compile_result *r)
{
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t n = read(fd, (char *)r + got, sizeof *r - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (got < sizeof *r) r->ran = 0;
}

/* How a child that wrote nothing ended. */
static void describe_death(int wait_status, int timeout_s, compile_result *r)
{
    if (WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGALRM)
        snprintf(r->error, sizeof r->error, "timed out after %d s", timeout_s);
    else if (WIFSIGNALED(wait_status))
        snprintf(r->error, sizeof r->error, "crashed: %s (signal %d)",
                 strsignal(WTERMSIG(wait_status)), WTERMSIG(wait_status));
    else
        snprintf(r->error, sizeof r->error, "exited %d without a result", WEXITSTATUS(wait_status));
}

static void run_module(const vkb_spirv *s, int repeats, int timeout_s, compile_result *r)
{
    memset(r, 0, sizeof *r);
    int fds[2];
    if (pipe(fds)) {
        snprintf(r->error, sizeof r->error, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm((unsigned)timeout_s);
        child(s, repeats, fds[1]);
    }
    close(fds[1]);
    if (pid < 0) snprintf(r->error, sizeof r->error, "fork: %s", strerror(errno));
    if (pid > 0) read_result(fds[0], r);
    close(fds[0]);
    int wait_status = 0;
    if (pid > 0 && waitpid(pid, &wait_status, 0) == pid && !r->ran)
        describe_death(wait_status, timeout_s, r);
}

/* A driver's message in one table cell: no column separators, no line breaks. */
static void print_cell(const char *text)
{
    for (; *text; text++)
        putchar(*text == '|' ? '/' : *text == '\n' ? ' ' : *text);
}

static void print_row(const vkb_spirv *s, const compile_result *r)
{
    printf("| %s | %zu | %s | ", s->name, s->size, r->spec[0] ? r->spec : "-");
    if (r->error[0]) {
        printf(r->skipped ? "skipped: " : "failed: ");
        print_cell(r->error);
        printf(" | | | | | |\n");
        return;
    }
    printf("%.1f | %.1f | %.1f | %.1f | %.1f–%.1f | %.1f%s |\n", r->create_ms, r->first_ms,
           r->later_ms, r->total_ms, r->min_ms, r->max_ms, r->peak_mib,
           r->hwm_reset ? "" : " (VmHWM not reset: a lower bound)");
}

/* From the first module's result: the device it opened, if any. */
static void print_header(const compile_result *first, int repeats)
{
    const vkbert_device_info *info = first->ran ? &first->info : NULL;
    printf("Device: %s; driver: %s; subgroup size %u. Medians of %d repeats, each module in a "
           "process of its own.\n\n",
           info ? info->name : "(none opened)", info ? info->driver : "-",
           info ? info->subgroup_size : 0, repeats);
    printf("| module | SPIR-V bytes | specialization | create ms | first dispatch ms | "
           "later dispatch ms | create + first ms | min–max | peak MiB |\n"
           "|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 5, timeout_s = argc > 2 ? atoi(argv[2]) : 300;
    const char *only = argc > 3 ? argv[3] : NULL;
    if (repeats < 1 || repeats > MAX_REPEATS || timeout_s < 1)
        return fprintf(stderr, "usage: %s [REPEATS 1-%d [TIMEOUT_S [NAME_SUBSTRING]]]\n", argv[0],
                       MAX_REPEATS),
               2;
    /* Every compile from scratch (see the top of the file). */
    setenv("VKBERT_CACHE_DIR", "off", 1);
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    bool header = false;
    for (size_t i = 0; i < sizeof all_shaders / sizeof *all_shaders; i++) {
        if (only && !strstr(all_shaders[i]->name, only)) continue;
        fprintf(stderr, "pipeline_compile: %s\n", all_shaders[i]->name);
        compile_result r;
        run_module(all_shaders[i], repeats, timeout_s, &r);
        if (!header) print_header(&r, repeats), header = true;
        /* Row by row, so that a run stopped early keeps what it measured. */
        print_row(all_shaders[i], &r);
        fflush(stdout);
    }
    return 0;
}
