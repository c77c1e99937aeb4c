/* A load generator for `vkbert serve`, to measure what its dynamic batching buys: N client threads,
 * each on one HTTP/1.1 keep-alive connection, send POST /embed requests of K texts back to back for
 * S seconds; the texts come in a fixed seeded order per client from a fixed set (built in, or one a
 * line from a file). Prints requests and tokens per second, latency percentiles, and the mean
 * inputs of a forward pass, as a table, or as one JSON object with --json (the table then goes to
 * stderr).
 *
 *   serve_load --url http://127.0.0.1:PORT --clients N --seconds S [--route /embed]
 *              [--texts FILE] [--batch K] [--json]
 *   serve_load --print-texts     (the built-in texts, one a line: benchmarks/serve.sh's vocabulary)
 *
 * How, and why so:
 * - Plain sockets and just enough HTTP: the status line, Content-Length (else the body runs to
 *   the close) and Connection: close; the body is read and dropped. A non-200 answer, a lost
 *   connection or a timeout (60 s) is an error, not a latency; the client reconnects.
 * - The server's /embed reply carries no usage (TEI's is a bare list of lists), so tokens come
 *   from GET /metrics before and after: vkbert_request_tokens_total for the route, and
 *   vkbert_batch_size's _sum and _count (inputs of each forward pass), and the share of the
 *   passes' tokens that was padding (vkbert_batch_tokens_sum, the padded tokens, against
 *   vkbert_batch_tokens_real_total); all lines of a name summed whatever their labels. Without
 *   /metrics those figures are missing, not zero.
 * - Rates are over the measured time, from the start to the last answer (requests sent before
 *   the deadline are waited for). Percentiles are nearest-rank over the successful requests. */
#define _POSIX_C_SOURCE 200809L /* getaddrinfo, clock_gettime, MSG_NOSIGNAL */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "serve_texts.h"

#define MAX_CLIENTS 1024
#define HEAD_MAX 16384

typedef struct options {
    char host[256], port[16], route[256];
    int clients, batch, json;
    double seconds;
    char **texts; /* JSON-escaped */
    int text_count;
    size_t longest; /* escaped bytes of the longest text */
    struct sockaddr_storage addr;
    socklen_t addr_len;
} options;

typedef struct client {
    const options *o;
    int index;
    double deadline_ms;
    double *latencies; /* ms of each 200 */
    long count, capacity, errors;
    double last_ms; /* when its last answer came */
} client;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- texts ---- */

/* JSON string contents (RFC 8259 section 7): quote, backslash and controls escaped. */
static char *json_escape(const char *s)
{
    size_t n = strlen(s), at = 0;
    char *out = malloc(n * 6 + 1);
    if (!out) return NULL;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            out[at++] = '\\', out[at++] = (char)c;
        else if (c < 0x20)
            at += (size_t)sprintf(out + at, "\\u%04x", c);
        else
            out[at++] = (char)c;
    }
    out[at] = 0;
    return out;
}

static int add_text(options *o, const char *text)
{
    char **grown = realloc(o->texts, sizeof *grown * (size_t)(o->text_count + 1));
    if (!grown) return 1;
    o->texts = grown;
    if (!(o->texts[o->text_count] = json_escape(text))) return 1;
    size_t n = strlen(o->texts[o->text_count++]);
    if (n > o->longest) o->longest = n;
    return 0;
}

/* One text a line; empty lines skipped (the server refuses empty inputs). */
static int load_texts(options *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return fprintf(stderr, "serve_load: cannot open %s: %s\n", path, strerror(errno)), 1;
    char *line = NULL;
    size_t size = 0;
    ssize_t n;
    int failed = 0;
    while (!failed && (n = getline(&line, &size, f)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (n > 0) failed = add_text(o, line);
    }
    free(line);
    fclose(f);
    if (!failed && o->text_count == 0) fprintf(stderr, "serve_load: %s has no texts\n", path);
    return failed || o->text_count == 0;
}

/* ---- HTTP over one connection ---- */

static int connect_to(const options *o)
{
    int fd = socket(o->addr.ss_family, SOCK_STREAM, 0), one = 1;
    struct timeval timeout = {60, 0};
    if (fd < 0) return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (connect(fd, (const struct sockaddr *)&o->addr, o->addr_len) == 0) return fd;
    close(fd);
    return -1;
}

static int send_all(int fd, const char *data, size_t size)
{
    while (size > 0) {
        ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 1;
        data += n, size -= (size_t)n;
    }
    return 0;
}

/* The value of header `name` in the head (lines after the status line), or NULL. */
static const char *header(const char *head, const char *name)
{
    size_t len = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        if (strncasecmp(line, name, len) == 0 && line[len] == ':')
            return line + len + 1 + strspn(line + len + 1, " \t");
    }
    return NULL;
}

