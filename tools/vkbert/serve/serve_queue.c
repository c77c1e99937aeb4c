/* STUB: replaced by the queue helper. */
#define _POSIX_C_SOURCE 200809L
#include "serve.h"

#include <time.h>

serve_queue *serve_queue_create(const serve_limits *limits, serve_metrics *metrics)
{
    (void)limits, (void)metrics;
    return NULL;
}
int serve_queue_add_scheduler(serve_queue *q, vkbert_model *model, const char *device_name)
{
    (void)q, (void)model, (void)device_name;
    return -1;
}
serve_outcome serve_queue_run(serve_queue *q, serve_work *work)
{
    (void)q, (void)work;
    return SERVE_UNHEALTHY;
}
int serve_queue_healthy(serve_queue *q)
{
    (void)q;
    return 0;
}
int serve_queue_depth(serve_queue *q)
{
    (void)q;
    return 0;
}
void serve_queue_stop(serve_queue *q)
{
    (void)q;
}
void serve_queue_destroy(serve_queue *q)
{
    (void)q;
}

double serve_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
