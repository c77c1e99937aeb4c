/* The frame of a public call on a context: the context lock (src/vk/vk_lock.c), which lives as
 * long as the context and is held from the call's first look at it to its return, and the
 * check that validation said nothing during the call. */
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

vkbert_status vkb_check_validation(vkbert_context *ctx, uint32_t before)
{
    if (ctx->validation_count == before) return VKBERT_OK;
    return vkb_fail(ctx, VKBERT_ERROR_VALIDATION, "validation: %s", ctx->validation_first);
}
