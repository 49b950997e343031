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
 * restart wait until a read or write opens it, and cost only speed. */
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
    part **v;
    ssize_t n = store_parts_copy(st, 1, 0, &v);
    if (n < 0) return STORE_ENOMEM;
    store_status ss = STORE_OK;
    for (ssize_t i = 0; i < n; i++) {
        if (!ss && part_is_open(v[i])) ss = compact_part(st, v[i], now_ms, &budget, more);
        part_unref(v[i]);
    }
    free(v);
    evict_writer_maps(st);
    return ss;
}
