/* The `load-base` case of `vkbert bench`. The folder is the caller's (--model DIR;
 * benchmarks/base_folder.py writes a BERT-base-shaped one): writing 438 MB for every run would
 * measure the disk, and a real checkpoint is what a user loads. The peak resident set is read
 * from Linux's /proc, reset before each load (clear_refs 5); elsewhere it is reported as not
 * measured. */
#include "bench_load.h"

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Resets the peak resident set to the current one; false where that cannot be done. */
static bool peak_rss_reset(void)
{
#ifdef __linux__
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
#else
    return false;
#endif
}

/* VmHWM, the peak resident set since the last reset, in bytes; 0 where unknown. */
static double peak_rss(void)
{
    double kib = 0;
#ifdef __linux__
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf kB", &kib) == 1) break;
    if (f) fclose(f);
#endif
    return kib * 1024.0;
}

/* Timed loads per repeat: the bench's 10 runs (3 with --quick). */
#define MAX_LOADS 10

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One load in a fresh context: its wall time in *ms, its peak RSS in rss[1] and the RSS before
 * it in rss[0] (0 unless measured). Returns the exit code of closing the context; a failure's
 * reason goes to why. */
static int load_once(const char *device, const char *dir, int fp16, double *ms, double rss[2],
                     char *why, size_t why_size)
{
    vkbert_context_options options = {.struct_size = sizeof(vkbert_context_options),
                                      .device = device};
    vkbert_context *ctx = NULL;
    if (vkbert_context_create(&options, &ctx)) {
        snprintf(why, why_size, "%s", vkbert_last_error(NULL));
        return 0;
    }
    vkbert_encoder_config config = {sizeof(vkbert_encoder_config),
                                    fp16 ? VKBERT_PRECISION_FP16 : VKBERT_PRECISION_FP32};
    vkbert_encoder *encoder = NULL;
    bool reset = peak_rss_reset();
    rss[0] = reset ? peak_rss() : 0; /* the reset made the peak the current RSS */
    double start = plat_now_ms();
    vkbert_status status = vkbert_encoder_load(ctx, dir, &config, &encoder);
    *ms = plat_now_ms() - start;
    rss[1] = reset ? peak_rss() : 0;
    vkbert_encoder_destroy(encoder);
    if (status)
        snprintf(why, why_size, "%s: %s", vkbert_status_name(status), vkbert_last_error(ctx));
    return cli_close(ctx, 0);
}

int bench_load(const char *device, const char *dir, int fp16, int runs, bench_load_result *out,
               char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    why[0] = '\0';
    if (!dir) {
        snprintf(why, why_size,
                 "needs --model DIR, a BERT folder (a BERT-base-shaped one: "
                 "python3 benchmarks/base_folder.py DIR)");
        return 0;
    }
    uint64_t size = 0;
    char *path = malloc(strlen(dir) + sizeof "/model.safetensors");
    if (path) sprintf(path, "%s/model.safetensors", dir);
    bool found = path && plat_file_info(path, &size) == PLAT_REGULAR;
    free(path);
    if (!found) {
        snprintf(why, why_size, "%s has no model.safetensors", dir);
        return 0;
    }
    out->file_bytes = (double)size;
    double ms[MAX_LOADS], rss[2] = {0, 0};
    /* The first load fills the page cache: docs/loading.md's targets are for a warm one. */
    int code = load_once(device, dir, fp16, &ms[0], rss, why, why_size);
    runs = runs < MAX_LOADS ? runs : MAX_LOADS;
    for (int i = 0; i < runs && !code && !why[0]; i++) {
        code = load_once(device, dir, fp16, &ms[i], rss, why, why_size);
        if (rss[1] > out->peak_rss_bytes)
            out->peak_rss_bytes = rss[1], out->rss_before_bytes = rss[0];
    }
    if (code || why[0]) return code;
    qsort(ms, (size_t)runs, sizeof *ms, compare_doubles);
    out->min_ms = ms[0];
    out->median_ms = runs % 2 ? ms[runs / 2] : (ms[runs / 2 - 1] + ms[runs / 2]) / 2;
    return 0;
}

double bench_load_rss_ratio(const bench_load_result *r)
{
    return r->file_bytes > 0 ? r->peak_rss_bytes / r->file_bytes : 0;
}

void bench_load_print(bench_spread load_ms, bench_spread rss_ratio, const bench_load_result *first,
                      int repeat)
{
    printf("  load     %.0f ms median of the loads", load_ms.median);
    if (repeat > 1) printf(" (%.0f..%.0f)", load_ms.min, load_ms.max);
    printf(", %.0f ms min (after one that warms the page cache)\n", first->min_ms);
    if (rss_ratio.median <= 0) {
        printf("  memory   peak RSS not measured on this system\n");
        return;
    }
    printf("  memory   peak RSS %.2fx", rss_ratio.median);
    if (repeat > 1) printf(" (%.2f..%.2f)", rss_ratio.min, rss_ratio.max);
    printf(" model.safetensors' %.1f MiB; before the load the process held %.1f MiB, its "
           "contexts included\n",
           first->file_bytes / (1024.0 * 1024.0), first->rss_before_bytes / (1024.0 * 1024.0));
}
