/* rollup.c — pre-merged blocks over coarser windows, so that a day-long
 * query reads hundreds of blocks, not hundreds of thousands.
 *
 * Each series has one rollup block per bucket and value unit at two
 * levels: 1 hour and 10 minutes.  A rollup block has the raw block's
 * format, with values already weighted (a rated `samples` profile adds
 * count x round(1e9 / rate) under unit "nanoseconds", see
 * store_value_unit), rate 0, samples the sum of its profiles' samples
 * (unknown when one of them did not know), and n_profiles the profiles
 * merged.  Gauge profiles (snapshots) get rollups of their own, flagged
 * gauge: the sum of the snapshots and their number, which is what a merge
 * needs to average them (query/merge.c).
 *
 * Built once, off the commit path.  A write only marks its two buckets
 * pending (one B-tree probe each when already marked); once a bucket has
 * closed (its end plus ROLLUP_GRACE_MS is past), compaction on the writer
 * thread (compact.c) merges its raw blocks into its rollups and removes
 * the mark, in one transaction (and packs a 10-minute bucket's raw blocks
 * into its segment, segment.c).  A profile that arrives for a bucket whose
 * rollup exists (a spool replayed after an outage) is added into it in the
 * write's own transaction, and its 10-minute bucket is marked for packing
 * again (level ROLLUP_REPACK).  Late data waits: a mark for a bucket
 * that had closed when it was made carries the write's time, renewed by
 * each late write, and background compaction leaves it until
 * ROLLUP_LATE_QUIET_MS after the last one (an explicit store_compact_run
 * does not wait).  Old data comes in bursts (a spool replayed, an import,
 * bench_pprof_ingest's 500 profiles of five 10 s windows): building as
 * each profile came rebuilt the same hour and repacked the same segment
 * once a profile (1,188 builds for 500 requests), each between two of a
 * client's requests; once the burst is over, each bucket is built once.
 * Until then the bucket is read from raw blocks, like any unbuilt one.
 * An hour whose profiles all start in one
 * 10-minute bucket gets no rollup of its own (rollup_build): the planner
 * reads that bucket's instead.  So a rollup, when present, holds exactly its
 * bucket's profiles; a bucket without one is read from finer levels or
 * raw blocks (reader.c), and answers never depend on whether compaction
 * has run.
 *
 * Keys (17 bytes): level (u8, 0 = 1 h, 1 = 10 min), series (BE u32), bucket start
 * in ms (BE, sign bit flipped), effective unit id (BE u32) with the top bit
 * set for gauges.  Units and kinds stay apart, so a merge can still choose
 * one.
 *
 * Retention deletes a rollup bucket only once all of it has expired; the
 * read planner (reader.c) ignores the buckets that straddle the cutoff and
 * reads finer levels or raw blocks there, so answers at the retention edge
 * are those of the raw data. */
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "env.h"
#include "radix.h"
#include "rollup.h"
#include "segment.h"

/* 1 hour, then 10 minutes for the edges of a range.  A finer level costs
 * more space than it saves time: each bucket re-stores the union of its
 * profiles' stacks: 1-minute buckets took 1.3 bytes a stored pair in
 * bench_storage; 10-minute ones a tenth of that, and the edges of a range
 * are then at most 2 x 10 minutes of raw blocks (a day still merges in
 * 25 ms in bench_rollup). */
const int64_t rollup_size_ms[ROLLUP_LEVELS] = { 3600 * 1000, 600 * 1000 };

/* The top bit of a rollup key's unit: gauge rollups apart from counters. */
#define ROLLUP_GAUGE (UINT32_C(1) << 31)

int64_t rollup_floor(int64_t t, int64_t size)
{
    int64_t q = t / size;
    if (t % size < 0) q--;
    return q * size;
}

void rollup_key(unsigned char key[ROLLUP_KEY_LEN], int level, uint32_t sid, int64_t bucket, uint32_t unit)
{
    key[0] = (unsigned char)level;
    block_key(key + 1, sid, bucket, unit); /* same layout: series, time, a u32 */
}

