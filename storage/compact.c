/* compact.c — building rollups and segments off the commit path.
 *
 * Writes mark the buckets they touch pending (rollup.c).  Between batches,
 * the writer thread takes a bounded step here: for each open partition, it
 * walks the pending marks, and for every bucket that has closed (end +
 * ROLLUP_GRACE_MS before now) merges its profiles into rollups and drops
 * the mark; a 10-minute bucket's raw blocks are then packed into its
 * segment and deleted (segment.c; a repack mark, left by late data, packs
 * only).  All in one transaction per partition, so a bucket is either
 * raw-only or fully rolled up, and a profile is either a raw block or in
 * its segment, never both nor neither, kill -9 or not.  Readers never
 * wait: until a bucket is built they read it from finer levels, raw
 * blocks and segments.
 *
 * Each writer compacts the partition files it owns (writer.c).  Only
 * partitions whose file is open are visited (every partition written
 * since the start is); marks left in a partition nobody has opened since a
 * restart wait until a read or write opens it, and cost only speed.
 *
 * Each step also drops this process's mappings of every open partition's
 * pages (part_release_map; env.c says why that is safe), and so does the
 * writer after each commit (writer.c).  Whatever reads through LMDB's map
 * leaves the pages it touched mapped: compaction reads every raw block of
 * a closed bucket, the writer's B-tree descents copy leaves before
 * changing them, queries read blocks and dictionaries.  The page cache
 * holds them anyway; mapped, they counted in the server's RSS as RssFile,
 * which grew with the partition file (130 MiB after bench_fleet's 10
 * minutes, ~10 MiB a minute).  Inside a step the pages go after every
 * build too: an hour's build reads every profile of the hour, each a page
 * or two of its own, and a fault maps 16 pages or the whole large folio
 * it falls in (env.c), so one build mapped ~4 MiB and a step of builds
 * tens of MiB, the server's RSS peak during a round of compaction
 * (bench_fleet_round: +50 MiB of RssFile for 100 series' hour; +35
 * releasing every 8 builds, +8 after each).  A release is one madvise
 * (the map's address is found once, when the file opens). */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "rollup.h"
#include "segment.h"
#include "store_internal.h"

/* One transaction of compaction in p, from the mark at resume (or the
 * first): it ends once its packed buckets wrote PACK_TXN_BYTES of
 * segments (*packed set, resume the next mark's place), so that the raw
 * blocks they freed can hold the next buckets' segments: LMDB reuses a
 * page only in a later transaction, and packing every bucket in one left
 * the file as large as all the raw blocks and all the segments together
 * (bench_storage).  Not after every bucket: two fsyncs a small bucket
 * slowed a backfill's writer (bench_rollup). */
