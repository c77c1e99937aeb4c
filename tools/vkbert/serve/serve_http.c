/* vkbert serve's HTTP side on libmicrohttpd (0.9.75's API): one thread per connection, so a
 * slow client holds only its own thread and a route may block on the queue. Bodies, the
 * payload limit (413), the API key (401), the concurrency limit (429), routing (404, 405),
 * the log line and the request metrics. Never parses JSON. */
#define _POSIX_C_SOURCE 200809L
#include "serve.h"

#include <microhttpd.h>

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* A slow client holds its thread at most this long between reads. */
#define CONNECTION_TIMEOUT_S 60u

struct serve_http {
    serve_server *s;
    struct MHD_Daemon *daemon;
    serve_guard *guard;  /* the request deadline */
    int quiesced;        /* the listening socket MHD_quiesce_daemon gave back, else -1 */
    atomic_int draining; /* quiesced: every answer closes its connection */
    int port;
    atomic_int in_flight; /* every request from its headers to its completion */
    atomic_int busy;      /* those that count against max_concurrent_requests */
};

/* One request's state, from its headers to MHD's completion callback. */
typedef struct request {
    double arrived_ms;
    const serve_route *route; /* the route to run */
    const char *name;         /* for the metrics: a known route's path, else "other" */
    int limited;              /* holds one of max_concurrent_requests' places */
    int answered;
    int too_large;
    int close; /* the answer closes the connection: its framing cannot be trusted */
    /* An answer the headers decided (status not 0), sent once the body has been read and
     * dropped: closing a socket with unread data resets the connection, and the client may
     * then lose the answer before reading it. */
    serve_reply early;
    char allow[64]; /* a 405's Allow header */
    char *body;
    size_t size, cap;
} request;

static const char other[] = "other";

/* ---- errors ---- */

/* OpenAI's route, whose errors have OpenAI's shape: TEI serves it under both paths
 * (router/src/http/server.rs, run). */
static int openai_path(const char *path)
{
    return !strcmp(path, "/v1/embeddings") || !strcmp(path, "/embeddings");
}

/* The route's own error shape: TEI's, or OpenAI's on its route, where TEI keeps its error
 * type and puts the status as the code (router/src/http/server.rs, From<ErrorResponse> for
 * OpenAICompatErrorResponse), except that the client's mistakes are OpenAI's
 * "invalid_request_error", as the routes have them (serve_openai.c). */
static serve_reply fail(const char *path, int status, const char *type, const char *fmt, ...)
    PLAT_PRINTF(4, 5);
static serve_reply fail(const char *path, int status, const char *type, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (!openai_path(path)) return serve_error(status, type, "%s", message);
    if (status != 429) type = "invalid_request_error";
    return serve_openai_error(status, type, "%s", message);
}

/* ---- answering ---- */

/* The path as the log line shows it: a client's bytes, so control characters are masked
 * and the length is capped. */
static void printable_path(const char *path, char *out, size_t size)
{
    size_t n = 0;
    for (; path[n] && n + 1 < size; n++)
        out[n] = (unsigned char)path[n] < 0x20 || path[n] == 0x7f ? '?' : path[n];
    out[n] = '\0';
}

static void account(serve_http *h, const request *r, const char *method, const char *path,
                    int status, int tokens)
{
    double ms = serve_now_ms() - r->arrived_ms;
    serve_metrics_request(h->s->metrics, r->name, status, ms, tokens);
    if (h->s->config->quiet) return;
    char shown[256];
    printable_path(path, shown, sizeof shown);
    fprintf(stderr, "%s %s %d %d tokens %.1f ms\n", method, shown, status, tokens, ms);
}

/* The request is whole (or answered): the request deadline no longer applies. */
static void received(serve_http *h, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info) serve_guard_receiving(h->guard, info->socket_context, 0);
}

/* Queues `reply` (taking its body) and logs it. */
static enum MHD_Result respond(serve_http *h, struct MHD_Connection *c, request *r,
                               const char *method, const char *path, serve_reply reply)
{
    r->answered = 1;
    received(h, c);
    if (reply.status == 0) {
        /* the client is gone: nothing to send. nginx's 499 (client closed request) names it
         * in the log and the metrics. */
        free(reply.body);
        account(h, r, method, path, 499, reply.tokens);
        return MHD_NO;
    }
    struct MHD_Response *response =
        reply.body
            ? MHD_create_response_from_buffer(strlen(reply.body), reply.body, MHD_RESPMEM_MUST_FREE)
            : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!response) {
        free(reply.body);
        return MHD_NO;
    }
    if (reply.content_type)
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type);
    if (reply.status == 405 && r->allow[0])
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, r->allow);
    /* a kept-alive connection would bring new requests while the server drains */
    if (atomic_load(&h->draining) || r->close)
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result queued = MHD_queue_response(c, (unsigned)reply.status, response);
    MHD_destroy_response(response);
    account(h, r, method, path, reply.status, reply.tokens);
    return queued;
}

