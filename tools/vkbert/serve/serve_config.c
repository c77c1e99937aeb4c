/* vkbert serve's flags and their VKBERT_SERVE_* environment variables. A flag wins over its
 * variable, as TEI's clap flags do (router/src/main.rs: each `#[clap(long, env)]`); the
 * defaults are TEI's. */
#include "cli.h"
#include "serve.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert serve --model DIR [--host ADDR] [--port N] [--device N[,N...]]\n"
    "                    [--precision fp32|fp16|int8] [--max-batch-tokens N]\n"
    "                    [--max-batch-requests N] [--max-client-batch-size N]\n"
    "                    [--max-concurrent-requests N] [--payload-limit BYTES]\n"
    "                    [--api-key KEY] [--served-model-name NAME]\n"
    "                    [--auto-truncate [true|false]] [--quiet]\n"
    "                    [--request-deadline-ms N] [--drain-deadline-ms N]\n"
    "                    [--max-connections-per-ip N]\n"
    "\n"
    "Serves a model folder over HTTP: OpenAI's POST /v1/embeddings and text-embeddings-\n"
    "inference's POST /embed, /rerank, /predict, /tokenize, /decode and GET /health, /info,\n"
    "/metrics, batching the inputs of concurrent requests. Each flag also reads the environment\n"
    "variable named after it; the flag wins. SIGTERM or SIGINT finishes the requests in flight\n"
    "and exits.\n"
    "  --model DIR                  VKBERT_SERVE_MODEL: a sentence-transformers or HuggingFace\n"
    "                               BERT folder (required)\n"
    "  --host ADDR                  VKBERT_SERVE_HOST: the address to listen on (default\n"
    "                               127.0.0.1; 0.0.0.0 or :: for every interface)\n"
    "  --port N                     VKBERT_SERVE_PORT: 0..65535 (default 8080; 0: a free port)\n"
    "  --device N                   VKBERT_SERVE_DEVICE: device indices, repeated or joined by\n"
    "                               ',', one model and scheduler each (default: VKBERT_DEVICE,\n"
    "                               else the best device)\n"
    "  --precision P                VKBERT_SERVE_PRECISION: fp32 (default), fp16 or int8 weights\n"
    "  --max-batch-tokens N         VKBERT_SERVE_MAX_BATCH_TOKENS: padded tokens of one forward\n"
    "                               pass (default 16384; at least the model's maximum length)\n"
    "  --max-batch-requests N       VKBERT_SERVE_MAX_BATCH_REQUESTS: inputs of one forward pass\n"
    "                               (default 0: no limit)\n"
    "  --max-client-batch-size N    VKBERT_SERVE_MAX_CLIENT_BATCH_SIZE: inputs of one request\n"
    "                               (default 32)\n"
    "  --max-concurrent-requests N  VKBERT_SERVE_MAX_CONCURRENT_REQUESTS: requests in flight;\n"
    "                               more are answered 429 (default 512)\n"
    "  --payload-limit BYTES        VKBERT_SERVE_PAYLOAD_LIMIT: the largest request body; more\n"
    "                               is answered 413 (default 2000000)\n"
    "  --api-key KEY                VKBERT_SERVE_API_KEY: every route but /health and /metrics\n"
    "                               then needs `Authorization: Bearer KEY` (default: none, every\n"
    "                               client is let in; the variable set to empty counts as unset,\n"
    "                               as every variable here; an empty --api-key is an error)\n"
    "  --served-model-name NAME     VKBERT_SERVE_SERVED_MODEL_NAME: the model's name in replies\n"
    "                               (default: the folder's name)\n"
    "  --auto-truncate [true|false] VKBERT_SERVE_AUTO_TRUNCATE: what a request without\n"
    "                               `truncate` (and every /v1/embeddings one) does with a text\n"
    "                               over the model's limit: true cuts it, false refuses it with\n"
    "                               413 (default true; the flag alone means true)\n"
    "  --quiet                      VKBERT_SERVE_QUIET=1: no line per request on stderr\n"
    "  --request-deadline-ms N      VKBERT_SERVE_REQUEST_DEADLINE_MS: the longest a request's\n"
    "                               headers and body may take to arrive, from the connection\n"
    "                               (or the previous answer on it); then it is closed\n"
    "                               (default 30000)\n"
    "  --drain-deadline-ms N        VKBERT_SERVE_DRAIN_DEADLINE_MS: after SIGTERM, the longest\n"
    "                               the requests in flight may take; then the queued ones get\n"
    "                               503, the connections close and the process exits (default\n"
    "                               30000)\n"
    "  --max-connections-per-ip N   VKBERT_SERVE_MAX_CONNECTIONS_PER_IP: connections one client\n"
    "                               address may hold (default: half of the connection limit,\n"
    "                               2 x --max-concurrent-requests + 64; 0: no limit)\n";