/* Reads one response: its status, into *status, and its body, into body (NULL: dropped;
 * else malloc'd, NUL-terminated). Returns 0, or 1 when the connection failed; *keep is 0
 * when the server closes it after this response. */
static int read_response(int fd, int *status, char **body, int *keep)
{
    char head[HEAD_MAX + 1];
    size_t got = 0;
    char *end = NULL;
    while (!end) {
        if (got == HEAD_MAX) return 1;
        ssize_t n = recv(fd, head + got, HEAD_MAX - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 1;
        got += (size_t)n, head[got] = 0;
        end = strstr(head, "\r\n\r\n");
    }
    end[2] = 0; /* the head ends with its last header's CRLF */
    if (sscanf(head, "HTTP/1.%*d %d", status) != 1) return 1;
    const char *length = header(head, "Content-Length"), *connection = header(head, "Connection");
    *keep = !(connection && strncasecmp(connection, "close", 5) == 0) && length;
    long left = length ? strtol(length, NULL, 10) : -1; /* -1: to the close */
    size_t extra = got - (size_t)(end + 4 - head), size = 0, capacity = 4096;
    char *text = body ? malloc(capacity) : NULL;
    if (body && !text) return 1;
    for (char *from = end + 4; left != 0;) {
        if (extra == 0) {
            ssize_t n = recv(fd, head, HEAD_MAX, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 || (n == 0 && left > 0)) return free(text), 1;
            if (n == 0) break;
            from = head, extra = (size_t)n;
        }
        size_t take = left < 0 || (size_t)left > extra ? extra : (size_t)left;
        if (text && size + take + 1 > capacity) {
            char *grown = realloc(text, (capacity = 2 * (size + take + 1)));
            if (!grown) return free(text), 1;
            text = grown;
        }
        if (text) memcpy(text + size, from, take);
        size += take, from += take, extra -= take;
        if (left > 0) left -= (long)take;
    }
    if (text) text[size] = 0, *body = text;
    return 0;
}

static char *request_head(const options *o, const char *method, const char *path, size_t length)
{
    char *head = malloc(strlen(path) + strlen(o->host) + 160);
    if (head)
        sprintf(head,
                "%s %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                "Content-Length: %zu\r\n\r\n",
                method, path, o->host, o->port, length);
    return head;
}

/* ---- the clients ---- */

/* {"inputs": [K texts]} (TEI's EmbedRequest, router/src/http/types.rs: `inputs` a string or a
 * list of strings); the texts follow the client's own LCG, so every run sends the same. */
static size_t build_body(const client *c, unsigned *seed, char *body)
{
    size_t at = (size_t)sprintf(body, "{\"inputs\":[");
    for (int k = 0; k < c->o->batch; k++) {
        *seed = *seed * 1103515245u + 12345u;
        const char *text = c->o->texts[(*seed >> 8) % (unsigned)c->o->text_count];
        at += (size_t)sprintf(body + at, "%s\"%s\"", k ? "," : "", text);
    }
    return at + (size_t)sprintf(body + at, "]}");
}

static int record(client *c, double ms)
{
    if (c->count == c->capacity) {
        long capacity = c->capacity ? 2 * c->capacity : 1024;
        double *grown = realloc(c->latencies, sizeof *grown * (size_t)capacity);
        if (!grown) return 1;
        c->latencies = grown, c->capacity = capacity;
    }
    c->latencies[c->count++] = ms;
    return 0;
}

/* One request on *fd (connecting first when it is -1). Returns 1 only when out of memory. */
static int one_request(client *c, int *fd, const char *body, size_t size)
{
    int status = 0, keep = 0;
    char *head = request_head(c->o, "POST", c->o->route, size);
    if (!head) return 1;
    double start = now_ms();
    if (*fd < 0) *fd = connect_to(c->o);
    int failed = *fd < 0 || send_all(*fd, head, strlen(head)) || send_all(*fd, body, size) ||
                 read_response(*fd, &status, NULL, &keep);
    double end = now_ms();
    free(head);
    if (failed || !keep) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
        if (failed) nanosleep(&(struct timespec){0, 10000000}, NULL); /* not hammered when down */
    }
    c->last_ms = end;
    if (failed || status != 200) return c->errors++, 0;
    return record(c, end - start);
}

