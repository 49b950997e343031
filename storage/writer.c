/* writer.c — the writer threads and group commit.
 *
 * A store has n writer threads (store_options.writers: half the cores, 1
 * to 8, by default).  Each owns a shard of every partition: its own file
 * (part.h) with its own dictionaries, written by that thread alone, so n
 * LMDB write transactions and n fsyncs run at once where one writer was the
 * limit (bench_ingest's all-new stacks).  A profile goes to the shard
 * store_shard_of picks from its labels (every label but `type`, so a
 * source's sample types share their stacks); a group stored all or none
 * (store_write_async_all) goes whole to its first profile's shard, so a
 * series may sit in several shards of a partition, which readers handle
 * (reader.c).  A writer owns the files of shards beyond the current count
 * too (shard % n: written by a run with more writers): it compacts, seals
 * and expires them, and writes new profiles to its own shard only.
 *
 * store_write queues a request on its writer and sleeps.  The writer takes
 * every request queued so far: first the series of the batch, found in the
 * catalog or created there in one catalog transaction committed before any
 * block names them (the catalog is shared: writers change it one at a
 * time, under cat_lock, and only when a series is new); then the profiles,
 * in one write transaction per partition file they touch.  Each request
 * (or group) runs in a nested transaction and writes its new dictionary
 * entries there too, so a failed request is rolled back alone and only has
 * to drop the partition's in-memory maps, which are reloaded from the
 * parent transaction on next use.  Then each partition commits (one fsync
 * each for the whole group), the new entries are published and the callers
 * woken.  Under load the batch grows by itself: while one commit syncs,
 * the next batch queues up.  Between batches the same thread builds the
 * rollups of its closed buckets (compact.c) and runs retention on its
 * files, each in bounded steps.
 *
 * A writer keeps dictionary maps (pdict_w) for the STORE_WRITER_PARTS
 * partitions it wrote most recently, and not for a partition that ended
 * more than STORE_MAPS_GRACE_MS of data time before the newest profile it
 * wrote; late data for an older partition loads its maps from its file. */
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
    const store_stack **order; /* a profile's new stacks, by their text */
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
    const store_stack **o = realloc(s->order, cap * sizeof *o);
    if (!o) return -1;
    s->order = o;
    s->cap = cap;
    return 0;
}

