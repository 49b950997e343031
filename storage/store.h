/* store.h — the public face of storage/: the LMDB environment and the
 * on-disk format of flamedb.
 *
 * Model.  A series is a sorted set of labels, with a global id.  A profile
 * is a series, a time window [from, until), a unit, an optional sampling
 * rate and stacks with counts.  Profiles live in time partitions (a day by
 * default) by the start of their window; each partition interns its own
 * frame names and call tree (node = parent node + function, parents have
 * smaller ids), so a stored profile is a list of (node id, count) pairs of
 * its partition: its block.  Readers see one call tree across partitions:
 * the node and string ids a reader answers are the reader's own, built as
 * it merges.  See docs/ARCHITECTURE.md for the layout on disk.
 *
 * Writes go through writer threads, each committing the profiles of
 * concurrent callers in one LMDB transaction (group commit) to its own
 * shard of the partition (a file with its own dictionaries: a profile's
 * shard is chosen by its labels, store_shard_of); store_write returns only
 * once its profile is durable, or failed and left no trace.
 *
 * Reads take a store_reader: read snapshots of the partitions it touches
 * plus the catalog, valid until store_reader_end.  Readers never block
 * writers.  Label strings, frame names and units stay valid until
 * store_reader_end. */
#ifndef FLAMEDB_STORE_H
#define FLAMEDB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"

typedef struct store store;
typedef struct store_reader store_reader;
typedef struct store_part store_part;   /* a reader's view of one partition */
typedef struct store_prep store_prep;   /* a profile's block, made off the writer thread */

typedef enum {
    STORE_OK = 0,
    STORE_EINVAL,   /* the caller's input is wrong */
    STORE_EFULL,    /* the map or the disk is full */
    STORE_EIO,      /* LMDB or the file system failed */
    STORE_ECLOSED,  /* the store is shutting down */
    STORE_ENOMEM
} store_status;

typedef struct {
    const char *name;
    const char *value;
} store_label;

typedef struct {
    const char *frames;  /* root-first frames joined by ';' (no NUL needed) */
    uint32_t len;
    uint64_t count;      /* > 0 */
} store_stack;

/* What a profile knows of the samples behind its values.  Statistics
 * (intervals, z-tests) need the number of samples, which is not the value
 * of a profile in nanoseconds or bytes. */
typedef enum {
    STORE_SAMPLES_COUNTS = 0,   /* the counts are samples: samples = their sum */
    STORE_SAMPLES_GIVEN,        /* store_profile.samples says how many */
    STORE_SAMPLES_UNKNOWN       /* nobody knows: answers carry no intervals */
} store_samples_kind;

typedef struct {
    const store_label *labels;  /* sorted by name, unique */
    int n_labels;
    int64_t from_ms, until_ms;
    double rate;                /* Hz, 0 = none */
    const char *unit;
    const store_stack *stacks;
    size_t n_stacks;
    const uint32_t *leaves;     /* optional: store_resolve's answer for stacks */
    uint64_t part_token;        /* with leaves: what store_resolve answered */
    const store_prep *prep;     /* optional: store_prepare's block */
    store_samples_kind samples_kind;
    uint64_t samples;           /* with STORE_SAMPLES_GIVEN: > 0 */
    int gauge;                  /* a snapshot (heap in use, goroutines): averaged over time */
    const hash128 *hashes;      /* optional: hashes[i] identifies stacks[i]'s frames, taken by the
                                 * caller (the writer then hashes no new stack again): hash_bytes128
                                 * of them, or any 128-bit key of which equal values mean equal text
                                 * (ingest/pprof.c's keys); the stack table is by these */
    void (*write_text)(void *ctx); /* optional: the stacks with leaves hold no text yet (only their
                                 * hashes); the writer calls this first when it cannot use the
                                 * leaves (another partition), to have every stack's text written */
    void *write_text_ctx;
    uint64_t origin;            /* optional, for group commit: who sent it, where one origin sends its
                                 * next write only once this one is answered (the server passes its
                                 * HTTP connection: HTTP/1.1 answers a connection's requests in
                                 * order); 0 = unknown.  A writer never holds a commit for more
                                 * writes when every recent write came from an origin already in
                                 * the batch (writer.c: gather) */
} store_profile;

