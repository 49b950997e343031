/* store_internal.h — private to storage/: the store that composes the
 * layers, bottom to top:
 *
 *   varint.h hash.h idmap.h table.h arena.h   containers and codecs, no store
 *   env.c        one LMDB environment (a file and its lock file)
 *   catalog.c    series, label strings, label index (catalog.mdb)
 *   part.c       a time partition: its file, lazy opening, references
 *   pdict.c      a partition's dictionaries: writer maps, reader views
 *   block.c      the block codec          rollup.c   pre-merged buckets
 *   compact.c    building rollups of closed buckets, off the commit path
 *   writer.c     group commit across the catalog and partitions
 *   retention.c  dropping partitions, deleting expired profiles
 *   reader.c     snapshots, scans, and one call tree across partitions
 *   migrate.c    flamedb-4 directories into this format
 *   store.c      opening, closing, the partition list, statistics
 *
 * Each layer reaches the others only through their headers; this file is
 * the store's own state, shared by the files of its top layer. */
#ifndef FLAMEDB_STORE_INTERNAL_H
#define FLAMEDB_STORE_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>

#include "catalog.h"
#include "part.h"
#include "pdict.h"
#include "store.h"

typedef enum { REQ_WRITE, REQ_RETENTION, REQ_DELETE, REQ_COMPACT } req_kind;

typedef struct write_req {
    req_kind kind;
    const store_profile *profile;
    uint32_t series;
    int64_t now_ms;
    const uint32_t *delete_ids;  /* REQ_DELETE: the series */
    size_t n_delete;
    uint64_t deleted;
    store_status status;
    char *err;
    size_t errlen;
    int done;
    store_write_done cb;     /* async: called after the commit, then freed */
    void *cb_ctx;
    char own_err[256];       /* async requests' error text */
    size_t group_left;       /* store_write_async_all: members after this one, queued next */
    struct write_req *next;
} write_req;

/* The writer keeps dictionary maps for this many partitions (the most
 * recently written); the others are read from their files only. */
#define STORE_WRITER_PARTS 2
#define STORE_MAPS_GRACE_MS (INT64_C(3600) * 1000)

struct store {
    char *dir, *parts_dir;
    store_options opt;
    int64_t part_ms;
    uint64_t part_map_size;
    int lock_fd;
    catalog *cat;
    void *zcctx;                         /* the writer's ZSTD_CCtx, reused */

    /* partitions by start; the array, and each part's writer state pointer,
     * change under parts_lock (write side); readers copy under the read side */
    pthread_rwlock_t parts_lock;
    part **parts;
    size_t n_parts, cap_parts;
    part *wparts[STORE_WRITER_PARTS + 8]; /* parts with writer state, most recent first */
    int64_t newest_write_ms;             /* the latest window start written */
    int n_wparts;

    /* group commit */
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    write_req *queue_head, *queue_tail;
    /* group commit's arrivals (writer.c: gather), under lock */
    uint64_t arrivals;
    double last_arrival, gap_ewma;
    unsigned gather_misses, gather_skip;
    int stopping;
    pthread_t writer;
    int64_t next_retention_ms, next_compact_ms;
    int64_t next_reader_check_ms; /* stale LMDB reader slots swept (writer thread) */
    int64_t next_trim_ms;         /* malloc's free memory given back (writer thread) */
    struct rollup_scratch *compact_scratch;
    uint32_t retention_sid;              /* where the background pass resumes */

    store_stats stats;                   /* under lock */
};

/* store.c: the partition list.  store_part_at answers the partition
 * holding time t, creating it (and its file) when create is set; with a
 * reference the caller drops with part_unref. */
part *store_part_at(store *st, int64_t t, int create, char *err, size_t errlen);
int64_t store_part_floor(const store *st, int64_t t);
/* Copies the partitions overlapping [from, until) with a reference each
 * (all when from > until); answers how many, -1 on OOM. */
ssize_t store_parts_copy(store *st, int64_t from, int64_t until, part ***out);
/* Removes p from the list, drops its file; writer thread only. */
void store_part_remove(store *st, part *p);
/* Makes room in p's stack table for `more` stacks (store_resolve readers
 * excluded while it grows). */
store_status store_part_reserve_stacks(store *st, part *p, size_t more);
/* Sets or clears (w NULL) p's writer state, freeing the old one. */
void store_part_set_writer(store *st, part *p, pdict_w *w);

/* writer.c / retention.c */
void *writer_main(void *arg);
store_status writer_retention_step(store *st, int64_t now_ms, uint32_t budget, uint64_t *deleted, int *finished);
store_status writer_delete_series(store *st, const uint32_t *ids, size_t n, uint64_t *deleted);
void writer_forget_part(store *st, part *p);
/* The writer's maps of p, loaded from txn when needed (NULL, *ss set, on
 * failure); evict_writer_maps keeps the most recent ones only. */
pdict_w *writer_maps(store *st, part *p, MDB_txn *txn, store_status *ss);
void evict_writer_maps(store *st);
/* compact.c: one bounded step; *more when closed buckets remain. */
store_status writer_compact_step(store *st, int64_t now_ms, uint32_t budget, int *more);

/* migrate.c: moves a flamedb-4 data.mdb in dir into st (open, writer
 * running); answers 0 when there was nothing to migrate. */
store_status store_migrate_v4(store *st, uint64_t *profiles, char *err, size_t errlen);
int store_has_v4(const char *dir);

#endif
