/* stats.c — the arithmetic of profile comparison, kept apart from storage
 * so that it can be checked against hand-computed answers.
 *
 * A profile is reduced to a distribution: the share p(f) = self(f) / total
 * of each function, as parallel arrays sorted by function id so that a
 * lookup is a binary search and two distributions merge in one pass.  On
 * top of that: entropy (how spread the time is), the top-k set K of two
 * distributions, and the Manhattan distance and Jensen-Shannon divergence
 * over K (how much two profiles differ, after Google-Wide Profiling and
 * Atys).  Shares estimated from n samples get Wilson score intervals and a
 * two-proportion z-test; VProfiler's variance attribution is Cov(s_f, T) /
 * Var(T) with population moments; query_summary condenses a series of
 * per-window figures where NaN marks a window without a value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

/* ---- distributions ---------------------------------------------------- */

int query_dist_from_values(query_dist *out, const uint32_t *fn, const uint64_t *value, size_t n)
{
    memset(out, 0, sizeof *out);
    double sum = 0;
    size_t nz = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && fn[i] <= fn[i - 1]) return -1;
        sum += (double)value[i];
        nz += value[i] != 0;
    }
    if (!nz) return 0;
    out->fn = malloc(nz * sizeof *out->fn);
    out->p = malloc(nz * sizeof *out->p);
    if (!out->fn || !out->p) {
        query_dist_free(out);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!value[i]) continue;
        out->fn[out->n] = fn[i];
        out->p[out->n++] = (double)value[i] / sum;
    }
    return 0;
}

void query_dist_free(query_dist *d)
{
    free(d->fn);
    free(d->p);
    memset(d, 0, sizeof *d);
}

double query_dist_get(const query_dist *d, uint32_t fn)
{
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->fn[mid] < fn) lo = mid + 1;
        else hi = mid;
    }
    return lo < d->n && d->fn[lo] == fn ? d->p[lo] : 0;
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Summed smallest term first: floating-point sums depend on their order,
 * and the distribution's order is by function id, which follows how the
 * data lies on disk; sorted terms make the answer the data's alone. */
double query_entropy(const query_dist *d)
{
    double h = 0, *t = malloc((d->n ? d->n : 1) * sizeof *t);
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->p[i] > 0) {
            double v = -d->p[i] * log2(d->p[i]);
            if (t) t[n++] = v;
            else h += v; /* out of memory: the same value but for the last bits */
        }
    if (t) {
        qsort(t, n, sizeof *t, double_cmp);
        for (size_t i = 0; i < n; i++) h += t[i];
        free(t);
    }
    return h > 0 ? h : 0;
}

/* ---- top-k ------------------------------------------------------------- */

typedef struct {
    uint32_t fn;
    double score;      /* pX + pY */
    const char *name;
} topk_entry;

/* Ranking order: score descending, then name ascending, then id. */
static int topk_cmp(const topk_entry *a, const topk_entry *b)
{
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    int c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
    if (c) return c;
    return (a->fn > b->fn) - (a->fn < b->fn);
}

static int topk_qsort_cmp(const void *a, const void *b)
{
    return topk_cmp(a, b);
}

/* Walks the union of x and y in function order, one entry per call:
 * answers 0 at the end.  *i and *j are cursors into x and y. */
static int union_next(const query_dist *x, const query_dist *y, size_t *i, size_t *j, topk_entry *e)
{
    if (*i < x->n && (*j >= y->n || x->fn[*i] <= y->fn[*j])) {
        e->fn = x->fn[*i];
        e->score = x->p[(*i)++];
        if (*j < y->n && y->fn[*j] == e->fn) e->score += y->p[(*j)++];
        return 1;
    }
    if (*j < y->n) {
        e->fn = y->fn[*j];
        e->score = y->p[(*j)++];
        return 1;
    }
    return 0;
}

/* Without memory: k passes, each picking the best entry ranked after the
 * previous pick.  O(k * (nx + ny)); only used when malloc fails. */
static size_t top_k_select(const query_dist *x, const query_dist *y, size_t k, query_name_fn name,
                           void *ctx, uint32_t *out)
{
    topk_entry prev = {0}, best = {0}, e;
    size_t got = 0;
    while (got < k) {
        size_t i = 0, j = 0;
        int found = 0;
        while (union_next(x, y, &i, &j, &e)) {
            if (!(e.score > 0)) continue;
            e.name = name(ctx, e.fn);
            if (got && topk_cmp(&e, &prev) <= 0) continue;
            if (!found || topk_cmp(&e, &best) < 0) best = e, found = 1;
        }
        if (!found) break;
        out[got++] = best.fn;
        prev = best;
    }
    return got;
}

