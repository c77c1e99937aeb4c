/* Host work of a load spread over threads: tasks 0..n-1 claimed in order by up to `threads`
 * workers, the calling thread one of them, each with a scratch of its own and an unlocked
 * writer (vkb_writer), so that none holds the context's lock while it converts, packs and
 * copies. One thread (no thread started) is always a valid way to run. */
#ifndef VKBERT_NN_LOAD_POOL_H
#define VKBERT_NN_LOAD_POOL_H

#include "vk/vk.h"

/* Runs one task; a failure goes on `out` (vkb_write_fail) and is returned. */
typedef vkbert_status (*load_task_fn)(void *job, uint32_t task, vkb_writer *out, float *scratch);

typedef struct load_pool_spec {
    vkbert_context *ctx;
    uint32_t tasks;
    size_t scratch_floats; /* each worker's, allocated untouched */
    load_task_fn run;
    void *job;
} load_pool_spec;

/* Workers a load uses on ctx: VKBERT_LOAD_THREADS when set, else the processors (at most
 * LOAD_POOL_MAX_THREADS), never more than the tasks. */
#define LOAD_POOL_MAX_THREADS 8
int load_pool_threads(const vkbert_context *ctx, uint32_t tasks);

/* Called without the lock. Runs every task, or stops claiming new ones after a failure; the
 * failure of the lowest task that failed is copied to *failure (status 0 when none), for the
 * caller to set on the context under the lock. Returns its status. */
vkbert_status load_pool_run(const load_pool_spec *spec, vkb_writer *failure);

#endif
