/* pdict.c — a partition's dictionaries: the writer's maps and open chunks,
 * the readers' views of the map (see pdict.h for the layout). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "env.h"
#include "idset.h"
#include "nodetab.h"
#include "pdict.h"
#include "table.h"
#include "../common/varint.h"

#define STACKS_MIN 4096u

static const MDB_val counts_key = { 6, "counts" }, format_key = { 4, "dict" };

int pdict_init_meta(MDB_txn *txn, MDB_dbi meta, int64_t start_ms, int64_t len_ms)
{
    MDB_val v;
    int rc = mdb_get(txn, meta, (MDB_val *)&counts_key, &v);
    if (rc != MDB_NOTFOUND) return rc;
    uint32_t counts[2] = { 0, 0 }, fmt = PDICT_FORMAT;
    int64_t span[2] = { start_ms, len_ms };
    MDB_val cv = { sizeof counts, counts }, sk = { 4, "span" }, sv = { sizeof span, span }, fv = { sizeof fmt, &fmt };
    rc = mdb_put(txn, meta, (MDB_val *)&counts_key, &cv, 0);
    if (!rc) rc = mdb_put(txn, meta, (MDB_val *)&format_key, &fv, 0);
    return rc ? rc : mdb_put(txn, meta, &sk, &sv, 0);
}

int pdict_format(MDB_txn *txn, MDB_dbi meta, int *fmt)
{
    MDB_val v;
    int rc = mdb_get(txn, meta, (MDB_val *)&format_key, &v);
    *fmt = 1;
    if (rc == MDB_NOTFOUND) return 0;
    if (rc) return rc;
    uint32_t f;
    if (v.mv_size != sizeof f) return MDB_INCOMPATIBLE;
    memcpy(&f, v.mv_data, sizeof f);
    if (f < 1 || f > PDICT_FORMAT) return MDB_INCOMPATIBLE;
    *fmt = (int)f;
    return 0;
}

uint32_t pdict_str_chunk(int fmt) { return fmt >= 2 ? 1024u : 256u; }
uint32_t pdict_node_chunk(int fmt) { return fmt >= 2 ? 8192u : 1024u; }

/* ---- format 2's chunk values ---- */

#define CHUNK_ZSTD 1
#define CHUNK_PREFIX 5 /* flags, checksum */
/* zstd levels of a complete chunk (compressed once): strings gain 10 %
 * from 3, nodes nothing.  The open chunk, rewritten at every flush that
 * adds to it, stays plain until pdict_finish: compressing it at every
 * flush (level 1) cost 60-80 us a commit more, 2.5x the writer's
 * dictionary CPU with commits of a few new stacks. */
#define STR_LEVEL 1
#define NODE_LEVEL 1

static inline uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Over the bytes after the checksum, seeded with the kind, the chunk
 * number and the flags byte (which precedes it). */
static uint32_t chunk_sum(char kind, uint32_t ck, unsigned char flags, const unsigned char *p, size_t len)
{
    return (uint32_t)hash_bytes(p, len, ((uint64_t)flags << 40) | ((uint64_t)(unsigned char)kind << 32) | ck);
}

int pdict_chunk_seal(char kind, uint32_t ck, const void *raw, size_t len, int level, unsigned char **out,
                     size_t *out_len)
{
    size_t bound = ZSTD_compressBound(len), cap = CHUNK_PREFIX + VARINT_MAX + (len > bound ? len : bound);
    unsigned char *b = malloc(cap), *q;
    if (!b) return ENOMEM;
    b[0] = 0;
    q = varint_put(b + CHUNK_PREFIX, len);
    size_t z = level ? ZSTD_compress(q, cap - (size_t)(q - b), raw, len, level) : 0;
    if (level && !ZSTD_isError(z) && z > 0 && z + 4 < len) {
        b[0] = CHUNK_ZSTD;
        q += z;
    } else {
        memcpy(q, raw, len);
        q += len;
    }
    uint32_t sum = chunk_sum(kind, ck, b[0], b + CHUNK_PREFIX, (size_t)(q - b - CHUNK_PREFIX));
    memcpy(b + 1, &sum, 4);
    *out = b;
    *out_len = (size_t)(q - b);
    return 0;
}

/* The payload of a format-2 chunk value: in place, or decompressed into
 * *owned (malloc'd); NULL with why. */
