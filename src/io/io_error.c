#include "io_error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local io_kind last_kind;

static int fail(const err_ctx *c, io_kind kind, const char *fmt, va_list ap)
{
    last_kind = kind;
    if (!c->err || c->size == 0) return -1;
    int n = snprintf(c->err, c->size, "%s: ", c->path ? c->path : "(null)");
    if (n < 0 || (size_t)n >= c->size) return -1;
    vsnprintf(c->err + n, c->size - (size_t)n, fmt, ap);
    return -1;
}

int io_fail(const err_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail(c, IO_MALFORMED, fmt, ap);
    va_end(ap);
    return -1;
}

int io_fail_oom(const err_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail(c, IO_NO_MEMORY, fmt, ap);
    va_end(ap);
    return -1;
}

int io_fail_open(const err_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail(c, IO_UNREADABLE, fmt, ap);
    va_end(ap);
    return -1;
}

io_kind io_last_kind(void)
{
    return last_kind;
}