static void *client_run(void *arg)
{
    client *c = arg;
    unsigned seed = 12345u + (unsigned)c->index * 7919u;
    char *body = malloc((c->o->longest + 3) * (size_t)c->o->batch + 32);
    int fd = -1, failed = !body;
    while (!failed && now_ms() < c->deadline_ms) {
        size_t size = build_body(c, &seed, body);
        failed = one_request(c, &fd, body, size);
    }
    if (fd >= 0) close(fd);
    free(body);
    return failed ? c : NULL;
}

/* ---- /metrics ---- */

typedef struct counters {
    double tokens, batch_sum, batch_count, padded, real;
    int ok;
} counters;

/* The sum of every sample of `name` (exactly: not a longer name) whose labels hold `label`
 * (NULL: any), in the Prometheus text format (version 0.0.4). */
static double metric_sum(const char *text, const char *name, const char *label)
{
    size_t len = strlen(name);
    double sum = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        if (strncmp(line, name, len) != 0 || (line[len] != '{' && line[len] != ' ')) continue;
        const char *eol = strchr(line, '\n'), *value = line + len;
        if (line[len] == '{') {
            const char *close = strchr(line, '}');
            if (!close || (eol && close > eol)) continue;
            char labels[512];
            snprintf(labels, sizeof labels, "%.*s", (int)(close - line - len), line + len);
            if (label && !strstr(labels, label)) continue;
            value = close + 1;
        } else if (label) {
            continue;
        }
        sum += strtod(value, NULL);
    }
    return sum;
}

static counters read_metrics(const options *o)
{
    counters m = {0};
    int fd = connect_to(o), status = 0, keep = 0;
    char *head = request_head(o, "GET", "/metrics", 0), *body = NULL, label[300];
    if (fd >= 0 && head && !send_all(fd, head, strlen(head)) &&
        !read_response(fd, &status, &body, &keep) && status == 200) {
        snprintf(label, sizeof label, "route=\"%s\"", o->route);
        m.tokens = metric_sum(body, "vkbert_request_tokens_total", label);
        m.batch_sum = metric_sum(body, "vkbert_batch_size_sum", NULL);
        m.batch_count = metric_sum(body, "vkbert_batch_size_count", NULL);
        m.padded = metric_sum(body, "vkbert_batch_tokens_sum", NULL);
        m.real = metric_sum(body, "vkbert_batch_tokens_real_total", NULL);
        m.ok = strstr(body, "vkbert_request_tokens_total") && strstr(body, "vkbert_batch_size");
    }
    if (fd >= 0) close(fd);
    free(head), free(body);
    return m;
}

/* ---- results ---- */

typedef struct results {
    long requests, errors;
    double seconds, latency[4]; /* p50, p95, p99, mean */
    /* NAN where /metrics did not say; padding: the share of the passes' tokens that were
     * padding (inputs x the longest, against the inputs' own tokens) */
    double tokens_per_s, batch_inputs, padding;
} results;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double rank(const double *sorted, long n, double q)
{
    long i = (long)ceil(q * (double)n) - 1;
    return sorted[i < 0 ? 0 : i];
}

