/* catalog.c — series, label strings and the label index (see catalog.h).
 *
 * On disk (catalog.mdb): "meta" holds the format, the partition length and
 * "next_series" (the next series id, once the highest ids have expired);
 * "strings" the label names and values in chunks of consecutive ids (key:
 * the first id; value: varint length, bytes, ...), only the last chunk open
 * and rewritten once per group commit; "series" maps a u32 id (ascending
 * from 1, with gaps where series expired) to its {u32 name id, u32 value
 * id}[] sorted by name; "last" maps a series id to the start (i64 ms) of
 * the newest partition it was written to.  A catalog written before series
 * expired has no "last": its series get the newest partition's start at
 * open (catalog_fill_last), so they expire once everything present then has.
 *
 * In memory: a generation (cat_gen) of append-only tables readable without
 * a lock (table.h) whose counts the writer publishes with release stores,
 * `pending` before a commit and `committed` after it; readers load them
 * with acquire.  Series sit at dense positions, ids ascending, so a reader
 * finds an id by binary search.  The writer alone uses the maps from
 * content to string id and to position.  The label index maps (name id,
 * value id) to the ascending ids of the series carrying it, as Prometheus's
 * postings do; it is built at open, and guarded by a read-write lock
 * because readers copy lists out while the writer appends.  On a failed
 * transaction the tables are truncated to a mark and the maps rebuilt: a
 * rare path that keeps the common one simple.
 *
 * Expiry builds a new generation holding the live series only (their label
 * strings renumbered densely, the postings anew) and rewrites the three
 * databases in one transaction: kill -9 leaves the old catalog or the new
 * one.  Then the generation is swapped under gen_lock; readers that pinned
 * the old one keep it (and every label pointer they got) until they end,
 * and the last one frees it.  The rewrite costs a pass over the live
 * catalog, once per dropped partition (a day), and readers pay a binary
 * search per id instead of an index.  When the file is then a quarter or
 * more free pages it is copied without them and the copy renamed over it
 * (as compact.c seals partitions): LMDB never shrinks a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "arena.h"
#include "catalog.h"
#include "env.h"
#include "hash.h"
#include "idmap.h"
#include "table.h"
#include "../common/varint.h"

#define STRING_SEED UINT64_C(0x5f1d2c3b4a596877)
#define SERIES_SEED UINT64_C(0x0ddba11cafe5eed5)
#define LABEL_SEED UINT64_C(0x6c6162656c737472)
#define CHUNK_BYTES 8000
#define LAST_UNKNOWN INT64_MAX /* loaded without a "last": catalog_fill_last */

typedef struct { const char *ptr; uint32_t len; } str_entry;
typedef struct {
    uint32_t sid, n;
    const uint32_t *pairs;   /* name id, value id: this generation's string ids */
    int64_t last;            /* writers only (cat_lock) */
} series_entry;
typedef struct { uint32_t *ids; uint32_t n, cap; } postings_list;

struct cat_gen {
    table *strings, *series;     /* strings by id; series by position, ids ascending */
    idmap string_map, series_map; /* the writer's: content -> string id, labels -> position */
    arena bytes;
    _Atomic uint64_t arena_used; /* bytes allocated (catalog_memory) */
    pthread_rwlock_t index_lock;
    idmap postings_map;          /* label key -> index + 1 into postings */
    idmap label_strings;         /* hash of a label string -> string id */
    postings_list *postings;
    uint32_t n_postings, cap_postings;
    int refs;                    /* under catalog.gen_lock: readers, + 1 while current */
};

struct catalog {
    MDB_env *env;
    MDB_dbi db_meta, db_strings, db_series, db_last;
    char *path;
    uint64_t map_size;
    int fixed_map;
    uint32_t strings_open;       /* first id of the open chunk on disk */
    uint32_t next_sid;           /* ids are never reused */
    pthread_mutex_t gen_lock;
    cat_gen *gen;                /* the current generation: writers change it */
};

static inline uint64_t label_key(uint32_t name, uint32_t value)
{
    return ((uint64_t)name << 32) | value;
}

/* ---- generations ---- */

static void gen_free(cat_gen *g)
{
    if (!g) return;
    for (uint32_t i = 0; i < g->n_postings; i++) free(g->postings[i].ids);
    free(g->postings);
    idmap_free(&g->string_map);
    idmap_free(&g->series_map);
    idmap_free(&g->postings_map);
    idmap_free(&g->label_strings);
    table_free(g->strings);
    table_free(g->series);
    arena_free(&g->bytes);
    pthread_rwlock_destroy(&g->index_lock);
    free(g);
}

static cat_gen *gen_new(void)
{
    cat_gen *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    pthread_rwlock_init(&g->index_lock, NULL);
    g->strings = table_new(sizeof(str_entry));
    g->series = table_new(sizeof(series_entry));
    if (!g->strings || !g->series || idmap_init(&g->string_map, 64) || idmap_init(&g->series_map, 64) ||
        idmap_init(&g->postings_map, 64) || idmap_init(&g->label_strings, 64) || !table_slot(g->strings, 0) ||
        !table_slot(g->series, 0)) {
        gen_free(g);
        return NULL;
    }
    ((str_entry *)table_at(g->strings, 0))->ptr = "";
    g->strings->len = g->series->len = 1;
    g->refs = 1;
    return g;
}

