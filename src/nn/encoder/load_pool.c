/* A load's workers (load_pool.h). */
#include "nn/encoder/load_pool.h"

#include <stdlib.h>

typedef struct pool {
    const load_pool_spec *spec;
    plat_mutex *claim; /* next and stop */
    uint32_t next;
    bool stop;
} pool;

typedef struct worker {
    pool *p;
    float *scratch;
    vkb_writer out;
    uint32_t failed_task;
    plat_thread *thread; /* NULL for the calling thread's share, or one that did not start */
} worker;

int load_pool_threads(const vkbert_context *ctx, uint32_t tasks)
{
    int n = ctx->env.load_threads ? (int)ctx->env.load_threads : plat_cpu_count();
    if (n > LOAD_POOL_MAX_THREADS) n = LOAD_POOL_MAX_THREADS;
    if ((uint32_t)n > tasks) n = tasks ? (int)tasks : 1;
    return n < 1 ? 1 : n;
}

static uint32_t claim(pool *p)
{
    plat_mutex_lock(p->claim);
    uint32_t task = p->stop || p->next >= p->spec->tasks ? p->spec->tasks : p->next++;
    plat_mutex_unlock(p->claim);
    return task;
}

static void work(void *arg)
{
    worker *w = arg;
    pool *p = w->p;
    for (uint32_t task; (task = claim(p)) < p->spec->tasks;)
        if (p->spec->run(p->spec->job, task, &w->out, w->scratch)) {
            if (!w->out.status) /* every task says why; this is a guard */
                vkb_write_fail(&w->out, VKBERT_ERROR_INVALID_ARGUMENT, "load task %u failed", task);
            w->failed_task = task;
            plat_mutex_lock(p->claim);
            p->stop = true;
            plat_mutex_unlock(p->claim);
            return;
        }
}

/* Workers whose scratch could be allocated; the first must be. */
static int make_workers(pool *p, worker *workers, int wanted)
{
    int n = 0;
    for (; n < wanted; n++) {
        workers[n] = (worker){.p = p, .out = vkb_writer_of(p->spec->ctx, false)};
        workers[n].scratch = malloc(p->spec->scratch_floats * sizeof(float));
        if (!workers[n].scratch) break;
    }
    return n;
}

vkbert_status load_pool_run(const load_pool_spec *spec, vkb_writer *failure)
{
    *failure = vkb_writer_of(spec->ctx, false);
    worker workers[LOAD_POOL_MAX_THREADS];
    pool p = {spec, plat_mutex_new(), 0, false};
    int n = p.claim ? make_workers(&p, workers, load_pool_threads(spec->ctx, spec->tasks)) : 0;
    if (!n) {
        plat_mutex_free(p.claim);
        return vkb_write_fail(failure, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    /* Workers 1.. on threads of their own (fewer when a thread cannot start), 0 on this one. */
    for (int i = 1; i < n; i++)
        workers[i].thread = plat_thread_start(work, &workers[i]);
    work(&workers[0]);
    for (int i = 1; i < n; i++) {
        plat_thread_join(workers[i].thread);
        if (!workers[i].thread) work(&workers[i]); /* claims nothing after a failure */
    }
    const worker *first = NULL;
    for (int i = 0; i < n; i++) {
        if (workers[i].out.status && (!first || workers[i].failed_task < first->failed_task))
            first = &workers[i];
    }
    if (first) *failure = first->out;
    for (int i = 0; i < n; i++)
        free(workers[i].scratch);
    plat_mutex_free(p.claim);
    return failure->status;
}
