/* part.h — one time partition: the profiles whose window starts in
 * [start, start + length), with their own dictionaries (frame names, call
 * tree), blocks, segments and rollups, in one LMDB file DATA/parts/YYYYMMDDTHHMMZ.mdb.
 *
 * A partition is a handle that costs nothing until used: its file is opened
 * on first use (part_open), read through LMDB's memory map, and removed by
 * part_drop; the environment stays valid for whoever still holds a
 * reference (part_ref / part_unref) and closes with the last one. */
#ifndef FLAMEDB_PART_H
#define FLAMEDB_PART_H

#include <lmdb.h>
#include <stdint.h>

#include "store.h"

typedef struct part part;
typedef struct pdict_w pdict_w;

/* PART_SEGMENTS (segment.c) came after flamedb-6's first files: opening a
 * file creates it when missing, so older files gain it empty. */
enum { PART_META, PART_STRINGS, PART_NODES, PART_BLOCKS, PART_ROLLUPS, PART_PENDING, PART_SEGMENTS, PART_NDBS };

/* A partition may be split into shards, one file each, written by
 * separate writer threads (writer.c): shard 0 is YYYYMMDDTHHMMZ.mdb, shard
 * k > 0 YYYYMMDDTHHMMZ.k.mdb.  Each shard has its own dictionaries; a
 * reader treats the shards of a start as partitions of the same time. */
#define PART_MAX_SHARDS 64

/* A handle for shard `shard` of the partition starting at start_ms, its
 * file in dir.  Holds one reference. */
part *part_new(const char *dir, int64_t start_ms, int64_t len_ms, int shard);
/* Opens the file (creating it when create is set).  Thread-safe and
 * idempotent. */
store_status part_open(part *p, uint64_t map_size, int fixed_map, int create, char *err, size_t errlen);
int part_is_open(const part *p);
void part_ref(part *p);
void part_unref(part *p);
/* Removes the files now; the environment lives on until the last unref. */
void part_drop(part *p);

/* A number no other partition object of this process has had. */
uint64_t part_token(const part *p);
int64_t part_start(const part *p);
int64_t part_end(const part *p);
int part_shard(const part *p);
const char *part_path(const part *p);
MDB_env *part_env(const part *p);
/* Drops this process's mappings of the file's pages it has touched
 * (env.h: env_map_release); nothing when the file is not open.  Any
 * thread, any time, with readers running. */
void part_release_map(const part *p);
MDB_dbi part_dbi(const part *p, int which);

/* The writer thread's dictionary state of this partition, or NULL when not
 * loaded.  Set only by the writer, under the store's partition lock. */
pdict_w *part_writer(const part *p);
void part_set_writer(part *p, pdict_w *w);

/* "YYYYMMDDTHHMMZ.mdb" for a partition start (years 1970..9999), or
 * "t<start ms>.mdb", with ".<shard>" before ".mdb" for shards above 0; and
 * back.  part_parse_name answers -1 for other names. */
void part_file_name(char *buf, size_t cap, int64_t start_ms, int shard);
int part_parse_name(const char *name, int64_t *start_ms, int *shard);

#endif
