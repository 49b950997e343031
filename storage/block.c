/* block.c — the encoded form of one stored profile: its (node, count) pairs.
 *
 * Value layout (all integers LEB128 varints unless said):
 *   u8 version (2), u8 flags (4 = payload zstd-compressed, 2 = has rate,
 *   8 = samples unknown, 16 = gauge), u32 checksum (little-endian: the low
 *   32 bits of XXH3-64 of every byte after it, seeded with the version and
 *   flags), unit string id, n_pairs, n_profiles,
 *   raw payload length, length of the node column, duration in ms, [f64
 *   rate, little-endian, when flag 2], samples (the number of samples
 *   behind the values, 0 with flag 8), sum of the counts as stored
 *   (weighted values in a rollup), payload.
 * Samples are not values: a Go CPU profile of 395 samples holds 3.95e9
 * nanoseconds, and every interval and test needs the 395.  A gauge block
 * holds a snapshot (heap in use, goroutines): merges over time average
 * gauges per series instead of adding them (query/merge.c).
 * Version 1 (flamedb-5 before both) had neither flag, no checksum, and
 * samples always the sum of the raw counts: read as samples only in a unit
 * that counts them (block_samples_known).
 * The checksum is for `flamedb check` (block_verify): merges do not pay
 * for it; a value whose bytes were changed (a flipped bit on disk) is found
 * there, where a decode alone would take a changed node id or count for
 * good data.
 * The raw payload is columnar: n_pairs node-id deltas (ids ascending, the
 * first delta from 0), then n_pairs counts.  Columns compress better than
 * interleaved pairs: the counts of a sampled profile are mostly tiny and
 * repeat.  Knowing where the counts start lets a merge walk both columns
 * in one pass (block_accumulate).
 *
 * The payload is zstd-compressed (level 1) when that makes it smaller.  zstd
 * rather than lz4: its entropy coding takes blocks from 2.0 to 1.6 bytes a
 * pair, and with a reused decompression context a merge still runs above
 * 100 M pairs a second (bench/README.md).  Except a small raw block: a
 * profile's block as ingest writes it, with a payload under
 * BLOCK_ZSTD_MIN_RAW bytes, is kept as varints.  Such a value sits inline
 * in a B-tree leaf page either way (with 4 KiB pages and these 16-byte
 * keys LMDB moves a value past 2,014 bytes to overflow pages, and a raw
 * block's header takes at most ~60),
 * so zstd would save a share of a page, ~13 % of bench_fleet's 1,540-byte
 * payloads (500 pairs), for 10-14 us of the request path a profile: 5-6 %
 * of the server's CPU under bench_fleet.  And only for minutes: compaction
 * packs a closed bucket's raw blocks into a segment (segment.c), which
 * compresses them all together.  Rollups and larger blocks are compressed
 * as before.
 *
 * Keys are 16 bytes: series id (big-endian u32), window start in ms
 * (big-endian, sign bit flipped), and a sequence number that keeps two
 * profiles with the same start apart.  Big-endian makes LMDB's byte order
 * the order of (series, time), so a time range is one cursor walk. */
#include <math.h>
#include <zstd.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "hash.h"
#include "../common/varint.h"

#define BLOCK_VERSION 2
#define FLAG_RATE 2
#define FLAG_ZSTD 4
#define FLAG_NO_SAMPLES 8
#define FLAG_GAUGE 16
#define BLOCK_PREFIX 6   /* version, flags, checksum */

/* The version and flags seed the checksum, so a flipped flag (gauge,
 * samples unknown) is found like a flipped byte of the rest. */
static uint64_t checksum_seed(const unsigned char *val) { return ((uint64_t)val[0] << 8) | val[1]; }

int block_samples_known(const block_header *h, const char *unit)
{
    if (h->version >= 2) return !h->samples_unknown;
    return strcmp(unit, "samples") == 0 || strcmp(unit, "count") == 0;
}

const char *store_value_unit(const char *unit, double rate, uint64_t *weight)
{
    if (rate > 0 && strcmp(unit, "samples") == 0) {
        double w = llround(1e9 / rate);
        *weight = w < 1 ? 1 : (uint64_t)w;
        return "nanoseconds";
    }
    *weight = 1;
    return unit;
}

void block_key(unsigned char key[BLOCK_KEY_LEN], uint32_t sid, int64_t from_ms, uint32_t seq)
{
    uint64_t t = (uint64_t)from_ms ^ (UINT64_C(1) << 63);
    for (int i = 0; i < 4; i++) key[i] = (unsigned char)(sid >> (24 - 8 * i));
    for (int i = 0; i < 8; i++) key[4 + i] = (unsigned char)(t >> (56 - 8 * i));
    for (int i = 0; i < 4; i++) key[12 + i] = (unsigned char)(seq >> (24 - 8 * i));
}

