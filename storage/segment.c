/* segment.c — a series' profiles of one closed 10-minute bucket, packed
 * into one value of the partition's `segments` database.
 *
 * Why.  A raw block is one profile, ~3 KB for 2,000 stacks: LMDB stores
 * it in whole 4 KiB overflow pages (half a page lost a block, 50 % of
 * bench_storage's blocks), and each block codes its node ids alone,
 * although a series' consecutive profiles hold mostly the same stacks.
 * Compaction (compact.c), once it has built a bucket's 10-minute rollup,
 * packs the bucket's raw blocks into one segment and deletes them, in the
 * same transaction: a profile is always in exactly one place.
 *
 * Layout.  The union of the node ids of every profile in the segment is
 * stored once, ordered by how many of the profiles hold each node (most
 * first; ascending ids within a count, delta-coded), and each profile is a
 * bitmap over that order, then the counts of its set bits (varints): nodes
 * every profile holds make runs of set bits that zstd squeezes, and the
 * ids themselves are paid once a segment, not once a profile.  Measured on
 * bench_storage's generator: 1.60 bytes a pair as blocks; packed, 1.01 in
 * an experiment (union 0.15, bitmaps ~0.53, counts 0.33) and 1.085 as
 * stored (with each profile's header; 1.11 in pages, where blocks took
 * 2.40); zstd over whole concatenated blocks gave only 1.52, the union
 * sorted by id 1.10, index gaps instead of bitmaps 1.06.
 *
 * Version 2 compresses every profile's payload together, in one zstd
 * frame (the area): a merge decompresses it once per segment and thread
 * (seg_dec keeps the last two), where version 1's frame per profile (~2.6
 * KB) rebuilt zstd's entropy tables each time: zstd was 49 % of a
 * single-thread merge's CPU.  Measured on bench_storage's segments:
 * decompression 3x faster, 5-8 % fewer bytes (consecutive profiles' bitmaps
 * repeat).  The cost: a query reading one profile of a segment
 * decompresses its whole area (~160 KB raw for 40 profiles of 2,000
 * pairs, ~0.1 ms).  Version 1 (each profile compressed apart) is still
 * read; a bucket packed again is written as version 2.
 *
 *   u8 version (2; 1), u8 flags (0), u32 checksum (low 32 bits of XXH3-64
 *   of every byte after it, seeded with version and flags), varint
 *   profiles, varint union size, varint union raw length, varint union
 *   stored length (0: not compressed), the union: varint groups, each
 *   group's size, the ids (deltas within a group, most-held group first);
 *   version 2: varint area raw length, varint area stored length (0: not
 *   compressed), the area: each profile's payload, one after another;
 *   then each profile:
 *     u8 tag (0xF5, never a block version), varint offset of the tag from
 *     the segment's first byte, u8 flags (block.c's: rate, zstd, samples
 *     unknown, gauge; 32: the payload is in the area), varints unit,
 *     pairs, profiles, raw payload length, duration ms, [f64 rate],
 *     samples, sum of counts, start − bucket, then the payload's offset in
 *     the area (version 2), or the payload length and the payload (version
 *     1, compressed apart when that made it smaller); a payload: bitmap
 *     (union size bits, low bit first), then the counts.
 *
 * A profile inside a segment is handed to readers like a block: its value
 * pointer (at its tag) stays valid in the map for the snapshot, and the
 * offset leads back to the union.  Samples are kept as block version 2
 * means them (a version-1 block's are converted when packed).
 *
 * Late data for a bucket already packed stays a raw block (readers walk
 * both, seg_iter), and marks the bucket for packing again (rollup.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "env.h"
#include "hash.h"
#include "radix.h"
#include "segment.h"
#include "../common/varint.h"

#define SEG_VERSION 2     /* written; 1 is read too */
#define SEG_PREFIX 6
#define SEG_TAG 0xF5
#define F_RATE 2
#define F_ZSTD 4
#define F_NO_SAMPLES 8
#define F_GAUGE 16
#define F_AREA 32

static int write_version = SEG_VERSION;

void seg_set_write_version(int version) { write_version = version == 1 ? 1 : SEG_VERSION; }

static uint64_t seed_of(const unsigned char *v) { return ((uint64_t)v[0] << 8) | v[1] | UINT64_C(0x5e60000); }

void seg_dec_free(seg_dec *d)
{
    if (!d) return;
    ZSTD_freeDCtx(d->zctx);
    free(d->scratch);
    free(d->uids);
    free(d->sorted);
    free(d->slot);
    for (int i = 0; i < 2; i++) free(d->area[i].b);
    memset(d, 0, sizeof *d);
}

void seg_dec_reset(seg_dec *d)
{
    d->useg = d->sseg = NULL;
    d->area[0].seg = d->area[1].seg = NULL;
}

static int dec_scratch(seg_dec *d, size_t n)
{
    if (n <= d->scratch_cap) return 0;
    char *s = realloc(d->scratch, n);
    if (!s) return -1;
    d->scratch = s;
    d->scratch_cap = n;
    return 0;
}

/* Decompresses src into d->scratch (raw bytes exactly); NULL on damage. */
static const unsigned char *inflate_into(seg_dec *d, const void *src, size_t len, size_t raw, int compressed)
{
    if (!compressed) return len == raw ? src : NULL;
    if (dec_scratch(d, raw ? raw : 1)) return NULL;
    if (!d->zctx && !(d->zctx = ZSTD_createDCtx())) return NULL;
    size_t n = ZSTD_decompressDCtx(d->zctx, d->scratch, raw, src, len);
    return !ZSTD_isError(n) && n == raw ? (const unsigned char *)d->scratch : NULL;
}

