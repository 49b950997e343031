/* writer.c — the single writer thread and group commit.
 *
 * store_write queues a request and sleeps.  The writer takes every request
 * queued so far and writes them in one write transaction per file they
 * touch: the catalog (new series) and the partition of each profile.  Each
 * request runs in nested transactions of those (so one bad request is
 * rolled back alone) and writes its new dictionary entries there too, so a
 * rolled-back request only has to drop the partition's in-memory maps,
 * which are reloaded from the parent transaction on next use.  Then the
 * catalog commits (series first: a block never names a series that is not
 * durable), then each partition (one fsync each for the whole group), the
 * new entries are published and the callers woken.  Under load the batch
 * grows by itself: while one commit syncs, the next batch queues up.
 * Between batches the same thread builds the rollups of closed buckets
 * (compact.c) and runs retention, each in bounded steps.
 *
 * The writer keeps dictionary maps (pdict_w) for the STORE_WRITER_PARTS
 * partitions written most recently, and not for a partition that ended more
 * than STORE_MAPS_GRACE_MS of data time before the newest profile written;
 * late data for an older partition loads its maps from its file. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block.h"
#include "env.h"
#include "prep.h"
#include "rollup.h"
#include "store_internal.h"

#include <stdio.h>

typedef struct {
    uint32_t *leaves;
    size_t cap;
} writer_scratch;

/* One partition's transaction in a batch. */
typedef struct {
    part *p;
    MDB_txn *txn;
    int failed;
} batch_part;

typedef struct {
    MDB_txn *ctxn;            /* the catalog's */
    batch_part parts[64];
    int n_parts;
} batch;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int scratch_reserve(writer_scratch *s, size_t n)
{
    if (n <= s->cap) return 0;
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < n) cap *= 2;
    uint32_t *l = realloc(s->leaves, cap * sizeof *l);
    if (!l) return -1;
    s->leaves = l;
    s->cap = cap;
    return 0;
}

/* Puts the block under (sid, from, seq) with the first free seq. */
static store_status put_block(MDB_txn *txn, MDB_dbi dbi, uint32_t sid, int64_t from_ms, void *val, size_t len)
{
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, from_ms, 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, v = { len, val };
    int rc = mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE);
    if (rc != MDB_KEYEXIST) return env_status(rc);
    /* Another profile of this series starts at the same moment: find the
     * last sequence number used for that start and take the next. */
    MDB_cursor *c;
    if ((rc = mdb_cursor_open(txn, dbi, &c))) return env_status(rc);
    block_key(key, sid, from_ms, UINT32_MAX);
    MDB_val ck = { BLOCK_KEY_LEN, key }, cv;
    rc = mdb_cursor_get(c, &ck, &cv, MDB_SET_RANGE);
    rc = rc == 0 ? mdb_cursor_get(c, &ck, &cv, MDB_PREV) : mdb_cursor_get(c, &ck, &cv, MDB_LAST);
    uint32_t seq = 0;
    if (rc == 0) block_key_parse(ck.mv_data, NULL, NULL, &seq);
    mdb_cursor_close(c);
    if (rc || seq == UINT32_MAX) return rc ? env_status(rc) : STORE_EFULL;
    /* On MDB_KEYEXIST LMDB pointed v at the existing value: reset both. */
    block_key(key, sid, from_ms, seq + 1);
    k.mv_size = BLOCK_KEY_LEN;
    k.mv_data = key;
    v.mv_size = len;
    v.mv_data = val;
    return env_status(mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE));
}

/* Marks p as the most recently written partition with maps; the maps of
 * partitions beyond STORE_WRITER_PARTS go (only between batches: see
 * evict_maps). */
static void touch_writer_part(store *st, part *p)
{
    int i = 0;
    while (i < st->n_wparts && st->wparts[i] != p) i++;
    if (i == st->n_wparts) {
        if (st->n_wparts == (int)(sizeof st->wparts / sizeof *st->wparts)) return;
        part_ref(p);
        st->n_wparts++;
    }
    memmove(st->wparts + 1, st->wparts, (size_t)i * sizeof *st->wparts);
    st->wparts[0] = p;
}

