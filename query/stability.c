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
 * comparison stayed within max_manhattan and max_jsd. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

static json_t *summary_json(const double *entropy, const double *man, const double *jsd, size_t n,
                            double max_m, double max_jsd)
{
    double em, es, emax, mm, ms, mmax, jm, js, jmax;
    size_t ec, mc, jc;
    query_summary(entropy, n, &em, &es, &emax, &ec);
    query_summary(man, n, &mm, &ms, &mmax, &mc);
    query_summary(jsd, n, &jm, &js, &jmax, &jc);
    json_t *stable = mc ? json_boolean(mmax <= max_m && jmax <= max_jsd) : json_null();
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:f,s:f}", "entropy_mean", query_real_or_null(em),
                     "entropy_stddev", query_real_or_null(es), "manhattan_mean", query_real_or_null(mm),
                     "manhattan_max", query_real_or_null(mmax), "jsd_mean", query_real_or_null(jm), "jsd_max",
                     query_real_or_null(jmax), "stable", stable, "comparisons", (json_int_t)mc,
                     "max_manhattan", max_m, "max_jsd", max_jsd);
}

json_t *query_stability_windows_json(store_reader *r, const query_series_set *set, int64_t from_ms,
                                     int64_t until_ms, int64_t step_ms, size_t k, double max_m, double max_jsd)
{
    query_fprofile *u;
    size_t n;
    if (query_window_profiles(r, set, from_ms, until_ms, step_ms, &u, &n)) return NULL;
    double *ent = malloc((n ? n : 1) * 3 * sizeof *ent), *man = ent + n, *jsd = man + n;
    json_t *windows = json_array(), *out = NULL;
    if (!ent || !windows) goto done;
    const query_fprofile *prev = NULL;
    for (size_t w = 0; w < n; w++) {
        ent[w] = man[w] = jsd[w] = NAN;
        if (u[w].total > 0) {
            ent[w] = query_entropy(&u[w].d);
            if (prev && query_distances(r, &prev->d, &u[w].d, k, &man[w], &jsd[w])) goto done;
            prev = &u[w];
        }
        int64_t ws = from_ms + (int64_t)w * step_ms, we = ws + step_ms < until_ms ? ws + step_ms : until_ms;
        json_t *e = json_pack("{s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:o}", "from", query_time_json(ws), "until",
                              query_time_json(we), "profiles", (json_int_t)u[w].profiles, "total",
                              query_fprofile_total_json(&u[w]), "samples", query_samples_json(u[w].samples, u[w].samples_unknown), "entropy",
                              query_real_or_null(ent[w]), "manhattan", query_real_or_null(man[w]), "jsd",
                              query_real_or_null(jsd[w]));
        if (!e || json_array_append_new(windows, e)) goto done;
    }
    out = json_pack("{s:o,s:O,s:o}", "step", query_time_json(step_ms), "windows", windows, "summary",
                    summary_json(ent, man, jsd, n, max_m, max_jsd));
done:
    json_decref(windows);
    free(ent);
    query_units_free(u, n);
    return out;
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

json_t *query_stability_groups_json(store_reader *r, const query_group_by *by, const query_group *groups,
                                    size_t n, const query_tree *whole, int64_t from_ms, int64_t until_ms,
                                    size_t k, double max_m, double max_jsd)
{
    query_fprofile *u = NULL, all;
    if (query_fprofile_build(r, whole, &all)) return NULL;
    double *ent = malloc((n ? n : 1) * 4 * sizeof *ent), *man = ent + n, *jsd = man + n, *noise = jsd + n;
    by_m *order = malloc((n ? n : 1) * sizeof *order);
    uint32_t *K = malloc((k ? k : 1) * sizeof *K);
    json_t *arr = json_array(), *out = NULL;
    if (!ent || !order || !K || !arr || query_group_profiles(r, groups, n, from_ms, until_ms, whole->unit, &u))
        goto done;
    for (size_t g = 0; g < n; g++) {
        ent[g] = man[g] = jsd[g] = noise[g] = NAN;
        if (u[g].total > 0) {
            ent[g] = query_entropy(&u[g].d);
            if (query_distances(r, &u[g].d, &all.d, k, &man[g], &jsd[g])) goto done;
            if (!u[g].samples_unknown) {
                size_t nk = query_top_k(&u[g].d, &all.d, k, query_fn_name, r, K);
                noise[g] = query_manhattan_noise(&all.d, K, nk, u[g].samples);
            }
        }
        double z = noise[g] > 0 ? man[g] / noise[g] : NAN;
        order[g] = (by_m){ z, man[g], g };
    }
    qsort(order, n, sizeof *order, by_m_desc);
    for (size_t q = 0; q < n; q++) {
        size_t g = order[q].i;
        json_t *e = json_pack("{s:o,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "labels",
                              query_group_labels_json(by, &groups[g]), "profiles", (json_int_t)u[g].profiles, "total",
                              query_fprofile_total_json(&u[g]), "samples",
                              query_samples_json(u[g].samples, u[g].samples_unknown), "entropy",
                              query_real_or_null(ent[g]), "manhattan", query_real_or_null(man[g]), "manhattan_noise",
                              query_real_or_null(noise[g]), "manhattan_z", query_real_or_null(order[q].z), "jsd",
                              query_real_or_null(jsd[g]));
        if (!e || json_array_append_new(arr, e)) goto done;
    }
    out = json_pack("{s:O,s:o}", "groups", arr, "summary", summary_json(ent, man, jsd, n, max_m, max_jsd));
done:
    json_decref(arr);
    free(ent);
    free(order);
    free(K);
    query_units_free(u, n);
    query_fprofile_free(&all);
    return out;
}
