/* retention.c — deleting profiles: whole partitions whose window has
 * expired, the expired profiles of the partition straddling the cutoff,
 * and every profile of series being deleted.
 *
 * A partition whose end is at or before now − retention is dropped whole:
 * its file goes, and with it its strings and call tree, so the disk and the
 * memory follow what is kept.  In the partition that straddles the cutoff,
 * each series' expired blocks are a contiguous run at the front of its key
 * range: one seek per series, then deletes until the first young block, in
 * steps of a bounded number of deletions, each its own transaction, so the
 * writer thread serves ingest between steps.  Each writer does this on the
 * partition files it owns (writer.c).  Segments (segment.c) go the
 * same way, whole when their 10 minutes have expired; the one straddling
 * the cutoff is packed again without its expired profiles.  That
 * partition's dictionaries stay until it is dropped in its turn.  Once a
 * series' last partition has gone, the series leaves the catalog
 * (expire_series, catalog_expire). */
#include <errno.h>
#include <stdlib.h>

#include "block.h"
#include "env.h"
#include "rollup.h"
#include "segment.h"
#include "store_internal.h"

/* The profiles held in a partition's segments. */
static uint64_t seg_profiles(MDB_txn *txn, MDB_dbi segs)
{
    MDB_cursor *c;
    MDB_val k, v;
    uint64_t n = 0;
    if (mdb_cursor_open(txn, segs, &c)) return 0;
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        uint32_t m;
        if (!seg_count(v.mv_data, v.mv_size, &m)) n += m;
    }
    mdb_cursor_close(c);
    return n;
}

/* Deletes sid's segments wholly before cutoff (INT64_MAX: all), at most
 * about budget profiles' worth, counting their profiles into *n; a segment
 * straddling the cutoff is packed again without its expired profiles. */
static store_status seg_expire(MDB_txn *txn, MDB_dbi blocks, MDB_dbi segs, pdict_r **r, MDB_dbi *dicts, seg_dec *d,
                               uint32_t sid, int64_t cutoff, uint64_t budget, uint64_t *n)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, segs, &c);
    if (rc) return env_status(rc);
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, INT64_MIN, 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, v;
    store_status ss = STORE_OK;
    int64_t straddling = INT64_MIN;
    while (*n < budget && (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)) == 0) {
        uint32_t ksid;
        int64_t bucket;
        if (k.mv_size != SEG_KEY_LEN) break;
        block_key_parse(k.mv_data, &ksid, &bucket, NULL);
        if (ksid != sid || bucket >= cutoff) break;
        if (cutoff != INT64_MAX && bucket + SEG_SPAN_MS > cutoff) {
            straddling = bucket;
            break;
        }
        uint32_t m = 0;
        if (seg_count(v.mv_data, v.mv_size, &m)) m = 1; /* unreadable: it goes all the same */
        if ((rc = mdb_cursor_del(c, 0))) break;
        *n += m;
        block_key(key, sid, bucket, 0);
        k.mv_size = BLOCK_KEY_LEN;
        k.mv_data = key;
    }
    int64_t f, u;
    int stale = straddling != INT64_MIN && rc == 0 && seg_edge(c, sid, 0, straddling, cutoff, &f, &u);
    mdb_cursor_close(c);
    if (rc && rc != MDB_NOTFOUND) return env_status(rc);
    if (stale && *n < budget) {
        if (!*r && (ss = pdict_r_open(r, txn, dicts[0], dicts[1], dicts[2]))) return ss;
        ss = seg_pack(txn, blocks, segs, *r, NULL, d, sid, straddling, cutoff, n, NULL);
    }
    return ss;
}

/* Drops every partition file of w ending at or before cutoff; counts its
 * profiles. */