void evict_writer_maps(store *st)
{
    int freed = 0;
    while (st->n_wparts > STORE_WRITER_PARTS) {
        part *p = st->wparts[--st->n_wparts];
        store_part_set_writer(st, p, NULL);
        part_unref(p);
        freed = 1;
    }
    /* A partition that writes have left behind by more than an hour of
     * data time (yesterday, once today is well under way) keeps no maps:
     * late data that old is rare, and reloads them. */
    for (int i = st->n_wparts - 1; i >= 0; i--) {
        part *p = st->wparts[i];
        if (part_end(p) + STORE_MAPS_GRACE_MS > st->newest_write_ms) continue;
        store_part_set_writer(st, p, NULL);
        memmove(st->wparts + i, st->wparts + i + 1, (size_t)(st->n_wparts - i - 1) * sizeof *st->wparts);
        st->n_wparts--;
        part_unref(p);
        freed = 1;
    }
    /* The maps grew by doubling; give their pages back, or glibc keeps the
     * holes and the heap creeps up a partition at a time (bench_churn). */
    if (freed) malloc_trim(0);
}

void writer_forget_part(store *st, part *p)
{
    for (int i = 0; i < st->n_wparts; i++) {
        if (st->wparts[i] != p) continue;
        store_part_set_writer(st, p, NULL);
        memmove(st->wparts + i, st->wparts + i + 1, (size_t)(st->n_wparts - i - 1) * sizeof *st->wparts);
        st->n_wparts--;
        part_unref(p);
        return;
    }
}

pdict_w *writer_maps(store *st, part *p, MDB_txn *txn, store_status *ss)
{
    pdict_w *w = part_writer(p);
    if (!w) {
        *ss = pdict_w_load(&w, txn, part_dbi(p, PART_META), part_dbi(p, PART_STRINGS), part_dbi(p, PART_NODES));
        if (*ss) return NULL;
        store_part_set_writer(st, p, w);
    }
    touch_writer_part(st, p);
    return w;
}

/* The batch's transaction on the partition of time t, begun on first use;
 * the partition's maps loaded. */
static batch_part *batch_part_for(store *st, batch *b, int64_t t, char *err, size_t errlen, store_status *ss)
{
    part *p = store_part_at(st, t, 1, err, errlen);
    if (!p) {
        *ss = STORE_EIO;
        return NULL;
    }
    batch_part *bp = NULL;
    for (int i = 0; i < b->n_parts; i++)
        if (b->parts[i].p == p) bp = &b->parts[i];
    if (!bp) {
        if (b->n_parts == (int)(sizeof b->parts / sizeof *b->parts)) {
            part_unref(p);
            *ss = STORE_EFULL; /* a later batch takes it */
            env_set_err(err, errlen, "too many partitions in one commit; retry");
            return NULL;
        }
        bp = &b->parts[b->n_parts];
        *ss = part_open(p, st->part_map_size, st->opt.map_size != 0, 0, err, errlen);
        int rc = *ss ? 0 : mdb_txn_begin(part_env(p), NULL, 0, &bp->txn);
        if (*ss || rc) {
            if (rc) {
                *ss = env_status(rc);
                env_set_err(err, errlen, "cannot begin a write in %s: %s", part_path(p), mdb_strerror(rc));
            }
            part_unref(p);
            return NULL;
        }
        bp->p = p;
        bp->failed = 0;
        b->n_parts++;
    } else {
        part_unref(p);
    }
    if (!writer_maps(st, bp->p, bp->txn, ss)) return NULL;
    return bp;
}

