/* extent.c — where a selector has data, for answers whose range held none.
 *
 * Profiles imported with their own timestamps land outside a viewer's
 * default hour; an answer that found no profile in its range then says
 * where the selector's newest ("latest") and oldest ("earliest") profiles
 * are, so that a client can move the range there.
 *
 * Found without decoding a block.  The series come from the labels alone
 * (query_match_labels: the postings list of the selector's narrowest
 * equality matcher, else every series), at any time.  For each,
 * store_series_last walks the partitions newest first, one cursor seek
 * each, and stops at the first that holds the series; the newest window so
 * far bounds the next series' walk (since_ms), so partitions older than it
 * are never opened.  earliest is the mirror (store_series_first, oldest
 * first, bounded by the oldest so far).
 *
 * Cost, with S matching series and P partitions: after the first series,
 * each walks only the partitions from the newest down to the one holding
 * the best window so far, so about S x (1 + partitions newer than the
 * answer) seeks for latest, and S x (1 + partitions older than the oldest
 * profile) for earliest, plus at most P for the first series; each seek is
 * an O(log blocks) B-tree descent and one block header read.  Thousands of
 * series over a month of day partitions is thousands to tens of thousands
 * of seeks: milliseconds, and only when the range was empty. */
#include <stdlib.h>

#include "../storage/remote.h"
#include "query.h"

int query_extent_find(store_reader *r, const query_selector *sel, query_extent *out)
{
    out->found = 0;
    uint32_t *ids;
    size_t n;
    if (query_match_labels(r, sel, &ids, &n)) return -1;
    store_reader_prefetch_extent(r, ids, n); /* a remote reader asks for them in one go */
    for (size_t i = 0; i < n; i++) {
        int64_t f, u;
        /* since = the best start so far: an equal start may end later */
        if (!store_series_last(r, ids[i], out->found ? out->latest_from_ms : INT64_MIN, &f, &u)) continue;
        if (!out->found || f > out->latest_from_ms || (f == out->latest_from_ms && u > out->latest_until_ms)) {
            out->latest_from_ms = f;
            out->latest_until_ms = u;
        }
        if (!out->found) {
            out->earliest_from_ms = f;   /* a bound for the walks below */
            out->earliest_until_ms = u;
        }
        out->found = 1;
    }
    for (size_t i = 0; out->found && i < n; i++) {
        int64_t f, u, before = out->earliest_from_ms;
        /* before = one past the best start so far: an equal start may end earlier */
        if (before < INT64_MAX) before++;
        if (!store_series_first(r, ids[i], before, &f, &u)) continue;
        if (f < out->earliest_from_ms || (f == out->earliest_from_ms && u < out->earliest_until_ms)) {
            out->earliest_from_ms = f;
            out->earliest_until_ms = u;
        }
    }
    free(ids);
    return 0;
}

void query_extent_json(json_t *o, const query_extent *e)
{
    if (!o || !e->found) return;
    json_object_set_new(o, "latest", json_pack("{s:o,s:o}", "from", query_time_json(e->latest_from_ms), "until",
                                               query_time_json(e->latest_until_ms)));
    json_object_set_new(o, "earliest", json_pack("{s:o,s:o}", "from", query_time_json(e->earliest_from_ms),
                                                 "until", query_time_json(e->earliest_until_ms)));
}
