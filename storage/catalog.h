/* catalog.h — the store's catalog: every series (a sorted label set) with
 * an id, the label strings, and the label index.  One small LMDB file
 * (DATA/catalog.mdb) that also holds the format and the partition length.
 * Series ids are global: the same series keeps its id in every time
 * partition.  The catalog is read into memory at open; only writer
 * threads change it, one at a time (holding the store's cat_lock).
 *
 * Series expire.  Each series records the start of the newest partition it
 * was written to (`last`, committed before any block of that partition
 * names it).  Once retention has dropped every partition up to that one,
 * the series has no profile left anywhere and catalog_expire drops it with
 * its postings and every label string no live series uses.  Ids are never
 * reused: a series pushed again after it expired gets a new id.  Readers
 * pin the catalog's in-memory generation they began with (catalog_snap),
 * so what they read stays valid until they end. */
#ifndef FLAMEDB_CATALOG_H
#define FLAMEDB_CATALOG_H

#include <lmdb.h>
#include <stdint.h>

#include "store.h"

#define CATALOG_FORMAT "flamedb-7"
/* flamedb-6 differs only in what its partitions may hold: dictionaries of
 * format 1 and segments of version 1, both still read and appended to
 * (pdict.h, segment.h).  Its catalog is marked flamedb-7 at open, so that a
 * flamedb-6 binary refuses a directory that may hold format-2 dictionaries
 * or version-2 segments instead of misreading them. */
#define CATALOG_FORMAT_V6 "flamedb-6"
/* flamedb-5 differs only in its blocks (version 1: no samples, no gauges)
 * and is upgraded in place: its rollups are rebuilt (store.c). */
#define CATALOG_FORMAT_V5 "flamedb-5"

typedef struct catalog catalog;
typedef struct cat_gen cat_gen;

/* Opens or creates the catalog in file path.  A new catalog stores
 * *part_ms; an existing one answers its own in *part_ms.  *was_v5 is set
 * when the catalog is of format flamedb-5 (catalog_set_format ends the
 * upgrade). */
store_status catalog_open(catalog **out, const char *path, uint64_t map_size, int fixed_map, int64_t *part_ms,
                          int *was_v5, char *err, size_t errlen);
/* Writes CATALOG_FORMAT, durably. */
store_status catalog_set_format(catalog *c);
void catalog_close(catalog *c);

/* ---- the writers: one at a time (store.c: cat_lock) ---- */
typedef struct { uint32_t strings, series, strings_open, next_sid; } catalog_mark;
catalog_mark catalog_mark_now(const catalog *c);
/* Forgets everything added after m (a failed transaction). */
void catalog_rollback(catalog *c, catalog_mark m);
/* The id of the series with these labels (sorted by name, unique),
 * created in txn when new; its `last` raised to part_start in txn when
 * lower. */
store_status catalog_series_intern(catalog *c, MDB_txn *txn, const store_label *labels, int n, int64_t part_start,
                                   uint32_t *sid);
/* The id of the series with these labels, or 0 when it has none; *last
 * receives the start of the newest partition it was written to. */
uint32_t catalog_series_find(const catalog *c, const store_label *labels, int n, int64_t *last);
/* Writes the label strings added since the last flush. */
store_status catalog_flush(catalog *c, MDB_txn *txn);
/* Before the commit: readers may see the new strings; after it: the new
 * series too. */
void catalog_publish_pending(catalog *c);
void catalog_publish_committed(catalog *c);
/* A transaction on the catalog's environment. */
int catalog_txn_begin(catalog *c, MDB_txn **txn);
/* Frees the reader slots of dead processes (mdb_reader_check). */
void catalog_reader_check(catalog *c);
/* Series whose `last` is unknown (a catalog written before series
 * expired) get `last`, durably: at open, the newest partition's start. */
store_status catalog_fill_last(catalog *c, int64_t last);
/* Drops every series whose last partition started before keep_from, with
 * its postings and the label strings only dropped series used, in one
 * transaction; the strings are renumbered (ids are the catalog's own), the
 * series keep theirs.  When the file is then mostly free pages it is
 * copied without them.  *dropped: how many went. */
store_status catalog_expire(catalog *c, int64_t keep_from, uint32_t *dropped);

/* ---- readers (any thread) ---- */
/* What a reader sees: the generation it pinned and the series and strings
 * published when it began. */
typedef struct {
    cat_gen *gen;
    uint32_t n_pos;      /* series positions visible: 1..n_pos-1 */
    uint32_t n_strings;  /* string ids visible: below this */
} catalog_snap;
catalog_snap catalog_snap_begin(catalog *c);
void catalog_snap_end(catalog *c, catalog_snap *s);
/* The largest id visible (0 when none), and the first id above sid (0
 * when none): ids have gaps where series expired. */
uint32_t catalog_series_max(const catalog_snap *s);
uint32_t catalog_series_next(const catalog_snap *s, uint32_t sid);
int catalog_series_labels(const catalog_snap *s, uint32_t sid, store_label *out, int max);
const char *catalog_series_label(const catalog_snap *s, uint32_t sid, const char *name);
store_status catalog_postings(const catalog_snap *s, const char *name, const char *value, uint32_t **ids, size_t *n);
/* 1 when some series of the snapshot carries a label of this name (what
 * tells series labels from sample labels: store_label_name_known). */
int catalog_name_known(const catalog_snap *s, const char *name);

/* The live series committed, and the bytes the catalog holds in memory
 * (entries, maps, label bytes, postings). */
uint32_t catalog_series_count(catalog *c);
uint64_t catalog_memory(catalog *c);

#endif
