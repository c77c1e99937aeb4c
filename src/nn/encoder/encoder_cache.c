/* The plan cache: plans of no job in flight, kept for later passes of their shape (padded
 * (batch, seq_len), or a packed batch's caps), so that calls that alternate shapes (packed and
 * padded, a server's batches of different caps) do not make a plan each time. Bounded in count
 * (ENCODER_IDLE_PLANS) and in device memory (the budget); least recently used evicted first. */
#include "nn/encoder/encoder.h"

static uint64_t scratch_bytes(const attention_plan *s)
{
    if (!s) return 0;
    return s->qkv.size + s->merged.size + s->heads.size + s->scores.size + s->context.size;
}

uint64_t encoder_plan_bytes(const encoder_plan *p)
{
    if (!p) return 0;
    const vkb_buffer *buffers[] = {&p->ids,       &p->mask,  &p->hidden, &p->attn_y,
                                   &p->h1,        &p->inter, &p->o2,     &p->pooled,
                                   &p->pool_mask, &p->unit,  &p->logits, &p->offsets};
    uint64_t bytes = scratch_bytes(p->scratch);
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++)
        bytes += buffers[i]->size;
    for (int i = 0; i <= ENCODER_MAX_DENSE; i++)
        bytes += p->stage[i].size;
    return bytes;
}

uint64_t encoder_plans_held(const vkbert_encoder *e)
{
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < e->idle_count; i++)
        bytes += encoder_plan_bytes(e->idle[i]);
    for (int i = 0; i < ENCODER_SLOTS; i++)
        bytes += encoder_plan_bytes(e->slots[i].plan);
    return bytes;
}

static bool plan_is(const encoder_plan *p, const encoder_shape *s)
{
    return p->ragged == s->ragged && p->batch == s->batch && p->seq_len == s->seq_len &&
           p->tokens == s->tokens;
}

/* Takes idle plan i out of the cache. */
static encoder_plan *remove_idle(vkbert_encoder *e, uint32_t i)
{
    encoder_plan *p = e->idle[i];
    e->idle[i] = e->idle[--e->idle_count];
    e->idle[e->idle_count] = NULL;
    return p;
}

static void evict_oldest(vkbert_encoder *e)
{
    uint32_t oldest = 0;
    for (uint32_t i = 1; i < e->idle_count; i++)
        if (e->idle[i]->used < e->idle[oldest]->used) oldest = i;
    encoder_plan *p = remove_idle(e, oldest);
    if (e->plan == p) e->plan = NULL;
    encoder_plan_free(e, p);
}

void encoder_cache_clear(vkbert_encoder *e)
{
    while (e->idle_count)
        evict_oldest(e);
}

/* A new plan, idle ones evicted until every plan held fits in the budget with it. */
static vkbert_status make(vkbert_encoder *e, const encoder_shape *shape, encoder_plan **out)
{
    vkbert_status status = encoder_plan_make(e, shape, out);
    if (status == VKBERT_ERROR_OUT_OF_MEMORY && e->idle_count) {
        encoder_cache_clear(e);
        status = encoder_plan_make(e, shape, out);
    }
    if (status) return status;
    e->plans_made++;
    uint64_t budget = e->plan_budget ? e->plan_budget : ENCODER_PLAN_BUDGET;
    uint64_t bytes = encoder_plan_bytes(*out);
    while (e->idle_count && encoder_plans_held(e) + bytes > budget)
        evict_oldest(e);
    return VKBERT_OK;
}

vkbert_status encoder_cache_take(vkbert_encoder *e, const encoder_shape *shape, encoder_plan **out)
{
    int found = -1;
    for (uint32_t i = 0; i < e->idle_count; i++)
        if (plan_is(e->idle[i], shape) && (found < 0 || e->idle[i]->used > e->idle[found]->used))
            found = (int)i;
    if (found < 0) return make(e, shape, out);
    *out = remove_idle(e, (uint32_t)found);
    return VKBERT_OK;
}

void encoder_cache_put(vkbert_encoder *e, encoder_plan *p)
{
    if (!p) return;
    if (e->idle_count == ENCODER_IDLE_PLANS) evict_oldest(e);
    p->used = ++e->plan_clock;
    e->idle[e->idle_count++] = p;
}
