/*
 * workload.c — the agent tests' CPU workload with a known profile.
 *
 * Every thread burns CPU in three leaf functions in the ratio 50/30/20:
 *
 *     main (or worker) -> run_a -> work_a            50 %
 *     main (or worker) -> run_b -> mid_b -> work_b   30 %
 *     main (or worker) -> run_c -> work_c            20 %
 *
 * The main thread is one of the workers, so its stacks read literally
 * "main;run_b;mid_b;work_b"; the other threads' read "...;worker;run_b;...".
 *
 * Time is cut into slices of SLICE_ITERS iterations of the same busy loop.
 * Each round is 10 slices (5 a, 3 b, 2 c) in a freshly shuffled order, so
 * the split is exact per round (about 3 ms) and holds in any window, and the
 * order is random so a sampling timer cannot alias with the rounds.
 *
 * Ground truth: run_* read the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID)
 * around each call of work_*, and the times are summed per function.  With
 * --truth the totals are printed at exit as one JSON line on stdout:
 *   {"threads":2,"start":1795255200.123,"seconds":10.0,"cpu_ns":{"work_a":..,"work_b":..,"work_c":..},
 *    "share":{"work_a":0.5..,"work_b":0.3..,"work_c":0.2..}}
 *
 * Usage: workload [SECONDS [THREADS]] [--truth] [--shift S]
 *   SECONDS  how long to run (default 10; 0 = until SIGINT/SIGTERM)
 *   THREADS  busy threads including the main one (default 2)
 *   --shift S  hot functions that move (for the FDA benchmark): every S
 *            seconds the split rotates, a/b/c = 50/30/20, then 20/50/30,
 *            then 30/20/50, and again; phase k starts at "start" + k*S
 *            (unix seconds, printed in the truth JSON)
 * SIGINT/SIGTERM end the run early; the truth is still printed.
 *
 * Build it with -O2 -g and with or without -fno-omit-frame-pointer: the
 * noinline attributes and the empty asm statements after each call keep
 * every frame (no inlining, no tail calls), and the volatile accumulator
 * keeps the loops from being folded.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLICE_ITERS 150000
#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

enum { FN_A, FN_B, FN_C, FN_N };

typedef struct {
    uint64_t cpu_ns[FN_N];
    uint64_t seed;
} thread_state;

static volatile sig_atomic_t stop_flag;
static double run_seconds = 10;
static double shift_seconds;     /* 0: the split never moves */
static struct timespec started;
static volatile uint64_t sink;

/* The same busy loop in each leaf: identical cost per iteration. */
#define BUSY_LOOP(n)                                     \
    do {                                                 \
        volatile uint64_t acc = 0;                       \
        for (uint64_t i_ = 0; i_ < (n); i_++)            \
            acc += i_ * 2654435761u ^ (acc >> 7);        \
        sink += acc;                                     \
    } while (0)

NOINLINE void work_a(uint64_t n) { BUSY_LOOP(n); KEEP_FRAME(); }
NOINLINE void work_b(uint64_t n) { BUSY_LOOP(n); KEEP_FRAME(); }
NOINLINE void work_c(uint64_t n) { BUSY_LOOP(n); KEEP_FRAME(); }

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE void mid_b(uint64_t n) { work_b(n); KEEP_FRAME(); }

NOINLINE void run_a(thread_state *t)
{
    uint64_t t0 = thread_cpu_ns();
    work_a(SLICE_ITERS);
    t->cpu_ns[FN_A] += thread_cpu_ns() - t0;
    KEEP_FRAME();
}

NOINLINE void run_b(thread_state *t)
{
    uint64_t t0 = thread_cpu_ns();
    mid_b(SLICE_ITERS);
    t->cpu_ns[FN_B] += thread_cpu_ns() - t0;
    KEEP_FRAME();
}

NOINLINE void run_c(thread_state *t)
{
    uint64_t t0 = thread_cpu_ns();
    work_c(SLICE_ITERS);
    t->cpu_ns[FN_C] += thread_cpu_ns() - t0;
    KEEP_FRAME();
}