void rollup_key_parse(const unsigned char *key, int *level, uint32_t *sid, int64_t *bucket, uint32_t *unit)
{
    if (level) *level = key[0];
    block_key_parse(key + 1, sid, bucket, unit);
}

/* Merges (a) and (b), both sorted by node, into out (room for na + nb). */
static uint32_t merge_pairs(const uint32_t *an, const uint64_t *ac, uint32_t na, const uint32_t *bn,
                            const uint64_t *bc, uint64_t bw, uint32_t nb, uint32_t *on, uint64_t *oc)
{
    uint32_t i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        if (j >= nb || (i < na && an[i] < bn[j])) {
            on[k] = an[i];
            oc[k++] = ac[i++];
        } else if (i >= na || bn[j] < an[i]) {
            on[k] = bn[j];
            oc[k++] = bc[j++] * bw;
        } else {
            on[k] = an[i];
            oc[k++] = ac[i++] + bc[j++] * bw;
        }
    }
    return k;
}

/* Adds one profile's pairs into its bucket at one level. */
static store_status add_level(MDB_txn *txn, MDB_dbi dbi, void *zcctx, int level, uint32_t sid, int64_t from_ms, uint32_t unit,
                              uint64_t weight, const uint32_t *nodes, const uint64_t *counts, uint32_t n,
                              const block_header *raw)
{
    int64_t size = rollup_size_ms[level], bucket = rollup_floor(from_ms, size);
    unsigned char key[ROLLUP_KEY_LEN];
    rollup_key(key, level, sid, bucket, unit | (raw->gauge ? ROLLUP_GAUGE : 0));
    MDB_val k = { ROLLUP_KEY_LEN, key }, v;
    block_header h = { .unit = unit, .n_profiles = 1, .duration_ms = size, .samples = raw->samples,
                       .samples_unknown = raw->samples_unknown, .gauge = raw->gauge };
    uint32_t *on = NULL, *en = NULL;
    uint64_t *oc = NULL, *ec = NULL;
    char *scratch = NULL;
    store_status ss = STORE_OK;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc && rc != MDB_NOTFOUND) return env_status(rc);
    block_header old = { 0 };
    const void *payload = NULL;
    size_t plen = 0;
    int compressed = 0;
    if (rc == 0 && block_parse_header(v.mv_data, v.mv_size, &old, &payload, &plen, &compressed)) return STORE_EIO;
    en = malloc(((size_t)old.n_pairs + 1) * sizeof *en);
    ec = malloc(((size_t)old.n_pairs + 1) * sizeof *ec);
    on = malloc(((size_t)old.n_pairs + n + 1) * sizeof *on);
    oc = malloc(((size_t)old.n_pairs + n + 1) * sizeof *oc);
    scratch = malloc((size_t)old.raw_len + 1);
    if (!en || !ec || !on || !oc || !scratch) {
        ss = STORE_ENOMEM;
        goto out;
    }
    if (rc == 0 && block_decode(&old, payload, plen, compressed, NULL, scratch, en, ec)) {
        ss = STORE_EIO;
        goto out;
    }
    h.n_pairs = merge_pairs(en, ec, old.n_pairs, nodes, counts, weight, n, on, oc);
    h.n_profiles += old.n_profiles;
    h.samples += old.samples;
    h.samples_unknown |= rc == 0 && old.samples_unknown;
    void *val;
    size_t len;
    if ((ss = block_encode(&h, on, oc, zcctx, &val, &len))) goto out;
    MDB_val nv = { len, val };
    k.mv_size = ROLLUP_KEY_LEN;
    k.mv_data = key;
    ss = env_status(mdb_put(txn, dbi, &k, &nv, 0));
    free(val);
out:
    free(en);
    free(ec);
    free(on);
    free(oc);
    free(scratch);
    return ss;
}

void rollup_pending_parse(const unsigned char *key, int *level, uint32_t *sid, int64_t *bucket)
{
    unsigned char full[ROLLUP_KEY_LEN] = { 0 };
    memcpy(full, key, ROLLUP_PENDING_LEN);
    rollup_key_parse(full, level, sid, bucket, NULL);
}