static int summarize(client *c, int clients, const counters *before, const counters *after,
                     double start_ms, results *r)
{
    long n = 0;
    double last = start_ms, sum = 0;
    for (int i = 0; i < clients; i++)
        n += c[i].count, r->errors += c[i].errors, last = fmax(last, c[i].last_ms);
    double *all = malloc(sizeof *all * (size_t)(n ? n : 1));
    if (!all) return 1;
    for (long i = 0, at = 0; i < clients; at += c[i].count, i++)
        if (c[i].count) memcpy(all + at, c[i].latencies, sizeof *all * (size_t)c[i].count);
    qsort(all, (size_t)n, sizeof *all, cmp);
    for (long i = 0; i < n; i++)
        sum += all[i];
    r->requests = n, r->seconds = (last - start_ms) / 1e3;
    for (int q = 0; q < 3; q++)
        r->latency[q] = n ? rank(all, n, (double[]){0.5, 0.95, 0.99}[q]) : NAN;
    r->latency[3] = n ? sum / (double)n : NAN;
    double passes = after->batch_count - before->batch_count,
           padded = after->padded - before->padded;
    int ok = before->ok && after->ok && r->seconds > 0;
    r->tokens_per_s = ok ? (after->tokens - before->tokens) / r->seconds : NAN;
    r->batch_inputs = ok && passes > 0 ? (after->batch_sum - before->batch_sum) / passes : NAN;
    r->padding = ok && padded > 0 ? 1 - (after->real - before->real) / padded : NAN;
    free(all);
    return 0;
}

/* A JSON number, or null for NAN. */
static void number(FILE *f, const char *key, double v, const char *after)
{
    if (isnan(v))
        fprintf(f, "\"%s\":null%s", key, after);
    else
        fprintf(f, "\"%s\":%.3f%s", key, v, after);
}

static void print_json(const options *o, const results *r)
{
    printf("{\"clients\":%d,\"seconds\":%.3f,\"requests\":%ld,\"errors\":%ld,", o->clients,
           r->seconds, r->requests, r->errors);
    number(stdout, "requests_per_s", r->seconds > 0 ? r->requests / r->seconds : NAN, ",");
    number(stdout, "tokens_per_s", r->tokens_per_s, ",\"latency_ms\":{");
    number(stdout, "p50", r->latency[0], ",");
    number(stdout, "p95", r->latency[1], ",");
    number(stdout, "p99", r->latency[2], ",");
    number(stdout, "mean", r->latency[3], "},");
    number(stdout, "mean_batch_inputs", r->batch_inputs, ",");
    number(stdout, "padding", r->padding, "}\n");
}

static void print_table(FILE *f, const options *o, const results *r)
{
    double rate = r->seconds > 0 ? r->requests / r->seconds : NAN;
    double v[] = {rate,          r->tokens_per_s, r->latency[0],   r->latency[1],
                  r->latency[2], r->latency[3],   r->batch_inputs, 100 * r->padding};
    const char *format[] = {"| %.1f ", "| %.0f ", "| %.1f ", "| %.1f ",
                            "| %.1f ", "| %.1f ", "| %.2f ", "| %.0f%% "};
    fprintf(f, "serve_load: POST http://%s:%s%s, %d clients, %d text%s a request, %.1f s\n",
            o->host, o->port, o->route, o->clients, o->batch, o->batch > 1 ? "s" : "", r->seconds);
    fprintf(f, "| requests | errors | requests/s | tokens/s | p50 ms | p95 ms | p99 ms | mean ms "
               "| inputs a forward pass | padding |\n|---|---|---|---|---|---|---|---|---|---|\n");
    fprintf(f, "| %ld | %ld ", r->requests, r->errors);
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        isnan(v[i]) ? fprintf(f, "| - ") : fprintf(f, format[i], v[i]);
    fprintf(f, "|\n");
    if (isnan(r->tokens_per_s))
        fprintf(f, "(GET /metrics gave no vkbert counters: tokens/s and "
                   "inputs a forward pass are unknown)\n");
}

/* ---- arguments ---- */

static int usage(void)
{
    fprintf(stderr, "usage: serve_load --url http://HOST:PORT --clients N --seconds S "
                    "[--route /embed] [--texts FILE] [--batch K] [--json]\n"
                    "       serve_load --print-texts\n");
    return 2;
}