static store_status drop_expired(writer *w, int64_t cutoff, uint64_t *deleted)
{
    store *st = w->st;
    part **v;
    ssize_t n = store_parts_copy(st, 1, 0, &v);
    if (n < 0) return STORE_ENOMEM;
    uint64_t dropped = 0;
    for (ssize_t i = 0; i < n; i++) {
        part *p = v[i];
        if (part_end(p) <= cutoff && writer_owns(w, p)) {
            MDB_txn *txn;
            MDB_stat ms;
            if (!part_open(p, st->part_map_size, st->opt.map_size != 0, 0, NULL, 0) &&
                !mdb_txn_begin(part_env(p), NULL, MDB_RDONLY, &txn)) {
                if (!mdb_stat(txn, part_dbi(p, PART_BLOCKS), &ms)) *deleted += ms.ms_entries;
                *deleted += seg_profiles(txn, part_dbi(p, PART_SEGMENTS));
                mdb_txn_abort(txn);
            }
            writer_forget_part(w, p);
            store_part_remove(st, p);
            /* counted once a partition, by the owner of its shard 0 */
            if (part_shard(p) == 0) dropped++;
        }
        part_unref(p);
    }
    free(v);
    pthread_mutex_lock(&st->lock);
    st->stats.retention_partitions += dropped;
    pthread_mutex_unlock(&st->lock);
    return STORE_OK;
}

/* Drops from the catalog every series none of whose partitions is left:
 * its last partition started before the oldest partition present (every
 * shard of it gone) and has expired (so a write racing this, which raised
 * `last` under cat_lock before creating its partition's file, can only be
 * of data retention drops anyway).  Under cat_lock: no writer resolves
 * series meanwhile. */
static store_status expire_series(writer *w, int64_t cutoff)
{
    store *st = w->st;
    int64_t keep_from = cutoff - st->part_ms + 1;
    pthread_rwlock_rdlock(&st->parts_lock);
    if (st->n_parts && part_start(st->parts[0]) < keep_from) keep_from = part_start(st->parts[0]);
    pthread_rwlock_unlock(&st->parts_lock);
    uint32_t dropped = 0;
    pthread_mutex_lock(&st->cat_lock);
    store_status ss = catalog_expire(st->cat, keep_from, &dropped);
    pthread_mutex_unlock(&st->cat_lock);
    if (dropped) {
        pthread_mutex_lock(&st->lock);
        st->stats.series_expired += dropped;
        pthread_mutex_unlock(&st->lock);
    }
    return ss;
}

/* The first file of w straddling cutoff at or after shard `from`, with a
 * reference; NULL when none. */
static part *straddling(writer *w, int64_t cutoff, int from)
{
    part **v;
    ssize_t n = store_parts_copy(w->st, cutoff, cutoff + 1, &v);
    part *found = NULL;
    for (ssize_t i = 0; i < n; i++) {
        part *p = v[i];
        if (!found && part_start(p) < cutoff && part_end(p) > cutoff && part_shard(p) >= from && writer_owns(w, p))
            found = p;
        else
            part_unref(p);
    }
    if (n >= 0) free(v);
    return found;
}

/* One bounded step: first the expired partitions go whole; then the files
 * of w straddling the cutoff, one after the other (shard order), series by
 * series from where the last step stopped. */
