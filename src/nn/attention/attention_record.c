/* The attention layer recorded into a caller's command buffer. Each distinct (shape, binding)
 * gets a plan of its own, its scratch and descriptor sets, kept until the layer dies or eight
 * newer recordings push it out: the caller's command buffer holds those sets, so they must
 * outlive its submissions and never be rewritten under it, as a shared plan's would be. */
#include "nn/attention/attention.h"

#include <stdlib.h>
#include <string.h>

static attention_plan *find(vkbert_attention *layer, uint32_t batch, uint32_t seq_len,
                            const attention_binding *bind)
{
    for (uint32_t i = 0; i < layer->recording_count; i++) {
        attention_plan *plan = layer->recordings[i];
        if (plan->batch == batch && plan->seq_len == seq_len &&
            !memcmp(&plan->binding, bind, sizeof *bind))
            return plan;
    }
    return NULL;
}

/* Scratch of the shape and a descriptor pool; no command buffer and no queries of its own. */
static vkbert_status recording_new(vkbert_attention *layer, const vkbert_tensor *x,
                                   const vkbert_tensor *mask, const vkbert_tensor *y,
                                   const attention_binding *bind, attention_plan **out)
{
    attention_plan *plan;
    vkbert_status status =
        attention_scratch_new(layer, (uint32_t)x->shape[0], (uint32_t)x->shape[1], &plan);
    if (status) return status;
    status = vkb_descriptor_pool(layer->ctx, ATTENTION_DISPATCHES, &plan->pool);
    if (!status) status = attention_plan_prepare(layer, plan, x, mask, y, bind);
    if (status) {
        attention_plan_free(layer, plan);
        return status;
    }
    if (layer->recording_count == ATTENTION_MAX_PLANS) { /* the oldest goes */
        attention_plan_free(layer, layer->recordings[0]);
        memmove(layer->recordings, layer->recordings + 1,
                (ATTENTION_MAX_PLANS - 1) * sizeof *layer->recordings);
        layer->recording_count--;
    }
    layer->recordings[layer->recording_count++] = plan;
    *out = plan;
    return VKBERT_OK;
}

vkbert_status vkb_attention_record(vkbert_attention *layer, VkCommandBuffer cmd,
                                   const vkbert_tensor *x, const vkbert_tensor *mask,
                                   const vkbert_attention_options *options, vkbert_tensor *y)
{
    attention_binding bind;
    vkbert_status status = attention_bind(layer, x, mask, options, y, &bind);
    if (status) return status;
    attention_plan *plan = find(layer, (uint32_t)x->shape[0], (uint32_t)x->shape[1], &bind);
    if (!plan) status = recording_new(layer, x, mask, y, &bind, &plan);
    if (status) return status;
    attention_record_into(plan, cmd, VK_NULL_HANDLE);
    return VKBERT_OK;
}

void attention_recordings_free(vkbert_attention *layer)
{
    for (uint32_t i = 0; i < layer->recording_count; i++)
        attention_plan_free(layer, layer->recordings[i]);
    layer->recording_count = 0;
}