typedef struct {
    const char *dir;              /* created if missing */
    uint64_t map_size;            /* LMDB map size in bytes; 0 = 1 TiB */
    int64_t retention_ms;         /* delete profiles older than this; 0 = keep */
    int64_t retention_every_ms;   /* how often retention runs; 0 = 60 s */
    int64_t partition_ms;         /* partition length of a new store, whole hours; 0 = 1 day.
                                     An existing store keeps its own (store_partition_ms) */
    int commit_wait_ms;           /* group commit: how long the writer may hold a batch for
                                     requests that are on their way (writer.c); 0 = never */
    int writers;                  /* writer threads, each with its shard of every partition it
                                     writes; 0 = store_default_writers(); at most 16 */
} store_options;

/* Half the online cores, 1 to 8: the writers a store gets by default. */
int store_default_writers(void);

/* The data directory's layout: LOCK, catalog.mdb, parts/<start>.mdb.  A
 * flamedb-4 directory (one data.mdb) is migrated by store_open. */

/* Opens (creating) the store in opt->dir and starts its writer thread.
 * Takes an exclusive lock on the directory (a second opener fails at once,
 * naming the holder's pid); migrates a flamedb-4 directory first. */
store_status store_open(store **out, const store_options *opt, char *err, size_t errlen);

/* The format this flamedb writes ("flamedb-7"). */
const char *store_format(void);

/* The partition length of the open store, in ms. */
int64_t store_partition_ms(const store *st);
/* The number of writer threads of the open store. */
int store_writers(const store *st);

/* Finishes queued writes, stops the writer threads, closes LMDB. */
void store_close(store *st);

/* Optional, on the caller's thread before a write of a profile with these
 * labels starting at from_ms: finds the call-tree node of every stack that
 * its partition shard has already committed (leaves[i], or 0 when
 * unknown), so that, passed as profile.leaves, the writer thread only has
 * to intern the new ones.  A stack is known by its 128-bit hash.  For
 * store_write_async_all, pass the first profile's labels for all (a group
 * goes to the first one's shard).  Safe from any number of threads while
 * the writers run. */
uint64_t store_resolve(store *st, const store_label *labels, int n_labels, int64_t from_ms, const store_stack *stacks,
                       size_t n, uint32_t *leaves);
/* The same with the stacks' hashes given (hashes[i] = hash_bytes128 of
 * stack i's frames, storage/hash.h, or another key of them, as
 * store_profile.hashes), as a decoder that takes them while it writes
 * each stack's text, still in cache, or without writing it, can: the text
 * is not read (issue 11, point 6). */
uint64_t store_resolve_hashed(store *st, const store_label *labels, int n_labels, int64_t from_ms,
                              const hash128 *hashes, size_t n, uint32_t *leaves);
/* store_resolve answers a token naming the partition the leaves belong to
 * (0 when none was known); pass it as profile.part_token.  The writer uses
 * the leaves only if that partition is still the one the profile goes to
 * (retention may have dropped it meanwhile). */

/* Optional, after store_resolve found every stack: sorts the pairs, sums
 * duplicates and encodes the block on the caller's thread, so that, passed
 * as profile.prep, the writer only frames and puts it.  NULL when some
 * stack is new (the writer then does it) or memory ran out.  Free with
 * store_prep_free once the write is done. */
store_prep *store_prepare(const store_profile *p);
void store_prep_free(store_prep *p);

/* Stores one profile durably.  Thread-safe; blocks until committed.
 * *series_id receives the profile's series (may be NULL). */
store_status store_write(store *st, const store_profile *p, uint32_t *series_id,
                         char *err, size_t errlen);

/* Called on its writer thread once the profile is durable (STORE_OK), or
 * failed and left no trace.  err is valid only during the call; keep the
 * callback short (it delays the next group commit). */
typedef void (*store_write_done)(void *ctx, store_status ss, uint32_t series_id, const char *err);

