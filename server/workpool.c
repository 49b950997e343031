/* workpool.c — a fixed pool of threads for the CPU work of requests.
 *
 * libmicrohttpd keeps each keep-alive connection on the worker thread that
 * accepted it, and under load a few workers accept most connections.  If
 * those threads also parsed bodies, a handful of busy clients would share
 * one core.  So MHD threads only move bytes: an ingest suspends its
 * connection and queues its parsing here, where one thread per core takes
 * jobs in order of arrival.  stop() runs what is queued, then joins. */
#include <pthread.h>
#include <stdlib.h>

#include "srv.h"

typedef struct work_item {
    srv_work_fn fn;
    void *arg;
    struct work_item *next;
} work_item;

struct srv_workpool {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    work_item *head, *tail;
    int stopping;
    unsigned n_threads;
    pthread_t threads[];
};

static void *worker(void *arg)
{
    srv_workpool *wp = arg;
    pthread_setname_np(pthread_self(), "flamedb-parse");
    pthread_mutex_lock(&wp->lock);
    for (;;) {
        while (!wp->head && !wp->stopping) pthread_cond_wait(&wp->cond, &wp->lock);
        work_item *it = wp->head;
        if (!it) break; /* stopping and drained */
        wp->head = it->next;
        if (!wp->head) wp->tail = NULL;
        pthread_mutex_unlock(&wp->lock);
        it->fn(it->arg);
        free(it);
        pthread_mutex_lock(&wp->lock);
    }
    pthread_mutex_unlock(&wp->lock);
    return NULL;
}

int srv_workpool_start(srv_workpool **out, unsigned n_threads)
{
    srv_workpool *wp = calloc(1, sizeof *wp + n_threads * sizeof(pthread_t));
    if (!wp) return -1;
    pthread_mutex_init(&wp->lock, NULL);
    pthread_cond_init(&wp->cond, NULL);
    for (unsigned i = 0; i < n_threads; i++) {
        if (pthread_create(&wp->threads[i], NULL, worker, wp)) {
            wp->n_threads = i;
            srv_workpool_stop(wp);
            return -1;
        }
        wp->n_threads = i + 1;
    }
    *out = wp;
    return 0;
}

int srv_workpool_submit(srv_workpool *wp, srv_work_fn fn, void *arg)
{
    work_item *it = malloc(sizeof *it);
    if (!it) return -1;
    it->fn = fn;
    it->arg = arg;
    it->next = NULL;
    pthread_mutex_lock(&wp->lock);
    if (wp->tail) wp->tail->next = it;
    else wp->head = it;
    wp->tail = it;
    pthread_cond_signal(&wp->cond);
    pthread_mutex_unlock(&wp->lock);
    return 0;
}

void srv_workpool_stop(srv_workpool *wp)
{
    if (!wp) return;
    pthread_mutex_lock(&wp->lock);
    wp->stopping = 1;
    pthread_cond_broadcast(&wp->cond);
    pthread_mutex_unlock(&wp->lock);
    for (unsigned i = 0; i < wp->n_threads; i++) pthread_join(wp->threads[i], NULL);
    pthread_mutex_destroy(&wp->lock);
    pthread_cond_destroy(&wp->cond);
    free(wp);
}
