/* rmem.h — private to storage/: what reader.c asks of a remote reader's
 * catalog (rcat.c) and loaded data (rmem.c); remote.h is the public side. */
#ifndef FLAMEDB_RMEM_H
#define FLAMEDB_RMEM_H

#include <stddef.h>
#include <stdint.h>

#include "remote.h"

/* ---- the catalog (sealed) ---- */
int rcat_labels(const store_rcat *c, uint32_t sid, store_label *out, int max);
const char *rcat_label(const store_rcat *c, uint32_t sid, const char *name);
store_status rcat_postings(const store_rcat *c, const char *name, const char *value, uint32_t **ids, size_t *n);
int rcat_name_known(const store_rcat *c, const char *name);

/* ---- a reader's loaded data ---- */
store_rmem *rmem_new(const store_rcat *cat);
void rmem_free(store_rmem *m);
/* Node ids are below rmem_nodes, string ids below rmem_strings; node 0 is
 * the root, string 0 "". */
uint32_t rmem_nodes(const store_rmem *m);
uint32_t rmem_strings(const store_rmem *m);
int rmem_node(const store_rmem *m, uint32_t id, uint32_t *parent, uint32_t *func);
const char *rmem_string(const store_rmem *m, uint32_t id, uint32_t *len);

/* One loaded profile: a block value (block.h) of the loaded partition. */
typedef struct {
    int64_t from_ms, until_ms;
    const void *val;
    size_t len;
} rmem_block;
/* Series sid's loaded profiles in time order (equal starts in load
 * order); *n their number. */
const rmem_block *rmem_blocks(store_rmem *m, uint32_t sid, size_t *n);

/* Load bookkeeping: the parts of [from, until) not loaded for sid, as at
 * most max ranges in time order (answers how many), and marking a range
 * loaded.  rmem_loaded answers -1 when memory ran out. */
typedef struct { int64_t from, until; } rmem_range;
size_t rmem_missing(const store_rmem *m, uint32_t sid, int64_t from, int64_t until, rmem_range *out, size_t max);
int rmem_loaded(store_rmem *m, uint32_t sid, int64_t from, int64_t until);
/* Merged blocks of sid over exactly [from, until), once loaded (an empty
 * list when the range held nothing): NULL while not loaded. */
const rmem_block *rmem_merged_blocks(const store_rmem *m, uint32_t sid, int64_t from, int64_t until, size_t *n);
/* Marks [from, until) merged for sid (its blocks, if any, were added by
 * store_rmem_merged); -1 when memory ran out. */
int rmem_merged_done(store_rmem *m, uint32_t sid, int64_t from, int64_t until);
/* Whether sid has a profile in [from, until), as its source said: 1, 0,
 * or -1 while not asked. */
int rmem_presence(const store_rmem *m, uint32_t sid, int64_t from, int64_t until);
int rmem_set_presence(store_rmem *m, uint32_t sid, int64_t from, int64_t until, int present);
/* A series' extent, once asked (rmem_extent answers 0 while unknown). */
int rmem_extent(const store_rmem *m, uint32_t sid, store_rextent *out);
void rmem_set_extent(store_rmem *m, uint32_t sid, const store_rextent *e);
/* Bytes held. */
uint64_t rmem_memory(const store_rmem *m);

#endif