/* Queues one profile and returns at once; done runs exactly once, unless
 * this returns an error (then it never runs).  p and everything it points
 * to must stay valid until done has run. */
store_status store_write_async(store *st, const store_profile *p, store_write_done done, void *ctx);

/* Queues n profiles that are stored all or none (the sample types of one
 * pprof file): they share one transaction, so a failure of any leaves no
 * trace of the others.  They must start in the same time partition, and
 * go to the first one's shard.  done runs once a profile, all with the
 * same status. */
store_status store_write_async_all(store *st, const store_profile *const *p, size_t n, store_write_done done,
                                   void *const *ctx);

/* Runs retention now (also done in the background); answers the number of
 * profiles deleted.  Thread-safe. */
store_status store_retention_run(store *st, int64_t now_ms, uint64_t *deleted);

/* Builds the rollups of every bucket closed at now_ms (also done in the
 * background); answers how many were built.  Thread-safe. */
store_status store_compact_run(store *st, int64_t now_ms, uint64_t *built);

/* Deletes every profile of the given series (their label sets stay in the
 * catalog, and come back to life if pushed again, until retention drops
 * their last partition: then they expire);
 * answers how many profiles went.  Thread-safe; returns once durable. */
store_status store_delete_series(store *st, const uint32_t *ids, size_t n, uint64_t *deleted);

/* ---- reading --------------------------------------------------------- */

store_status store_reader_begin(store *st, store_reader **out);
void store_reader_end(store_reader *r);
/* A time the reader's work should end by (CLOCK_MONOTONIC, ms; 0 none).
 * Scans do not stop by themselves (a cut scan would be a wrong answer):
 * the loops of a query ask store_reader_expired and give up whole. */
void store_reader_set_deadline(store_reader *r, int64_t mono_ms);
/* More limits of the same kind: a budget of (stack, count) pairs that scans
 * may hand out (0: none; rollups count as their stored pairs), and a
 * function asked now and then whether the reader's client is gone (a
 * closed connection: the answer would go nowhere). */
void store_reader_set_max_pairs(store_reader *r, uint64_t max_pairs);
void store_reader_set_cancel(store_reader *r, int (*gone)(void *ctx), void *ctx);
/* 1 once the work should end: the deadline passed, the pairs budget is
 * spent or the client is gone.  Any thread. */
int store_reader_expired(store_reader *r);
typedef enum {
    STORE_STOP_NONE = 0, STORE_STOP_DEADLINE, STORE_STOP_PAIRS, STORE_STOP_GONE,
    STORE_STOP_REMOTE,   /* a remote reader's load failed (remote.h: store_reader_error) */
    STORE_STOP_REASONS   /* how many values above: arrays counting them */
} store_stop;
/* Why store_reader_expired said so (STORE_STOP_NONE while it did not). */
store_stop store_reader_stopped(const store_reader *r);
/* The pairs scans handed out so far, and the budget. */
uint64_t store_reader_pairs(const store_reader *r);
uint64_t store_reader_max_pairs(const store_reader *r);
/* CLOCK_MONOTONIC in ms, the clock of deadlines. */
int64_t store_mono_ms(void);

/* Series ids are 1..store_series_max(r), with gaps: a series expires
 * (leaves the catalog, its postings and its label strings) once retention
 * has dropped the last partition holding its profiles, and ids are never
 * reused (pushed again, it comes back with a new id).  store_series_next
 * answers the first id above sid (0: none), for walks over every series. */
uint32_t store_series_max(const store_reader *r);
uint32_t store_series_next(const store_reader *r, uint32_t sid);
/* How many series the reader sees. */
uint32_t store_series_count(const store_reader *r);

/* Copies up to max labels of series sid (sorted by name) into out and
 * answers how many the series has. */
int store_series_labels(const store_reader *r, uint32_t sid, store_label *out, int max);

/* The value of label name on series sid, or NULL. */
const char *store_series_label(const store_reader *r, uint32_t sid, const char *name);

/* The ids of the series carrying name=value, ascending, as a malloc'd array
 * the caller frees (NULL with *n = 0 when none). */
store_status store_postings(const store_reader *r, const char *name, const char *value,
                            uint32_t **ids, size_t *n);

