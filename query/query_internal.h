/* query_internal.h — private to query/: helpers its files share. */
#ifndef FLAMEDB_QUERY_INTERNAL_H
#define FLAMEDB_QUERY_INTERNAL_H

#include "query.h"
#include "stats.h"

/* Writes a formatted error message into err (always NUL-terminated). */
void query_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The nodes of a merged tree to show, with children in display order. */
typedef struct { uint32_t parent, id; } query_edge;

typedef struct {
    query_edge *edges;     /* kept nodes sorted by parent, then display order */
    uint32_t n_edges;
    uint64_t trunc_nodes;  /* nodes left out by max_nodes */
    uint64_t trunc_total;  /* sum of their self values */
    uint32_t *child_at;    /* query_view_build's: per node id < n_ids, where its children start in
                              edges + 1 (0: none); NULL in a view made by hand (binary search) */
    uint32_t n_ids;
} query_view;

int query_view_build(store_reader *r, const query_tree *t, size_t max_nodes, query_view *v);
/* Path order, a function of the data alone (reader ids are not: they follow
 * partitions, writer shards and push order): x and y compared by their
 * paths of names from the root, name by name (strcmp); an ancestor before
 * its descendants.  It is the order of a depth-first walk with children by
 * name.  Answers < 0, 0 (x == y) or > 0. */
int query_node_path_cmp(store_reader *r, uint32_t x, uint32_t y);
/* ids[0..n) sorted by key descending: sorts the run of equal keys that
 * straddles the cut at keep (ids[keep - 1] and ids[keep] equal) into path
 * order, so that which nodes the first keep are depends on the data only;
 * since a parent's key is at least its child's, the first keep still form
 * a tree. */
void query_view_ties(store_reader *r, uint32_t *ids, uint32_t n, uint32_t keep,
                     uint64_t (*key)(const void *ctx, uint32_t id), const void *ctx);
void query_view_free(query_view *v);
/* Fills child_at for a view whose edges are sorted by parent (node ids < n_ids). */
int query_view_index(query_view *v, uint32_t n_ids);
/* The children of node p: edges[*first .. *first + answer). */
uint32_t query_view_children(const query_view *v, uint32_t p, uint32_t *first);

/* A merge reduced to its functions: self/total per function, the
 * distribution of self shares, and the figures of the merge. */
typedef struct {
    query_functions f;
    query_dist d;
    uint64_t total, samples, profiles;
    uint64_t samples_unknown;   /* as in query_tree */
    uint64_t divisor;           /* as in query_tree: total / divisor is the value */
} query_fprofile;

int query_fprofile_build(store_reader *r, const query_tree *t, query_fprofile *out);
/* Its figures (profiles, total, divisor, samples). */
query_figures query_fprofile_figures(const query_fprofile *p);
void query_fprofile_free(query_fprofile *p);
/* Distances of x to y over their top k (compare.c). */
int query_distances(store_reader *r, const query_dist *x, const query_dist *y, size_t k, double *m, double *jsd);
/* Units (units.c): merged windows or groups, reduced to functions. */
int query_window_profiles(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                          int64_t step_ms, query_fprofile **out, size_t *n_out);
int query_group_profiles(store_reader *r, const query_group *groups, size_t n, int64_t from_ms, int64_t until_ms,
                         const char *unit, query_fprofile **out);
void query_units_free(query_fprofile *u, size_t n);

/* Names function ids for stats' callbacks (ctx is the store_reader). */
const char *query_fn_name(void *ctx, uint32_t fn);
/* A number, or JSON null when NaN. */
json_t *query_real_or_null(double x);

/* Every node with self > 0 of a tree, as a stack (stacks.c): stack i's
 * function ids, root first, are fns[start[i]] .. fns[start[i] + depth[i]),
 * its leaf node[i] (so its value is the tree's self[node[i]]). */
typedef struct {
    uint32_t *fns;
    size_t *start;
    uint32_t *depth;
    uint32_t *node;
    size_t n;
} query_stacks;

int query_stacks_build(store_reader *r, const query_tree *t, query_stacks *out);
/* The stacks in path order (by their frames' names, root first, name by
 * name, a stack before those it is a prefix of): the order depends on the
 * data only, not on the reader's node ids.  -1 out of memory (q unchanged). */
int query_stacks_sort(store_reader *r, query_stacks *q);
void query_stacks_free(query_stacks *s);

/* Runs the statements after id for every node whose bit is set in a
 * bitmap, ids ascending.  Variadic, so the body may hold commas. */
#define QUERY_FOR_EACH_BIT(bitmap, n_bits, id, ...)                         \
    for (size_t w_ = 0; w_ < ((size_t)(n_bits) + 63) / 64; w_++)              \
        for (uint64_t b_ = (bitmap)[w_]; b_; b_ &= b_ - 1) {                 \
            uint32_t id = (uint32_t)(w_ * 64 + (size_t)__builtin_ctzll(b_)); \
            __VA_ARGS__                                                      \
        }

/* Two merged trees of one reader as one (diff.c, encode_levels.c): both
 * index the reader's call tree, so their union is the union of their
 * touched bitmaps; a tree's values at an id past its arrays are 0. */
typedef struct { store_reader *r; const query_tree *a, *b; } diff_ctx;
static inline uint64_t diff_self_at(const query_tree *t, uint32_t id) { return id < t->n_nodes ? t->self[id] : 0; }
static inline uint64_t diff_total_at(const query_tree *t, uint32_t id) { return id < t->n_nodes ? t->total[id] : 0; }
static inline int diff_hit(const query_tree *t, uint32_t id)
{
    return id < t->n_nodes && ((t->touched[id >> 6] >> (id & 63)) & 1);
}
static inline uint64_t diff_both(const diff_ctx *c, uint32_t id) { return diff_total_at(c->a, id) + diff_total_at(c->b, id); }
/* The union of two trees' touched nodes as an indexed view (diff.c):
 * children by left + right total descending, then name; max_nodes (0: all)
 * keeps the largest sums, trunc_nodes and trunc_total (both sides' self)
 * counting the rest.  -1 out of memory (v empty). */
int query_diff_view(store_reader *r, const query_tree *left, const query_tree *right, size_t max_nodes,
                    query_view *v);

#endif
