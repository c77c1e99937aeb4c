/* What the api files (src/api/api*.c) share: argument checks that leave a message on every
 * failure. A NULL handle that would have named the context (a context, layer, encoder, model,
 * tokenizer) leaves its message in the thread's slot, vkbert_last_error(NULL). */
#ifndef VKBERT_API_H
#define VKBERT_API_H

#include "api/api_struct.h"
#include "vkbert_bench.h"

/* ---- the frame of a public call: the context lock, the validation check (api_call.c) ---- */
/* A public call locks, then calls an inner function that may return anywhere, and unlocks:
 *     vkb_lock(ctx);
 *     return vkb_unlock_return(ctx, inner(ctx, ...));
 * (the arguments, the inner call among them, are evaluated before the unlock runs). */
bool vkb_lock_init(vkbert_context *ctx);
void vkb_lock_free(vkbert_context *ctx);
vkbert_status vkb_unlock_return(const vkbert_context *ctx, vkbert_status status);
/* Fails with VKBERT_ERROR_VALIDATION if validation messages arrived since `before`
 * (ctx->validation_count, which vk's messenger counts). */
vkbert_status vkb_check_validation(vkbert_context *ctx, uint32_t before);
/* The whole body of a public call that runs `call` under the lock when the context is alive,
 * failing it when validation spoke during the call. */
#define VKB_RUN_LOCKED(context, call)                                                              \
    do {                                                                                           \
        vkbert_context *ctx_ = (context);                                                          \
        vkb_lock(ctx_);                                                                            \
        uint32_t before_ = ctx_->validation_count;                                                 \
        vkbert_status status_ = vkb_check_alive(ctx_);                                             \
        if (!status_) status_ = (call);                                                            \
        return vkb_unlock_return(ctx_, status_ ? status_ : vkb_check_validation(ctx_, before_));   \
    } while (0)

#define CHECK_ARG(ctx, cond, msg)                                                                  \
    do {                                                                                           \
        if (!(cond)) return vkb_fail((ctx), VKBERT_ERROR_INVALID_ARGUMENT, "%s", (msg));           \
    } while (0)

/* A context whose device was lost refuses work before touching the device. */
#define CHECK_ALIVE(ctx)                                                                           \
    do {                                                                                           \
        vkbert_status alive_ = vkb_check_alive(ctx);                                               \
        if (alive_) return alive_;                                                                 \
    } while (0)

/* `handle` (an argument's name) is not NULL, else the thread's message and `fail` returned:
 * VKBERT_ERROR_INVALID_ARGUMENT for a call that returns a status, 0 or NULL for one that
 * returns a value. */
#define CHECK_HANDLE(handle, fail)                                                                 \
    do {                                                                                           \
        if (!(handle)) {                                                                           \
            vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", __func__, #handle);   \
            return fail;                                                                           \
        }                                                                                          \
    } while (0)
#define BAD_HANDLE VKBERT_ERROR_INVALID_ARGUMENT

/* Copies a caller's growable struct `src` into the full-size `dst` of type `type`, whose
 * first published size runs through `last` (api_struct.h). */
#define STRUCT_IN(ctx, type, last, src, dst)                                                       \
    vkb_struct_in((ctx), (src), VKB_SIZE_THROUGH(type, last), (dst), sizeof(type), #type)

/* The checks a layer's calls on device tensors (forward, record) share: x and y given, all
 * tensors float32, and `options` (may be NULL) copied into the full-size `o`. */
vkbert_status vkb_attention_tensor_args(vkbert_attention *layer, const vkbert_tensor *x,
                                        const vkbert_tensor *mask, const vkbert_tensor *y,
                                        const vkbert_attention_options *options,
                                        vkbert_attention_options *o);

#endif
