/* series.c — the series registry and the label index.
 *
 * A series is its sorted labels, kept as (name id, value id) pairs: on disk
 * in the LMDB database "series" (id -> pairs), in memory in a table by id.
 * The writer finds a profile's series through a map from the hash of its
 * pairs.  The label index maps (name id, value id) to the ascending list of
 * series carrying that label, as Prometheus's postings do; it is rebuilt
 * from the series at open, guarded by a read-write lock because readers copy
 * lists out of it while the writer appends. */
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define SERIES_SEED UINT64_C(0x0ddba11cafe5eed5)

static inline uint64_t label_key(uint32_t name, uint32_t value)
{
    return ((uint64_t)name << 32) | value;
}

typedef struct { store *st; const uint32_t *pairs; uint32_t n; } series_probe;

static int series_eq(void *ctx, uint32_t id)
{
    series_probe *pr = ctx;
    const series_entry *e = table_at(pr->st->series, id);
    return e->n == pr->n && memcmp(e->pairs, pr->pairs, (size_t)pr->n * 2 * sizeof(uint32_t)) == 0;
}

#define LABEL_SEED UINT64_C(0x6c6162656c737472)

typedef struct { store *st; const char *s; size_t len; uint32_t n_strings; } label_probe;

/* Confirms a label_strings candidate by content.  An entry left behind by a
 * rolled-back id is harmless: it only matches when the id's current string
 * is the one asked for, which makes the id right. */
static int label_eq(void *ctx, uint32_t id)
{
    label_probe *pr = ctx;
    if (id >= pr->n_strings) return 0;
    const str_entry *e = table_at(pr->st->strings, id);
    return e->len == pr->len && memcmp(e->ptr, pr->s, pr->len) == 0;
}

/* Makes a label string findable by readers; under the index write lock. */
static int label_string_add(store *st, uint32_t id)
{
    const str_entry *e = table_at(st->strings, id);
    uint64_t h = store_hash_bytes(e->ptr, e->len, LABEL_SEED);
    label_probe pr = { st, e->ptr, e->len, st->strings->len };
    if (idmap_find(&st->label_strings, h, label_eq, &pr) == id) return 0;
    return idmap_put(&st->label_strings, h, id);
}

store_status series_postings_copy(store *st, const char *name, const char *value, uint32_t n_strings,
                                  uint32_t n_series, uint32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    store_status ss = STORE_OK;
    pthread_rwlock_rdlock(&st->index_lock);
    label_probe pn = { st, name, strlen(name), n_strings }, pv = { st, value, strlen(value), n_strings };
    uint32_t nid = idmap_find(&st->label_strings, store_hash_bytes(name, pn.len, LABEL_SEED), label_eq, &pn);
    uint32_t vid = nid ? idmap_find(&st->label_strings, store_hash_bytes(value, pv.len, LABEL_SEED), label_eq, &pv) : 0;
    uint32_t idx = vid ? idmap_find(&st->postings_map, label_key(nid, vid), NULL, NULL) : 0;
    if (idx) {
        const postings_list *pl = &st->postings[idx - 1];
        uint32_t k = 0;
        while (k < pl->n && pl->ids[k] < n_series) k++;
        if (k && (*ids = malloc(k * sizeof **ids))) {
            memcpy(*ids, pl->ids, k * sizeof **ids);
            *n = k;
        } else if (k) {
            ss = STORE_ENOMEM;
        }
    }
    pthread_rwlock_unlock(&st->index_lock);
    return ss;
}

