/* rollup.h — pre-merged blocks per (level, series, bucket, unit) inside a
 * partition (rollup.c). */
#ifndef FLAMEDB_ROLLUP_H
#define FLAMEDB_ROLLUP_H

#include <lmdb.h>
#include <stdint.h>

#include "block.h"
#include "pdict.h"
#include "segment.h"
#include "store.h"

#define ROLLUP_LEVELS 2
#define ROLLUP_KEY_LEN 17
extern const int64_t rollup_size_ms[ROLLUP_LEVELS];   /* coarsest first */
int64_t rollup_floor(int64_t t, int64_t size);
void rollup_key(unsigned char key[ROLLUP_KEY_LEN], int level, uint32_t sid, int64_t bucket, uint32_t unit);
void rollup_key_parse(const unsigned char *key, int *level, uint32_t *sid, int64_t *bucket, uint32_t *unit);
/* Grace after a bucket's end before it is compacted. */
#define ROLLUP_GRACE_MS 60000

/* On a raw write of a profile (pairs sorted, unweighted; raw its block's
 * header, unit its unit string) at wall time now_ms: a bucket that already
 * has its rollup (late data) gets the pairs added; any other bucket is
 * marked pending in the partition's "pending" database, for rollup_build.
 * A mark for a bucket that has closed already (late data) carries now_ms,
 * renewed by every late write (rollup_pending_waits).  The value unit is
 * interned in d. */
store_status rollup_on_write(MDB_txn *txn, MDB_dbi rollups, MDB_dbi pending, pdict_w *d, void *zcctx, uint32_t sid,
                             int64_t from_ms, int64_t now_ms, const char *unit, const block_header *raw,
                             const uint32_t *nodes, const uint64_t *counts, uint32_t n);

/* Late data waits this long after its bucket's last late write before
 * compaction builds or repacks the bucket (rollup.c says why). */
#define ROLLUP_LATE_QUIET_MS 10000

/* Whether the pending mark whose value is v waits at now_ms: a late mark
 * less than quiet_ms old.  Marks of data that came in time have no value
 * (as every mark written before late marks had one) and never wait. */
int rollup_pending_waits(const MDB_val *v, int64_t now_ms, int64_t quiet_ms);

/* Pending markers: level, series, bucket (13 bytes).  Level ROLLUP_REPACK
 * marks a 10-minute bucket built already that got late data: compaction
 * packs its raw blocks into its segment again (segment.c). */
#define ROLLUP_PENDING_LEN 13
#define ROLLUP_REPACK ROLLUP_LEVELS
void rollup_pending_parse(const unsigned char *key, int *level, uint32_t *sid, int64_t *bucket);

/* Scratch for rollup_build: accumulators over a partition's node ids. */
typedef struct rollup_scratch rollup_scratch;
rollup_scratch *rollup_scratch_new(void);
void rollup_scratch_free(rollup_scratch *s);

/* Builds the rollups of one bucket from its profiles (raw blocks and
 * segments), one per value unit, replacing any there; r reads the
 * partition's strings, d interns value units.  An hour whose profiles all
 * start in one 10-minute bucket gets none (rollup.c: elision). */
store_status rollup_build(MDB_txn *txn, MDB_dbi blocks, MDB_dbi segs, MDB_dbi rollups, pdict_r *r, pdict_w *d,
                          void *zcctx, rollup_scratch *s, int level, uint32_t sid, int64_t bucket);
/* The scratch's decoder, for seg_pack. */
seg_dec *rollup_scratch_dec(rollup_scratch *s);
/* Forgets every rollup of the partition and marks the buckets of all its
 * blocks pending, so compaction builds them anew (the flamedb-5 upgrade:
 * its rollups did not keep samples and gauges apart). */
store_status rollup_reset(MDB_txn *txn, MDB_dbi blocks, MDB_dbi rollups, MDB_dbi pending);

/* Deletes sid's rollup buckets wholly older than cutoff_ms (INT64_MAX:
 * all), at most *budget of them (decremented). */
store_status rollup_delete(MDB_cursor *c, uint32_t sid, int64_t cutoff_ms, uint64_t *budget);

#endif
