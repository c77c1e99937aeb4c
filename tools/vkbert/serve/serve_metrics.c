/* STUB: replaced by the queue helper. */
#include "serve.h"

#include <stdlib.h>
#include <string.h>

serve_metrics *serve_metrics_create(void)
{
    return NULL;
}
void serve_metrics_destroy(serve_metrics *m)
{
    (void)m;
}
void serve_metrics_request(serve_metrics *m, const char *route, int status, double ms, int tokens)
{
    (void)m, (void)route, (void)status, (void)ms, (void)tokens;
}
void serve_metrics_batch(serve_metrics *m, int inputs, int tokens, int padded_tokens,
                         double inference_ms)
{
    (void)m, (void)inputs, (void)tokens, (void)padded_tokens, (void)inference_ms;
}
void serve_metrics_queue_time(serve_metrics *m, double ms)
{
    (void)m, (void)ms;
}
void serve_metrics_gauges(serve_metrics *m, int queued_inputs, int healthy)
{
    (void)m, (void)queued_inputs, (void)healthy;
}
char *serve_metrics_render(serve_metrics *m)
{
    (void)m;
    char *text = malloc(1);
    if (text) text[0] = 0;
    return text;
}
