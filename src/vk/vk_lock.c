/* The context lock: every public call that uses a context holds it, so that threads may share
 * one context (their calls run one at a time). Recursive, because public calls made by the
 * library itself (the benchmarks build layers through the public API) take it again. */
#define _XOPEN_SOURCE 700 /* PTHREAD_MUTEX_RECURSIVE under -std=c11 */
#include "vk.h"

bool vkb_lock_init(vkbert_context *ctx)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr)) return false;
    bool ok = !pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE) &&
              !pthread_mutex_init(&ctx->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    return ok;
}

vkbert_context *vkb_lock(const vkbert_context *ctx)
{
    vkbert_context *c = (vkbert_context *)ctx; /* the lock is not part of its value */
    if (c) pthread_mutex_lock(&c->lock);
    return c;
}

void vkb_unlock_guard(vkbert_context **guard)
{
    if (*guard) pthread_mutex_unlock(&(*guard)->lock);
}
