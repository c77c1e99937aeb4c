/* STUB: replaced by the HTTP helper. */
#include "serve.h"

serve_http *serve_http_start(serve_server *s)
{
    (void)s;
    return NULL;
}
void serve_http_quiesce(serve_http *h)
{
    (void)h;
}
int serve_http_in_flight(serve_http *h)
{
    (void)h;
    return 0;
}
void serve_http_stop(serve_http *h)
{
    (void)h;
}