static void gen_unref(catalog *c, cat_gen *g)
{
    pthread_mutex_lock(&c->gen_lock);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&c->gen_lock);
    if (last) gen_free(g);
}

static void *gen_alloc(cat_gen *g, size_t n)
{
    atomic_fetch_add_explicit(&g->arena_used, (n + 15) & ~(size_t)15, memory_order_relaxed);
    return arena_alloc(&g->bytes, n);
}

/* ---- strings ---- */

typedef struct { const cat_gen *g; const char *s; size_t len; uint32_t n_strings; } str_probe;

/* Confirms a candidate string id by content; an entry left by a
 * rolled-back id only matches when that id now holds the same string. */
static int str_eq(void *ctx, uint32_t id)
{
    str_probe *pr = ctx;
    if (id >= pr->n_strings) return 0;
    const str_entry *e = table_at(pr->g->strings, id);
    return e->len == pr->len && memcmp(e->ptr, pr->s, pr->len) == 0;
}

static store_status add_string_mem(cat_gen *g, uint32_t id, const void *p, uint32_t len)
{
    char *copy = gen_alloc(g, (size_t)len + 1);
    str_entry *e = table_slot(g->strings, id);
    if (!copy || !e) return STORE_ENOMEM;
    memcpy(copy, p, len);
    copy[len] = '\0';
    e->ptr = copy;
    e->len = len;
    if (idmap_put(&g->string_map, hash_bytes(p, len, STRING_SEED), id)) return STORE_ENOMEM;
    if (id >= g->strings->len) g->strings->len = id + 1;
    return STORE_OK;
}

static uint32_t find_string(const cat_gen *g, const char *s, uint32_t len)
{
    str_probe pr = { g, s, len, UINT32_MAX };
    return idmap_find(&g->string_map, hash_bytes(s, len, STRING_SEED), str_eq, &pr);
}

static store_status intern_string(cat_gen *g, const char *s, uint32_t len, uint32_t *id)
{
    uint32_t found = find_string(g, s, len);
    if (found) {
        *id = found;
        return STORE_OK;
    }
    *id = g->strings->len;
    return add_string_mem(g, *id, s, len);
}

static const char *string_at(const catalog_snap *s, uint32_t id)
{
    return id && id < s->n_strings ? ((const str_entry *)table_at(s->gen->strings, id))->ptr : "";
}

/* Puts strings [from, to) of g as the chunk keyed by from; *bytes: its
 * size. */
static store_status put_chunk(catalog *c, cat_gen *g, MDB_txn *txn, uint32_t from, uint32_t to, size_t *bytes)
{
    size_t cap = 16;
    for (uint32_t id = from; id < to; id++) cap += VARINT_MAX + ((const str_entry *)table_at(g->strings, id))->len;
    unsigned char *buf = malloc(cap), *p = buf;
    if (!buf) return STORE_ENOMEM;
    for (uint32_t id = from; id < to; id++) {
        const str_entry *e = table_at(g->strings, id);
        p = varint_put(p, e->len);
        memcpy(p, e->ptr, e->len);
        p += e->len;
    }
    MDB_val k = { sizeof from, &from }, v = { (size_t)(p - buf), buf };
    int rc = mdb_put(txn, c->db_strings, &k, &v, 0);
    free(buf);
    *bytes = v.mv_size;
    return env_status(rc);
}

store_status catalog_flush(catalog *c, MDB_txn *txn)
{
    cat_gen *g = c->gen;
    if (g->strings->len <= c->strings_open) return STORE_OK;
    size_t bytes;
    store_status ss = put_chunk(c, g, txn, c->strings_open, g->strings->len, &bytes);
    if (ss) return ss;
    if (bytes >= CHUNK_BYTES) c->strings_open = g->strings->len; /* closed */
    return STORE_OK;
}

/* ---- the label index ---- */

static int label_string_add(cat_gen *g, uint32_t id)
{
    const str_entry *e = table_at(g->strings, id);
    uint64_t h = hash_bytes(e->ptr, e->len, LABEL_SEED);
    str_probe pr = { g, e->ptr, e->len, g->strings->len };
    if (idmap_find(&g->label_strings, h, str_eq, &pr) == id) return 0;
    return idmap_put(&g->label_strings, h, id);
}

