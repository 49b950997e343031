/* side.c — a side of a question: a selector over a time range, resolved
 * to its series and merged into one tree (query.h, query_side).
 *
 * Every analysis that answers about "these profiles" starts the same way:
 * the selector's series with profiles in the range (query_resolve picks
 * the type), then their profiles merged (query_merge, or
 * query_merge_in_unit when the caller names the unit, as a Pyroscope
 * profile type ID does).  The side holds the three together and records
 * which it has, so a handler that fails half way frees one thing.  What a
 * server adds (its parameters, the most series one query may merge, the
 * HTTP status of a failure) stays in the server. */
#include <string.h>

#include "query.h"

void query_side_init(query_side *s, query_selector *sel, int64_t from, int64_t until)
{
    memset(s, 0, sizeof *s);
    s->sel = *sel;
    memset(sel, 0, sizeof *sel);
    s->have_sel = 1;
    s->from = from;
    s->until = until;
}

int query_side_resolve(query_side *s, store_reader *r, char *err, size_t errlen)
{
    if (query_resolve(r, &s->sel, s->from, s->until, &s->set, err, errlen)) return -1;
    s->have_set = 1;
    return 0;
}

int query_side_merge(query_side *s, store_reader *r, const char *unit, char *err, size_t errlen)
{
    int rc = unit ? query_merge_in_unit(r, &s->set, s->from, s->until, unit, &s->tree, err, errlen)
                  : query_merge(r, &s->set, s->from, s->until, &s->tree, err, errlen);
    if (!rc) s->have_tree = 1;
    return rc;
}

void query_side_free(query_side *s)
{
    if (s->have_tree) query_tree_free(&s->tree);
    if (s->have_set) query_series_set_free(&s->set);
    if (s->have_sel) query_selector_free(&s->sel);
    memset(s, 0, sizeof *s);
}
