/* catalog.c — series, label strings and the label index (see catalog.h).
 *
 * On disk (catalog.mdb): "meta" holds the format and the partition length;
 * "strings" the label names and values in chunks of consecutive ids (key:
 * the first id; value: varint length, bytes, ...), only the last chunk open
 * and rewritten once per group commit; "series" maps a u32 id (dense from
 * 1) to its {u32 name id, u32 value id}[] sorted by name.
 *
 * In memory: append-only tables readable without a lock (table.h) whose
 * counts the writer publishes with release stores, `pending` before a
 * commit and `committed` after it; readers load them with acquire.  The
 * writer alone uses the maps from content to id.  The label index maps
 * (name id, value id) to the ascending ids of the series carrying it, as
 * Prometheus's postings do; it is rebuilt at open, and guarded by a
 * read-write lock because readers copy lists out while the writer appends.
 * On a failed transaction the tables are truncated to a mark and the maps
 * rebuilt: a rare path that keeps the common one simple. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "arena.h"
#include "catalog.h"
#include "env.h"
#include "hash.h"
#include "idmap.h"
#include "table.h"
#include "varint.h"

#define STRING_SEED UINT64_C(0x5f1d2c3b4a596877)
#define SERIES_SEED UINT64_C(0x0ddba11cafe5eed5)
#define LABEL_SEED UINT64_C(0x6c6162656c737472)
#define CHUNK_BYTES 8000

typedef struct { const char *ptr; uint32_t len; } str_entry;
typedef struct { const uint32_t *pairs; uint32_t n; } series_entry; /* pairs: name id, value id */
typedef struct { uint32_t *ids; uint32_t n, cap; } postings_list;

struct catalog {
    MDB_env *env;
    MDB_dbi db_meta, db_strings, db_series;
    char *path;
    table *strings, *series;
    uint32_t strings_open;       /* first id of the open chunk on disk */
    idmap string_map, series_map;
    arena bytes;
    pthread_rwlock_t index_lock;
    idmap postings_map;          /* label key -> index + 1 into postings */
    idmap label_strings;         /* hash of a label string -> string id */
    postings_list *postings;
    uint32_t n_postings, cap_postings;
};

MDB_env *catalog_env(catalog *c) { return c->env; }

static inline uint64_t label_key(uint32_t name, uint32_t value)
{
    return ((uint64_t)name << 32) | value;
}

/* ---- strings ---- */

typedef struct { const catalog *c; const char *s; size_t len; uint32_t n_strings; } str_probe;

static int str_eq(void *ctx, uint32_t id)
{
    str_probe *pr = ctx;
    if (id >= pr->n_strings) return 0;
    const str_entry *e = table_at(pr->c->strings, id);
    return e->len == pr->len && memcmp(e->ptr, pr->s, pr->len) == 0;
}

static store_status add_string_mem(catalog *c, uint32_t id, const void *p, uint32_t len)
{
    char *copy = arena_alloc(&c->bytes, (size_t)len + 1);
    str_entry *e = table_slot(c->strings, id);
    if (!copy || !e) return STORE_ENOMEM;
    memcpy(copy, p, len);
    copy[len] = '\0';
    e->ptr = copy;
    e->len = len;
    if (idmap_put(&c->string_map, hash_bytes(p, len, STRING_SEED), id)) return STORE_ENOMEM;
    if (id >= c->strings->len) c->strings->len = id + 1;
    return STORE_OK;
}

static uint32_t find_string(const catalog *c, const char *s, uint32_t len)
{
    str_probe pr = { c, s, len, UINT32_MAX };
    return idmap_find(&c->string_map, hash_bytes(s, len, STRING_SEED), str_eq, &pr);
}

static store_status intern_string(catalog *c, const char *s, uint32_t *id)
{
    uint32_t len = (uint32_t)strlen(s);
    uint32_t found = find_string(c, s, len);
    if (found) {
        *id = found;
        return STORE_OK;
    }
    *id = c->strings->len;
    return add_string_mem(c, *id, s, len);
}

static const char *string_at(const catalog *c, uint32_t id)
{
    return id && id < atomic_load_explicit(&c->strings->pending, memory_order_acquire)
               ? ((const str_entry *)table_at(c->strings, id))->ptr : "";
}

