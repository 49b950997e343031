/* encode_levels.c — a merged tree as a flamegraph's levels: a names table
 * and, per depth, a flat array of 4-tuples [x offset, total, self, name
 * index].  It is Pyroscope's flamebearer layout, which Grafana's FlameGraph
 * message (querier.v1) and its flame graph panel also use: the root is
 * level 0, named "total" (names[0]); a node's x is where it starts, in
 * value units from the left edge (its parent's x plus the totals of the
 * siblings before it), written as the distance from the end of the node
 * before it on the same level (0 for adjacent nodes).  A reader rebuilds
 * parents by position: a node's parent is the node of the level above
 * whose [x, x + total) holds its x.
 *
 * Built in one depth-first walk of the view (tree_view.c: the same nodes
 * and child order as the nested JSON, max_nodes applied the same way) with
 * an explicit stack, appending each node's tuple to its level's array as
 * it is met; depth-first order is left-to-right order on every level.
 * Names get their index on first sight through a table indexed by string
 * id (ids are dense: 1..store_string_max).  No jansson value per node; the
 * JSON and protobuf writers read these arrays as they are.
 *
 * Values are integers: an average of gauges is rounded to whole units per
 * node (x and total each rounded; offsets never negative), like folded and
 * pprof answers.
 *
 * Two trees as one (query_levels_diff_build: Pyroscope's "double"
 * flamebearer): the union of their touched nodes (one reader, so ids
 * agree), ordered by left + right total, each node 7 values — left x
 * offset, total, self, right x offset, total, self, name — each side laid
 * out on its own as above.  The nodes and their order are diff.c's view
 * (query_diff_view, as /api/v1/diff's JSON): max_nodes keeps the largest
 * left + right totals, ties in path order as in tree_view.c. */
#include <stdlib.h>
#include <string.h>

#include "../storage/frame.h"
#include "query_internal.h"

#define NO_NAME UINT32_MAX

/* Appends n values (a node) to a level. */
static int level_put(query_level *lv, const int64_t *vals, size_t n)
{
    if (lv->n + n > lv->cap) {
        size_t cap = lv->cap ? lv->cap * 2 : 64;
        while (cap < lv->n + n) cap *= 2;
        int64_t *v = realloc(lv->v, cap * sizeof *v);
        if (!v) return -1;
        lv->v = v;
        lv->cap = cap;
    }
    memcpy(lv->v + lv->n, vals, n * sizeof *vals);
    lv->n += n;
    return 0;
}

static int level_push(query_level *lv, int64_t dx, int64_t total, int64_t self, int64_t name)
{
    int64_t v[4] = { dx, total, self, name };
    return level_put(lv, v, 4);
}

/* Level d, made (empty) when new; NULL when out of memory. */
static query_level *level_at(query_levels *l, size_t d, size_t *cap)
{
    if (d < l->n_levels) return &l->levels[d];
    if (d >= *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        query_level *nl = realloc(l->levels, nc * sizeof *nl);
        if (!nl) return NULL;
        l->levels = nl;
        *cap = nc;
    }
    memset(&l->levels[d], 0, sizeof l->levels[d]);
    l->n_levels = d + 1;
    return &l->levels[d];
}

static int64_t rounded(const query_tree *t, uint64_t v) { return (int64_t)query_value_rounded(t, v); }

/* The name index of string fn, given one when new; -1 out of memory. */
static int64_t name_index(query_levels *l, store_reader *r, uint32_t *index, uint32_t n_ids, size_t *cap,
                          uint32_t fn)
{
    if (fn < n_ids && index[fn] != NO_NAME) return index[fn];
    if (l->n_names == *cap) {
        size_t nc = *cap * 2;
        const char **nn = realloc(l->names, nc * sizeof *nn);
        if (!nn) return -1;
        l->names = nn;
        uint32_t *nlen = realloc(l->name_lens, nc * sizeof *nlen);
        if (!nlen) return -1;
        l->name_lens = nlen;
        *cap = nc;
    }
    uint32_t len;
    const char *s = store_string(r, fn, &len);
    l->names[l->n_names] = s;
    l->name_lens[l->n_names] = frame_name_len(s, len);
    if (fn < n_ids) index[fn] = (uint32_t)l->n_names;
    return (int64_t)l->n_names++;
}