/* ---- before the body ---- */

/* The headers that say where a body ends. */
typedef struct framing {
    int lengths, codings, not_chunked, lengths_differ;
    const char *length;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    framing *f = cls;
    (void)kind;
    value = value ? value : "";
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        f->lengths_differ |= f->length && strcmp(f->length, value);
        f->length = value;
        f->lengths++;
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->codings++;
        f->not_chunked |= strcasecmp(value, "chunked") != 0;
    }
    return MHD_YES;
}

/* RFC 9112 6.3: Content-Length beside Transfer-Encoding, or Content-Lengths that differ, leave
 * the body's end to whoever reads it; a proxy in front may read another end and smuggle the
 * rest in as a request of its own. libmicrohttpd takes the first length, or the chunks, so the
 * request is refused here (400, then the connection closes). A coding other than chunked alone
 * is not understood (RFC 9112 6.1: 501): libmicrohttpd would wait for a body it cannot end. */
static serve_reply check_framing(struct MHD_Connection *c, const char *path)
{
    framing f;
    serve_reply go_on = {0, NULL, NULL, 0};
    memset(&f, 0, sizeof f);
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
    if (f.lengths && f.codings)
        return fail(path, 400, "Validation", "both Content-Length and Transfer-Encoding given");
    if (f.lengths_differ)
        return fail(path, 400, "Validation", "Content-Length given twice, with different values");
    if (f.codings > 1 || f.not_chunked)
        return fail(path, 501, "Validation", "the only Transfer-Encoding understood is chunked");
    return go_on;
}

/* serve_routes' entry for the path and method; r->name gets the path when some route has
 * it, and `allow` the methods that do. HEAD runs the GET route (RFC 9110 9.3.2: load balancers
 * probe with it); libmicrohttpd sends its headers without the body. */
static const serve_route *find_route(request *r, const char *path, const char *method, char *allow,
                                     size_t allow_size)
{
    const serve_route *found = NULL;
    const char *wanted = strcmp(method, "HEAD") ? method : "GET";
    size_t n = 0;
    allow[0] = '\0';
    for (int i = 0; i < serve_route_count; i++) {
        const serve_route *route = &serve_routes[i];
        if (strcmp(route->path, path)) continue;
        r->name = route->path;
        if (!strcmp(route->method, wanted)) found = route;
        int get = !strcmp(route->method, "GET");
        int k = snprintf(allow + n, allow_size - n, "%s%s%s", n ? ", " : "", route->method,
                         get ? ", HEAD" : "");
        if (k > 0 && (size_t)k < allow_size - n) n += (size_t)k;
    }
    return found;
}

/* TEI puts /health and /metrics (with / and /ping) beside the routes the API key guards
 * (router/src/http/server.rs: public_routes), so probes and scrapes need no key. */
static int needs_key(const serve_http *h, const char *path)
{
    return h->s->config->api_key && strcmp(path, "/health") && strcmp(path, "/metrics");
}

/* TEI compares the whole Authorization header with "Bearer KEY"; without an early exit,
 * so the time taken does not tell how much of a guess was right. */
static int key_matches(struct MHD_Connection *c, const char *key)
{
    const char *given =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!given || strncmp(given, "Bearer ", 7)) return 0;
    given += 7;
    size_t n = strlen(given), k = strlen(key);
    unsigned diff = n != k;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)given[i] ^ (unsigned char)key[i % (k ? k : 1)];
    return diff == 0;
}

/* The body's announced size; 0 when none (chunked or empty), SIZE_MAX when it cannot be
 * read as a size. */
static size_t content_length(struct MHD_Connection *c)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!v) return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || *end || errno || n > SIZE_MAX) return SIZE_MAX;
    return (size_t)n;
}

/* TEI's permit: a route that runs the model takes one of max_concurrent_requests' places,
 * and none left is 429 at once (core/src/infer.rs try_acquire_permit). The GET routes answer
 * from memory and take none, so a health probe is never refused under load. */
static int take_place(serve_http *h, request *r)
{
    if (strcmp(r->route->method, "POST")) return 1;
    if (atomic_fetch_add(&h->busy, 1) >= h->s->config->max_concurrent_requests) {
        atomic_fetch_sub(&h->busy, 1);
        return 0;
    }
    r->limited = 1;
    return 1;
}

/* The checks on the headers alone, in the order TEI's layers make them: the route, the key,
 * the method, the announced size, then the permit. Returns the answer they decide, or one
 * with status 0 when the request goes on. */
