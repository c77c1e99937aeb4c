/* The public side of the context's copy of the environment (src/vk/vk_env.c): benchmarks and
 * `vkbert tune` try kernel choices on one live context, which never reads the environment
 * again after it was made. */
#include "api/api.h"

vkbert_status vkbert_bench_override(vkbert_context *ctx, const char *name, const char *value)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    return vkb_unlock_return(ctx, vkb_env_override(ctx, name, value));
}