store_status catalog_flush(catalog *c, MDB_txn *txn)
{
    if (c->strings->len <= c->strings_open) return STORE_OK;
    size_t cap = 16;
    for (uint32_t id = c->strings_open; id < c->strings->len; id++)
        cap += VARINT_MAX + ((const str_entry *)table_at(c->strings, id))->len;
    unsigned char *buf = malloc(cap), *p = buf;
    if (!buf) return STORE_ENOMEM;
    for (uint32_t id = c->strings_open; id < c->strings->len; id++) {
        const str_entry *e = table_at(c->strings, id);
        p = varint_put(p, e->len);
        memcpy(p, e->ptr, e->len);
        p += e->len;
    }
    uint32_t key = c->strings_open;
    MDB_val k = { sizeof key, &key }, v = { (size_t)(p - buf), buf };
    int rc = mdb_put(txn, c->db_strings, &k, &v, 0);
    free(buf);
    if (rc) return env_status(rc);
    if (v.mv_size >= CHUNK_BYTES) c->strings_open = c->strings->len; /* closed */
    return STORE_OK;
}

/* ---- the label index ---- */

typedef struct { const catalog *c; const char *s; size_t len; uint32_t n_strings; } label_probe;

/* Confirms a label_strings candidate by content; an entry left by a
 * rolled-back id only matches when that id now holds the same string. */
static int label_eq(void *ctx, uint32_t id)
{
    label_probe *pr = ctx;
    if (id >= pr->n_strings) return 0;
    const str_entry *e = table_at(pr->c->strings, id);
    return e->len == pr->len && memcmp(e->ptr, pr->s, pr->len) == 0;
}

static int label_string_add(catalog *c, uint32_t id)
{
    const str_entry *e = table_at(c->strings, id);
    uint64_t h = hash_bytes(e->ptr, e->len, LABEL_SEED);
    label_probe pr = { c, e->ptr, e->len, c->strings->len };
    if (idmap_find(&c->label_strings, h, label_eq, &pr) == id) return 0;
    return idmap_put(&c->label_strings, h, id);
}

static store_status index_add(catalog *c, uint32_t sid, const uint32_t *pairs, uint32_t n)
{
    store_status ss = STORE_OK;
    pthread_rwlock_wrlock(&c->index_lock);
    for (uint32_t i = 0; i < n && !ss; i++) {
        if (label_string_add(c, pairs[2 * i]) || label_string_add(c, pairs[2 * i + 1])) {
            ss = STORE_ENOMEM;
            break;
        }
        uint64_t key = label_key(pairs[2 * i], pairs[2 * i + 1]);
        uint32_t idx = idmap_find(&c->postings_map, key, NULL, NULL);
        if (!idx) {
            if (c->n_postings == c->cap_postings) {
                uint32_t ncap = c->cap_postings ? c->cap_postings * 2 : 1024;
                postings_list *np = realloc(c->postings, ncap * sizeof *np);
                if (!np) { ss = STORE_ENOMEM; break; }
                c->postings = np;
                c->cap_postings = ncap;
            }
            memset(&c->postings[c->n_postings], 0, sizeof *c->postings);
            idx = ++c->n_postings;
            if (idmap_put(&c->postings_map, key, idx)) { ss = STORE_ENOMEM; break; }
        }
        /* (name, 0): the name is carried by some series (value ids start at 1) */
        uint64_t nkey = label_key(pairs[2 * i], 0);
        if (!idmap_find(&c->postings_map, nkey, NULL, NULL) && idmap_put(&c->postings_map, nkey, UINT32_MAX)) {
            ss = STORE_ENOMEM;
            break;
        }
        postings_list *pl = &c->postings[idx - 1];
        if (pl->n == pl->cap) {
            uint32_t ncap = pl->cap ? pl->cap * 2 : 4;
            uint32_t *ni = realloc(pl->ids, ncap * sizeof *ni);
            if (!ni) { ss = STORE_ENOMEM; break; }
            pl->ids = ni;
            pl->cap = ncap;
        }
        pl->ids[pl->n++] = sid;
    }
    pthread_rwlock_unlock(&c->index_lock);
    return ss;
}

