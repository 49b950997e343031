/* diff.c — two merged trees as one: the union of their nodes, each with its
 * left and right self and total.  Both trees index the same global call
 * tree, so the union is the union of their touched bitmaps; children are
 * sorted by left_total + right_total descending, then name. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

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

static json_t *node_json(const diff_ctx *c, const query_view *v, uint32_t id)
{
    json_t *kids = json_array();
    uint32_t first, n = query_view_children(v, id, &first);
    for (uint32_t i = 0; kids && i < n; i++) {
        json_t *k = node_json(c, v, v->edges[first + i].id);
        if (!k || json_array_append_new(kids, k)) {
            json_decref(kids);
            return NULL;
        }
    }
    if (!kids) return NULL;
    return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}",
                     "name", id ? store_string(c->r, store_node_func(c->r, id), NULL) : "root",
                     "left_self", query_value_json(c->a, id ? diff_self_at(c->a, id) : 0), "left_total",
                     query_value_json(c->a, diff_total_at(c->a, id)), "right_self",
                     query_value_json(c->b, id ? diff_self_at(c->b, id) : 0), "right_total",
                     query_value_json(c->b, diff_total_at(c->b, id)), "children", kids);
}

json_t *query_diff_json(store_reader *r, const query_tree *left, const query_tree *right)
{
    /* Both trees come from one reader, so their node ids agree; the later
     * merged may be the larger. */
    uint32_t n_nodes = left->n_nodes > right->n_nodes ? left->n_nodes : right->n_nodes;
    size_t n = 0;
    for (uint32_t id = 1; id < n_nodes; id++) n += diff_hit(left, id) | diff_hit(right, id);
    query_view v = { 0 };
    v.edges = malloc((n ? n : 1) * sizeof *v.edges);
    if (!v.edges) return NULL;
    for (uint32_t id = 1; id < n_nodes; id++)
        if (diff_hit(left, id) | diff_hit(right, id))
            v.edges[v.n_edges++] = (query_edge){ store_node_parent(r, id), id };
    diff_ctx c = { r, left, right };
    qsort_r(v.edges, v.n_edges, sizeof *v.edges, edge_cmp, &c);
    json_t *tree = node_json(&c, &v, 0);
    query_view_free(&v);
    return tree;
}