/* Answers 1 when the bucket has a rollup of any unit, 0 when not, or an
 * LMDB error (negative). */
static int bucket_built(MDB_txn *txn, MDB_dbi rollups, int level, uint32_t sid, int64_t bucket)
{
    unsigned char key[ROLLUP_KEY_LEN];
    rollup_key(key, level, sid, bucket, 0);
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, rollups, &c);
    if (rc) return -rc;
    MDB_val k = { ROLLUP_KEY_LEN, key }, v;
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    int built = rc == 0 && k.mv_size == ROLLUP_KEY_LEN && memcmp(k.mv_data, key, ROLLUP_PENDING_LEN) == 0;
    mdb_cursor_close(c);
    return rc && rc != MDB_NOTFOUND ? -rc : built;
}

/* A late mark's value: the write's wall time, 8 bytes big-endian. */
static int put_mark(MDB_txn *txn, MDB_dbi pending, const unsigned char *key, int late, int64_t now_ms)
{
    unsigned char t[8];
    for (int i = 0; i < 8; i++) t[i] = (unsigned char)((uint64_t)now_ms >> (56 - 8 * i));
    MDB_val k = { ROLLUP_PENDING_LEN, (void *)key }, v = { late ? sizeof t : 0, late ? (void *)t : "" };
    int rc = mdb_put(txn, pending, &k, &v, late ? 0 : MDB_NOOVERWRITE);
    return rc == MDB_KEYEXIST ? 0 : rc;
}

int rollup_pending_waits(const MDB_val *v, int64_t now_ms, int64_t quiet_ms)
{
    if (v->mv_size != 8 || quiet_ms <= 0) return 0;
    const unsigned char *t = v->mv_data;
    uint64_t at = 0;
    for (int i = 0; i < 8; i++) at = at << 8 | t[i];
    return (int64_t)at > now_ms - quiet_ms;
}

store_status rollup_on_write(MDB_txn *txn, MDB_dbi rollups, MDB_dbi pending, pdict_w *d, void *zcctx, uint32_t sid,
                             int64_t from_ms, int64_t now_ms, const char *unit, const block_header *raw,
                             const uint32_t *nodes, const uint64_t *counts, uint32_t n)
{
    uint64_t weight;
    const char *vunit = store_value_unit(unit, raw->rate, &weight);
    uint32_t unit_id;
    store_status ss = pdict_w_string(d, vunit, (uint32_t)strlen(vunit), &unit_id);
    for (int level = 0; !ss && level < ROLLUP_LEVELS; level++) {
        int64_t bucket = rollup_floor(from_ms, rollup_size_ms[level]);
        int late = bucket + rollup_size_ms[level] + ROLLUP_GRACE_MS <= now_ms;
        int built = bucket_built(txn, rollups, level, sid, bucket);
        if (built < 0) return env_status(-built);
        unsigned char key[ROLLUP_KEY_LEN];
        int rc = 0;
        if (built) {
            ss = add_level(txn, rollups, zcctx, level, sid, from_ms, unit_id, weight, nodes, counts, n, raw);
            /* The 10-minute bucket may be packed into a segment already:
             * this profile stays a raw block, and compaction packs the
             * bucket again (segment.c). */
            if (!ss && level == ROLLUP_LEVELS - 1) {
                rollup_key(key, ROLLUP_REPACK, sid, bucket, 0);
                rc = put_mark(txn, pending, key, 1, now_ms);
            }
        } else {
            rollup_key(key, level, sid, bucket, 0);
            rc = put_mark(txn, pending, key, late, now_ms);
        }
        if (rc) ss = env_status(rc);
    }
    return ss;
}

/* A build sums the pairs of a bucket's profiles by node.  A dense array
 * by node id (8 bytes a node of the partition: 28 MiB for bench_fleet's
 * 3.5 M nodes, nearly all of it touched by a round of builds, and a scan
 * of its bitmap after every build) made compaction's memory and time
 * follow the partition; the table here follows the pairs one build meets
 * (open addressing on the node id, grown at half load, kept between builds
 * and freed with the scratch after a round). */