static uint64_t next_rand(uint64_t *s)
{
    /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static int time_is_up(void)
{
    struct timespec now;
    if (stop_flag)
        return 1;
    if (run_seconds <= 0)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double el = (double)(now.tv_sec - started.tv_sec) + (now.tv_nsec - started.tv_nsec) / 1e9;
    return el >= run_seconds;
}

/* Inlined into main and worker, so run_* are called from them directly. */
static inline __attribute__((always_inline)) void drive(thread_state *t)
{
    static const unsigned char round_tpl[10] = {FN_A, FN_A, FN_A, FN_A, FN_A,
                                                FN_B, FN_B, FN_B, FN_C, FN_C};
    unsigned char order[10];
    while (!time_is_up()) {
        memcpy(order, round_tpl, sizeof order);
        if (shift_seconds > 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            double el = (double)(now.tv_sec - started.tv_sec) + (now.tv_nsec - started.tv_nsec) / 1e9;
            int phase = (int)(el / shift_seconds) % 3;
            for (int i = 0; i < 10; i++)
                order[i] = (unsigned char)((order[i] + phase) % FN_N);
        }
        for (int i = 9; i > 0; i--) {
            int j = (int)(next_rand(&t->seed) % (uint64_t)(i + 1));
            unsigned char x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
        for (int i = 0; i < 10; i++) {
            switch (order[i]) {
            case FN_A: run_a(t); break;
            case FN_B: run_b(t); break;
            default: run_c(t); break;
            }
        }
    }
}

NOINLINE static void *worker(void *arg)
{
    drive(arg);
    KEEP_FRAME();
    return NULL;
}

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

int main(int argc, char **argv)
{
    int threads = 2, truth = 0, npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--truth") == 0)
            truth = 1;
        else if (strcmp(argv[i], "--shift") == 0 && i + 1 < argc)
            shift_seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: %s [SECONDS [THREADS]] [--truth] [--shift S]\n", argv[0]);
            return 0;
        } else if (npos == 0) {
            run_seconds = atof(argv[i]);
            npos++;
        } else if (npos == 1) {
            threads = atoi(argv[i]);
            npos++;
        } else {
            fprintf(stderr, "workload: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "workload: THREADS must be 1..256\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    clock_gettime(CLOCK_MONOTONIC, &started);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    double start_unix = (double)wall.tv_sec + wall.tv_nsec / 1e9;

    thread_state *st = calloc((size_t)threads, sizeof *st);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!st || !tid)
        return 1;
    for (int i = 0; i < threads; i++)
        st[i].seed = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) ^ (uint64_t)started.tv_nsec;
    for (int i = 1; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, &st[i]) != 0) {
            fprintf(stderr, "workload: pthread_create failed\n");
            return 1;
        }
    drive(&st[0]);
    for (int i = 1; i < threads; i++)
        pthread_join(tid[i], NULL);

    if (truth) {
        uint64_t tot[FN_N] = {0}, sum = 0;
        for (int i = 0; i < threads; i++)
            for (int f = 0; f < FN_N; f++)
                tot[f] += st[i].cpu_ns[f];
        for (int f = 0; f < FN_N; f++)
            sum += tot[f];
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - started.tv_sec) + (now.tv_nsec - started.tv_nsec) / 1e9;
        double d = sum ? (double)sum : 1;
        printf("{\"threads\":%d,\"start\":%.3f,\"seconds\":%.3f,"
               "\"cpu_ns\":{\"work_a\":%llu,\"work_b\":%llu,\"work_c\":%llu},"
               "\"share\":{\"work_a\":%.6f,\"work_b\":%.6f,\"work_c\":%.6f}}\n",
               threads, start_unix, el, (unsigned long long)tot[FN_A], (unsigned long long)tot[FN_B],
               (unsigned long long)tot[FN_C], tot[FN_A] / d, tot[FN_B] / d, tot[FN_C] / d);
        fflush(stdout);
    }
    free(st);
    free(tid);
    return 0;
}
