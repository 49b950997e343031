/* tree_view.c — the shape of a merged tree, for the encoders: which nodes
 * to show and each one's children in display order.
 *
 * max_nodes keeps the nodes with the largest totals, ties to the smaller id:
 * since a parent's total is at least its child's and its id is smaller, the
 * kept nodes always form a tree hanging from the root.  Kept nodes keep
 * their own self and total; the left-out nodes are counted, with the sum of
 * their self values.  The kept nodes become (parent, id) edges sorted by
 * parent and then display order (total descending, then name), and an
 * index by node id says where each node's children start, so the encoders'
 * walks find them in one lookup. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

typedef struct { const query_tree *t; store_reader *r; } sort_ctx;

static int by_total_then_id(const void *a, const void *b, void *arg)
{
    const query_tree *t = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (t->total[x] != t->total[y]) return t->total[x] > t->total[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static int by_parent_then_display(const void *a, const void *b, void *arg)
{
    const sort_ctx *c = arg;
    const query_edge *x = a, *y = b;
    if (x->parent != y->parent) return x->parent < y->parent ? -1 : 1;
    uint64_t tx = c->t->total[x->id], ty = c->t->total[y->id];
    if (tx != ty) return tx > ty ? -1 : 1;
    int s = strcmp(store_string(c->r, store_node_func(c->r, x->id), NULL),
                   store_string(c->r, store_node_func(c->r, y->id), NULL));
    return s ? s : (x->id > y->id) - (x->id < y->id);
}

int query_view_build(store_reader *r, const query_tree *t, size_t max_nodes, query_view *v)
{
    memset(v, 0, sizeof *v);
    uint32_t n = 0;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, { n += id != 0; })
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    v->edges = malloc((n ? n : 1) * sizeof *v->edges);
    if (!ids || !v->edges) {
        free(ids);
        query_view_free(v);
        return -1;
    }
    uint32_t k = 0;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, { if (id) ids[k++] = id; })
    if (max_nodes && n > max_nodes) {
        qsort_r(ids, n, sizeof *ids, by_total_then_id, (void *)t);
        for (uint32_t i = (uint32_t)max_nodes; i < n; i++) {
            v->trunc_nodes++;
            v->trunc_total += t->self[ids[i]];
        }
        n = (uint32_t)max_nodes;
    }
    for (uint32_t i = 0; i < n; i++) {
        v->edges[i].parent = store_node_parent(r, ids[i]);
        v->edges[i].id = ids[i];
    }
    free(ids);
    sort_ctx sc = { t, r };
    qsort_r(v->edges, n, sizeof *v->edges, by_parent_then_display, &sc);
    v->n_edges = n;
    if (query_view_index(v, t->n_nodes)) {
        query_view_free(v);
        return -1;
    }
    return 0;
}

int query_view_index(query_view *v, uint32_t n_ids)
{
    /* where each parent's children start: one lookup for the encoders' walks */
    v->n_ids = n_ids;
    v->child_at = calloc(n_ids ? n_ids : 1, sizeof *v->child_at);
    if (!v->child_at) return -1;
    for (uint32_t i = v->n_edges; i-- > 0;)
        if (v->edges[i].parent < n_ids) v->child_at[v->edges[i].parent] = i + 1;
    return 0;
}

uint32_t query_view_children(const query_view *v, uint32_t p, uint32_t *first)
{
    if (v->child_at && p < v->n_ids) {
        uint32_t at = v->child_at[p], end;
        if (!at) {
            *first = 0;
            return 0;
        }
        for (end = at - 1; end < v->n_edges && v->edges[end].parent == p; end++) {}
        *first = at - 1;
        return end - (at - 1);
    }
    uint32_t lo = 0, hi = v->n_edges;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v->edges[mid].parent < p) lo = mid + 1;
        else hi = mid;
    }
    uint32_t end = lo;
    while (end < v->n_edges && v->edges[end].parent == p) end++;
    *first = lo;
    return end - lo;
}

void query_view_free(query_view *v)
{
    free(v->edges);
    free(v->child_at);
    memset(v, 0, sizeof *v);
}
