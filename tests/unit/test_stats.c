/* test_stats.c — the arithmetic of query/stats.c and the speedscope
 * encoder against answers computed by hand (in the comments) or published
 * (Wilson intervals): entropy, top-k with its tie rule, Manhattan distance,
 * Jensen-Shannon divergence, the two-proportion z-test, variance
 * attribution, summaries with missing windows, and a speedscope file with
 * two profiles sharing frames. */
#include <string.h>

#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../query/stats.h"

#define EPS 1e-9

/* Names by function id: ctx is a NULL-terminated array of strings. */
static const char *name_of(void *ctx, uint32_t fn)
{
    const char *const *names = ctx;
    return names[fn];
}

static const char *const names[] = {"root", "zeta", "alpha", "mid", "beta", "gamma", "delta", NULL};

static query_dist dist(const uint32_t *fn, const uint64_t *v, size_t n)
{
    query_dist d;
    assert_int_equal(query_dist_from_values(&d, fn, v, n), 0);
    return d;
}

/* ---- distributions ---------------------------------------------------- */

static void test_dist_from_values(void **state)
{
    (void)state;
    uint32_t fn[] = {1, 3, 5, 9};
    uint64_t v[] = {1, 0, 3, 4};
    query_dist d = dist(fn, v, 4);
    assert_int_equal(d.n, 3); /* the zero is skipped */
    assert_int_equal(d.fn[0], 1);
    assert_int_equal(d.fn[1], 5);
    assert_int_equal(d.fn[2], 9);
    assert_float_equal(query_dist_get(&d, 1), 0.125, EPS);
    assert_float_equal(query_dist_get(&d, 5), 0.375, EPS);
    assert_float_equal(query_dist_get(&d, 9), 0.5, EPS);
    assert_float_equal(query_dist_get(&d, 3), 0, 0);
    assert_float_equal(query_dist_get(&d, 0), 0, 0);
    assert_float_equal(query_dist_get(&d, 10), 0, 0);
    query_dist_free(&d);
    assert_null(d.fn);
    assert_int_equal(d.n, 0);

    uint64_t zeros[] = {0, 0, 0, 0};
    d = dist(fn, zeros, 4);
    assert_int_equal(d.n, 0);
    assert_float_equal(query_dist_get(&d, 1), 0, 0);
    assert_float_equal(query_entropy(&d), 0, 0);
    query_dist_free(&d);

    d = dist(NULL, NULL, 0);
    assert_int_equal(d.n, 0);
    query_dist_free(&d);

    uint32_t unsorted[] = {1, 5, 5};
    uint64_t ones[] = {1, 1, 1};
    assert_int_equal(query_dist_from_values(&d, unsorted, ones, 3), -1);
    assert_int_equal(d.n, 0);
    assert_null(d.fn);
}

static void test_entropy(void **state)
{
    (void)state;
    uint32_t fn[] = {1, 2, 3, 4};
    uint64_t uni[] = {7, 7, 7, 7};
    query_dist d = dist(fn, uni, 4);
    assert_float_equal(query_entropy(&d), 2.0, EPS);
    query_dist_free(&d);

    d = dist(fn, uni, 1);
    assert_float_equal(query_entropy(&d), 0.0, 0);
    query_dist_free(&d);

    /* (1/2, 1/4, 1/4): 0.5*1 + 2*0.25*2 = 1.5 bits */
    uint64_t v[] = {2, 1, 1};
    d = dist(fn, v, 3);
    assert_float_equal(query_entropy(&d), 1.5, EPS);
    query_dist_free(&d);
}

/* ---- top-k ------------------------------------------------------------- */

static void test_top_k_ties_by_name(void **state)
{
    (void)state;
    /* X: zeta(1)=1, alpha(2)=1, mid(3)=1, beta(4)=3 -> beta 0.5, others 1/6.
     * Y: beta(4) only -> beta scores 1.5, the three others tie at 1/6 and
     * are ordered alpha, mid, zeta by name although their ids say 1, 2, 3. */
    uint32_t fx[] = {1, 2, 3, 4};
    uint64_t vx[] = {1, 1, 1, 3};
    uint32_t fy[] = {4};
    uint64_t vy[] = {9};
    query_dist x = dist(fx, vx, 4), y = dist(fy, vy, 1);
    uint32_t out[3];
    assert_int_equal(query_top_k(&x, &y, 3, name_of, (void *)names, out), 3);
    assert_int_equal(out[0], 4); /* beta */
    assert_int_equal(out[1], 2); /* alpha */
    assert_int_equal(out[2], 3); /* mid: zeta is cut */

    assert_int_equal(query_top_k(&x, &y, 0, name_of, (void *)names, out), 0);
    query_dist_free(&x);
    query_dist_free(&y);
}