/* Every setting: its flag, its variable, and the text it was given (the flag's, else the
 * variable's, else NULL for the default). */
enum {
    S_MODEL,
    S_HOST,
    S_PORT,
    S_DEVICE,
    S_PRECISION,
    S_MAX_BATCH_TOKENS,
    S_MAX_BATCH_REQUESTS,
    S_MAX_CLIENT_BATCH_SIZE,
    S_MAX_CONCURRENT_REQUESTS,
    S_PAYLOAD_LIMIT,
    S_API_KEY,
    S_SERVED_MODEL_NAME,
    S_AUTO_TRUNCATE,
    S_QUIET,
    S_REQUEST_DEADLINE_MS,
    S_DRAIN_DEADLINE_MS,
    S_MAX_CONNECTIONS_PER_IP,
    S_COUNT
};

static const char *const flag_names[S_COUNT] = {
    "model",
    "host",
    "port",
    "device",
    "precision",
    "max-batch-tokens",
    "max-batch-requests",
    "max-client-batch-size",
    "max-concurrent-requests",
    "payload-limit",
    "api-key",
    "served-model-name",
    "auto-truncate",
    "quiet",
    "request-deadline-ms",
    "drain-deadline-ms",
    "max-connections-per-ip",
};

static const char *const env_names[S_COUNT] = {
    "VKBERT_SERVE_MODEL",
    "VKBERT_SERVE_HOST",
    "VKBERT_SERVE_PORT",
    "VKBERT_SERVE_DEVICE",
    "VKBERT_SERVE_PRECISION",
    "VKBERT_SERVE_MAX_BATCH_TOKENS",
    "VKBERT_SERVE_MAX_BATCH_REQUESTS",
    "VKBERT_SERVE_MAX_CLIENT_BATCH_SIZE",
    "VKBERT_SERVE_MAX_CONCURRENT_REQUESTS",
    "VKBERT_SERVE_PAYLOAD_LIMIT",
    "VKBERT_SERVE_API_KEY",
    "VKBERT_SERVE_SERVED_MODEL_NAME",
    "VKBERT_SERVE_AUTO_TRUNCATE",
    "VKBERT_SERVE_QUIET",
    "VKBERT_SERVE_REQUEST_DEADLINE_MS",
    "VKBERT_SERVE_DRAIN_DEADLINE_MS",
    "VKBERT_SERVE_MAX_CONNECTIONS_PER_IP",
};

typedef struct sources {
    const char *text[S_COUNT];
    int from_flag[S_COUNT];
    /* --device may be repeated: each value is a list of its own */
    const char *devices[SERVE_MAX_DEVICES];
    int device_flags;
} sources;

/* The name a message gives a setting: the flag when the value came from one. */
static void setting_name(const sources *src, int s, char *out, size_t size)
{
    if (src->from_flag[s])
        snprintf(out, size, "--%s", flag_names[s]);
    else
        snprintf(out, size, "%s", env_names[s]);
}

/* An unsigned decimal in [min, max]; -1 when malformed or out of range. */
static int parse_count(const char *text, unsigned long long min, unsigned long long max,
                       unsigned long long *out)
{
    char *end;
    if (*text < '0' || *text > '9') return -1; /* strtoull would take "-1" and spaces */
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end || errno || v < min || v > max) return -1;
    *out = v;
    return 0;
}

static int number(const sources *src, int s, unsigned long long min, unsigned long long max,
                  unsigned long long *out)
{
    char name[64];
    if (!src->text[s] || !parse_count(src->text[s], min, max, out)) return 0;
    setting_name(src, s, name, sizeof name);
    return cli_usage_error(usage, "%s takes an integer in [%llu, %llu], not '%s'", name, min, max,
                           src->text[s]);
}

/* Leaves *out, the default, alone when the setting is not given. */
static int int_setting(const sources *src, int s, int min, int *out)
{
    if (!src->text[s]) return 0;
    unsigned long long v = 0;
    int code = number(src, s, (unsigned long long)min, INT_MAX, &v);
    *out = (int)v;
    return code;
}

/* ---- the settings that are not plain numbers ---- */

