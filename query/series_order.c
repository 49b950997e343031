/* series_order.c — series in an order of their labels, not of their ids.
 *
 * A series id is given when a store first meets a label set, so it follows
 * push order (and in a cluster, which front end met it first): answers that
 * list series by id differ between two stores holding the same profiles.
 * query_series_sort orders them by label set instead: labels sorted by name
 * (as store_series_labels gives them), compared pair by pair, name then
 * value (bytes), a set before the sets it is a prefix of.  The labels are
 * read once into one flat array, so the sort's comparisons only compare
 * strings. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

#define MAX_LABELS 64

typedef struct {
    uint32_t id;
    uint32_t n;       /* labels */
    size_t at;        /* where they start in the flat array */
} series_key;

static int key_cmp(const void *a, const void *b, void *arg)
{
    const store_label *l = arg;
    const series_key *x = a, *y = b;
    for (uint32_t i = 0; i < x->n && i < y->n; i++) {
        const store_label *p = &l[x->at + i], *q = &l[y->at + i];
        int c = strcmp(p->name, q->name);
        if (!c) c = strcmp(p->value, q->value);
        if (c) return c;
    }
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id); /* one label set: one series */
}

int query_series_sort(store_reader *r, uint32_t *ids, size_t n)
{
    if (n < 2) return 0;
    store_label tmp[MAX_LABELS];
    series_key *keys = malloc(n * sizeof *keys);
    if (!keys) return -1;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int nl = store_series_labels(r, ids[i], tmp, MAX_LABELS);
        keys[i] = (series_key){ ids[i], (uint32_t)(nl < 0 ? 0 : nl > MAX_LABELS ? MAX_LABELS : nl), total };
        total += keys[i].n;
    }
    store_label *flat = malloc((total ? total : 1) * sizeof *flat);
    if (!flat) {
        free(keys);
        return -1;
    }
    for (size_t i = 0; i < n; i++) store_series_labels(r, ids[i], flat + keys[i].at, (int)keys[i].n);
    qsort_r(keys, n, sizeof *keys, key_cmp, flat);
    for (size_t i = 0; i < n; i++) ids[i] = keys[i].id;
    free(flat);
    free(keys);
    return 0;
}
