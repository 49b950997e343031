/* retention.c — deleting profiles: those whose window started before now
 * minus the retention period, and every profile of series being deleted.
 *
 * Blocks are keyed by (series, start), so each series' expired blocks are a
 * contiguous run at the front of its key range: one seek per series, then
 * deletes until the first young block.  A pass is cut into steps of a
 * bounded number of deletions, each its own transaction, so the writer
 * thread can serve ingest between steps.  LMDB reuses the pages freed here,
 * so in steady state the data file stops growing.  Series and dictionary
 * entries are kept: they are small, and the same services come back. */
#include <errno.h>

#include "store_internal.h"

store_status writer_retention_step(store *st, int64_t now_ms, uint32_t budget, uint64_t *deleted, int *finished)
{
    *finished = 0;
    if (st->opt.retention_ms <= 0) {
        *finished = 1;
        return STORE_OK;
    }
    int64_t cutoff = now_ms - st->opt.retention_ms;
    uint32_t max = st->series->len;
    MDB_txn *txn;
    MDB_cursor *c, *rc_cur;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc) return store_status_of(rc);
    if ((rc = mdb_cursor_open(txn, st->db_blocks, &c)) || (rc = mdb_cursor_open(txn, st->db_rollups, &rc_cur))) {
        mdb_txn_abort(txn);
        return store_status_of(rc);
    }
    uint64_t n = 0, rollup_budget = budget;
    uint32_t sid = st->retention_sid ? st->retention_sid : 1;
    for (; sid < max && n < budget; sid++) {
        store_status rs = rollup_delete(rc_cur, sid, cutoff, &rollup_budget);
        if (rs || !rollup_budget) {
            rc = rs ? EIO : 0;
            break; /* resume this series in the next step */
        }
        unsigned char key[BLOCK_KEY_LEN];
        block_key(key, sid, INT64_MIN, 0);
        MDB_val k = { BLOCK_KEY_LEN, key }, v;
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        while (rc == 0 && n < budget) {
            uint32_t ksid;
            int64_t from;
            block_key_parse(k.mv_data, &ksid, &from, NULL);
            if (ksid != sid || from >= cutoff) break;
            if ((rc = mdb_cursor_del(c, 0))) break;
            n++;
            /* Seek again rather than trust the cursor's place after a
             * delete at the end of a page. */
            block_key(key, sid, from, 0);
            k.mv_size = BLOCK_KEY_LEN;
            k.mv_data = key;
            rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        }
        if (rc && rc != MDB_NOTFOUND) break;
        rc = 0;
        if (n >= budget) break; /* this series may have more: resume here */
    }
    mdb_cursor_close(c);
    mdb_cursor_close(rc_cur);
    if (rc) {
        mdb_txn_abort(txn);
        return store_status_of(rc);
    }
    if ((rc = mdb_txn_commit(txn))) return store_status_of(rc);
    st->retention_sid = sid;
    *deleted += n;
    if (sid >= max) *finished = 1;
    return STORE_OK;
}

/* Deletes every block of the given series, in transactions of at most
 * `budget` deletions each. */
store_status writer_delete_series(store *st, const uint32_t *ids, size_t n, uint64_t *deleted)
{
    size_t i = 0;
    while (i < n) {
        MDB_txn *txn;
        MDB_cursor *c, *rcur;
        int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
        if (rc) return store_status_of(rc);
        if ((rc = mdb_cursor_open(txn, st->db_blocks, &c)) || (rc = mdb_cursor_open(txn, st->db_rollups, &rcur))) {
            mdb_txn_abort(txn);
            return store_status_of(rc);
        }
        uint64_t k = 0, rollup_budget = 10000;
        size_t start_i = i;
        for (; i < n && k < 10000; i++) {
            store_status rs = rollup_delete(rcur, ids[i], INT64_MAX, &rollup_budget);
            if (rs || !rollup_budget) {
                rc = rs ? EIO : 0;
                break;
            }
            unsigned char key[BLOCK_KEY_LEN];
            block_key(key, ids[i], INT64_MIN, 0);
            MDB_val kv = { BLOCK_KEY_LEN, key }, v;
            while (k < 10000 && (rc = mdb_cursor_get(c, &kv, &v, MDB_SET_RANGE)) == 0) {
                uint32_t sid;
                block_key_parse(kv.mv_data, &sid, NULL, NULL);
                if (sid != ids[i]) break;
                if ((rc = mdb_cursor_del(c, 0))) break;
                k++;
                kv.mv_size = BLOCK_KEY_LEN;
                kv.mv_data = key;
            }
            if (rc && rc != MDB_NOTFOUND) break;
            rc = 0;
            if (k >= 10000) break; /* this series may have more: next transaction */
        }
        mdb_cursor_close(c);
        mdb_cursor_close(rcur);
        if (rc || (rc = mdb_txn_commit(txn))) {
            if (rc) i = start_i;
            return store_status_of(rc);
        }
        *deleted += k;
    }
    return STORE_OK;
}