/* One stored profile's header.  data is only valid inside the scan
 * callback. */
typedef struct {
    uint32_t series;
    int64_t from_ms, until_ms;
    double rate;            /* Hz, 0 = none */
    const char *unit;
    uint64_t samples;       /* samples behind the block (0 when not known) */
    int samples_known;      /* 0: some profile of the block did not say */
    int gauge;              /* snapshots: a merge over time averages them */
    uint64_t counts;        /* sum of its counts as stored: times the weight
                               of store_value_unit, the block's value */
    uint32_t n_pairs;       /* distinct stacks */
    uint32_t n_profiles;    /* profiles merged into this block */
    const void *data;       /* the encoded pairs */
    size_t data_len;
    uint32_t raw_len;       /* decoded size of data */
    store_part *part;       /* the partition it lives in: its node ids are that partition's */
} store_block;

/* The unit a profile's values are answered in, and the weight of one
 * count: a `samples` profile with a sampling rate is answered in CPU time,
 * each count weighing round(1e9 / rate) nanoseconds, so profiles taken at
 * different frequencies add up.  Other profiles weigh 1 in their own unit. */
const char *store_value_unit(const char *unit, double rate, uint64_t *weight);

/* Calls fn for every block of series sid whose window starts in
 * [from_ms, until_ms), in time order.  fn answers 0 to go on, non-zero to
 * stop (that value is returned). */
typedef int (*store_block_fn)(const store_block *b, void *ctx);
int store_blocks_scan(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms,
                      store_block_fn fn, void *ctx);

/* Like store_blocks_scan, but where whole rollup buckets (1 h, 10 min) lie
 * inside the range, calls fn once per pre-merged bucket instead of once per
 * profile: values already weighted (rate 0, unit as store_value_unit
 * says), n_profiles > 1, from/until the bucket's.  The blocks together hold
 * exactly the profiles starting in [from_ms, until_ms).  For merges; not
 * for answers that need each profile's own time. */
int store_blocks_scan_merged(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms,
                             store_block_fn fn, void *ctx);
/* Rollups on (default) or off for this reader: off, scans are raw. */
void store_reader_use_rollups(store_reader *r, int on);
/* Frames with their locations (file, line, mapping: storage/frame.h) as
 * distinct call-tree nodes, names being whole frame texts; off (default),
 * a reader's tree and names are by function name alone, so stacks that
 * differ only in line merge.  Set before the first merge. */
void store_reader_lines(store_reader *r, int on);

/* Answers 1 when series sid has a block starting in [from_ms, until_ms). */
int store_series_has_blocks(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms);

/* The window of series sid's newest profile (latest start; of equal
 * starts, the last stored) among those starting at or after since_ms:
 * answers 1 and fills *from_ms, *until_ms, or 0 when there is none.  Reads
 * block keys and one block header, never a block's pairs: partitions are
 * walked newest first, one cursor seek each, down to the first that holds
 * the series (partitions ending at or before since_ms are not opened). */
int store_series_last(store_reader *r, uint32_t sid, int64_t since_ms, int64_t *from_ms, int64_t *until_ms);
/* Its mirror: the oldest profile (earliest start; of equal starts, the
 * first stored) among those starting before before_ms, partitions walked
 * oldest first. */
int store_series_first(store_reader *r, uint32_t sid, int64_t before_ms, int64_t *from_ms, int64_t *until_ms);

/* Decodes a block's pairs into reader-owned arrays, valid until the next
 * call on this reader: node ids ascending, counts > 0. */
store_status store_block_pairs(store_reader *r, const store_block *b,
                               const uint32_t **nodes, const uint64_t **counts,
                               uint32_t *n);

/* Adds the block's counts times weight into acc[node] and sets each node's
 * bit in the bitmap touched, with node ids of the block's partition (acc
 * has at least store_part_nodes(b->part) entries); *sum receives the
 * block's total times weight.  One pass, no intermediate arrays: the inner
 * loop of a merge.  store_part_node turns the partition's ids into the
 * reader's. */
