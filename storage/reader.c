/* reader.c — read snapshots: an LMDB read transaction plus the counts of
 * dictionary entries it may reference.
 *
 * store_reader_begin opens the LMDB snapshot first and loads the published
 * counts after it (see store_internal.h): every node or string id that a
 * block in the snapshot references is then below the count and readable
 * without a lock.  Series are listed up to the committed count, so a reader
 * never sees a series whose creation might still be rolled back.  Decoding
 * scratch is per reader, so readers never share mutable state. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zstd.h>

#include "store_internal.h"

struct store_reader {
    store *st;
    MDB_txn *txn;
    MDB_cursor *cur, *rcur;           /* blocks, rollups */
    int use_rollups;
    int64_t rollup_from[ROLLUP_LEVELS]; /* first bucket retention has not touched */
    uint32_t n_strings, n_nodes, n_series;
    char *scratch;          /* decompressed payload */
    ZSTD_DCtx *zctx;        /* reused across blocks */
    uint32_t *nodes;        /* decoded pairs */
    uint64_t *counts;
    size_t scratch_cap, pairs_cap;
};

store_status store_reader_begin(store *st, store_reader **out)
{
    store_reader *r = calloc(1, sizeof *r);
    if (!r) return STORE_ENOMEM;
    r->st = st;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &r->txn);
    if (!rc) rc = mdb_cursor_open(r->txn, st->db_blocks, &r->cur);
    if (!rc) rc = mdb_cursor_open(r->txn, st->db_rollups, &r->rcur);
    if (rc) {
        if (r->cur) mdb_cursor_close(r->cur);
        if (r->txn) mdb_txn_abort(r->txn);
        free(r);
        return store_status_of(rc);
    }
    r->n_strings = atomic_load_explicit(&st->strings->pending, memory_order_acquire);
    r->n_nodes = atomic_load_explicit(&st->nodes->pending, memory_order_acquire);
    r->n_series = atomic_load_explicit(&st->series->committed, memory_order_acquire);
    r->use_rollups = 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t cutoff = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - st->opt.retention_ms;
    for (int l = 0; l < ROLLUP_LEVELS; l++)
        r->rollup_from[l] = st->opt.retention_ms > 0 ? -rollup_floor(-cutoff, rollup_size_ms[l]) : INT64_MIN;
    *out = r;
    return STORE_OK;
}

void store_reader_end(store_reader *r)
{
    if (!r) return;
    mdb_cursor_close(r->cur);
    mdb_cursor_close(r->rcur);
    mdb_txn_abort(r->txn);
    ZSTD_freeDCtx(r->zctx);
    free(r->scratch);
    free(r->nodes);
    free(r->counts);
    free(r);
}

uint32_t store_series_max(const store_reader *r) { return r->n_series - 1; }
uint32_t store_node_max(const store_reader *r) { return r->n_nodes - 1; }
uint32_t store_string_max(const store_reader *r) { return r->n_strings - 1; }

uint32_t store_node_parent(const store_reader *r, uint32_t node)
{
    return node && node < r->n_nodes ? ((const node_entry *)table_at(r->st->nodes, node))->parent : 0;
}

uint32_t store_node_func(const store_reader *r, uint32_t node)
{
    return node && node < r->n_nodes ? ((const node_entry *)table_at(r->st->nodes, node))->func : 0;
}

const char *store_string(const store_reader *r, uint32_t id, uint32_t *len)
{
    if (!id || id >= r->n_strings) {
        if (len) *len = 0;
        return "";
    }
    const str_entry *e = table_at(r->st->strings, id);
    if (len) *len = e->len;
    return e->ptr;
}

int store_series_labels(const store_reader *r, uint32_t sid, store_label *out, int max)
{
    if (!sid || sid >= r->n_series) return 0;
    const series_entry *e = table_at(r->st->series, sid);
    for (uint32_t i = 0; i < e->n && (int)i < max; i++) {
        out[i].name = store_string(r, e->pairs[2 * i], NULL);
        out[i].value = store_string(r, e->pairs[2 * i + 1], NULL);
    }
    return (int)e->n;
}