static store_status write_profile(store *st, MDB_txn *ctxn, batch_part *bp, MDB_txn *txn, writer_scratch *s,
                                  write_req *rq)
{
    const store_profile *p = rq->profile;
    pdict_w *w = part_writer(bp->p);
    if (p->from_ms > st->newest_write_ms) st->newest_write_ms = p->from_ms;
    uint32_t sid, unit;
    store_status ss = catalog_series_intern(st->cat, ctxn, p->labels, p->n_labels, &sid);
    if (!ss) ss = pdict_w_string(w, p->unit, (uint32_t)strlen(p->unit), &unit);
    if (ss) return ss;
    /* Leaves resolved against this very partition object are durable ids
     * of it; against another (dropped by retention and made anew since),
     * they mean nothing here. */
    int same_part = p->part_token && p->part_token == part_token(bp->p);
    const store_prep *pr = same_part && p->prep && p->prep->token == p->part_token ? p->prep : NULL;
    store_prep *own = NULL;
    if (!pr) {
        if (scratch_reserve(s, p->n_stacks ? p->n_stacks : 1)) return STORE_ENOMEM;
        if ((ss = store_part_reserve_stacks(st, bp->p, p->n_stacks))) return ss;
        for (size_t i = 0; i < p->n_stacks; i++) {
            const store_stack *k = &p->stacks[i];
            uint32_t known = same_part && p->leaves ? p->leaves[i] : 0;
            if (known) s->leaves[i] = known;
            else if ((ss = pdict_w_stack(w, k->frames, k->len, hash_bytes128(k->frames, k->len), &s->leaves[i])))
                return ss;
        }
        if ((ss = prep_build(p->stacks, s->leaves, p->n_stacks, st->zcctx, &own))) return ss;
        pr = own;
    }
    block_header h = {
        .unit = unit, .n_pairs = pr->n, .n_profiles = 1,
        .duration_ms = p->until_ms - p->from_ms, .rate = p->rate,
        .samples = p->samples_kind == STORE_SAMPLES_GIVEN ? p->samples : pr->samples,
        .samples_unknown = p->samples_kind == STORE_SAMPLES_UNKNOWN, .gauge = p->gauge != 0,
    };
    void *val;
    size_t len;
    if (!(ss = block_encode_with(&h, &pr->payload, &val, &len))) {
        ss = put_block(txn, part_dbi(bp->p, PART_BLOCKS), sid, p->from_ms, val, len);
        free(val);
    }
    if (!ss)
        ss = rollup_on_write(txn, part_dbi(bp->p, PART_ROLLUPS), part_dbi(bp->p, PART_PENDING), w, st->zcctx, sid,
                             p->from_ms, p->unit, &h, pr->nodes, pr->counts, pr->n);
    if (!ss)
        ss = pdict_w_flush(w, txn, part_dbi(bp->p, PART_META), part_dbi(bp->p, PART_STRINGS),
                           part_dbi(bp->p, PART_NODES));
    store_prep_free(own);
    rq->series = sid;
    return ss;
}

static void record_commit(store *st, double seconds)
{
    pthread_mutex_lock(&st->lock);
    st->stats.commits++;
    st->stats.commit_seconds_sum += seconds;
    for (int i = 0; i < STORE_COMMIT_BUCKETS; i++)
        if (seconds <= store_commit_bucket_le[i]) st->stats.commit_bucket[i]++;
    pthread_mutex_unlock(&st->lock);
}

static const char *status_text(store_status ss)
{
    switch (ss) {
    case STORE_EFULL: return "the database is full (map size or disk)";
    case STORE_ENOMEM: return "out of memory";
    case STORE_EINVAL: return "invalid profile";
    default: return "storage I/O error";
    }
}

static void fail_req(write_req *rq, store_status ss, const char *what, int rc)
{
    rq->status = ss;
    snprintf(rq->err, rq->errlen, "%s: %s", what, mdb_strerror(rc));
}

