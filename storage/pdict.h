/* pdict.h — a partition's dictionaries: its strings (frame names, units)
 * and its call tree (node = parent node + function string; node 0 is the
 * root, parents have smaller ids).
 *
 * On disk they are chunks of consecutive ids keyed by chunk number, so a
 * reader finds any id with one LMDB lookup per chunk, decoded once per
 * chunk on a reader's first touch.  The partition's "meta" holds the
 * counts, written in the same transaction as the chunks, and the format of
 * its chunks ("dict", a u32; absent means 1).  Nothing of a partition is
 * loaded when it is opened.
 *
 *   Format 1 (flamedb-6's first files; still read, and still written to a
 *   partition that has it): 256 strings a chunk (u32 count, u32 offsets,
 *   the bytes with a NUL after each), read in place from the memory map;
 *   1,024 nodes a chunk, varint (id - parent) and varint function (3-4
 *   bytes a node).  A chunk is one LMDB value of 3-24 KB: whole overflow
 *   pages, and no checksum.
 *
 *   Format 2 (partitions made since): 1,024 strings and 8,192 nodes a
 *   chunk, each value u8 flags (1: zstd), u32 checksum (low 32 bits of
 *   XXH3-64 of every byte after it, seeded with the kind, the chunk
 *   number and the flags), varint payload length, the payload, zstd-compressed once
 *   the chunk is complete (level 3 for strings, 1 for nodes); the open
 *   chunk, rewritten at every flush that adds to it, stays plain until
 *   its partition's time is over (pdict_finish, from compaction).
 *   Strings: the payload is format 1's chunk.  Nodes: per node
 *   varint (function << 1 | 1) when its parent is the node before it (96 %
 *   of nodes), else varint (function << 1) and varint (id - parent).
 *   Measured on gen_pprof.py's call tree (448 k nodes, 5,000 functions of
 *   ~90 bytes with their locations): nodes 1.79 MB in pages -> 0.91,
 *   strings 0.48 -> 0.08 (bench/README.md, "Dictionaries compressed").
 *
 * The writer thread keeps, for the partitions it writes (pdict_w), maps
 * from content to id: strings and stacks by their 128-bit hash (trusted,
 * hash.h; a stack's may be a caller's key of its text instead,
 * store_profile.hashes: ingest/pprof.c's text later), nodes by (parent,
 * func).  Strings and nodes are idsets (ids and
 * 8-bit hash fragments in 4-byte slots below 2^24 ids, 1/2 to 3/4 full)
 * over the keys kept once by id: strings' hashes in an append-only chunked
 * table (table.h: 16 bytes a string, never copied as it grows), nodes in a
 * nodetab (nodetab.h: 4 bytes a node and its parent only when it is not
 * the node before, ~4.8 bytes a node on bench_fleet's tree): 10 to 13
 * bytes a node, against 15 to 18 with 5-byte slots and (parent, func) in
 * 8 bytes, 19 to 37 with 8-byte slots and arrays grown by doubling, and
 * 40-70 for maps holding whole keys at half load.  A table of every stack met, readable
 * from any thread, lets request threads find the leaf of a committed stack
 * before queueing (pdict_w_resolve): 20-byte slots, 1/2 to 3/4 full.  It is
 * exact, not a cache: with a lossy cache two colliding stacks of one
 * profile (a few in every 1,000 stacks with 2^18 slots) sent the whole
 * profile back to the writer.  pdict_w_memory counts what the maps have
 * allocated. */
#ifndef FLAMEDB_PDICT_H
#define FLAMEDB_PDICT_H

#include <lmdb.h>
#include <stdint.h>

#include "hash.h"
#include "store.h"

#define PDICT_FORMAT 2 /* written to new partitions */

/* Writes the partition's meta (start, length, empty counts, the format)
 * when new. */
int pdict_init_meta(MDB_txn *txn, MDB_dbi meta, int64_t start_ms, int64_t len_ms);

/* Format 2: compresses the last (open) chunks when plain, once the
 * partition takes no more profiles in the ordinary course (a late one
 * makes them plain again, until the next call).  *changed when it wrote. */
store_status pdict_finish(MDB_txn *txn, MDB_dbi meta, MDB_dbi strings, MDB_dbi nodes, int *changed);

/* ---- the chunk codec (check.c verifies with it) ---- */

/* The partition's format from its meta: 1 when it has none; an LMDB code,
 * or MDB_INCOMPATIBLE for a value this build does not know. */
int pdict_format(MDB_txn *txn, MDB_dbi meta, int *fmt);
uint32_t pdict_str_chunk(int fmt);  /* strings a chunk */
uint32_t pdict_node_chunk(int fmt); /* nodes a chunk */
/* A format-2 chunk value (kind 'S' strings, 'N' nodes) of chunk ck with
 * the payload raw[0..len), compressed at zstd level when that makes it
 * smaller (0: stored plain); malloc'd into *out.  ENOMEM or 0. */
int pdict_chunk_seal(char kind, uint32_t ck, const void *raw, size_t len, int level, unsigned char **out,
                     size_t *out_len);
/* Format 1's string layout of chunk ck's value v: v itself (format 1), or
 * the payload checked and decompressed into *owned (format 2: the caller
 * frees it; zctx a reusable ZSTD_DCtx or NULL).  NULL, with why, when the
 * checksum or the decompression fails; the layout is not checked. */
const unsigned char *pdict_str_chunk_open(int fmt, uint32_t ck, const MDB_val *v, void *zctx, size_t *len,
                                          unsigned char **owned, char *why, size_t whylen);
/* Decodes node chunk ck (n nodes, from id ck * pdict_node_chunk(fmt)) into
 * pf: parent, function per node.  Checks each: the root first with
 * function 0, every other parent below its node, functions below
 * n_strings, nothing after the last node.  -1, with why, when not. */
int pdict_node_chunk_decode(int fmt, uint32_t ck, const MDB_val *v, uint32_t n, uint32_t n_strings, void *zctx,
                            uint32_t *pf, char *why, size_t whylen);

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
/* The stack table needs room for `more` stacks: grow it, excluding every
 * pdict_w_resolve meanwhile (the caller's lock). */
int pdict_w_stacks_full(const pdict_w *w, size_t more);
store_status pdict_w_stacks_grow(pdict_w *w, size_t more);
/* Any thread: the committed leaf of each stack of hashes h[0..n), or 0. */
void pdict_w_resolve(const pdict_w *w, const hash128 *h, size_t n, uint32_t *leaves);
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