static store_status index_add(cat_gen *g, uint32_t sid, const uint32_t *pairs, uint32_t n)
{
    store_status ss = STORE_OK;
    pthread_rwlock_wrlock(&g->index_lock);
    for (uint32_t i = 0; i < n && !ss; i++) {
        if (label_string_add(g, pairs[2 * i]) || label_string_add(g, pairs[2 * i + 1])) {
            ss = STORE_ENOMEM;
            break;
        }
        uint64_t key = label_key(pairs[2 * i], pairs[2 * i + 1]);
        uint32_t idx = idmap_find(&g->postings_map, key, NULL, NULL);
        if (!idx) {
            if (g->n_postings == g->cap_postings) {
                uint32_t ncap = g->cap_postings ? g->cap_postings * 2 : 1024;
                postings_list *np = realloc(g->postings, ncap * sizeof *np);
                if (!np) { ss = STORE_ENOMEM; break; }
                g->postings = np;
                g->cap_postings = ncap;
            }
            memset(&g->postings[g->n_postings], 0, sizeof *g->postings);
            idx = ++g->n_postings;
            if (idmap_put(&g->postings_map, key, idx)) { ss = STORE_ENOMEM; break; }
        }
        /* (name, 0): the name is carried by some series (value ids start
         * at 1); catalog_name_known tells sample labels from series labels */
        uint64_t nkey = label_key(pairs[2 * i], 0);
        if (!idmap_find(&g->postings_map, nkey, NULL, NULL) && idmap_put(&g->postings_map, nkey, UINT32_MAX)) {
            ss = STORE_ENOMEM;
            break;
        }
        postings_list *pl = &g->postings[idx - 1];
        if (pl->n == pl->cap) {
            uint32_t ncap = pl->cap ? pl->cap * 2 : 4;
            uint32_t *ni = realloc(pl->ids, ncap * sizeof *ni);
            if (!ni) { ss = STORE_ENOMEM; break; }
            pl->ids = ni;
            pl->cap = ncap;
        }
        pl->ids[pl->n++] = sid;
    }
    pthread_rwlock_unlock(&g->index_lock);
    return ss;
}

store_status catalog_postings(const catalog_snap *s, const char *name, const char *value, uint32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    cat_gen *g = s->gen;
    uint32_t bound = catalog_series_max(s);
    store_status ss = STORE_OK;
    pthread_rwlock_rdlock(&g->index_lock);
    str_probe pn = { g, name, strlen(name), s->n_strings }, pv = { g, value, strlen(value), s->n_strings };
    uint32_t nid = idmap_find(&g->label_strings, hash_bytes(name, pn.len, LABEL_SEED), str_eq, &pn);
    uint32_t vid = nid ? idmap_find(&g->label_strings, hash_bytes(value, pv.len, LABEL_SEED), str_eq, &pv) : 0;
    uint32_t idx = vid ? idmap_find(&g->postings_map, label_key(nid, vid), NULL, NULL) : 0;
    if (idx) {
        const postings_list *pl = &g->postings[idx - 1];
        uint32_t k = 0;
        while (k < pl->n && pl->ids[k] <= bound) k++;
        if (k && (*ids = malloc(k * sizeof **ids))) {
            memcpy(*ids, pl->ids, k * sizeof **ids);
            *n = k;
        } else if (k) {
            ss = STORE_ENOMEM;
        }
    }
    pthread_rwlock_unlock(&g->index_lock);
    return ss;
}

int catalog_name_known(const catalog_snap *s, const char *name)
{
    cat_gen *g = s->gen;
    pthread_rwlock_rdlock(&g->index_lock);
    str_probe pn = { g, name, strlen(name), s->n_strings };
    uint32_t nid = idmap_find(&g->label_strings, hash_bytes(name, pn.len, LABEL_SEED), str_eq, &pn);
    int known = nid && idmap_find(&g->postings_map, label_key(nid, 0), NULL, NULL) != 0;
    pthread_rwlock_unlock(&g->index_lock);
    return known;
}

/* ---- series ---- */

typedef struct { const cat_gen *g; const uint32_t *pairs; uint32_t n; } series_probe;

static int series_eq(void *ctx, uint32_t pos)
{
    series_probe *pr = ctx;
    const series_entry *e = table_at(pr->g->series, pos);
    return e->n == pr->n && memcmp(e->pairs, pr->pairs, (size_t)pr->n * 2 * sizeof(uint32_t)) == 0;
}

static store_status add_series_mem(cat_gen *g, uint32_t sid, const uint32_t *pairs, uint32_t n, int64_t last)
{
    uint32_t pos = g->series->len;
    uint32_t *copy = gen_alloc(g, (size_t)n * 2 * sizeof *copy + 1);
    series_entry *e = table_slot(g->series, pos);
    if (!copy || !e) return STORE_ENOMEM;
    memcpy(copy, pairs, (size_t)n * 2 * sizeof *copy);
    e->sid = sid;
    e->pairs = copy;
    e->n = n;
    e->last = last;
    if (idmap_put(&g->series_map, hash_bytes(pairs, (size_t)n * 8, SERIES_SEED), pos)) return STORE_ENOMEM;
    g->series->len = pos + 1;
    return index_add(g, sid, pairs, n);
}

static store_status put_last(catalog *c, MDB_txn *txn, uint32_t sid, int64_t last, unsigned flags)
{
    MDB_val k = { sizeof sid, &sid }, v = { sizeof last, &last };
    return env_status(mdb_put(txn, c->db_last, &k, &v, flags));
}

/* The position of the series with these labels in the current generation,
 * 0 when none; the labels' string ids go to pairs. */
static uint32_t find_pos(const cat_gen *g, const store_label *labels, int n_labels, uint32_t *pairs)
{
    for (int i = 0; i < n_labels; i++) {
        pairs[2 * i] = find_string(g, labels[i].name, (uint32_t)strlen(labels[i].name));
        pairs[2 * i + 1] = find_string(g, labels[i].value, (uint32_t)strlen(labels[i].value));
        if (!pairs[2 * i] || !pairs[2 * i + 1]) return 0;
    }
    series_probe pr = { g, pairs, (uint32_t)n_labels };
    return idmap_find(&g->series_map, hash_bytes(pairs, (size_t)n_labels * 8, SERIES_SEED), series_eq, &pr);
}