static serve_reply check_headers(serve_http *h, struct MHD_Connection *c, request *r,
                                 const char *path, const char *method, size_t length)
{
    const serve_config *config = h->s->config;
    serve_reply go_on = {0, NULL, NULL, 0};
    r->route = find_route(r, path, method, r->allow, sizeof r->allow);
    if (r->name == other) return fail(path, 404, "Validation", "no route %s", path);
    if (needs_key(h, path) && !key_matches(c, config->api_key))
        return fail(path, 401, "Validation",
                    "a missing or wrong API key: send `Authorization: Bearer KEY`");
    if (!r->route)
        return fail(path, 405, "Validation", "%s takes %s, not %s", path, r->allow, method);
    if (length > config->payload_limit)
        return fail(path, 413, "Validation", "the body is over the payload limit of %zu bytes",
                    config->payload_limit);
    if (!take_place(h, r)) return fail(path, 429, "Overloaded", "Model is overloaded");
    return go_on;
}

static enum MHD_Result begin(serve_http *h, struct MHD_Connection *c, request *r, const char *path,
                             const char *method)
{
    serve_reply reply = check_framing(c, path);
    if (reply.status) {
        r->close = 1;
        return respond(h, c, r, method, path, reply);
    }
    size_t length = content_length(c);
    reply = check_headers(h, c, r, path, method, length);
    /* a body announced over the limit is not read: the answer goes at once, and the
     * connection closes */
    if (reply.status && length > h->s->config->payload_limit)
        return respond(h, c, r, method, path, reply);
    r->early = reply;
    r->cap = length && !reply.status ? length + 1 : 0;
    return MHD_YES;
}

/* ---- the body and the route ---- */

/* Appends a piece of the body; past the payload limit (a chunked body, which announced no
 * size) the rest is read and dropped, and the request answered 413 when it ends. */
static int receive(const serve_config *config, request *r, const char *data, size_t size)
{
    if (r->too_large) return 0;
    if (size > config->payload_limit - r->size) {
        r->too_large = 1;
        free(r->body);
        r->body = NULL;
        return 0;
    }
    if (!r->body || r->size + size + 1 > r->cap) {
        size_t cap = r->cap > r->size + size ? r->cap : 2 * (r->size + size) + 1;
        if (cap > config->payload_limit + 1) cap = config->payload_limit + 1;
        char *body = realloc(r->body, cap);
        if (!body) return -1;
        r->body = body;
        r->cap = cap;
    }
    memcpy(r->body + r->size, data, size);
    r->size += size;
    return 0;
}

static int client_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int)info->connect_fd : -1;
}

static enum MHD_Result finish(serve_http *h, struct MHD_Connection *c, request *r, const char *path,
                              const char *method)
{
    if (r->early.status) {
        serve_reply early = r->early;
        r->early.status = 0, r->early.body = NULL;
        return respond(h, c, r, method, path, early);
    }
    if (r->too_large)
        return respond(h, c, r, method, path,
                       fail(path, 413, "Validation",
                            "the body is over the payload limit of %zu bytes",
                            h->s->config->payload_limit));
    received(h, c);
    serve_call call = {method, path, r->body ? r->body : "", r->size, client_fd(c), r->arrived_ms};
    if (r->body) r->body[r->size] = '\0';
    return respond(h, c, r, method, path, r->route->run(h->s, &call));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **state)
{
    serve_http *h = cls;
    request *r = *state;
    (void)version;
    if (!r) {
        /* the first call has the headers only (MHD_AccessHandlerCallback) */
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->arrived_ms = serve_now_ms();
        r->name = other;
        *state = r;
        atomic_fetch_add(&h->in_flight, 1);
        return begin(h, c, r, url, method);
    }
    if (r->answered) {
        *data_size = 0;
        return MHD_YES;
    }
    if (*data_size) {
        size_t n = *data_size;
        *data_size = 0;
        if (!r->early.status) return receive(h->s->config, r, data, n) ? MHD_NO : MHD_YES;
        /* a refused request's body is dropped; past the limit, the connection closes */
        if (n > h->s->config->payload_limit - r->size) return MHD_NO;
        r->size += n;
        return MHD_YES;
    }
    return finish(h, c, r, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode why)
{
    serve_http *h = cls;
    request *r = *state;
    (void)why;
    /* a kept-alive connection's next request has the deadline from now */
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info) serve_guard_receiving(h->guard, info->socket_context, 1);
    if (!r) return;
    if (r->limited) atomic_fetch_sub(&h->busy, 1);
    atomic_fetch_sub(&h->in_flight, 1);
    free(r->early.body);
    free(r->body);
    free(r);
    *state = NULL;
}

