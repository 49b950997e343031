/* compact.c — building rollups off the commit path.
 *
 * Writes mark the buckets they touch pending (rollup.c).  Between batches,
 * the writer thread takes a bounded step here: for each open partition, it
 * walks the pending marks, and for every bucket that has closed (end +
 * ROLLUP_GRACE_MS before now) merges its raw blocks into rollups and drops
 * the mark, all in one transaction per partition, so a bucket is either
 * raw-only or fully rolled up.  Readers never wait: until a bucket is built
 * they read it from finer levels or raw blocks.
 *
 * Only partitions whose file is open are visited (every partition written
 * since the start is); marks left in a partition nobody has opened since a
 * restart wait until a read or write opens it, and cost only speed.
 *
 * Each step also drops this process's mappings of every open partition's
 * pages (env_release_maps; env.c says why that is safe).  Whatever reads
 * through LMDB's map leaves the pages it touched mapped: compaction reads
 * every raw block of a closed bucket, the writer's B-tree descents copy
 * leaves before changing them, queries read blocks and dictionaries.  The
 * page cache holds them anyway; mapped, they counted in the server's RSS as
 * RssFile, which grew with the partition file (130 MiB after bench_fleet's
 * 10 minutes, ~10 MiB a minute).  A step runs every 2 s, or after each
 * batch while closed buckets wait: the pages mapped again in between are
 * what the last seconds touched, a few MiB, and mapping them again costs
 * minor faults (bench/README.md, bench_fleet). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "rollup.h"
#include "store_internal.h"

static store_status compact_part(store *st, part *p, int64_t now_ms, uint32_t *budget, int *more)
{
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
    MDB_val k, v;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && !ss; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != ROLLUP_PENDING_LEN) continue;
        int level;
        uint32_t sid;
        int64_t bucket;
        rollup_pending_parse(k.mv_data, &level, &sid, &bucket);
        if (level >= ROLLUP_LEVELS) continue;
        if (bucket + rollup_size_ms[level] + ROLLUP_GRACE_MS > now_ms) continue;
        if (!*budget) {
            *more = 1;
            break;
        }
        if (!w && !(w = writer_maps(st, p, txn, &ss))) break;
        if (!r && (ss = pdict_r_open(&r, txn, part_dbi(p, PART_META), part_dbi(p, PART_STRINGS),
                                     part_dbi(p, PART_NODES))))
            break;
        ss = rollup_build(txn, part_dbi(p, PART_BLOCKS), part_dbi(p, PART_ROLLUPS), r, w, st->zcctx,
                          st->compact_scratch, level, sid, bucket);
        if (!ss && (rc = mdb_cursor_del(c, 0))) ss = env_status(rc);
        (*budget)--;
        built++;
    }
    mdb_cursor_close(c);
    pdict_r_free(r);
    if (!ss && w) ss = pdict_w_flush(w, txn, part_dbi(p, PART_META), part_dbi(p, PART_STRINGS), part_dbi(p, PART_NODES));
    if (ss || !built) {
        mdb_txn_abort(txn);
        if (ss && w) writer_forget_part(st, p);
        return ss;
    }
    if ((rc = mdb_txn_commit(txn))) {
        if (w) writer_forget_part(st, p);
        return env_status(rc);
    }
    if (w) pdict_w_publish(w);
    pthread_mutex_lock(&st->lock);
    st->stats.rollups_built += (uint64_t)built;
    pthread_mutex_unlock(&st->lock);
    return STORE_OK;
}

store_status writer_compact_step(store *st, int64_t now_ms, uint32_t budget, int *more)
{
    *more = 0;
    if (!st->compact_scratch && !(st->compact_scratch = rollup_scratch_new())) return STORE_ENOMEM;
    uint32_t budget0 = budget;
    part **v;
    ssize_t n = store_parts_copy(st, 1, 0, &v);
    if (n < 0) return STORE_ENOMEM;
    store_status ss = STORE_OK;
    MDB_env **envs = malloc((n ? (size_t)n : 1) * sizeof *envs);
    size_t n_envs = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (!part_is_open(v[i])) continue;
        if (!ss) ss = compact_part(st, v[i], now_ms, &budget, more);
        if (envs) envs[n_envs++] = part_env(v[i]);
    }
    if (envs) env_release_maps(envs, n_envs);
    free(envs);
    for (ssize_t i = 0; i < n; i++) part_unref(v[i]);
    free(v);
    /* The scratch's accumulator has 8 bytes a node of the partition (28
     * MiB for bench_fleet's 3.5 M nodes), and a round of builds touches
     * nearly all of it; kept, it stayed resident for good after the first
     * bucket closed.  Buckets close every 10 minutes: free it once a round
     * is done (rollup.c maps it from the system, so it goes back at once;
     * allocating it again costs page faults, milliseconds a round), and
     * trim what glibc keeps in its arenas' free lists. */
    if (!*more && budget < budget0) {
        rollup_scratch_free(st->compact_scratch);
        st->compact_scratch = NULL;
        malloc_trim(0);
    }
    evict_writer_maps(st);
    return ss;
}