store_status catalog_series_intern(catalog *c, MDB_txn *txn, const store_label *labels, int n_labels,
                                   int64_t part_start, uint32_t *sid)
{
    cat_gen *g = c->gen;
    uint32_t pairs[2 * 64];
    if (n_labels <= 0 || n_labels > 64) return STORE_EINVAL;
    uint32_t pos = find_pos(g, labels, n_labels, pairs);
    if (pos) {
        /* Raised in memory before the commit: a failed commit leaves it
         * too high, which only keeps the series a little longer. */
        series_entry *e = table_at(g->series, pos);
        if (e->last < part_start || e->last == LAST_UNKNOWN) {
            store_status ss = put_last(c, txn, e->sid, part_start, 0);
            if (ss) return ss;
            e->last = part_start;
        }
        *sid = e->sid;
        return STORE_OK;
    }
    for (int i = 0; i < n_labels; i++) {
        store_status ss = intern_string(g, labels[i].name, (uint32_t)strlen(labels[i].name), &pairs[2 * i]);
        if (!ss) ss = intern_string(g, labels[i].value, (uint32_t)strlen(labels[i].value), &pairs[2 * i + 1]);
        if (ss) return ss;
    }
    uint32_t nid = c->next_sid;
    if (nid == UINT32_MAX) return STORE_EFULL;
    MDB_val k = { sizeof nid, &nid }, v = { (size_t)n_labels * 8, pairs };
    int rc = mdb_put(txn, c->db_series, &k, &v, MDB_APPEND);
    if (rc) return env_status(rc);
    store_status ss = put_last(c, txn, nid, part_start, MDB_APPEND);
    if (!ss) ss = add_series_mem(g, nid, pairs, (uint32_t)n_labels, part_start);
    if (ss) return ss;
    c->next_sid = nid + 1;
    *sid = nid;
    return STORE_OK;
}

uint32_t catalog_series_find(const catalog *c, const store_label *labels, int n_labels, int64_t *last)
{
    uint32_t pairs[2 * 64];
    if (n_labels <= 0 || n_labels > 64) return 0;
    const cat_gen *g = c->gen;
    uint32_t pos = find_pos(g, labels, n_labels, pairs);
    if (!pos) return 0;
    const series_entry *e = table_at(g->series, pos);
    *last = e->last == LAST_UNKNOWN ? INT64_MIN : e->last;
    return e->sid;
}

/* The first position in 1..n_pos-1 whose id is sid or more (n_pos when
 * none). */