static void test_top_k_larger_than_union(void **state)
{
    (void)state;
    /* X: alpha(2)=0.25 gamma(5)=0.75; Y: gamma(5)=0.5 delta(6)=0.5.
     * Scores: gamma 1.25, delta 0.5, alpha 0.25. */
    uint32_t fx[] = {2, 5}, fy[] = {5, 6};
    uint64_t vx[] = {1, 3}, vy[] = {2, 2};
    query_dist x = dist(fx, vx, 2), y = dist(fy, vy, 2);
    uint32_t out[10];
    assert_int_equal(query_top_k(&x, &y, 10, name_of, (void *)names, out), 3);
    assert_int_equal(out[0], 5);
    assert_int_equal(out[1], 6);
    assert_int_equal(out[2], 2);

    /* Both empty: nothing to rank. */
    query_dist e = {0};
    assert_int_equal(query_top_k(&e, &e, 10, name_of, (void *)names, out), 0);
    query_dist_free(&x);
    query_dist_free(&y);
}

static void test_top_k_skips_zero_shares(void **state)
{
    (void)state;
    /* A hand-made distribution carrying a zero share is not ranked. */
    uint32_t fn[] = {1, 2};
    double p[] = {0, 1};
    query_dist x = {fn, p, 2}, e = {0};
    uint32_t out[4];
    assert_int_equal(query_top_k(&x, &e, 4, name_of, (void *)names, out), 1);
    assert_int_equal(out[0], 2);
}

/* ---- distances ---------------------------------------------------------- */

/* The Manhattan distance sampling alone gives n samples drawn from ref:
 * by hand for p = 0.25, 0.75; a simulation agrees (the normal
 * approximation is close at n = 400); no samples, no noise. */
static void test_manhattan_noise(void **state)
{
    (void)state;
    uint32_t fn[2] = { 1, 2 };
    uint64_t v[2] = { 1, 3 };
    query_dist ref = dist(fn, v, 2);
    double want = 2 * sqrt(0.25 * 0.75) * sqrt(2 / (M_PI * 400));
    assert_true(fabs(query_manhattan_noise(&ref, fn, 2, 400) - want) < 1e-12);
    assert_true(isnan(query_manhattan_noise(&ref, fn, 2, 0)));
    /* simulate: 2000 groups of 400 draws at p = 0.25 */
    unsigned seed = 7;
    double sum = 0;
    for (int g = 0; g < 2000; g++) {
        int hits = 0;
        for (int i = 0; i < 400; i++) {
            seed = seed * 1103515245 + 12345;
            hits += ((seed >> 16) & 0x7fff) < 0x8000 / 4;
        }
        sum += 2 * fabs(hits / 400.0 - 0.25);
    }
    assert_true(fabs(sum / 2000 - want) < 0.1 * want);
    query_dist_free(&ref);
}

static void test_identical(void **state)
{
    (void)state;
    uint32_t fn[] = {1, 2, 3};
    uint64_t v[] = {5, 3, 2};
    query_dist x = dist(fn, v, 3), y = dist(fn, v, 3);
    uint32_t K[10];
    size_t nk = query_top_k(&x, &y, 10, name_of, (void *)names, K);
    assert_int_equal(nk, 3);
    assert_float_equal(query_manhattan(&x, &y, K, nk), 0, EPS);
    assert_float_equal(query_jsd(&x, &y, K, nk), 0, EPS);
    /* Same shares from different magnitudes. */
    uint64_t v10[] = {50, 30, 20};
    query_dist_free(&y);
    y = dist(fn, v10, 3);
    assert_float_equal(query_manhattan(&x, &y, K, nk), 0, EPS);
    assert_float_equal(query_jsd(&x, &y, K, nk), 0, EPS);
    query_dist_free(&x);
    query_dist_free(&y);
}

