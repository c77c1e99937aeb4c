/* STUB: replaced by the routes helper. */
#include "serve.h"

#include <stddef.h>

static serve_reply stub(serve_server *s, const serve_call *call)
{
    (void)s, (void)call;
    return serve_error(501, "Backend", "not implemented");
}

const serve_route serve_routes[] = {
    {"POST", "/v1/embeddings", stub},
};
const int serve_route_count = 1;

serve_reply serve_error(int status, const char *type, const char *fmt, ...)
{
    (void)type, (void)fmt;
    serve_reply r = {status, NULL, "application/json", 0};
    return r;
}
serve_reply serve_openai_error(int status, const char *type, const char *fmt, ...)
{
    (void)type, (void)fmt;
    serve_reply r = {status, NULL, "application/json", 0};
    return r;
}