static void process_writes(store *st, writer_scratch *s, write_req *reqs)
{
    batch b = { 0 };
    catalog_mark batch_mark = catalog_mark_now(st->cat);
    int rc = mdb_txn_begin(catalog_env(st->cat), NULL, 0, &b.ctxn);
    for (write_req *rq = reqs, *last; rq; rq = last->next) {
        /* a request, or a group (store_write_async_all: queued together,
         * written in the same nested transactions, kept or dropped as one) */
        last = rq;
        while (last->group_left && last->next) last = last->next;
        if (rq->kind != REQ_WRITE) continue;
        if (rc) {
            for (write_req *q = rq;; q = q->next) {
                fail_req(q, env_status(rc), "cannot begin a write", rc);
                if (q == last) break;
            }
            continue;
        }
        store_status ss = STORE_OK;
        batch_part *bp = batch_part_for(st, &b, rq->profile->from_ms, rq->err, rq->errlen, &ss);
        if (!bp) {
            for (write_req *q = rq;; q = q->next) {
                q->status = ss ? ss : STORE_EIO;
                if (q != rq) snprintf(q->err, q->errlen, "%s", rq->err);
                if (!q->err[0]) snprintf(q->err, q->errlen, "%s", status_text(q->status));
                if (q == last) break;
            }
            continue;
        }
        MDB_txn *cchild = NULL, *pchild = NULL;
        catalog_mark m = catalog_mark_now(st->cat);
        int crc = mdb_txn_begin(catalog_env(st->cat), b.ctxn, 0, &cchild);
        if (!crc) crc = mdb_txn_begin(part_env(bp->p), bp->txn, 0, &pchild);
        ss = crc ? env_status(crc) : STORE_OK;
        for (write_req *q = rq; !ss; q = q->next) {
            ss = write_profile(st, cchild, bp, pchild, s, q);
            if (q == last) break;
        }
        int series_kept = 0;
        if (!ss) { /* the catalog first: a kept block always has its series */
            crc = mdb_txn_commit(cchild);
            cchild = NULL;
            series_kept = !crc;
            if (crc) ss = env_status(crc);
        }
        if (!ss) {
            crc = mdb_txn_commit(pchild);
            pchild = NULL;
            if (crc) ss = env_status(crc);
        }
        if (ss) {
            if (pchild) mdb_txn_abort(pchild);
            if (cchild) mdb_txn_abort(cchild);
            /* A series already merged into the batch stays (harmless, and
             * consistent with the catalog's transaction). */
            if (!series_kept) catalog_rollback(st->cat, m);
            /* The maps hold the failed request's entries: reload them from
             * the batch's transaction on next use. */
            writer_forget_part(st, bp->p);
            snprintf(rq->err, rq->errlen, "%s", status_text(ss));
        }
        for (write_req *q = rq;; q = q->next) {
            q->status = ss;
            if (ss && q != rq) snprintf(q->err, q->errlen, "%s", rq->err);
            if (q == last) break;
        }
    }
    if (rc) return;
    /* Commit the catalog first: blocks name series that are then durable. */
    store_status fs = catalog_flush(st->cat, b.ctxn);
    if (!fs) catalog_publish_pending(st->cat);
    double t0 = mono_seconds();
    int crc = fs ? (fs == STORE_EFULL ? MDB_MAP_FULL : EIO) : mdb_txn_commit(b.ctxn);
    if (fs) mdb_txn_abort(b.ctxn);
    if (crc) catalog_rollback(st->cat, batch_mark);
    for (int i = 0; i < b.n_parts; i++) {
        batch_part *bp = &b.parts[i];
        int prc = crc ? crc : mdb_txn_commit(bp->txn);
        if (crc) mdb_txn_abort(bp->txn);
        if (prc) {
            writer_forget_part(st, bp->p);
            for (write_req *rq = reqs; rq; rq = rq->next) {
                if (rq->kind != REQ_WRITE || rq->status) continue;
                if (store_part_floor(st, rq->profile->from_ms) != part_start(bp->p)) continue;
                fail_req(rq, env_status(prc), "the data directory could not be written (is the disk full or failing?); "
                                              "commit failed", prc);
            }
        } else if (part_writer(bp->p)) {
            pdict_w_publish(part_writer(bp->p));
        }
        part_unref(bp->p);
    }
    if (!crc) catalog_publish_committed(st->cat);
    evict_writer_maps(st);
    record_commit(st, mono_seconds() - t0);
}

static void run_compact_now(store *st, write_req *rq)
{
    uint64_t before = st->stats.rollups_built;
    int more = 1;
    rq->status = STORE_OK;
    while (more && !rq->status) rq->status = writer_compact_step(st, rq->now_ms, 1000, &more);
    rq->deleted = st->stats.rollups_built - before;
}

static void run_retention_now(store *st, write_req *rq)
{
    uint64_t deleted = 0;
    int finished = 0;
    rq->status = STORE_OK;
    while (!finished && !rq->status)
        rq->status = writer_retention_step(st, rq->now_ms, 10000, &deleted, &finished);
    rq->deleted = deleted;
}