void block_key_parse(const unsigned char *key, uint32_t *sid, int64_t *from_ms, uint32_t *seq)
{
    uint32_t s = 0, q = 0;
    uint64_t t = 0;
    for (int i = 0; i < 4; i++) s = (s << 8) | key[i];
    for (int i = 0; i < 8; i++) t = (t << 8) | key[4 + i];
    for (int i = 0; i < 4; i++) q = (q << 8) | key[12 + i];
    if (sid) *sid = s;
    if (from_ms) *from_ms = (int64_t)(t ^ (UINT64_C(1) << 63));
    if (seq) *seq = q;
}

store_status block_payload_encode(const uint32_t *nodes, const uint64_t *counts, uint32_t n, void *zcctx,
                                  size_t zstd_min, block_payload *out)
{
    memset(out, 0, sizeof *out);
    size_t raw_cap = (size_t)n * 15 + 1;
    unsigned char *raw = malloc(raw_cap);
    if (!raw) return STORE_ENOMEM;
    unsigned char *p = raw;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        p = varint_put(p, nodes[i] - prev);
        prev = nodes[i];
    }
    size_t nodes_bytes = (size_t)(p - raw);
    uint64_t count_sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        p = varint_put(p, counts[i]);
        count_sum += counts[i];
    }
    size_t raw_len = (size_t)(p - raw);
    size_t bound = ZSTD_compressBound(raw_len);
    unsigned char *z = raw_len >= zstd_min ? malloc(bound) : NULL;
    size_t clen = !z ? 0
                  : zcctx ? ZSTD_compressCCtx(zcctx, z, bound, raw, raw_len, 1)
                          : ZSTD_compress(z, bound, raw, raw_len, 1);
    if (z && !ZSTD_isError(clen) && clen > 0 && clen + 4 < raw_len) {
        free(raw);
        out->buf = z;
        out->len = clen;
        out->compressed = 1;
    } else {
        free(z);
        out->buf = raw;
        out->len = raw_len;
    }
    out->raw_len = (uint32_t)raw_len;
    out->nodes_bytes = (uint32_t)nodes_bytes;
    out->count_sum = count_sum;
    return STORE_OK;
}

store_status block_encode_with(const block_header *h, const block_payload *pl, void **out, size_t *out_len)
{
    unsigned char *val = malloc(BLOCK_PREFIX + 9 * VARINT_MAX + 8 + pl->len);
    if (!val) return STORE_ENOMEM;
    unsigned char *q = val + BLOCK_PREFIX;
    q = varint_put(q, h->unit);
    q = varint_put(q, h->n_pairs);
    q = varint_put(q, h->n_profiles);
    q = varint_put(q, pl->raw_len);
    q = varint_put(q, pl->nodes_bytes);
    q = varint_put(q, (uint64_t)h->duration_ms);
    unsigned char flags = pl->compressed ? FLAG_ZSTD : 0;
    if (h->samples_unknown) flags |= FLAG_NO_SAMPLES;
    if (h->gauge) flags |= FLAG_GAUGE;
    if (h->rate > 0) {
        flags |= FLAG_RATE;
        memcpy(q, &h->rate, 8);
        q += 8;
    }
    q = varint_put(q, h->samples_unknown ? 0 : h->samples);
    q = varint_put(q, pl->count_sum);
    memcpy(q, pl->buf, pl->len);
    q += pl->len;
    val[0] = BLOCK_VERSION;
    val[1] = flags;
    uint32_t sum = (uint32_t)hash_bytes(val + BLOCK_PREFIX, (size_t)(q - val) - BLOCK_PREFIX, checksum_seed(val));
    for (int i = 0; i < 4; i++) val[2 + i] = (unsigned char)(sum >> (8 * i));
    *out = val;
    *out_len = (size_t)(q - val);
    return STORE_OK;
}

int block_verify(const void *val, size_t len)
{
    const unsigned char *p = val;
    if (len < 2 || p[0] < 1 || p[0] > BLOCK_VERSION) return -1;
    if (p[0] == 1) return 1;
    if (len < BLOCK_PREFIX) return -1;
    uint32_t want = 0;
    for (int i = 0; i < 4; i++) want |= (uint32_t)p[2 + i] << (8 * i);
    return (uint32_t)hash_bytes(p + BLOCK_PREFIX, len - BLOCK_PREFIX, checksum_seed(p)) == want ? 0 : -1;
}

store_status block_encode(const block_header *h, const uint32_t *nodes, const uint64_t *counts,
                          void *zcctx, void **out, size_t *out_len)
{
    block_payload pl;
    store_status ss = block_payload_encode(nodes, counts, h->n_pairs, zcctx, BLOCK_ZSTD_MIN, &pl);
    if (!ss) ss = block_encode_with(h, &pl, out, out_len);
    free(pl.buf);
    return ss;
}