typedef struct {
    uint32_t key;             /* node + 1; 0: empty */
    uint64_t count;
} acc_slot;

struct rollup_scratch {
    seg_dec dec;              /* reads raw blocks and segments */
    acc_slot *tab;
    size_t tab_cap, tab_n;    /* slots (a power of two), used */
    uint32_t *dnodes;         /* one profile's pairs, decoded */
    uint64_t *dcounts;
    size_t dcap;
    uint32_t *nodes;          /* the build's sums, nodes ascending */
    uint64_t *counts;
    size_t pairs_cap;
};

rollup_scratch *rollup_scratch_new(void) { return calloc(1, sizeof(rollup_scratch)); }

seg_dec *rollup_scratch_dec(rollup_scratch *s) { return &s->dec; }

void rollup_scratch_free(rollup_scratch *s)
{
    if (!s) return;
    seg_dec_free(&s->dec);
    free(s->tab);
    free(s->dnodes);
    free(s->dcounts);
    free(s->nodes);
    free(s->counts);
    free(s);
}

static size_t slot_of(uint32_t key, size_t cap) { return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1); }

static int tab_grow(rollup_scratch *s)
{
    size_t cap = s->tab_cap ? s->tab_cap * 2 : 4096;
    acc_slot *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < s->tab_cap; i++) {
        if (!s->tab[i].key) continue;
        size_t j = slot_of(s->tab[i].key, cap);
        while (t[j].key) j = (j + 1) & (cap - 1);
        t[j] = s->tab[i];
    }
    free(s->tab);
    s->tab = t;
    s->tab_cap = cap;
    return 0;
}

/* Adds one profile's pairs times weight into the table. */
static int tab_add(rollup_scratch *s, const uint32_t *nodes, const uint64_t *counts, uint32_t n, uint64_t weight)
{
    for (uint32_t i = 0; i < n; i++) {
        if (2 * (s->tab_n + 1) > s->tab_cap && tab_grow(s)) return -1;
        uint32_t key = nodes[i] + 1;
        size_t j = slot_of(key, s->tab_cap);
        while (s->tab[j].key && s->tab[j].key != key) j = (j + 1) & (s->tab_cap - 1);
        if (!s->tab[j].key) {
            s->tab[j].key = key;
            s->tab_n++;
        }
        s->tab[j].count += counts[i] * weight;
    }
    return 0;
}

/* Decodes the value's pairs into the scratch and adds them. */
static int accumulate(rollup_scratch *s, const void *val, size_t len, uint32_t n_pairs, uint64_t weight)
{
    if (n_pairs > s->dcap) {
        size_t cap = n_pairs;
        uint32_t *nd = realloc(s->dnodes, cap * sizeof *nd);
        if (nd) s->dnodes = nd;
        uint64_t *ct = realloc(s->dcounts, cap * sizeof *ct);
        if (ct) s->dcounts = ct;
        if (!nd || !ct) return -1;
        s->dcap = cap;
    }
    if (seg_value_decode(&s->dec, val, len, s->dnodes, s->dcounts)) return -1;
    return tab_add(s, s->dnodes, s->dcounts, n_pairs, weight);
}

/* The sums sorted by node (radix.h; qsort with a callback was 4-9 % of
 * the server's CPU under bench_pprof_ingest, whose late data makes a
 * build or two a request). */
RADIX_SORT_U32(sort_slots, acc_slot, key)

/* Moves the sums (nodes ascending) into s->nodes/counts and empties the
 * table; answers how many.  The table is at most half full (tab_add grows
 * it at half load), so its back half is the sort's scratch. */
static int64_t gather(rollup_scratch *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->tab_cap; i++)
        if (s->tab[i].key) s->tab[n++] = s->tab[i]; /* packed to the front: n <= i */
    const acc_slot *sorted = n ? sort_slots(s->tab, s->tab + n, n) : s->tab;
    if (n > s->pairs_cap) {
        uint32_t *nd = realloc(s->nodes, n * sizeof *nd);
        if (nd) s->nodes = nd;
        uint64_t *ct = realloc(s->counts, n * sizeof *ct);
        if (ct) s->counts = ct;
        if (!nd || !ct) return -1;
        s->pairs_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        s->nodes[i] = sorted[i].key - 1;
        s->counts[i] = sorted[i].count;
    }
    if (s->tab) memset(s->tab, 0, s->tab_cap * sizeof *s->tab);
    s->tab_n = 0;
    return (int64_t)n;
}