static uint32_t lower_pos(const catalog_snap *s, uint32_t sid)
{
    uint32_t lo = 1, hi = s->n_pos;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (((const series_entry *)table_at(s->gen->series, mid))->sid < sid) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static const series_entry *snap_entry(const catalog_snap *s, uint32_t sid)
{
    if (!sid) return NULL;
    uint32_t pos = lower_pos(s, sid);
    if (pos >= s->n_pos) return NULL;
    const series_entry *e = table_at(s->gen->series, pos);
    return e->sid == sid ? e : NULL;
}

uint32_t catalog_series_max(const catalog_snap *s)
{
    return s->n_pos > 1 ? ((const series_entry *)table_at(s->gen->series, s->n_pos - 1))->sid : 0;
}

uint32_t catalog_series_next(const catalog_snap *s, uint32_t sid)
{
    if (sid == UINT32_MAX) return 0;
    uint32_t pos = lower_pos(s, sid + 1);
    return pos < s->n_pos ? ((const series_entry *)table_at(s->gen->series, pos))->sid : 0;
}

int catalog_series_labels(const catalog_snap *s, uint32_t sid, store_label *out, int max)
{
    const series_entry *e = snap_entry(s, sid);
    if (!e) return 0;
    for (uint32_t i = 0; i < e->n && (int)i < max; i++) {
        out[i].name = string_at(s, e->pairs[2 * i]);
        out[i].value = string_at(s, e->pairs[2 * i + 1]);
    }
    return (int)e->n;
}

const char *catalog_series_label(const catalog_snap *s, uint32_t sid, const char *name)
{
    const series_entry *e = snap_entry(s, sid);
    if (!e) return NULL;
    for (uint32_t i = 0; i < e->n; i++)
        if (strcmp(string_at(s, e->pairs[2 * i]), name) == 0) return string_at(s, e->pairs[2 * i + 1]);
    return NULL;
}

/* ---- marks, rollback, publication ---- */

catalog_mark catalog_mark_now(const catalog *c)
{
    return (catalog_mark){ c->gen->strings->len, c->gen->series->len, c->strings_open, c->next_sid };
}

static int rebuild_maps(cat_gen *g)
{
    idmap_clear(&g->string_map);
    idmap_clear(&g->series_map);
    for (uint32_t i = 1; i < g->strings->len; i++) {
        const str_entry *e = table_at(g->strings, i);
        if (idmap_put(&g->string_map, hash_bytes(e->ptr, e->len, STRING_SEED), i)) return -1;
    }
    for (uint32_t i = 1; i < g->series->len; i++) {
        const series_entry *e = table_at(g->series, i);
        if (idmap_put(&g->series_map, hash_bytes(e->pairs, (size_t)e->n * 8, SERIES_SEED), i)) return -1;
    }
    return 0;
}

void catalog_rollback(catalog *c, catalog_mark m)
{
    cat_gen *g = c->gen;
    pthread_rwlock_wrlock(&g->index_lock);
    for (uint32_t i = 0; i < g->n_postings; i++) {
        postings_list *pl = &g->postings[i];
        while (pl->n && pl->ids[pl->n - 1] >= m.next_sid) pl->n--;
    }
    pthread_rwlock_unlock(&g->index_lock);
    g->strings->len = m.strings;
    g->series->len = m.series;
    c->strings_open = m.strings_open;
    c->next_sid = m.next_sid;
    catalog_publish_pending(c);
    /* Out of memory while rebuilding would leave maps that could create
     * duplicate series: stop; everything committed is on disk. */
    if (rebuild_maps(g)) abort();
}

static void publish(cat_gen *g, int committed)
{
    atomic_store_explicit(&g->strings->pending, g->strings->len, memory_order_release);
    atomic_store_explicit(&g->series->pending, g->series->len, memory_order_release);
    if (!committed) return;
    atomic_store_explicit(&g->strings->committed, g->strings->len, memory_order_release);
    atomic_store_explicit(&g->series->committed, g->series->len, memory_order_release);
}

void catalog_publish_pending(catalog *c) { publish(c->gen, 0); }
void catalog_publish_committed(catalog *c) { publish(c->gen, 1); }

/* ---- readers ---- */

catalog_snap catalog_snap_begin(catalog *c)
{
    catalog_snap s;
    pthread_mutex_lock(&c->gen_lock);
    s.gen = c->gen;
    s.gen->refs++;
    s.n_pos = atomic_load_explicit(&s.gen->series->committed, memory_order_acquire);
    s.n_strings = atomic_load_explicit(&s.gen->strings->pending, memory_order_acquire);
    pthread_mutex_unlock(&c->gen_lock);
    return s;
}

void catalog_snap_end(catalog *c, catalog_snap *s)
{
    if (!s->gen) return;
    gen_unref(c, s->gen);
    s->gen = NULL;
}

uint32_t catalog_series_count(catalog *c)
{
    catalog_snap s = catalog_snap_begin(c);
    uint32_t n = s.n_pos - 1;
    catalog_snap_end(c, &s);
    return n;
}

uint64_t catalog_memory(catalog *c)
{
    pthread_mutex_lock(&c->gen_lock);
    cat_gen *g = c->gen;
    g->refs++;
    pthread_mutex_unlock(&c->gen_lock);
    pthread_rwlock_rdlock(&g->index_lock);
    uint64_t b = idmap_bytes(&g->string_map) + idmap_bytes(&g->series_map) + idmap_bytes(&g->postings_map) +
                 idmap_bytes(&g->label_strings) + (uint64_t)g->cap_postings * sizeof(postings_list);
    for (uint32_t i = 0; i < g->n_postings; i++) b += (uint64_t)g->postings[i].cap * sizeof(uint32_t);
    pthread_rwlock_unlock(&g->index_lock);
    b += (uint64_t)atomic_load_explicit(&g->strings->pending, memory_order_acquire) * sizeof(str_entry) +
         (uint64_t)atomic_load_explicit(&g->series->pending, memory_order_acquire) * sizeof(series_entry) +
         atomic_load_explicit(&g->arena_used, memory_order_relaxed);
    gen_unref(c, g);
    return b;
}

/* ---- the environment ---- */

int catalog_txn_begin(catalog *c, MDB_txn **txn)
{
    *txn = NULL;
    return c->env ? mdb_txn_begin(c->env, NULL, 0, txn) : EIO;
}

void catalog_reader_check(catalog *c)
{
    int dead = 0;
    if (c->env) mdb_reader_check(c->env, &dead);
}

static int open_dbs(catalog *c, MDB_txn *txn)
{
    int rc;
    if ((rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &c->db_meta)) ||
        (rc = mdb_dbi_open(txn, "strings", MDB_CREATE | MDB_INTEGERKEY, &c->db_strings)) ||
        (rc = mdb_dbi_open(txn, "series", MDB_CREATE | MDB_INTEGERKEY, &c->db_series)) ||
        (rc = mdb_dbi_open(txn, "last", MDB_CREATE | MDB_INTEGERKEY, &c->db_last)))
        return rc;
    return 0;
}

/* When a quarter or more of the file is free pages (a rewrite freed the
 * old catalog), a compacting copy takes its place: written beside it,
 * fsync'd, the lock file unlinked, renamed over it, the directory
 * fsync'd; the environment is then opened again on the copy.  The rename
 * is the commit point: kill -9 leaves one whole file. */
