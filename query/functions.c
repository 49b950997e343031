/* functions.c — per-function figures of a merged tree.
 *
 * self(f) is the sum of the self values of the nodes whose function is f
 * (the stacks whose leaf frame is f).  total(f) is the sum of the values of
 * the stacks that contain f at least once: the totals of the nodes with
 * function f that have no ancestor with function f, so recursion counts
 * once.  Functions are indexed through a dense array over string ids (pages
 * of it that no function touches are never backed). */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

/* Answers 1 when an ancestor of node has the same function. */
static int shadowed(store_reader *r, uint32_t node, uint32_t func)
{
    for (uint32_t a = store_node_parent(r, node); a; a = store_node_parent(r, a))
        if (store_node_func(r, a) == func) return 1;
    return 0;
}

int query_functions_build(store_reader *r, const query_tree *t, query_functions *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n_strings = store_string_max(r) + 1;
    uint32_t *slot = calloc(n_strings, sizeof *slot); /* string id -> index + 1 */
    size_t cap = 256;
    out->fn = malloc(cap * sizeof *out->fn);
    out->self = malloc(cap * sizeof *out->self);
    out->total = malloc(cap * sizeof *out->total);
    if (!slot || !out->fn || !out->self || !out->total) goto oom;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (!id) continue;
        uint32_t f = store_node_func(r, id);
        if (f >= n_strings) continue;
        if (!slot[f]) {
            if (out->n == cap) {
                cap *= 2;
                uint32_t *nf = realloc(out->fn, cap * sizeof *nf);
                if (nf) out->fn = nf;
                uint64_t *ns = realloc(out->self, cap * sizeof *ns);
                if (ns) out->self = ns;
                uint64_t *nt = realloc(out->total, cap * sizeof *nt);
                if (nt) out->total = nt;
                if (!nf || !ns || !nt) goto oom;
            }
            out->fn[out->n] = f;
            out->self[out->n] = 0;
            out->total[out->n] = 0;
            slot[f] = (uint32_t)++out->n;
        }
        size_t i = slot[f] - 1;
        out->self[i] += t->self[id];
        if (!shadowed(r, id, f)) out->total[i] += t->total[id];
    })
    free(slot);
    /* Ascending function ids, so distributions can be searched. */
    query_functions_sort_by_fn(out);
    return 0;
oom:
    free(slot);
    query_functions_free(out);
    return -1;
}

typedef struct { uint32_t fn; uint64_t self, total; } fn_row;

static int row_cmp(const void *a, const void *b)
{
    uint32_t x = ((const fn_row *)a)->fn, y = ((const fn_row *)b)->fn;
    return (x > y) - (x < y);
}

void query_functions_sort_by_fn(query_functions *f)
{
    fn_row *rows = malloc((f->n ? f->n : 1) * sizeof *rows);
    if (!rows) return; /* stays in discovery order: still correct, slower lookups */
    for (size_t i = 0; i < f->n; i++) rows[i] = (fn_row){ f->fn[i], f->self[i], f->total[i] };
    qsort(rows, f->n, sizeof *rows, row_cmp);
    for (size_t i = 0; i < f->n; i++) {
        f->fn[i] = rows[i].fn;
        f->self[i] = rows[i].self;
        f->total[i] = rows[i].total;
    }
    free(rows);
}

void query_functions_free(query_functions *f)
{
    free(f->fn);
    free(f->self);
    free(f->total);
    memset(f, 0, sizeof *f);
}

int query_fprofile_build(store_reader *r, const query_tree *t, query_fprofile *out)
{
    memset(out, 0, sizeof *out);
    if (query_functions_build(r, t, &out->f)) return -1;
    if (query_dist_from_values(&out->d, out->f.fn, out->f.self, out->f.n)) {
        query_functions_free(&out->f);
        return -1;
    }
    out->total = t->grand_total;
    out->samples = t->samples;
    out->samples_unknown = t->samples_unknown;
    out->divisor = t->divisor ? t->divisor : 1;
    out->profiles = t->profiles;
    return 0;
}

query_figures query_fprofile_figures(const query_fprofile *p)
{
    return (query_figures){ p->profiles, p->total, p->divisor ? p->divisor : 1, p->samples, p->samples_unknown };
}

void query_fprofile_free(query_fprofile *p)
{
    query_functions_free(&p->f);
    query_dist_free(&p->d);
    memset(p, 0, sizeof *p);
}

const char *query_fn_name(void *ctx, uint32_t fn)
{
    return store_string(ctx, fn, NULL);
}

double query_value(const query_tree *t, uint64_t v)
{
    return t->divisor > 1 ? (double)v / (double)t->divisor : (double)v;
}

uint64_t query_value_rounded(const query_tree *t, uint64_t v)
{
    return t->divisor > 1 ? v / t->divisor + (v % t->divisor >= (t->divisor + 1) / 2) : v;
}

const char *query_aggregation_name(const query_tree *t) { return t->gauge ? "average" : "sum"; }

json_t *query_value_json(const query_tree *t, uint64_t v)
{
    return t->divisor > 1 ? json_real((double)v / (double)t->divisor) : json_integer((json_int_t)v);
}

json_t *query_samples_json(uint64_t samples, uint64_t unknown)
{
    return unknown ? json_null() : json_integer((json_int_t)samples);
}

json_t *query_real_or_null(double x)
{
    return x == x ? json_real(x) : json_null();
}