store_status store_block_accumulate(store_reader *r, const store_block *b, uint64_t weight,
                                    uint64_t *acc, uint64_t *touched, uint64_t *sum);

/* A decoding context of one thread: store_decoder_accumulate is
 * store_block_accumulate without the reader, so several threads can
 * accumulate the blocks one reader scanned (their data lives in the
 * reader's snapshots until store_reader_end).  n_nodes: the size of acc,
 * store_part_nodes of the blocks' partition. */
typedef struct store_decoder store_decoder;
store_decoder *store_decoder_new(void);
void store_decoder_free(store_decoder *d);
store_status store_decoder_accumulate(store_decoder *d, const store_block *b, uint64_t weight, uint32_t n_nodes,
                                      uint64_t *acc, uint64_t *touched, uint64_t *sum);

/* ---- partitions, for merges that accumulate one partition at a time ---- */

/* How many partitions may hold profiles starting in [from_ms, until_ms),
 * and the i-th of them in time order. */
size_t store_reader_parts(store_reader *r, int64_t from_ms, int64_t until_ms, store_part ***parts);
/* Node ids of the partition are below this (0 when it cannot be read). */
uint32_t store_part_nodes(store_reader *r, store_part *p);
/* Like store_blocks_scan_merged, inside one partition. */
int store_part_scan_merged(store_reader *r, store_part *p, uint32_t sid, int64_t from_ms, int64_t until_ms,
                           store_block_fn fn, void *ctx);
/* The reader's id of the partition's node (its path, by function names,
 * sample labels skipped); 0 when the partition is damaged or memory ran
 * out (with *failed set); STORE_NODE_DROPPED when the reader's sample
 * filter refused the node's stack. */
uint32_t store_part_node(store_reader *r, store_part *p, uint32_t node, int *failed);

/* ---- sample labels (issue 11, point 5) ----
 *
 * A sample's own labels (pprof Sample.label, OTLP sample attributes and
 * trace links) are stored as pseudo-frames at the root of its stack, in key
 * order: a frame text STORE_SAMPLE_MARK key '=' value.  No ingested frame
 * can start with the mark (it is the location separator of frame.h, and a
 * located frame must have a name), so they never mix with real frames.
 * They cost what stacks cost and go with their partition.  A reader skips
 * them: its tree and every answer are what the same stacks without sample
 * labels give, unless it is asked to filter by them or to keep one key's
 * as the root frame. */
#define STORE_SAMPLE_MARK '\x1f' /* = FRAME_LABEL of frame.h */
/* store_part_node's answer for a node whose stack the reader's sample
 * filter refused: its values belong to no node of the answer. */
#define STORE_NODE_DROPPED UINT32_MAX

typedef struct {
    const char *key, *value;     /* not NUL-terminated */
    uint32_t key_len, value_len;
} store_sample_label;

/* Answers 1 to keep a stack whose sample labels are labels[0..n) (in key
 * order; n may be 0), 0 to drop it. */
typedef int (*store_sample_filter)(void *ctx, const store_sample_label *labels, int n);

/* Sets (fn non-NULL) or clears the reader's sample filter; key names the
 * filter's content: a filter with the same key as the one set keeps what
 * the reader has decided so far, another one forgets it (translations are
 * made again, the reader's tree stays).  fn is called once per stack
 * prefix met, on the merging thread. */
void store_reader_sample_filter(store_reader *r, store_sample_filter fn, void *ctx, const char *key);
/* Keeps the sample label `key` (NULL: none) as a frame of its own named
 * "key=value" at the root of every stack that has one (group by a sample
 * label).  Set before the first merge. */
void store_reader_sample_root(store_reader *r, const char *key);

/* 1 when some series of the store carries a label of this name: a
 * selector's matcher on another name is about sample labels. */
int store_label_name_known(const store_reader *r, const char *name);

/* Call tree across partitions, as far as this reader has merged: node 0 is
 * the root (no name); nodes are 1..store_node_max(r). */
uint32_t store_node_max(const store_reader *r);
uint32_t store_node_parent(const store_reader *r, uint32_t node);
uint32_t store_node_func(const store_reader *r, uint32_t node);

