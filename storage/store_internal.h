/* store_internal.h — private to storage/: the store's struct and the
 * helpers its files share.  Nothing outside storage/ includes this.
 *
 * Memory model.  The dictionaries (strings, call-tree nodes, series) live on
 * disk in LMDB and, once opened, also in append-only in-memory tables.  Only
 * the writer thread appends.  A table is a directory of fixed-size chunks
 * that never move, so readers index it without locks; the writer publishes
 * how many entries exist with a release store (`pending` before an LMDB
 * commit, `committed` after it) and readers load those with acquire after
 * opening their LMDB snapshot, so every id a snapshot can reference is
 * already readable.  Entries below `committed` never change. */
#ifndef FLAMEDB_STORE_INTERNAL_H
#define FLAMEDB_STORE_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "store.h"

/* ---- hashing (hash.c) ---- */
uint64_t store_hash_bytes(const void *p, size_t len, uint64_t seed);
static inline uint64_t store_hash_u64(uint64_t x)
{
    x ^= x >> 33; x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33; x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

/* ---- append-only chunked tables (table.c) ---- */
#define TABLE_CHUNK_BITS 16
#define TABLE_CHUNK (1u << TABLE_CHUNK_BITS)
#define TABLE_MAX_CHUNKS 65536u

typedef struct {
    void *chunk[TABLE_MAX_CHUNKS];
    size_t elem;                 /* bytes per entry */
    _Atomic uint32_t pending;    /* entries readable by readers */
    _Atomic uint32_t committed;  /* entries durably committed */
    uint32_t len;                /* entries written by the writer */
} table;

table *table_new(size_t elem);
void table_free(table *t);
/* Makes room for entry i (allocating its chunk); answers NULL on OOM. */
void *table_slot(table *t, uint32_t i);
static inline void *table_at(const table *t, uint32_t i)
{
    return (char *)t->chunk[i >> TABLE_CHUNK_BITS] + (size_t)(i & (TABLE_CHUNK - 1)) * t->elem;
}

/* ---- open-addressing map from a 64-bit key to a non-zero u32 id (idmap.c).
 * Several ids may share a key (a key may be a hash): find iterates them. */
typedef struct { uint64_t key; uint32_t id; } idmap_slot;
typedef struct { idmap_slot *slots; size_t cap, len; } idmap;

int idmap_init(idmap *m, size_t cap);
void idmap_free(idmap *m);
void idmap_clear(idmap *m);
int idmap_put(idmap *m, uint64_t key, uint32_t id);
/* Answers the first id with this key for which eq(ctx, id) is true, or 0. */
uint32_t idmap_find(const idmap *m, uint64_t key, int (*eq)(void *ctx, uint32_t id), void *ctx);

/* ---- arena for bytes that live until close (arena.c) ---- */
typedef struct arena_block arena_block;
typedef struct { arena_block *head; } arena;
void *arena_alloc(arena *a, size_t n);
void arena_free(arena *a);

/* ---- dictionary entries ---- */
typedef struct { const char *ptr; uint32_t len; } str_entry;
typedef struct { uint32_t parent, func; } node_entry;
typedef struct { const uint32_t *pairs; uint32_t n; } series_entry; /* pairs: name id, value id */

typedef struct { uint32_t *ids; uint32_t n, cap; } postings_list;

/* A direct-mapped cache from a stack's frames to its leaf node: the
 * repeated stacks of a fleet cost one hash and one verification walk.  The
 * writer fills it; store_resolve reads it from other threads, so the fields
 * are atomics (relaxed: a torn slot only fails verification). */
typedef struct { _Atomic uint64_t hash; _Atomic uint32_t leaf; } stack_cache_slot;
#define STACK_CACHE_SLOTS (1u << 20)

typedef enum { REQ_WRITE, REQ_RETENTION, REQ_DELETE } req_kind;

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
    struct write_req *next;
} write_req;

struct store {
    MDB_env *env;
    MDB_dbi db_meta, db_strings, db_nodes, db_series, db_blocks, db_rollups;
    char *path;
    store_options opt;

    /* dictionaries: tables readable by all, maps owned by the writer */
    table *strings, *nodes, *series;
    uint32_t strings_open, nodes_open;   /* first id of the open chunk on disk */
    idmap string_map, node_map, series_map;
    stack_cache_slot *stack_cache;
    void *zcctx;                         /* the writer's ZSTD_CCtx, reused */
    arena bytes;

    /* label index: (name id, value id) -> postings list, under index_lock */
    pthread_rwlock_t index_lock;
    idmap postings_map;                  /* key -> index + 1 into postings */
    idmap label_strings;                 /* hash of a label name/value -> string id */
    postings_list *postings;
    uint32_t n_postings, cap_postings;

    /* group commit */
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    write_req *queue_head, *queue_tail;
    int stopping;
    pthread_t writer;
    int64_t next_retention_ms;
    uint32_t retention_sid;              /* where the background pass resumes */

    /* statistics, under lock */
    store_stats stats;
};

/* A point to roll the dictionaries back to when a transaction fails. */
typedef struct { uint32_t strings, nodes, series, postings, strings_open, nodes_open; } dict_mark;