store_status catalog_postings(catalog *c, const char *name, const char *value, uint32_t n_strings,
                              uint32_t n_series, uint32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    store_status ss = STORE_OK;
    pthread_rwlock_rdlock(&c->index_lock);
    label_probe pn = { c, name, strlen(name), n_strings }, pv = { c, value, strlen(value), n_strings };
    uint32_t nid = idmap_find(&c->label_strings, hash_bytes(name, pn.len, LABEL_SEED), label_eq, &pn);
    uint32_t vid = nid ? idmap_find(&c->label_strings, hash_bytes(value, pv.len, LABEL_SEED), label_eq, &pv) : 0;
    uint32_t idx = vid ? idmap_find(&c->postings_map, label_key(nid, vid), NULL, NULL) : 0;
    if (idx) {
        const postings_list *pl = &c->postings[idx - 1];
        uint32_t k = 0;
        while (k < pl->n && pl->ids[k] < n_series) k++;
        if (k && (*ids = malloc(k * sizeof **ids))) {
            memcpy(*ids, pl->ids, k * sizeof **ids);
            *n = k;
        } else if (k) {
            ss = STORE_ENOMEM;
        }
    }
    pthread_rwlock_unlock(&c->index_lock);
    return ss;
}

int catalog_name_known(catalog *c, const char *name, uint32_t n_strings)
{
    pthread_rwlock_rdlock(&c->index_lock);
    label_probe pn = { c, name, strlen(name), n_strings };
    uint32_t nid = idmap_find(&c->label_strings, hash_bytes(name, pn.len, LABEL_SEED), label_eq, &pn);
    int known = nid && idmap_find(&c->postings_map, label_key(nid, 0), NULL, NULL) != 0;
    pthread_rwlock_unlock(&c->index_lock);
    return known;
}

/* ---- series ---- */

typedef struct { const catalog *c; const uint32_t *pairs; uint32_t n; } series_probe;

static int series_eq(void *ctx, uint32_t id)
{
    series_probe *pr = ctx;
    const series_entry *e = table_at(pr->c->series, id);
    return e->n == pr->n && memcmp(e->pairs, pr->pairs, (size_t)pr->n * 2 * sizeof(uint32_t)) == 0;
}

static store_status add_series_mem(catalog *c, uint32_t sid, const uint32_t *pairs, uint32_t n)
{
    uint32_t *copy = arena_alloc(&c->bytes, (size_t)n * 2 * sizeof *copy + 1);
    series_entry *e = table_slot(c->series, sid);
    if (!copy || !e) return STORE_ENOMEM;
    memcpy(copy, pairs, (size_t)n * 2 * sizeof *copy);
    e->pairs = copy;
    e->n = n;
    if (idmap_put(&c->series_map, hash_bytes(pairs, (size_t)n * 8, SERIES_SEED), sid)) return STORE_ENOMEM;
    if (sid >= c->series->len) c->series->len = sid + 1;
    return index_add(c, sid, pairs, n);
}

store_status catalog_series_intern(catalog *c, MDB_txn *txn, const store_label *labels, int n_labels, uint32_t *sid)
{
    uint32_t pairs[2 * 64];
    if (n_labels <= 0 || n_labels > 64) return STORE_EINVAL;
    for (int i = 0; i < n_labels; i++) {
        store_status ss = intern_string(c, labels[i].name, &pairs[2 * i]);
        if (!ss) ss = intern_string(c, labels[i].value, &pairs[2 * i + 1]);
        if (ss) return ss;
    }
    uint32_t n = (uint32_t)n_labels;
    series_probe pr = { c, pairs, n };
    uint32_t found = idmap_find(&c->series_map, hash_bytes(pairs, (size_t)n * 8, SERIES_SEED), series_eq, &pr);
    if (found) {
        *sid = found;
        return STORE_OK;
    }
    uint32_t nid = c->series->len;
    MDB_val k = { sizeof nid, &nid }, v = { (size_t)n * 8, pairs };
    int rc = mdb_put(txn, c->db_series, &k, &v, MDB_APPEND);
    if (rc) return env_status(rc);
    store_status ss = add_series_mem(c, nid, pairs, n);
    if (ss) return ss;
    *sid = nid;
    return STORE_OK;
}