/* Wakes the synchronous callers and runs the asynchronous callbacks.  A
 * synchronous request lives on its caller's stack and may vanish as soon as
 * it is marked done, so the list is split before anyone is woken. */
static void finish_batch(store *st, write_req *batch)
{
    write_req *async = NULL, *next;
    pthread_mutex_lock(&st->lock);
    for (write_req *rq = batch; rq; rq = next) {
        next = rq->next;
        if (rq->cb) {
            rq->next = async;
            async = rq;
        } else {
            rq->done = 1;
        }
    }
    pthread_cond_broadcast(&st->done);
    pthread_mutex_unlock(&st->lock);
    for (write_req *rq = async; rq; rq = next) {
        next = rq->next;
        rq->cb(rq->cb_ctx, rq->status, rq->series, rq->status ? rq->err : "");
        free(rq);
    }
}

/* Background work between batches: one bounded compaction step when due,
 * one bounded retention step when due.  Called and returns unlocked. */
/* Frees the LMDB reader slots of processes that died mid-read (a kill -9'd
 * `flamedb check`, say): a stale slot pins the snapshot it read, so pages
 * freed since are never reused and the files grow until a restart. */
static void sweep_readers(store *st)
{
    int dead = 0;
    mdb_reader_check(catalog_env(st->cat), &dead);
    pthread_rwlock_rdlock(&st->parts_lock);
    for (size_t i = 0; i < st->n_parts; i++)
        if (part_is_open(st->parts[i])) mdb_reader_check(part_env(st->parts[i]), &dead);
    pthread_rwlock_unlock(&st->parts_lock);
}

static void background(store *st)
{
    int64_t now = now_ms();
    if (now >= st->next_reader_check_ms) {
        sweep_readers(st);
        st->next_reader_check_ms = now + 60000;
    }
    /* Memory freed by request threads stays in their malloc arenas, and a
     * burst (requests queued while the machine was busy) leaves megabytes
     * there for good: 13 of bench_fleet's 116 MiB after a 3 s stall.
     * Giving free pages back every 30 s costs a walk of the free lists and
     * the page faults of the next burst. */
    if (now >= st->next_trim_ms) {
        malloc_trim(0);
        st->next_trim_ms = now + 30000;
    }
    if (now >= st->next_compact_ms) {
        int more = 0;
        store_status ss = writer_compact_step(st, now, 64, &more);
        /* More closed buckets: go on after the next batch; otherwise look
         * again in a few seconds (buckets close as time passes). */
        st->next_compact_ms = more && !ss ? now : now + 2000;
    }
    if (st->opt.retention_ms > 0 && now >= st->next_retention_ms) {
        uint64_t deleted = 0;
        int finished = 0;
        writer_retention_step(st, now, 5000, &deleted, &finished);
        pthread_mutex_lock(&st->lock);
        st->stats.retention_deleted += deleted;
        pthread_mutex_unlock(&st->lock);
        if (finished) st->next_retention_ms = now + st->opt.retention_every_ms;
    }
}

/* Group commit for requests that arrive apart.  A durable commit costs two
 * fsyncs whatever it holds; under load the batch grows by itself (requests
 * queue while one commit syncs), but a fleet's pushes arrive spread evenly
 * (1,000 agents every 10 s: one every 10 ms) and each would get a commit of
 * its own.  So when requests have been arriving less than half of
 * commit_wait_ms apart, the writer holds a new batch for commit_wait_ms
 * while more arrive.
 * Clients that wait for their answer before sending again (a closed loop:
 * `flamedb import`, a benchmark) are the opposite case: nothing of theirs
 * is on its way while they wait for this commit, so holding only slows them
 * down.  Their requests come as a burst right after a commit (or not at
 * all, for one client), so a hold whose arrivals all came in its first half
 * counts as a miss, like a hold that gathered nothing; each miss doubles the
 * number of batches that then skip holding (up to 1,024), so a closed loop
 * loses one hold in up to 1,024 batches, while a steady stream of pushes
 * keeps being grouped.  Called with the lock held; the lock is released
 * while it waits. */