/* ---- the segment's header and union ---- */

typedef struct {
    int version;
    uint64_t n, nu, uraw, ulen;
    uint64_t araw, alen;      /* version 2: the area's raw and stored lengths */
    const unsigned char *ubytes, *abytes, *entries;
} seg_head;

static int head_parse(const unsigned char *v, size_t len, seg_head *h)
{
    const unsigned char *p = v + SEG_PREFIX, *end = v + len;
    if (len < SEG_PREFIX || v[0] < 1 || v[0] > SEG_VERSION) return -1;
    h->version = v[0];
    if (varint_get(&p, end, &h->n) || varint_get(&p, end, &h->nu) || varint_get(&p, end, &h->uraw) ||
        varint_get(&p, end, &h->ulen))
        return -1;
    size_t stored = h->ulen ? h->ulen : h->uraw;
    if (h->nu > UINT32_MAX || h->uraw > UINT32_MAX || stored > (size_t)(end - p)) return -1;
    h->ubytes = p;
    p += stored;
    h->araw = h->alen = 0;
    h->abytes = p;
    if (h->version >= 2) {
        if (varint_get(&p, end, &h->araw) || varint_get(&p, end, &h->alen)) return -1;
        stored = h->alen ? h->alen : h->araw;
        if (h->araw > UINT32_MAX || stored > (size_t)(end - p)) return -1;
        h->abytes = p;
        p += stored;
    }
    h->entries = p;
    return 0;
}

/* Segment val's area (version 2), decompressed into one of d's two
 * slots unless there already; NULL when damaged. */
static const struct seg_area *seg_area(seg_dec *d, const void *val, size_t len)
{
    for (int i = 0; i < 2; i++)
        if (d->area[i].seg == val) return &d->area[i];
    seg_head h;
    if (head_parse(val, len, &h) || h.version < 2) return NULL;
    struct seg_area *a = &d->area[d->area_next];
    a->seg = NULL;
    if (h.araw > a->cap) {
        unsigned char *b = realloc(a->b, h.araw);
        if (!b) return NULL;
        a->b = b;
        a->cap = h.araw;
    }
    if (h.alen) {
        if (!d->zctx && !(d->zctx = ZSTD_createDCtx())) return NULL;
        size_t n = ZSTD_decompressDCtx(d->zctx, a->b, h.araw, h.abytes, h.alen);
        if (ZSTD_isError(n) || n != h.araw) return NULL;
    } else if (h.araw) {
        memcpy(a->b, h.abytes, h.araw);
    }
    a->len = h.araw;
    a->seg = val;
    d->area_next ^= 1;
    return a;
}

int seg_union(seg_dec *d, const void *val, size_t len)
{
    if (d->useg == val) return 0;
    seg_head h;
    if (head_parse(val, len, &h)) return -1;
    if (h.nu > d->ucap) {
        uint32_t *u = realloc(d->uids, (h.nu ? h.nu : 1) * sizeof *u);
        if (!u) return -1;
        d->uids = u;
        d->ucap = h.nu;
    }
    /* the scratch may hold a profile's payload: decode the union first */
    d->useg = NULL;
    const unsigned char *p = inflate_into(d, h.ubytes, h.ulen ? h.ulen : h.uraw, h.uraw, h.ulen != 0);
    if (!p) return -1;
    const unsigned char *end = p + h.uraw, *sizes;
    uint64_t groups, k = 0, v;
    if (varint_get(&p, end, &groups) || groups > h.nu + 1) return -1;
    sizes = p;
    for (uint64_t g = 0; g < groups; g++)
        if (varint_get(&p, end, &v)) return -1;
    const unsigned char *ids = p;
    p = sizes;
    for (uint64_t g = 0; g < groups; g++) {
        uint64_t size = 0, id = 0;
        if (varint_get(&p, end, &size) || size > h.nu - k) return -1;
        for (uint64_t i = 0; i < size; i++) {
            if (varint_get(&ids, end, &v)) return -1;
            id += v;
            if (id > UINT32_MAX) return -1;
            d->uids[k++] = (uint32_t)id;
        }
    }
    if (k != h.nu || ids != end) return -1;
    d->nu = (uint32_t)h.nu;
    d->useg = val;
    return 0;
}

int seg_verify(const void *val, size_t len)
{
    const unsigned char *v = val;
    if (len < SEG_PREFIX || v[0] < 1 || v[0] > SEG_VERSION) return -1;
    uint32_t want = 0;
    for (int i = 0; i < 4; i++) want |= (uint32_t)v[2 + i] << (8 * i);
    return (uint32_t)hash_bytes(v + SEG_PREFIX, len - SEG_PREFIX, seed_of(v)) == want ? 0 : -1;
}

int seg_count(const void *val, size_t len, uint32_t *n)
{
    seg_head h;
    if (head_parse(val, len, &h) || h.n > UINT32_MAX) return -1;
    *n = (uint32_t)h.n;
    return 0;
}

/* ---- one profile inside a segment ---- */

typedef struct {
    block_header h;
    uint64_t back, from_delta;
    int compressed, in_area;
    uint64_t area_off;        /* in_area: the payload's offset in the area */
    const unsigned char *payload;
    size_t plen, total;       /* payload bytes; the entry's, from its tag */
} entry;