#define PACK_TXN_BYTES (1u << 20)
static store_status compact_txn(writer *wr, part *p, int64_t now_ms, int64_t quiet_ms, uint32_t *budget, int *more,
                                unsigned char resume[ROLLUP_PENDING_LEN], int *resuming, int *packed)
{
    store *st = wr->st;
    *packed = 0;
    MDB_txn *txn;
    int rc = mdb_txn_begin(part_env(p), NULL, 0, &txn);
    if (rc) return env_status(rc);
    MDB_cursor *c;
    if ((rc = mdb_cursor_open(txn, part_dbi(p, PART_PENDING), &c))) {
        mdb_txn_abort(txn);
        return env_status(rc);
    }
    pdict_w *w = NULL;
    pdict_r *r = NULL;
    store_status ss = STORE_OK;
    int built = 0;
    size_t written = 0;
    /* Late data into a packed bucket marks it for a repack, which rewrites
     * the whole segment.  A backfill (old data pushed in, a spool replayed)
     * marks the same buckets again batch after batch: repacking them while
     * writes wait rewrote each segment once a batch and tripled
     * bench_storage's load time.  So repacks wait for a step that finds no
     * write queued; the late profiles are read as raw blocks meanwhile. */
    pthread_mutex_lock(&st->lock);
    int writes_wait = wr->queue_head != NULL;
    pthread_mutex_unlock(&st->lock);
    MDB_val k = { ROLLUP_PENDING_LEN, resume }, v;
    for (rc = mdb_cursor_get(c, &k, &v, *resuming ? MDB_SET_RANGE : MDB_FIRST); rc == 0 && !ss && !*packed;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != ROLLUP_PENDING_LEN) continue;
        int level;
        uint32_t sid;
        int64_t bucket;
        rollup_pending_parse(k.mv_data, &level, &sid, &bucket);
        if (level > ROLLUP_REPACK || (level == ROLLUP_REPACK && writes_wait)) continue;
        int64_t size = rollup_size_ms[level == ROLLUP_REPACK ? ROLLUP_LEVELS - 1 : level];
        if (bucket + size + ROLLUP_GRACE_MS > now_ms || rollup_pending_waits(&v, now_ms, quiet_ms)) continue;
        if (!*budget) {
            *more = 1;
            break;
        }
        if (!w && !(w = writer_maps(wr, p, txn, &ss))) break;
        if (!r && (ss = pdict_r_open(&r, txn, part_dbi(p, PART_META), part_dbi(p, PART_STRINGS),
                                     part_dbi(p, PART_NODES))))
            break;
        if (level < ROLLUP_LEVELS)
            ss = rollup_build(txn, part_dbi(p, PART_BLOCKS), part_dbi(p, PART_SEGMENTS), part_dbi(p, PART_ROLLUPS), r,
                              w, wr->zcctx, wr->compact_scratch, level, sid, bucket);
        /* Once its 10-minute rollup is built, the bucket's raw blocks go
         * into its segment, in the same transaction (segment.c). */
        if (!ss && level >= ROLLUP_LEVELS - 1) {
            ss = seg_pack(txn, part_dbi(p, PART_BLOCKS), part_dbi(p, PART_SEGMENTS), r, wr->zcctx,
                          rollup_scratch_dec(wr->compact_scratch), sid, bucket, INT64_MIN, NULL, &written);
            if (written >= PACK_TXN_BYTES) {
                memcpy(resume, k.mv_data, ROLLUP_PENDING_LEN); /* deleted below: the next mark is at or after it */
                *resuming = *packed = 1;
            }
        }
        if (!ss && (rc = mdb_cursor_del(c, 0))) ss = env_status(rc);
        (*budget)--;
        built++;
        part_release_map(p); /* the build's pages: safe inside a transaction (env.c) */
    }
    mdb_cursor_close(c);
    pdict_r_free(r);
    if (!ss && w) ss = pdict_w_flush(w, txn, part_dbi(p, PART_META), part_dbi(p, PART_STRINGS), part_dbi(p, PART_NODES));
    if (ss || !built) {
        mdb_txn_abort(txn);
        if (ss && w) writer_forget_part(wr, p);
        return ss;
    }
    if ((rc = mdb_txn_commit(txn))) {
        if (w) writer_forget_part(wr, p);
        return env_status(rc);
    }
    if (w) pdict_w_publish(w);
    pthread_mutex_lock(&st->lock);
    st->stats.rollups_built += (uint64_t)built;
    pthread_mutex_unlock(&st->lock);
    wr->built += (uint64_t)built;
    return STORE_OK;
}

static store_status compact_part(writer *w, part *p, int64_t now_ms, int64_t quiet_ms, uint32_t *budget, int *more)
{
    unsigned char resume[ROLLUP_PENDING_LEN];
    int resuming = 0, packed = 1;
    store_status ss = STORE_OK;
    while (!ss && packed) ss = compact_txn(w, p, now_ms, quiet_ms, budget, more, resume, &resuming, &packed);
    return ss;
}

/* ---- sealing: a closed partition rewritten without its free pages ----
 *
 * LMDB never gives pages back to the file system: deleted values leave
 * free pages that later writes reuse.  Packing frees a bucket's raw blocks;
 * while data arrives in time order the next buckets reuse those pages, but
 * after a backfill (old data pushed at once, a migration, a spool replayed
 * after an outage) every raw block was in the file at the same moment, and
 * the file keeps that size: bench_storage's partition held 1.9 bytes a
 * pair of live pages in a file of 3.4.  So once a partition's time is over
 * and nothing in it waits for compaction, a partition whose free pages are
 * a quarter of its file or more is copied without them (LMDB's compacting
 * copy, mdb_env_copyfd2 with MDB_CP_COMPACT), and the copy takes the
 * file's place:
 *   1. the copy is written beside the file (NAME.mdb.seal) and fsync'd;
 *   2. the lock file NAME.mdb-lock is unlinked: the open environment keeps
 *      its own, and the new one makes a fresh one (two environments of one
 *      process must not share a lock file: closing either would drop the
 *      other's locks);
 *   3. the copy is renamed over NAME.mdb, the directory fsync'd;
 *   4. a new partition object (made before the copy, opened on first use)
 *      replaces the old one in the partition list.  Readers that began
 *      before keep the old object, its environment and its mapping of the
 *      old (now unlinked) file until they end; the writer's maps of the old
 *      object are dropped (late data reloads them from the new file).
 * Everything runs on the file's writer thread between batches, so no
 * write can fall between the copy and the swap.  kill -9 at any point leaves either
 * file whole (the rename is the commit point; a stale .seal is overwritten
 * by the next attempt).  The copy costs a read and a write of the live
 * pages: in steady state (data in time order) the free pages stay a few
 * percent and no partition is sealed. */
