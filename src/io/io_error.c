#include "io_error.h"

#include <stdarg.h>
#include <stdio.h>

int io_fail(const err_ctx *c, const char *fmt, ...)
{
    if (!c->err || c->size == 0) return -1;
    int n = snprintf(c->err, c->size, "%s: ", c->path ? c->path : "(null)");
    if (n < 0 || (size_t)n >= c->size) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->size - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}