static int entry_parse(const unsigned char *p0, const unsigned char *end, entry *e)
{
    const unsigned char *p = p0;
    if (end - p < 3 || p[0] != SEG_TAG) return -1;
    p++;
    uint64_t back, unit, n_pairs, n_prof, raw_len, dur, samples, sum, fd, plen;
    if (varint_get(&p, end, &back) || p >= end) return -1;
    unsigned char flags = *p++;
    if (varint_get(&p, end, &unit) || varint_get(&p, end, &n_pairs) || varint_get(&p, end, &n_prof) ||
        varint_get(&p, end, &raw_len) || varint_get(&p, end, &dur))
        return -1;
    double rate = 0;
    if (flags & F_RATE) {
        if (end - p < 8) return -1;
        memcpy(&rate, p, 8);
        p += 8;
    }
    if (varint_get(&p, end, &samples) || varint_get(&p, end, &sum) || varint_get(&p, end, &fd) ||
        varint_get(&p, end, &plen))
        return -1;
    e->in_area = (flags & F_AREA) != 0;
    e->area_off = e->in_area ? plen : 0;
    if (e->in_area) plen = 0; /* the field was the offset: no payload here */
    if (plen > (uint64_t)(end - p) || unit > UINT32_MAX || n_pairs > UINT32_MAX || raw_len > UINT32_MAX ||
        n_prof > UINT32_MAX)
        return -1;
    memset(&e->h, 0, sizeof e->h);
    e->h.unit = (uint32_t)unit;
    e->h.n_pairs = (uint32_t)n_pairs;
    e->h.n_profiles = (uint32_t)n_prof;
    e->h.raw_len = (uint32_t)raw_len;
    e->h.duration_ms = (int64_t)dur;
    e->h.rate = rate;
    e->h.samples = samples;
    e->h.count_sum = sum;
    e->h.samples_unknown = (flags & F_NO_SAMPLES) != 0;
    e->h.gauge = (flags & F_GAUGE) != 0;
    e->h.version = 2;
    e->back = back;
    e->from_delta = fd;
    e->compressed = !e->in_area && (flags & F_ZSTD) != 0;
    e->payload = p;
    e->plen = (size_t)plen;
    e->total = (size_t)(p + plen - p0);
    return 0;
}

int seg_payloads_check(const void *val, size_t len, char *why, size_t whylen)
{
    seg_head h;
    if (head_parse(val, len, &h)) {
        snprintf(why, whylen, "its header does not parse");
        return -1;
    }
    const unsigned char *p = h.entries, *end = (const unsigned char *)val + len;
    uint64_t next = 0;
    for (uint64_t i = 0; i < h.n; i++) {
        entry e;
        if (entry_parse(p, end, &e)) return 0; /* seg_walk reports it */
        p += e.total;
        if (e.in_area != (h.version >= 2)) {
            snprintf(why, whylen, "profile %llu: its payload is %s, in a segment of version %d",
                     (unsigned long long)i, e.in_area ? "in the area" : "apart", h.version);
            return -1;
        }
        if (e.in_area && e.area_off != next) {
            snprintf(why, whylen, "profile %llu: its payload starts at byte %llu of the area, not %llu",
                     (unsigned long long)i, (unsigned long long)e.area_off, (unsigned long long)next);
            return -1;
        }
        next += e.h.raw_len;
    }
    if (h.version >= 2 && next != h.araw) {
        snprintf(why, whylen, "its profiles' payloads cover %llu bytes of its %llu-byte area", (unsigned long long)next,
                 (unsigned long long)h.araw);
        return -1;
    }
    return 0;
}

int seg_value_in_segment(const void *val, size_t len) { return len > 0 && *(const unsigned char *)val == SEG_TAG; }

int seg_value_header(const void *val, size_t len, block_header *h)
{
    if (seg_value_in_segment(val, len)) {
        entry e;
        if (entry_parse(val, (const unsigned char *)val + len, &e)) return -1;
        *h = e.h;
        return 0;
    }
    const void *payload;
    size_t plen;
    int compressed;
    return block_parse_header(val, len, h, &payload, &plen, &compressed);
}

static uint64_t le64(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n >= 8) {
        memcpy(&v, p, 8);
        return v;
    }
