/* workpool.c — a fixed pool of threads for the CPU work of requests.
 *
 * libmicrohttpd keeps each keep-alive connection on the worker thread that
 * accepted it, and under load a few workers accept most connections.  If
 * those threads also parsed bodies, a handful of busy clients would share
 * one core.  So MHD threads only move bytes: an ingest suspends its
 * connection and queues its parsing here, where one thread per core takes
 * jobs in order of arrival.  stop() runs what is queued, then joins.
 *
 * A job may lend the pool's idle threads for its own tasks
 * (srv_workpool_lend: one pprof body's text passes, ingest_par): as many
 * helpers as threads are idle are queued first, and they and the caller
 * take the tasks one by one until none is left; the caller returns when
 * every task has.  A helper that a worker takes late finds nothing left
 * and is done, so the caller never waits for a thread busy elsewhere;
 * under load no thread is idle and the caller runs all its tasks. */
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
    unsigned idle;                  /* workers waiting for a job */
    unsigned n_threads;
    pthread_t threads[];
};

static void *worker(void *arg)
{
    srv_workpool *wp = arg;
    pthread_setname_np(pthread_self(), "flamedb-parse");
    pthread_mutex_lock(&wp->lock);
    for (;;) {
        while (!wp->head && !wp->stopping) {
            wp->idle++;
            pthread_cond_wait(&wp->cond, &wp->lock);
            wp->idle--;
        }
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

/* The tasks of one srv_workpool_lend: on the heap, as a helper taken
 * after the caller returned still reads it (refs: the caller and each
 * helper). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t all_done;
    size_t n, next, done;
    unsigned refs;
    void (*task)(void *arg, size_t i);
    void *arg;
} lend_job;

static void lend_unref(lend_job *j)
{
    pthread_mutex_lock(&j->mu);
    unsigned left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->all_done);
    free(j);
}

/* Takes tasks until none is left. */
static void lend_drain(lend_job *j)
{
    pthread_mutex_lock(&j->mu);
    while (j->next < j->n) {
        size_t i = j->next++;
        pthread_mutex_unlock(&j->mu);
        j->task(j->arg, i);
        pthread_mutex_lock(&j->mu);
        if (++j->done == j->n) pthread_cond_broadcast(&j->all_done);
    }
    pthread_mutex_unlock(&j->mu);
}

static void lend_helper(void *arg)
{
    lend_drain(arg);
    lend_unref(arg);
}

void srv_workpool_lend(srv_workpool *wp, size_t n, void (*task)(void *arg, size_t i), void *arg)
{
    lend_job *j = calloc(1, sizeof *j);
    unsigned k = 0;
    if (j) {
        pthread_mutex_init(&j->mu, NULL);
        pthread_cond_init(&j->all_done, NULL);
        j->n = n;
        j->task = task;
        j->arg = arg;
        j->refs = 1;
        pthread_mutex_lock(&wp->lock);
        unsigned want = wp->idle < n - 1 ? wp->idle : (unsigned)(n - 1);
        for (; k < want; k++) {
            work_item *it = malloc(sizeof *it);
            if (!it) break;
            *it = (work_item){ lend_helper, j, wp->head };
            wp->head = it;                  /* before the queued jobs: they are short */
            if (!wp->tail) wp->tail = it;
        }
        j->refs += k;
        if (k) pthread_cond_broadcast(&wp->cond);
        pthread_mutex_unlock(&wp->lock);
    }
    if (!k) {                               /* no thread idle (or no memory): all here */
        for (size_t i = 0; i < n; i++) task(arg, i);
        if (j) lend_unref(j);
        return;
    }
    lend_drain(j);
    pthread_mutex_lock(&j->mu);
    while (j->done < j->n) pthread_cond_wait(&j->all_done, &j->mu);
    pthread_mutex_unlock(&j->mu);
    lend_unref(j);
}

unsigned srv_workpool_threads(const srv_workpool *wp) { return wp->n_threads; }

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