static store_status index_add(store *st, uint32_t sid, const uint32_t *pairs, uint32_t n)
{
    store_status ss = STORE_OK;
    pthread_rwlock_wrlock(&st->index_lock);
    for (uint32_t i = 0; i < n && !ss; i++) {
        if (label_string_add(st, pairs[2 * i]) || label_string_add(st, pairs[2 * i + 1])) {
            ss = STORE_ENOMEM;
            break;
        }
        uint64_t key = label_key(pairs[2 * i], pairs[2 * i + 1]);
        uint32_t idx = idmap_find(&st->postings_map, key, NULL, NULL);
        if (!idx) {
            if (st->n_postings == st->cap_postings) {
                uint32_t ncap = st->cap_postings ? st->cap_postings * 2 : 1024;
                postings_list *np = realloc(st->postings, ncap * sizeof *np);
                if (!np) { ss = STORE_ENOMEM; break; }
                st->postings = np;
                st->cap_postings = ncap;
            }
            memset(&st->postings[st->n_postings], 0, sizeof *st->postings);
            idx = ++st->n_postings;
            if (idmap_put(&st->postings_map, key, idx)) { ss = STORE_ENOMEM; break; }
        }
        postings_list *pl = &st->postings[idx - 1];
        if (pl->n == pl->cap) {
            uint32_t ncap = pl->cap ? pl->cap * 2 : 4;
            uint32_t *ni = realloc(pl->ids, ncap * sizeof *ni);
            if (!ni) { ss = STORE_ENOMEM; break; }
            pl->ids = ni;
            pl->cap = ncap;
        }
        pl->ids[pl->n++] = sid;
    }
    pthread_rwlock_unlock(&st->index_lock);
    return ss;
}

static store_status add_series_mem(store *st, uint32_t sid, const uint32_t *pairs, uint32_t n, uint64_t h)
{
    uint32_t *copy = arena_alloc(&st->bytes, (size_t)n * 2 * sizeof *copy + 1);
    series_entry *e = table_slot(st->series, sid);
    if (!copy || !e) return STORE_ENOMEM;
    memcpy(copy, pairs, (size_t)n * 2 * sizeof *copy);
    e->pairs = copy;
    e->n = n;
    if (idmap_put(&st->series_map, h, sid)) return STORE_ENOMEM;
    if (sid >= st->series->len) st->series->len = sid + 1;
    return index_add(st, sid, pairs, n);
}

store_status series_add_loaded(store *st, uint32_t sid, const uint32_t *pairs, uint32_t n)
{
    return add_series_mem(st, sid, pairs, n, store_hash_bytes(pairs, (size_t)n * 8, SERIES_SEED));
}

store_status series_intern(store *st, MDB_txn *txn, const store_profile *p, uint32_t *sid)
{
    uint32_t pairs[2 * 64];
    if (p->n_labels <= 0 || p->n_labels > 64) return STORE_EINVAL;
    for (int i = 0; i < p->n_labels; i++) {
        store_status ss = dict_intern_string(st, p->labels[i].name, (uint32_t)strlen(p->labels[i].name), &pairs[2 * i]);
        if (!ss) ss = dict_intern_string(st, p->labels[i].value, (uint32_t)strlen(p->labels[i].value), &pairs[2 * i + 1]);
        if (ss) return ss;
    }
    uint32_t n = (uint32_t)p->n_labels;
    uint64_t h = store_hash_bytes(pairs, (size_t)n * 8, SERIES_SEED);
    series_probe pr = { st, pairs, n };
    uint32_t found = idmap_find(&st->series_map, h, series_eq, &pr);
    if (found) {
        *sid = found;
        return STORE_OK;
    }
    uint32_t nid = st->series->len;
    MDB_val k = { sizeof nid, &nid }, v = { (size_t)n * 8, pairs };
    int rc = mdb_put(txn, st->db_series, &k, &v, MDB_APPEND);
    if (rc) return store_status_of(rc);
    store_status ss = add_series_mem(st, nid, pairs, n, h);
    if (ss) return ss;
    *sid = nid;
    return STORE_OK;
}

/* Drops series ids >= keep from the postings lists (they were appended in
 * id order, so they sit at the ends) and forgets lists that became empty. */
void series_rollback_index(store *st, uint32_t keep)
{
    pthread_rwlock_wrlock(&st->index_lock);
    for (uint32_t i = 0; i < st->n_postings; i++) {
        postings_list *pl = &st->postings[i];
        while (pl->n && pl->ids[pl->n - 1] >= keep) pl->n--;
    }
    pthread_rwlock_unlock(&st->index_lock);
}

int series_rebuild_map(store *st)
{
    idmap_clear(&st->series_map);
    for (uint32_t i = 1; i < st->series->len; i++) {
        const series_entry *e = table_at(st->series, i);
        if (idmap_put(&st->series_map, store_hash_bytes(e->pairs, (size_t)e->n * 8, SERIES_SEED), i)) return -1;
    }
    return 0;
}
