/* test_agent_offcpu.c — off-CPU accounting (agent/offcpu.c), pure: a
 * switch-out paired with the next switch-in of the same thread, events
 * that arrive out of order across CPUs, the watermark, periods cut at a
 * push with nothing lost or counted twice, a thread that exited off the
 * CPU, lost records; and the splice of a libdw walk with the kernel's
 * frame-pointer chain. */
#include <string.h>

#include "../unit/testutil.h"

#include <stdio.h>

#include "../../agent/agent.h"

typedef struct {
    char stack[16][64];
    pid_t pid[16], tid[16];
    uint64_t ns[16];
    int n;
} emitted;

static void emit(pid_t pid, pid_t tid, const char *stack, uint64_t ns, void *arg)
{
    emitted *e = arg;
    assert_true(e->n < 16);
    snprintf(e->stack[e->n], sizeof e->stack[e->n], "%s", stack);
    e->pid[e->n] = pid;
    e->tid[e->n] = tid;
    e->ns[e->n++] = ns;
}

static uint64_t sum_of(const emitted *e, const char *stack)
{
    uint64_t s = 0;
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->stack[i], stack) == 0) s += e->ns[i];
    return s;
}

static void pairs_out_with_next_in(void **state)
{
    (void)state;
    agent_offcpu *o = agent_offcpu_new();
    emitted e = { 0 };
    assert_int_equal(agent_offcpu_out(o, 10, 11, 1000, "main;read"), 0);
    assert_int_equal(agent_offcpu_in(o, 11, 4000), 0);
    assert_int_equal(agent_offcpu_out(o, 10, 12, 2000, "main;lock"), 0);
    assert_int_equal(agent_offcpu_in(o, 12, 2500), 0);
    agent_offcpu_advance(o, 10000, emit, &e);
    assert_int_equal(e.n, 2);
    assert_int_equal(sum_of(&e, "main;read"), 3000);
    assert_int_equal(sum_of(&e, "main;lock"), 500);
    assert_int_equal(e.pid[0], 10);
    assert_int_equal(agent_offcpu_open(o), 0);
    assert_int_equal(agent_offcpu_queued(o), 0);
    agent_offcpu_free(o);
}

/* A thread blocks on CPU 1 and wakes on CPU 0; ring 0 is drained first, so
 * its switch-in (and its next switch-out) arrive before the switch-out. */
static void orders_events_across_rings(void **state)
{
    (void)state;
    agent_offcpu *o = agent_offcpu_new();
    emitted e = { 0 };
    agent_offcpu_in(o, 7, 5000);                    /* ring 0 */
    agent_offcpu_out(o, 7, 7, 6000, "b");           /* ring 0 */
    agent_offcpu_out(o, 7, 7, 1000, "a");           /* ring 1 */
    agent_offcpu_advance(o, 10000, emit, &e);
    assert_int_equal(e.n, 1);
    assert_int_equal(sum_of(&e, "a"), 4000);
    assert_int_equal(agent_offcpu_unpaired(o), 0);
    assert_int_equal(agent_offcpu_open(o), 1);      /* "b" still off the CPU */
    agent_offcpu_free(o);
}

/* Events after the watermark wait: a switch-in not yet known to be the
 * next one is not applied. */
static void waits_for_the_watermark(void **state)
{
    (void)state;
    agent_offcpu *o = agent_offcpu_new();
    emitted e = { 0 };
    agent_offcpu_out(o, 1, 2, 100, "x");
    agent_offcpu_in(o, 2, 900);
    agent_offcpu_advance(o, 500, emit, &e);
    assert_int_equal(e.n, 0);
    assert_int_equal(agent_offcpu_queued(o), 1);
    agent_offcpu_out(o, 1, 2, 700, "y");            /* earlier than the queued in */
    agent_offcpu_advance(o, 1000, emit, &e);
    /* x: 100..700 would be a lost switch-in: x replaced (unpaired), y 700..900 */
    assert_int_equal(e.n, 1);
    assert_int_equal(sum_of(&e, "y"), 200);
    assert_int_equal(agent_offcpu_unpaired(o), 1);
    agent_offcpu_free(o);
}

static int all_alive(pid_t pid, pid_t tid, void *arg) { (void)pid; (void)tid; (void)arg; return 1; }
static int tid_9_gone(pid_t pid, pid_t tid, void *arg) { (void)pid; (void)arg; return tid != 9; }

/* A thread blocked across three periods: each gets its part, the sum is
 * the whole, nothing twice. */
static void cuts_periods_without_loss(void **state)
{
    (void)state;
    agent_offcpu *o = agent_offcpu_new();
    emitted p1 = { 0 }, p2 = { 0 }, p3 = { 0 };
    agent_offcpu_out(o, 5, 6, 1000, "main;sleep");
    agent_offcpu_advance(o, 10000, emit, &p1);
    agent_offcpu_cut(o, 10000, all_alive, emit, &p1);
    assert_int_equal(sum_of(&p1, "main;sleep"), 9000);
    agent_offcpu_advance(o, 20000, emit, &p2);
    agent_offcpu_cut(o, 20000, all_alive, emit, &p2);
    assert_int_equal(sum_of(&p2, "main;sleep"), 10000);
    agent_offcpu_in(o, 6, 23000);                   /* back at 23000 */
    agent_offcpu_advance(o, 30000, emit, &p3);
    agent_offcpu_cut(o, 30000, all_alive, emit, &p3);
    assert_int_equal(sum_of(&p3, "main;sleep"), 3000);
    assert_int_equal(p3.n, 1);
    assert_int_equal(9000 + 10000 + 3000, 23000 - 1000);
    assert_int_equal(agent_offcpu_open(o), 0);
    agent_offcpu_free(o);
}

