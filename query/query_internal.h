/* query_internal.h — private to query/: helpers its files share. */
#ifndef FLAMEDB_QUERY_INTERNAL_H
#define FLAMEDB_QUERY_INTERNAL_H

#include "query.h"

/* Writes a formatted error message into err (always NUL-terminated). */
void query_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The nodes of a merged tree to show, with children in display order. */
typedef struct { uint32_t parent, id; } query_edge;

typedef struct {
    query_edge *edges;     /* kept nodes sorted by parent, then display order */
    uint32_t n_edges;
    uint64_t trunc_nodes;  /* nodes left out by max_nodes */
    uint64_t trunc_total;  /* sum of their self values */
} query_view;

int query_view_build(store_reader *r, const query_tree *t, size_t max_nodes, query_view *v);
void query_view_free(query_view *v);
/* The children of node p: edges[*first .. *first + answer). */
uint32_t query_view_children(const query_view *v, uint32_t p, uint32_t *first);

/* Calls fn(id, ctx) for every node with its bit set in a bitmap, ascending. */
#define QUERY_FOR_EACH_BIT(bitmap, n_bits, id, body)                        \
    for (size_t w_ = 0; w_ < ((size_t)(n_bits) + 63) / 64; w_++)              \
        for (uint64_t b_ = (bitmap)[w_]; b_; b_ &= b_ - 1) {                 \
            uint32_t id = (uint32_t)(w_ * 64 + (size_t)__builtin_ctzll(b_)); \
            body                                                             \
        }

#endif
