/* chread.h — reading flamedb's data back from ClickHouse, aggregated on
 * the shards (issue 10: the SQL side of the read path; docs/cluster.md,
 * "Next: the read path").
 *
 * A merge over a time range reads, like flamedb's own
 * store_blocks_scan_merged, the raw rows only at the range's ragged edges
 * and the pre-merged 1-hour and 10-minute rollups for the whole buckets in
 * between (chread_plan), all in one statement: the pieces are UNION ALL'd
 * and summed per (tenant, series, unit, rate, gauge, stack) with GROUP BY,
 * which ClickHouse runs on every shard and merges on the initiator.  A
 * profile belongs to a bucket by its start, in both places, so the sums
 * are exact.  Which series: a condition on (tenant, series) such as
 * chread_series_in's, a GLOBAL IN over the series table (18.16 refuses a
 * plain IN on a Distributed table inside a distributed query; GLOBAL runs
 * the subquery once and ships its answer to the shards).
 *
 * One chread is one ClickHouse client: one thread at a time. */
#ifndef FLAMEDB_CHREAD_H
#define FLAMEDB_CHREAD_H

#include <stddef.h>
#include <stdint.h>

#include "chschema.h"

typedef struct chread chread;

chread *chread_open(const char *url, const chschema_options *schema, int timeout_ms, char *err, size_t errlen);
void chread_close(chread *c);
/* The last failure's message (ClickHouse's, naming the URL). */
const char *chread_error(const chread *c);

/* The pieces of [from, until): table ("samples", "samples_1h",
 * "samples_10m"), its time column and the sub-range.  At most 5. */
typedef struct {
    const char *table, *column;
    int64_t from, until;
} chread_piece;
size_t chread_plan(int64_t from_ms, int64_t until_ms, chread_piece out[5]);

/* "(tenant, series) GLOBAL IN (SELECT tenant, series FROM <db>.series
 * WHERE <where>)" into out; where is chselect_where's.  -1 when it does
 * not fit. */
int chread_series_in(const chread *c, const char *where, char *out, size_t cap);

typedef struct {
    const char *tenant;
    size_t tenant_len;
    uint64_t series;
    const char *unit;
    size_t unit_len;
    double rate;
    int gauge;
    const uint8_t *stack;   /* 16 bytes */
    uint64_t value;
} chread_sum;

/* The values of the series matching cond (SQL on tenant and series) whose
 * profiles start in [from, until), summed per (tenant, series, unit, rate,
 * gauge, stack); fn gets each row (pointers valid during the call).  0, or
 * -1 with chread_error. */
int chread_merge(chread *c, const char *cond, int64_t from_ms, int64_t until_ms,
                 void (*fn)(void *ctx, const chread_sum *row), void *ctx);

/* The frames (root first, ';'-joined) of n stack ids; fn gets each id that
 * ClickHouse knows, once. */
int chread_frames(chread *c, const uint8_t (*stacks)[16], size_t n,
                  void (*fn)(void *ctx, const uint8_t *stack, const char *frames, size_t len), void *ctx);

#endif
