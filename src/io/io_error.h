/* Error messages of the file readers: "<path>: <problem>". */
#ifndef VKBERT_IO_ERROR_H
#define VKBERT_IO_ERROR_H

#include "platform/platform.h"

#include <stddef.h>

typedef struct err_ctx {
    const char *path;
    char *err;
    size_t size;
} err_ctx;

/* What the last failure was. The readers return only -1 or NULL, so each message records its
 * kind on the calling thread and the caller that turns a failure into a status asks
 * io_last_kind right after: no reader needs to carry a kind back through every return. */
typedef enum io_kind {
    IO_MALFORMED,  /* the file was read and is not what it claims */
    IO_UNREADABLE, /* the file is missing or cannot be opened or read */
    IO_NO_MEMORY,  /* a host allocation failed */
} io_kind;

/* Writes the message, records IO_MALFORMED and returns -1. */
int io_fail(const err_ctx *c, const char *fmt, ...) PLAT_PRINTF(2, 3);
/* The same with IO_NO_MEMORY, and with IO_UNREADABLE. */
int io_fail_oom(const err_ctx *c, const char *fmt, ...) PLAT_PRINTF(2, 3);
int io_fail_open(const err_ctx *c, const char *fmt, ...) PLAT_PRINTF(2, 3);
io_kind io_last_kind(void);

#endif