store_status writer_retention_step(writer *w, int64_t now_ms, uint32_t budget, uint64_t *deleted, int *finished)
{
    store *st = w->st;
    *finished = 0;
    if (st->opt.retention_ms <= 0) {
        *finished = 1;
        return STORE_OK;
    }
    int64_t cutoff = now_ms - st->opt.retention_ms;
    if (w->retention_sid <= 1 && w->retention_shard == 0) {
        store_status ss = drop_expired(w, cutoff, deleted);
        if (!ss) ss = expire_series(w, cutoff);
        if (ss) return ss;
        w->retention_sid = 1;
    }
    part *p = straddling(w, cutoff, w->retention_shard);
    if (!p) { /* nothing (more) straddles the cutoff */
        *finished = 1;
        w->retention_sid = 1;
        w->retention_shard = 0;
        return STORE_OK;
    }
    store_status ss = part_open(p, st->part_map_size, st->opt.map_size != 0, 0, NULL, 0);
    MDB_txn *txn = NULL;
    MDB_cursor *c = NULL, *rc_cur = NULL;
    int rc = ss ? EIO : mdb_txn_begin(part_env(p), NULL, 0, &txn);
    if (!rc && ((rc = mdb_cursor_open(txn, part_dbi(p, PART_BLOCKS), &c)) ||
                (rc = mdb_cursor_open(txn, part_dbi(p, PART_ROLLUPS), &rc_cur)))) {
        if (c) mdb_cursor_close(c);
        mdb_txn_abort(txn);
    }
    if (rc) {
        part_unref(p);
        return env_status(rc);
    }
    /* the live series (a series with data in this partition is live) */
    catalog_snap cs = catalog_snap_begin(st->cat);
    uint64_t n = 0, rollup_budget = budget;
    uint32_t sid = catalog_series_next(&cs, (w->retention_sid ? w->retention_sid : 1) - 1);
    pdict_r *dr = NULL;
    seg_dec dec = { 0 };
    MDB_dbi dicts[3] = { part_dbi(p, PART_META), part_dbi(p, PART_STRINGS), part_dbi(p, PART_NODES) };
    for (; sid && n < budget; sid = catalog_series_next(&cs, sid)) {
        store_status rs = rollup_delete(rc_cur, sid, cutoff, &rollup_budget);
        if (rs || !rollup_budget) {
            rc = rs ? EIO : 0;
            break; /* resume this series in the next step */
        }
        if ((rs = seg_expire(txn, part_dbi(p, PART_BLOCKS), part_dbi(p, PART_SEGMENTS), &dr, dicts, &dec, sid, cutoff,
                             budget, &n))) {
            rc = EIO;
            break;
        }
        if (n >= budget) break; /* this series may have more: resume here */
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
    catalog_snap_end(st->cat, &cs);
    mdb_cursor_close(c);
    mdb_cursor_close(rc_cur);
    pdict_r_free(dr);
    seg_dec_free(&dec);
    if (rc) {
        mdb_txn_abort(txn);
        part_unref(p);
        return env_status(rc);
    }
    rc = mdb_txn_commit(txn);
    int shard = part_shard(p);
    part_unref(p);
    if (rc) return env_status(rc);
    w->retention_sid = sid;
    *deleted += n;
    if (!sid) { /* this file is done: the next one in the next step */
        w->retention_sid = 1;
        w->retention_shard = shard + 1;
    }
    return STORE_OK;
}

/* Deletes every block and rollup of the given series in one partition, in
 * transactions of at most 10,000 deletions. */
static store_status delete_in_part(store *st, part *p, const uint32_t *ids, size_t n, uint64_t *deleted)
{
    store_status ss = part_open(p, st->part_map_size, st->opt.map_size != 0, 0, NULL, 0);
    if (ss) return ss;
    size_t i = 0;
    while (i < n) {
        MDB_txn *txn;
        MDB_cursor *c, *rcur;
        int rc = mdb_txn_begin(part_env(p), NULL, 0, &txn);
        if (rc) return env_status(rc);
        if ((rc = mdb_cursor_open(txn, part_dbi(p, PART_BLOCKS), &c)) ||
            (rc = mdb_cursor_open(txn, part_dbi(p, PART_ROLLUPS), &rcur))) {
            mdb_txn_abort(txn);
            return env_status(rc);
        }
        uint64_t k = 0, rollup_budget = 10000;
        for (; i < n && k < 10000; i++) {
            store_status rs = rollup_delete(rcur, ids[i], INT64_MAX, &rollup_budget);
            if (rs || !rollup_budget) {
                rc = rs ? EIO : 0;
                break;
            }
            if ((rs = seg_expire(txn, part_dbi(p, PART_BLOCKS), part_dbi(p, PART_SEGMENTS), NULL, NULL, NULL, ids[i],
                                 INT64_MAX, 10000, &k))) {
                rc = EIO;
                break;
            }
            if (k >= 10000) break; /* this series may have more: next transaction */
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
        if (rc) {
            mdb_txn_abort(txn);
            return env_status(rc);
        }
        if ((rc = mdb_txn_commit(txn))) return env_status(rc);
        *deleted += k;
    }
    return STORE_OK;
}

store_status writer_delete_series(writer *w, const uint32_t *ids, size_t n, uint64_t *deleted)
{
    store *st = w->st;
    part **v;
    ssize_t np = store_parts_copy(st, 1, 0, &v);
    if (np < 0) return STORE_ENOMEM;
    store_status ss = STORE_OK;
    for (ssize_t i = 0; i < np; i++) {
        if (!ss && writer_owns(w, v[i])) ss = delete_in_part(st, v[i], ids, n, deleted);
        part_unref(v[i]);
    }
    free(v);
    return ss;
}
