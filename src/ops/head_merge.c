/* Host side of shaders/head_merge.comp (its push constants are head_split's). */
#include "ops/ops.h"
#include "shader_variants.h"

vkbert_status vkb_op_head_merge(vkbert_context *ctx, VkDescriptorPool pool, const vkb_heads_desc *d,
                                vkb_view heads, vkb_view merged, vkb_dispatch *out)
{
    return vkb_op_heads(ctx, pool, &vkb_shader_head_merge, d, heads, merged, out);
}