static void gather(store *st)
{
    double wait = st->opt.commit_wait_ms / 1e3;
    if (wait <= 0 || st->stopping || st->gap_ewma <= 0 || st->gap_ewma * 2 > wait) return;
    if (st->gather_skip) {
        st->gather_skip--;
        return;
    }
    double start = mono_seconds(), until = start + wait;
    uint64_t before = st->arrivals;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)(wait * 1e9);
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    while (!st->stopping && mono_seconds() < until)
        if (pthread_cond_timedwait(&st->work, &st->lock, &ts) == ETIMEDOUT) break;
    if (st->arrivals > before && st->last_arrival - start >= wait / 2) {
        st->gather_misses = 0;
    } else {
        if (st->gather_misses < 10) st->gather_misses++;
        st->gather_skip = 1u << st->gather_misses;
    }
    st->stats.gather_waits++;
    st->stats.gather_wait_s += mono_seconds() - start;
}

void *writer_main(void *arg)
{
    store *st = arg;
    writer_scratch s = { 0 };
    pthread_setname_np(pthread_self(), "flamedb-writer");
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (!st->queue_head && !st->stopping) {
            int64_t due = st->next_compact_ms;
            if (st->opt.retention_ms > 0 && st->next_retention_ms < due) due = st->next_retention_ms;
            if (now_ms() >= due) break;
            struct timespec ts = { (time_t)(due / 1000), (long)(due % 1000) * 1000000 };
            pthread_cond_timedwait(&st->work, &st->lock, &ts);
        }
        if (st->queue_head) {
            gather(st);
            write_req *batch = st->queue_head;
            st->queue_head = st->queue_tail = NULL;
            pthread_mutex_unlock(&st->lock);
            process_writes(st, &s, batch);
            for (write_req *rq = batch; rq; rq = rq->next) {
                if (rq->kind == REQ_RETENTION) run_retention_now(st, rq);
                if (rq->kind == REQ_COMPACT) run_compact_now(st, rq);
                if (rq->kind == REQ_DELETE) rq->status = writer_delete_series(st, rq->delete_ids, rq->n_delete, &rq->deleted);
            }
            finish_batch(st, batch);
            pthread_mutex_lock(&st->lock);
        }
        if (st->stopping && !st->queue_head) break;
        pthread_mutex_unlock(&st->lock);
        background(st);
        pthread_mutex_lock(&st->lock);
    }
    pthread_mutex_unlock(&st->lock);
    while (st->n_wparts) writer_forget_part(st, st->wparts[0]);
    rollup_scratch_free(st->compact_scratch);
    st->compact_scratch = NULL;
    free(s.leaves);
    return NULL;
}

/* Appends the requests first..last (linked) to the queue, counts one
 * arrival for group commit (gather) and wakes the writer; under the lock. */
static void enqueue(store *st, write_req *first, write_req *last)
{
    if (st->queue_tail) st->queue_tail->next = first;
    else st->queue_head = first;
    st->queue_tail = last;
    double now = mono_seconds(), gap = now - st->last_arrival;
    if (st->arrivals) st->gap_ewma = st->arrivals == 1 ? gap : 0.875 * st->gap_ewma + 0.125 * gap;
    st->last_arrival = now;
    st->arrivals++;
    pthread_cond_signal(&st->work);
}

/* Queues rq; a synchronous request (no callback) also waits for it. */
static store_status submit(store *st, write_req *rq)
{
    pthread_mutex_lock(&st->lock);
    if (st->stopping) {
        pthread_mutex_unlock(&st->lock);
        snprintf(rq->err, rq->errlen, "the server is shutting down");
        return STORE_ECLOSED;
    }
    enqueue(st, rq, rq);
    if (rq->cb) {
        pthread_mutex_unlock(&st->lock);
        return STORE_OK;
    }
    while (!rq->done) pthread_cond_wait(&st->done, &st->lock);
    pthread_mutex_unlock(&st->lock);
    return rq->status;
}