uint32_t catalog_series_find(const catalog *c, const store_label *labels, int n_labels)
{
    uint32_t pairs[2 * 64];
    if (n_labels <= 0 || n_labels > 64) return 0;
    for (int i = 0; i < n_labels; i++) {
        pairs[2 * i] = find_string(c, labels[i].name, (uint32_t)strlen(labels[i].name));
        pairs[2 * i + 1] = find_string(c, labels[i].value, (uint32_t)strlen(labels[i].value));
        if (!pairs[2 * i] || !pairs[2 * i + 1]) return 0;
    }
    series_probe pr = { c, pairs, (uint32_t)n_labels };
    return idmap_find(&c->series_map, hash_bytes(pairs, (size_t)n_labels * 8, SERIES_SEED), series_eq, &pr);
}

int catalog_series_labels(const catalog *c, uint32_t sid, store_label *out, int max)
{
    if (!sid || sid >= catalog_series_committed(c)) return 0;
    const series_entry *e = table_at(c->series, sid);
    for (uint32_t i = 0; i < e->n && (int)i < max; i++) {
        out[i].name = string_at(c, e->pairs[2 * i]);
        out[i].value = string_at(c, e->pairs[2 * i + 1]);
    }
    return (int)e->n;
}

const char *catalog_series_label(const catalog *c, uint32_t sid, const char *name)
{
    if (!sid || sid >= catalog_series_committed(c)) return NULL;
    const series_entry *e = table_at(c->series, sid);
    for (uint32_t i = 0; i < e->n; i++)
        if (strcmp(string_at(c, e->pairs[2 * i]), name) == 0) return string_at(c, e->pairs[2 * i + 1]);
    return NULL;
}

/* ---- marks, rollback, publication ---- */

catalog_mark catalog_mark_now(const catalog *c)
{
    return (catalog_mark){ c->strings->len, c->series->len, c->n_postings, c->strings_open };
}

static int rebuild_maps(catalog *c)
{
    idmap_clear(&c->string_map);
    idmap_clear(&c->series_map);
    for (uint32_t i = 1; i < c->strings->len; i++) {
        const str_entry *e = table_at(c->strings, i);
        if (idmap_put(&c->string_map, hash_bytes(e->ptr, e->len, STRING_SEED), i)) return -1;
    }
    for (uint32_t i = 1; i < c->series->len; i++) {
        const series_entry *e = table_at(c->series, i);
        if (idmap_put(&c->series_map, hash_bytes(e->pairs, (size_t)e->n * 8, SERIES_SEED), i)) return -1;
    }
    return 0;
}

void catalog_rollback(catalog *c, catalog_mark m)
{
    pthread_rwlock_wrlock(&c->index_lock);
    for (uint32_t i = 0; i < c->n_postings; i++) {
        postings_list *pl = &c->postings[i];
        while (pl->n && pl->ids[pl->n - 1] >= m.series) pl->n--;
    }
    pthread_rwlock_unlock(&c->index_lock);
    c->strings->len = m.strings;
    c->series->len = m.series;
    c->strings_open = m.strings_open;
    catalog_publish_pending(c);
    /* Out of memory while rebuilding would leave maps that could create
     * duplicate series: stop; everything committed is on disk. */
    if (rebuild_maps(c)) abort();
}

void catalog_publish_pending(catalog *c)
{
    atomic_store_explicit(&c->strings->pending, c->strings->len, memory_order_release);
    atomic_store_explicit(&c->series->pending, c->series->len, memory_order_release);
}

void catalog_publish_committed(catalog *c)
{
    catalog_publish_pending(c);
    atomic_store_explicit(&c->strings->committed, c->strings->len, memory_order_release);
    atomic_store_explicit(&c->series->committed, c->series->len, memory_order_release);
}

uint32_t catalog_series_committed(const catalog *c)
{
    return atomic_load_explicit(&c->series->committed, memory_order_acquire);
}

uint32_t catalog_strings_pending(const catalog *c)
{
    return atomic_load_explicit(&c->strings->pending, memory_order_acquire);
}

uint64_t catalog_memory(const catalog *c)
{
    return idmap_bytes(&c->string_map) + idmap_bytes(&c->series_map) + idmap_bytes(&c->postings_map) +
           idmap_bytes(&c->label_strings) + (uint64_t)c->strings->len * sizeof(str_entry) +
           (uint64_t)c->series->len * sizeof(series_entry);
}