static const unsigned char *chunk_open(char kind, uint32_t ck, const MDB_val *v, void *zctx, size_t *len,
                                       unsigned char **owned, char *why, size_t whylen)
{
    const unsigned char *p = v->mv_data, *end = p + v->mv_size;
    uint64_t raw;
    *owned = NULL;
    if (v->mv_size < CHUNK_PREFIX + 1) {
        snprintf(why, whylen, "%zu bytes, too short for a chunk's header", v->mv_size);
        return NULL;
    }
    if (chunk_sum(kind, ck, p[0], p + CHUNK_PREFIX, v->mv_size - CHUNK_PREFIX) != rd32(p + 1)) {
        snprintf(why, whylen, "checksum mismatch");
        return NULL;
    }
    if (p[0] & ~CHUNK_ZSTD) {
        snprintf(why, whylen, "unknown flags 0x%02x", p[0]);
        return NULL;
    }
    const unsigned char *q = p + CHUNK_PREFIX;
    if (varint_get(&q, end, &raw) || raw > UINT32_MAX) {
        snprintf(why, whylen, "its payload length does not decode");
        return NULL;
    }
    if (!(p[0] & CHUNK_ZSTD)) {
        if (raw != (uint64_t)(end - q)) {
            snprintf(why, whylen, "%zu bytes of payload where its header says %llu", (size_t)(end - q),
                     (unsigned long long)raw);
            return NULL;
        }
        *len = (size_t)raw;
        return q;
    }
    unsigned char *o = malloc(raw ? raw : 1);
    if (!o) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    size_t n = zctx ? ZSTD_decompressDCtx(zctx, o, raw, q, (size_t)(end - q))
                    : ZSTD_decompress(o, raw, q, (size_t)(end - q));
    if (ZSTD_isError(n) || n != raw) {
        snprintf(why, whylen, "its payload does not decompress to its %llu bytes (%s)", (unsigned long long)raw,
                 ZSTD_isError(n) ? ZSTD_getErrorName(n) : "another length");
        free(o);
        return NULL;
    }
    *owned = o;
    *len = (size_t)raw;
    return o;
}

const unsigned char *pdict_str_chunk_open(int fmt, uint32_t ck, const MDB_val *v, void *zctx, size_t *len,
                                          unsigned char **owned, char *why, size_t whylen)
{
    if (fmt < 2) {
        *owned = NULL;
        *len = v->mv_size;
        return v->mv_data;
    }
    return chunk_open('S', ck, v, zctx, len, owned, why, whylen);
}

int pdict_node_chunk_decode(int fmt, uint32_t ck, const MDB_val *v, uint32_t n, uint32_t n_strings, void *zctx,
                            uint32_t *pf, char *why, size_t whylen)
{
    unsigned char *owned = NULL;
    const unsigned char *p = v->mv_data, *end = p + v->mv_size;
    if (fmt >= 2) {
        size_t len;
        if (!(p = chunk_open('N', ck, v, zctx, &len, &owned, why, whylen))) return -1;
        end = p + len;
    }
    uint32_t first = ck * pdict_node_chunk(fmt);
    int bad = 0;
    for (uint32_t i = 0; i < n && !bad; i++) {
        uint32_t id = first + i;
        uint64_t d, f;
        if (fmt >= 2) {
            bad = varint_get(&p, end, &f);
            d = f & 1;
            f >>= 1;
            if (!bad && !d) bad = varint_get(&p, end, &d);
        } else {
            bad = varint_get(&p, end, &d) || varint_get(&p, end, &f);
        }
        if (bad) {
            snprintf(why, whylen, "the chunk ends inside node %u", id);
        } else if (id == 0 && (d || f)) {
            snprintf(why, whylen, "node 0, the root, has parent delta %llu and function %llu (expected 0 and 0)",
                     (unsigned long long)d, (unsigned long long)f);
            bad = 1;
        } else if (id && (d == 0 || d > id)) {
            snprintf(why, whylen, "node %u: its parent (%llu back) is not a node below it", id, (unsigned long long)d);
            bad = 1;
        } else if (f >= n_strings) {
            snprintf(why, whylen, "node %u: its function is string %llu, beyond the partition's %u strings", id,
                     (unsigned long long)f, n_strings);
            bad = 1;
        } else {
            pf[2 * i] = id - (uint32_t)d;
            pf[2 * i + 1] = (uint32_t)f;
        }
    }
    if (!bad && p != end) {
        snprintf(why, whylen, "%zu bytes after its %u nodes", (size_t)(end - p), n);
        bad = 1;
    }
    free(owned);
    return bad ? -1 : 0;
}

static int read_counts(MDB_txn *txn, MDB_dbi meta, uint32_t *strings, uint32_t *nodes)
{
    MDB_val v;
    int rc = mdb_get(txn, meta, (MDB_val *)&counts_key, &v);
    if (rc == MDB_NOTFOUND) {
        *strings = *nodes = 0;
        return 0;
    }
    if (rc) return rc;
    if (v.mv_size != 8) return MDB_CORRUPTED;
    uint32_t c[2];
    memcpy(c, v.mv_data, sizeof c);
    *strings = c[0];
    *nodes = c[1];
    return 0;
}

/* ---- the writer's state ---- */

/* The stack table: every stack the writer has met in this partition, by
 * its 128-bit hash, open addressing with linear probing.  Slots only ever
 * go from empty to full, the leaf written last with release: a reader that
 * loads a non-zero leaf with acquire sees the hash written before it, and
 * the writer never writes the hash of a slot whose leaf is set, so the
 * hash bytes need no atomics.  Growing replaces the array; the store does
 * it under its partition lock's write side, which every reader holds for
 * reading while it probes.
 *
 * 20 bytes a slot (the hash as bytes, so the slot needs only the leaf's
 * 4-byte alignment; with two u64 it was padded to 24), any number of slots
 * (the home slot is (low 32 bits x cap) >> 32), grown by half when 3/4
 * full: 27 to 40 bytes a stack, against 48 to 96 for 24-byte slots grown
 * by doubling at half load (the fleet's 400 k stacks: 24 MiB before). */
