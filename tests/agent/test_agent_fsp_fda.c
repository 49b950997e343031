/* test_agent_fsp_fda.c — thread pruning (FSP) and adaptive frequency (FDA)
 * on synthetic inputs: thread skew, ties, P = 1; the JS divergence by hand,
 * a hot-function shift that raises the frequency, a steady phase that lowers
 * it after 5 intervals, and the bounds; frames with lines count by function. */
#include <string.h>

#include "../unit/testutil.h"

#include <math.h>
#include <stdio.h>

#include "../../agent/agent.h"

static void fsp_skew(void **state)
{
    (void)state;
    /* 1000 samples: two busy threads (600 + 380 = 98%), 20 idle threads of 1 */
    agent_thread_count t[22];
    t[0] = (agent_thread_count){ 100, 600 };
    t[1] = (agent_thread_count){ 101, 380 };
    for (int i = 0; i < 20; i++) t[2 + i] = (agent_thread_count){ 200 + i, 1 };
    int keep[22];
    size_t tdrop;
    uint64_t sdrop = agent_fsp_select(t, 22, 0.99, keep, &tdrop);
    /* 980 < 990 needed: the 10 lowest-tid idle threads join, 10 dropped */
    assert_int_equal(keep[0], 1);
    assert_int_equal(keep[1], 1);
    int kept_idle = 0;
    for (int i = 2; i < 22; i++) kept_idle += keep[i];
    assert_int_equal(kept_idle, 10);
    for (int i = 2; i < 12; i++) assert_int_equal(keep[i], 1);   /* ties: lower tid first */
    assert_int_equal(tdrop, 10);
    assert_int_equal(sdrop, 10);
}

static void fsp_p90_drops_more(void **state)
{
    (void)state;
    agent_thread_count t[4] = { { 1, 10 }, { 2, 70 }, { 3, 15 }, { 4, 5 } };
    int keep[4];
    size_t tdrop;
    uint64_t sdrop = agent_fsp_select(t, 4, 0.8, keep, &tdrop);
    /* 70 < 80, 70 + 15 = 85 >= 80: threads 2 and 3 kept */
    assert_int_equal(keep[0], 0);
    assert_int_equal(keep[1], 1);
    assert_int_equal(keep[2], 1);
    assert_int_equal(keep[3], 0);
    assert_int_equal(tdrop, 2);
    assert_int_equal(sdrop, 15);
}

static void fsp_p1_keeps_all(void **state)
{
    (void)state;
    agent_thread_count t[3] = { { 1, 1000 }, { 2, 1 }, { 3, 0 } };
    int keep[3];
    size_t tdrop = 99;
    assert_int_equal(agent_fsp_select(t, 3, 1.0, keep, &tdrop), 0);
    assert_int_equal(tdrop, 0);
    for (int i = 0; i < 3; i++) assert_int_equal(keep[i], 1);
    /* empty and all-zero inputs keep everything */
    assert_int_equal(agent_fsp_select(t, 0, 0.99, keep, &tdrop), 0);
    agent_thread_count z[2] = { { 1, 0 }, { 2, 0 } };
    assert_int_equal(agent_fsp_select(z, 2, 0.99, keep, &tdrop), 0);
    assert_int_equal(keep[0] + keep[1], 2);
}

static void fsp_single_thread(void **state)
{
    (void)state;
    agent_thread_count t[1] = { { 7, 3 } };
    int keep[1];
    size_t tdrop;
    assert_int_equal(agent_fsp_select(t, 1, 0.5, keep, &tdrop), 0);
    assert_int_equal(keep[0], 1);
}

/* ---- FDA ---- */

static agent_fda_dist dist_of(const char *const *names, const uint64_t *counts, size_t n)
{
    agent_fda_dist d;
    agent_fda_top(names, counts, n, &d);
    return d;
}

static void fda_top10(void **state)
{
    (void)state;
    const char *names[12];
    uint64_t counts[12];
    char buf[12][16];
    for (int i = 0; i < 12; i++) {
        snprintf(buf[i], sizeof buf[i], "f%02d", i);
        names[i] = buf[i];
        counts[i] = (uint64_t)(i + 1);          /* f11 is the hottest */
    }
    agent_fda_dist d = dist_of(names, counts, 12);
    assert_int_equal(d.n, 10);
    assert_string_equal(d.name[0], "f11");
    assert_string_equal(d.name[9], "f02");
    double sum = 0;
    for (int i = 0; i < d.n; i++) sum += d.p[i];
    assert_true(fabs(sum - 1) < 1e-12);
    assert_true(fabs(d.p[0] - 12.0 / 75) < 1e-12);   /* 3 + ... + 12 = 75 */
}

/* Leaf frames with locations (name US file US line ...): the lines of a
 * function are one function, named without its location. */
static void fda_top_by_function(void **state)
{
    (void)state;
    const char *names[] = { "work_a\x1fw.c\x1f" "10\x1f/bin/w\x1f" "ab", "work_b",
                            "work_a\x1fw.c\x1f" "11\x1f/bin/w\x1f" "ab", "work_a",
                            "work_ab\x1fw.c\x1f" "30" };
    uint64_t counts[] = { 30, 35, 20, 10, 5 };
    agent_fda_dist d = dist_of(names, counts, 5);
    assert_int_equal(d.n, 3);
    assert_string_equal(d.name[0], "work_a");          /* 30 + 20 + 10 > 35 */
    assert_true(fabs(d.p[0] - 0.6) < 1e-12);
    assert_string_equal(d.name[1], "work_b");
    assert_string_equal(d.name[2], "work_ab");         /* a prefix is another function */
    /* so moving between lines of a function is no shift */
    const char *other[] = { "work_a\x1fw.c\x1f" "12", "work_b", "work_ab" };
    uint64_t oc[] = { 60, 35, 5 };
    agent_fda_dist e = dist_of(other, oc, 3);
    assert_true(fabs(agent_fda_jsd(&d, &e)) < 1e-12);
}

