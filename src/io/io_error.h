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

/* Writes the message and returns -1. */
int io_fail(const err_ctx *c, const char *fmt, ...) PLAT_PRINTF(2, 3);

#endif
