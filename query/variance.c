/* variance.c — what makes the total swing?  VProfiler's question asked of
 * sampled profiles: over units u (windows, or groups), with T_u the unit's
 * total and s_f,u the self value of function f in it,
 *   contribution(f) = Cov(s_f, T) / Var(T)     (population moments)
 * which sums to 1 over all functions, since the s_f add up to T.  The k
 * largest contributions are answered; they are null when Var(T) = 0.
 *
 * Each contribution carries its sampling error (issue 15: numbers with the
 * samples behind them): a unit's s_f,u is T_u times a share estimated from
 * its n_u samples, with variance T_u^2 p (1 - p) / n_u; the contribution
 * is linear in the s_f,u with weights (T_u - mean T) / (N Var(T)), so
 *   se(f)^2 = sum_u T_u^2 p_u (1 - p_u) / n_u (T_u - mean T)^2 / (sum_u (T_u - mean T)^2)^2
 * (the totals taken as given).  null when a unit does not know its samples.
 * Values of gauges are the units' averages (divided by their divisor).
 * The analysis answers rows (query_variance_result); query_variance_json
 * (encode_json.c) is /api/v1/variance's JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

typedef struct { double c, mean; uint32_t fn; size_t i; store_reader *r; } fn_var;

static int by_contribution(const void *a, const void *b)
{
    const fn_var *x = a, *y = b;
    int xn = x->c != x->c, yn = y->c != y->c;
    if (xn != yn) return xn - yn;
    if (!xn && x->c != y->c) return x->c > y->c ? -1 : 1;
    if (x->mean != y->mean) return x->mean > y->mean ? -1 : 1;
    return strcmp(store_string(x->r, x->fn, NULL), store_string(y->r, y->fn, NULL));
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The sampling error of a function's contribution (see the top); NaN when
 * a unit's samples are unknown or Var(T) is 0. */
static double contribution_se(const query_fprofile *u, const double *T, const double *s, size_t n)
{
    double mean = query_mean(T, n), den = 0, num = 0;
    for (size_t i = 0; i < n; i++) {
        double d = T[i] - mean;
        den += d * d;
        if (u[i].samples_unknown) return NAN;
        if (T[i] <= 0 || !u[i].samples) continue;
        double p = s[i] / T[i];
        num += T[i] * T[i] * p * (1 - p) / (double)u[i].samples * d * d;
    }
    return den > 0 ? sqrt(num) / den : NAN;
}

/* The k largest contributions over units u[0..n). */
static int variance_of(store_reader *r, const query_fprofile *u, size_t n, size_t k, query_variance_result *out)
{
    /* The union of the units' functions. */
    size_t nf = 0, cap = 0;
    for (size_t i = 0; i < n; i++) cap += u[i].f.n;
    uint32_t *fns = malloc((cap ? cap : 1) * sizeof *fns);
    double *T = malloc((n ? n : 1) * sizeof *T), *s = NULL;
    fn_var *vars = NULL;
    int rc = -1;
    if (!fns || !T) goto done;
    for (size_t i = 0; i < n; i++) {
        memcpy(fns + nf, u[i].f.fn, u[i].f.n * sizeof *fns);
        nf += u[i].f.n;
        T[i] = (double)u[i].total / (double)(u[i].divisor ? u[i].divisor : 1);
    }
    qsort(fns, nf, sizeof *fns, u32_cmp);
    size_t uniq = 0;
    for (size_t i = 0; i < nf; i++)
        if (!uniq || fns[uniq - 1] != fns[i]) fns[uniq++] = fns[i];
    nf = uniq;
    s = malloc((n ? n : 1) * sizeof *s);
    vars = malloc((nf ? nf : 1) * sizeof *vars);
    size_t keep = nf < k ? nf : k;
    out->rows = malloc((keep ? keep : 1) * sizeof *out->rows);
    if (!s || !vars || !out->rows) goto done;
    for (size_t f = 0; f < nf; f++) {
        for (size_t i = 0; i < n; i++) {
            const query_functions *qf = &u[i].f;
            size_t lo = 0, hi = qf->n;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (qf->fn[mid] < fns[f]) lo = mid + 1;
                else hi = mid;
            }
            s[i] = lo < qf->n && qf->fn[lo] == fns[f] ? (double)qf->self[lo] / (double)(u[i].divisor ? u[i].divisor : 1) : 0;
        }
        vars[f] = (fn_var){ query_contribution(s, T, n), query_mean(s, n), fns[f], f, r };
    }
    qsort(vars, nf, sizeof *vars, by_contribution);
    for (size_t q = 0; q < keep; q++) {
        /* The function's own variance needs its series again. */
        for (size_t i = 0; i < n; i++) {
            const query_functions *qf = &u[i].f;
            s[i] = 0;
            for (size_t j = 0; j < qf->n; j++)
                if (qf->fn[j] == vars[q].fn) s[i] = (double)qf->self[j] / (double)(u[i].divisor ? u[i].divisor : 1);
        }
        out->rows[q] = (query_variance_row){ store_string(r, vars[q].fn, NULL), vars[q].c,
                                             contribution_se(u, T, s, n), query_mean(s, n), query_var(s, n) };
    }
    out->n = keep;
    out->units = n;
    out->mean = query_mean(T, n);
    out->variance = query_var(T, n);
    rc = 0;
done:
    free(fns);
    free(T);
    free(s);
    free(vars);
    return rc;
}

int query_variance_windows(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                           int64_t step_ms, size_t k, query_variance_result *out)
{
    query_fprofile *u;
    size_t n;
    memset(out, 0, sizeof *out);
    if (query_window_profiles(r, set, from_ms, until_ms, step_ms, &u, &n)) return -1;
    int rc = variance_of(r, u, n, k, out);
    out->step_ms = step_ms;
    query_units_free(u, n);
    if (rc) query_variance_free(out);
    return rc;
}

int query_variance_groups(store_reader *r, const query_series_set *whole, const query_group *groups, size_t n,
                          int64_t from_ms, int64_t until_ms, size_t k, query_variance_result *out)
{
    query_fprofile *u;
    query_tree t;
    char err[128], unit[64];
    memset(out, 0, sizeof *out);
    if (query_merge(r, whole, from_ms, until_ms, &t, err, sizeof err)) return -1;
    snprintf(unit, sizeof unit, "%s", t.unit);
    query_tree_free(&t);
    if (query_group_profiles(r, groups, n, from_ms, until_ms, unit, &u)) return -1;
    int rc = variance_of(r, u, n, k, out);
    query_units_free(u, n);
    if (rc) query_variance_free(out);
    return rc;
}

void query_variance_free(query_variance_result *v)
{
    free(v->rows);
    memset(v, 0, sizeof *v);
}
