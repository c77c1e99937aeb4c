/* Error messages: every failure leaves a message on its context, or in a thread-local slot
 * when there is no context yet. */
#include "vk.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char global_error[VKB_ERROR_SIZE];
/* With threads sharing a context, its message may be another thread's by the time this one
 * asks: each thread keeps its own copy of its last failure. */
static _Thread_local char thread_error[VKB_ERROR_SIZE];
static _Thread_local uint64_t thread_error_serial; /* of the context: addresses get reused */

vkbert_status vkb_fail(vkbert_context *ctx, vkbert_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(ctx->error, sizeof ctx->error, fmt, args);
    va_end(args);
    memcpy(thread_error, ctx->error, sizeof thread_error);
    thread_error_serial = ctx->serial;
    return status;
}

const char *vkb_last_error(const vkbert_context *ctx)
{
    return ctx->serial && ctx->serial == thread_error_serial ? thread_error : ctx->error;
}

vkb_writer vkb_writer_of(vkbert_context *ctx, bool locked)
{
    vkb_writer w = {.ctx = ctx, .locked = locked};
    return w;
}

vkbert_status vkb_write_fail(vkb_writer *w, vkbert_status status, const char *fmt, ...)
{
    char message[VKB_ERROR_SIZE];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    if (w->locked) return vkb_fail(w->ctx, status, "%s", message);
    if (!w->status) {
        w->status = status;
        memcpy(w->message, message, sizeof message);
    }
    return status;
}

vkbert_status vkb_fail_global(vkbert_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(global_error, sizeof global_error, fmt, args);
    va_end(args);
    return status;
}

const char *vkb_global_error(void)
{
    return global_error;
}

const char *vkb_result_name(VkResult result)
{
    switch (result) {
#define NAME(x)                                                                                    \
    case x:                                                                                        \
        return #x;
        NAME(VK_SUCCESS)
        NAME(VK_NOT_READY)
        NAME(VK_TIMEOUT)
        NAME(VK_INCOMPLETE)
        NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
        NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        NAME(VK_ERROR_INITIALIZATION_FAILED)
        NAME(VK_ERROR_DEVICE_LOST)
        NAME(VK_ERROR_MEMORY_MAP_FAILED)
        NAME(VK_ERROR_LAYER_NOT_PRESENT)
        NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
        NAME(VK_ERROR_FEATURE_NOT_PRESENT)
        NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
        NAME(VK_ERROR_TOO_MANY_OBJECTS)
        NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
        NAME(VK_ERROR_FRAGMENTED_POOL)
        NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
        NAME(VK_ERROR_INVALID_SHADER_NV)
#undef NAME
    default:
        return "VK_ERROR_UNKNOWN";
    }
}

vkbert_status vkb_fail_vk(vkbert_context *ctx, VkResult result, const char *what)
{
    vkbert_status status = VKBERT_ERROR_VULKAN;
    if (result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        status = VKBERT_ERROR_OUT_OF_MEMORY;
    return vkb_fail(ctx, status, "%s failed: %s", what, vkb_result_name(result));
}