static void test_disjoint(void **state)
{
    (void)state;
    uint32_t fx[] = {1, 2}, fy[] = {3, 4};
    uint64_t v[] = {1, 1};
    query_dist x = dist(fx, v, 2), y = dist(fy, v, 2);
    uint32_t K[10];
    size_t nk = query_top_k(&x, &y, 10, name_of, (void *)names, K);
    assert_int_equal(nk, 4);
    assert_float_equal(query_manhattan(&x, &y, K, nk), 2, EPS);
    assert_float_equal(query_jsd(&x, &y, K, nk), 1, EPS);
    query_dist_free(&x);
    query_dist_free(&y);
}

static void test_jsd_by_hand(void **state)
{
    (void)state;
    /* P = (1, 0), Q = (0.5, 0.5), M = (0.75, 0.25):
     *   KL(P||M) = log2(1/0.75)                             = 0.415037
     *   KL(Q||M) = 0.5 log2(0.5/0.75) + 0.5 log2(0.5/0.25)
     *            = 0.5 (-0.584963) + 0.5 (1)                = 0.207519
     *   JSD      = (0.415037 + 0.207519) / 2                = 0.311278
     * Manhattan  = |1 - 0.5| + |0 - 0.5|                     = 1 */
    uint32_t fx[] = {1}, fy[] = {1, 2};
    uint64_t vx[] = {4}, vy[] = {3, 3};
    query_dist x = dist(fx, vx, 1), y = dist(fy, vy, 2);
    uint32_t K[] = {1, 2};
    double want = 0.5 * log2(1 / 0.75) + 0.5 * (0.5 * log2(0.5 / 0.75) + 0.5 * log2(0.5 / 0.25));
    assert_float_equal(want, 0.311278, 1e-6);
    assert_float_equal(query_jsd(&x, &y, K, 2), want, EPS);
    assert_float_equal(query_jsd(&y, &x, K, 2), want, EPS); /* symmetric */
    assert_float_equal(query_manhattan(&x, &y, K, 2), 1, EPS);
    query_dist_free(&x);
    query_dist_free(&y);

    /* Renormalization over K: mass outside K does not count.
     * X = {1: 0.5, 3: 0.5}, Y = {1: 0.25, 2: 0.25, 4: 0.5}, K = {1, 2}
     * -> P = (1, 0), Q = (0.5, 0.5), the same 0.311278.  Manhattan is on
     * the raw shares: |0.5 - 0.25| + |0 - 0.25| = 0.5. */
    uint32_t gx[] = {1, 3}, gy[] = {1, 2, 4};
    uint64_t wx[] = {2, 2}, wy[] = {1, 1, 2};
    x = dist(gx, wx, 2);
    y = dist(gy, wy, 3);
    assert_float_equal(query_jsd(&x, &y, K, 2), want, EPS);
    assert_float_equal(query_manhattan(&x, &y, K, 2), 0.5, EPS);
    query_dist_free(&x);
    query_dist_free(&y);
}

static void test_jsd_no_mass_on_k(void **state)
{
    (void)state;
    uint32_t fx[] = {1}, fy[] = {2};
    uint64_t v[] = {1};
    query_dist x = dist(fx, v, 1), y = dist(fy, v, 1), e = {0};
    uint32_t K[] = {1};
    assert_float_equal(query_jsd(&x, &y, K, 1), 1, 0); /* Y has nothing on K */
    assert_float_equal(query_jsd(&y, &x, K, 1), 1, 0);
    assert_float_equal(query_jsd(&x, &e, K, 1), 1, 0);
    assert_float_equal(query_jsd(&x, &x, K, 0), 1, 0); /* empty K */
    assert_float_equal(query_manhattan(&x, &y, K, 1), 1, EPS);
    query_dist_free(&x);
    query_dist_free(&y);
}

/* ---- sampling error ----------------------------------------------------- */