static void shrink_file(catalog *c)
{
    MDB_envinfo info;
    MDB_stat ms;
    MDB_txn *txn;
    if (mdb_env_info(c->env, &info) || mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn)) return;
    uint64_t used = 2;
    MDB_dbi dbis[6] = { 0, 1, c->db_meta, c->db_strings, c->db_series, c->db_last };
    int ok = 1;
    for (int i = 0; ok && i < 6; i++) {
        ok = !mdb_stat(txn, dbis[i], &ms);
        used += (uint64_t)ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
    }
    mdb_txn_abort(txn);
    uint64_t pages = (uint64_t)info.me_last_pgno + 1, unused = pages > used ? pages - used : 0;
    if (!ok || unused < 16 || unused * 4 < pages) return;
    size_t n = strlen(c->path) + 8;
    char *tmp = malloc(n), *lock = malloc(n);
    if (!tmp || !lock) goto out;
    snprintf(tmp, n, "%s.copy", c->path);
    snprintf(lock, n, "%s-lock", c->path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ok = fd >= 0 && !mdb_env_copyfd2(c->env, fd, MDB_CP_COMPACT) && !fsync(fd);
    if (fd >= 0 && close(fd)) ok = 0;
    if (!ok) {
        unlink(tmp);
        goto out;
    }
    mdb_env_close(c->env);
    c->env = NULL;
    unlink(lock);
    int renamed = !rename(tmp, c->path);
    if (!renamed) unlink(tmp);
    char *slash = strrchr(tmp, '/');
    if (renamed && slash) {
        *slash = '\0';
        int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            if (fsync(dfd)) { /* durable at the next commit's sync anyway */ }
            close(dfd);
        }
    }
    /* The same databases: their handles stay valid for the new
     * environment once opened again in a transaction. */
    if (!env_open(&c->env, c->path, c->map_size, c->fixed_map, 0, NULL, NULL, 0)) {
        int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
        if (!rc && (rc = open_dbs(c, txn))) mdb_txn_abort(txn);
        else if (!rc) rc = mdb_txn_commit(txn);
        if (rc) { /* writes fail until a restart opens it again */
            mdb_env_close(c->env);
            c->env = NULL;
        }
    }
out:
    free(tmp);
    free(lock);
}

store_status catalog_expire(catalog *c, int64_t keep_from, uint32_t *dropped)
{
    *dropped = 0;
    cat_gen *g = c->gen;
    uint32_t dead = 0;
    for (uint32_t pos = 1; pos < g->series->len; pos++)
        dead += ((const series_entry *)table_at(g->series, pos))->last < keep_from;
    if (!dead) return STORE_OK;
    if (!c->env) return STORE_EIO;
    cat_gen *ng = gen_new();
    uint32_t *remap = calloc(g->strings->len, sizeof *remap);
    store_status ss = ng && remap ? STORE_OK : STORE_ENOMEM;
    for (uint32_t pos = 1; pos < g->series->len && !ss; pos++) {
        const series_entry *e = table_at(g->series, pos);
        if (e->last < keep_from) continue;
        uint32_t pairs[2 * 64];
        for (uint32_t i = 0; i < 2 * e->n && !ss; i++) {
            uint32_t old = e->pairs[i];
            if (!remap[old]) {
                const str_entry *s = table_at(g->strings, old);
                remap[old] = ng->strings->len;
                ss = add_string_mem(ng, remap[old], s->ptr, s->len);
            }
            pairs[i] = remap[old];
        }
        if (!ss) ss = add_series_mem(ng, e->sid, pairs, e->n, e->last);
    }
    free(remap);
    MDB_txn *txn = NULL;
    int rc = ss ? 0 : mdb_txn_begin(c->env, NULL, 0, &txn);
    if (rc) ss = env_status(rc);
    if (!ss && ((rc = mdb_drop(txn, c->db_strings, 0)) || (rc = mdb_drop(txn, c->db_series, 0)) ||
                (rc = mdb_drop(txn, c->db_last, 0))))
        ss = env_status(rc);
    /* the strings in chunks of CHUNK_BYTES or more, the last one open */
    uint32_t open_from = ng ? ng->strings->len : 1;
    for (uint32_t from = 1; !ss && ng && from < ng->strings->len;) {
        uint32_t to = from;
        size_t bytes = 0;
        while (to < ng->strings->len && bytes < CHUNK_BYTES)
            bytes += 1 + ((const str_entry *)table_at(ng->strings, to++))->len;
        ss = put_chunk(c, ng, txn, from, to, &bytes);
        if (bytes < CHUNK_BYTES) open_from = from;
        from = to;
    }
    for (uint32_t pos = 1; !ss && pos < ng->series->len; pos++) {
        const series_entry *e = table_at(ng->series, pos);
        uint32_t sid = e->sid;
        MDB_val k = { sizeof sid, &sid }, v = { (size_t)e->n * 8, (void *)e->pairs };
        if ((rc = mdb_put(txn, c->db_series, &k, &v, MDB_APPEND))) ss = env_status(rc);
        else ss = put_last(c, txn, sid, e->last, MDB_APPEND);
    }
    if (!ss) {
        char buf[16];
        int len = snprintf(buf, sizeof buf, "%u", c->next_sid);
        MDB_val k = { 11, "next_series" }, v = { (size_t)len, buf };
        if ((rc = mdb_put(txn, c->db_meta, &k, &v, 0))) ss = env_status(rc);
    }
    if (!ss) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
        if (rc) ss = env_status(rc);
    }
    if (txn) mdb_txn_abort(txn);
    if (ss) {
        gen_free(ng);
        return ss;
    }
    publish(ng, 1);
    pthread_mutex_lock(&c->gen_lock);
    c->gen = ng;
    pthread_mutex_unlock(&c->gen_lock);
    gen_unref(c, g);
    c->strings_open = open_from;
    *dropped = dead;
    shrink_file(c);
    return STORE_OK;
}