/* dict.c: interning on the writer thread, in memory; dict_disk.c writes
 * what a batch added with dict_flush before the batch commits. */
dict_mark dict_mark_now(store *st);
void dict_rollback(store *st, dict_mark m);
void dict_publish_pending(store *st);
void dict_publish_committed(store *st);
store_status dict_intern_string(store *st, const char *s, uint32_t len, uint32_t *id);
store_status dict_stack_leaf(store *st, const char *frames, uint32_t len, uint32_t *leaf);
store_status dict_flush(store *st, MDB_txn *txn);
int dict_load(store *st, MDB_txn *txn, int nodes, char *err, size_t errlen);
store_status dict_add_loaded_string(store *st, uint32_t id, const void *p, uint32_t len);
store_status dict_add_loaded_node(store *st, uint32_t id, uint32_t parent, uint32_t func);
int dict_rebuild_maps(store *st);

/* series.c: series registry and label index. */
store_status series_intern(store *st, MDB_txn *txn, const store_profile *p, uint32_t *sid);
store_status series_add_loaded(store *st, uint32_t sid, const uint32_t *pairs, uint32_t n);
void series_rollback_index(store *st, uint32_t keep_series);
store_status series_postings_copy(store *st, const char *name, const char *value, uint32_t n_strings,
                                  uint32_t n_series, uint32_t **ids, size_t *n);
int series_rebuild_map(store *st);

/* block.c: the encoded form of a profile's pairs. */
typedef struct {
    uint32_t unit;        /* string id */
    uint32_t n_pairs, n_profiles, raw_len, nodes_bytes;
    int64_t duration_ms;
    double rate;
    uint64_t samples;     /* raw samples behind the block */
    uint64_t count_sum;   /* sum of the counts as stored (weighted, in rollups) */
} block_header;
/* Encodes pairs (nodes ascending, unique) into a malloc'd value; zcctx is
 * a reusable ZSTD_CCtx (or NULL). */
store_status block_encode(const block_header *h, const uint32_t *nodes, const uint64_t *counts,
                          void *zcctx, void **out, size_t *out_len);
/* Parses a value's header; *payload points at the encoded pairs. */
int block_parse_header(const void *val, size_t len, block_header *h,
                       const void **payload, size_t *payload_len, int *compressed);
/* Decodes payload into nodes/counts (capacity h->n_pairs); scratch holds
 * at least h->raw_len bytes when compressed; zctx is a reusable
 * ZSTD_DCtx (or NULL). */
int block_decode(const block_header *h, const void *payload, size_t payload_len, int compressed,
                 void *zctx, char *scratch, uint32_t *nodes, uint64_t *counts);
/* Adds count x weight of every pair into acc[node] and sets the node's bit
 * in touched, in one pass; *sum receives the block's sum x weight.  Node
 * ids must be below n_nodes. */
int block_accumulate(const block_header *h, const void *payload, size_t payload_len, int compressed,
                     void *zctx, char *scratch, uint32_t n_nodes, uint64_t weight,
                     uint64_t *acc, uint64_t *touched, uint64_t *sum);

/* Block keys: series (big-endian u32), window start (big-endian, sign bit
 * flipped so negatives sort first), sequence number for equal starts. */
#define BLOCK_KEY_LEN 16
void block_key(unsigned char key[BLOCK_KEY_LEN], uint32_t sid, int64_t from_ms, uint32_t seq);
void block_key_parse(const unsigned char *key, uint32_t *sid, int64_t *from_ms, uint32_t *seq);

/* rollup.c: pre-merged blocks per (level, series, bucket, unit). */
#define ROLLUP_LEVELS 2
#define ROLLUP_KEY_LEN 17
extern const int64_t rollup_size_ms[ROLLUP_LEVELS];   /* coarsest first */
int64_t rollup_floor(int64_t t, int64_t size);
void rollup_key(unsigned char key[ROLLUP_KEY_LEN], int level, uint32_t sid, int64_t bucket, uint32_t unit);
void rollup_key_parse(const unsigned char *key, int *level, uint32_t *sid, int64_t *bucket, uint32_t *unit);
/* Adds a profile's pairs (sorted, unweighted) into its buckets. */
store_status rollup_add(store *st, MDB_txn *txn, uint32_t sid, int64_t from_ms, const char *unit, double rate,
                        const uint32_t *nodes, const uint64_t *counts, uint32_t n, uint64_t samples);
/* Deletes sid's rollup buckets wholly older than cutoff_ms (INT64_MAX:
 * all), at most *budget of them (decremented). */
store_status rollup_delete(MDB_cursor *c, uint32_t sid, int64_t cutoff_ms, uint64_t *budget);

/* writer.c / retention.c */
void *writer_main(void *arg);
store_status writer_retention_step(store *st, int64_t now_ms, uint32_t budget, uint64_t *deleted, int *finished);
store_status writer_delete_series(store *st, const uint32_t *ids, size_t n, uint64_t *deleted);

void store_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
store_status store_status_of(int mdb_rc);

#endif
