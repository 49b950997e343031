/* groups.c — group-by: splitting a set of series by the values of some
 * labels, as Google-Wide Profiling groups by any k of its m dimensions.
 *
 * A series without one of the labels falls in the group whose value for it
 * is "".  Groups come out in order of their label values; the caller sorts
 * them by whatever it merged (usually total, descending). */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "../storage/remote.h"
#include "query.h"

int query_group_by_parse(const char *s, query_group_by *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!s || !*s) {
        snprintf(err, errlen, "expected label names separated by commas, like service,build");
        return -1;
    }
    char *copy = strdup(s);
    if (!copy) return -1;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        while (*tok == ' ') tok++;
        size_t n = strlen(tok);
        while (n && tok[n - 1] == ' ') tok[--n] = '\0';
        int ok = n > 0 && n <= 128 && (tok[0] == '_' || ((tok[0] | 32) >= 'a' && (tok[0] | 32) <= 'z'));
        for (size_t i = 1; ok && i < n; i++)
            ok = tok[i] == '_' || tok[i] == '.' || (tok[i] >= '0' && tok[i] <= '9') ||
                 ((tok[i] | 32) >= 'a' && (tok[i] | 32) <= 'z');
        if (!ok || out->n_keys == QUERY_MAX_GROUP_KEYS) {
            if (ok) snprintf(err, errlen, "at most %d labels", QUERY_MAX_GROUP_KEYS);
            else snprintf(err, errlen, "'%.64s' is not a label name", tok);
            free(copy);
            query_group_by_free(out);
            return -1;
        }
        out->keys[out->n_keys++] = strdup(tok);
    }
    free(copy);
    if (!out->n_keys) {
        snprintf(err, errlen, "expected label names separated by commas, like service,build");
        return -1;
    }
    return 0;
}

void query_group_by_free(query_group_by *g)
{
    for (size_t i = 0; i < g->n_keys; i++) free(g->keys[i]);
    memset(g, 0, sizeof *g);
}

typedef struct { uint32_t sid; const char *values[QUERY_MAX_GROUP_KEYS]; } keyed;
typedef struct { size_t n; } cmp_ctx;

static int keyed_cmp(const void *a, const void *b, void *arg)
{
    const keyed *x = a, *y = b;
    size_t n = ((const cmp_ctx *)arg)->n;
    for (size_t i = 0; i < n; i++) {
        int c = strcmp(x->values[i], y->values[i]);
        if (c) return c;
    }
    return (x->sid > y->sid) - (x->sid < y->sid);
}

static int same_values(const keyed *a, const keyed *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(a->values[i], b->values[i])) return 0;
    return 1;
}

static int sid_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

size_t query_groups_limit(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                          size_t max_groups, uint64_t tree_bytes)
{
    if (!tree_bytes) return max_groups;
    /* a remote reader (cluster mode) sums them where the data is, rather
     * than loading every profile to count the nodes */
    store_reader_prefetch_merged(r, set->series, set->n_series, from_ms, until_ms);
    store_part **parts;
    size_t np = store_reader_parts(r, from_ms, until_ms, &parts);
    uint64_t nodes = 1;
    for (size_t k = 0; k < np; k++) nodes += store_part_nodes(r, parts[k]);
    /* a merged tree: self and total (8 bytes each) and a bit per node */
    uint64_t fit = tree_bytes / (nodes * 16 + nodes / 8 + 1);
    if (fit < 1) fit = 1;
    return fit < max_groups ? (size_t)fit : max_groups;
}

int query_groups_split(store_reader *r, const query_series_set *set, const query_group_by *by, size_t max_groups,
                       query_group **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    keyed *k = malloc((set->n_series ? set->n_series : 1) * sizeof *k);
    query_group *groups = calloc(set->n_series ? set->n_series : 1, sizeof *groups);
    if (!k || !groups) goto oom;
    for (size_t i = 0; i < set->n_series; i++) {
        k[i].sid = set->series[i];
        for (size_t j = 0; j < by->n_keys; j++) {
            const char *v = store_series_label(r, set->series[i], by->keys[j]);
            k[i].values[j] = v ? v : "";
        }
    }
    cmp_ctx cc = { by->n_keys };
    qsort_r(k, set->n_series, sizeof *k, keyed_cmp, &cc);
    /* counted before any group is made: a label with 100,000 values is
     * refused here, not after 100,000 merges */
    size_t count = set->n_series ? 1 : 0;
    for (size_t i = 1; i < set->n_series; i++) count += !same_values(&k[i - 1], &k[i], by->n_keys);
    if (max_groups && count > max_groups) {
        free(k);
        free(groups);
        *n_out = count;
        return QUERY_ETOOMANY;
    }
    size_t ng = 0;
    for (size_t i = 0; i < set->n_series;) {
        size_t j = i + 1;
        while (j < set->n_series && same_values(&k[i], &k[j], by->n_keys)) j++;
        query_group *g = &groups[ng++];
        g->n_values = by->n_keys;
        for (size_t v = 0; v < by->n_keys; v++) g->values[v] = k[i].values[v];
        snprintf(g->set.type, sizeof g->set.type, "%s", set->type);
        g->set.sample = set->sample;         /* borrowed: groups free only their series */
        g->set.sample_key = set->sample_key;
        g->set.span_ids = set->span_ids;
        g->set.n_span_ids = set->n_span_ids;
        g->set.series = malloc((j - i) * sizeof *g->set.series);
        if (!g->set.series) goto oom;
        for (size_t s = i; s < j; s++) g->set.series[g->set.n_series++] = k[s].sid;
        qsort(g->set.series, g->set.n_series, sizeof *g->set.series, sid_cmp);
        i = j;
    }
    free(k);
    *out = groups;
    *n_out = ng;
    return 0;
oom:
    free(k);
    query_groups_free(groups, set->n_series);
    return -1;
}

void query_groups_free(query_group *groups, size_t n)
{
    if (!groups) return;
    for (size_t i = 0; i < n; i++) free(groups[i].set.series);
    free(groups);
}

/* By total descending; ties keep the groups' own order (by values). */
static int group_tree_cmp(const void *a, const void *b)
{
    const query_group_tree *x = a, *y = b;
    if (x->tree.grand_total != y->tree.grand_total) return x->tree.grand_total > y->tree.grand_total ? -1 : 1;
    return (x->group > y->group) - (x->group < y->group);
}

int query_groups_merge(store_reader *r, const query_group *groups, size_t n, int64_t from_ms, int64_t until_ms,
                       query_group_tree **out, char *err, size_t errlen)
{
    *out = NULL;
    query_group_tree *m = calloc(n ? n : 1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* a remote reader (cluster mode) sums every group's series in one go */
    size_t all = 0;
    for (size_t i = 0; i < n; i++) all += groups[i].set.n_series;
    uint32_t *ids = malloc((all ? all : 1) * sizeof *ids);
    if (ids) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < groups[i].set.n_series; j++) ids[k++] = groups[i].set.series[j];
        store_reader_prefetch_merged(r, ids, k, from_ms, until_ms);
        free(ids);
    }
    for (size_t i = 0; i < n; i++) {
        m[i].group = i;
        int rc = query_merge(r, &groups[i].set, from_ms, until_ms, &m[i].tree, err, errlen);
        if (rc) {
            query_group_trees_free(m, i);
            return rc;
        }
    }
    qsort(m, n, sizeof *m, group_tree_cmp);
    *out = m;
    return 0;
}

void query_group_trees_free(query_group_tree *trees, size_t n)
{
    for (size_t i = 0; trees && i < n; i++) query_tree_free(&trees[i].tree);
    free(trees);
}