store_status catalog_fill_last(catalog *c, int64_t last)
{
    cat_gen *g = c->gen;
    MDB_txn *txn = NULL;
    store_status ss = STORE_OK;
    for (uint32_t pos = 1; pos < g->series->len && !ss; pos++) {
        series_entry *e = table_at(g->series, pos);
        if (e->last != LAST_UNKNOWN) continue;
        int rc = txn ? 0 : catalog_txn_begin(c, &txn);
        ss = rc ? env_status(rc) : put_last(c, txn, e->sid, last, 0);
    }
    if (!txn) return ss;
    if (ss) {
        mdb_txn_abort(txn);
        return ss;
    }
    if ((ss = env_status(mdb_txn_commit(txn)))) return ss;
    for (uint32_t pos = 1; pos < g->series->len; pos++) {
        series_entry *e = table_at(g->series, pos);
        if (e->last == LAST_UNKNOWN) e->last = last;
    }
    return STORE_OK;
}

/* ---- open and close ---- */

static int load_strings(catalog *c, MDB_txn *txn, char *err, size_t errlen)
{
    cat_gen *g = c->gen;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, c->db_strings, &cur);
    uint32_t last_first = 1;
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        uint32_t first;
        memcpy(&first, k.mv_data, sizeof first);
        if (k.mv_size != sizeof first || first != g->strings->len) goto damaged;
        const unsigned char *p = v.mv_data, *end = p + v.mv_size;
        while (p < end) {
            uint64_t len;
            if (varint_get(&p, end, &len) || (uint64_t)(end - p) < len) goto damaged;
            if (add_string_mem(g, g->strings->len, p, (uint32_t)len)) goto damaged;
            p += len;
        }
        last_first = first;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND) {
        env_set_err(err, errlen, "%s: reading label strings: %s", c->path, mdb_strerror(rc));
        return -1;
    }
    c->strings_open = last_first;
    return 0;
damaged:
    mdb_cursor_close(cur);
    env_set_err(err, errlen, "%s: label strings are damaged near id %u (or out of memory)", c->path, g->strings->len);
    return -1;
}

/* The series, ascending, with their `last` where one is stored. */
static int load_series(catalog *c, MDB_txn *txn, char *err, size_t errlen)
{
    cat_gen *g = c->gen;
    MDB_cursor *cur, *lcur;
    MDB_val k, v, lk, lv;
    int rc = mdb_cursor_open(txn, c->db_series, &cur);
    if (rc) goto failed;
    if ((rc = mdb_cursor_open(txn, c->db_last, &lcur))) {
        mdb_cursor_close(cur);
        goto failed;
    }
    int lrc = mdb_cursor_get(lcur, &lk, &lv, MDB_FIRST);
    uint32_t prev = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        uint32_t id = 0;
        if (k.mv_size == sizeof id) memcpy(&id, k.mv_data, sizeof id);
        uint32_t pairs[2 * 64];
        uint32_t n = (uint32_t)(v.mv_size / 8);
        int ok = k.mv_size == sizeof id && id > prev && v.mv_size % 8 == 0 && n > 0 && n <= 64;
        if (ok) {
            memcpy(pairs, v.mv_data, v.mv_size);
            for (uint32_t i = 0; i < 2 * n; i++) ok &= pairs[i] > 0 && pairs[i] < g->strings->len;
        }
        int64_t last = LAST_UNKNOWN;
        uint32_t lid = 0;
        while (ok && lrc == 0) {
            if (lk.mv_size == sizeof lid) memcpy(&lid, lk.mv_data, sizeof lid);
            if (lk.mv_size != sizeof lid || lid > id) break;
            if (lid == id && lv.mv_size == sizeof last) memcpy(&last, lv.mv_data, sizeof last);
            lrc = mdb_cursor_get(lcur, &lk, &lv, MDB_NEXT);
        }
        if (!ok || add_series_mem(g, id, pairs, n, last)) {
            mdb_cursor_close(cur);
            mdb_cursor_close(lcur);
            env_set_err(err, errlen, "%s: series %u is damaged (or out of memory)", c->path, id);
            return -1;
        }
        prev = id;
    }
    mdb_cursor_close(cur);
    mdb_cursor_close(lcur);
    if (prev >= c->next_sid) c->next_sid = prev + 1;
    if (rc == MDB_NOTFOUND) return 0;
failed:
    env_set_err(err, errlen, "%s: reading series: %s", c->path, mdb_strerror(rc));
    return -1;
}

/* Checks the format; stores it and the partition length in a new catalog;
 * reads next_series. */