const char *store_series_label(const store_reader *r, uint32_t sid, const char *name)
{
    if (!sid || sid >= r->n_series) return NULL;
    const series_entry *e = table_at(r->st->series, sid);
    for (uint32_t i = 0; i < e->n; i++)
        if (strcmp(store_string(r, e->pairs[2 * i], NULL), name) == 0)
            return store_string(r, e->pairs[2 * i + 1], NULL);
    return NULL;
}

store_status store_postings(const store_reader *r, const char *name, const char *value,
                            uint32_t **ids, size_t *n)
{
    return series_postings_copy(r->st, name, value, r->n_strings, r->n_series, ids, n);
}

/* Fills b from a block value (the caller sets series and times). */
static int parse_value(const MDB_val *v, const store_reader *r, store_block *b)
{
    block_header h;
    const void *payload;
    size_t plen;
    int compressed;
    if (block_parse_header(v->mv_data, v->mv_size, &h, &payload, &plen, &compressed)) return -1;
    b->until_ms = h.duration_ms; /* the caller adds the start */
    b->rate = h.rate;
    b->unit = store_string(r, h.unit, NULL);
    b->samples = h.samples;
    b->counts = h.count_sum;
    b->n_pairs = h.n_pairs;
    b->n_profiles = h.n_profiles;
    b->data = v->mv_data;  /* the whole value: store_block_pairs re-parses */
    b->data_len = v->mv_size;
    b->raw_len = h.raw_len;
    return 0;
}

static int parse_block(const MDB_val *k, const MDB_val *v, const store_reader *r, store_block *b)
{
    if (k->mv_size != BLOCK_KEY_LEN || parse_value(v, r, b)) return -1;
    int64_t duration = b->until_ms;
    block_key_parse(k->mv_data, &b->series, &b->from_ms, NULL);
    b->until_ms = b->from_ms + duration;
    return 0;
}

int store_blocks_scan(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms,
                      store_block_fn fn, void *ctx)
{
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, from_ms, 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, v;
    int rc = mdb_cursor_get(r->cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0) {
        uint32_t ksid;
        int64_t kfrom;
        block_key_parse(k.mv_data, &ksid, &kfrom, NULL);
        if (ksid != sid || kfrom >= until_ms) break;
        store_block b;
        if (parse_block(&k, &v, r, &b) == 0) {
            int stop = fn(&b, ctx);
            if (stop) return stop;
        }
        rc = mdb_cursor_get(r->cur, &k, &v, MDB_NEXT);
    }
    return 0;
}

void store_reader_use_rollups(store_reader *r, int on) { r->use_rollups = on; }

/* Calls fn for the rollup blocks of one level with buckets in [a, b). */
static int scan_rollups(store_reader *r, int level, uint32_t sid, int64_t a, int64_t b, store_block_fn fn, void *ctx)
{
    unsigned char key[ROLLUP_KEY_LEN];
    rollup_key(key, level, sid, a, 0);
    MDB_val k = { ROLLUP_KEY_LEN, key }, v;
    int rc = mdb_cursor_get(r->rcur, &k, &v, MDB_SET_RANGE);
    for (; rc == 0; rc = mdb_cursor_get(r->rcur, &k, &v, MDB_NEXT)) {
        int kl;
        uint32_t ksid;
        int64_t bucket;
        if (k.mv_size != ROLLUP_KEY_LEN) break;
        rollup_key_parse(k.mv_data, &kl, &ksid, &bucket, NULL);
        if (kl != level || ksid != sid || bucket >= b) break;
        store_block blk;
        if (parse_value(&v, r, &blk)) continue;
        blk.series = sid;
        blk.from_ms = bucket;
        blk.until_ms = bucket + rollup_size_ms[level];
        int stop = fn(&blk, ctx);
        if (stop) return stop;
    }
    return 0;
}

/* Covers [from, until) with whole buckets of this level where it can, and
 * finer levels (at last raw blocks) at the edges. */
