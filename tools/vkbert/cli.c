/* Shared by the subcommands: option parsing, messages, the context's lifetime. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_OPTIONS 32

/* ---- messages ---- */

static void vprint_error(const char *fmt, va_list ap)
{
    fputs("vkbert: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint_error(fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAILURE;
}

int cli_usage_error(const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint_error(fmt, ap);
    va_end(ap);
    fputs(usage, stderr);
    return CLI_EXIT_USAGE;
}

int cli_api_error(const vkbert_context *ctx, const char *what)
{
    if (what) return cli_error("%s: %s", what, vkbert_last_error(ctx));
    return cli_error("%s", vkbert_last_error(ctx));
}

void cli_print_json_string(const char *text)
{
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if (*c < 0x20)
            printf("\\u%04x", *c);
        else
            putchar(*c);
    }
    putchar('"');
}

void cli_print_json_number(double value)
{
    if (isfinite(value))
        printf("%.7g", value);
    else
        fputs("null", stdout); /* JSON has no NaN or infinity */
}

void cli_format_shape(char *out, size_t size, int ndim, const int64_t *shape)
{
    size_t n = 0;
    if (size == 0) return;
    out[0] = '\0';
    for (int i = -1; i <= ndim && n < size; i++) {
        int k;
        if (i < 0)
            k = snprintf(out + n, size - n, "[");
        else if (i == ndim)
            k = snprintf(out + n, size - n, "]");
        else
            k = snprintf(out + n, size - n, i ? ", %lld" : "%lld", (long long)shape[i]);
        if (k < 0) return;
        n += (size_t)k;
    }
}

/* ---- option values ---- */

static int parse_real(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int parse_u64(const char *text, uint64_t *out)
{
    char *end;
    if (*text < '0' || *text > '9') return -1; /* strtoull would take "-1" and spaces */
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (*end || errno) return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_int(const char *text, double min, double max, int *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || (double)v < min || (double)v > max) return -1;
    *out = (int)v;
    return 0;
}

static const char *kind_expectation(const cli_option *o)
{
    switch (o->kind) {
    case CLI_INT:
        return "an integer";
    case CLI_U64:
        return "an unsigned 64-bit integer";
    case CLI_REAL:
        return "a number";
    default:
        return "a value";
    }
}

/* Stores `text` into the option; -1 when it is malformed or out of range. */
static int store_value(const cli_option *o, const char *text)
{
    double real;
    switch (o->kind) {
    case CLI_STRING:
        *(const char **)o->value = text;
        return 0;
    case CLI_INT:
        return parse_int(text, o->min, o->max, (int *)o->value);
    case CLI_U64:
        return parse_u64(text, (uint64_t *)o->value);
    case CLI_REAL:
        if (parse_real(text, &real) || real < o->min || real > o->max) return -1;
        *(double *)o->value = real;
        return 0;
    default:
        return -1;
    }
}

static int value_error(const char *usage, const cli_option *o, const char *text)
{
    if (o->kind == CLI_INT || o->kind == CLI_REAL)
        return cli_usage_error(usage, "--%s takes %s in [%g, %g], not '%s'", o->name,
                               kind_expectation(o), o->min, o->max, text);
    return cli_usage_error(usage, "--%s takes %s, not '%s'", o->name, kind_expectation(o), text);
}

/* ---- parsing ---- */

static const cli_option *find_option(const cli_option *options, int count, const char *name,
                                     size_t len)
{
    for (int i = 0; i < count; i++)
        if (strlen(options[i].name) == len && strncmp(options[i].name, name, len) == 0)
            return &options[i];
    return NULL;
}

static int check_required(const char *usage, const cli_option *options, int count, const int *seen)
{
    for (int i = 0; i < count; i++)
        if (options[i].required && !seen[i])
            return cli_usage_error(usage, "missing required option --%s", options[i].name);
    return CLI_CONTINUE;
}

static int is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int cli_parse(const char *usage, int argc, char **argv, const cli_option *options, int count)
{
    int seen[CLI_MAX_OPTIONS] = {0};
    if (count > CLI_MAX_OPTIONS) return cli_error("internal error: too many options");
    for (int i = 1; i < argc; i++)
        if (is_help(argv[i])) return fputs(usage, stdout), CLI_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            return cli_usage_error(usage, "unexpected argument '%s' to '%s'", arg, argv[0]);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_option *o = find_option(options, count, name, len);
        if (!o) return cli_usage_error(usage, "unknown option '%s' for '%s'", arg, argv[0]);
        seen[o - options] = 1;
        if (o->kind == CLI_FLAG) {
            if (eq) return cli_usage_error(usage, "--%s takes no value", o->name);
            *(int *)o->value = 1;
            continue;
        }
        const char *text = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!text) return cli_usage_error(usage, "--%s needs a value", o->name);
        if (store_value(o, text)) return value_error(usage, o, text);
    }
    return check_required(usage, options, count, seen);
}

/* ---- the context ---- */

int cli_open(const char *device, int timestamps, vkbert_context **ctx)
{
    vkbert_context_options options = VKBERT_CONTEXT_OPTIONS_INIT;
    options.device = device;
    options.timestamps = timestamps;
    vkbert_status status = vkbert_context_create(&options, ctx);
    /* Timestamps only add the device's own time to a report: a device without them still runs. */
    if (status == VKBERT_ERROR_DEVICE_LIMIT && timestamps) {
        options.timestamps = 0;
        status = vkbert_context_create(&options, ctx);
    }
    if (status != VKBERT_OK) return cli_api_error(NULL, "cannot create a Vulkan context");
    return 0;
}

int cli_close(vkbert_context *ctx, int code)
{
    if (!ctx) return code;
    char first[1024];
    uint32_t n = vkbert_validation_messages(ctx, first, sizeof first);
    if (n > 0)
        code = cli_error("the validation layer reported %u message%s; the first: %s", n,
                         n == 1 ? "" : "s", first);
    vkbert_context_destroy(ctx);
    return code;
}

int cli_precision(const char *usage, const char *name, vkbert_precision *out)
{
    *out = VKBERT_PRECISION_FP32;
    if (!name || !strcmp(name, "fp32")) return CLI_CONTINUE;
    if (!strcmp(name, "fp16")) {
        *out = VKBERT_PRECISION_FP16;
        return CLI_CONTINUE;
    }
    if (!strcmp(name, "int8")) {
        *out = VKBERT_PRECISION_INT8;
        return CLI_CONTINUE;
    }
    return cli_usage_error(usage, "--precision must be fp32, fp16 or int8, not '%s'", name);
}