typedef struct {
    unsigned char h[16]; /* lo, hi */
    _Atomic uint32_t leaf;
} stack_slot;
_Static_assert(sizeof(stack_slot) == 20, "stack slots are packed");

struct pdict_w {
    int fmt;                              /* the partition's chunk format */
    uint32_t str_chunk, node_chunk;       /* its ids a chunk */
    uint32_t n_strings, n_nodes;          /* next ids */
    uint32_t flushed_strings, flushed_nodes;
    _Atomic uint32_t committed_nodes;
    uint32_t pending_nodes;               /* flushed, to publish at commit */
    idset str_set;                        /* strings by their 128-bit hash: */
    table *str_hash;                      /* ... kept here by id (hash128) */
    idset node_set;                       /* nodes by (parent, func): */
    nodetab *pf;                          /* ... parent, func of every node */
    stack_slot *stacks;
    uint32_t stacks_cap, stacks_len;
    /* the open string chunk: entries from s_first (chunk-aligned) on */
    uint32_t s_first;
    char *sbytes;
    size_t sbytes_len, sbytes_cap;
    uint32_t *soff;                       /* start of entry s_first + i */
    size_t soff_cap;
    /* the open node chunk's encoding so far: nodes nbuf_chunk * node_chunk
     * up to nbuf_end (put_node_chunk appends the nodes added since) */
    unsigned char *nbuf;
    size_t nbuf_len, nbuf_cap;
    uint32_t nbuf_chunk, nbuf_end;
    /* the last stack interned frame by frame (pdict_w_stack): its text,
     * and for each depth d the node of its frame d and the offset where
     * that frame ends */
    char *path_text;
    uint32_t path_len, path_depth;
    size_t path_text_cap, path_cap;
    uint32_t *path_node, *path_end;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Appends a string to the open chunks (not to the maps). */
static int push_string(pdict_w *w, const void *s, uint32_t len)
{
    uint32_t i = w->n_strings - w->s_first;
    if (grow((void **)&w->soff, &w->soff_cap, (size_t)i + 1, sizeof *w->soff) ||
        grow((void **)&w->sbytes, &w->sbytes_cap, w->sbytes_len + len + 1, 1))
        return -1;
    w->soff[i] = (uint32_t)w->sbytes_len;
    memcpy(w->sbytes + w->sbytes_len, s, len);
    w->sbytes[w->sbytes_len + len] = '\0';
    w->sbytes_len += len + 1;
    w->n_strings++;
    return 0;
}

static inline uint64_t node_key(uint32_t parent, uint32_t func) { return ((uint64_t)parent << 32) | func; }

/* parent, func of node id */
static inline void pf_at(const pdict_w *w, uint32_t id, uint32_t *parent, uint32_t *func)
{
    nodetab_get(w->pf, id, parent, func);
}
static inline const hash128 *str_hash_at(const pdict_w *w, uint32_t id) { return table_at(w->str_hash, id); }

static uint64_t node_hash_of(const void *ctx, uint32_t id)
{
    uint32_t parent, func;
    pf_at(ctx, id, &parent, &func);
    return hash_u64(node_key(parent, func));
}

static uint64_t str_hash_of(const void *ctx, uint32_t id) { return str_hash_at(ctx, id)->lo; }

typedef struct { const pdict_w *w; uint32_t parent, func; } node_probe;

static int node_eq(const void *ctx, uint32_t id)
{
    const node_probe *pr = ctx;
    uint32_t parent, func;
    pf_at(pr->w, id, &parent, &func);
    return parent == pr->parent && func == pr->func;
}

typedef struct { const pdict_w *w; hash128 h; } str_probe;

static int str_eq(const void *ctx, uint32_t id)
{
    const str_probe *pr = ctx;
    const hash128 *e = str_hash_at(pr->w, id);
    return e->lo == pr->h.lo && e->hi == pr->h.hi;
}

/* Appends a node (not to the set). */
static int push_node(pdict_w *w, uint32_t parent, uint32_t func)
{
    if (nodetab_push(w->pf, parent, func)) return -1;
    w->n_nodes++;
    return 0;
}

static int map_node(pdict_w *w, uint32_t id)
{
    return idset_put(&w->node_set, node_hash_of(w, id), id, node_hash_of, w);
}

static int map_string(pdict_w *w, uint32_t id, hash128 h)
{
    hash128 *e = table_slot(w->str_hash, id);
    if (!e) return -1;
    *e = h;
    return idset_put(&w->str_set, h.lo, id, str_hash_of, w);
}

store_status pdict_w_string(pdict_w *w, const char *s, uint32_t len, uint32_t *id)
{
    hash128 h = hash_bytes128(s, len);
    str_probe pr = { w, h };
    uint32_t found = idset_find(&w->str_set, h.lo, str_eq, &pr);
    if (found) {
        *id = found;
        return STORE_OK;
    }
    if (w->n_strings == UINT32_MAX) return STORE_EFULL;
    uint32_t nid = w->n_strings;
    if (push_string(w, s, len) || map_string(w, nid, h)) return STORE_ENOMEM;
    *id = nid;
    return STORE_OK;
}

static store_status intern_node(pdict_w *w, uint32_t parent, uint32_t func, uint32_t *id)
{
    node_probe pr = { w, parent, func };
    uint32_t found = idset_find(&w->node_set, hash_u64(node_key(parent, func)), node_eq, &pr);
    if (found) {
        *id = found;
        return STORE_OK;
    }
    if (w->n_nodes == UINT32_MAX) return STORE_EFULL;
    uint32_t nid = w->n_nodes;
    if (push_node(w, parent, func) || map_node(w, nid)) return STORE_ENOMEM;
    *id = nid;
    return STORE_OK;
}

static inline uint32_t stack_home(hash128 h, uint32_t cap) { return (uint32_t)(((h.lo & 0xffffffffu) * cap) >> 32); }

/* The leaf of the stack with hash h, or 0; any thread (see stack_slot). */
static uint32_t stack_find(const pdict_w *w, hash128 h)
{
    uint32_t cap = w->stacks_cap;
    for (uint32_t i = stack_home(h, cap);;) {
        const stack_slot *s = &w->stacks[i];
        uint32_t leaf = atomic_load_explicit(&s->leaf, memory_order_acquire);
        if (!leaf) return 0;
        uint64_t lo, hi;
        memcpy(&lo, s->h, 8);
        memcpy(&hi, s->h + 8, 8);
        if (lo == h.lo && hi == h.hi) return leaf;
        if (++i == cap) i = 0;
    }
}

static void stack_put(stack_slot *slots, uint32_t cap, hash128 h, uint32_t leaf)
{
    uint32_t i = stack_home(h, cap);
    while (atomic_load_explicit(&slots[i].leaf, memory_order_relaxed))
        if (++i == cap) i = 0;
    memcpy(slots[i].h, &h.lo, 8);
    memcpy(slots[i].h + 8, &h.hi, 8);
    atomic_store_explicit(&slots[i].leaf, leaf, memory_order_release);
}

static int stacks_full_at(uint64_t len, uint64_t cap) { return len * 4 > cap * 3; }

int pdict_w_stacks_full(const pdict_w *w, size_t more)
{
    return stacks_full_at((uint64_t)w->stacks_len + more, w->stacks_cap);
}

store_status pdict_w_stacks_grow(pdict_w *w, size_t more)
{
    uint64_t cap = w->stacks_cap;
    while (stacks_full_at((uint64_t)w->stacks_len + more, cap)) cap += cap / 2;
    if (cap > (UINT64_C(1) << 31)) return STORE_ENOMEM;
    stack_slot *ns = idset_zalloc((size_t)cap * sizeof *ns);
    if (!ns) return STORE_ENOMEM;
    /* readers are held off (the store's partition lock), so the old
     * array's pages can go as they are read (idset_zdrop) */
    size_t released = 0, old_bytes = (size_t)w->stacks_cap * sizeof *w->stacks;
    for (uint32_t i = 0; i < w->stacks_cap; i++) {
        const stack_slot *s = &w->stacks[i];
        uint32_t leaf = atomic_load_explicit(&s->leaf, memory_order_relaxed);
        if (leaf) {
            hash128 h;
            memcpy(&h.lo, s->h, 8);
            memcpy(&h.hi, s->h + 8, 8);
            stack_put(ns, (uint32_t)cap, h, leaf);
        }
        idset_zdrop(w->stacks, old_bytes, &released, (size_t)(i + 1) * sizeof *w->stacks);
    }
    idset_zfree(w->stacks, (size_t)w->stacks_cap * sizeof *w->stacks);
    w->stacks = ns;
    w->stacks_cap = (uint32_t)cap;
    return STORE_OK;
}

/* The frames stack `frames` shares whole with the last stack interned
 * frame by frame: their count, and the node and the offset after the last
 * of them.  Frame d of the last path is shared when the two texts agree up
 * to its end and the new one has a frame boundary (';' or its end) there. */
static uint32_t path_shared(const pdict_w *w, const char *frames, uint32_t len, uint32_t *node, uint32_t *pos)
{
    uint32_t m = len < w->path_len ? len : w->path_len, same = 0;
    while (same + 8 <= m && !memcmp(frames + same, w->path_text + same, 8)) same += 8;
    while (same < m && frames[same] == w->path_text[same]) same++;
    uint32_t d = 0;
    while (d < w->path_depth && w->path_end[d] <= same && (w->path_end[d] == len || frames[w->path_end[d]] == ';'))
        d++;
    if (d) {
        *node = w->path_node[d - 1];
        *pos = w->path_end[d - 1] + 1;
    }
    return d;
}

/* Makes room for a path of depth frames and text of len bytes. */
static int path_room(pdict_w *w, uint32_t len, uint32_t depth)
{
    size_t cap = w->path_cap;
    if (grow((void **)&w->path_text, &w->path_text_cap, (size_t)len + 1, 1) ||
        grow((void **)&w->path_node, &cap, depth, sizeof *w->path_node))
        return -1;
    cap = w->path_cap;
    if (grow((void **)&w->path_end, &cap, depth, sizeof *w->path_end)) return -1;
    w->path_cap = cap;
    return 0;
}

store_status pdict_w_stack(pdict_w *w, const char *frames, uint32_t len, hash128 h, uint32_t *leaf)
{
    uint32_t found = stack_find(w, h);
    if (found) {
        *leaf = found;
        return STORE_OK;
    }
    /* A new stack's walk starts below the frames it shares with the last
     * one walked: a new stack is mostly a known path with a new tip, and
     * each frame's string and node lookups are cache misses in maps of
     * millions (a third of the writer's CPU under bench_fleet).  The
     * writer hands a profile's new stacks in the order of their text
     * (writer.c), so neighbours share their longest prefixes. */
    uint32_t node = 0, pos = 0, d = path_shared(w, frames, len, &node, &pos);
    w->path_depth = 0; /* invalid until this walk is done */
    while (pos <= len) {
        const char *semi = memchr(frames + pos, ';', len - pos);
        uint32_t flen = semi ? (uint32_t)(semi - (frames + pos)) : len - pos;
        uint32_t func;
        store_status ss = pdict_w_string(w, frames + pos, flen, &func);
        if (!ss) ss = intern_node(w, node, func, &node);
        if (!ss && path_room(w, len, d + 1)) ss = STORE_ENOMEM;
        if (ss) return ss;
        w->path_node[d] = node;
        w->path_end[d++] = pos + flen;
        pos += flen + 1;
    }
    memcpy(w->path_text, frames, len);
    w->path_len = len;
    w->path_depth = d;
    /* Remembered while there is room (the store grows the table before a
     * profile's stacks, under its lock); otherwise only interned. */
    if (!pdict_w_stacks_full(w, 1)) {
        stack_put(w->stacks, w->stacks_cap, h, node);
        w->stacks_len++;
    }
    *leaf = node;
    return STORE_OK;
}

/* The table is megabytes and its slots are hit at random: each lookup is
 * a cache miss (~150 ns, 11 % of the server's CPU under bench_fleet).  So
 * the home slots of the next STACK_AHEAD hashes are prefetched while one
 * is probed, and the misses overlap.  A leaf counts once committed; the
 * count read before the probes can only be lower than one read after (a
 * stack committed meanwhile goes to the writer, which finds it). */
#define STACK_AHEAD 8

void pdict_w_resolve(const pdict_w *w, const hash128 *h, size_t n, uint32_t *leaves)
{
    uint32_t committed = atomic_load_explicit(&w->committed_nodes, memory_order_acquire);
    for (size_t k = 0; k < n && k < STACK_AHEAD; k++) __builtin_prefetch(&w->stacks[stack_home(h[k], w->stacks_cap)]);
    for (size_t k = 0; k < n; k++) {
        if (k + STACK_AHEAD < n) __builtin_prefetch(&w->stacks[stack_home(h[k + STACK_AHEAD], w->stacks_cap)]);
        uint32_t leaf = stack_find(w, h[k]);
        leaves[k] = leaf < committed ? leaf : 0;
    }
}

uint32_t pdict_w_committed_nodes(const pdict_w *w)
{
    return atomic_load_explicit(&w->committed_nodes, memory_order_acquire);
}

uint32_t pdict_w_nodes(const pdict_w *w) { return w->n_nodes; }
uint32_t pdict_w_strings(const pdict_w *w) { return w->n_strings; }

uint64_t pdict_w_memory(const pdict_w *w)
{
    return idset_bytes(&w->str_set) + table_chunk_bytes(w->n_strings, sizeof(hash128)) + idset_bytes(&w->node_set) +
           nodetab_bytes(w->pf) + (uint64_t)w->stacks_cap * sizeof *w->stacks +
           w->sbytes_cap + w->soff_cap * sizeof *w->soff + w->nbuf_cap;
}

/* Writes chunk c's value: buf itself in format 1; in format 2 sealed
 * (compressed when the chunk is complete). */
static int put_chunk(pdict_w *w, MDB_txn *txn, MDB_dbi dbi, char kind, uint32_t c, unsigned char *buf, size_t len,
                     int complete)
{
    unsigned char *sealed = NULL;
    if (w->fmt >= 2 && pdict_chunk_seal(kind, c, buf, len, !complete ? 0 : kind == 'S' ? STR_LEVEL : NODE_LEVEL,
                                        &sealed, &len))
        return ENOMEM;
    MDB_val k = { sizeof c, &c }, v = { len, sealed ? sealed : buf };
    int rc = mdb_put(txn, dbi, &k, &v, 0);
    free(sealed);
    return rc;
}

/* Writes string chunk c from the open entries. */
static int put_string_chunk(pdict_w *w, MDB_txn *txn, MDB_dbi dbi, uint32_t c)
{
    uint32_t first = c * w->str_chunk, end = first + w->str_chunk;
    if (end > w->n_strings) end = w->n_strings;
    uint32_t n = end - first, i0 = first - w->s_first;
    uint32_t b0 = w->soff[i0], b1 = end - w->s_first < w->n_strings - w->s_first ? w->soff[end - w->s_first]
                                                                                   : (uint32_t)w->sbytes_len;
    size_t len = 4 + 4 * ((size_t)n + 1) + (b1 - b0);
    unsigned char *buf = malloc(len);
    if (!buf) return ENOMEM;
    memcpy(buf, &n, 4);
    for (uint32_t i = 0; i <= n; i++) {
        uint32_t off = (i < n ? w->soff[i0 + i] : b1) - b0;
        memcpy(buf + 4 + 4 * i, &off, 4);
    }
    memcpy(buf + 4 + 4 * ((size_t)n + 1), w->sbytes + b0, b1 - b0);
    int rc = put_chunk(w, txn, dbi, 'S', c, buf, len, n == w->str_chunk);
    free(buf);
    return rc;
}

/* Writes node chunk c (pdict.h: format 1, varint (id - parent) and
 * varint function; format 2, the function with a "child of the node
 * before" bit, and the delta only when that bit is clear).  A node's
 * encoding depends on that node alone, so the open chunk's encoding is
 * kept (w->nbuf) and only the nodes added since the last flush are
 * encoded: encoding the whole open chunk again at every commit that added
 * a node (up to 8,191 nodes, each a nodetab_get) was ~5 % of
 * bench_fleet's server CPU (nodetab_get, pdict_w_flush in perf).  The
 * nodes of a chunk never change once given an id, and a failed write
 * frees the whole writer state (writer_forget_part), so the kept bytes
 * are always those the chunk's nodes encode to. */
static int put_node_chunk(pdict_w *w, MDB_txn *txn, MDB_dbi dbi, uint32_t c)
{
    uint32_t first = c * w->node_chunk, end = first + w->node_chunk;
    if (end > w->n_nodes) end = w->n_nodes;
    if (!w->nbuf || w->nbuf_chunk != c || w->nbuf_end < first || w->nbuf_end > end) {
        w->nbuf_len = 0;
        w->nbuf_chunk = c;
        w->nbuf_end = first;
    }
    if (grow((void **)&w->nbuf, &w->nbuf_cap, w->nbuf_len + (size_t)(end - w->nbuf_end) * 2 * VARINT_MAX + 1, 1))
        return ENOMEM;
    unsigned char *q = w->nbuf + w->nbuf_len;
    for (uint32_t id = w->nbuf_end; id < end; id++) {
        uint32_t parent, func;
        pf_at(w, id, &parent, &func);
        if (w->fmt < 2) {
            q = varint_put(q, id - parent);
            q = varint_put(q, func);
        } else if (id && id - parent == 1) {
            q = varint_put(q, ((uint64_t)func << 1) | 1);
        } else {
            q = varint_put(q, (uint64_t)func << 1);
            q = varint_put(q, id - parent);
        }
    }
    w->nbuf_len = (size_t)(q - w->nbuf);
    w->nbuf_end = end;
    return put_chunk(w, txn, dbi, 'N', c, w->nbuf, w->nbuf_len, end - first == w->node_chunk);
}

/* Drops the complete chunks from the open buffers. */
static void trim_open(pdict_w *w)
{
    uint32_t s_keep = w->n_strings / w->str_chunk * w->str_chunk;
    if (s_keep > w->s_first) {
        uint32_t drop = s_keep - w->s_first, n = w->n_strings - s_keep;
        uint32_t b0 = drop < w->n_strings - w->s_first ? w->soff[drop] : (uint32_t)w->sbytes_len;
        memmove(w->sbytes, w->sbytes + b0, w->sbytes_len - b0);
        w->sbytes_len -= b0;
        for (uint32_t i = 0; i < n; i++) w->soff[i] = w->soff[drop + i] - b0;
        w->s_first = s_keep;
    }
}

store_status pdict_w_flush(pdict_w *w, MDB_txn *txn, MDB_dbi meta, MDB_dbi strings, MDB_dbi nodes)
{
    if (w->n_strings == w->flushed_strings && w->n_nodes == w->flushed_nodes) return STORE_OK;
    int rc = 0;
    if (w->n_strings > w->flushed_strings)
        for (uint32_t c = w->flushed_strings / w->str_chunk; !rc && c <= (w->n_strings - 1) / w->str_chunk; c++)
            rc = put_string_chunk(w, txn, strings, c);
    if (w->n_nodes > w->flushed_nodes)
        for (uint32_t c = w->flushed_nodes / w->node_chunk; !rc && c <= (w->n_nodes - 1) / w->node_chunk; c++)
            rc = put_node_chunk(w, txn, nodes, c);
    uint32_t counts[2] = { w->n_strings, w->n_nodes };
    MDB_val cv = { sizeof counts, counts };
    if (!rc) rc = mdb_put(txn, meta, (MDB_val *)&counts_key, &cv, 0);
    if (rc) return env_status(rc);
    w->flushed_strings = w->n_strings;
    w->flushed_nodes = w->n_nodes;
    w->pending_nodes = w->n_nodes;
    trim_open(w);
    return STORE_OK;
}

void pdict_w_publish(pdict_w *w)
{
    atomic_store_explicit(&w->committed_nodes, w->pending_nodes, memory_order_release);
}

void pdict_w_free(pdict_w *w)
{
    if (!w) return;
    idset_free(&w->str_set);
    idset_free(&w->node_set);
    table_free(w->str_hash);
    nodetab_free(w->pf);
    idset_zfree(w->stacks, (size_t)w->stacks_cap * sizeof *w->stacks);
    free(w->sbytes);
    free(w->soff);
    free(w->nbuf);
    free(w->path_text);
    free(w->path_node);
    free(w->path_end);
    free(w);
}

store_status pdict_w_load(pdict_w **out, MDB_txn *txn, MDB_dbi meta, MDB_dbi strings, MDB_dbi nodes)
{
    *out = NULL;
    uint32_t ns, nn;
    int fmt;
    int rc = read_counts(txn, meta, &ns, &nn);
    if (!rc) rc = pdict_format(txn, meta, &fmt);
    if (rc) return env_status(rc);
    pdict_w *w = calloc(1, sizeof *w);
    if (w) {
        w->fmt = fmt;
        w->str_chunk = pdict_str_chunk(fmt);
        w->node_chunk = pdict_node_chunk(fmt);
    }
    if (w && (w->stacks = idset_zalloc(STACKS_MIN * sizeof *w->stacks))) w->stacks_cap = STACKS_MIN;
    if (!w || !w->stacks || idset_init(&w->str_set, 1024) ||
        idset_init(&w->node_set, 1024) || !(w->str_hash = table_new(sizeof(hash128))) ||
        !(w->pf = nodetab_new())) {
        pdict_w_free(w);
        return STORE_ENOMEM;
    }
    store_status ss = STORE_OK;
    if (ns == 0) { /* a new partition: id 0 is "" and the root */
        if (push_string(w, "", 0) || push_node(w, 0, 0)) ss = STORE_ENOMEM;
        *out = w;
        if (ss) pdict_w_free(w), *out = NULL;
        return ss;
    }
    pdict_r *r;
    if ((ss = pdict_r_open(&r, txn, meta, strings, nodes))) {
        pdict_w_free(w);
        return ss;
    }
    uint32_t s_first = (ns - 1) / w->str_chunk * w->str_chunk;
    if (ns % w->str_chunk == 0) s_first = ns;
    w->s_first = s_first;
    for (uint32_t id = 0; id < ns && !ss; id++) {
        uint32_t len;
        const char *s = pdict_r_string(r, id, &len);
        if (!s) {
            ss = STORE_EIO;
            break;
        }
        if (id >= s_first && push_string(w, s, len)) ss = STORE_ENOMEM;
        else if (id < s_first) w->n_strings++;
        if (!ss && id && map_string(w, id, hash_bytes128(s, len))) ss = STORE_ENOMEM;
    }
    for (uint32_t id = 0; id < nn && !ss; id++) {
        uint32_t parent, func;
        if (pdict_r_node(r, id, &parent, &func)) {
            ss = STORE_EIO;
            break;
        }
        if (push_node(w, parent, func) || (id && map_node(w, id))) ss = STORE_ENOMEM;
    }
    pdict_r_free(r);
    if (ss) {
        pdict_w_free(w);
        return ss;
    }
    w->flushed_strings = ns;
    w->flushed_nodes = w->pending_nodes = nn;
    /* txn may hold entries not yet durable: none is resolvable until the
     * next commit publishes them (pdict_w_publish). */
    atomic_store_explicit(&w->committed_nodes, 0, memory_order_release);
    *out = w;
    return STORE_OK;
}

/* Compresses the last chunk of dbi (kind 'S' or 'N') when it is plain. */
static int finish_chunk(MDB_txn *txn, MDB_dbi dbi, char kind, uint32_t count, uint32_t per, int *changed)
{
    if (!count) return 0;
    uint32_t c = (count - 1) / per;
    MDB_val k = { sizeof c, &c }, v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc) return rc;
    if (v.mv_size < CHUNK_PREFIX + 1 || ((const unsigned char *)v.mv_data)[0] != 0) return 0;
    unsigned char *owned, *sealed;
    size_t len, slen;
    char why[160];
    const unsigned char *raw = chunk_open(kind, c, &v, NULL, &len, &owned, why, sizeof why);
    if (!raw) return MDB_CORRUPTED;
    rc = pdict_chunk_seal(kind, c, raw, len, kind == 'S' ? STR_LEVEL : NODE_LEVEL, &sealed, &slen);
    free(owned);
    if (rc) return rc;
    if (sealed[0] & CHUNK_ZSTD) {
        MDB_val sv = { slen, sealed };
        rc = mdb_put(txn, dbi, &k, &sv, 0);
        if (!rc) *changed = 1;
    }
    free(sealed);
    return rc;
}

