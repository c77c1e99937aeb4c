/* The total deadline for receiving a request. libmicrohttpd's connection timeout is an idle one,
 * reset by every byte, so a client that trickles its headers a byte every few seconds would hold
 * its connection (and thread) forever. Here every connection is listed with the time its current
 * request began to arrive, and a watcher thread shuts down the socket of any still receiving
 * past the deadline: libmicrohttpd then reads end of file and closes the connection itself. */
#define _POSIX_C_SOURCE 200809L
#include "serve.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

/* How often the watcher looks: a connection closes at most this long after its deadline. */
#define WATCH_MS 100

struct serve_guard_conn {
    serve_guard_conn *prev, *next;
    int fd;
    int receiving;   /* a request (or the wait for the next one) is arriving */
    double since_ms; /* when it began to */
};

struct serve_guard {
    double deadline_ms;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* stopping */
    serve_guard_conn *head;
    int stopping;
    pthread_t thread;
};

/* Under the lock. The connection is still listed, so its fd is still its own: libmicrohttpd
 * reports the close (serve_guard_close) before it closes the socket. */
static void expire(serve_guard *g, double now)
{
    for (serve_guard_conn *c = g->head; c; c = c->next) {
        if (!c->receiving || now - c->since_ms < g->deadline_ms) continue;
        c->receiving = 0; /* once is enough */
        shutdown(c->fd, SHUT_RDWR);
    }
}

static void *watch(void *arg)
{
    serve_guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += WATCH_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        int e = pthread_cond_timedwait(&g->wake, &g->lock, &until);
        if (e == ETIMEDOUT || !e) expire(g, serve_now_ms());
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

serve_guard *serve_guard_start(double deadline_ms)
{
    serve_guard *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->deadline_ms = deadline_ms;
    int locked = pthread_mutex_init(&g->lock, NULL) == 0;
    int waked = locked && pthread_cond_init(&g->wake, NULL) == 0;
    if (waked && pthread_create(&g->thread, NULL, watch, g) == 0) return g;
    if (waked) pthread_cond_destroy(&g->wake);
    if (locked) pthread_mutex_destroy(&g->lock);
    free(g);
    return NULL;
}

void serve_guard_stop(serve_guard *g)
{
    if (!g) return;
    pthread_mutex_lock(&g->lock);
    g->stopping = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
    while (g->head) {
        serve_guard_conn *c = g->head;
        g->head = c->next;
        free(c);
    }
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

serve_guard_conn *serve_guard_open(serve_guard *g, int fd)
{
    serve_guard_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->receiving = 1;
    c->since_ms = serve_now_ms();
    pthread_mutex_lock(&g->lock);
    c->next = g->head;
    if (g->head) g->head->prev = c;
    g->head = c;
    pthread_mutex_unlock(&g->lock);
    return c;
}

void serve_guard_close(serve_guard *g, serve_guard_conn *c)
{
    if (!c) return;
    pthread_mutex_lock(&g->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next) c->next->prev = c->prev;
    pthread_mutex_unlock(&g->lock);
    free(c);
}

void serve_guard_receiving(serve_guard *g, serve_guard_conn *c, int receiving)
{
    if (!c) return;
    pthread_mutex_lock(&g->lock);
    c->receiving = receiving;
    c->since_ms = serve_now_ms();
    pthread_mutex_unlock(&g->lock);
}
