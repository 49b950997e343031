/* tree_view.c — the shape of a merged tree, for the encoders: which nodes
 * to show and each one's children in display order.
 *
 * max_nodes keeps the nodes with the largest totals, ties in path order
 * (query_node_path_cmp: a node's path of names from the root, compared name
 * by name, a parent before its children): since a parent's total is at
 * least its child's and it comes first among equals, the kept nodes always
 * form a tree hanging from the root.  Path order depends on the data only,
 * not on the ids a reader gave its nodes (they follow partitions, writer
 * shards and push order), so two servers holding the same profiles in
 * other layouts keep the same nodes.  Only the run of equal totals that
 * straddles the cut is sorted so (query_view_ties): the common case costs
 * nothing more than the sort by total.  Kept nodes keep
 * their own self and total; the left-out nodes are counted, with the sum of
 * their self values.  The kept nodes become (parent, id) edges sorted by
 * parent and then display order (total descending, then name), and an
 * index by node id says where each node's children start, so the encoders'
 * walks find them in one lookup. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

typedef struct { const query_tree *t; store_reader *r; } sort_ctx;

static uint64_t tree_total(const void *ctx, uint32_t id) { return ((const query_tree *)ctx)->total[id]; }

static uint32_t node_depth(store_reader *r, uint32_t x)
{
    uint32_t d = 0;
    for (; x; x = store_node_parent(r, x)) d++;
    return d;
}

int query_node_path_cmp(store_reader *r, uint32_t x, uint32_t y)
{
    if (x == y) return 0;
    uint32_t dx = node_depth(r, x), dy = node_depth(r, y), a = x, b = y;
    for (uint32_t d = dx; d > dy; d--) a = store_node_parent(r, a);
    for (uint32_t d = dy; d > dx; d--) b = store_node_parent(r, b);
    if (a == b) return dx < dy ? -1 : 1; /* one is the other's ancestor: it comes first */
    for (;;) {
        uint32_t pa = store_node_parent(r, a), pb = store_node_parent(r, b);
        if (pa == pb) break;
        a = pa;
        b = pb;
    }
    /* siblings: a reader's nodes are unique by (parent, name), so names differ */
    int s = strcmp(store_string(r, store_node_func(r, a), NULL), store_string(r, store_node_func(r, b), NULL));
    return s ? s : (a > b) - (a < b);
}

static int by_path(const void *a, const void *b, void *arg)
{
    return query_node_path_cmp(arg, *(const uint32_t *)a, *(const uint32_t *)b);
}

void query_view_ties(store_reader *r, uint32_t *ids, uint32_t n, uint32_t keep,
                     uint64_t (*key)(const void *ctx, uint32_t id), const void *ctx)
{
    if (!keep || keep >= n) return;
    uint64_t k = key(ctx, ids[keep - 1]);
    if (key(ctx, ids[keep]) != k) return; /* the cut falls between two values */
    uint32_t lo = keep - 1, hi = keep + 1;
    while (lo > 0 && key(ctx, ids[lo - 1]) == k) lo--;
    while (hi < n && key(ctx, ids[hi]) == k) hi++;
    qsort_r(ids + lo, hi - lo, sizeof *ids, by_path, r);
}

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
        query_view_ties(r, ids, n, (uint32_t)max_nodes, tree_total, t);
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
