/* remote.h — reading data that lives elsewhere through store_reader (issue
 * 10: a flamedb front end whose profiles are in ClickHouse).
 *
 * Every analysis reads through store_reader (store.h), so a front end that
 * answers like a single node gives its analyses a store_reader whose
 * catalog and partition come from elsewhere, and nothing above storage/
 * changes.  Two pieces, both filled by the caller (cluster/chsource.c),
 * neither knowing where the data comes from:
 *
 *   store_rcat   a catalog of series: label sets with the reader ids 1..n,
 *                built by the caller, sealed, then shared read-only by any
 *                number of readers (reference counted), so that a front end
 *                loads it once and not per query.
 *   store_rmem   one reader's loaded data: a call tree and strings of its
 *                own (a partition held in memory) and, per series, profiles
 *                (blocks in storage's own codec) over the time ranges loaded.
 *
 * A remote reader starts empty and asks its source three things:
 *   - presence: which of the series a selector matched have profiles in
 *     the query's range (store_reader_prefetch, from query/resolve.c: one
 *     statement for them all); they become the reader's wanted series;
 *   - merged blocks: a merge announces its series and range
 *     (store_reader_prefetch_merged, from query/merge.c) and the source
 *     sums them where the data is (one block per series, unit, rate and
 *     gauge over the whole range: what rollups are to a store);
 *   - raw profiles, for every other scan (per profile, or a sub-range):
 *     loaded on the first scan that misses, for the series asked and every
 *     wanted series that has profiles there, in one go.  Only the part of a
 *     range not yet loaded is asked for, so a profile is never loaded
 *     twice.  Stability and variance announce the windows they merge
 *     (store_reader_prefetch_windows): every window is summed in one
 *     merge, or, windows too short to sum, loaded as raw profiles over
 *     the whole range at once.
 * A failed load stops the reader (STORE_STOP_REMOTE, with the source's
 * message in store_reader_error): the query gives up whole and the server
 * answers 503 with the message, never a partial answer unless the source
 * was asked for one (and says so).
 *
 * The loaded partition's ids are its own: store_part_node folds them into
 * the reader's tree like an LMDB partition's, so answers are built by the
 * same code. */
#ifndef FLAMEDB_REMOTE_H
#define FLAMEDB_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct store_rcat store_rcat;
typedef struct store_rmem store_rmem;

/* ---- the catalog ---- */

store_rcat *store_rcat_new(void);
/* Adds a series: labels sorted by name, unique (copied).  Its reader id is
 * the number of series added before it, plus one. */
store_status store_rcat_add(store_rcat *c, const store_label *labels, int n, uint32_t *sid);
/* Ends the building: after this the catalog is read-only and may be
 * shared between threads. */
store_status store_rcat_seal(store_rcat *c);
uint32_t store_rcat_count(const store_rcat *c);
/* Bytes the catalog holds. */
uint64_t store_rcat_memory(const store_rcat *c);
void store_rcat_ref(store_rcat *c);
/* Frees it with the last reference (the builder holds the first). */
void store_rcat_unref(store_rcat *c);

/* ---- loading ---- */

/* The source a remote reader loads from.  load fills m with the profiles
 * of the series sids[0..n) whose windows start in [from_ms, until_ms):
 * store_rmem_stack for each stack's leaf, then store_rmem_profile for each
 * profile.  Answers 0, or -1 with a message in err (the reader stops with
 * it).  end (may be NULL) runs once, at store_reader_end. */
