/* stacks.c — the stacks of a merged tree: every node with a self value, as
 * the function ids of its path from the root.  The encoders that write one
 * entry per stack (speedscope samples, pprof samples) share this walk.
 * Two passes over the touched nodes: sizes, then the ids, all in one
 * buffer. */
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

void query_stacks_free(query_stacks *s)
{
    free(s->fns);
    free(s->start);
    free(s->depth);
    free(s->node);
    memset(s, 0, sizeof *s);
}
