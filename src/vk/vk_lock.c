/* The context lock: every public call that uses a context holds it (src/api/api_call.c), so
 * that threads may share one context (their calls run one at a time). A plain mutex: the
 * library never calls its own public API, so no call takes it twice. */
#include "vk.h"

/* The lock is not part of the context's value: a call that only reads it locks it too. */
void vkb_lock(const vkbert_context *ctx)
{
    if (ctx) plat_mutex_lock(ctx->lock);
}

void vkb_unlock(const vkbert_context *ctx)
{
    if (ctx) plat_mutex_unlock(ctx->lock);
}
