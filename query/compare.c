/* compare.c — did the profile change?  Two merges (left and right; often
 * one selector over two time ranges) compared function by function: the
 * self shares, their difference, and whether it is significant (a
 * two-proportion z-test at 95% on the sample counts: a share p from n
 * samples stands for p x n samples; null when a side does not know its
 * samples); plus the Manhattan distance and the
 * Jensen-Shannon divergence over the k functions that weigh most. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

typedef struct { uint32_t fn; double l, r, delta; } row;
typedef struct { store_reader *r; } row_ctx;

static int row_cmp(const void *a, const void *b, void *arg)
{
    const row *x = a, *y = b;
    double dx = fabs(x->delta), dy = fabs(y->delta);
    if (dx != dy) return dx > dy ? -1 : 1;
    store_reader *r = ((row_ctx *)arg)->r;
    return strcmp(store_string(r, x->fn, NULL), store_string(r, y->fn, NULL));
}

static void side_of(const query_fprofile *p, const query_tree *t, query_compare_side *out)
{
    out->f = query_fprofile_figures(p);
    out->entropy = query_entropy(&p->d);
    snprintf(out->unit, sizeof out->unit, "%s", t->unit);
}

/* Adds the Manhattan distance and JSD of x against y over their top k. */
int query_distances(store_reader *r, const query_dist *x, const query_dist *y, size_t k, double *m, double *jsd)
{
    uint32_t *K = malloc((k ? k : 1) * sizeof *K);
    if (!K) return -1;
    size_t nk = query_top_k(x, y, k, query_fn_name, r, K);
    *m = query_manhattan(x, y, K, nk);
    *jsd = query_jsd(x, y, K, nk);
    free(K);
    return 0;
}

int query_compare(store_reader *r, const query_tree *left, const query_tree *right, size_t k, size_t limit,
                  query_compare_result *out)
{
    memset(out, 0, sizeof *out);
    query_fprofile L, R;
    if (query_fprofile_build(r, left, &L)) return -1;
    if (query_fprofile_build(r, right, &R)) {
        query_fprofile_free(&L);
        return -1;
    }
    int rc = -1;
    row *rows = malloc((L.d.n + R.d.n + 1) * sizeof *rows);
    if (!rows || query_distances(r, &L.d, &R.d, k, &out->manhattan, &out->jsd)) goto done;
    /* The union of both distributions, walked in function-id order. */
    size_t n = 0, i = 0, j = 0;
    while (i < L.d.n || j < R.d.n) {
        uint32_t fn = j >= R.d.n || (i < L.d.n && L.d.fn[i] <= R.d.fn[j]) ? L.d.fn[i] : R.d.fn[j];
        double l = i < L.d.n && L.d.fn[i] == fn ? L.d.p[i++] : 0;
        double rr = j < R.d.n && R.d.fn[j] == fn ? R.d.p[j++] : 0;
        rows[n++] = (row){ fn, l, rr, rr - l };
    }
    row_ctx rc_ = { r };
    int known = !L.samples_unknown && !R.samples_unknown && L.samples && R.samples;
    qsort_r(rows, n, sizeof *rows, row_cmp, &rc_);
    size_t keep = limit && limit < n ? limit : n;
    out->rows = malloc((keep ? keep : 1) * sizeof *out->rows);
    if (!out->rows) goto done;
    for (size_t q = 0; q < keep; q++) {
        uint64_t x1 = (uint64_t)llround(rows[q].l * (double)L.samples);
        uint64_t x2 = (uint64_t)llround(rows[q].r * (double)R.samples);
        out->rows[q] = (query_compare_row){ store_string(r, rows[q].fn, NULL), rows[q].l, rows[q].r, rows[q].delta,
                                            known ? query_significant(x1, L.samples, x2, R.samples) : -1 };
    }
    out->n = keep;
    side_of(&L, left, &out->left);
    side_of(&R, right, &out->right);
    rc = 0;
done:
    free(rows);
    query_fprofile_free(&L);
    query_fprofile_free(&R);
    if (rc) query_compare_free(out);
    return rc;
}

void query_compare_free(query_compare_result *c)
{
    free(c->rows);
    memset(c, 0, sizeof *c);
}
