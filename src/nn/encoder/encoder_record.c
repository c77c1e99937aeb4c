/* The record step: a pass's inputs written into its plan before the submit, the host arrays
 * uploaded (padded, or packed rows with their offsets) or the device tensors' copies recorded
 * around the plan's pass. */
#include "nn/encoder/encoder.h"

#include <stdlib.h>
#include <string.h>

/* ids [T], types [T], positions [T], the flag, then the pooling mask [T] and the offsets
 * [B+1], each spare row and sequence filled as encoder_ragged.c's comment says. */
static void fill_packed(const encoder_plan *p, const encoder_batch *in, int32_t *ids, float *pool,
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
    fill_packed(p, in, ids, pool, offsets);
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

/* ---- passes between device tensors ---- */

static void copy(VkCommandBuffer cmd, VkBuffer src, uint64_t src_at, VkBuffer dst, uint64_t dst_at,
                 uint64_t bytes)
{
    VkBufferCopy region = {src_at, dst_at, bytes};
    vkCmdCopyBuffer(cmd, src, dst, 1, &region);
}

/* An int32 [B,S] tensor into `dst` at `at` as B*S packed ids (the embedding kernel's). */
static void copy_ids(VkCommandBuffer cmd, const vkbert_tensor *t, const vkb_buffer *dst,
                     uint64_t at)
{
    if (t->cols == t->pitch) {
        copy(cmd, t->buffer.buffer, t->offset, dst->buffer, at, t->rows * t->cols * 4);
        return;
    }
    for (uint64_t r = 0; r < t->rows; r++)
        copy(cmd, t->buffer.buffer, t->offset + r * t->pitch * 4, dst->buffer, at + r * t->cols * 4,
             (uint64_t)t->cols * 4);
}

/* A [B,S] mask has the plan's masks' layout, [B][pitch(S)]: one copy, which keep_mask turns
 * into 0/1 in place and into the pooling's mask. The tensor is read by a transfer, as the
 * other inputs, so vkbert_encoder_record's callers make one kind of barrier for them all. */
static void record_masks(VkCommandBuffer cmd, const encoder_plan *p, const vkbert_tensor *mask)
{
    uint64_t bytes = (uint64_t)p->batch * vkb_pitch(p->seq_len) * 4;
    if (!mask) {
        vkCmdFillBuffer(cmd, p->mask.buffer, 0, bytes, 0x3f800000u); /* 1.0f: keep */
        vkCmdFillBuffer(cmd, p->pool_mask.buffer, 0, bytes, 0x3f800000u);
        return;
    }
    copy(cmd, mask->buffer.buffer, mask->offset, p->mask.buffer, 0, bytes);
    vkb_cmd_barrier(cmd);
    vkb_cmd_dispatch(cmd, &p->mask_dispatch[mask->dtype == VKBERT_DTYPE_FLOAT32]);
}

/* The plan's [rows][pitch] results have the output tensor's layout: one copy. */
static void copy_out(VkCommandBuffer cmd, const vkb_buffer *src, vkbert_tensor *t)
{
    if (t) copy(cmd, src->buffer, 0, t->buffer.buffer, t->offset, t->rows * t->pitch * 4);
}

void encoder_record_io(vkbert_encoder *e, encoder_plan *p, VkCommandBuffer cmd,
                       const encoder_io *io)
{
    uint64_t m = (uint64_t)p->batch * p->seq_len;
    vkb_cmd_barrier(cmd); /* the tensors' writers, and the plan's readers of the last pass */
    copy_ids(cmd, io->ids, &p->ids, 0);
    if (io->types)
        copy_ids(cmd, io->types, &p->ids, m * 4);
    else
        vkCmdFillBuffer(cmd, p->ids.buffer, m * 4, m * 4, 0);
    vkCmdFillBuffer(cmd, p->ids.buffer, 2 * m * 4, 4, 0); /* no bad id seen yet */
    record_masks(cmd, p, io->mask);
    encoder_record_pass(p, cmd);
    vkb_cmd_barrier(cmd);
    copy_out(cmd, &p->hidden, io->hidden);
    copy_out(cmd, &p->pooled, io->pooled);
    copy_out(cmd, io->normalize ? &p->unit : &p->stage[e->head.dense_count], io->embeddings);
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
