/* store.c — opening and closing the store: the LMDB environment, its named
 * databases, loading the dictionaries into memory, and statistics.
 *
 * Databases in one environment (one data.mdb file in the data directory):
 *   meta     "format" -> "flamedb-4"
 *   strings  u32 first id -> chunk of strings       (dict_disk.c)
 *   nodes    u32 first id -> chunk of tree nodes    (dict_disk.c)
 *   series   u32 id -> {u32 name, u32 value}[] (sorted labels)
 *   blocks   (series, start, seq) -> encoded pairs (block.c)
 *   rollups  (level, series, bucket, unit) -> pre-merged pairs (rollup.c)
 * LMDB commits with fsync by default, so a committed transaction survives
 * kill -9 and power loss, and the file is always openable (copy-on-write
 * B-trees, no recovery step). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zstd.h>

#include "store_internal.h"

#define STORE_FORMAT "flamedb-4"

const double store_commit_bucket_le[STORE_COMMIT_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5
};

void store_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

store_status store_status_of(int rc)
{
    switch (rc) {
    case 0: return STORE_OK;
    case MDB_MAP_FULL: case ENOSPC: case MDB_TXN_FULL: return STORE_EFULL;
    case ENOMEM: return STORE_ENOMEM;
    default: return STORE_EIO;
    }
}

static int mkdir_p(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) && errno != EEXIST) return -1;
            buf[i] = c;
        }
    }
    return 0;
}

static int check_format(store *st, MDB_txn *txn, char *err, size_t errlen)
{
    MDB_val k = { 6, "format" }, v;
    int rc = mdb_get(txn, st->db_meta, &k, &v);
    if (rc == MDB_NOTFOUND) {
        v.mv_data = STORE_FORMAT;
        v.mv_size = strlen(STORE_FORMAT);
        rc = mdb_put(txn, st->db_meta, &k, &v, 0);
    } else if (rc == 0 && (v.mv_size != strlen(STORE_FORMAT) || memcmp(v.mv_data, STORE_FORMAT, v.mv_size))) {
        store_set_err(err, errlen, "%s holds data of format '%.*s', this flamedb reads '%s'",
                      st->path, (int)v.mv_size, (const char *)v.mv_data, STORE_FORMAT);
        return -1;
    }
    if (rc) store_set_err(err, errlen, "reading %s: %s", st->path, mdb_strerror(rc));
    return rc ? -1 : 0;
}

/* Loads the series database, checking its ids are dense. */
static int load_db(store *st, MDB_txn *txn, MDB_dbi dbi, const char *what,
                   int (*add)(store *, uint32_t, MDB_val *), char *err, size_t errlen)
{
    MDB_cursor *c;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, dbi, &c);
    if (rc) goto fail;
    uint32_t expect = 1;
    while ((rc = mdb_cursor_get(c, &k, &v, expect == 1 ? MDB_FIRST : MDB_NEXT)) == 0) {
        uint32_t id;
        memcpy(&id, k.mv_data, sizeof id);
        if (k.mv_size != sizeof id || id != expect) {
            mdb_cursor_close(c);
            store_set_err(err, errlen, "%s: %s ids are not dense at %u: the file is damaged", st->path, what, expect);
            return -1;
        }
        if (add(st, id, &v)) {
            mdb_cursor_close(c);
            store_set_err(err, errlen, "%s: cannot load %s %u (out of memory or damaged)", st->path, what, id);
            return -1;
        }
        expect++;
    }
    mdb_cursor_close(c);
    if (rc == MDB_NOTFOUND) return 0;
fail:
    store_set_err(err, errlen, "%s: reading %s: %s", st->path, what, mdb_strerror(rc));
    return -1;
}

static int add_series(store *st, uint32_t id, MDB_val *v)
{
    if (v->mv_size % 8 || v->mv_size == 0) return -1;
    uint32_t n = (uint32_t)(v->mv_size / 8);
    uint32_t *pairs = malloc(v->mv_size);
    if (!pairs) return -1;
    memcpy(pairs, v->mv_data, v->mv_size);
    store_status ss = series_add_loaded(st, id, pairs, n);
    free(pairs);
    return ss ? -1 : 0;
}

static int open_dbs(store *st, char *err, size_t errlen)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc) {
        store_set_err(err, errlen, "%s: %s", st->path, mdb_strerror(rc));
        return -1;
    }
    if ((rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &st->db_meta)) ||
        (rc = mdb_dbi_open(txn, "strings", MDB_CREATE | MDB_INTEGERKEY, &st->db_strings)) ||
        (rc = mdb_dbi_open(txn, "nodes", MDB_CREATE | MDB_INTEGERKEY, &st->db_nodes)) ||
        (rc = mdb_dbi_open(txn, "series", MDB_CREATE | MDB_INTEGERKEY, &st->db_series)) ||
        (rc = mdb_dbi_open(txn, "blocks", MDB_CREATE, &st->db_blocks)) ||
        (rc = mdb_dbi_open(txn, "rollups", MDB_CREATE, &st->db_rollups))) {
        store_set_err(err, errlen, "%s: opening databases: %s", st->path, mdb_strerror(rc));
        mdb_txn_abort(txn);
        return -1;
    }
    if (check_format(st, txn, err, errlen) ||
        dict_load(st, txn, 0, err, errlen) || dict_load(st, txn, 1, err, errlen) ||
        load_db(st, txn, st->db_series, "series", add_series, err, errlen)) {
        mdb_txn_abort(txn);
        return -1;
    }
    rc = mdb_txn_commit(txn);
    if (rc) {
        store_set_err(err, errlen, "%s: %s", st->path, mdb_strerror(rc));
        return -1;
    }
    return 0;
}