store_status pdict_finish(MDB_txn *txn, MDB_dbi meta, MDB_dbi strings, MDB_dbi nodes, int *changed)
{
    uint32_t ns, nn;
    int fmt;
    *changed = 0;
    int rc = read_counts(txn, meta, &ns, &nn);
    if (!rc) rc = pdict_format(txn, meta, &fmt);
    if (!rc && fmt >= 2) rc = finish_chunk(txn, strings, 'S', ns, pdict_str_chunk(fmt), changed);
    if (!rc && fmt >= 2) rc = finish_chunk(txn, nodes, 'N', nn, pdict_node_chunk(fmt), changed);
    return rc ? env_status(rc) : STORE_OK;
}

/* ---- readers ---- */

struct pdict_r {
    MDB_txn *txn;
    MDB_dbi strings, nodes;
    int fmt;
    uint32_t str_chunk, node_chunk;
    uint32_t n_strings, n_nodes;
    const unsigned char **schunk; /* format 1's layout: in the map, or in sowned */
    size_t *schunk_len;
    unsigned char **sowned;       /* decompressed chunks (format 2) */
    uint32_t **nchunk;            /* decoded on first use: parent, func per node */
    ZSTD_DCtx *zctx;              /* made on first need */
};

store_status pdict_r_open(pdict_r **out, MDB_txn *txn, MDB_dbi meta, MDB_dbi strings, MDB_dbi nodes)
{
    *out = NULL;
    pdict_r *r = calloc(1, sizeof *r);
    if (!r) return STORE_ENOMEM;
    int rc = read_counts(txn, meta, &r->n_strings, &r->n_nodes);
    if (!rc) rc = pdict_format(txn, meta, &r->fmt);
    if (rc) {
        free(r);
        return env_status(rc);
    }
    r->txn = txn;
    r->strings = strings;
    r->nodes = nodes;
    r->str_chunk = pdict_str_chunk(r->fmt);
    r->node_chunk = pdict_node_chunk(r->fmt);
    size_t sc = (r->n_strings + r->str_chunk - 1) / r->str_chunk + 1;
    size_t nc = (r->n_nodes + r->node_chunk - 1) / r->node_chunk + 1;
    r->schunk = calloc(sc, sizeof *r->schunk);
    r->schunk_len = calloc(sc, sizeof *r->schunk_len);
    r->sowned = calloc(sc, sizeof *r->sowned);
    r->nchunk = calloc(nc, sizeof *r->nchunk);
    if (!r->schunk || !r->schunk_len || !r->sowned || !r->nchunk) {
        pdict_r_free(r);
        return STORE_ENOMEM;
    }
    *out = r;
    return STORE_OK;
}