#endif
    for (size_t i = 0; i < n && i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Readies an entry: its union in d, its raw payload; answers the payload
 * (bitmap, then counts) or NULL when damaged. */
static const unsigned char *entry_open(seg_dec *d, const void *val, size_t len, entry *e)
{
    const unsigned char *v = val;
    if (entry_parse(v, v + len, e) || e->back == 0) return NULL;
    /* the union lies before the entry: bound its parse there */
    if (seg_union(d, v - e->back, (size_t)e->back)) return NULL;
    size_t nbm = ((size_t)d->nu + 7) / 8;
    if (e->h.raw_len < nbm) return NULL;
    if (!e->in_area) return inflate_into(d, e->payload, e->plen, e->h.raw_len, e->compressed);
    const struct seg_area *a = seg_area(d, v - e->back, (size_t)e->back);
    if (!a || e->area_off > a->len || e->h.raw_len > a->len - e->area_off) return NULL;
    return a->b + e->area_off;
}

int seg_value_accumulate(seg_dec *d, const void *val, size_t len, uint32_t n_nodes, uint64_t weight, uint64_t *acc,
                         uint64_t *touched, uint64_t *sum)
{
    if (!seg_value_in_segment(val, len)) {
        block_header h;
        const void *payload;
        size_t plen;
        int compressed;
        if (block_parse_header(val, len, &h, &payload, &plen, &compressed)) return -1;
        if (compressed && dec_scratch(d, h.raw_len ? h.raw_len : 1)) return -1;
        if (compressed && !d->zctx && !(d->zctx = ZSTD_createDCtx())) return -1;
        return block_accumulate(&h, payload, plen, compressed, d->zctx, d->scratch, n_nodes, weight, acc, touched,
                                sum);
    }
    entry e;
    const unsigned char *raw = entry_open(d, val, len, &e);
    if (!raw) return -1;
    size_t nbm = ((size_t)d->nu + 7) / 8;
    const unsigned char *pc = raw + nbm, *end = raw + e.h.raw_len;
    const uint32_t *u = d->uids;
    uint64_t total = 0, c;
    uint32_t left = e.h.n_pairs;
    for (size_t w = 0; w < nbm; w += 8) {
        uint64_t bits = le64(raw + w, nbm - w);
        while (bits) {
            size_t q = w * 8 + (size_t)__builtin_ctzll(bits);
            bits &= bits - 1;
            if (q >= d->nu || !left-- || varint_get(&pc, end, &c)) return -1;
            uint32_t node = u[q];
            if (node >= n_nodes) return -1;
            uint64_t a = acc[node];
            if (!a) touched[node >> 6] |= UINT64_C(1) << (node & 63);
            acc[node] = a + c * weight;
            total += c;
        }
    }
    if (left || pc != end) return -1;
    *sum = total * weight;
    return 0;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int seg_value_decode(seg_dec *d, const void *val, size_t len, uint32_t *nodes, uint64_t *counts)
{
    if (!seg_value_in_segment(val, len)) {
        block_header h;
        const void *payload;
        size_t plen;
        int compressed;
        if (block_parse_header(val, len, &h, &payload, &plen, &compressed)) return -1;
        if (compressed && dec_scratch(d, h.raw_len ? h.raw_len : 1)) return -1;
        if (compressed && !d->zctx && !(d->zctx = ZSTD_createDCtx())) return -1;
        return block_decode(&h, payload, plen, compressed, d->zctx, d->scratch, nodes, counts);
    }
    entry e;
    const unsigned char *raw = entry_open(d, val, len, &e);
    if (!raw) return -1;
    if (d->sseg != d->useg) { /* the union ascending, once a segment */
        if (d->nu > d->scap) {
            uint64_t *so = realloc(d->sorted, d->nu * sizeof *so), *sl = so ? realloc(d->slot, d->nu * sizeof *sl) : NULL;
            if (so) d->sorted = so;
            if (sl) d->slot = sl;
            if (!so || !sl) return -1;
            d->scap = d->nu;
        }
        for (uint32_t q = 0; q < d->nu; q++) d->sorted[q] = ((uint64_t)d->uids[q] << 32) | q;
        qsort(d->sorted, d->nu, sizeof *d->sorted, u64_cmp);
        d->sseg = d->useg;
    }
    size_t nbm = ((size_t)d->nu + 7) / 8;
    const unsigned char *pc = raw + nbm, *end = raw + e.h.raw_len;
    uint32_t k = 0;
    for (size_t w = 0; w < nbm; w += 8) { /* the counts by place */
        uint64_t bits = le64(raw + w, nbm - w);
        while (bits) {
            size_t q = w * 8 + (size_t)__builtin_ctzll(bits);
            bits &= bits - 1;
            if (q >= d->nu || k++ == e.h.n_pairs || varint_get(&pc, end, &d->slot[q])) return -1;
        }
    }
    if (k != e.h.n_pairs || pc != end) return -1;
    k = 0;
    for (uint32_t j = 0; j < d->nu; j++) { /* then by id */
        uint32_t q = (uint32_t)d->sorted[j];
        if (!((raw[q >> 3] >> (q & 7)) & 1)) continue;
        nodes[k] = (uint32_t)(d->sorted[j] >> 32);
        counts[k++] = d->slot[q];
    }
    return 0;
}

int seg_walk_begin(seg_walk *w, const void *val, size_t len, int64_t bucket)
{
    seg_head h;
    if (head_parse(val, len, &h)) return -1;
    w->seg = val;
    w->len = len;
    w->p = h.entries;
    w->end = (const unsigned char *)val + len;
    w->left = h.n;
    w->bucket = bucket;
    w->idx = 0;
    return 0;
}

int seg_walk_next(seg_walk *w, seg_item *out)
{
    if (!w->left) return w->p == w->end ? 0 : -1;
    entry e;
    if (entry_parse(w->p, w->end, &e) || e.back != (uint64_t)(w->p - (const unsigned char *)w->seg)) return -1;
    *out = (seg_item){ .from_ms = w->bucket + (int64_t)e.from_delta, .seq = w->idx++, .in_segment = 1, .data = w->p,
                       .data_len = e.total, .seg = w->seg, .seg_len = w->len, .bucket = w->bucket };
    w->p += e.total;
    w->left--;
    return 1;
}

/* ---- walking a series' profiles ---- */

static void raw_load(seg_iter *it, int rc, const MDB_val *k, const MDB_val *v)
{
    it->raw_ok = 0;
    if (rc) {
        if (rc != MDB_NOTFOUND) it->err = rc;
        return;
    }
    if (k->mv_size != BLOCK_KEY_LEN) return;
    uint32_t sid, seq;
    int64_t from;
    block_key_parse(k->mv_data, &sid, &from, &seq);
    if (sid != it->sid || from >= it->until) return;
    it->raw = (seg_item){ .from_ms = from, .seq = seq, .data = v->mv_data, .data_len = v->mv_size };
    it->raw_ok = 1;
}

/* Opens the segment at the cursor (or the next readable one); 0 when none. */
static int seg_load(seg_iter *it, int rc, MDB_val *k, MDB_val *v)
{
    for (;; rc = mdb_cursor_get(it->sc, k, v, MDB_NEXT)) {
        if (rc) {
            if (rc != MDB_NOTFOUND) it->err = rc;
            return 0;
        }
        if (k->mv_size != SEG_KEY_LEN) return 0;
        uint32_t sid;
        int64_t bucket;
        block_key_parse(k->mv_data, &sid, &bucket, NULL);
        if (sid != it->sid || bucket >= it->until) return 0;
        seg_head h;
        if (head_parse(v->mv_data, v->mv_size, &h)) continue;
        it->sv = v->mv_data;
        it->slen = v->mv_size;
        it->sp = h.entries;
        it->send = it->sv + it->slen;
        it->sbucket = bucket;
        it->sleft = (uint32_t)(h.n > UINT32_MAX ? UINT32_MAX : h.n);
        it->sidx = 0;
        return 1;
    }
}

/* Sets it->cur to the next profile of the segments in range. */
static void seg_advance(seg_iter *it)
{
    it->seg_ok = 0;
    for (;;) {
        while (it->sv && it->sleft) {
            entry e;
            if (entry_parse(it->sp, it->send, &e)) {
                it->sleft = 0; /* damaged: the rest of this segment is skipped */
                break;
            }
            const unsigned char *at = it->sp;
            it->sp += e.total;
            it->sleft--;
            int64_t from = it->sbucket + (int64_t)e.from_delta;
            uint32_t idx = it->sidx++;
            if (from < it->from) continue;
            if (from >= it->until) {
                it->sleft = 0;
                it->sv = NULL;
                return; /* later segments start later still */
            }
            it->cur = (seg_item){ .from_ms = from, .seq = idx, .in_segment = 1, .data = at, .data_len = e.total,
                                  .seg = it->sv, .seg_len = it->slen, .bucket = it->sbucket };
            it->seg_ok = 1;
            return;
        }
        if (!it->sv) return;
        MDB_val k, v;
        it->sv = NULL;
        if (!seg_load(it, mdb_cursor_get(it->sc, &k, &v, MDB_NEXT), &k, &v)) return;
    }
}

void seg_iter_begin(seg_iter *it, MDB_cursor *blocks, MDB_cursor *segs, uint32_t sid, int64_t from, int64_t until)
{
    memset(it, 0, sizeof *it);
    it->bc = blocks;
    it->sc = segs;
    it->sid = sid;
    it->from = from;
    it->until = until;
    if (from >= until) return;
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, from, 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, v;
    raw_load(it, mdb_cursor_get(blocks, &k, &v, MDB_SET_RANGE), &k, &v);
    if (!segs) return;
    /* the segment holding from starts at its bucket (floor, negatives too) */
    int64_t b = from / SEG_SPAN_MS * SEG_SPAN_MS;
    if (b > from) b = from < INT64_MIN + SEG_SPAN_MS ? INT64_MIN : b - SEG_SPAN_MS;
    block_key(key, sid, b, 0);
    k.mv_size = BLOCK_KEY_LEN;
    k.mv_data = key;
    if (seg_load(it, mdb_cursor_get(segs, &k, &v, MDB_SET_RANGE), &k, &v)) seg_advance(it);
}

int seg_iter_next(seg_iter *it, seg_item *out)
{
    if (it->seg_ok && (!it->raw_ok || it->cur.from_ms <= it->raw.from_ms)) {
        *out = it->cur;
        seg_advance(it);
        return 1;
    }
    if (!it->raw_ok) return 0;
    *out = it->raw;
    MDB_val k, v;
    raw_load(it, mdb_cursor_get(it->bc, &k, &v, MDB_NEXT), &k, &v);
    return 1;
}

int seg_edge(MDB_cursor *sc, uint32_t sid, int last, int64_t lo, int64_t hi, int64_t *from, int64_t *until)
{
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, last ? INT64_MAX : INT64_MIN, last ? UINT32_MAX : 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, v;
    int rc = mdb_cursor_get(sc, &k, &v, MDB_SET_RANGE);
    if (last) rc = rc == MDB_NOTFOUND ? mdb_cursor_get(sc, &k, &v, MDB_LAST)
                   : rc == 0 && memcmp(k.mv_data, key, BLOCK_KEY_LEN) ? mdb_cursor_get(sc, &k, &v, MDB_PREV) : rc;
    for (; rc == 0 && k.mv_size == SEG_KEY_LEN; rc = mdb_cursor_get(sc, &k, &v, last ? MDB_PREV : MDB_NEXT)) {
        uint32_t ksid;
        int64_t bucket;
        block_key_parse(k.mv_data, &ksid, &bucket, NULL);
        if (ksid != sid || (last ? bucket + SEG_SPAN_MS <= lo : bucket >= hi)) return 0;
        seg_head h;
        if (head_parse(v.mv_data, v.mv_size, &h)) continue;
        const unsigned char *p = h.entries, *end = (const unsigned char *)v.mv_data + v.mv_size;
        int found = 0;
        for (uint64_t i = 0; i < h.n; i++) {
            entry e;
            if (entry_parse(p, end, &e)) break;
            p += e.total;
            int64_t f = bucket + (int64_t)e.from_delta;
            if (f < lo || f >= hi) continue;
            if (!last || !found || f >= *from) {
                *from = f;
                *until = f + e.h.duration_ms;
                found = 1;
            }
            if (!last) return 1;
        }
        if (found) return 1;
    }
    return 0;
}

/* ---- packing ---- */

typedef struct {
    block_header h;
    int64_t from;
    size_t at;                /* first pair in the pack's arrays */
} prof;

typedef struct {
    prof *p;
    size_t n, cap;
    uint32_t *nodes;
    uint64_t *counts;
    size_t n_pairs, cap_pairs;
} pack;

static void pack_free(pack *k)
{
    free(k->p);
    free(k->nodes);
    free(k->counts);
}

static int pack_room(pack *k, size_t pairs)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        prof *p = realloc(k->p, cap * sizeof *p);
        if (!p) return -1;
        k->p = p;
        k->cap = cap;
    }
    if (k->n_pairs + pairs > k->cap_pairs) {
        size_t cap = k->cap_pairs * 2 > k->n_pairs + pairs ? k->cap_pairs * 2 : k->n_pairs + pairs + 4096;
        uint32_t *nd = realloc(k->nodes, cap * sizeof *nd);
        if (nd) k->nodes = nd;
        uint64_t *ct = realloc(k->counts, cap * sizeof *ct);
        if (ct) k->counts = ct;
        if (!nd || !ct) return -1;
        k->cap_pairs = cap;
    }
    return 0;
}