size_t query_top_k(const query_dist *x, const query_dist *y, size_t k, query_name_fn name,
                   void *ctx, uint32_t *out)
{
    if (!k) return 0;
    topk_entry *all = malloc((x->n + y->n + 1) * sizeof *all);
    if (!all) return top_k_select(x, y, k, name, ctx, out);
    size_t n = 0, i = 0, j = 0;
    topk_entry e;
    while (union_next(x, y, &i, &j, &e)) {
        if (!(e.score > 0)) continue;
        e.name = name(ctx, e.fn);
        all[n++] = e;
    }
    qsort(all, n, sizeof *all, topk_qsort_cmp);
    if (n > k) n = k;
    for (size_t m = 0; m < n; m++) out[m] = all[m].fn;
    free(all);
    return n;
}

/* ---- distances over K -------------------------------------------------- */

double query_manhattan(const query_dist *x, const query_dist *y, const uint32_t *K, size_t nk)
{
    double m = 0;
    for (size_t i = 0; i < nk; i++) m += fabs(query_dist_get(x, K[i]) - query_dist_get(y, K[i]));
    return m;
}

double query_manhattan_noise(const query_dist *ref, const uint32_t *K, size_t nk, uint64_t n)
{
    if (!n) return NAN;
    double s = 0;
    for (size_t i = 0; i < nk; i++) {
        double p = query_dist_get(ref, K[i]);
        s += sqrt(p * (1 - p));
    }
    return s * sqrt(2.0 / (M_PI * (double)n));
}

/* p * log2(p / m), 0 when p is 0. */
static double kl_term(double p, double m)
{
    return p > 0 ? p * log2(p / m) : 0;
}

double query_jsd(const query_dist *x, const query_dist *y, const uint32_t *K, size_t nk)
{
    double sx = 0, sy = 0;
    for (size_t i = 0; i < nk; i++) {
        sx += query_dist_get(x, K[i]);
        sy += query_dist_get(y, K[i]);
    }
    if (!(sx > 0) || !(sy > 0)) return 1;
    double d = 0;
    for (size_t i = 0; i < nk; i++) {
        double p = query_dist_get(x, K[i]) / sx, q = query_dist_get(y, K[i]) / sy;
        double m = (p + q) / 2;
        d += 0.5 * kl_term(p, m) + 0.5 * kl_term(q, m);
    }
    return d < 0 ? 0 : d > 1 ? 1 : d;
}

/* ---- sampling error ---------------------------------------------------- */

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

void query_wilson(double p, uint64_t n, double z, double *lo, double *hi)
{
    if (!n) {
        *lo = 0;
        *hi = 1;
        return;
    }
    double nn = (double)n, z2 = z * z;
    double denom = 1 + z2 / nn;
    double center = (p + z2 / (2 * nn)) / denom;
    double half = z * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / denom;
    *lo = clamp01(center - half);
    *hi = clamp01(center + half);
}

double query_z_value(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2)
{
    if (!n1 || !n2) return 0;
    double a = (double)n1, b = (double)n2;
    double p = ((double)x1 + (double)x2) / (a + b);
    double se = sqrt(p * (1 - p) * (1 / a + 1 / b));
    if (!(se > 0)) return 0; /* also NaN, when a count exceeds its n */
    return ((double)x2 / b - (double)x1 / a) / se;
}

int query_significant(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2)
{
    return fabs(query_z_value(x1, n1, x2, n2)) > 1.96;
}

/* ---- series ------------------------------------------------------------ */

double query_mean(const double *x, size_t n)
{
    if (!n) return NAN;
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s / (double)n;
}

double query_cov(const double *x, const double *y, size_t n)
{
    if (!n) return NAN;
    double mx = query_mean(x, n), my = query_mean(y, n), s = 0;
    for (size_t i = 0; i < n; i++) s += (x[i] - mx) * (y[i] - my);
    return s / (double)n;
}

double query_var(const double *x, size_t n)
{
    return query_cov(x, x, n);
}

double query_contribution(const double *s, const double *t, size_t n)
{
    double v = query_var(t, n);
    return v > 0 ? query_cov(s, t, n) / v : NAN;
}

void query_summary(const double *x, size_t n, double *mean, double *stddev, double *max, size_t *count)
{
    size_t c = 0;
    double sum = 0, mx = NAN;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) continue;
        c++;
        sum += x[i];
        if (isnan(mx) || x[i] > mx) mx = x[i];
    }
    double mu = c ? sum / (double)c : NAN, ss = 0;
    for (size_t i = 0; c && i < n; i++)
        if (!isnan(x[i])) ss += (x[i] - mu) * (x[i] - mu);
    if (mean) *mean = mu;
    if (stddev) *stddev = c ? sqrt(ss / (double)c) : NAN;
    if (max) *max = mx;
    if (count) *count = c;
}