static void test_wilson(void **state)
{
    (void)state;
    static const struct { double p; uint64_t n; double lo, hi; } cases[] = {
        {0.5, 100, 0.4038, 0.5962},
        {0.1, 50, 0.0435, 0.2136},
        {0.0, 10, 0.0, 0.2775},
        {1.0, 10, 0.7225, 1.0},
        {0.3, 0, 0.0, 1.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double lo, hi;
        query_wilson(cases[i].p, cases[i].n, 1.96, &lo, &hi);
        assert_float_equal(lo, cases[i].lo, 1e-4);
        assert_float_equal(hi, cases[i].hi, 1e-4);
        assert_true(lo >= 0 && hi <= 1 && lo <= hi);
    }
}

static void test_two_proportion(void **state)
{
    (void)state;
    /* p = 120/200 = 0.6, se = sqrt(0.24 * 0.02) = 0.069282, z = 0.2 / se */
    assert_float_equal(query_z_value(50, 100, 70, 100), 0.2 / sqrt(0.0048), EPS);
    assert_float_equal(query_z_value(50, 100, 70, 100), 2.8868, 1e-4);
    assert_float_equal(query_z_value(70, 100, 50, 100), -2.8868, 1e-4);
    assert_true(query_significant(50, 100, 70, 100));
    assert_true(query_significant(70, 100, 50, 100));
    assert_false(query_significant(50, 100, 55, 100));
    /* Undefined cases. */
    assert_float_equal(query_z_value(0, 0, 5, 10), 0, 0);
    assert_float_equal(query_z_value(5, 10, 0, 0), 0, 0);
    assert_false(query_significant(0, 100, 0, 100));     /* se = 0 */
    assert_false(query_significant(100, 100, 100, 100)); /* se = 0 */
    assert_false(query_significant(0, 0, 0, 0));
}

/* ---- series ------------------------------------------------------------- */

static void test_moments(void **state)
{
    (void)state;
    double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    assert_float_equal(query_mean(x, 8), 5, EPS);
    assert_float_equal(query_var(x, 8), 4, EPS); /* population: stddev 2 */
    double y[] = {1, 2, 3};
    double z[] = {3, 2, 1};
    assert_float_equal(query_cov(y, z, 3), -2.0 / 3, EPS);
    assert_float_equal(query_cov(y, y, 3), query_var(y, 3), EPS);
    assert_true(isnan(query_mean(x, 0)));
    assert_true(isnan(query_var(x, 0)));
}

static void test_variance_contribution(void **state)
{
    (void)state;
    /* Three units, two functions; T = s1 + s2.
     *   s1 = (2, 4, 15)   mean 7   deviations (-5, -3, 8)
     *   s2 = (8, 16, 15)  mean 13  deviations (-5,  3, 2)
     *   T  = (10, 20, 30) mean 20  deviations (-10, 0, 10), Var T = 200/3
     *   Cov(s1, T) = (50 + 0 + 80) / 3 = 130/3 -> contribution 0.65
     *   Cov(s2, T) = (50 + 0 + 20) / 3 =  70/3 -> contribution 0.35 */
    double s1[] = {2, 4, 15}, s2[] = {8, 16, 15}, t[] = {10, 20, 30};
    double c1 = query_contribution(s1, t, 3), c2 = query_contribution(s2, t, 3);
    assert_float_equal(c1, 0.65, EPS);
    assert_float_equal(c2, 0.35, EPS);
    assert_float_equal(c1 + c2, 1, EPS);
    assert_float_equal(query_cov(s1, t, 3) / query_var(t, 3), 0.65, EPS);
    double flat[] = {5, 5, 5};
    assert_true(isnan(query_contribution(s1, flat, 3))); /* Var T = 0 */
}

static void test_summary(void **state)
{
    (void)state;
    double x[] = {1, NAN, 3, NAN, 5};
    double mean, sd, max;
    size_t count;
    query_summary(x, 5, &mean, &sd, &max, &count);
    assert_int_equal(count, 3);
    assert_float_equal(mean, 3, EPS);
    assert_float_equal(sd, sqrt(8.0 / 3), EPS); /* (4 + 0 + 4) / 3 */
    assert_float_equal(max, 5, 0);

    double neg[] = {NAN, -2, -7};
    query_summary(neg, 3, &mean, NULL, &max, NULL);
    assert_float_equal(mean, -4.5, EPS);
    assert_float_equal(max, -2, 0);

    double none[] = {NAN, NAN};
    query_summary(none, 2, &mean, &sd, &max, &count);
    assert_int_equal(count, 0);
    assert_true(isnan(mean) && isnan(sd) && isnan(max));
    query_summary(NULL, 0, &mean, &sd, &max, &count);
    assert_int_equal(count, 0);
    assert_true(isnan(mean));
}

/* ---- speedscope ---------------------------------------------------------- */

static const char *ss_names[] = {"?", "?", "?", "?", "?", "?", "?", "?", "?", "?",
                                 "main", "foo", "bar", "baz", "bad\xff" "byte", NULL};

static void assert_ints(json_t *a, const long long *want, size_t n)
{
    assert_true(json_is_array(a));
    assert_int_equal(json_array_size(a), n);
    for (size_t i = 0; i < n; i++) assert_int_equal(json_integer_value(json_array_get(a, i)), want[i]);
}

static void test_speedscope(void **state)
{
    (void)state;
    const uint32_t main_foo[] = {10, 11}, main_bar[] = {10, 12}, main_baz[] = {10, 13}, bad[] = {14};
    const query_ss_stack a[] = {{main_foo, 2, 3}, {main_bar, 2, 2}};
    const query_ss_stack b[] = {{main_baz, 2, 5}, {main_foo, 2, 1}, {bad, 1, 4}};
    const query_ss_profile ps[] = {{"cpu a", a, 2, NULL}, {"cpu b", b, 3, NULL}};
    json_t *o = query_speedscope_json(ps, 2, "samples", "my query", name_of, (void *)ss_names);
    assert_non_null(o);

    assert_string_equal(json_string_value(json_object_get(o, "$schema")),
                        "https://www.speedscope.app/file-format-schema.json");
    assert_string_equal(json_string_value(json_object_get(o, "name")), "my query");
    assert_string_equal(json_string_value(json_object_get(o, "exporter")), "flamedb");
    assert_int_equal(json_integer_value(json_object_get(o, "activeProfileIndex")), 0);

    /* Frames: one per function, in order of first appearance. */
    json_t *frames = json_object_get(json_object_get(o, "shared"), "frames");
    const char *want_frames[] = {"main", "foo", "bar", "baz", "bad?byte"};
    assert_int_equal(json_array_size(frames), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(frames, i), "name")),
                            want_frames[i]);

    json_t *profiles = json_object_get(o, "profiles");
    assert_int_equal(json_array_size(profiles), 2);
    json_t *p0 = json_array_get(profiles, 0), *p1 = json_array_get(profiles, 1);
    assert_string_equal(json_string_value(json_object_get(p0, "type")), "sampled");
    assert_string_equal(json_string_value(json_object_get(p0, "name")), "cpu a");
    assert_string_equal(json_string_value(json_object_get(p1, "name")), "cpu b");
    assert_string_equal(json_string_value(json_object_get(p0, "unit")), "none");
    assert_int_equal(json_integer_value(json_object_get(p0, "startValue")), 0);
    assert_int_equal(json_integer_value(json_object_get(p0, "endValue")), 5);
    assert_int_equal(json_integer_value(json_object_get(p1, "endValue")), 10);

    json_t *s0 = json_object_get(p0, "samples"), *s1 = json_object_get(p1, "samples");
    assert_int_equal(json_array_size(s0), 2);
    assert_int_equal(json_array_size(s1), 3);
    assert_ints(json_array_get(s0, 0), (const long long[]){0, 1}, 2);
    assert_ints(json_array_get(s0, 1), (const long long[]){0, 2}, 2);
    assert_ints(json_array_get(s1, 0), (const long long[]){0, 3}, 2);
    assert_ints(json_array_get(s1, 1), (const long long[]){0, 1}, 2); /* foo shared */
    assert_ints(json_array_get(s1, 2), (const long long[]){4}, 1);
    assert_ints(json_object_get(p0, "weights"), (const long long[]){3, 2}, 2);
    assert_ints(json_object_get(p1, "weights"), (const long long[]){5, 1, 4}, 3);

    char *text = json_dumps(o, JSON_COMPACT);
    assert_non_null(text);
    free(text);
    json_decref(o);
}