void pdict_r_free(pdict_r *r)
{
    if (!r) return;
    if (r->nchunk)
        for (uint32_t c = 0; c <= (r->n_nodes + r->node_chunk - 1) / r->node_chunk; c++) free(r->nchunk[c]);
    if (r->sowned)
        for (uint32_t c = 0; c <= (r->n_strings + r->str_chunk - 1) / r->str_chunk; c++) free(r->sowned[c]);
    free(r->schunk);
    free(r->schunk_len);
    free(r->sowned);
    free(r->nchunk);
    ZSTD_freeDCtx(r->zctx);
    free(r);
}

uint32_t pdict_r_nodes(const pdict_r *r) { return r->n_nodes; }
uint32_t pdict_r_strings(const pdict_r *r) { return r->n_strings; }

/* A decompression context when the partition's chunks may need one. */
static void *r_zctx(pdict_r *r)
{
    if (r->fmt >= 2 && !r->zctx) r->zctx = ZSTD_createDCtx();
    return r->zctx;
}

/* Decodes node chunk c into an array of (parent, func), checking every
 * entry (pdict_node_chunk_decode). */
static uint32_t *decode_nodes(pdict_r *r, uint32_t c)
{
    MDB_val k = { sizeof c, &c }, v;
    uint32_t first = c * r->node_chunk, n = r->n_nodes - first;
    if (n > r->node_chunk) n = r->node_chunk;
    if (mdb_get(r->txn, r->nodes, &k, &v)) return NULL;
    uint32_t *e = malloc((size_t)n * 2 * sizeof *e);
    char why[160];
    if (e && pdict_node_chunk_decode(r->fmt, c, &v, n, r->n_strings, r_zctx(r), e, why, sizeof why)) {
        free(e);
        return NULL;
    }
    return e;
}

