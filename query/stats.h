/* stats.h — private to query/: the arithmetic behind top functions,
 * stability, diff and variance attribution, and the speedscope encoder.
 *
 * Everything here is pure computation on arrays the caller owns: no
 * storage, no HTTP.  Function names are reached through a callback so the
 * same code serves stored profiles and tests. */
#ifndef FLAMEDB_QUERY_STATS_H
#define FLAMEDB_QUERY_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The name of function string id fn (NULL is read as ""); the pointer must
 * stay valid until the call that asked for it returns. */
typedef const char *(*query_name_fn)(void *ctx, uint32_t fn);

/* ---- distributions (stats.c) ----------------------------------------- */

/* p(f) = self(f) / total over the functions with self(f) > 0.  fn is
 * ascending and unique; p sums to 1, and n is 0 when the total is 0. */
typedef struct {
    uint32_t *fn;   /* owned, ascending unique function string ids */
    double *p;      /* owned, the shares */
    size_t n;
} query_dist;

/* Builds a distribution from n (fn, value) pairs, fn strictly ascending;
 * zero values are skipped.  Answers 0, or -1 when out of memory or when fn
 * is not strictly ascending (out is then empty). */
int query_dist_from_values(query_dist *out, const uint32_t *fn, const uint64_t *value, size_t n);
void query_dist_free(query_dist *d);
/* p(fn) by binary search, 0 when absent. */
double query_dist_get(const query_dist *d, uint32_t fn);

/* Shannon entropy in bits, -sum p log2 p over p > 0 (0 when empty). */
double query_entropy(const query_dist *d);

/* The set K: the (at most) k functions with the largest pX + pY > 0, ties
 * broken by name ascending, then by id.  Writes them to out (room for k)
 * in that order and answers how many.  Never fails: when memory is short
 * it falls back to a slower selection that allocates nothing. */
size_t query_top_k(const query_dist *x, const query_dist *y, size_t k, query_name_fn name,
                   void *ctx, uint32_t *out);

/* Manhattan distance over K: sum |pX(f) - pY(f)|, in [0, 2]. */
double query_manhattan(const query_dist *x, const query_dist *y, const uint32_t *K, size_t nk);

/* The Manhattan distance over K that sampling alone gives a sample of n
 * drawn from ref: sum over f in K of E|p^(f) - p(f)| ~ sqrt(2 p (1 - p) /
 * (pi n)) (each share normal around p); NaN when n is 0.  An
 * approximation for small n, which is what it is for: telling a distance
 * that n samples explain from one they do not. */
double query_manhattan_noise(const query_dist *ref, const uint32_t *K, size_t nk, uint64_t n);

/* Jensen-Shannon divergence (base 2, in [0, 1]) of X and Y renormalized
 * over K; 1 when either side has no mass on K (also when K is empty). */
double query_jsd(const query_dist *x, const query_dist *y, const uint32_t *K, size_t nk);

/* ---- sampling error (stats.c) ----------------------------------------- */

/* Wilson score interval for a share p estimated from n samples, with z
 * standard deviations (1.96 for 95%), clamped to [0, 1]; n = 0 -> [0, 1]. */
void query_wilson(double p, uint64_t n, double z, double *lo, double *hi);

/* Two-proportion z statistic of x2/n2 against x1/n1 with the pooled
 * standard error; 0 when n1 or n2 is 0 or the standard error is 0. */
double query_z_value(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2);
/* 1 when |query_z_value| > 1.96 (significant at 95%), else 0. */
int query_significant(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2);

/* ---- series (stats.c) -------------------------------------------------- */

/* Mean, population variance (divide by n) and population covariance of
 * series of n values; NaN when n is 0. */
double query_mean(const double *x, size_t n);
double query_var(const double *x, size_t n);
double query_cov(const double *x, const double *y, size_t n);

/* VProfiler's share of the variance of the totals t explained by function
 * values s over n units: Cov(s, t) / Var(t); NaN when Var(t) is 0 (or n is
 * 0).  Sums to 1 over all functions when their s add up to t in every unit. */
double query_contribution(const double *s, const double *t, size_t n);

/* Summary of a list where NaN marks "no value": *count non-NaN entries,
 * their mean, population standard deviation and maximum (NaN when *count
 * is 0).  Any output pointer may be NULL. */
void query_summary(const double *x, size_t n, double *mean, double *stddev, double *max, size_t *count);

/* ---- speedscope encoder (encode_speedscope.c) ------------------------- */

/* One stack of a profile: function string ids, root first, and its weight. */
typedef struct {
    const uint32_t *frames;
    uint32_t depth;
    uint64_t weight;
} query_ss_stack;

typedef struct {
    const char *name;
    const query_ss_stack *stacks;
    size_t n_stacks;
    const char *unit;               /* this profile's unit, or NULL: the file's */
} query_ss_profile;

/* A speedscope file (https://www.speedscope.app/file-format-schema.json)
 * with one "sampled" profile per entry, frames shared across them (one per
 * distinct function id, in order of first appearance), endValue the sum of
 * a profile's weights.  unit "nanoseconds" and "bytes" pass through (as do
 * speedscope's other units), anything else becomes "none".  NULL when out
 * of memory. */
json_t *query_speedscope_json(const query_ss_profile *profiles, size_t n_profiles, const char *unit,
                              const char *name, query_name_fn frame_name, void *ctx);

#endif
