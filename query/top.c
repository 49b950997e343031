/* top.c — hotspots: functions ranked by self or total value, each share
 * with its 95% Wilson score interval from the n samples behind the answer
 * (a share estimated from n samples has standard error sqrt(p(1-p)/n);
 * Wilson's interval stays inside [0, 1] for small n).  n is the number of
 * samples, not the value: 395 samples of 10 ms are n = 395, not 3.95e9 ns.
 * When some profile did not say its samples, intervals are null.  The
 * share is of the value, so with samples of unequal weight (allocation
 * bytes) the interval is an approximation.
 *
 * query_top ranks and answers data (rows: names, values, shares and their
 * intervals); query_top_json (encode_json.c) is its JSON (/api/v1/top), and the
 * Prometheus text of /api/v1/hotspots/metrics reads the rows directly.
 *
 * Paging: the whole ranking is sorted once per call and rows [offset,
 * offset + limit) are answered, with n_functions the length of the ranking
 * (after `match`, a case-insensitive substring of the name: ASCII letters
 * fold), so a table of a million functions reads one page at a time and
 * still says "N of M".  Ranks are a total order (ties end at the name), so
 * consecutive pages neither repeat nor skip a function. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "stats.h"

static int fold(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

/* Does name contain m (ASCII case folded)?  "" matches everything. */
static int contains(const char *name, const char *m)
{
    if (!*m) return 1;
    for (; *name; name++) {
        size_t i = 0;
        while (m[i] && name[i] && fold((unsigned char)name[i]) == fold((unsigned char)m[i])) i++;
        if (!m[i]) return 1;
    }
    return 0;
}

typedef struct { const query_functions *f; store_reader *r; int by_total, by_name; } rank_ctx;

static int rank_cmp(const void *a, const void *b, void *arg)
{
    const rank_ctx *c = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (c->by_name) {
        int k = strcmp(store_string(c->r, c->f->fn[x], NULL), store_string(c->r, c->f->fn[y], NULL));
        if (k) return k;
        if (c->f->self[x] != c->f->self[y]) return c->f->self[x] > c->f->self[y] ? -1 : 1;
        return c->f->total[x] != c->f->total[y] ? (c->f->total[x] > c->f->total[y] ? -1 : 1) : 0;
    }
    uint64_t vx = c->by_total ? c->f->total[x] : c->f->self[x], vy = c->by_total ? c->f->total[y] : c->f->self[y];
    if (vx != vy) return vx > vy ? -1 : 1;
    uint64_t sx = c->by_total ? c->f->self[x] : c->f->total[x], sy = c->by_total ? c->f->self[y] : c->f->total[y];
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(store_string(c->r, c->f->fn[x], NULL), store_string(c->r, c->f->fn[y], NULL));
}

int query_top(store_reader *r, const query_tree *t, const query_top_opts *o, query_top_result *out)
{
    memset(out, 0, sizeof *out);
    query_functions f;
    if (query_functions_build(r, t, &f)) return -1;
    int rc = query_top_rank(r, &f, t, o, out);
    query_functions_free(&f);
    return rc;
}

int query_top_rank(store_reader *r, const query_functions *f, const query_tree *figures, const query_top_opts *o,
                   query_top_result *out)
{
    memset(out, 0, sizeof *out);
    size_t *order = malloc((f->n ? f->n : 1) * sizeof *order);
    if (!order) return -1;
    size_t m = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!o->match || contains(store_string(r, f->fn[i], NULL), o->match)) order[m++] = i;
    size_t first = o->offset < m ? o->offset : m;
    size_t n = o->limit && o->limit < m - first ? o->limit : m - first;
    out->rows = calloc(n ? n : 1, sizeof *out->rows);
    if (!out->rows) {
        free(order);
        return -1;
    }
    rank_ctx rc = { f, r, o->order == QUERY_TOP_TOTAL, o->order == QUERY_TOP_NAME };
    qsort_r(order, m, sizeof *order, rank_cmp, &rc);
    double total = (double)figures->grand_total;
    out->has_ci = !figures->samples_unknown && figures->samples;
    for (size_t k = 0; k < n; k++) {
        size_t i = order[first + k];
        query_top_row *row = &out->rows[k];
        row->name = store_string(r, f->fn[i], NULL);
        row->self = f->self[i];
        row->total = f->total[i];
        row->self_share = total > 0 ? (double)f->self[i] / total : 0;
        row->total_share = total > 0 ? (double)f->total[i] / total : 0;
        if (out->has_ci) {
            query_wilson(row->self_share, figures->samples, 1.96, &row->self_ci[0], &row->self_ci[1]);
            query_wilson(row->total_share, figures->samples, 1.96, &row->total_ci[0], &row->total_ci[1]);
        }
    }
    out->n = n;
    out->offset = first;
    out->n_functions = m;
    free(order);
    return 0;
}

void query_top_free(query_top_result *top)
{
    free(top->rows);
    memset(top, 0, sizeof *top);
}
