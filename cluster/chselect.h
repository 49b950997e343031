/* chselect.h — flamedb selectors as ClickHouse SQL (issue 10).
 *
 * A selector `{name="v", name!="v", name=~"re", name!~"re"}` becomes a
 * condition on the `series` table's label arrays, with flamedb's meaning:
 * a series without the label matches as if its value were "" (as in
 * Prometheus), regular expressions match whole values, RE2 on both sides
 * (ClickHouse's match() is RE2; the pattern is anchored as ^(?:re)$).  The
 * tenant label the server adds to a scoped request's selector
 * (tenant_label, "__tenant__") is the `tenant` column instead.
 *
 * The condition is for `SELECT DISTINCT series FROM <db>.series WHERE ...`
 * (series is a ReplacingMergeTree: a row may be there twice until a merge,
 * hence DISTINCT).  Strings are quoted for ClickHouse: '...' with \\ and
 * \' escaped. */
#ifndef FLAMEDB_CHSELECT_H
#define FLAMEDB_CHSELECT_H

#include <stddef.h>

#include "../query/query.h"

/* Appends the WHERE condition of sel to out (a NUL-terminated string of
 * capacity cap); -1 when it does not fit.  `{}` is "1". */
int chselect_where(const query_selector *sel, const char *tenant_label, char *out, size_t cap);

/* Appends s quoted as a ClickHouse string literal; -1 when it does not fit. */
int chselect_quote(const char *s, char *out, size_t cap);

#endif