static int free_pages_worth_sealing(part *p)
{
    MDB_env *env = part_env(p);
    MDB_envinfo info;
    MDB_stat ms;
    MDB_txn *txn;
    if (mdb_env_info(env, &info) || mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) return 0;
    uint64_t used = 2; /* the meta pages */
    int ok = 1, pending = 0;
    for (MDB_dbi dbi = 0; ok && dbi < 2; dbi++) { /* the free list, the main db */
        ok = !mdb_stat(txn, dbi, &ms);
        used += (uint64_t)ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
    }
    for (int i = 0; ok && i < PART_NDBS; i++) {
        ok = !mdb_stat(txn, part_dbi(p, i), &ms);
        used += (uint64_t)ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
        if (i == PART_PENDING) pending = ms.ms_entries != 0;
    }
    mdb_txn_abort(txn);
    uint64_t pages = (uint64_t)info.me_last_pgno + 1, unused = pages > used ? pages - used : 0;
    return ok && !pending && unused >= 64 && unused * 4 >= pages;
}

/* A closed partition's open dictionary chunks, compressed once
 * (pdict_finish: they stay plain while flushes rewrite them). */
static store_status finish_part(part *p, int64_t now_ms)
{
    if (part_end(p) + 2 * ROLLUP_GRACE_MS > now_ms) return STORE_OK;
    MDB_txn *txn;
    int rc = mdb_txn_begin(part_env(p), NULL, 0, &txn), changed = 0;
    if (rc) return env_status(rc);
    store_status ss = pdict_finish(txn, part_dbi(p, PART_META), part_dbi(p, PART_STRINGS), part_dbi(p, PART_NODES),
                                   &changed);
    if (ss || !changed) {
        mdb_txn_abort(txn);
        return ss;
    }
    return (rc = mdb_txn_commit(txn)) ? env_status(rc) : STORE_OK;
}

static store_status seal_part(writer *w, part *old, int64_t now_ms)
{
    store *st = w->st;
    if (part_end(old) + 2 * ROLLUP_GRACE_MS > now_ms || !free_pages_worth_sealing(old)) return STORE_OK;
    const char *path = part_path(old);
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n), *lock = malloc(n);
    /* made first: once the copy is renamed over the file, the old object
     * must leave the list whatever happens (writes through it would go to
     * the unlinked file); the new one opens on first use */
    part *p = part_new(st->parts_dir, part_start(old), part_end(old) - part_start(old), part_shard(old));
    if (!tmp || !lock || !p) {
        free(tmp);
        free(lock);
        part_unref(p);
        return STORE_ENOMEM;
    }
    snprintf(tmp, n, "%s.seal", path);
    snprintf(lock, n, "%s-lock", path);
    store_status ss = STORE_EIO;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok = fd >= 0 && !mdb_env_copyfd2(part_env(old), fd, MDB_CP_COMPACT) && !fsync(fd);
    if (fd >= 0 && close(fd)) ok = 0;
    if (!ok) {
        unlink(tmp);
        part_unref(p);
        goto out;
    }
    unlink(lock);
    if (rename(tmp, path)) {
        unlink(tmp);
        part_unref(p);
        goto out;
    }
    char *slash = strrchr(tmp, '/');
    if (slash) {
        *slash = '\0';
        int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            if (fsync(dfd)) { /* the rename is durable at the next commit's sync anyway */ }
            close(dfd);
        }
    }
    writer_forget_part(w, old);
    int swapped = 0;
    pthread_rwlock_wrlock(&st->parts_lock);
    for (size_t i = 0; i < st->n_parts && !swapped; i++)
        if (st->parts[i] == old) {
            st->parts[i] = p;
            swapped = 1;
        }
    pthread_rwlock_unlock(&st->parts_lock);
    part_unref(swapped ? old : p); /* the list's reference moves to the new object */
    ss = STORE_OK;
out:
    free(tmp);
    free(lock);
    return ss;
}

store_status writer_compact_step(writer *w, int64_t now_ms, uint32_t budget, int64_t quiet_ms, int *more)
{
    store *st = w->st;
    *more = 0;
    if (!w->compact_scratch && !(w->compact_scratch = rollup_scratch_new())) return STORE_ENOMEM;
    uint32_t budget0 = budget;
    part **v;
    ssize_t n = store_parts_copy(st, 1, 0, &v);
    if (n < 0) return STORE_ENOMEM;
    store_status ss = STORE_OK;
    for (ssize_t i = 0; i < n; i++) {
        if (!part_is_open(v[i]) || !writer_owns(w, v[i])) continue;
        if (!ss) ss = compact_part(w, v[i], now_ms, quiet_ms, &budget, more);
        if (!ss && !*more) ss = finish_part(v[i], now_ms);
        if (!ss && !*more) ss = seal_part(w, v[i], now_ms);
        part_release_map(v[i]);
    }
    for (ssize_t i = 0; i < n; i++) part_unref(v[i]);
    free(v);
    /* The scratch's sums table follows the largest build of the round
     * (rollup.c); buckets close every 10 minutes: free it once a round is
     * done, and trim what glibc keeps in its arenas' free lists. */
    if (!*more && budget < budget0) {
        rollup_scratch_free(w->compact_scratch);
        w->compact_scratch = NULL;
        malloc_trim(0);
    }
    evict_writer_maps(w);
    return ss;
}