/* ---- open and close ---- */

static int load_strings(catalog *c, MDB_txn *txn, char *err, size_t errlen)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, c->db_strings, &cur);
    uint32_t last_first = 1;
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        uint32_t first;
        memcpy(&first, k.mv_data, sizeof first);
        if (k.mv_size != sizeof first || first != c->strings->len) goto damaged;
        const unsigned char *p = v.mv_data, *end = p + v.mv_size;
        while (p < end) {
            uint64_t len;
            if (varint_get(&p, end, &len) || (uint64_t)(end - p) < len) goto damaged;
            if (add_string_mem(c, c->strings->len, p, (uint32_t)len)) goto damaged;
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
    env_set_err(err, errlen, "%s: label strings are damaged near id %u (or out of memory)", c->path, c->strings->len);
    return -1;
}

static int load_series(catalog *c, MDB_txn *txn, char *err, size_t errlen)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, c->db_series, &cur);
    uint32_t expect = 1;
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        uint32_t id;
        memcpy(&id, k.mv_data, sizeof id);
        uint32_t pairs[2 * 64];
        uint32_t n = (uint32_t)(v.mv_size / 8);
        int ok = k.mv_size == sizeof id && id == expect && v.mv_size % 8 == 0 && n > 0 && n <= 64;
        if (ok) {
            memcpy(pairs, v.mv_data, v.mv_size);
            for (uint32_t i = 0; i < 2 * n; i++) ok &= pairs[i] > 0 && pairs[i] < c->strings->len;
        }
        if (!ok || add_series_mem(c, id, pairs, n)) {
            mdb_cursor_close(cur);
            env_set_err(err, errlen, "%s: series %u is damaged (or out of memory)", c->path, expect);
            return -1;
        }
        expect++;
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) return 0;
    env_set_err(err, errlen, "%s: reading series: %s", c->path, mdb_strerror(rc));
    return -1;
}

/* Checks the format; stores it and the partition length in a new catalog. */
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
        if (!*was_v5 && (v.mv_size != strlen(CATALOG_FORMAT) || memcmp(v.mv_data, CATALOG_FORMAT, v.mv_size))) {
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
    }
    if (rc) env_set_err(err, errlen, "reading %s: %s", c->path, mdb_strerror(rc));
    return rc ? -1 : 0;
}

void catalog_close(catalog *c)
{
    if (!c) return;
    if (c->env) mdb_env_close(c->env);
    for (uint32_t i = 0; i < c->n_postings; i++) free(c->postings[i].ids);
    free(c->postings);
    idmap_free(&c->string_map);
    idmap_free(&c->series_map);
    idmap_free(&c->postings_map);
    idmap_free(&c->label_strings);
    table_free(c->strings);
    table_free(c->series);
    arena_free(&c->bytes);
    pthread_rwlock_destroy(&c->index_lock);
    free(c->path);
    free(c);
}

store_status catalog_set_format(catalog *c)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
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
    pthread_rwlock_init(&c->index_lock, NULL);
    c->path = strdup(path);
    c->strings = table_new(sizeof(str_entry));
    c->series = table_new(sizeof(series_entry));
    if (!c->path || !c->strings || !c->series || idmap_init(&c->string_map, 64) || idmap_init(&c->series_map, 64) ||
        idmap_init(&c->postings_map, 64) || idmap_init(&c->label_strings, 64) || !table_slot(c->strings, 0) ||
        !table_slot(c->series, 0)) {
        catalog_close(c);
        env_set_err(err, errlen, "out of memory opening the catalog");
        return STORE_ENOMEM;
    }
    ((str_entry *)table_at(c->strings, 0))->ptr = "";
    c->strings->len = c->series->len = 1;
    store_status ss = env_open(&c->env, path, map_size, fixed_map, 1, NULL, err, errlen);
    if (ss) {
        catalog_close(c);
        return ss;
    }
    MDB_txn *txn;
    int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
    if (!rc && ((rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &c->db_meta)) ||
                (rc = mdb_dbi_open(txn, "strings", MDB_CREATE | MDB_INTEGERKEY, &c->db_strings)) ||
                (rc = mdb_dbi_open(txn, "series", MDB_CREATE | MDB_INTEGERKEY, &c->db_series))))
        mdb_txn_abort(txn);
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