static int stack_text_cmp(const void *a, const void *b)
{
    const store_stack *x = *(const store_stack *const *)a, *y = *(const store_stack *const *)b;
    int c = memcmp(x->frames, y->frames, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
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
static void touch_writer_part(writer *w, part *p)
{
    int i = 0;
    while (i < w->n_wparts && w->wparts[i] != p) i++;
    if (i == w->n_wparts) {
        if (w->n_wparts == (int)(sizeof w->wparts / sizeof *w->wparts)) return;
        part_ref(p);
        w->n_wparts++;
    }
    memmove(w->wparts + 1, w->wparts, (size_t)i * sizeof *w->wparts);
    w->wparts[0] = p;
}

void evict_writer_maps(writer *w)
{
    store *st = w->st;
    int freed = 0;
    while (w->n_wparts > STORE_WRITER_PARTS) {
        part *p = w->wparts[--w->n_wparts];
        store_part_set_writer(st, p, NULL);
        part_unref(p);
        freed = 1;
    }
    /* A partition that writes have left behind by more than an hour of
     * data time (yesterday, once today is well under way) keeps no maps:
     * late data that old is rare, and reloads them. */
    for (int i = w->n_wparts - 1; i >= 0; i--) {
        part *p = w->wparts[i];
        if (part_end(p) + STORE_MAPS_GRACE_MS > w->newest_write_ms) continue;
        store_part_set_writer(st, p, NULL);
        memmove(w->wparts + i, w->wparts + i + 1, (size_t)(w->n_wparts - i - 1) * sizeof *w->wparts);
        w->n_wparts--;
        part_unref(p);
        freed = 1;
    }
    /* The maps grew by doubling; give their pages back, or glibc keeps the
     * holes and the heap creeps up a partition at a time (bench_churn). */
    if (freed) malloc_trim(0);
}

void writer_forget_part(writer *w, part *p)
{
    for (int i = 0; i < w->n_wparts; i++) {
        if (w->wparts[i] != p) continue;
        store_part_set_writer(w->st, p, NULL);
        memmove(w->wparts + i, w->wparts + i + 1, (size_t)(w->n_wparts - i - 1) * sizeof *w->wparts);
        w->n_wparts--;
        part_unref(p);
        return;
    }
}

pdict_w *writer_maps(writer *w, part *p, MDB_txn *txn, store_status *ss)
{
    pdict_w *d = part_writer(p);
    if (!d) {
        *ss = pdict_w_load(&d, txn, part_dbi(p, PART_META), part_dbi(p, PART_STRINGS), part_dbi(p, PART_NODES));
        if (*ss) return NULL;
        store_part_set_writer(w->st, p, d);
    }
    touch_writer_part(w, p);
    return d;
}

/* The batch's transaction on the writer's shard of the partition of time
 * t, begun on first use; the partition's maps loaded. */
static batch_part *batch_part_for(writer *w, batch *b, int64_t t, char *err, size_t errlen, store_status *ss)
{
    store *st = w->st;
    part *p = store_part_at(st, t, w->idx, 1, err, errlen);
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
    if (!writer_maps(w, bp->p, bp->txn, ss)) return NULL;
    return bp;
}

/* Whether this batch's commits drop the pages their B-tree descents
 * mapped (part_release_map; env.c says why a descent maps so much): once
 * the process's mapped file pages have grown STORE_MAPPED_SLACK past what
 * they were after the last release, or always when they cannot be read.
 * Released after every commit, the same upper B-tree pages were mapped
 * again by the next one: the madvise and those minor faults were 5 % of
 * the server's CPU under bench_fleet (~17 commits a second). */
static int release_due(writer *w)
{
    uint64_t now = env_mapped_file_bytes();
    return !now || now > w->mapped_floor + STORE_MAPPED_SLACK;
}

/* Writes rq's profile (its series known) into bp's nested transaction txn. */
static store_status write_profile(writer *wr, batch_part *bp, MDB_txn *txn, writer_scratch *s, write_req *rq)
{
    store *st = wr->st;
    const store_profile *p = rq->profile;
    pdict_w *w = part_writer(bp->p);
    if (p->from_ms > wr->newest_write_ms) wr->newest_write_ms = p->from_ms;
    uint32_t sid = rq->series, unit;
    store_status ss = pdict_w_string(w, p->unit, (uint32_t)strlen(p->unit), &unit);
    if (ss) return ss;
    /* Leaves resolved against this very partition object are durable ids
     * of it; against another (dropped by retention and made anew since),
     * they mean nothing here. */
    int same_part = p->part_token && p->part_token == part_token(bp->p);
    const store_prep *pr = same_part && p->prep && p->prep->token == p->part_token ? p->prep : NULL;
    store_prep *own = NULL;
    if (!pr) {
        /* leaves of another partition: every stack is interned by its text */
        if (!same_part && p->write_text) p->write_text(p->write_text_ctx);
        if (scratch_reserve(s, p->n_stacks ? p->n_stacks : 1)) return STORE_ENOMEM;
        if ((ss = store_part_reserve_stacks(st, bp->p, p->n_stacks))) return ss;
        /* The stacks not resolved before queueing are interned in the
         * order of their text: each walk starts below the frames it shares
         * with the one before (pdict_w_stack). */
        size_t n_new = 0;
        for (size_t i = 0; i < p->n_stacks; i++) {
            uint32_t known = same_part && p->leaves ? p->leaves[i] : 0;
            s->leaves[i] = known;
            if (!known) s->order[n_new++] = &p->stacks[i];
        }
        if (n_new > 1) qsort(s->order, n_new, sizeof *s->order, stack_text_cmp);
        for (size_t j = 0; j < n_new; j++) {
            const store_stack *k = s->order[j];
            size_t i = (size_t)(k - p->stacks);
            hash128 h = p->hashes ? p->hashes[i] : hash_bytes128(k->frames, k->len);
            if ((ss = pdict_w_stack(w, k->frames, k->len, h, &s->leaves[i])))
                return ss;
        }
        if ((ss = prep_build(p->stacks, s->leaves, p->n_stacks, wr->zcctx, &own))) return ss;
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
        ss = rollup_on_write(txn, part_dbi(bp->p, PART_ROLLUPS), part_dbi(bp->p, PART_PENDING), w, wr->zcctx, sid,
                             p->from_ms, now_ms(), p->unit, &h, pr->nodes, pr->counts, pr->n);
    if (!ss)
        ss = pdict_w_flush(w, txn, part_dbi(bp->p, PART_META), part_dbi(bp->p, PART_STRINGS),
                           part_dbi(bp->p, PART_NODES));
    store_prep_free(own);
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

/* Gives every write request of the batch its series id.  New series are
 * created in a catalog transaction of their own, committed (and published)
 * before any block that names them; a series whose block then fails stays,
 * without profiles, as after store_delete_series.  The same transaction
 * raises the `last` partition of series written to a newer partition than
 * before (once a series a partition: a day), so the catalog never lets a
 * series expire while a partition holds it (catalog.h).  The requests
 * whose series could not be created or raised fail here.  Writers take
 * turns (cat_lock), holding it for a lookup only unless a series is new or
 * enters a new partition. */
static void resolve_series(writer *w, write_req *reqs)
{
    store *st = w->st;
    catalog *cat = st->cat;
    int missing = 0;
    pthread_mutex_lock(&st->cat_lock);
    for (write_req *rq = reqs; rq; rq = rq->next) {
        if (rq->kind != REQ_WRITE) continue;
        int64_t last = INT64_MIN;
        rq->series = catalog_series_find(cat, rq->profile->labels, rq->profile->n_labels, &last);
        rq->new_series = !rq->series || last < store_part_floor(st, rq->profile->from_ms);
        missing |= rq->new_series;
    }
    if (!missing) {
        pthread_mutex_unlock(&st->cat_lock);
        return;
    }
    catalog_mark mark = catalog_mark_now(cat);
    MDB_txn *txn = NULL;
    int rc = catalog_txn_begin(cat, &txn);
    store_status ss = rc ? env_status(rc) : STORE_OK;
    for (write_req *rq = reqs; rq && !ss; rq = rq->next)
        if (rq->kind == REQ_WRITE && rq->new_series)
            ss = catalog_series_intern(cat, txn, rq->profile->labels, rq->profile->n_labels,
                                       store_part_floor(st, rq->profile->from_ms), &rq->series);
    if (!ss) ss = catalog_flush(cat, txn);
    if (!ss) {
        catalog_publish_pending(cat);
        rc = mdb_txn_commit(txn);
        txn = NULL;
        if (rc) ss = env_status(rc);
    }
    if (txn) mdb_txn_abort(txn);
    if (ss) catalog_rollback(cat, mark);
    else catalog_publish_committed(cat);
    pthread_mutex_unlock(&st->cat_lock);
    if (!ss) return;
    for (write_req *rq = reqs; rq; rq = rq->next) {
        if (rq->kind != REQ_WRITE || !rq->new_series) continue;
        rq->series = 0;
        rq->status = ss;
        if (rc) fail_req(rq, ss, "the data directory could not be written (is the disk full or failing?); "
                                 "the catalog's commit of a new series failed", rc);
        else snprintf(rq->err, rq->errlen, "a new series could not be recorded in the catalog: %s", status_text(ss));
    }
}

static void process_writes(writer *w, writer_scratch *s, write_req *reqs)
{
    store *st = w->st;
    batch b = { 0 };
    resolve_series(w, reqs);
    for (write_req *rq = reqs, *last; rq; rq = last->next) {
        /* a request, or a group (store_write_async_all: queued together,
         * written in the same nested transaction, kept or dropped as one) */
        last = rq;
        while (last->group_left && last->next) last = last->next;
        if (rq->kind != REQ_WRITE) continue;
        const write_req *failed = NULL;
        for (write_req *q = rq; !failed; q = q->next) {
            if (q->status) failed = q;
            if (q == last) break;
        }
        if (failed) { /* a series of the group could not be created: none is stored */
            for (write_req *q = rq;; q = q->next) {
                if (q != failed) {
                    q->status = failed->status;
                    snprintf(q->err, q->errlen, "%s", failed->err);
                }
                if (q == last) break;
            }
            continue;
        }
        store_status ss = STORE_OK;
        batch_part *bp = batch_part_for(w, &b, rq->profile->from_ms, rq->err, rq->errlen, &ss);
        if (!bp) {
            for (write_req *q = rq;; q = q->next) {
                q->status = ss ? ss : STORE_EIO;
                if (q != rq) snprintf(q->err, q->errlen, "%s", rq->err);
                if (!q->err[0]) snprintf(q->err, q->errlen, "%s", status_text(q->status));
                if (q == last) break;
            }
            continue;
        }
        MDB_txn *child = NULL;
        int crc = mdb_txn_begin(part_env(bp->p), bp->txn, 0, &child);
        ss = crc ? env_status(crc) : STORE_OK;
        for (write_req *q = rq; !ss; q = q->next) {
            ss = write_profile(w, bp, child, s, q);
            if (q == last) break;
        }
        if (!ss) {
            crc = mdb_txn_commit(child);
            child = NULL;
            if (crc) ss = env_status(crc);
        }
        if (ss) {
            if (child) mdb_txn_abort(child);
            /* The maps hold the failed request's entries: reload them from
             * the batch's transaction on next use. */
            writer_forget_part(w, bp->p);
            snprintf(rq->err, rq->errlen, "%s", status_text(ss));
        }
        for (write_req *q = rq;; q = q->next) {
            q->status = ss;
            if (ss && q != rq) snprintf(q->err, q->errlen, "%s", rq->err);
            if (q == last) break;
        }
    }
    double t0 = mono_seconds();
    int release = release_due(w);
    for (int i = 0; i < b.n_parts; i++) {
        batch_part *bp = &b.parts[i];
        int prc = mdb_txn_commit(bp->txn);
        if (prc) {
            writer_forget_part(w, bp->p);
            for (write_req *rq = reqs; rq; rq = rq->next) {
                if (rq->kind != REQ_WRITE || rq->status) continue;
                if (store_part_floor(st, rq->profile->from_ms) != part_start(bp->p)) continue;
                fail_req(rq, env_status(prc), "the data directory could not be written (is the disk full or failing?); "
                                              "commit failed", prc);
            }
        } else if (part_writer(bp->p)) {
            pdict_w_publish(part_writer(bp->p));
        }
        if (release) part_release_map(bp->p); /* what the commits' B-tree descents mapped (env.c) */
        part_unref(bp->p);
    }
    if (release) w->mapped_floor = env_mapped_file_bytes();
    evict_writer_maps(w);
    if (b.n_parts) record_commit(st, mono_seconds() - t0);
}

static void run_compact_now(writer *w, write_req *rq)
{
    uint64_t before = w->built;
    int more = 1;
    rq->status = STORE_OK;
    while (more && !rq->status) rq->status = writer_compact_step(w, rq->now_ms, 1000, 0, &more);
    rq->deleted = w->built - before;
}

static void run_retention_now(writer *w, write_req *rq)
{
    uint64_t deleted = 0;
    int finished = 0;
    rq->status = STORE_OK;
    while (!finished && !rq->status)
        rq->status = writer_retention_step(w, rq->now_ms, 10000, &deleted, &finished);
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

/* Frees the LMDB reader slots of processes that died mid-read (a kill -9'd
 * `flamedb check`, say): a stale slot pins the snapshot it read, so pages
 * freed since are never reused and the files grow until a restart. */
static void sweep_readers(store *st)
{
    int dead = 0;
    pthread_mutex_lock(&st->cat_lock); /* catalog_expire may reopen its environment */
    catalog_reader_check(st->cat);
    pthread_mutex_unlock(&st->cat_lock);
    pthread_rwlock_rdlock(&st->parts_lock);
    for (size_t i = 0; i < st->n_parts; i++)
        if (part_is_open(st->parts[i])) mdb_reader_check(part_env(st->parts[i]), &dead);
    pthread_rwlock_unlock(&st->parts_lock);
}

/* Background work between batches: one bounded compaction step when due,
 * one bounded retention step when due, on the writer's own files; the
 * store-wide chores on writer 0.  Called and returns unlocked. */
static void background(writer *w)
{
    store *st = w->st;
    int64_t now = now_ms();
    if (w->idx == 0 && now >= w->next_reader_check_ms) {
        sweep_readers(st);
        w->next_reader_check_ms = now + 60000;
    }
    /* Memory freed by request threads stays in their malloc arenas, and a
     * burst (requests queued while the machine was busy) leaves megabytes
     * there for good: 13 of bench_fleet's 116 MiB after a 3 s stall.
     * Giving free pages back every 30 s costs a walk of the free lists and
     * the page faults of the next burst. */
    if (w->idx == 0 && now >= w->next_trim_ms) {
        malloc_trim(0);
        w->next_trim_ms = now + 30000;
    }
    if (now >= w->next_compact_ms) {
        int more = 0;
        store_status ss = writer_compact_step(w, now, 64, ROLLUP_LATE_QUIET_MS, &more);
        /* More closed buckets: go on after the next batch; otherwise look
         * again in a few seconds (buckets close as time passes). */
        w->next_compact_ms = more && !ss ? now : now + 2000;
    }
    if (st->opt.retention_ms > 0 && now >= w->next_retention_ms) {
        uint64_t deleted = 0;
        int finished = 0;
        writer_retention_step(w, now, 5000, &deleted, &finished);
        pthread_mutex_lock(&st->lock);
        st->stats.retention_deleted += deleted;
        pthread_mutex_unlock(&st->lock);
        if (finished) w->next_retention_ms = now + st->opt.retention_every_ms;
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
 * keeps being grouped.  A hold that gathered nothing at all quadruples it:
 * one closed-loop client's holds are all empty, and the ramp to 1,024 cost
 * it 9 holds of commit_wait_ms in its first 500 requests (0.45 s, a fifth
 * of bench_pprof_ingest's run at 230 profiles/s), 5 now (at batches 1, 6,
 * 23, 88, 345); a stream of one push every 10 ms holds 50 ms empty once in
 * ~150 holds (e^-5), and then skips 4 batches instead of 2.  Each writer
 * has its own arrivals.  Arrivals during a hold do not wake the writer
 * (w->holding): at a fleet's ~6 arrivals a hold each woke it to find the
 * hold not over (bench_fleet: ~100 futex wakes and writer switches a
 * second); only the hold's end or a stop does.
 * A closed loop that says who it is needs no learning: a write's origin
 * (store_profile.origin: the server's HTTP connection) sends nothing more
 * until it is answered, so when each of the last STORE_RECENT_ORIGINS
 * writes came from an origin already in the batch (one client, however
 * fast), a hold could only gather a newcomer, and there is none.  The
 * misses above still cost such a client 5 holds of commit_wait_ms in its
 * first 500 requests: 0.25 s, 12 % of merge_side_by_side.py's pprof
 * ingest (one client, 2,000-stack profiles at ~240/s), now none.  Unknown
 * origins (0) are never taken for one.  Called with the lock held; the
 * lock is released while it waits. */
static int batch_has_recent_origins(const writer *w)
{
    unsigned n = w->n_recent < STORE_RECENT_ORIGINS ? w->n_recent : STORE_RECENT_ORIGINS;
    for (unsigned i = 0; i < n; i++) {
        uint64_t o = w->recent_origin[i];
        if (!o) return 0;
        const write_req *rq = w->queue_head;
        while (rq && !(rq->kind == REQ_WRITE && rq->profile->origin == o)) rq = rq->next;
        if (!rq) return 0;
    }
    return n > 0;
}

static void gather(writer *w)
{
    store *st = w->st;
    double wait = st->opt.commit_wait_ms / 1e3;
    if (wait <= 0 || st->stopping || w->gap_ewma <= 0 || w->gap_ewma * 2 > wait) return;
    if (batch_has_recent_origins(w)) return;
    if (w->gather_skip) {
        w->gather_skip--;
        return;
    }
    double start = mono_seconds(), until = start + wait;
    uint64_t before = w->arrivals;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)(wait * 1e9);
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    w->holding = 1;
    while (!st->stopping && mono_seconds() < until)
        if (pthread_cond_timedwait(&w->work, &st->lock, &ts) == ETIMEDOUT) break;
    w->holding = 0;
    if (w->arrivals > before && w->last_arrival - start >= wait / 2) {
        w->gather_misses = 0;
    } else {
        /* a hold that gathered nothing at all counts twice: it is what a
         * closed loop always does, and a stream only by chance */
        w->gather_misses += w->arrivals == before ? 2 : 1;
        if (w->gather_misses > 10) w->gather_misses = 10;
        w->gather_skip = 1u << w->gather_misses;
    }
    st->stats.gather_waits++;
    st->stats.gather_wait_s += mono_seconds() - start;
}

void *writer_main(void *arg)
{
    writer *w = arg;
    store *st = w->st;
    writer_scratch s = { 0 };
    char name[16];
    snprintf(name, sizeof name, w->idx ? "flamedb-writer%d" : "flamedb-writer", w->idx);
    pthread_setname_np(pthread_self(), name);
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (!w->queue_head && !st->stopping) {
            int64_t due = w->next_compact_ms;
            if (st->opt.retention_ms > 0 && w->next_retention_ms < due) due = w->next_retention_ms;
            if (now_ms() >= due) break;
            struct timespec ts = { (time_t)(due / 1000), (long)(due % 1000) * 1000000 };
            pthread_cond_timedwait(&w->work, &st->lock, &ts);
        }
        if (w->queue_head) {
            gather(w);
            write_req *batch = w->queue_head;
            w->queue_head = w->queue_tail = NULL;
            pthread_mutex_unlock(&st->lock);
            process_writes(w, &s, batch);
            for (write_req *rq = batch; rq; rq = rq->next) {
                if (rq->kind == REQ_RETENTION) run_retention_now(w, rq);
                if (rq->kind == REQ_COMPACT) run_compact_now(w, rq);
                if (rq->kind == REQ_DELETE) rq->status = writer_delete_series(w, rq->delete_ids, rq->n_delete, &rq->deleted);
            }
            finish_batch(st, batch);
            pthread_mutex_lock(&st->lock);
        }
        if (st->stopping && !w->queue_head) break;
        pthread_mutex_unlock(&st->lock);
        background(w);
        pthread_mutex_lock(&st->lock);
    }
    pthread_mutex_unlock(&st->lock);
    while (w->n_wparts) writer_forget_part(w, w->wparts[0]);
    rollup_scratch_free(w->compact_scratch);
    w->compact_scratch = NULL;
    free(s.leaves);
    free(s.order);
    return NULL;
}

/* Appends the requests first..last (linked) to w's queue, counts one
 * arrival for group commit (gather) and wakes the writer; under the lock. */
static void enqueue(writer *w, write_req *first, write_req *last)
{
    if (w->queue_tail) w->queue_tail->next = first;
    else w->queue_head = first;
    w->queue_tail = last;
    double now = mono_seconds(), gap = now - w->last_arrival;
    if (w->arrivals) w->gap_ewma = w->arrivals == 1 ? gap : 0.875 * w->gap_ewma + 0.125 * gap;
    w->last_arrival = now;
    w->arrivals++;
    if (first->kind == REQ_WRITE)
        w->recent_origin[w->n_recent++ % STORE_RECENT_ORIGINS] = first->profile->origin;
    if (!w->holding) pthread_cond_signal(&w->work);
}

/* Queues a write on its shard's writer; a synchronous request (no
 * callback) also waits for it. */
static store_status submit(store *st, write_req *rq)
{
    pthread_mutex_lock(&st->lock);
    if (st->stopping) {
        pthread_mutex_unlock(&st->lock);
        snprintf(rq->err, rq->errlen, "the server is shutting down");
        return STORE_ECLOSED;
    }
    enqueue(&st->writers[rq->shard], rq, rq);
    if (rq->cb) {
        pthread_mutex_unlock(&st->lock);
        return STORE_OK;
    }
    while (!rq->done) pthread_cond_wait(&st->done, &st->lock);
    pthread_mutex_unlock(&st->lock);
    return rq->status;
}

/* Queues a copy of proto on every writer (each does it on its own files)
 * and waits for all; answers the first failure and the sum of *deleted. */
static store_status submit_each(store *st, const write_req *proto, uint64_t *deleted)
{
    write_req rq[STORE_MAX_WRITERS];
    char err[STORE_MAX_WRITERS][64];
    pthread_mutex_lock(&st->lock);
    if (st->stopping) {
        pthread_mutex_unlock(&st->lock);
        return STORE_ECLOSED;
    }
    for (int i = 0; i < st->n_writers; i++) {
        rq[i] = *proto;
        rq[i].err = err[i];
        rq[i].errlen = sizeof err[i];
        rq[i].next = NULL;
        enqueue(&st->writers[i], &rq[i], &rq[i]);
    }
    for (int i = 0; i < st->n_writers; i++)
        while (!rq[i].done) pthread_cond_wait(&st->done, &st->lock);
    pthread_mutex_unlock(&st->lock);
    store_status ss = STORE_OK;
    uint64_t sum = 0;
    for (int i = 0; i < st->n_writers; i++) {
        if (!ss) ss = rq[i].status;
        sum += rq[i].deleted;
    }
    if (deleted) *deleted = sum;
    return ss;
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
    write_req rq = { .kind = REQ_WRITE, .profile = p, .err = err, .errlen = errlen,
                     .shard = store_shard_of(st, p->labels, p->n_labels) };
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
    rq->shard = store_shard_of(st, p->labels, p->n_labels);
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
    int shard = store_shard_of(st, p[0]->labels, p[0]->n_labels);
    for (size_t i = 0; i < n; i++) {
        if (!(rq[i] = calloc(1, sizeof **rq))) {
            for (size_t j = 0; j < i; j++) free(rq[j]);
            free(rq);
            return STORE_ENOMEM;
        }
        *rq[i] = (write_req){ .kind = REQ_WRITE, .profile = p[i], .cb = done, .cb_ctx = ctx[i],
                              .errlen = sizeof rq[i]->own_err, .group_left = n - 1 - i, .shard = shard };
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
    enqueue(&st->writers[shard], rq[0], rq[n - 1]);
    pthread_mutex_unlock(&st->lock);
    free(rq);
    return STORE_OK;
}

store_status store_retention_run(store *st, int64_t now, uint64_t *deleted)
{
    write_req rq = { .kind = REQ_RETENTION, .now_ms = now };
    uint64_t n = 0;
    store_status ss = submit_each(st, &rq, &n);
    if (deleted) *deleted = n;
    pthread_mutex_lock(&st->lock);
    st->stats.retention_deleted += n;
    pthread_mutex_unlock(&st->lock);
    return ss;
}

store_status store_compact_run(store *st, int64_t now, uint64_t *built)
{
    write_req rq = { .kind = REQ_COMPACT, .now_ms = now };
    return submit_each(st, &rq, built);
}

store_status store_delete_series(store *st, const uint32_t *ids, size_t n, uint64_t *deleted)
{
    write_req rq = { .kind = REQ_DELETE, .delete_ids = ids, .n_delete = n };
    return submit_each(st, &rq, deleted);
}
