/* catalog.h — the store's catalog: every series (a sorted label set) with
 * a dense id, the label strings, and the label index.  One small LMDB file
 * (DATA/catalog.mdb) that also holds the format and the partition length.
 * Series ids are global: the same series keeps its id in every time
 * partition.  The catalog is read into memory at open; only writer
 * threads change it, one at a time (holding the store's cat_lock). */
#ifndef FLAMEDB_CATALOG_H
#define FLAMEDB_CATALOG_H

#include <lmdb.h>
#include <stdint.h>

#include "store.h"

#define CATALOG_FORMAT "flamedb-6"
/* flamedb-5 differs only in its blocks (version 1: no samples, no gauges)
 * and is upgraded in place: its rollups are rebuilt (store.c). */
#define CATALOG_FORMAT_V5 "flamedb-5"

typedef struct catalog catalog;

/* Opens or creates the catalog in file path.  A new catalog stores
 * *part_ms; an existing one answers its own in *part_ms.  *was_v5 is set
 * when the catalog is of format flamedb-5 (catalog_set_format ends the
 * upgrade). */
store_status catalog_open(catalog **out, const char *path, uint64_t map_size, int fixed_map, int64_t *part_ms,
                          int *was_v5, char *err, size_t errlen);
/* Writes CATALOG_FORMAT, durably. */
store_status catalog_set_format(catalog *c);
void catalog_close(catalog *c);
MDB_env *catalog_env(catalog *c);

/* ---- the writers: one at a time (store.c: cat_lock) ---- */
typedef struct { uint32_t strings, series, postings, strings_open; } catalog_mark;
catalog_mark catalog_mark_now(const catalog *c);
/* Forgets everything added after m (a failed transaction). */
void catalog_rollback(catalog *c, catalog_mark m);
/* The id of the series with these labels (sorted by name, unique),
 * created in txn when new. */
store_status catalog_series_intern(catalog *c, MDB_txn *txn, const store_label *labels, int n, uint32_t *sid);
/* The id of the series with these labels, or 0 when it has none yet. */
uint32_t catalog_series_find(const catalog *c, const store_label *labels, int n);
/* Writes the label strings added since the last flush. */
store_status catalog_flush(catalog *c, MDB_txn *txn);
/* Before the commit: readers may see the new strings; after it: the new
 * series too. */
void catalog_publish_pending(catalog *c);
void catalog_publish_committed(catalog *c);

/* ---- readers (any thread) ---- */
uint32_t catalog_series_committed(const catalog *c);  /* series ids are below this */
uint32_t catalog_strings_pending(const catalog *c);   /* string ids are below this */
int catalog_series_labels(const catalog *c, uint32_t sid, store_label *out, int max);
const char *catalog_series_label(const catalog *c, uint32_t sid, const char *name);
store_status catalog_postings(catalog *c, const char *name, const char *value, uint32_t n_strings,
                              uint32_t n_series, uint32_t **ids, size_t *n);
/* 1 when some series carries a label of this name (sample labels: store_label_name_known). */
int catalog_name_known(catalog *c, const char *name, uint32_t n_strings);
uint64_t catalog_memory(const catalog *c);

#endif
