/* Passes in flight: ENCODER_SLOTS slots, each running a job in a plan of its own (inputs,
 * activations and outputs), taken from the plan cache (encoder_cache.c) and put back when the
 * job finishes, so the host fills one while the device runs the other. A job owns its fence
 * until it is freed, so a thread waiting on it without the lock never sees the fence reset
 * under it; the lock is held only to record, submit and read. */
#include "nn/encoder/encoder.h"

#include <stdio.h>
#include <stdlib.h>

static vkbert_status fence_get(vkbert_encoder *e, VkFence *out)
{
    if (!e->spare_count) return vkb_fence_create(e->ctx, out);
    *out = e->spare_fences[--e->spare_count];
    return VKBERT_OK;
}

/* A fence whose submission may still be pending after a lost device is never reused. */
static void fence_put(vkbert_encoder *e, VkFence fence, bool finished)
{
    vkbert_context *ctx = e->ctx;
    if (!fence) return;
    if (finished && !ctx->lost && e->spare_count < ENCODER_SPARE_FENCES &&
        vkResetFences(ctx->device, 1, &fence) == VK_SUCCESS) {
        e->spare_fences[e->spare_count++] = fence;
        return;
    }
    vkb_settle(ctx);
    vkDestroyFence(ctx->device, fence, NULL);
}

/* Writes the outputs of a job whose fence wait returned `waited`, and frees its slot. */
static void finish(vkbert_job *job, VkResult waited)
{
    vkbert_encoder *e = job->encoder;
    encoder_slot *slot = &e->slots[job->slot];
    if (job->lost_hook && waited == VK_SUCCESS) waited = VK_ERROR_DEVICE_LOST;
    vkbert_status status = e->ctx->lost ? vkb_check_alive(e->ctx) : vkb_wait_result(e->ctx, waited);
    double start = plat_now_ms();
    if (!status) status = encoder_read_call(e, slot->plan, &job->call);
    e->clock.read_ms += plat_now_ms() - start;
    if (!status) e->clock.passes++;
    if (!status && job->call.kind != OUT_TENSORS) e->clock.gpu_ms += slot->plan->gpu_ms;
    encoder_cache_put(e, slot->plan);
    if (!status) e->plan = slot->plan;
    slot->plan = NULL;
    if (status) snprintf(job->message, sizeof job->message, "%s", e->ctx->error);
    job->status = status;
    job->slot = -1;
    slot->job = NULL;
}

static void release(vkbert_job *job)
{
    fence_put(job->encoder, job->fence, job->status != VKBERT_ERROR_DEVICE_LOST);
    free(job);
}

/* Waits for the job's fence, letting go of the lock meanwhile when `unlock`; another thread
 * may finish the job in that time (a submit that needs its slot), and its owner may then
 * destroy it: the last thread to come back from waiting frees an orphaned job, so that no
 * fence is reset or freed under a waiter. */
static void wait_finished(vkbert_job *job, bool unlock)
{
    vkbert_context *ctx = job->encoder->ctx;
    while (job->slot >= 0) {
        VkResult waited = VK_ERROR_DEVICE_LOST;
        if (!ctx->lost) {
            double start = plat_now_ms();
            if (unlock) job->waiters++, vkb_unlock(ctx);
            waited = vkWaitForFences(ctx->device, 1, &job->fence, VK_TRUE, ctx->timeout_ns);
            if (unlock) vkb_lock(ctx), job->waiters--;
            if (job->orphaned) { /* finished, as its owner saw it before destroying it */
                if (!job->waiters) release(job);
                return;
            }
            job->encoder->clock.wait_ms += plat_now_ms() - start; /* under the lock again */
        }
        if (job->slot >= 0) finish(job, waited);
    }
}

/* A slot with no job in flight, or -1. */
static int free_slot(const vkbert_encoder *e)
{
    for (int i = 0; i < ENCODER_SLOTS; i++)
        if (!e->slots[i].job) return i;
    return -1;
}

static vkbert_job *oldest(const vkbert_encoder *e)
{
    vkbert_job *job = NULL;
    uint64_t order = UINT64_MAX;
    for (int i = 0; i < ENCODER_SLOTS; i++)
        if (e->slots[i].job && e->slots[i].order < order)
            job = e->slots[i].job, order = e->slots[i].order;
    return job;
}

/* A free slot holding a plan of the call's shape; the oldest job is finished when none is
 * free. */
