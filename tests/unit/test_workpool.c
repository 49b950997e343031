/* test_workpool.c — where server/workpool.c runs a job: a short job given
 * to srv_workpool_submit_here runs on the calling thread when a pool
 * thread is idle, and is queued to the pool when none is, when inline
 * jobs already match the idle threads, or when the calling thread has
 * spent its share of the window in such jobs. */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#include "../../server/srv.h"

typedef struct job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, gate_open;
    pthread_t ran_on;
    long sleep_ms;             /* how long the job takes */
    srv_workpool *wp;          /* nested: submit_here again from inside */
    struct job *inner;
} job;

static void job_init(job *j)
{
    memset(j, 0, sizeof *j);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
}

static void job_run(void *arg)
{
    job *j = arg;
    if (j->sleep_ms) {
        struct timespec ts = { j->sleep_ms / 1000, (j->sleep_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    if (j->wp && j->inner) assert_int_equal(srv_workpool_submit_here(j->wp, job_run, j->inner), 0);
    pthread_mutex_lock(&j->mu);
    while (!j->gate_open) pthread_cond_wait(&j->cv, &j->mu);
    j->ran_on = pthread_self();
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void job_open(job *j)
{
    pthread_mutex_lock(&j->mu);
    j->gate_open = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void job_wait(job *j)
{
    pthread_mutex_lock(&j->mu);
    while (!j->done) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

/* Waits until n pool threads wait for work (they start asleep soon). */
static void wait_idle(srv_workpool *wp, unsigned n)
{
    while (srv_workpool_idle(wp) != n) sched_yield();
}

static void test_runs_here_when_a_thread_is_idle(void **state)
{
    (void)state;
    srv_workpool *wp;
    assert_int_equal(srv_workpool_start(&wp, 2), 0);
    wait_idle(wp, 2);
    job j;
    job_init(&j);
    j.gate_open = 1;
    assert_int_equal(srv_workpool_submit_here(wp, job_run, &j), 0);
    assert_int_equal(j.done, 1); /* already done when it returns */
    assert_true(pthread_equal(j.ran_on, pthread_self()));
    srv_workpool_stop(wp);
}

static void test_queued_when_no_thread_is_idle(void **state)
{
    (void)state;
    srv_workpool *wp;
    assert_int_equal(srv_workpool_start(&wp, 1), 0);
    wait_idle(wp, 1);
    job busy, j;
    job_init(&busy);
    job_init(&j);
    assert_int_equal(srv_workpool_submit(wp, job_run, &busy), 0); /* holds the only thread */
    wait_idle(wp, 0);
    j.gate_open = 1;
    assert_int_equal(srv_workpool_submit_here(wp, job_run, &j), 0);
    job_open(&busy);
    job_wait(&busy);
    job_wait(&j);
    assert_false(pthread_equal(j.ran_on, pthread_self()));
    assert_true(pthread_equal(j.ran_on, busy.ran_on)); /* the pool's thread, after the busy job */
    srv_workpool_stop(wp);
}

/* One idle thread: a job running here takes its place, so a job it
 * submits in turn goes to the pool. */
static void test_no_more_here_than_idle(void **state)
{
    (void)state;
    srv_workpool *wp;
    assert_int_equal(srv_workpool_start(&wp, 1), 0);
    wait_idle(wp, 1);
    job outer, inner;
    job_init(&outer);
    job_init(&inner);
    outer.gate_open = inner.gate_open = 1;
    outer.wp = wp;
    outer.inner = &inner;
    assert_int_equal(srv_workpool_submit_here(wp, job_run, &outer), 0);
    job_wait(&inner);
    assert_true(pthread_equal(outer.ran_on, pthread_self()));
    assert_false(pthread_equal(inner.ran_on, pthread_self()));
    srv_workpool_stop(wp);
}

/* A window of 60 s of which 1/1000 (60 ms) may go to jobs run here: after
 * one of 80 ms the next is queued, though threads are idle. */
static void test_budget_spent_goes_to_the_pool(void **state)
{
    (void)state;
    srv_workpool *wp;
    assert_int_equal(srv_workpool_start(&wp, 2), 0);
    srv_workpool_set_here_budget(wp, 60LL * 1000000000, 1000);
    wait_idle(wp, 2);
    job slow, next;
    job_init(&slow);
    job_init(&next);
    slow.gate_open = next.gate_open = 1;
    slow.sleep_ms = 80;
    assert_int_equal(srv_workpool_submit_here(wp, job_run, &slow), 0);
    assert_true(pthread_equal(slow.ran_on, pthread_self()));
    wait_idle(wp, 2);
    assert_int_equal(srv_workpool_submit_here(wp, job_run, &next), 0);
    job_wait(&next);
    assert_false(pthread_equal(next.ran_on, pthread_self()));
    srv_workpool_stop(wp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_here_when_a_thread_is_idle),
        cmocka_unit_test(test_queued_when_no_thread_is_idle),
        cmocka_unit_test(test_no_more_here_than_idle),
        cmocka_unit_test(test_budget_spent_goes_to_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
