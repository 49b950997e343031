/* chread.h — reading flamedb's data back from ClickHouse, aggregated on
 * the shards (issue 10: the SQL side of the read path; docs/cluster.md,
 * "Next: the read path").
 *
 * A merge over a time range reads, like flamedb's own
 * store_blocks_scan_merged, the raw rows only at the range's ragged edges
 * and the pre-merged 1-hour and 10-minute rollups for the whole buckets in
 * between (chread_plan), all in one statement: the pieces are UNION ALL'd
 * and summed per (tenant, series, unit, rate, gauge, stack) with GROUP BY
 * (and per window, when one statement sums several: chread_windows),
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
/* The last failure's message (ClickHouse's, naming the URL), and
 * ClickHouse's exception code (0: the failure was not an exception). */
const char *chread_error(const chread *c);
int chread_code(const chread *c);

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

/* The windows a merge sums apart, in one statement: [from, until) cut
 * every step from `from`, the last window cut at `until` (what stability
 * and variance compare); step 0 (or the range or more): one window.  Each
 * window is planned as a merge of its own (chread_plan), and a row's
 * window is its number, 0 first.  A statement names each of a table's
 * ranges, so the caller keeps the windows of one call to a few hundred
 * (ClickHouse parses at most 50,000 AST elements by default). */
typedef struct {
    int64_t from, until, step;
} chread_windows;
/* Window i of w into [*from, *until): 0, or -1 past the last window. */
int chread_window(const chread_windows *w, uint64_t i, int64_t *from_ms, int64_t *until_ms);

typedef struct {
    uint32_t window;
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
 * profiles start in a window of w, summed per (window, tenant, series,
 * unit, rate, gauge, stack); fn gets each row (pointers valid during the
 * call).  0, or -1 with chread_error. */
int chread_merge(chread *c, const char *cond, const chread_windows *w, void (*fn)(void *ctx, const chread_sum *row),
                 void *ctx);

/* The frames (root first, ';'-joined) of n stack ids; fn gets each id that
 * ClickHouse knows, once. */
int chread_frames(chread *c, const uint8_t (*stacks)[16], size_t n,
                  void (*fn)(void *ctx, const uint8_t *stack, const char *frames, size_t len), void *ctx);

/* ---- what a front end's reader loads (chsource.c) ---- */

/* Lets the next statements be up to this many bytes (ClickHouse parses at
 * most 256 KiB by default; a load names its series).  And partial
 * answers: with skip set, shards that cannot be reached are left out
 * (skip_unavailable_shards) instead of failing the statement. */
void chread_set_skip_unavailable(chread *c, int skip);

/* A number that changes when rows arrive in the series table (its row
 * count): the catalog is read again only then. */
int chread_series_version(chread *c, uint64_t *version);

typedef struct {
    const char *tenant;
    size_t tenant_len;
    uint64_t series;
    size_t n_labels;
    const char *const *names, *const *values;   /* n_labels each, not NUL-terminated */
    const size_t *name_lens, *value_lens;
} chread_series_row;
/* Every series (of every tenant), each once; fn answers 0 to go on. */
int chread_series_all(chread *c, int (*fn)(void *ctx, const chread_series_row *row), void *ctx);

/* A profile's key in both tables: what tells two profiles apart. */
typedef struct {
    const char *tenant;
    size_t tenant_len;
    uint64_t series;
    int64_t window_start;
    uint64_t batch;
    const char *unit;
    size_t unit_len;
} chread_key;

typedef struct {
    chread_key key;
    uint32_t window_ms;
    double rate;
    int gauge;
    uint64_t samples;
    int samples_known;
} chread_profile_row;

typedef struct {
    chread_key key;
    const uint8_t *stack;   /* 16 bytes */
    uint64_t value;
} chread_sample_row;

/* For the series matching cond (SQL on tenant and series), the profiles
 * whose window starts in [from, until): first the frames of every stack
 * they use (frames_fn, once a stack), then every profile row (profile_fn),
 * then every sample row (sample_fn), the samples of one profile one after
 * the other.  Callbacks answer 0 to go on.  Pointers are valid during the
 * call only. */
int chread_load(chread *c, const char *cond, int64_t from_ms, int64_t until_ms,
                int (*frames_fn)(void *ctx, const uint8_t *stack, const char *frames, size_t len),
                int (*profile_fn)(void *ctx, const chread_profile_row *row),
                int (*sample_fn)(void *ctx, const chread_sample_row *row), void *ctx);

/* The frames of every stack the merge of w sums (chread_plan's pieces of
 * each window), each once. */
int chread_merge_frames(chread *c, const char *cond, const chread_windows *w,
                        void (*fn)(void *ctx, const uint8_t *stack, const char *frames, size_t len), void *ctx);

/* The series matching cond that have a profile starting in [from, until). */
int chread_presence(chread *c, const char *cond, int64_t from_ms, int64_t until_ms,
                    int (*fn)(void *ctx, const char *tenant, size_t tenant_len, uint64_t series), void *ctx);

/* chread_merge's companion: per (window, tenant, series, unit, rate,
 * gauge), the number of profiles in the window, their samples (those that
 * knew theirs) and how many did not know them; raw rows at the edges, the
 * profiles_* rollups between, as chread_plan cuts each window. */
typedef struct {
    uint32_t window;
    const char *tenant;
    size_t tenant_len;
    uint64_t series;
    const char *unit;
    size_t unit_len;
    double rate;
    int gauge;
    uint64_t profiles, samples, unknown;
} chread_profile_sum;
int chread_merge_profiles(chread *c, const char *cond, const chread_windows *w,
                          int (*fn)(void *ctx, const chread_profile_sum *row), void *ctx);

/* On a cluster, after a statement failed because a shard could not be
 * reached: which shards have no replica that answers, as "shard 2
 * (127.0.0.1:9001)" items joined by ", " into out (a probe of each replica
 * through ClickHouse's remote()).  Answers how many; 0 when none could be
 * named (one server, or every replica answers again). */
int chread_down_shards(chread *c, char *out, size_t cap);

typedef struct {
    const char *tenant;
    size_t tenant_len;
    uint64_t series;
    int64_t first_from, first_until, last_from, last_until;
} chread_extent_row;
/* The oldest and newest profile window of each series matching cond. */
int chread_extents(chread *c, const char *cond, int (*fn)(void *ctx, const chread_extent_row *row), void *ctx);

#endif
