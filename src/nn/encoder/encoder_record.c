/* The record step: a pass's inputs written into its plan before the submit, the host arrays
 * uploaded (padded, or packed rows with their offsets) or the device tensors' copies recorded
 * around the plan's pass. */
#include "nn/encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

/* ids [T], types [T], positions [T], the flag, then the pooling mask [T] and the offsets
 * [B+1], each spare row and sequence filled as the plan's comment says. */
static void pack(const encoder_plan *p, const encoder_batch *in, int32_t *ids, float *pool,
                 int32_t *offsets)
{
    uint32_t t = p->tokens, first = (uint32_t)in->offsets[0];
    for (uint32_t b = 0; b <= p->batch; b++)
        offsets[b] = (int32_t)((int)b <= in->batch ? (uint32_t)in->offsets[b] - first
                                                   : (uint32_t)in->offsets[in->batch] - first);
    for (int b = 0; b < in->batch; b++) {
        int prompt = in->prompt_tokens ? in->prompt_tokens[b] : 0;
        for (int32_t j = 0; j < offsets[b + 1] - offsets[b]; j++) {
            uint32_t row = (uint32_t)(offsets[b] + j), from = first + row;
            ids[row] = in->ids[from];
            ids[t + row] = in->types ? in->types[from] : 0;
            /* HF's position_ids = arange(S) as a right-padded row sees it */
            ids[2 * t + row] = j;
            /* include_prompt = false leaves the prompt out of pooling only */
            pool[row] = j < prompt ? 0.0f : 1.0f;
        }
    }
}

vkbert_status encoder_upload_packed(vkbert_encoder *e, encoder_plan *p, const encoder_batch *in)
{
    size_t t = p->tokens;
    int32_t *ids = calloc(3 * t + 1 + p->batch + 1, sizeof *ids); /* spare rows stay 0 */
    float *pool = calloc(t, sizeof *pool);
    if (!ids || !pool) {
        free(ids), free(pool);
        return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    int32_t *offsets = ids + 3 * t + 1;
    pack(p, in, ids, pool, offsets);
    vkbert_status status = vkb_buffer_upload(e->ctx, &p->ids, 0, ids, (3 * t + 1) * 4);
    if (!status) status = vkb_buffer_upload(e->ctx, &p->pool_mask, 0, pool, t * 4);
    if (!status)
        status = vkb_buffer_upload(e->ctx, &p->offsets, 0, offsets, ((size_t)p->batch + 1) * 4);
    free(ids), free(pool);
    return status;
}

/* The attention mask, and the pooling's: the same without the first prompt_tokens tokens
 * (sentence-transformers' include_prompt = false zeroes attention_mask[:, :prompt_length] for
 * the Pooling module only). */
static void fill_masks(const encoder_plan *p, const encoder_batch *in, float *keep, float *pool)
{
    size_t sp = vkb_pitch(p->seq_len);
    for (uint32_t b = 0; b < p->batch; b++)
        for (uint32_t s = 0; s < p->seq_len; s++) {
            size_t i = (size_t)b * p->seq_len + s, at = b * sp + s;
            keep[at] = !in->mask || in->mask[i] != 0;
            int prompt = in->prompt_tokens ? in->prompt_tokens[b] : 0;
            pool[at] = (int)s < prompt ? 0.0f : keep[at];
        }
}

static vkbert_status upload_inputs(vkbert_encoder *e, encoder_plan *p, const encoder_batch *in)
{
    size_t m = (size_t)p->batch * p->seq_len, masks = (size_t)p->batch * vkb_pitch(p->seq_len);
    int32_t *both = calloc(2 * m + 1, sizeof *both); /* absent token types are 0; the flag 0 */
    float *keep = calloc(2 * masks, sizeof *keep);
    vkbert_status status = VKBERT_OK;
    if (!both || !keep) status = vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (!status) {
        memcpy(both, in->ids, m * sizeof *both);
        if (in->types) memcpy(both + m, in->types, m * sizeof *both);
        fill_masks(p, in, keep, keep + masks);
        status = vkb_buffer_upload(e->ctx, &p->ids, 0, both, (2 * m + 1) * 4);
    }
    if (!status) status = vkb_buffer_upload(e->ctx, &p->mask, 0, keep, masks * 4);
    if (!status) status = vkb_buffer_upload(e->ctx, &p->pool_mask, 0, keep + masks, masks * 4);
    free(both);
    free(keep);
    return status;
}

/* The device tensors' pass, recorded again only when the tensors are not the last ones. */
static vkbert_status record_tensors(vkbert_encoder *e, encoder_plan *p, const encoder_io *io)
{
    const vkbert_tensor *t[6] = {io->ids,    io->types,  io->mask,
                                 io->hidden, io->pooled, io->embeddings};
    uint64_t key[6];
    for (int i = 0; i < 6; i++)
        key[i] = t[i] ? t[i]->id * 2 + (i == 5 && io->normalize) : 0;
    if (p->tensor_cmd && !memcmp(key, p->tensor_key, sizeof key)) return VKBERT_OK;
    memset(p->tensor_key, 0, sizeof p->tensor_key);
    vkbert_status status = p->tensor_cmd ? VKBERT_OK : vkb_command_buffer(e->ctx, &p->tensor_cmd);
    if (!status && !p->flag.buffer) status = vkb_buffer_create_host(e->ctx, 4, &p->flag);
    if (status) return status;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult result = vkBeginCommandBuffer(p->tensor_cmd, &begin); /* resets it */
    if (result != VK_SUCCESS) return vkb_fail_vk(e->ctx, result, "vkBeginCommandBuffer");
    encoder_record_io(e, p, p->tensor_cmd, io);
    /* The flag into host memory: the pass's last barrier (before its copies out) made the
     * kernel's writes visible to transfers; read after the fence, with no staged download's
     * second submission. */
    uint64_t m = (uint64_t)p->batch * p->seq_len;
    VkBufferCopy flag = {2 * m * 4, 0, 4};
    vkCmdCopyBuffer(p->tensor_cmd, p->ids.buffer, p->flag.buffer, 1, &flag);
    vkb_cmd_barrier_to_host(p->tensor_cmd); /* vkbert_tensor_read maps the outputs */
    result = vkEndCommandBuffer(p->tensor_cmd);
    if (result != VK_SUCCESS) return vkb_fail_vk(e->ctx, result, "vkEndCommandBuffer");
    memcpy(p->tensor_key, key, sizeof key);
    return VKBERT_OK;
}

vkbert_status encoder_prepare_call(vkbert_encoder *e, encoder_plan *p, const encoder_call *c,
                                   VkCommandBuffer *cmd)
{
    vkbert_status status = c->kind == OUT_TENSORS ? record_tensors(e, p, &c->io)
                           : p->ragged            ? encoder_upload_packed(e, p, &c->in)
                                                  : upload_inputs(e, p, &c->in);
    *cmd = c->kind == OUT_TENSORS ? p->tensor_cmd : p->cmd;
    return status;
}