static vkbert_status take_slot(vkbert_encoder *e, const encoder_call *c, int *out)
{
    int i;
    while ((i = free_slot(e)) < 0)
        wait_finished(oldest(e), c->unlock_to_wait);
    encoder_shape shape = encoder_shape_of(&c->in);
    vkbert_status status = encoder_cache_take(e, &shape, &e->slots[i].plan);
    if (!status) *out = i;
    return status;
}

/* The fault hook VKBERT_FAULT_LOST_AFTER_PASSES: a pass after the first N is submitted and its
 * own wait reports a lost device (finish), as a real loss would, so the same paths mark the
 * context; passes in flight before it finish well. */
static bool count_pass(vkbert_context *ctx)
{
    int64_t limit = ctx->env.lost_after_passes;
    return limit >= 0 && ++ctx->encoder_passes > (uint64_t)limit;
}

vkbert_status vkb_encoder_submit(vkbert_encoder *e, const encoder_call *c, vkbert_job **out)
{
    *out = NULL;
    vkbert_job *job = calloc(1, sizeof *job);
    if (!job) return vkb_fail(e->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    job->encoder = e;
    job->call = *c;
    job->slot = -1;
    int i = -1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vkbert_status status = fence_get(e, &job->fence);
    /* Preparing takes a plan (made on a new shape), fills and submits it; finishing an older
     * job to free a slot counts as that job's wait and read. */
    double start = plat_now_ms(), others = e->clock.wait_ms + e->clock.read_ms;
    if (!status) status = take_slot(e, c, &i);
    if (!status) status = encoder_prepare_call(e, e->slots[i].plan, c, &cmd);
    if (!status) job->lost_hook = count_pass(e->ctx);
    if (!status) status = vkb_submit(e->ctx, cmd, job->fence);
    e->clock.prepare_ms += plat_now_ms() - start - (e->clock.wait_ms + e->clock.read_ms - others);
    if (status) {
        if (i >= 0) encoder_cache_put(e, e->slots[i].plan), e->slots[i].plan = NULL;
        fence_put(e, job->fence, true); /* never submitted */
        free(job);
        return status;
    }
    /* uploaded: the arrays may be the caller's temporaries (a padded call packed) */
    job->call.in.ids = job->call.in.types = job->call.in.mask = job->call.in.offsets = NULL;
    job->call.in.prompt_tokens = NULL;
    e->slots[i].job = job;
    e->slots[i].order = ++e->submitted;
    job->slot = i;
    *out = job;
    return VKBERT_OK;
}

/* A finished job's status, its message set again on the context. */
static vkbert_status outcome(vkbert_job *job)
{
    if (!job->status) return VKBERT_OK;
    return vkb_fail(job->encoder->ctx, job->status, "%s", job->message);
}

vkbert_status vkb_job_poll(vkbert_job *job)
{
    vkbert_context *ctx = job->encoder->ctx;
    if (job->slot >= 0) {
        VkResult state =
            ctx->lost ? VK_ERROR_DEVICE_LOST : vkGetFenceStatus(ctx->device, job->fence);
        if (state == VK_NOT_READY) return VKBERT_NOT_READY;
        finish(job, state);
    }
    return outcome(job);
}

vkbert_status vkb_job_wait(vkbert_job *job)
{
    wait_finished(job, job->call.unlock_to_wait);
    return outcome(job);
}

void vkb_job_free(vkbert_job *job)
{
    if (!job) return;
    wait_finished(job, job->call.unlock_to_wait);
    if (job->waiters)
        job->orphaned = true; /* the last waiter frees it */
    else
        release(job);
}

vkbert_status vkb_encoder_run_call(vkbert_encoder *e, const encoder_call *c)
{
    vkbert_job *job;
    vkbert_status status = vkb_encoder_submit(e, c, &job);
    if (status) return status;
    status = vkb_job_wait(job);
    vkb_job_free(job);
    return status;
}

void vkb_encoder_drop_plans(vkbert_encoder *e)
{
    for (int i = 0; i < ENCODER_SLOTS; i++) {
        if (e->slots[i].job) wait_finished(e->slots[i].job, false);
        encoder_plan_free(e, e->slots[i].plan); /* NULL once its job finished */
        e->slots[i].plan = NULL;
    }
    encoder_cache_clear(e);
    encoder_plan_free(e, e->recorded);
    e->recorded = NULL;
    e->plan = NULL;
    while (e->spare_count)
        vkDestroyFence(e->ctx->device, e->spare_fences[--e->spare_count], NULL);
}