static int check_meta(catalog *c, MDB_txn *txn, int64_t *part_ms, int *was_v5, char *err, size_t errlen)
{
    MDB_val k = { 6, "format" }, v;
    int rc = mdb_get(txn, c->db_meta, &k, &v);
    if (rc == MDB_NOTFOUND) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%lld", (long long)*part_ms);
        MDB_val fv = { strlen(CATALOG_FORMAT), CATALOG_FORMAT }, pk = { 12, "partition_ms" }, pv = { (size_t)n, buf };
        rc = mdb_put(txn, c->db_meta, &k, &fv, 0);
        if (!rc) rc = mdb_put(txn, c->db_meta, &pk, &pv, 0);
    } else if (rc == 0) {
        *was_v5 = v.mv_size == strlen(CATALOG_FORMAT_V5) && !memcmp(v.mv_data, CATALOG_FORMAT_V5, v.mv_size);
        if (v.mv_size == strlen(CATALOG_FORMAT_V6) && !memcmp(v.mv_data, CATALOG_FORMAT_V6, v.mv_size)) {
            /* flamedb-6: its files read as they are; marked flamedb-7 in
             * this transaction (catalog.h) */
            MDB_val fv = { strlen(CATALOG_FORMAT), CATALOG_FORMAT };
            if ((rc = mdb_put(txn, c->db_meta, &k, &fv, 0))) {
                env_set_err(err, errlen, "%s: cannot mark it %s: %s", c->path, CATALOG_FORMAT, mdb_strerror(rc));
                return -1;
            }
        } else if (!*was_v5 && (v.mv_size != strlen(CATALOG_FORMAT) || memcmp(v.mv_data, CATALOG_FORMAT, v.mv_size))) {
            env_set_err(err, errlen, "%s holds data of format '%.*s', this flamedb reads '%s'", c->path,
                        (int)v.mv_size, (const char *)v.mv_data, CATALOG_FORMAT);
            return -1;
        }
        MDB_val pk = { 12, "partition_ms" }, pv;
        char buf[32];
        if ((rc = mdb_get(txn, c->db_meta, &pk, &pv)) == 0) {
            snprintf(buf, sizeof buf, "%.*s", (int)(pv.mv_size < 31 ? pv.mv_size : 31), (const char *)pv.mv_data);
            *part_ms = strtoll(buf, NULL, 10);
            if (*part_ms <= 0) {
                env_set_err(err, errlen, "%s: the partition length is damaged", c->path);
                return -1;
            }
        }
        MDB_val nk = { 11, "next_series" }, nv;
        if (rc == 0 && mdb_get(txn, c->db_meta, &nk, &nv) == 0) {
            snprintf(buf, sizeof buf, "%.*s", (int)(nv.mv_size < 31 ? nv.mv_size : 31), (const char *)nv.mv_data);
            unsigned long long next = strtoull(buf, NULL, 10);
            if (next > c->next_sid && next < UINT32_MAX) c->next_sid = (uint32_t)next;
        }
    }
    if (rc) env_set_err(err, errlen, "reading %s: %s", c->path, mdb_strerror(rc));
    return rc ? -1 : 0;
}

void catalog_close(catalog *c)
{
    if (!c) return;
    if (c->env) mdb_env_close(c->env);
    gen_free(c->gen);
    pthread_mutex_destroy(&c->gen_lock);
    free(c->path);
    free(c);
}

store_status catalog_set_format(catalog *c)
{
    MDB_txn *txn;
    int rc = catalog_txn_begin(c, &txn);
    if (rc) return env_status(rc);
    MDB_val k = { 6, "format" }, v = { strlen(CATALOG_FORMAT), CATALOG_FORMAT };
    if ((rc = mdb_put(txn, c->db_meta, &k, &v, 0))) {
        mdb_txn_abort(txn);
        return env_status(rc);
    }
    return env_status(mdb_txn_commit(txn));
}

store_status catalog_open(catalog **out, const char *path, uint64_t map_size, int fixed_map, int64_t *part_ms,
                          int *was_v5, char *err, size_t errlen)
{
    *out = NULL;
    *was_v5 = 0;
    catalog *c = calloc(1, sizeof *c);
    if (!c) return STORE_ENOMEM;
    pthread_mutex_init(&c->gen_lock, NULL);
    c->path = strdup(path);
    c->gen = gen_new();
    c->map_size = map_size;
    c->fixed_map = fixed_map;
    c->next_sid = 1;
    if (!c->path || !c->gen) {
        catalog_close(c);
        env_set_err(err, errlen, "out of memory opening the catalog");
        return STORE_ENOMEM;
    }
    store_status ss = env_open(&c->env, path, map_size, fixed_map, 1, NULL, err, errlen);
    if (ss) {
        catalog_close(c);
        return ss;
    }
    MDB_txn *txn;
    int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
    if (!rc && (rc = open_dbs(c, txn))) mdb_txn_abort(txn);
    if (rc) {
        env_set_err(err, errlen, "%s: %s", path, mdb_strerror(rc));
        catalog_close(c);
        return env_status(rc);
    }
    if (check_meta(c, txn, part_ms, was_v5, err, errlen) || load_strings(c, txn, err, errlen) ||
        load_series(c, txn, err, errlen)) {
        mdb_txn_abort(txn);
        catalog_close(c);
        return STORE_EIO;
    }
    if ((rc = mdb_txn_commit(txn))) {
        env_set_err(err, errlen, "%s: %s", path, mdb_strerror(rc));
        catalog_close(c);
        return env_status(rc);
    }
    catalog_publish_committed(c);
    *out = c;
    return STORE_OK;
}