int pdict_r_node(pdict_r *r, uint32_t id, uint32_t *parent, uint32_t *func)
{
    if (id >= r->n_nodes) return -1;
    uint32_t c = id / r->node_chunk, i = id % r->node_chunk;
    if (!r->nchunk[c] && !(r->nchunk[c] = decode_nodes(r, c))) return -1;
    *parent = r->nchunk[c][2 * i];
    *func = r->nchunk[c][2 * i + 1];
    return 0;
}

const char *pdict_r_string(pdict_r *r, uint32_t id, uint32_t *len)
{
    if (id >= r->n_strings) return NULL;
    uint32_t c = id / r->str_chunk, i = id % r->str_chunk;
    if (!r->schunk[c]) {
        MDB_val k = { sizeof c, &c }, v;
        char why[160];
        size_t clen;
        const unsigned char *ch;
        if (mdb_get(r->txn, r->strings, &k, &v) ||
            !(ch = pdict_str_chunk_open(r->fmt, c, &v, r_zctx(r), &clen, &r->sowned[c], why, sizeof why)))
            return NULL;
        uint32_t n = clen >= 4 ? rd32(ch) : 0;
        if (clen < 4 || clen < 4 + 4 * ((size_t)n + 1)) {
            free(r->sowned[c]);
            r->sowned[c] = NULL;
            return NULL;
        }
        r->schunk[c] = ch;
        r->schunk_len[c] = clen;
    }
    const unsigned char *ch = r->schunk[c];
    uint32_t n = rd32(ch);
    if (i >= n) return NULL;
    size_t base = 4 + 4 * ((size_t)n + 1), blen = r->schunk_len[c] - base;
    uint32_t a = rd32(ch + 4 + 4 * (size_t)i), b = rd32(ch + 8 + 4 * (size_t)i);
    if (a >= b || b > blen || ch[base + b - 1] != '\0') return NULL;
    if (len) *len = b - a - 1;
    return (const char *)ch + base + a;
}