RADIX_SORT_U32_BY(sort_ids, uint32_t, )

typedef struct { unsigned char *b; size_t n, cap; } obuf;

static int ob_room(obuf *o, size_t more)
{
    if (o->n + more <= o->cap) return 0;
    size_t cap = o->cap * 2 > o->n + more ? o->cap * 2 : o->n + more + 4096;
    unsigned char *b = realloc(o->b, cap);
    if (!b) return -1;
    o->b = b;
    o->cap = cap;
    return 0;
}

static void ob_var(obuf *o, uint64_t v) { o->n = (size_t)(varint_put(o->b + o->n, v) - o->b); }

/* Appends raw compressed when that is smaller: answers the stored length
 * and sets *z; -1 out of memory. */
static ssize_t ob_squeeze(obuf *o, const unsigned char *raw, size_t len, void *zcctx, int *z)
{
    *z = 0;
    size_t bound = ZSTD_compressBound(len);
    if (ob_room(o, bound + len)) return -1;
    if (len >= 64) {
        size_t c = zcctx ? ZSTD_compressCCtx(zcctx, o->b + o->n, bound, raw, len, 1)
                         : ZSTD_compress(o->b + o->n, bound, raw, len, 1);
        if (!ZSTD_isError(c) && c > 0 && c + 4 < len) {
            *z = 1;
            return (ssize_t)c;
        }
    }
    memcpy(o->b + o->n, raw, len);
    return (ssize_t)len;
}

