/* gen_load.h — loading generated profiles into a store from several
 * threads at once (so group commit batches them), for the benchmarks that
 * need a filled store.  Profile i belongs to series i % n_series and window
 * i / n_series; series s is labelled instance=instance[s],
 * service=service[s], type=cpu; every profile has rate 100. */
#ifndef FLAMEDB_GEN_LOAD_H
#define FLAMEDB_GEN_LOAD_H

#include <pthread.h>
#include <stdatomic.h>

#include "../storage/store.h"
#include "gen.h"

typedef struct {
    store *st;
    const gen_pool *pool;
    const gen_profile *profiles;
    uint32_t n_profiles, n_series;
    const char *const *instance, *const *service;
    int64_t base_ms, window_ms;
    uint32_t max_pairs;         /* most stacks in one profile */
    const char *tag;            /* for error messages */
    _Atomic uint32_t next;
    _Atomic int failed;
} gen_load_ctx;

static void *gen_load_thread(void *arg)
{
    gen_load_ctx *c = arg;
    store_stack *stacks = gen_xmalloc(c->max_pairs * sizeof *stacks);
    char err[512];
    for (;;) {
        uint32_t i = atomic_fetch_add(&c->next, 1);
        if (i >= c->n_profiles) break;
        uint32_t s = i % c->n_series, w = i / c->n_series;
        const gen_profile *pr = &c->profiles[i];
        for (uint32_t k = 0; k < pr->n; k++) {
            stacks[k].frames = gen_stack_text(c->pool, pr->stack[k], &stacks[k].len);
            stacks[k].count = pr->count[k];
        }
        store_label labels[3] = { { "instance", c->instance[s] }, { "service", c->service[s] }, { "type", "cpu" } };
        store_profile sp = {
            .labels = labels, .n_labels = 3,
            .from_ms = c->base_ms + (int64_t)w * c->window_ms, .until_ms = c->base_ms + (int64_t)(w + 1) * c->window_ms,
            .rate = 100, .unit = "samples", .stacks = stacks, .n_stacks = pr->n,
        };
        if (store_write(c->st, &sp, NULL, err, sizeof err)) {
            fprintf(stderr, "%s: store_write: %s\n", c->tag, err);
            atomic_store(&c->failed, 1);
            break;
        }
    }
    free(stacks);
    return NULL;
}

/* Loads every profile with n_threads writers; answers 0, or -1 when a write failed. */
static inline int gen_load(gen_load_ctx *c, int n_threads)
{
    pthread_t th[64];
    if (n_threads > 64) n_threads = 64;
    for (int i = 0; i < n_threads; i++) pthread_create(&th[i], NULL, gen_load_thread, c);
    for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
    return atomic_load(&c->failed) ? -1 : 0;
}

#endif