static int plan(store_reader *r, uint32_t sid, int64_t from, int64_t until, int level, store_block_fn fn, void *ctx)
{
    if (from >= until) return 0;
    const int64_t lim = INT64_C(1) << 60; /* far beyond any real time: raw */
    if (level >= ROLLUP_LEVELS || !r->use_rollups || from < -lim || until > lim)
        return store_blocks_scan(r, sid, from, until, fn, ctx);
    int64_t size = rollup_size_ms[level];
    int64_t a = -rollup_floor(-from, size), b = rollup_floor(until, size);
    if (a < r->rollup_from[level]) a = r->rollup_from[level];
    if (a >= b) return plan(r, sid, from, until, level + 1, fn, ctx);
    int rc = plan(r, sid, from, a, level + 1, fn, ctx);
    if (!rc) rc = scan_rollups(r, level, sid, a, b, fn, ctx);
    if (!rc) rc = plan(r, sid, b, until, level + 1, fn, ctx);
    return rc;
}

int store_blocks_scan_merged(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms, store_block_fn fn,
                             void *ctx)
{
    return plan(r, sid, from_ms, until_ms, 0, fn, ctx);
}

int store_series_has_blocks(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms)
{
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, from_ms, 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, v;
    if (mdb_cursor_get(r->cur, &k, &v, MDB_SET_RANGE)) return 0;
    uint32_t ksid;
    int64_t kfrom;
    block_key_parse(k.mv_data, &ksid, &kfrom, NULL);
    return ksid == sid && kfrom < until_ms;
}

/* Parses a block's header and readies the decompression scratch. */
static store_status prepare(store_reader *r, const store_block *b, block_header *h, const void **payload,
                            size_t *plen, int *compressed)
{
    if (block_parse_header(b->data, b->data_len, h, payload, plen, compressed)) return STORE_EIO;
    if (*compressed && h->raw_len > r->scratch_cap) {
        char *s = realloc(r->scratch, h->raw_len);
        if (!s) return STORE_ENOMEM;
        r->scratch = s;
        r->scratch_cap = h->raw_len;
    }
    if (*compressed && !r->zctx && !(r->zctx = ZSTD_createDCtx())) return STORE_ENOMEM;
    return STORE_OK;
}

store_status store_block_accumulate(store_reader *r, const store_block *b, uint64_t weight,
                                    uint64_t *acc, uint64_t *touched, uint64_t *sum)
{
    block_header h;
    const void *payload;
    size_t plen;
    int compressed;
    store_status ss = prepare(r, b, &h, &payload, &plen, &compressed);
    if (ss) return ss;
    if (block_accumulate(&h, payload, plen, compressed, r->zctx, r->scratch, r->n_nodes, weight, acc, touched, sum))
        return STORE_EIO;
    return STORE_OK;
}

store_status store_block_pairs(store_reader *r, const store_block *b, const uint32_t **nodes,
                               const uint64_t **counts, uint32_t *n)
{
    block_header h;
    const void *payload;
    size_t plen;
    int compressed;
    store_status ss = prepare(r, b, &h, &payload, &plen, &compressed);
    if (ss) return ss;
    if (h.n_pairs > r->pairs_cap) {
        size_t cap = h.n_pairs;
        uint32_t *nd = realloc(r->nodes, cap * sizeof *nd);
        if (nd) r->nodes = nd;
        uint64_t *ct = realloc(r->counts, cap * sizeof *ct);
        if (ct) r->counts = ct;
        if (!nd || !ct) return STORE_ENOMEM;
        r->pairs_cap = cap;
    }
    if (block_decode(&h, payload, plen, compressed, r->zctx, r->scratch, r->nodes, r->counts)) return STORE_EIO;
    for (uint32_t i = 0; i < h.n_pairs; i++)
        if (r->nodes[i] >= r->n_nodes) return STORE_EIO;
    *nodes = r->nodes;
    *counts = r->counts;
    *n = h.n_pairs;
    return STORE_OK;
}