/* Appends the comma-separated device indices of `list` to out->devices. */
static int add_devices(const char *name, const char *list, serve_config *out)
{
    const char *p = list;
    for (;;) {
        char item[32];
        size_t len = strcspn(p, ",");
        unsigned long long index;
        if (len >= sizeof item) len = sizeof item - 1; /* too long to be an index anyway */
        memcpy(item, p, len);
        item[len] = '\0';
        if (parse_count(item, 0, INT_MAX, &index))
            return cli_usage_error(usage, "%s takes device indices joined by ',', not '%s'", name,
                                   list);
        if (out->device_count == SERVE_MAX_DEVICES)
            return cli_usage_error(usage, "%s: at most %d devices", name, SERVE_MAX_DEVICES);
        out->devices[out->device_count++] = (int)index;
        p += strcspn(p, ",");
        if (!*p) return 0;
        p++;
    }
}

static int devices_setting(const sources *src, serve_config *out)
{
    if (src->device_flags == 0)
        return src->text[S_DEVICE] ? add_devices(env_names[S_DEVICE], src->text[S_DEVICE], out) : 0;
    for (int i = 0; i < src->device_flags; i++) {
        int code = add_devices("--device", src->devices[i], out);
        if (code) return code;
    }
    return 0;
}

static int precision_setting(const sources *src, vkbert_precision *out)
{
    const char *p = src->text[S_PRECISION];
    char name[64];
    *out = VKBERT_PRECISION_FP32;
    if (!p || !strcmp(p, "fp32")) return 0;
    if (!strcmp(p, "fp16")) return *out = VKBERT_PRECISION_FP16, 0;
    if (!strcmp(p, "int8")) return *out = VKBERT_PRECISION_INT8, 0;
    setting_name(src, S_PRECISION, name, sizeof name);
    return cli_usage_error(usage, "%s must be fp32, fp16 or int8, not '%s'", name, p);
}

static int quiet_setting(const sources *src, int *out)
{
    const char *q = src->text[S_QUIET];
    *out = 0;
    if (src->from_flag[S_QUIET] || (q && !strcmp(q, "1"))) return *out = 1, 0;
    if (!q || !strcmp(q, "0")) return 0;
    return cli_usage_error(usage, "%s must be 0 or 1, not '%s'", env_names[S_QUIET], q);
}

/* TEI's --auto-truncate is a boolean with the default true; 1 and 0 are taken too, as
 * VKBERT_SERVE_QUIET's words. */
static int auto_truncate_setting(const sources *src, int *out)
{
    const char *t = src->text[S_AUTO_TRUNCATE];
    char name[64];
    if (!t || !strcmp(t, "true") || !strcmp(t, "1")) return *out = 1, 0;
    if (!strcmp(t, "false") || !strcmp(t, "0")) return *out = 0, 0;
    setting_name(src, S_AUTO_TRUNCATE, name, sizeof name);
    return cli_usage_error(usage, "%s must be true or false, not '%s'", name, t);
}

static int numbers(const sources *src, serve_config *out)
{
    unsigned long long port = (unsigned long long)out->port, payload = out->payload_limit;
    int code = number(src, S_PORT, 0, 65535, &port);
    if (!code) code = int_setting(src, S_MAX_BATCH_TOKENS, 1, &out->max_batch_tokens);
    if (!code) code = int_setting(src, S_MAX_BATCH_REQUESTS, 0, &out->max_batch_requests);
    if (!code) code = int_setting(src, S_MAX_CLIENT_BATCH_SIZE, 1, &out->max_client_batch_size);
    if (!code) code = int_setting(src, S_MAX_CONCURRENT_REQUESTS, 1, &out->max_concurrent_requests);
    /* serve_http.c sizes a body buffer as the limit + 1 and grows it by doubling: a limit past
     * SIZE_MAX / 2 would wrap those sizes */
    if (!code) code = number(src, S_PAYLOAD_LIMIT, 1, SIZE_MAX / 2, &payload);
    if (!code) code = int_setting(src, S_REQUEST_DEADLINE_MS, 1, &out->request_deadline_ms);
    if (!code) code = int_setting(src, S_DRAIN_DEADLINE_MS, 0, &out->drain_deadline_ms);
    if (!code) code = int_setting(src, S_MAX_CONNECTIONS_PER_IP, 0, &out->max_connections_per_ip);
    out->port = (int)port;
    out->payload_limit = (size_t)payload;
    return code;
}

