/* The context lock: every public call that uses a context holds it, so that threads may share
 * one context (their calls run one at a time). A plain mutex: the library never calls its own
 * public API, so no call takes it twice. */
#include "vk.h"

bool vkb_lock_init(vkbert_context *ctx)
{
    ctx->lock = plat_mutex_new();
    return ctx->lock != NULL;
}

void vkb_lock_free(vkbert_context *ctx)
{
    plat_mutex_free(ctx->lock);
    ctx->lock = NULL;
}

/* The lock is not part of the context's value: a call that only reads it locks it too. */
void vkb_lock(const vkbert_context *ctx)
{
    if (ctx) plat_mutex_lock(ctx->lock);
}

void vkb_unlock(const vkbert_context *ctx)
{
    if (ctx) plat_mutex_unlock(ctx->lock);
}

vkbert_status vkb_unlock_return(const vkbert_context *ctx, vkbert_status status)
{
    vkb_unlock(ctx);
    return status;
}