typedef struct {
    uint32_t first, n, i;
    uint64_t x;  /* where the next child starts (raw values) */
} walk_frame;

int query_levels_build(store_reader *r, const query_tree *t, size_t max_nodes, query_levels *l)
{
    memset(l, 0, sizeof *l);
    query_view v;
    if (query_view_build(r, t, max_nodes, &v)) return -1;
    l->trunc_nodes = v.trunc_nodes;
    l->trunc_total = v.trunc_total;
    uint32_t n_ids = store_string_max(r) + 1;
    uint32_t *index = malloc((size_t)n_ids * sizeof *index);
    size_t names_cap = 64, levels_cap = 0, cap = 64, sp = 0;
    l->names = malloc(names_cap * sizeof *l->names);
    l->name_lens = malloc(names_cap * sizeof *l->name_lens);
    walk_frame *st = malloc(cap * sizeof *st);
    int64_t *end = NULL; /* per level, where the last node written ends (rounded values) */
    size_t end_cap = 0;
    int rc = -1;
    if (!index || !l->names || !l->name_lens || !st) goto out;
    memset(index, 0xff, (size_t)n_ids * sizeof *index);
    l->names[0] = "total";
    l->name_lens[0] = 5;
    l->n_names = 1;
    l->width = 4;
    l->total = rounded(t, t->total[0]);
    query_level *lv = level_at(l, 0, &levels_cap);
    if (!lv || level_push(lv, 0, l->total, 0, 0)) goto out;
    st[0].n = query_view_children(&v, 0, &st[0].first);
    st[0].i = 0;
    st[0].x = 0;
    sp = 1;
    while (sp) {
        walk_frame *top = &st[sp - 1];
        if (top->i == top->n) {
            sp--;
            continue;
        }
        uint32_t id = v.edges[top->first + top->i++].id;
        uint64_t x = top->x;
        top->x += t->total[id];
        size_t d = sp; /* the level of the node */
        if (d >= end_cap) {
            size_t nc = end_cap ? end_cap * 2 : 64;
            int64_t *ne = realloc(end, nc * sizeof *ne);
            if (!ne) goto out;
            memset(ne + end_cap, 0, (nc - end_cap) * sizeof *ne);
            end = ne;
            end_cap = nc;
        }
        int64_t xr = rounded(t, x), tr = rounded(t, t->total[id]), sr = rounded(t, t->self[id]);
        int64_t dx = xr > end[d] ? xr - end[d] : 0;
        end[d] += dx + tr;
        int64_t name = name_index(l, r, index, n_ids, &names_cap, store_node_func(r, id));
        if (name < 0 || !(lv = level_at(l, d, &levels_cap)) || level_push(lv, dx, tr, sr, name)) goto out;
        if (sr > l->max_self) l->max_self = sr;
        if (sp == cap) {
            walk_frame *ns = realloc(st, cap * 2 * sizeof *st);
            if (!ns) goto out;
            st = ns;
            cap *= 2;
        }
        st[sp].n = query_view_children(&v, id, &st[sp].first);
        st[sp].i = 0;
        st[sp].x = x;
        sp++;
    }
    rc = 0;
out:
    free(end);
    free(st);
    free(index);
    query_view_free(&v);
    if (rc) query_levels_free(l);
    return rc;
}

/* ---- two trees as one ---------------------------------------------------- */

typedef struct {
    uint32_t first, n, i;
    uint64_t xl, xr;  /* where the next child starts on each side (raw values) */
} diff_frame;