/* Encodes the pack into a segment value (o). */
static store_status pack_encode(pack *k, int64_t bucket, void *zcctx, obuf *o)
{
    store_status ss = STORE_ENOMEM;
    size_t np = k->n_pairs;
    uint32_t *ids = malloc((np ? np : 1) * sizeof *ids), *tmp = malloc((np ? np : 1) * sizeof *tmp);
    uint32_t *freq = NULL, *order = NULL, *pos = NULL, *gsize = NULL;
    uint64_t *slot = NULL;
    size_t *aoff = NULL;
    obuf raw = { 0 }, u = { 0 };
    if (!ids || !tmp) goto out;
    memcpy(ids, k->nodes, np * sizeof *ids);
    uint32_t *sorted = sort_ids(ids, tmp, np);
    if (sorted == tmp) { /* the sorted ids are ids from here on */
        tmp = ids;
        ids = sorted;
    }
    /* the union (ids ascending) and how many profiles hold each node */
    size_t nu = 0;
    uint32_t *uf = tmp; /* reused: counts per union entry */
    for (size_t i = 0; i < np; i++) {
        if (nu && ids[nu - 1] == ids[i]) uf[nu - 1]++;
        else {
            ids[nu] = ids[i];
            uf[nu++] = 1;
        }
    }
    uint32_t maxf = (uint32_t)k->n;
    freq = calloc((size_t)maxf + 2, sizeof *freq);
    order = malloc((nu ? nu : 1) * sizeof *order);
    pos = malloc((nu ? nu : 1) * sizeof *pos);
    slot = calloc(nu ? nu : 1, sizeof *slot);
    gsize = calloc((size_t)maxf + 2, sizeof *gsize);
    if (!freq || !order || !pos || !slot || !gsize) goto out;
    for (size_t i = 0; i < nu; i++) {
        if (uf[i] > maxf) uf[i] = maxf; /* a node twice in one profile cannot happen; be safe */
        gsize[uf[i]]++;
    }
    /* start of each frequency group, most-held first */
    size_t at = 0;
    for (uint32_t f = maxf + 1; f-- > 0;) {
        freq[f] = (uint32_t)at;
        at += gsize[f];
    }
    for (size_t i = 0; i < nu; i++) {
        uint32_t q = freq[uf[i]]++;
        order[q] = ids[i];
        pos[i] = q;
    }
    /* the union: groups, their sizes, deltas within each */
    uint32_t groups = 0;
    for (uint32_t f = maxf + 1; f-- > 0;) groups += gsize[f] ? 1 : 0;
    if (ob_room(&raw, (size_t)(groups + 1) * VARINT_MAX + nu * 5 + 16)) goto out;
    ob_var(&raw, groups);
    for (uint32_t f = maxf + 1; f-- > 0;)
        if (gsize[f]) ob_var(&raw, gsize[f]);
    {
        size_t q = 0;
        for (uint32_t f = maxf + 1; f-- > 0;) {
            uint32_t prev = 0;
            for (uint32_t i = 0; i < gsize[f]; i++, q++) {
                ob_var(&raw, order[q] - prev);
                prev = order[q];
            }
        }
    }
    /* header, then the union */
    if (ob_room(o, SEG_PREFIX + 4 * VARINT_MAX)) goto out;
    o->n = SEG_PREFIX;
    ob_var(o, k->n);
    ob_var(o, nu);
    ob_var(o, raw.n);
    {
        int z;
        ssize_t len = ob_squeeze(&u, raw.b, raw.n, zcctx, &z);
        if (len < 0 || ob_room(o, VARINT_MAX + (size_t)len)) goto out;
        ob_var(o, z ? (uint64_t)len : 0);
        memcpy(o->b + o->n, u.b, (size_t)len);
        o->n += (size_t)len;
    }
    /* each profile's payload into the area: bitmap over the order, then
     * its counts in that order */
    size_t nbm = (nu + 7) / 8;
    aoff = malloc((k->n + 1) * sizeof *aoff);
    if (!aoff) goto out;
    raw.n = 0;
    for (size_t j = 0; j < k->n; j++) {
        prof *pf = &k->p[j];
        uint32_t n = pf->h.n_pairs;
        size_t b0 = raw.n;
        aoff[j] = b0;
        if (ob_room(&raw, nbm + (size_t)n * VARINT_MAX + 8)) goto out;
        unsigned char *bm = raw.b + b0;
        memset(bm, 0, nbm);
        /* A profile's nodes ascend, so each is found after the one
         * before: a galloping search from there (steps 1, 2, 4, ..., then
         * halving) takes ~log2 of the union's gap per pair, where a binary
         * search of the whole union took log2 of its size, each probe a
         * cache miss (15 % of the server's CPU in a round of bench_fleet's
         * compaction). */
        size_t from = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t node = k->nodes[pf->at + i];
            size_t lo = from, step = 1, hi;
            while (lo + step < nu && ids[lo + step] < node) {
                lo += step;
                step *= 2;
            }
            hi = lo + step < nu ? lo + step : nu; /* ids[hi] >= node, or hi = nu */
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (ids[mid] < node) lo = mid + 1;
                else hi = mid;
            }
            from = lo;
            uint32_t q = pos[lo];
            bm[q >> 3] |= (unsigned char)(1u << (q & 7));
            slot[q] = k->counts[pf->at + i];
        }
        raw.n = b0 + nbm;
        for (size_t w = 0; w < nbm; w += 8) {
            uint64_t bits = le64(bm + w, nbm - w);
            while (bits) {
                size_t q = w * 8 + (size_t)__builtin_ctzll(bits);
                bits &= bits - 1;
                ob_var(&raw, slot[q]);
            }
        }
    }
    aoff[k->n] = raw.n;
    if (write_version >= 2) {
        int z;
        u.n = 0;
        ssize_t len = ob_squeeze(&u, raw.b, raw.n, zcctx, &z);
        if (len < 0 || ob_room(o, 2 * VARINT_MAX + (size_t)len)) goto out;
        ob_var(o, raw.n);
        ob_var(o, z ? (uint64_t)len : 0);
        memcpy(o->b + o->n, u.b, (size_t)len);
        o->n += (size_t)len;
    }
    /* then each profile's entry (version 1: with its payload, compressed
     * apart) */
    for (size_t j = 0; j < k->n; j++) {
        prof *pf = &k->p[j];
        int z = 0;
        ssize_t plen = 0;
        if (write_version < 2) {
            u.n = 0;
            if ((plen = ob_squeeze(&u, raw.b + aoff[j], aoff[j + 1] - aoff[j], zcctx, &z)) < 0) goto out;
        }
        if (ob_room(o, 1 + 12 * VARINT_MAX + 8 + (size_t)plen)) goto out;
        size_t tag_at = o->n;
        const block_header *h = &pf->h;
        unsigned char flags = (unsigned char)((h->rate > 0 ? F_RATE : 0) | (write_version >= 2 ? F_AREA : 0) |
                                              (z ? F_ZSTD : 0) | (h->samples_unknown ? F_NO_SAMPLES : 0) |
                                              (h->gauge ? F_GAUGE : 0));
        o->b[o->n++] = SEG_TAG;
        ob_var(o, tag_at);
        o->b[o->n++] = flags;
        ob_var(o, h->unit);
        ob_var(o, h->n_pairs);
        ob_var(o, h->n_profiles);
        ob_var(o, aoff[j + 1] - aoff[j]);
        ob_var(o, (uint64_t)h->duration_ms);
        if (h->rate > 0) {
            memcpy(o->b + o->n, &h->rate, 8);
            o->n += 8;
        }
        ob_var(o, h->samples_unknown ? 0 : h->samples);
        ob_var(o, h->count_sum);
        ob_var(o, (uint64_t)(pf->from - bucket));
        if (write_version >= 2) {
            ob_var(o, aoff[j]);
        } else {
            ob_var(o, (uint64_t)plen);
            memcpy(o->b + o->n, u.b, (size_t)plen);
            o->n += (size_t)plen;
        }
    }
    o->b[0] = (unsigned char)write_version;
    o->b[1] = 0;
    uint32_t sum = (uint32_t)hash_bytes(o->b + SEG_PREFIX, o->n - SEG_PREFIX, seed_of(o->b));
    for (int i = 0; i < 4; i++) o->b[2 + i] = (unsigned char)(sum >> (8 * i));
    ss = STORE_OK;
