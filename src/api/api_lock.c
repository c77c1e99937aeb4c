/* The public calls' side of the context lock (src/vk/vk_lock.c): it lives as long as the
 * context, and a call holds it from its first look at the context to its return. */
#include "api/api.h"

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

vkbert_status vkb_unlock_return(const vkbert_context *ctx, vkbert_status status)
{
    vkb_unlock(ctx);
    return status;
}
