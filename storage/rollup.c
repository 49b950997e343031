/* rollup.c — pre-merged blocks over coarser windows, so that a day-long
 * query reads hundreds of blocks, not hundreds of thousands.
 *
 * For every profile written, the writer also adds its pairs into one
 * rollup block per level: the bucket of 1 hour and the bucket of 10 minutes
 * its window starts in.  A rollup block has the raw block's format, with
 * values already weighted (a rated `samples` profile adds count x
 * round(1e9 / rate) under unit "nanoseconds", see store_value_unit), rate 0,
 * samples the sum of raw counts, and n_profiles the profiles merged.  The
 * update happens in the same nested transaction as the raw write, so a
 * rollup always holds exactly the profiles of its bucket: lossless, never
 * behind, rolled back with its request.
 *
 * Keys (17 bytes): level (u8, 0 = 1 h, 1 = 10 min), series (BE u32), bucket start
 * in ms (BE, sign bit flipped), effective unit id (BE u32).  Units stay
 * apart, so a merge can still choose one.
 *
 * Retention deletes a rollup bucket only once all of it has expired; the
 * read planner (reader.c) ignores the buckets that straddle the cutoff and
 * reads finer levels or raw blocks there, so answers at the retention edge
 * are those of the raw data. */
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "env.h"
#include "rollup.h"

/* 1 hour, then 10 minutes for the edges of a range.  A finer level costs
 * more space than it saves time: each bucket re-stores the union of its
 * profiles' stacks: 1-minute buckets took 1.3 bytes a stored pair in
 * bench_storage; 10-minute ones a tenth of that, and the edges of a range
 * are then at most 2 x 10 minutes of raw blocks (a day still merges in
 * 25 ms in bench_rollup). */
const int64_t rollup_size_ms[ROLLUP_LEVELS] = { 3600 * 1000, 600 * 1000 };

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
                              uint64_t samples)
{
    int64_t size = rollup_size_ms[level], bucket = rollup_floor(from_ms, size);
    unsigned char key[ROLLUP_KEY_LEN];
    rollup_key(key, level, sid, bucket, unit);
    MDB_val k = { ROLLUP_KEY_LEN, key }, v;
    block_header h = { .unit = unit, .n_profiles = 1, .duration_ms = size, .samples = samples };
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

store_status rollup_add(MDB_txn *txn, MDB_dbi dbi, pdict_w *d, void *zcctx, uint32_t sid, int64_t from_ms,
                        const char *unit, double rate, const uint32_t *nodes, const uint64_t *counts, uint32_t n,
                        uint64_t samples)
{
    uint64_t weight;
    const char *vunit = store_value_unit(unit, rate, &weight);
    uint32_t unit_id;
    store_status ss = pdict_w_string(d, vunit, (uint32_t)strlen(vunit), &unit_id);
    for (int level = 0; !ss && level < ROLLUP_LEVELS; level++)
        ss = add_level(txn, dbi, zcctx, level, sid, from_ms, unit_id, weight, nodes, counts, n, samples);
    return ss;
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