int block_parse_header(const void *val, size_t len, block_header *h,
                       const void **payload, size_t *payload_len, int *compressed)
{
    const unsigned char *p = val, *end = p + len;
    if (len < 2 || p[0] < 1 || p[0] > BLOCK_VERSION) return -1;
    h->version = p[0];
    unsigned char flags = p[1];
    h->samples_unknown = (flags & FLAG_NO_SAMPLES) != 0;
    h->gauge = (flags & FLAG_GAUGE) != 0;
    size_t prefix = p[0] >= 2 ? BLOCK_PREFIX : 2;
    if (len < prefix) return -1;
    p += prefix;
    uint64_t unit, n_pairs, n_profiles, raw_len, nodes_bytes, duration, samples;
    if (varint_get(&p, end, &unit) || varint_get(&p, end, &n_pairs) ||
        varint_get(&p, end, &n_profiles) || varint_get(&p, end, &raw_len) ||
        varint_get(&p, end, &nodes_bytes) || varint_get(&p, end, &duration))
        return -1;
    h->rate = 0;
    if (flags & FLAG_RATE) {
        if (end - p < 8) return -1;
        memcpy(&h->rate, p, 8);
        p += 8;
    }
    uint64_t count_sum;
    if (varint_get(&p, end, &samples) || varint_get(&p, end, &count_sum)) return -1;
    if (n_pairs > UINT32_MAX || raw_len > UINT32_MAX || unit > UINT32_MAX || nodes_bytes > raw_len) return -1;
    h->unit = (uint32_t)unit;
    h->n_pairs = (uint32_t)n_pairs;
    h->n_profiles = (uint32_t)n_profiles;
    h->raw_len = (uint32_t)raw_len;
    h->nodes_bytes = (uint32_t)nodes_bytes;
    h->duration_ms = (int64_t)duration;
    h->samples = samples;
    h->count_sum = count_sum;
    *payload = p;
    *payload_len = (size_t)(end - p);
    *compressed = (flags & FLAG_ZSTD) != 0;
    return 0;
}

/* Makes the raw payload available: in place, or decompressed into scratch
 * (at least h->raw_len bytes).  Answers NULL when the payload is damaged. */
static const unsigned char *raw_payload(const block_header *h, const void *payload, size_t payload_len,
                                        int compressed, void *zctx, char *scratch)
{
    if (!compressed) return payload_len == h->raw_len ? payload : NULL;
    size_t n = zctx ? ZSTD_decompressDCtx(zctx, scratch, h->raw_len, payload, payload_len)
                    : ZSTD_decompress(scratch, h->raw_len, payload, payload_len);
    return !ZSTD_isError(n) && n == h->raw_len ? (const unsigned char *)scratch : NULL;
}

int block_decode(const block_header *h, const void *payload, size_t payload_len, int compressed,
                 void *zctx, char *scratch, uint32_t *nodes, uint64_t *counts)
{
    const unsigned char *p = raw_payload(h, payload, payload_len, compressed, zctx, scratch);
    if (!p) return -1;
    const unsigned char *end = p + h->raw_len;
    uint64_t node = 0, v;
    for (uint32_t i = 0; i < h->n_pairs; i++) {
        if (varint_get(&p, end, &v)) return -1;
        node += v;
        if (node > UINT32_MAX) return -1;
        nodes[i] = (uint32_t)node;
    }
    for (uint32_t i = 0; i < h->n_pairs; i++) {
        if (varint_get(&p, end, &v)) return -1;
        counts[i] = v;
    }
    return 0;
}

int block_accumulate(const block_header *h, const void *payload, size_t payload_len, int compressed,
                     void *zctx, char *scratch, uint32_t n_nodes, uint64_t weight,
                     uint64_t *acc, uint64_t *touched, uint64_t *sum)
{
    const unsigned char *raw = raw_payload(h, payload, payload_len, compressed, zctx, scratch);
    if (!raw) return -1;
    const unsigned char *pn = raw, *nend = raw + h->nodes_bytes, *pc = nend, *end = raw + h->raw_len;
    uint64_t node = 0, total = 0, d, c;
    for (uint32_t i = 0; i < h->n_pairs; i++) {
        if (varint_get(&pn, nend, &d) || varint_get(&pc, end, &c)) return -1;
        node += d;
        if (node >= n_nodes) return -1;
        /* A node whose sum is not 0 is already marked: the bitmap is
         * written on a node's first hit only, not on every pair. */
        uint64_t a = acc[node];
        if (!a) touched[node >> 6] |= UINT64_C(1) << (node & 63);
        acc[node] = a + c * weight;
        total += c;
    }
    *sum = total * weight;
    return 0;
}