/* Each connection is guarded from its start; the closed one leaves the guard before
 * libmicrohttpd closes its socket. Its context is cleared, so a completion reported after the
 * close finds none. */
static void on_connection(void *cls, struct MHD_Connection *c, void **context,
                          enum MHD_ConnectionNotificationCode code)
{
    serve_http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        *context = serve_guard_open(h->guard, client_fd(c));
        return;
    }
    serve_guard_close(h->guard, *context);
    *context = NULL;
}

/* ---- the daemon ---- */

/* Our own listening socket, so that a taken port or a bad host is reported with its reason
 * (MHD_start_daemon only says it failed). IPv6 addresses also accept IPv4 ("::" is every
 * interface of both). Returns the socket, or -1 with the reason printed. */
static int listen_on(const char *host, int port, int *bound_port)
{
    struct addrinfo hints, *found = NULL;
    char service[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(service, sizeof service, "%d", port);
    int e = getaddrinfo(host, service, &hints, &found);
    if (e) {
        fprintf(stderr, "vkbert: cannot listen on '%s' (--host): %s\n", host, gai_strerror(e));
        return -1;
    }
    int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol), one = 1, zero = 0;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (found->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (fd < 0 || bind(fd, found->ai_addr, found->ai_addrlen) || listen(fd, SOMAXCONN)) {
        fprintf(stderr, "vkbert: cannot listen on %s port %d: %s\n", host, port, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(found);
        return -1;
    }
    freeaddrinfo(found);
    struct sockaddr_storage addr;
    socklen_t size = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &size);
    *bound_port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                                   : ((struct sockaddr_in *)&addr)->sin_port);
    return fd;
}

/* Above max_concurrent_requests, so that the requests past it still get their 429, and idle
 * kept-alive connections do not crowd out new ones. */
static unsigned connection_limit(const serve_config *config)
{
    unsigned long long wanted = 2ull * (unsigned)config->max_concurrent_requests + 64u;
    return wanted > UINT_MAX ? UINT_MAX : (unsigned)wanted;
}

/* One client address gets half the connections by default, so that one client opening
 * connections it never finishes leaves the rest (a health probe among them) to the others. */
static unsigned per_ip_limit(const serve_config *config)
{
    if (config->max_connections_per_ip >= 0) return (unsigned)config->max_connections_per_ip;
    return connection_limit(config) / 2;
}

static struct MHD_Daemon *start_daemon(serve_http *h, int fd)
{
    const serve_config *config = h->s->config;
    /* MHD_quiesce_daemon needs MHD_USE_ITC with an internal polling thread; MHD_USE_AUTO picks
     * poll() where there is one, which has no FD_SETSIZE limit. */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     MHD_USE_AUTO;
    return MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET,
                            (MHD_socket)fd, MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit(config),
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit(config),
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
}

serve_http *serve_http_start(serve_server *s)
{
    serve_http *h = calloc(1, sizeof *h);
    if (!h) return fprintf(stderr, "vkbert: out of host memory\n"), NULL;
    h->s = s;
    h->quiesced = -1;
    h->guard = serve_guard_start(s->config->request_deadline_ms);
    if (!h->guard) return fprintf(stderr, "vkbert: cannot start a thread\n"), free(h), NULL;
    int fd = listen_on(s->config->host, s->config->port, &h->port);
    if (fd >= 0) h->daemon = start_daemon(h, fd);
    if (!h->daemon) {
        if (fd >= 0) {
            fprintf(stderr, "vkbert: libmicrohttpd could not start on %s port %d\n",
                    s->config->host, h->port);
            close(fd);
        }
        serve_guard_stop(h->guard);
        free(h);
        return NULL;
    }
    return h;
}

int serve_http_port(const serve_http *h)
{
    return h->port;
}

void serve_http_quiesce(serve_http *h)
{
    if (!h || h->quiesced >= 0) return;
    /* The socket stays open until MHD_stop_daemon (a connection thread may still use it),
     * but the kernel would go on completing handshakes into its backlog, connections nobody
     * serves; shutting it down refuses them (Linux; elsewhere it may fail, harmlessly). */
    atomic_store(&h->draining, 1);
    h->quiesced = (int)MHD_quiesce_daemon(h->daemon);
    if (h->quiesced >= 0) shutdown(h->quiesced, SHUT_RDWR);
}

int serve_http_in_flight(serve_http *h)
{
    return h ? atomic_load(&h->in_flight) : 0;
}

void serve_http_stop(serve_http *h)
{
    if (!h) return;
    MHD_stop_daemon(h->daemon);
    serve_guard_stop(h->guard);
    if (h->quiesced >= 0) close(h->quiesced);
    free(h);
}