static void fda_jsd_by_hand(void **state)
{
    (void)state;
    const char *n1[] = { "a", "b" }, *n2[] = { "c" }, *n3[] = { "b", "a" };
    uint64_t c1[] = { 1, 1 }, c2[] = { 5 }, c3[] = { 3, 1 };
    agent_fda_dist a = dist_of(n1, c1, 2), b = dist_of(n2, c2, 1), c = dist_of(n3, c3, 2);
    assert_true(fabs(agent_fda_jsd(&a, &a)) < 1e-12);           /* identical: 0 */
    assert_true(fabs(agent_fda_jsd(&a, &b) - 1) < 1e-12);       /* disjoint: 1 bit */
    /* P = (1/2, 1/2) over (a, b), Q = (1/4, 3/4): M = (3/8, 5/8)
     * JS = 1/2 [1/2 log2(4/3) + 1/2 log2(4/5)] + 1/2 [1/4 log2(2/3) + 3/4 log2(6/5)] */
    double want = 0.5 * (0.5 * log2(4.0 / 3) + 0.5 * log2(4.0 / 5)) +
                  0.5 * (0.25 * log2(2.0 / 3) + 0.75 * log2(6.0 / 5));
    assert_true(fabs(agent_fda_jsd(&a, &c) - want) < 1e-12);
    assert_true(fabs(agent_fda_jsd(&c, &a) - want) < 1e-12);    /* symmetric */
}

static void fda_shift_raises(void **state)
{
    (void)state;
    agent_fda s;
    agent_fda_init(&s, 99, 25, 400, 0.05, 0.8);
    const char *n1[] = { "work_a", "work_b", "work_c" }, *n2[] = { "work_d", "work_b", "work_e" };
    uint64_t c1[] = { 50, 30, 20 };
    agent_fda_dist d1 = dist_of(n1, c1, 3), d2 = dist_of(n2, c1, 3);
    assert_true(agent_fda_step(&s, &d1) == 99);          /* first interval: no previous */
    assert_true(agent_fda_step(&s, &d1) == 99);          /* steady, 1 of 5 */
    double f = agent_fda_step(&s, &d2);                  /* hot functions shift */
    assert_true(s.last_d > 0.05);
    assert_true(fabs(f - 99 / 0.8) < 1e-9);
    f = agent_fda_step(&s, &d1);                         /* and back: up again */
    assert_true(fabs(f - 99 / 0.8 / 0.8) < 1e-9);
    for (int i = 0; i < 10; i++) f = agent_fda_step(&s, i % 2 ? &d1 : &d2);
    assert_true(f == 400);                               /* capped at max */
}

static void fda_steady_lowers_after_5(void **state)
{
    (void)state;
    agent_fda s;
    agent_fda_init(&s, 100, 30, 400, 0.05, 0.8);
    const char *n[] = { "a", "b", "c" };
    uint64_t c1[] = { 50, 30, 20 }, c2[] = { 51, 29, 20 };   /* noise, D tiny */
    agent_fda_dist d1 = dist_of(n, c1, 3), d2 = dist_of(n, c2, 3);
    assert_true(agent_fda_step(&s, &d1) == 100);            /* baseline */
    for (int i = 0; i < 4; i++) assert_true(agent_fda_step(&s, i % 2 ? &d1 : &d2) == 100);
    assert_true(s.last_d <= 0.05);
    double f = agent_fda_step(&s, &d2);                    /* 5th steady interval */
    assert_true(fabs(f - 80) < 1e-9);
    for (int i = 0; i < 4; i++) assert_true(fabs(agent_fda_step(&s, &d2) - 80) < 1e-9);
    assert_true(fabs(agent_fda_step(&s, &d2) - 64) < 1e-9);  /* 5 more */
    for (int i = 0; i < 30; i++) f = agent_fda_step(&s, &d2);
    assert_true(f == 30);                                  /* floored at min */
}

static void fda_shift_resets_steady_count(void **state)
{
    (void)state;
    agent_fda s;
    agent_fda_init(&s, 100, 10, 1000, 0.05, 0.5);
    const char *n1[] = { "a" }, *n2[] = { "b" };
    uint64_t c[] = { 10 };
    agent_fda_dist a = dist_of(n1, c, 1), b = dist_of(n2, c, 1);
    agent_fda_step(&s, &a);
    for (int i = 0; i < 4; i++) agent_fda_step(&s, &a);       /* 4 steady */
    assert_true(agent_fda_step(&s, &b) == 200);              /* shift: up, count reset */
    for (int i = 0; i < 4; i++) assert_true(agent_fda_step(&s, &b) == 200);
    assert_true(agent_fda_step(&s, &b) == 100);
    agent_fda_dist empty = { 0 };
    assert_true(agent_fda_step(&s, &empty) == 100);          /* no samples: no change */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fsp_skew),
        cmocka_unit_test(fsp_p90_drops_more),
        cmocka_unit_test(fsp_p1_keeps_all),
        cmocka_unit_test(fsp_single_thread),
        cmocka_unit_test(fda_top10),
        cmocka_unit_test(fda_top_by_function),
        cmocka_unit_test(fda_jsd_by_hand),
        cmocka_unit_test(fda_shift_raises),
        cmocka_unit_test(fda_steady_lowers_after_5),
        cmocka_unit_test(fda_shift_resets_steady_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