/* ---- where the texts come from ---- */

static void read_environment(sources *src)
{
    for (int s = 0; s < S_COUNT; s++) {
        const char *v = getenv(env_names[s]);
        src->text[s] = v && *v ? v : NULL; /* empty counts as unset, as VKBERT_DEVICE does */
    }
}

static int find_flag(const char *arg, size_t len)
{
    for (int s = 0; s < S_COUNT; s++)
        if (strlen(flag_names[s]) == len && !strncmp(flag_names[s], arg, len)) return s;
    return -1;
}

/* The value of flag s at argv[*i]: after '=', else the next argument (consumed). The value of
 * --auto-truncate is optional: without one, or before another flag, it is "true". */
static const char *flag_value(int argc, char **argv, int *i, int s, const char *eq)
{
    if (eq) return eq + 1;
    int next = *i + 1 < argc;
    if (s == S_AUTO_TRUNCATE && (!next || !strncmp(argv[*i + 1], "--", 2))) return "true";
    return next ? argv[++*i] : NULL;
}

/* Reads "--flag value", "--flag=value", "--auto-truncate" and "--quiet" over the environment's
 * texts. cli_parse keeps one value per option, and --device may be repeated, so the flags are
 * read here with cli_parse's syntax and messages. */
static int read_flags(int argc, char **argv, sources *src)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq = strchr(arg, '=');
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            return cli_usage_error(usage, "unexpected argument '%s' to '%s'", arg, argv[0]);
        int s = find_flag(arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
        if (s < 0) return cli_usage_error(usage, "unknown option '%s' for '%s'", arg, argv[0]);
        src->from_flag[s] = 1;
        if (s == S_QUIET) {
            if (eq) return cli_usage_error(usage, "--quiet takes no value");
            continue;
        }
        const char *text = flag_value(argc, argv, &i, s, eq);
        if (!text) return cli_usage_error(usage, "--%s needs a value", flag_names[s]);
        if (s != S_DEVICE) {
            src->text[s] = text;
        } else if (src->device_flags == SERVE_MAX_DEVICES) {
            return cli_usage_error(usage, "--device: at most %d devices", SERVE_MAX_DEVICES);
        } else {
            src->devices[src->device_flags++] = text;
        }
    }
    return 0;
}

static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

static void set_defaults(serve_config *out)
{
    memset(out, 0, sizeof *out);
    out->host = "127.0.0.1";
    out->port = 8080;
    out->precision = VKBERT_PRECISION_FP32;
    /* TEI's defaults (router/src/main.rs): max_batch_tokens 16384, max_batch_requests none,
     * max_client_batch_size 32, max_concurrent_requests 512, payload_limit 2000000,
     * auto_truncate true */
    out->max_batch_tokens = 16384;
    out->max_client_batch_size = 32;
    out->max_concurrent_requests = 512;
    out->payload_limit = 2000000;
    out->auto_truncate = 1;
    out->request_deadline_ms = 30000;
    out->drain_deadline_ms = 30000;
    out->max_connections_per_ip = -1; /* serve_http.c: half the connection limit */
}

int serve_config_parse(int argc, char **argv, serve_config *out)
{
    sources src;
    memset(&src, 0, sizeof src);
    set_defaults(out);
    if (wants_help(argc, argv)) return fputs(usage, stdout), 1;
    read_environment(&src);
    int code = read_flags(argc, argv, &src);
    if (!code) code = numbers(&src, out);
    if (!code) code = devices_setting(&src, out);
    if (!code) code = precision_setting(&src, &out->precision);
    if (!code) code = auto_truncate_setting(&src, &out->auto_truncate);
    if (!code) code = quiet_setting(&src, &out->quiet);
    if (code) return code;
    /* An empty key would let in `Authorization: Bearer ` alone, where the empty variable
     * means no key at all: refused, so that the two never disagree. */
    if (src.from_flag[S_API_KEY] && !src.text[S_API_KEY][0])
        return cli_usage_error(usage, "--api-key needs a non-empty key (leave the flag out to "
                                      "serve without one)");
    if (!src.text[S_MODEL])
        return cli_usage_error(usage, "missing required option --model (or VKBERT_SERVE_MODEL)");
    out->model_dir = src.text[S_MODEL];
    if (src.text[S_HOST]) out->host = src.text[S_HOST];
    out->api_key = src.text[S_API_KEY];
    out->served_model_name = src.text[S_SERVED_MODEL_NAME];
    return CLI_EXIT_OK;
}