static store_status check_profile(const store_profile *p, char *err, size_t errlen)
{
    if (!p || p->n_labels <= 0 || !p->unit || p->from_ms >= p->until_ms) {
        env_set_err(err, errlen, "invalid profile: labels, unit and a window are required");
        return STORE_EINVAL;
    }
    if (p->samples_kind == STORE_SAMPLES_GIVEN && !p->samples) {
        env_set_err(err, errlen, "invalid profile: samples given but zero");
        return STORE_EINVAL;
    }
    for (size_t i = 0; i < p->n_stacks; i++) {
        if (!p->stacks[i].len || !p->stacks[i].count) {
            env_set_err(err, errlen, "invalid profile: stack %zu is empty or has a zero count", i + 1);
            return STORE_EINVAL;
        }
    }
    return STORE_OK;
}

store_status store_write(store *st, const store_profile *p, uint32_t *series_id, char *err, size_t errlen)
{
    store_status ss = check_profile(p, err, errlen);
    if (ss) return ss;
    write_req rq = { .kind = REQ_WRITE, .profile = p, .err = err, .errlen = errlen };
    ss = submit(st, &rq);
    if (!ss && series_id) *series_id = rq.series;
    return ss;
}

store_status store_write_async(store *st, const store_profile *p, store_write_done done, void *ctx)
{
    store_status ss = check_profile(p, NULL, 0);
    if (ss) return ss;
    write_req *rq = calloc(1, sizeof *rq);
    if (!rq) return STORE_ENOMEM;
    rq->kind = REQ_WRITE;
    rq->profile = p;
    rq->cb = done;
    rq->cb_ctx = ctx;
    rq->err = rq->own_err;
    rq->errlen = sizeof rq->own_err;
    ss = submit(st, rq);
    if (ss) free(rq);
    return ss;
}

store_status store_write_async_all(store *st, const store_profile *const *p, size_t n, store_write_done done,
                                   void *const *ctx)
{
    if (!n) return STORE_EINVAL;
    for (size_t i = 0; i < n; i++) {
        store_status ss = check_profile(p[i], NULL, 0);
        if (ss) return ss;
        if (store_part_floor(st, p[i]->from_ms) != store_part_floor(st, p[0]->from_ms)) return STORE_EINVAL;
    }
    write_req **rq = calloc(n, sizeof *rq);
    if (!rq) return STORE_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!(rq[i] = calloc(1, sizeof **rq))) {
            for (size_t j = 0; j < i; j++) free(rq[j]);
            free(rq);
            return STORE_ENOMEM;
        }
        *rq[i] = (write_req){ .kind = REQ_WRITE, .profile = p[i], .cb = done, .cb_ctx = ctx[i],
                              .errlen = sizeof rq[i]->own_err, .group_left = n - 1 - i };
        rq[i]->err = rq[i]->own_err;
        if (i) rq[i - 1]->next = rq[i];
    }
    /* one critical section: the group is queued whole, so it lands in one
     * batch, next to each other */
    pthread_mutex_lock(&st->lock);
    if (st->stopping) {
        pthread_mutex_unlock(&st->lock);
        for (size_t i = 0; i < n; i++) free(rq[i]);
        free(rq);
        return STORE_ECLOSED;
    }
    enqueue(st, rq[0], rq[n - 1]);
    pthread_mutex_unlock(&st->lock);
    free(rq);
    return STORE_OK;
}

store_status store_retention_run(store *st, int64_t now, uint64_t *deleted)
{
    char err[16];
    write_req rq = { .kind = REQ_RETENTION, .now_ms = now, .err = err, .errlen = sizeof err };
    store_status ss = submit(st, &rq);
    if (deleted) *deleted = rq.deleted;
    pthread_mutex_lock(&st->lock);
    st->stats.retention_deleted += rq.deleted;
    pthread_mutex_unlock(&st->lock);
    return ss;
}

store_status store_compact_run(store *st, int64_t now, uint64_t *built)
{
    char err[16];
    write_req rq = { .kind = REQ_COMPACT, .now_ms = now, .err = err, .errlen = sizeof err };
    store_status ss = submit(st, &rq);
    if (built) *built = rq.deleted;
    return ss;
}

store_status store_delete_series(store *st, const uint32_t *ids, size_t n, uint64_t *deleted)
{
    char err[16];
    write_req rq = { .kind = REQ_DELETE, .delete_ids = ids, .n_delete = n, .err = err, .errlen = sizeof err };
    store_status ss = submit(st, &rq);
    if (deleted) *deleted = rq.deleted;
    return ss;
}