static store *store_alloc(const store_options *opt)
{
    store *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->opt = *opt;
    if (!st->opt.map_size) st->opt.map_size = UINT64_C(1) << 40;
    if (!st->opt.retention_every_ms) st->opt.retention_every_ms = 60000;
    st->path = strdup(opt->dir);
    st->strings = table_new(sizeof(str_entry));
    st->nodes = table_new(sizeof(node_entry));
    st->series = table_new(sizeof(series_entry));
    st->stack_cache = calloc(STACK_CACHE_SLOTS, sizeof *st->stack_cache);
    st->zcctx = ZSTD_createCCtx();
    if (!st->path || !st->zcctx || !st->strings || !st->nodes || !st->series || !st->stack_cache ||
        idmap_init(&st->string_map, 1024) || idmap_init(&st->node_map, 1024) ||
        idmap_init(&st->series_map, 64) || idmap_init(&st->postings_map, 64) || idmap_init(&st->label_strings, 64) ||
        !table_slot(st->strings, 0) || !table_slot(st->nodes, 0) || !table_slot(st->series, 0)) {
        return st; /* the caller sees the missing pieces and frees */
    }
    st->strings->len = st->nodes->len = st->series->len = 1; /* id 0 is "none" / the root */
    pthread_rwlock_init(&st->index_lock, NULL);
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->work, NULL);
    pthread_cond_init(&st->done, NULL);
    return st;
}

static void store_release(store *st)
{
    if (st->env) mdb_env_close(st->env);
    for (uint32_t i = 0; i < st->n_postings; i++) free(st->postings[i].ids);
    free(st->postings);
    idmap_free(&st->string_map);
    idmap_free(&st->node_map);
    idmap_free(&st->series_map);
    idmap_free(&st->postings_map);
    idmap_free(&st->label_strings);
    table_free(st->strings);
    table_free(st->nodes);
    table_free(st->series);
    free(st->stack_cache);
    ZSTD_freeCCtx(st->zcctx);
    arena_free(&st->bytes);
    free(st->path);
    free(st);
}

store_status store_open(store **out, const store_options *opt, char *err, size_t errlen)
{
    *out = NULL;
    if (!opt || !opt->dir || !*opt->dir) {
        store_set_err(err, errlen, "no data directory given");
        return STORE_EINVAL;
    }
    if (mkdir_p(opt->dir)) {
        store_set_err(err, errlen, "cannot create data directory %s: %s", opt->dir, strerror(errno));
        return STORE_EIO;
    }
    store *st = store_alloc(opt);
    if (!st || !st->strings || st->strings->len != 1) {
        if (st) store_release(st);
        store_set_err(err, errlen, "out of memory opening the store");
        return STORE_ENOMEM;
    }
    /* Without a size given, reserve 1 TiB of address space (LMDB grows the
     * file only as data arrives) and halve it while the system refuses
     * (ulimit -v, valgrind), down to 1 GiB. */
    uint64_t size = st->opt.map_size;
    int rc;
    for (;;) {
        rc = mdb_env_create(&st->env);
        if (!rc) rc = mdb_env_set_maxdbs(st->env, 8);
        if (!rc) rc = mdb_env_set_maxreaders(st->env, 1024);
        if (!rc) rc = mdb_env_set_mapsize(st->env, (size_t)size);
        if (!rc) rc = mdb_env_open(st->env, opt->dir, MDB_NOTLS, 0644);
        if (!rc || opt->map_size || size <= (UINT64_C(1) << 30) || (rc != EINVAL && rc != ENOMEM)) break;
        mdb_env_close(st->env);
        st->env = NULL;
        size /= 4;
    }
    if (rc) {
        store_set_err(err, errlen, "cannot open LMDB environment in %s: %s%s", opt->dir, mdb_strerror(rc),
                      rc == EAGAIN || rc == EBUSY ? " (is another flamedb using it?)" : "");
        store_release(st);
        return STORE_EIO;
    }
    st->opt.map_size = size;
    if (open_dbs(st, err, errlen)) {
        store_release(st);
        return STORE_EIO;
    }
    dict_publish_committed(st);
    st->next_retention_ms = 0;
    st->retention_sid = 1;
    if (pthread_create(&st->writer, NULL, writer_main, st)) {
        store_set_err(err, errlen, "cannot start the writer thread");
        store_release(st);
        return STORE_ENOMEM;
    }
    *out = st;
    return STORE_OK;
}

void store_close(store *st)
{
    if (!st) return;
    pthread_mutex_lock(&st->lock);
    st->stopping = 1;
    pthread_cond_broadcast(&st->work);
    pthread_mutex_unlock(&st->lock);
    pthread_join(st->writer, NULL);
    pthread_rwlock_destroy(&st->index_lock);
    pthread_mutex_destroy(&st->lock);
    pthread_cond_destroy(&st->work);
    pthread_cond_destroy(&st->done);
    store_release(st);
}

void store_get_stats(store *st, store_stats *out)
{
    pthread_mutex_lock(&st->lock);
    *out = st->stats;
    pthread_mutex_unlock(&st->lock);
    out->series = atomic_load(&st->series->committed) - 1;
    out->nodes = atomic_load(&st->nodes->committed) - 1;
    out->strings = atomic_load(&st->strings->committed) - 1;
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/data.mdb", st->path);
    out->db_bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_blocks * 512 : 0;
}