typedef struct {
    int found;                          /* 0: the series has no profile */
    int64_t first_from, first_until;    /* its oldest profile's window */
    int64_t last_from, last_until;      /* its newest */
} store_rextent;
typedef struct {
    int (*load)(void *ctx, store_rmem *m, const uint32_t *sids, size_t n, int64_t from_ms, int64_t until_ms,
                char *err, size_t errlen);
    /* Merged blocks (store_rmem_merged) of the series sids[0..n) over the
     * profiles starting in [from_ms, until_ms), or with step_ms > 0 over
     * each window of it (cut every step_ms from from_ms, the last at
     * until_ms) apart.  NULL: merges read raw profiles. */
    int (*merge)(void *ctx, store_rmem *m, const uint32_t *sids, size_t n, int64_t from_ms, int64_t until_ms,
                 int64_t step_ms, char *err, size_t errlen);
    /* Merges of ranges shorter than this read raw profiles instead: where
     * few profiles lie in a range, summing them costs more statements than
     * it saves rows. */
    int64_t merge_min_ms;
    /* Which of sids[0..n) have a profile starting in [from_ms, until_ms):
     * present[i] = 1 or 0. */
    int (*presence)(void *ctx, const uint32_t *sids, size_t n, int64_t from_ms, int64_t until_ms,
                    unsigned char *present, char *err, size_t errlen);
    /* The oldest and newest profile of each of sids[0..n) into out[i] (for
     * store_series_first / _last: answers whose range held nothing say
     * where the data is).  Answers 0, or -1 with err. */
    int (*extent)(void *ctx, const uint32_t *sids, size_t n, store_rextent *out, char *err, size_t errlen);
    void (*end)(void *ctx);
    void *ctx;
} store_rsource;

/* The leaf node of a stack (frames root first, ';'-joined, len bytes) in
 * m's call tree, created when new; 0 when memory ran out.  Valid for the
 * reader's life: a source may remember it across loads. */
uint32_t store_rmem_stack(store_rmem *m, const char *frames, uint32_t len);

/* One profile of a load: its series (a reader id of the catalog), window,
 * unit, rate, what it knows of its samples, and its stacks as (leaf,
 * count) pairs in any order (a leaf may repeat: the counts add up). */
typedef struct {
    uint32_t series;
    int64_t from_ms, until_ms;
    const char *unit;
    double rate;
    uint64_t samples;       /* with samples_known */
    int samples_known;
    int gauge;
    const uint32_t *leaves;
    const uint64_t *counts;
    size_t n;
} store_rprofile;
store_status store_rmem_profile(store_rmem *m, const store_rprofile *p);
/* During a merge callback: a merged block of p->series over exactly
 * [p->from_ms, p->until_ms) (the callback's range, or one of its
 * windows), the sum of n_profiles
 * profiles (p->samples their samples; n may be 0: profiles whose values
 * are in another block, e.g. those that did not know their samples). */
store_status store_rmem_merged(store_rmem *m, const store_rprofile *p, uint64_t n_profiles);

/* A reader over cat (a reference is taken) loading from src.  Limits
 * (deadline, pairs, cancel) and every read call work as on a store's
 * reader; the catalog is cat's. */
store_status store_reader_begin_remote(store_rcat *cat, const store_rsource *src, store_reader **out);

/* Announces that the series sids[0..n) will be read over [from_ms,
 * until_ms): a remote reader loads them now, in one go (a store's reader
 * does nothing). */
void store_reader_prefetch(store_reader *r, const uint32_t *sids, size_t n, int64_t from_ms, int64_t until_ms);

/* Announces a merge of the series sids[0..n) over [from_ms, until_ms):
 * a remote reader asks its source to sum them where the data is, and the
 * merge's scans of exactly that range read the sums (a store's reader does
 * nothing: its rollups serve). */
void store_reader_prefetch_merged(store_reader *r, const uint32_t *sids, size_t n, int64_t from_ms,
                                  int64_t until_ms);

/* Announces merges of the series sids[0..n) over every window of step_ms
 * in [from_ms, until_ms) (the units of stability and variance): a remote
 * reader has its source sum every window at once (windows of merge_min_ms
 * or more), or loads the raw profiles of the whole range in one go
 * (shorter windows read raw profiles), rather than a statement a window;
 * the windows' merges then find their sums or profiles in (a store's
 * reader does nothing). */
void store_reader_prefetch_windows(store_reader *r, const uint32_t *sids, size_t n, int64_t from_ms,
                                   int64_t until_ms, int64_t step_ms);

/* Announces store_series_first / _last calls for these series: a remote
 * reader asks its source for their extents in one go. */
void store_reader_prefetch_extent(store_reader *r, const uint32_t *sids, size_t n);

/* The message of the load that stopped the reader (STORE_STOP_REMOTE), or
 * NULL. */
const char *store_reader_error(const store_reader *r);

#endif
