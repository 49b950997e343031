/* diff.c — two merged trees as one: the union of their nodes, each with its
 * left and right self and total.  Both trees index the same global call
 * tree, so the union is the union of their touched bitmaps; children are
 * sorted by left_total + right_total descending, then name (then id).
 *
 * query_diff_view answers that union as a view (query_view: the kept nodes
 * as (parent, id) edges in display order, indexed), the data both diff
 * encoders walk: the nested JSON of /api/v1/diff (query_diff_json,
 * encode_json.c) and Pyroscope's double flamebearer of /pyroscope/render-
 * diff (query_levels_diff_build, encode_levels.c).  max_nodes (0: all)
 * keeps the nodes of largest left + right total — a parent's sum is at
 * least its child's, and the run of equal sums at the cut is taken in path
 * order (query_view_ties), so the kept nodes form a tree that depends on
 * the data alone; the nodes left out are counted with their self values
 * (both sides). */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

static uint64_t both_key(const void *ctx, uint32_t id) { return diff_both(ctx, id); }

static int by_both_then_id(const void *x, const void *y, void *arg)
{
    const diff_ctx *c = arg;
    uint32_t p = *(const uint32_t *)x, q = *(const uint32_t *)y;
    uint64_t tp = diff_both(c, p), tq = diff_both(c, q);
    if (tp != tq) return tp > tq ? -1 : 1;
    return (p > q) - (p < q);
}

static int edge_cmp(const void *x, const void *y, void *arg)
{
    const diff_ctx *c = arg;
    const query_edge *p = x, *q = y;
    if (p->parent != q->parent) return p->parent < q->parent ? -1 : 1;
    uint64_t tp = diff_both(c, p->id), tq = diff_both(c, q->id);
    if (tp != tq) return tp > tq ? -1 : 1;
    int s = strcmp(store_string(c->r, store_node_func(c->r, p->id), NULL),
                   store_string(c->r, store_node_func(c->r, q->id), NULL));
    return s ? s : (p->id > q->id) - (p->id < q->id);
}

int query_diff_view(store_reader *r, const query_tree *left, const query_tree *right, size_t max_nodes,
                    query_view *v)
{
    memset(v, 0, sizeof *v);
    diff_ctx c = { r, left, right };
    /* one reader: the ids agree; the later merged may be the larger */
    uint32_t n_nodes = left->n_nodes > right->n_nodes ? left->n_nodes : right->n_nodes, n = 0;
    for (uint32_t id = 1; id < n_nodes; id++) n += diff_hit(left, id) | diff_hit(right, id);
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    v->edges = malloc((n ? n : 1) * sizeof *v->edges);
    if (!ids || !v->edges) goto fail;
    uint32_t k = 0;
    for (uint32_t id = 1; id < n_nodes; id++)
        if (diff_hit(left, id) | diff_hit(right, id)) ids[k++] = id;
    if (max_nodes && n > max_nodes) {
        qsort_r(ids, n, sizeof *ids, by_both_then_id, &c);
        query_view_ties(r, ids, n, (uint32_t)max_nodes, both_key, &c);
        for (uint32_t i = (uint32_t)max_nodes; i < n; i++) {
            v->trunc_nodes++;
            v->trunc_total += diff_self_at(left, ids[i]) + diff_self_at(right, ids[i]);
        }
        n = (uint32_t)max_nodes;
    }
    for (uint32_t i = 0; i < n; i++) v->edges[i] = (query_edge){ store_node_parent(r, ids[i]), ids[i] };
    v->n_edges = n;
    qsort_r(v->edges, n, sizeof *v->edges, edge_cmp, &c);
    if (query_view_index(v, n_nodes)) goto fail;
    free(ids);
    return 0;
fail:
    free(ids);
    query_view_free(v);
    return -1;
}
