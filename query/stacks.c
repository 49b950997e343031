/* stacks.c — the stacks of a merged tree: every node with a self value, as
 * the function ids of its path from the root.  The encoders that write one
 * entry per stack (speedscope samples, pprof samples) share this walk.
 * Two passes over the touched nodes: sizes, then the ids, all in one
 * buffer.  They come in reader node id order, which follows how the data
 * lies on disk (partitions, writer shards, push order); query_stacks_sort
 * puts them in path order, a function of the data alone, for the encoders
 * that number what they meet (pprof's locations, speedscope's frames). */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

int query_stacks_build(store_reader *r, const query_tree *t, query_stacks *out)
{
    memset(out, 0, sizeof *out);
    size_t n = 0, total = 0;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (!id || !t->self[id]) continue;
        n++;
        for (uint32_t x = id; x; x = store_node_parent(r, x)) total++;
    })
    out->fns = malloc((total ? total : 1) * sizeof *out->fns);
    out->start = malloc((n ? n : 1) * sizeof *out->start);
    out->depth = malloc((n ? n : 1) * sizeof *out->depth);
    out->node = malloc((n ? n : 1) * sizeof *out->node);
    if (!out->fns || !out->start || !out->depth || !out->node) {
        query_stacks_free(out);
        return -1;
    }
    size_t pos = 0;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (!id || !t->self[id]) continue;
        uint32_t depth = 0;
        for (uint32_t x = id; x; x = store_node_parent(r, x)) depth++;
        uint32_t i = depth;
        for (uint32_t x = id; x; x = store_node_parent(r, x)) out->fns[pos + --i] = store_node_func(r, x);
        out->start[out->n] = pos;
        out->depth[out->n] = depth;
        out->node[out->n++] = id;
        pos += depth;
    })
    return 0;
}

typedef struct { const query_stacks *q; store_reader *r; } stack_ctx;

/* Stacks by their frames' names, root first, name by name; a prefix first. */
static int stack_cmp(const void *a, const void *b, void *arg)
{
    const stack_ctx *c = arg;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const uint32_t *x = c->q->fns + c->q->start[i], *y = c->q->fns + c->q->start[j];
    uint32_t dx = c->q->depth[i], dy = c->q->depth[j];
    for (uint32_t d = 0; d < dx && d < dy; d++) {
        if (x[d] == y[d]) continue;
        int s = strcmp(store_string(c->r, x[d], NULL), store_string(c->r, y[d], NULL));
        if (s) return s;
    }
    if (dx != dy) return dx < dy ? -1 : 1;
    return (c->q->node[i] > c->q->node[j]) - (c->q->node[i] < c->q->node[j]); /* same names: not in one reader */
}

int query_stacks_sort(store_reader *r, query_stacks *q)
{
    size_t total = q->n ? q->start[q->n - 1] + q->depth[q->n - 1] : 0;
    size_t *perm = malloc((q->n ? q->n : 1) * sizeof *perm);
    query_stacks o = { 0 }; /* the sorted copy: q stays as it is until it is whole */
    o.fns = malloc((total ? total : 1) * sizeof *o.fns);
    o.start = malloc((q->n ? q->n : 1) * sizeof *o.start);
    o.depth = malloc((q->n ? q->n : 1) * sizeof *o.depth);
    o.node = malloc((q->n ? q->n : 1) * sizeof *o.node);
    if (!perm || !o.fns || !o.start || !o.depth || !o.node) {
        free(perm);
        query_stacks_free(&o);
        return -1;
    }
    for (size_t i = 0; i < q->n; i++) perm[i] = i;
    stack_ctx c = { q, r };
    qsort_r(perm, q->n, sizeof *perm, stack_cmp, &c);
    size_t pos = 0;
    for (size_t k = 0; k < q->n; k++) {
        size_t i = perm[k];
        memcpy(o.fns + pos, q->fns + q->start[i], q->depth[i] * sizeof *o.fns);
        o.start[k] = pos;
        o.depth[k] = q->depth[i];
        o.node[k] = q->node[i];
        pos += q->depth[i];
    }
    o.n = q->n;
    free(perm);
    query_stacks_free(q);
    *q = o;
    return 0;
}

void query_stacks_free(query_stacks *s)
{
    free(s->fns);
    free(s->start);
    free(s->depth);
    free(s->node);
    memset(s, 0, sizeof *s);
}