static void test_speedscope_units(void **state)
{
    (void)state;
    static const struct { const char *in, *out; } units[] = {
        {"nanoseconds", "nanoseconds"}, {"bytes", "bytes"}, {"samples", "none"},
        {"objects", "none"}, {"", "none"}, {NULL, "none"}, {"milliseconds", "milliseconds"},
    };
    const uint32_t f[] = {1};
    const query_ss_stack st[] = {{f, 1, 7}};
    const query_ss_profile p = {"x", st, 1, NULL};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        json_t *o = query_speedscope_json(&p, 1, units[i].in, "n", name_of, (void *)names);
        assert_non_null(o);
        json_t *p0 = json_array_get(json_object_get(o, "profiles"), 0);
        assert_string_equal(json_string_value(json_object_get(p0, "unit")), units[i].out);
        json_decref(o);
    }
    /* A profile's own unit wins over the file's, mapped the same way. */
    const query_ss_profile two[] = {{"own", st, 1, "samples"}, {"file's", st, 1, NULL}};
    json_t *o = query_speedscope_json(two, 2, "nanoseconds", "n", name_of, (void *)names);
    json_t *ps = json_object_get(o, "profiles");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ps, 0), "unit")), "none");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ps, 1), "unit")), "nanoseconds");
    json_decref(o);
}

