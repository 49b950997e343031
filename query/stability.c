/* stability.c — can this profile be trusted?  Google-Wide Profiling's
 * checks: the entropy of each unit's function distribution, and the
 * Manhattan distance and Jensen-Shannon divergence between units over the
 * k functions that weigh most.  Units are windows of time, each compared
 * with the previous non-empty one, or groups, each compared with the merge
 * of the whole query, outliers first: ranked by how many times the distance
 * exceeds what sampling alone would give the group's number of samples
 * (manhattan_z = manhattan / manhattan_noise, see query_manhattan_noise),
 * so a group of two samples far from the whole does not hide a group of
 * ten thousand that moved; groups whose samples are unknown come last, by
 * distance.  The summary says whether every
 * comparison stayed within max_manhattan and max_jsd.
 *
 * The analyses answer data (query_stability_result: the units in answer
 * order and the summary); query_stability_json (encode_json.c) writes
 * /api/v1/stability's JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

static void summarize(const double *entropy, const double *man, const double *jsd, size_t n, double max_m,
                      double max_jsd, query_stability_summary *out)
{
    double es_max, m_sd, j_sd;
    size_t ec, mc, jc;
    query_summary(entropy, n, &out->entropy_mean, &out->entropy_stddev, &es_max, &ec);
    query_summary(man, n, &out->manhattan_mean, &m_sd, &out->manhattan_max, &mc);
    query_summary(jsd, n, &out->jsd_mean, &j_sd, &out->jsd_max, &jc);
    out->stable = mc ? out->manhattan_max <= max_m && out->jsd_max <= max_jsd : -1;
    out->comparisons = mc;
    out->max_manhattan = max_m;
    out->max_jsd = max_jsd;
}

/* n units and their entropy, distance and JSD arrays (one allocation). */
static int units_alloc(query_stability_result *out, size_t n, double **ent)
{
    memset(out, 0, sizeof *out);
    out->units = calloc(n ? n : 1, sizeof *out->units);
    *ent = malloc((n ? n : 1) * 3 * sizeof **ent);
    if (out->units && *ent) return 0;
    free(out->units);
    free(*ent);
    out->units = NULL;
    *ent = NULL;
    return -1;
}

int query_stability_windows(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                            int64_t step_ms, size_t k, double max_m, double max_jsd, query_stability_result *out)
{
    query_fprofile *u;
    size_t n;
    double *ent;
    if (query_window_profiles(r, set, from_ms, until_ms, step_ms, &u, &n)) return -1;
    if (units_alloc(out, n, &ent)) {
        query_units_free(u, n);
        return -1;
    }
    double *man = ent + n, *jsd = man + n;
    int rc = -1;
    const query_fprofile *prev = NULL;
    for (size_t w = 0; w < n; w++) {
        ent[w] = man[w] = jsd[w] = NAN;
        if (u[w].total > 0) {
            ent[w] = query_entropy(&u[w].d);
            if (prev && query_distances(r, &prev->d, &u[w].d, k, &man[w], &jsd[w])) goto done;
            prev = &u[w];
        }
        int64_t ws = from_ms + (int64_t)w * step_ms, we = ws + step_ms < until_ms ? ws + step_ms : until_ms;
        out->units[w] = (query_stability_unit){ .from_ms = ws, .until_ms = we, .group = w,
                                                .f = query_fprofile_figures(&u[w]), .entropy = ent[w],
                                                .manhattan = man[w], .jsd = jsd[w], .manhattan_noise = NAN,
                                                .manhattan_z = NAN };
    }
    out->n = n;
    out->step_ms = step_ms;
    summarize(ent, man, jsd, n, max_m, max_jsd, &out->summary);
    rc = 0;
done:
    free(ent);
    query_units_free(u, n);
    if (rc) query_stability_free(out);
    return rc;
}
typedef struct { double z, m; size_t i; } by_m;

/* z descending (null z last), then distance descending (null last). */
static int by_m_desc(const void *a, const void *b)
{
    const by_m *p = a, *q = b;
    int pn = p->z != p->z, qn = q->z != q->z;
    if (pn != qn) return pn - qn;
    if (!pn && p->z != q->z) return p->z > q->z ? -1 : 1;
    pn = p->m != p->m, qn = q->m != q->m;
    if (pn != qn) return pn - qn;
    if (!pn && p->m != q->m) return p->m > q->m ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

int query_stability_groups(store_reader *r, const query_group *groups, size_t n, const query_tree *whole,
                           int64_t from_ms, int64_t until_ms, size_t k, double max_m, double max_jsd,
                           query_stability_result *out)
{
    query_fprofile *u = NULL, all;
    double *ent;
    if (query_fprofile_build(r, whole, &all)) return -1;
    if (units_alloc(out, n, &ent)) {
        query_fprofile_free(&all);
        return -1;
    }
    double *man = ent + n, *jsd = man + n;
    by_m *order = malloc((n ? n : 1) * sizeof *order);
    uint32_t *K = malloc((k ? k : 1) * sizeof *K);
    int rc = -1;
    if (!order || !K || query_group_profiles(r, groups, n, from_ms, until_ms, whole->unit, &u)) goto done;
    for (size_t g = 0; g < n; g++) {
        double noise = NAN;
        ent[g] = man[g] = jsd[g] = NAN;
        if (u[g].total > 0) {
            ent[g] = query_entropy(&u[g].d);
            if (query_distances(r, &u[g].d, &all.d, k, &man[g], &jsd[g])) goto done;
            if (!u[g].samples_unknown) {
                size_t nk = query_top_k(&u[g].d, &all.d, k, query_fn_name, r, K);
                noise = query_manhattan_noise(&all.d, K, nk, u[g].samples);
            }
        }
        double z = noise > 0 ? man[g] / noise : NAN;
        order[g] = (by_m){ z, man[g], g };
        out->units[g] = (query_stability_unit){ .group = g, .f = query_fprofile_figures(&u[g]), .entropy = ent[g],
                                                .manhattan = man[g], .jsd = jsd[g], .manhattan_noise = noise,
                                                .manhattan_z = z };
    }
    qsort(order, n, sizeof *order, by_m_desc);
    /* the units in rank order: the summary reads them unordered */
    query_stability_unit *ranked = malloc((n ? n : 1) * sizeof *ranked);
    if (!ranked) goto done;
    for (size_t q = 0; q < n; q++) ranked[q] = out->units[order[q].i];
    free(out->units);
    out->units = ranked;
    out->n = n;
    summarize(ent, man, jsd, n, max_m, max_jsd, &out->summary);
    rc = 0;
done:
    free(ent);
    free(order);
    free(K);
    query_units_free(u, n);
    query_fprofile_free(&all);
    if (rc) query_stability_free(out);
    return rc;
}

void query_stability_free(query_stability_result *s)
{
    free(s->units);
    memset(s, 0, sizeof *s);
}
