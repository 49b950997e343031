/* pdict.h — a partition's dictionaries: its strings (frame names, units)
 * and its call tree (node = parent node + function string; node 0 is the
 * root, parents have smaller ids).
 *
 * On disk they are laid out for reading straight from the memory map:
 * strings in chunks of PDICT_STR_CHUNK ids (u32 count, u32 offsets, the
 * bytes with a NUL after each string), nodes in chunks of PDICT_NODE_CHUNK
 * fixed {u32 parent, u32 func} entries (8,160 bytes: two 4 KiB pages),
 * keyed by chunk number; the partition's "meta" holds the counts, written
 * in the same transaction as the chunks.  A reader (pdict_r) finds any id
 * with one LMDB lookup per chunk, cached, and no copy: nothing of a closed
 * partition is loaded into memory.
 *
 * The writer thread keeps, for the partitions it writes (pdict_w), maps
 * from content to id: strings and stacks by their 128-bit hash (trusted,
 * hash.h), nodes by (parent, func).  A direct-mapped stack cache, readable
 * from any thread, lets request threads find the leaf of a committed stack
 * before queueing (pdict_w_resolve). */
#ifndef FLAMEDB_PDICT_H
#define FLAMEDB_PDICT_H

#include <lmdb.h>
#include <stdint.h>

#include "hash.h"
#include "store.h"

#define PDICT_STR_CHUNK 256u
#define PDICT_NODE_CHUNK 1020u

/* Writes the partition's meta (start, length, empty counts) when new. */
int pdict_init_meta(MDB_txn *txn, MDB_dbi meta, int64_t start_ms, int64_t len_ms);

/* ---- the writer's state ---- */
typedef struct pdict_w pdict_w;

/* Loads the maps of the dictionaries as txn sees them. */
store_status pdict_w_load(pdict_w **out, MDB_txn *txn, MDB_dbi meta, MDB_dbi strings, MDB_dbi nodes);
void pdict_w_free(pdict_w *w);
store_status pdict_w_string(pdict_w *w, const char *s, uint32_t len, uint32_t *id);
/* The leaf of the stack spelled by frames (root first, ';'-separated),
 * whose 128-bit hash is h, created as needed. */
store_status pdict_w_stack(pdict_w *w, const char *frames, uint32_t len, hash128 h, uint32_t *leaf);
/* Writes what was added since the last flush (chunks and counts). */
store_status pdict_w_flush(pdict_w *w, MDB_txn *txn, MDB_dbi meta, MDB_dbi strings, MDB_dbi nodes);
/* After the commit of everything flushed: those nodes may be resolved. */
void pdict_w_publish(pdict_w *w);
/* Any thread: the committed leaf of the stack with hash h, or 0. */
uint32_t pdict_w_resolve(const pdict_w *w, hash128 h);
uint32_t pdict_w_committed_nodes(const pdict_w *w);
uint32_t pdict_w_nodes(const pdict_w *w);
uint32_t pdict_w_strings(const pdict_w *w);
uint64_t pdict_w_memory(const pdict_w *w);

/* ---- a reader's view, valid while its transaction is ---- */
typedef struct pdict_r pdict_r;

store_status pdict_r_open(pdict_r **out, MDB_txn *txn, MDB_dbi meta, MDB_dbi strings, MDB_dbi nodes);
void pdict_r_free(pdict_r *r);
uint32_t pdict_r_nodes(const pdict_r *r);    /* node ids are below this */
uint32_t pdict_r_strings(const pdict_r *r);  /* string ids are below this */
/* Answers -1 for an id out of range or a damaged chunk. */
int pdict_r_node(pdict_r *r, uint32_t id, uint32_t *parent, uint32_t *func);
/* NUL-terminated, in the map; NULL for an id out of range or damage. */
const char *pdict_r_string(pdict_r *r, uint32_t id, uint32_t *len);

#endif