/* A switch-in queued beyond the cut belongs to the next period, measured
 * from the cut. */
static void cut_with_queued_switch_in(void **state)
{
    (void)state;
    agent_offcpu *o = agent_offcpu_new();
    emitted a = { 0 }, b = { 0 };
    agent_offcpu_out(o, 5, 6, 1000, "s");
    agent_offcpu_in(o, 6, 12000);
    agent_offcpu_advance(o, 10000, emit, &a);
    agent_offcpu_cut(o, 10000, all_alive, emit, &a);
    assert_int_equal(sum_of(&a, "s"), 9000);
    agent_offcpu_advance(o, 20000, emit, &b);
    assert_int_equal(sum_of(&b, "s"), 2000);
    agent_offcpu_free(o);
}

/* A thread that exited off the CPU (its last switch-out) is forgotten at
 * the cut, not charged; another still blocked is. */
static void cut_forgets_exited_threads(void **state)
{
    (void)state;
    agent_offcpu *o = agent_offcpu_new();
    emitted e = { 0 };
    agent_offcpu_out(o, 8, 9, 1000, "exit");
    agent_offcpu_out(o, 8, 10, 1000, "wait");
    agent_offcpu_advance(o, 5000, emit, &e);
    agent_offcpu_cut(o, 5000, tid_9_gone, emit, &e);
    assert_int_equal(e.n, 1);
    assert_int_equal(sum_of(&e, "wait"), 4000);
    assert_int_equal(agent_offcpu_open(o), 1);
    agent_offcpu_free(o);
}

/* A switch-in with nothing open (the agent started while the thread ran,
 * or its switch-out was lost) charges nothing. */
static void switch_in_alone_is_ignored(void **state)
{
    (void)state;
    agent_offcpu *o = agent_offcpu_new();
    emitted e = { 0 };
    agent_offcpu_in(o, 3, 100);
    agent_offcpu_advance(o, 1000, emit, &e);
    agent_offcpu_cut(o, 1000, all_alive, emit, &e);
    assert_int_equal(e.n, 0);
    agent_offcpu_free(o);
}

/* Many threads: the table grows and keeps every one. */
static void add_ns(pid_t pid, pid_t tid, const char *stack, uint64_t ns, void *arg)
{
    (void)pid; (void)tid; (void)stack;
    uint64_t *sum = arg;
    sum[0] += ns;
    sum[1]++;
}

static void many_threads(void **state)
{
    (void)state;
    agent_offcpu *o = agent_offcpu_new();
    uint64_t sum[2] = { 0, 0 };
    for (int t = 1; t <= 5000; t++) agent_offcpu_out(o, 1, t, (uint64_t)t, "s");
    agent_offcpu_advance(o, 10000, add_ns, sum);
    assert_int_equal(agent_offcpu_open(o), 5000);
    for (int t = 1; t <= 5000; t += 2) agent_offcpu_in(o, t, 20000);
    agent_offcpu_advance(o, 30000, add_ns, sum);
    assert_int_equal(agent_offcpu_open(o), 2500);
    assert_int_equal(sum[1], 2500);
    /* odd t = 1, 3, ..., 4999: sum of (20000 - t) */
    assert_int_equal(sum[0], 2500ull * 20000 - 2500ull * 2500);
    agent_offcpu_free(o);
}

static void splice_recovers_the_wrapper_caller(void **state)
{
    (void)state;
    /* libdw: read, site_read, worker (then the copy ended) */
    uint64_t d[8] = { 0x100, 0x200, 0x300 };
    /* kernel fp chain: read, worker (site_read skipped), start_thread, clone */
    const uint64_t f[4] = { 0x100, 0x300, 0x400, 0x500 };
    int n = agent_offcpu_splice(d, 3, 8, f, 4);
    assert_int_equal(n, 5);
    const uint64_t want[5] = { 0x100, 0x200, 0x300, 0x400, 0x500 };
    assert_memory_equal(d, want, sizeof want);
}

static void splice_without_common_frame(void **state)
{
    (void)state;
    uint64_t d[8] = { 0x100, 0x200 };
    const uint64_t f[4] = { 0x100, 0x900, 0x910, 0x920 };
    assert_int_equal(agent_offcpu_splice(d, 2, 8, f, 4), 4);   /* the longer: f */
    assert_int_equal(d[1], 0x900);
    uint64_t d2[8] = { 0x100, 0x200, 0x300, 0x400, 0x500 };
    assert_int_equal(agent_offcpu_splice(d2, 5, 8, f, 4), 5);  /* libdw went further */
    assert_int_equal(d2[4], 0x500);
    uint64_t d3[4] = { 0x100, 0x200, 0x300 };
    const uint64_t g[6] = { 0x100, 0x300, 1, 2, 3, 4 };
    assert_int_equal(agent_offcpu_splice(d3, 3, 4, g, 6), 4);  /* bounded by max */
    assert_int_equal(d3[3], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pairs_out_with_next_in),
        cmocka_unit_test(orders_events_across_rings),
        cmocka_unit_test(waits_for_the_watermark),
        cmocka_unit_test(cuts_periods_without_loss),
        cmocka_unit_test(cut_with_queued_switch_in),
        cmocka_unit_test(cut_forgets_exited_threads),
        cmocka_unit_test(switch_in_alone_is_ignored),
        cmocka_unit_test(many_threads),
        cmocka_unit_test(splice_recovers_the_wrapper_caller),
        cmocka_unit_test(splice_without_common_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
