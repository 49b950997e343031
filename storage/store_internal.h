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
 *   writer.c     writer threads (one per shard), group commit
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
    int shard;               /* REQ_WRITE: the shard written (store_shard_of), = its writer */
    int new_series;          /* its series is created, or its last partition raised, in this batch */
    struct write_req *next;
} write_req;

/* A writer keeps dictionary maps for this many partitions (the most
 * recently written); the others are read from their files only. */
#define STORE_WRITER_PARTS 2
#define STORE_MAPS_GRACE_MS (INT64_C(3600) * 1000)
/* The file pages a writer lets its commits map before it drops them
 * (writer.c: release_due). */
#define STORE_MAPPED_SLACK ((uint64_t)2 << 20)
#define STORE_MAX_WRITERS 16
/* The latest writes whose origins group commit looks at (writer.c: gather). */
#define STORE_RECENT_ORIGINS 8

/* One writer thread (writer.c) and what it owns: its queue, group-commit
 * state, the shard files it writes (part_shard % n_writers == idx) with
 * their dictionary maps, and its background work on them. */
typedef struct writer {
    struct store *st;
    int idx;
    pthread_t thread;
    int started;
    pthread_cond_t work;                 /* with st->lock */
    write_req *queue_head, *queue_tail;  /* under st->lock */
    /* group commit's arrivals (writer.c: gather), under st->lock */
    uint64_t arrivals;
    double last_arrival, gap_ewma;
    unsigned gather_misses, gather_skip;
    int holding;                         /* in gather: arrivals do not wake it */
    uint64_t recent_origin[STORE_RECENT_ORIGINS]; /* the latest writes' origins (store_profile.origin),
                                          * a ring; a slot of 0: unknown or none yet */
    unsigned n_recent;                   /* writes recorded there, all time */
    /* the writer thread's own */
    void *zcctx;                         /* its ZSTD_CCtx, reused */
    part *wparts[STORE_WRITER_PARTS + 8]; /* parts with writer state, most recent first */
    int n_wparts;
    int64_t newest_write_ms;             /* the latest window start written */
    int64_t next_retention_ms, next_compact_ms;
    int64_t next_reader_check_ms; /* stale LMDB reader slots swept (writer 0) */
    int64_t next_trim_ms;         /* malloc's free memory given back (writer 0) */
    uint64_t mapped_floor;        /* env_mapped_file_bytes after its last release of maps */
    struct rollup_scratch *compact_scratch;
    uint64_t built;                      /* rollup buckets it built */
    int retention_shard;                 /* the background pass resumes in this shard, */
    uint32_t retention_sid;              /* at this series */
} writer;

struct store {
    char *dir, *parts_dir;
    store_options opt;
    int64_t part_ms;
    uint64_t part_map_size;
    int lock_fd;
    catalog *cat;
    pthread_mutex_t cat_lock;            /* writers change the catalog one at a time */

    /* partitions by start, then shard; the array, and each part's writer
     * state pointer, change under parts_lock (write side); readers copy
     * under the read side */
    pthread_rwlock_t parts_lock;
    part **parts;
    size_t n_parts, cap_parts;

    /* the writers; their queues and st->stats under lock */
    writer writers[STORE_MAX_WRITERS];
    int n_writers;
    pthread_mutex_t lock;
    pthread_cond_t done;
    int stopping;

    store_stats stats;                   /* under lock */
};

/* store.c: the partition list.  store_part_at answers shard `shard` of
 * the partition holding time t, creating it (and its file) when create is
 * set; with a reference the caller drops with part_unref. */
part *store_part_at(store *st, int64_t t, int shard, int create, char *err, size_t errlen);
int64_t store_part_floor(const store *st, int64_t t);
/* Copies the partitions overlapping [from, until) with a reference each
 * (all when from > until); answers how many, -1 on OOM. */
ssize_t store_parts_copy(store *st, int64_t from, int64_t until, part ***out);
/* Removes p from the list, drops its file; its owner writer only. */
void store_part_remove(store *st, part *p);
/* Makes room in p's stack table for `more` stacks (store_resolve readers
 * excluded while it grows). */
store_status store_part_reserve_stacks(store *st, part *p, size_t more);
/* Sets or clears (w NULL) p's writer state, freeing the old one. */
void store_part_set_writer(store *st, part *p, pdict_w *w);
/* The shard (and writer) of a profile with these labels: a hash of every
 * label but `type`, so the sample types of one source share a shard and
 * its dictionaries. */
int store_shard_of(const store *st, const store_label *labels, int n);
/* Whether writer w owns p: it alone writes p's file. */
int writer_owns(const writer *w, const part *p);

/* writer.c / retention.c */
void *writer_main(void *arg);
store_status writer_retention_step(writer *w, int64_t now_ms, uint32_t budget, uint64_t *deleted, int *finished);
store_status writer_delete_series(writer *w, const uint32_t *ids, size_t n, uint64_t *deleted);
void writer_forget_part(writer *w, part *p);
/* The writer's maps of p, loaded from txn when needed (NULL, *ss set, on
 * failure); evict_writer_maps keeps the most recent ones only. */
pdict_w *writer_maps(writer *w, part *p, MDB_txn *txn, store_status *ss);
void evict_writer_maps(writer *w);
/* compact.c: one bounded step on w's partitions; *more when closed
 * buckets remain. */
store_status writer_compact_step(writer *w, int64_t now_ms, uint32_t budget, int64_t quiet_ms, int *more);

/* migrate.c: moves a flamedb-4 data.mdb in dir into st (open, writer
 * running); answers 0 when there was nothing to migrate. */
store_status store_migrate_v4(store *st, uint64_t *profiles, char *err, size_t errlen);
int store_has_v4(const char *dir);

#endif