/* Function names met by this reader: ids 1..store_string_max(r); answers
 * the bytes (NUL-terminated) and length. */
uint32_t store_string_max(const store_reader *r);
const char *store_string(const store_reader *r, uint32_t id, uint32_t *len);

/* ---- statistics ------------------------------------------------------ */

#define STORE_COMMIT_BUCKETS 12
extern const double store_commit_bucket_le[STORE_COMMIT_BUCKETS]; /* seconds */

typedef struct {
    uint64_t series;
    uint64_t nodes, strings;           /* in the partitions the writer holds in memory */
    uint64_t partitions;               /* time partitions */
    uint64_t partition_files;          /* their files: a shard each (writer.c) */
    uint64_t db_bytes;                 /* size of the catalog and partition files */
    uint64_t dict_memory;              /* bytes of the writer's maps and the catalog */
    uint64_t catalog_memory;           /* of which the catalog's (series, label strings, index) */
    uint64_t commits;
    uint64_t commit_bucket[STORE_COMMIT_BUCKETS]; /* cumulative counts */
    double commit_seconds_sum;
    uint64_t gather_waits;             /* batches held for requests on their way (commit_wait_ms) */
    double gather_wait_s;              /* the time they were held */
    uint64_t retention_deleted;        /* profiles deleted by retention */
    uint64_t retention_partitions;     /* partitions dropped by retention */
    uint64_t series_expired;           /* series dropped from the catalog with their last partition */
    uint64_t rollups_built;            /* buckets compacted into rollups */
    uint64_t migrated_profiles;        /* profiles moved from a flamedb-4 directory at open */
} store_stats;

void store_get_stats(store *st, store_stats *out);

/* ---- checking a data directory (`flamedb check`, check.c) ------------ */

typedef enum {
    STORE_CHECK_NOTE,     /* worth knowing, not damage: an older format, a partition dropped meanwhile */
    STORE_CHECK_PROBLEM   /* damage: the store is not sound */
} store_check_kind;

/* One finding: file is relative to the directory ("catalog.mdb",
 * "parts/20261101T0000Z.mdb"), what names the key or id and what is wrong
 * ("block series 3 at 2026-11-01T22:05:00Z seq 0: checksum mismatch ...").
 * Both are valid only during the call. */
typedef void (*store_check_fn)(void *ctx, store_check_kind kind, const char *file, const char *what);

typedef struct {
    char format[16];           /* "flamedb-7", "flamedb-6", "flamedb-5", "flamedb-4"; "" when unreadable */
    int needs_upgrade;         /* flamedb-4, -5 or -6: flamedb serve (or migrate) moves it to store_format() */
    int64_t partition_ms;      /* 0 when unreadable */
    uint64_t series, label_strings;          /* in the catalog */
    uint64_t partitions;
    uint64_t strings, nodes;                 /* of every partition's dictionaries */
    uint64_t blocks, rollups, pending;       /* values and pending marks walked */
    uint64_t unchecked;        /* version-1 blocks and rollups (flamedb-5): no checksum to verify */
    uint64_t problems;         /* 0: the store is sound */
} store_check_counts;

/* Verifies the data directory dir without changing it, also while a server
 * writes to it from another process: no directory lock, LMDB read
 * snapshots (LMDB forbids opening a file twice in one process, so not
 * beside a store_open of dir in this one).  Walks the catalog's label
 * strings and series, then every partition's dictionaries, blocks, rollups
 * and pending marks, checking references, checksums and encodings.  Each
 * file is read in a child process (fork), so that damage that makes LMDB
 * fault is one more finding, not a crash.  fn (may be NULL) receives every
 * finding as it is made, on the caller's thread, and *out the counts.
 * Answers STORE_OK once the walk is done, damage or not (out->problems);
 * STORE_EINVAL when dir is not a flamedb data directory (missing, no
 * catalog.mdb or data.mdb, a format this flamedb does not know), with err
 * saying why; STORE_ENOMEM. */
store_status store_check(const char *dir, store_check_fn fn, void *ctx, store_check_counts *out, char *err,
                         size_t errlen);

#endif
