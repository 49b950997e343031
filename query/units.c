/* units.c — the units that stability and variance compare: the windows of
 * a range (step-aligned to `from`, the last one cut at `until`) or the
 * groups of a group-by, each merged and reduced to its functions. */
#include <stdlib.h>
#include <string.h>

#include "../storage/remote.h"
#include "query_internal.h"

size_t query_window_count(int64_t from_ms, int64_t until_ms, int64_t step_ms)
{
    return (size_t)((until_ms - from_ms + step_ms - 1) / step_ms);
}

static int unit_profile(store_reader *r, const query_series_set *set, int64_t from, int64_t until,
                        const char *unit, query_fprofile *out)
{
    query_tree t;
    char err[128];
    if (query_merge_in_unit(r, set, from, until, unit, &t, err, sizeof err)) return -1;
    int rc = query_fprofile_build(r, &t, out);
    query_tree_free(&t);
    return rc;
}

/* The unit of the whole answer (the one a plain merge would choose), so
 * every unit of it adds the same kind of value. */
static int answer_unit(store_reader *r, const query_series_set *set, int64_t from, int64_t until, char *unit,
                       size_t len)
{
    query_tree t;
    char err[128];
    if (query_merge(r, set, from, until, &t, err, sizeof err)) return -1;
    snprintf(unit, len, "%s", t.unit);
    query_tree_free(&t);
    return 0;
}

int query_window_profiles(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                          int64_t step_ms, query_fprofile **out, size_t *n_out)
{
    char unit[64];
    if (answer_unit(r, set, from_ms, until_ms, unit, sizeof unit)) return -1;
    size_t n = query_window_count(from_ms, until_ms, step_ms);
    query_fprofile *u = calloc(n ? n : 1, sizeof *u);
    if (!u) return -1;
    /* a remote reader (cluster mode) loads short windows' profiles at once */
    store_reader_prefetch_windows(r, set->series, set->n_series, from_ms, until_ms, step_ms);
    for (size_t w = 0; w < n; w++) {
        int64_t ws = from_ms + (int64_t)w * step_ms, we = ws + step_ms < until_ms ? ws + step_ms : until_ms;
        if (unit_profile(r, set, ws, we, unit, &u[w])) {
            query_units_free(u, w);
            return -1;
        }
    }
    *out = u;
    *n_out = n;
    return 0;
}

int query_group_profiles(store_reader *r, const query_group *groups, size_t n, int64_t from_ms, int64_t until_ms,
                         const char *unit, query_fprofile **out)
{
    query_fprofile *u = calloc(n ? n : 1, sizeof *u);
    if (!u) return -1;
    for (size_t g = 0; g < n; g++) {
        if (unit_profile(r, &groups[g].set, from_ms, until_ms, unit, &u[g])) {
            query_units_free(u, g);
            return -1;
        }
    }
    *out = u;
    return 0;
}

void query_units_free(query_fprofile *u, size_t n)
{
    if (!u) return;
    for (size_t i = 0; i < n; i++) query_fprofile_free(&u[i]);
    free(u);
}

json_t *query_group_labels_json(const query_group_by *by, const query_group *g)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < by->n_keys; i++) json_object_set_new(o, by->keys[i], json_string(g->values[i]));
    return o;
}