static void test_speedscope_empty(void **state)
{
    (void)state;
    const query_ss_profile p = {"empty", NULL, 0, NULL};
    json_t *o = query_speedscope_json(&p, 1, "bytes", "n", name_of, (void *)names);
    assert_non_null(o);
    assert_int_equal(json_array_size(json_object_get(json_object_get(o, "shared"), "frames")), 0);
    json_t *p0 = json_array_get(json_object_get(o, "profiles"), 0);
    assert_int_equal(json_integer_value(json_object_get(p0, "endValue")), 0);
    assert_int_equal(json_array_size(json_object_get(p0, "samples")), 0);
    json_decref(o);

    o = query_speedscope_json(NULL, 0, "bytes", "n", name_of, (void *)names);
    assert_non_null(o);
    assert_int_equal(json_array_size(json_object_get(o, "profiles")), 0);
    json_decref(o);
}

/* Many distinct functions: the frame table grows and keeps first-appearance
 * order and dedup. */
static const char *num_name(void *ctx, uint32_t fn)
{
    char *buf = ctx;
    snprintf(buf, 32, "f%u", fn);
    return buf;
}

static void test_speedscope_many_frames(void **state)
{
    (void)state;
    enum { N = 1000 };
    uint32_t *ids = malloc(2 * N * sizeof *ids);
    query_ss_stack *st = malloc(N * sizeof *st);
    assert_non_null(ids);
    assert_non_null(st);
    for (uint32_t i = 0; i < N; i++) {
        ids[2 * i] = 7919u * i % 100003u; /* scattered ids */
        ids[2 * i + 1] = 7919u * ((i + 1) % N) % 100003u;
        st[i] = (query_ss_stack){&ids[2 * i], 2, 1};
    }
    const query_ss_profile p = {"many", st, N, NULL};
    char buf[32];
    json_t *o = query_speedscope_json(&p, 1, "nanoseconds", "n", num_name, buf);
    assert_non_null(o);
    json_t *frames = json_object_get(json_object_get(o, "shared"), "frames");
    assert_int_equal(json_array_size(frames), N);
    json_t *samples = json_object_get(json_array_get(json_object_get(o, "profiles"), 0), "samples");
    for (uint32_t i = 0; i < N; i++) {
        json_t *s = json_array_get(samples, i);
        assert_int_equal(json_integer_value(json_array_get(s, 0)), i);
        assert_int_equal(json_integer_value(json_array_get(s, 1)), i + 1 < N ? i + 1 : 0);
        char want[32];
        snprintf(want, sizeof want, "f%u", ids[2 * i]);
        assert_string_equal(json_string_value(json_object_get(json_array_get(frames, i), "name")), want);
    }
    json_decref(o);
    free(ids);
    free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_from_values),
        cmocka_unit_test(test_entropy),
        cmocka_unit_test(test_manhattan_noise),
        cmocka_unit_test(test_top_k_ties_by_name),
        cmocka_unit_test(test_top_k_larger_than_union),
        cmocka_unit_test(test_top_k_skips_zero_shares),
        cmocka_unit_test(test_identical),
        cmocka_unit_test(test_disjoint),
        cmocka_unit_test(test_jsd_by_hand),
        cmocka_unit_test(test_jsd_no_mass_on_k),
        cmocka_unit_test(test_wilson),
        cmocka_unit_test(test_two_proportion),
        cmocka_unit_test(test_moments),
        cmocka_unit_test(test_variance_contribution),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_speedscope),
        cmocka_unit_test(test_speedscope_units),
        cmocka_unit_test(test_speedscope_empty),
        cmocka_unit_test(test_speedscope_many_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