/* Deletes every rollup (all units) of one bucket. */
static store_status drop_bucket(MDB_txn *txn, MDB_dbi rollups, int level, uint32_t sid, int64_t bucket)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, rollups, &c);
    if (rc) return env_status(rc);
    unsigned char key[ROLLUP_KEY_LEN];
    rollup_key(key, level, sid, bucket, 0);
    MDB_val k = { ROLLUP_KEY_LEN, key }, v;
    while ((rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)) == 0) {
        if (k.mv_size != ROLLUP_KEY_LEN || memcmp(k.mv_data, key, ROLLUP_PENDING_LEN)) break;
        if ((rc = mdb_cursor_del(c, 0))) break;
        k.mv_size = ROLLUP_KEY_LEN;
        k.mv_data = key;
    }
    mdb_cursor_close(c);
    return rc && rc != MDB_NOTFOUND ? env_status(rc) : STORE_OK;
}

store_status rollup_build(MDB_txn *txn, MDB_dbi blocks, MDB_dbi segs, MDB_dbi rollups, pdict_r *r, pdict_w *d,
                          void *zcctx, rollup_scratch *s, int level, uint32_t sid, int64_t bucket)
{
    int64_t end = bucket + rollup_size_ms[level];
    uint32_t units[16];
    int n_units = 0, done_units = 0, elide = 0;
    int64_t first = INT64_MAX, last = INT64_MIN;
    store_status ss = STORE_OK;
    MDB_cursor *c, *sc = NULL;
    int rc = mdb_cursor_open(txn, blocks, &c);
    if (!rc && (rc = mdb_cursor_open(txn, segs, &sc))) mdb_cursor_close(c);
    if (rc) return env_status(rc);
    seg_dec_reset(&s->dec);
    if (s->tab_n) { /* a build that failed left its sums */
        memset(s->tab, 0, s->tab_cap * sizeof *s->tab);
        s->tab_n = 0;
    }
    /* One pass per value unit and kind (nearly always one). */
    do {
        uint32_t want = 0;
        block_header out = { .n_profiles = 0, .duration_ms = rollup_size_ms[level], .version = 2 };
        seg_iter it;
        seg_item item;
        seg_iter_begin(&it, c, sc, sid, bucket, end);
        while (seg_iter_next(&it, &item)) {
            block_header h;
            if (seg_value_header(item.data, item.data_len, &h)) {
                ss = STORE_EIO;
                break;
            }
            if (item.from_ms < first) first = item.from_ms;
            if (item.from_ms > last) last = item.from_ms;
            const char *unit = pdict_r_string(r, h.unit, NULL);
            if (!unit) {
                ss = STORE_EIO;
                break;
            }
            uint64_t weight;
            const char *vunit = store_value_unit(unit, h.rate, &weight);
            uint32_t vid;
            if ((ss = pdict_w_string(d, vunit, (uint32_t)strlen(vunit), &vid))) break;
            if (h.gauge) vid |= ROLLUP_GAUGE;
            int seen = 0;
            for (int i = 0; i < n_units; i++) seen |= units[i] == vid;
            if (!seen) {
                if (n_units == 16) {
                    ss = STORE_EINVAL;
                    break;
                }
                units[n_units++] = vid;
            }
            if (!want) want = units[done_units];
            if (vid != want) continue;
            if (accumulate(s, item.data, item.data_len, h.n_pairs, weight)) {
                ss = STORE_EIO;
                break;
            }
            out.n_profiles += h.n_profiles;
            if (block_samples_known(&h, unit)) out.samples += h.samples;
            else out.samples_unknown = 1;
        }
        if (it.err && !ss) ss = env_status(it.err);
        if (ss || !want) break;
        int64_t n = gather(s);
        if (n < 0) {
            ss = STORE_ENOMEM;
            break;
        }
        /* An hour whose profiles all start in one 10-minute bucket needs no
         * rollup of its own: the planner reads that bucket's instead (a
         * missing rollup is covered by the next finer level), the same
         * profiles in one block.  Late data elsewhere in the hour marks it
         * pending again, and it is built then. */
        if (!done_units) elide = level == 0 && rollup_floor(first, rollup_size_ms[1]) == rollup_floor(last, rollup_size_ms[1]);
        if (elide) continue;
        out.unit = want & ~ROLLUP_GAUGE;
        out.gauge = (want & ROLLUP_GAUGE) != 0;
        out.n_pairs = (uint32_t)n;
        void *val;
        size_t len;
        if ((ss = block_encode(&out, s->nodes, s->counts, zcctx, &val, &len))) break;
        unsigned char rk[ROLLUP_KEY_LEN];
        rollup_key(rk, level, sid, bucket, want);
        MDB_val rkv = { ROLLUP_KEY_LEN, rk }, rv = { len, val };
        rc = mdb_put(txn, rollups, &rkv, &rv, 0);
        free(val);
        if (rc) ss = env_status(rc);
    } while (!ss && ++done_units < n_units);
    mdb_cursor_close(c);
    mdb_cursor_close(sc);
    seg_dec_reset(&s->dec);
    if (!ss && elide) ss = drop_bucket(txn, rollups, level, sid, bucket);
    return ss;
}

