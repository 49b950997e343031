/* rollup.h — pre-merged blocks per (level, series, bucket, unit) inside a
 * partition (rollup.c). */
#ifndef FLAMEDB_ROLLUP_H
#define FLAMEDB_ROLLUP_H

#include <lmdb.h>
#include <stdint.h>

#include "pdict.h"
#include "store.h"

#define ROLLUP_LEVELS 2
#define ROLLUP_KEY_LEN 17
extern const int64_t rollup_size_ms[ROLLUP_LEVELS];   /* coarsest first */
int64_t rollup_floor(int64_t t, int64_t size);
void rollup_key(unsigned char key[ROLLUP_KEY_LEN], int level, uint32_t sid, int64_t bucket, uint32_t unit);
void rollup_key_parse(const unsigned char *key, int *level, uint32_t *sid, int64_t *bucket, uint32_t *unit);
/* Adds a profile's pairs (sorted, unweighted) into its buckets in dbi;
 * the value unit is interned in d. */
store_status rollup_add(MDB_txn *txn, MDB_dbi dbi, pdict_w *d, void *zcctx, uint32_t sid, int64_t from_ms,
                        const char *unit, double rate, const uint32_t *nodes, const uint64_t *counts, uint32_t n,
                        uint64_t samples);
/* Deletes sid's rollup buckets wholly older than cutoff_ms (INT64_MAX:
 * all), at most *budget of them (decremented). */
store_status rollup_delete(MDB_cursor *c, uint32_t sid, int64_t cutoff_ms, uint64_t *budget);

#endif