/* http://HOST[:PORT][/], the host a name or an IPv4 address, or an IPv6 one in brackets. */
static int parse_url(options *o, const char *url)
{
    if (strncmp(url, "http://", 7) != 0) return 1;
    url += 7;
    const char *host_end = *url == '[' ? strchr(url, ']') : url + strcspn(url, ":/");
    if (!host_end) return 1;
    const char *host = url + (*url == '['), *port = host_end + (*host_end == ']');
    snprintf(o->host, sizeof o->host, "%.*s", (int)(host_end - host), host);
    if (*port == ':') {
        size_t n = strcspn(++port, "/");
        if (n == 0 || n >= sizeof o->port || (port[n] && strcmp(port + n, "/") != 0)) return 1;
        snprintf(o->port, sizeof o->port, "%.*s", (int)n, port);
    } else if (*port && strcmp(port, "/") != 0) {
        return 1;
    }
    return o->host[0] == 0;
}

static int resolve(options *o)
{
    struct addrinfo hints = {0}, *found = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(o->host, o->port, &hints, &found);
    if (rc != 0) return fprintf(stderr, "serve_load: %s: %s\n", o->host, gai_strerror(rc)), 1;
    memcpy(&o->addr, found->ai_addr, found->ai_addrlen);
    o->addr_len = found->ai_addrlen;
    freeaddrinfo(found);
    return 0;
}

/* Returns 0, 2 for a usage error, or -1 after --print-texts. */
static int parse_args(int argc, char **argv, options *o)
{
    const char *url = NULL, *texts = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (strcmp(a, "--print-texts") == 0) {
            for (size_t t = 0; t < sizeof builtin_texts / sizeof *builtin_texts; t++)
                puts(builtin_texts[t]);
            return -1;
        }
        if (!v) return usage();
        if (strcmp(a, "--url") == 0)
            url = v;
        else if (strcmp(a, "--clients") == 0)
            o->clients = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            o->seconds = atof(v);
        else if (strcmp(a, "--route") == 0)
            snprintf(o->route, sizeof o->route, "%s", v);
        else if (strcmp(a, "--texts") == 0)
            texts = v;
        else if (strcmp(a, "--batch") == 0)
            o->batch = atoi(v);
        else
            return usage();
        i++;
    }
    if (!url || parse_url(o, url) || o->clients < 1 || o->clients > MAX_CLIENTS ||
        !(o->seconds > 0) || o->batch < 1 || o->batch > 100000 || o->route[0] != '/')
        return usage();
    if (texts) return load_texts(o, texts);
    for (size_t t = 0; t < sizeof builtin_texts / sizeof *builtin_texts; t++)
        if (add_text(o, builtin_texts[t])) return 1;
    return 0;
}

static int run(options *o, results *r)
{
    client *c = calloc((size_t)o->clients, sizeof *c);
    pthread_t *threads = calloc((size_t)o->clients, sizeof *threads);
    int started = 0, failed = !c || !threads;
    counters before = read_metrics(o), after;
    double start = now_ms();
    while (!failed && started < o->clients) {
        c[started] = (client){o, started, start + o->seconds * 1e3, NULL, 0, 0, 0, start};
        failed = pthread_create(&threads[started], NULL, client_run, &c[started]) != 0;
        started += !failed;
    }
    for (int i = 0; i < started; i++) {
        void *result = NULL;
        pthread_join(threads[i], &result);
        failed |= result != NULL;
    }
    after = read_metrics(o);
    if (!failed) failed = summarize(c, o->clients, &before, &after, start, r);
    for (int i = 0; c && i < o->clients; i++)
        free(c[i].latencies);
    free(c), free(threads);
    return failed;
}

int main(int argc, char **argv)
{
    options o = {.port = "80", .route = "/embed", .clients = 0, .batch = 1, .seconds = 0};
    results r = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc == 0) rc = resolve(&o);
    if (rc == 0 && run(&o, &r)) {
        fprintf(stderr, "serve_load: out of memory or threads\n");
        rc = 1;
    }
    if (rc == 0 && o.json) print_json(&o, &r);
    if (rc == 0) print_table(o.json ? stderr : stdout, &o, &r);
    if (rc == 0 && r.requests == 0) {
        fprintf(stderr, "serve_load: no request succeeded\n");
        rc = 1;
    }
    for (int i = 0; i < o.text_count; i++)
        free(o.texts[i]);
    free(o.texts);
    return rc < 0 ? 0 : rc;
}