out:
    free(ids);
    free(tmp);
    free(freq);
    free(order);
    free(pos);
    free(slot);
    free(gsize);
    free(aoff);
    free(raw.b);
    free(u.b);
    return ss;
}

store_status seg_pack(MDB_txn *txn, MDB_dbi blocks, MDB_dbi segs, pdict_r *r, void *zcctx, seg_dec *d, uint32_t sid,
                      int64_t bucket, int64_t keep_from, uint64_t *dropped, size_t *written)
{
    MDB_cursor *bc = NULL, *sc = NULL;
    int rc = mdb_cursor_open(txn, blocks, &bc);
    if (!rc) rc = mdb_cursor_open(txn, segs, &sc);
    if (rc) {
        if (bc) mdb_cursor_close(bc);
        return env_status(rc);
    }
    seg_dec_reset(d);
    pack k = { 0 };
    store_status ss = STORE_OK;
    uint32_t n_raw = 0, n_segs = 0;
    uint64_t ndrop = 0;
    seg_iter it;
    seg_item item;
    seg_iter_begin(&it, bc, sc, sid, bucket, bucket + SEG_SPAN_MS);
    while (!ss && seg_iter_next(&it, &item)) {
        if (item.in_segment) n_segs = 1;
        else n_raw++;
        if (item.from_ms < keep_from) {
            ndrop++;
            continue;
        }
        block_header h;
        if (seg_value_header(item.data, item.data_len, &h)) {
            ss = STORE_EIO;
            break;
        }
        if (h.version < 2) { /* samples as version 2 means them */
            const char *unit = pdict_r_string(r, h.unit, NULL);
            if (!unit) {
                ss = STORE_EIO;
                break;
            }
            if (!block_samples_known(&h, unit)) {
                h.samples_unknown = 1;
                h.samples = 0;
            }
            h.version = 2;
        }
        if (pack_room(&k, h.n_pairs)) {
            ss = STORE_ENOMEM;
            break;
        }
        if (seg_value_decode(d, item.data, item.data_len, k.nodes + k.n_pairs, k.counts + k.n_pairs)) {
            ss = STORE_EIO;
            break;
        }
        uint64_t sum = 0;
        for (uint32_t i = 0; i < h.n_pairs; i++) sum += k.counts[k.n_pairs + i];
        h.count_sum = sum;
        k.p[k.n++] = (prof){ .h = h, .from = item.from_ms, .at = k.n_pairs };
        k.n_pairs += h.n_pairs;
    }
    if (!ss && it.err) ss = env_status(it.err);
    seg_dec_reset(d);
    obuf o = { 0 };
    /* nothing raw and nothing dropped: the segment is what it would be */
    if (!ss && (n_raw || ndrop)) {
        if (k.n) ss = pack_encode(&k, bucket, zcctx, &o);
        unsigned char key[BLOCK_KEY_LEN];
        block_key(key, sid, bucket, 0);
        MDB_val kv = { BLOCK_KEY_LEN, key }, v;
        while (!ss && n_raw && (rc = mdb_cursor_get(bc, &kv, &v, MDB_SET_RANGE)) == 0) {
            uint32_t ksid;
            int64_t from;
            if (kv.mv_size != BLOCK_KEY_LEN) break;
            block_key_parse(kv.mv_data, &ksid, &from, NULL);
            if (ksid != sid || from >= bucket + SEG_SPAN_MS) break;
            if ((rc = mdb_cursor_del(bc, 0))) ss = env_status(rc);
            /* seek again rather than trust the cursor after a delete */
            block_key(key, sid, from, 0);
            kv.mv_size = BLOCK_KEY_LEN;
            kv.mv_data = key;
        }
        if (!ss && n_raw && rc && rc != MDB_NOTFOUND) ss = env_status(rc);
        block_key(key, sid, bucket, 0);
        kv.mv_size = BLOCK_KEY_LEN;
        kv.mv_data = key;
        if (!ss && k.n) {
            MDB_val sv = { o.n, o.b };
            if ((rc = mdb_put(txn, segs, &kv, &sv, 0))) ss = env_status(rc);
            else if (written) *written += o.n;
        } else if (!ss && n_segs) {
            rc = mdb_del(txn, segs, &kv, NULL);
            if (rc && rc != MDB_NOTFOUND) ss = env_status(rc);
        }
    }
    if (!ss && dropped) *dropped += ndrop;
    free(o.b);
    pack_free(&k);
    mdb_cursor_close(bc);
    mdb_cursor_close(sc);
    return ss;
}
