/* fsp_workload.c — the workload of bench_agent_fsp.sh: two busy threads
 * spending skewed shares of their time in 60 distinct functions (top-50
 * shares worth comparing), and many idle threads that wake every 50 ms for
 * 25 us each, a long tail of ~5% of the CPU: the threads Atys's pruning
 * (FSP) is meant to drop.  Usage: fsp_workload SECONDS [IDLE_THREADS] */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile int stop;

static void spin(unsigned long n)
{
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

#define FN(n) __attribute__((noinline)) static void fn_##n(unsigned long w) { spin(w); }
#define FN10(t) FN(t##0) FN(t##1) FN(t##2) FN(t##3) FN(t##4) FN(t##5) FN(t##6) FN(t##7) FN(t##8) FN(t##9)
FN10(1) FN10(2) FN10(3) FN10(4) FN10(5) FN10(6)
#define P(n) fn_##n
#define P10(t) P(t##0), P(t##1), P(t##2), P(t##3), P(t##4), P(t##5), P(t##6), P(t##7), P(t##8), P(t##9)
static void (*const fns[60])(unsigned long) = { P10(1), P10(2), P10(3), P10(4), P10(5), P10(6) };

__attribute__((noinline)) static void busy_round(void)
{
    for (int k = 0; k < 60; k++) fns[k](2000 + 60000UL / (unsigned long)(k + 1)); /* shares ~ 1/k */
}

static void *busy(void *arg)
{
    (void)arg;
    while (!stop) busy_round();
    return NULL;
}

/* About 25 us of this thread's CPU: 0.5 ms a second a thread, so 200 idle
 * threads make a tail of ~5% of the samples, a sample or two each per
 * interval (sampling counts each thread's own CPU time). */
__attribute__((noinline)) static void idle_tick(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        spin(200);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 25000);
}

static void *idle(void *arg)
{
    (void)arg;
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    while (!stop) {
        nanosleep(&ts, NULL);
        idle_tick();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 10, n_idle = argc > 2 ? atoi(argv[2]) : 200;
    pthread_t t[2 + 1024];
    int n = 0;
    for (int i = 0; i < 2; i++) pthread_create(&t[n++], NULL, busy, NULL);
    for (int i = 0; i < n_idle && n < 1026; i++) pthread_create(&t[n++], NULL, idle, NULL);
    sleep((unsigned)seconds);
    stop = 1;
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
