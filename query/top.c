/* top.c — hotspots: functions ranked by self or total value, each share
 * with its 95% Wilson score interval from the n samples behind the answer
 * (a share estimated from n samples has standard error sqrt(p(1-p)/n);
 * Wilson's interval stays inside [0, 1] for small n).  n is the number of
 * samples, not the value: 395 samples of 10 ms are n = 395, not 3.95e9 ns.
 * When some profile did not say its samples, intervals are null.  The
 * share is of the value, so with samples of unequal weight (allocation
 * bytes) the interval is an approximation. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "stats.h"

typedef struct { const query_functions *f; store_reader *r; int by_total; } rank_ctx;

static int rank_cmp(const void *a, const void *b, void *arg)
{
    const rank_ctx *c = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    uint64_t vx = c->by_total ? c->f->total[x] : c->f->self[x], vy = c->by_total ? c->f->total[y] : c->f->self[y];
    if (vx != vy) return vx > vy ? -1 : 1;
    uint64_t sx = c->by_total ? c->f->self[x] : c->f->total[x], sy = c->by_total ? c->f->self[y] : c->f->total[y];
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(store_string(c->r, c->f->fn[x], NULL), store_string(c->r, c->f->fn[y], NULL));
}

/* null when the number of samples is not known. */
static json_t *interval(double p, const query_tree *t)
{
    if (t->samples_unknown || !t->samples) return json_null();
    uint64_t n = t->samples;
    double lo, hi;
    query_wilson(p, n, 1.96, &lo, &hi);
    return json_pack("[f,f]", lo, hi);
}

json_t *query_top_json(store_reader *r, const query_tree *t, size_t limit, int by_total)
{
    query_functions f;
    if (query_functions_build(r, t, &f)) return NULL;
    size_t *order = malloc((f.n ? f.n : 1) * sizeof *order);
    json_t *arr = json_array();
    if (!order || !arr) goto fail;
    for (size_t i = 0; i < f.n; i++) order[i] = i;
    rank_ctx rc = { &f, r, by_total };
    qsort_r(order, f.n, sizeof *order, rank_cmp, &rc);
    double total = (double)t->grand_total;
    for (size_t k = 0; k < f.n && (!limit || k < limit); k++) {
        size_t i = order[k];
        double ps = total > 0 ? (double)f.self[i] / total : 0, pt = total > 0 ? (double)f.total[i] / total : 0;
        json_t *e = json_pack("{s:s,s:o,s:o,s:f,s:f,s:o,s:o}", "name", store_string(r, f.fn[i], NULL),
                              "self", query_value_json(t, f.self[i]), "total", query_value_json(t, f.total[i]), "self_share", ps,
                              "total_share", pt, "self_ci95", interval(ps, t),
                              "total_ci95", interval(pt, t));
        if (!e || json_array_append_new(arr, e)) goto fail;
    }
    free(order);
    query_functions_free(&f);
    return json_pack("{s:o,s:o,s:o}", "total", query_value_json(t, t->grand_total), "samples",
                     query_samples_json(t->samples, t->samples_unknown), "functions", arr);
fail:
    free(order);
    json_decref(arr);
    query_functions_free(&f);
    return NULL;
}