store_status rollup_reset(MDB_txn *txn, MDB_dbi blocks, MDB_dbi rollups, MDB_dbi pending)
{
    int rc = mdb_drop(txn, rollups, 0);
    MDB_cursor *c;
    if (rc || (rc = mdb_cursor_open(txn, blocks, &c))) return env_status(rc);
    MDB_val k, v;
    uint32_t last_sid[ROLLUP_LEVELS] = { 0 };
    int64_t last_bucket[ROLLUP_LEVELS] = { 0 };
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != BLOCK_KEY_LEN) continue;
        uint32_t sid;
        int64_t from;
        block_key_parse(k.mv_data, &sid, &from, NULL);
        for (int level = 0; level < ROLLUP_LEVELS; level++) {
            int64_t bucket = rollup_floor(from, rollup_size_ms[level]);
            if (last_sid[level] == sid && last_bucket[level] == bucket) continue;
            last_sid[level] = sid;
            last_bucket[level] = bucket;
            unsigned char key[ROLLUP_KEY_LEN];
            rollup_key(key, level, sid, bucket, 0);
            MDB_val pk = { ROLLUP_PENDING_LEN, key }, pv = { 0, "" };
            int prc = mdb_put(txn, pending, &pk, &pv, 0);
            if (prc) {
                mdb_cursor_close(c);
                return env_status(prc);
            }
        }
    }
    mdb_cursor_close(c);
    return rc == MDB_NOTFOUND ? STORE_OK : env_status(rc);
}

store_status rollup_delete(MDB_cursor *c, uint32_t sid, int64_t cutoff_ms, uint64_t *budget)
{
    for (int level = 0; level < ROLLUP_LEVELS; level++) {
        unsigned char key[ROLLUP_KEY_LEN];
        rollup_key(key, level, sid, INT64_MIN, 0);
        MDB_val k = { ROLLUP_KEY_LEN, key }, v;
        int rc;
        while (*budget && (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)) == 0) {
            int kl;
            uint32_t ksid;
            int64_t bucket;
            rollup_key_parse(k.mv_data, &kl, &ksid, &bucket, NULL);
            /* Only whole buckets: all of it older than the cutoff. */
            if (kl != level || ksid != sid || bucket > cutoff_ms - rollup_size_ms[level]) break;
            memcpy(key, k.mv_data, ROLLUP_KEY_LEN);
            if ((rc = mdb_cursor_del(c, 0))) return env_status(rc);
            (*budget)--;
            k.mv_size = ROLLUP_KEY_LEN;
            k.mv_data = key;
        }
        if (!*budget) return STORE_OK;
    }
    return STORE_OK;
}