int query_levels_diff_build(store_reader *r, const query_tree *left, const query_tree *right, size_t max_nodes,
                            query_levels *l)
{
    memset(l, 0, sizeof *l);
    query_view v;
    if (query_diff_view(r, left, right, max_nodes, &v)) return -1;
    l->trunc_nodes = v.trunc_nodes;
    l->trunc_total = v.trunc_total;
    uint32_t n_ids = store_string_max(r) + 1;
    uint32_t *index = malloc((size_t)n_ids * sizeof *index);
    size_t names_cap = 64, levels_cap = 0, cap = 64, sp = 0, end_cap = 0;
    l->names = malloc(names_cap * sizeof *l->names);
    l->name_lens = malloc(names_cap * sizeof *l->name_lens);
    diff_frame *st = malloc(cap * sizeof *st);
    int64_t *end = NULL; /* per level, two ends: left, right (rounded) */
    int rc = -1;
    if (!index || !l->names || !l->name_lens || !st) goto out;
    memset(index, 0xff, (size_t)n_ids * sizeof *index);
    l->names[0] = "total";
    l->name_lens[0] = 5;
    l->n_names = 1;
    l->width = 7;
    l->left_total = rounded(left, diff_total_at(left, 0));
    l->right_total = rounded(right, diff_total_at(right, 0));
    l->total = l->left_total + l->right_total;
    query_level *lv = level_at(l, 0, &levels_cap);
    int64_t root[7] = { 0, l->left_total, 0, 0, l->right_total, 0, 0 };
    if (!lv || level_put(lv, root, 7)) goto out;
    st[0].n = query_view_children(&v, 0, &st[0].first);
    st[0].i = 0;
    st[0].xl = st[0].xr = 0;
    sp = 1;
    while (sp) {
        diff_frame *top = &st[sp - 1];
        if (top->i == top->n) {
            sp--;
            continue;
        }
        uint32_t id = v.edges[top->first + top->i++].id;
        uint64_t xl = top->xl, xr = top->xr;
        top->xl += diff_total_at(left, id);
        top->xr += diff_total_at(right, id);
        size_t d = sp;
        if (2 * d + 1 >= end_cap) {
            size_t nc = end_cap ? end_cap * 2 : 128;
            while (nc <= 2 * d + 1) nc *= 2;
            int64_t *ne = realloc(end, nc * sizeof *ne);
            if (!ne) goto out;
            memset(ne + end_cap, 0, (nc - end_cap) * sizeof *ne);
            end = ne;
            end_cap = nc;
        }
        int64_t vals[7];
        const query_tree *side[2] = { left, right };
        uint64_t x[2] = { xl, xr };
        for (int s = 0; s < 2; s++) {
            int64_t xr_ = rounded(side[s], x[s]), tr = rounded(side[s], diff_total_at(side[s], id));
            int64_t sr = rounded(side[s], diff_self_at(side[s], id));
            int64_t *e = &end[2 * d + (size_t)s];
            int64_t dx = xr_ > *e ? xr_ - *e : 0;
            *e += dx + tr;
            vals[3 * s] = dx;
            vals[3 * s + 1] = tr;
            vals[3 * s + 2] = sr;
            if (sr > l->max_self) l->max_self = sr;
        }
        int64_t name = name_index(l, r, index, n_ids, &names_cap, store_node_func(r, id));
        vals[6] = name;
        if (name < 0 || !(lv = level_at(l, d, &levels_cap)) || level_put(lv, vals, 7)) goto out;
        if (sp == cap) {
            diff_frame *ns = realloc(st, cap * 2 * sizeof *st);
            if (!ns) goto out;
            st = ns;
            cap *= 2;
        }
        st[sp].n = query_view_children(&v, id, &st[sp].first);
        st[sp].i = 0;
        st[sp].xl = xl;
        st[sp].xr = xr;
        sp++;
    }
    rc = 0;
out:
    free(end);
    free(st);
    free(index);
    query_view_free(&v);
    if (rc) query_levels_free(l);
    return rc;
}

void query_levels_free(query_levels *l)
{
    for (size_t i = 0; i < l->n_levels; i++) free(l->levels[i].v);
    free(l->levels);
    free(l->names);
    free(l->name_lens);
    memset(l, 0, sizeof *l);
}

void query_levels_json_write(query_buf *b, const query_levels *l)
{
    query_buf_puts(b, "\"names\":[");
    for (size_t i = 0; i < l->n_names; i++) {
        if (i) query_buf_put(b, ",", 1);
        query_buf_json_string(b, l->names[i], l->name_lens[i]);
    }
    query_buf_puts(b, "],\"levels\":[");
    for (size_t d = 0; d < l->n_levels; d++) {
        const query_level *lv = &l->levels[d];
        if (d) query_buf_put(b, ",", 1);
        query_buf_put(b, "[", 1);
        if (query_buf_reserve(b, lv->n * 21 + 2)) return;
        for (size_t i = 0; i < lv->n; i++) {
            if (i) b->data[b->len++] = ',';
            query_buf_i64(b, lv->v[i]);
        }
        query_buf_put(b, "]", 1);
    }
    query_buf_put(b, "]", 1);
}
