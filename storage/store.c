/* store.c — opening and closing the store, the directory lock, the list of
 * time partitions, store_resolve and statistics.
 *
 * Data directory:
 *   LOCK              flock'd by the open store, holds its pid
 *   catalog.mdb       series, label strings, format, partition length
 *   parts/<start>.mdb one LMDB file per time partition (part.c)
 * Opening reads the catalog and lists parts/: no partition file is opened
 * until a write or a read needs it, so opening costs the same whatever the
 * history.  A flamedb-4 directory (DATA/data.mdb) is migrated (migrate.c)
 * before the store answers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "env.h"
#include "rollup.h"
#include "store_internal.h"

#define DAY_MS (INT64_C(24) * 3600 * 1000)
#define HOUR_MS (INT64_C(3600) * 1000)

const double store_commit_bucket_le[STORE_COMMIT_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5
};

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

/* Takes DATA/LOCK exclusively.  flock dies with the process (kill -9
 * frees it) and is per open file description, so two stores in one process
 * exclude each other too. */
static int lock_dir(store *st, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/LOCK", st->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        env_set_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        env_set_err(err, errlen, "data directory %s is in use by another flamedb (pid %s); stop it first",
                    st->dir, *pid ? pid : "unknown");
        close(fd);
        return -1;
    }
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n) { /* informative only */ }
    st->lock_fd = fd;
    return 0;
}

int64_t store_partition_ms(const store *st) { return st->part_ms; }

const char *store_format(void) { return CATALOG_FORMAT; }

int64_t store_part_floor(const store *st, int64_t t)
{
    int64_t q = t / st->part_ms;
    if (t % st->part_ms < 0) q--;
    return q * st->part_ms;
}

/* Index of the first partition starting at or after t. */
static size_t lower_bound(const store *st, int64_t t)
{
    size_t lo = 0, hi = st->n_parts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (part_start(st->parts[mid]) < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int insert_part(store *st, part *p)
{
    if (st->n_parts == st->cap_parts) {
        size_t cap = st->cap_parts ? st->cap_parts * 2 : 64;
        part **np = realloc(st->parts, cap * sizeof *np);
        if (!np) return -1;
        st->parts = np;
        st->cap_parts = cap;
    }
    size_t i = lower_bound(st, part_start(p));
    while (i < st->n_parts && part_start(st->parts[i]) == part_start(p) && part_shard(st->parts[i]) < part_shard(p)) i++;
    memmove(st->parts + i + 1, st->parts + i, (st->n_parts - i) * sizeof *st->parts);
    st->parts[i] = p;
    st->n_parts++;
    return 0;
}

/* The partition starting at start, shard `shard`: its index, or -1. */
static ssize_t find_part(const store *st, int64_t start, int shard)
{
    for (size_t i = lower_bound(st, start); i < st->n_parts && part_start(st->parts[i]) == start; i++)
        if (part_shard(st->parts[i]) == shard) return (ssize_t)i;
    return -1;
}

part *store_part_at(store *st, int64_t t, int shard, int create, char *err, size_t errlen)
{
    int64_t start = store_part_floor(st, t);
    pthread_rwlock_rdlock(&st->parts_lock);
    ssize_t i = find_part(st, start, shard);
    part *p = i >= 0 ? st->parts[i] : NULL;
    if (p) part_ref(p);
    pthread_rwlock_unlock(&st->parts_lock);
    if (p || !create) return p;
    /* Only the shard's writer creates its file: no one else can race. */
    p = part_new(st->parts_dir, start, st->part_ms, shard);
    if (!p) {
        env_set_err(err, errlen, "out of memory");
        return NULL;
    }
    if (part_open(p, st->part_map_size, st->opt.map_size != 0, 1, err, errlen)) {
        part_unref(p);
        return NULL;
    }
    pthread_rwlock_wrlock(&st->parts_lock);
    int fail = insert_part(st, p);
    pthread_rwlock_unlock(&st->parts_lock);
    if (fail) {
        part_drop(p);
        part_unref(p);
        env_set_err(err, errlen, "out of memory");
        return NULL;
    }
    part_ref(p);
    return p;
}

ssize_t store_parts_copy(store *st, int64_t from, int64_t until, part ***out)
{
    pthread_rwlock_rdlock(&st->parts_lock);
    size_t a = 0, b = st->n_parts;
    if (from <= until) {
        a = lower_bound(st, store_part_floor(st, from));
        b = lower_bound(st, until);
    }
    part **v = malloc((b > a ? b - a : 1) * sizeof *v);
    if (v)
        for (size_t i = a; i < b; i++) {
            v[i - a] = st->parts[i];
            part_ref(v[i - a]);
        }
    pthread_rwlock_unlock(&st->parts_lock);
    *out = v;
    return v ? (ssize_t)(b > a ? b - a : 0) : -1;
}

void store_part_set_writer(store *st, part *p, pdict_w *w)
{
    pthread_rwlock_wrlock(&st->parts_lock);
    pdict_w *old = part_writer(p);
    part_set_writer(p, w);
    pthread_rwlock_unlock(&st->parts_lock);
    pdict_w_free(old);
}

store_status store_part_reserve_stacks(store *st, part *p, size_t more)
{
    pdict_w *w = part_writer(p);
    if (!w || !pdict_w_stacks_full(w, more)) return STORE_OK;
    pthread_rwlock_wrlock(&st->parts_lock);
    store_status ss = pdict_w_stacks_grow(w, more);
    pthread_rwlock_unlock(&st->parts_lock);
    return ss;
}

void store_part_remove(store *st, part *p)
{
    pthread_rwlock_wrlock(&st->parts_lock);
    ssize_t i = find_part(st, part_start(p), part_shard(p));
    if (i >= 0 && st->parts[i] == p) {
        memmove(st->parts + i, st->parts + i + 1, (st->n_parts - (size_t)i - 1) * sizeof *st->parts);
        st->n_parts--;
    } else {
        p = NULL;
    }
    pdict_w *w = p ? part_writer(p) : NULL;
    if (p) part_set_writer(p, NULL);
    pthread_rwlock_unlock(&st->parts_lock);
    if (!p) return;
    pdict_w_free(w);
    part_drop(p);
    part_unref(p);
}

int store_shard_of(const store *st, const store_label *labels, int n)
{
    if (st->n_writers <= 1) return 0;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (int i = 0; i < n; i++) {
        if (!strcmp(labels[i].name, "type")) continue;
        for (const char *c = labels[i].name; *c; c++) h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
        h = (h ^ 0xff) * UINT64_C(0x100000001b3);
        for (const char *c = labels[i].value; *c; c++) h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
        h = (h ^ 0xfe) * UINT64_C(0x100000001b3);
    }
    return (int)((h ^ (h >> 29)) % (uint64_t)st->n_writers);
}

int writer_owns(const writer *w, const part *p) { return part_shard(p) % w->st->n_writers == w->idx; }

int store_writers(const store *st) { return st->n_writers; }

int store_default_writers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* store_resolve's work: hashes[i] given, or (hashes NULL) taken here of
 * stacks[i], 256 at a time. */
static uint64_t resolve(store *st, const store_label *labels, int n_labels, int64_t from_ms, const store_stack *stacks,
                        const hash128 *hashes, size_t n, uint32_t *leaves)
{
    int64_t start = store_part_floor(st, from_ms);
    pthread_rwlock_rdlock(&st->parts_lock);
    ssize_t i = find_part(st, start, store_shard_of(st, labels, n_labels));
    part *p = i >= 0 ? st->parts[i] : NULL;
    const pdict_w *w = p ? part_writer(p) : NULL;
    hash128 h[256];
    for (size_t k = 0; k < n; k += 256) {
        size_t m = n - k < 256 ? n - k : 256;
        if (!w) {
            memset(leaves + k, 0, m * sizeof *leaves);
            continue;
        }
        if (hashes) {
            pdict_w_resolve(w, hashes + k, m, leaves + k);
            continue;
        }
        for (size_t j = 0; j < m; j++) h[j] = hash_bytes128(stacks[k + j].frames, stacks[k + j].len);
        pdict_w_resolve(w, h, m, leaves + k);
    }
    uint64_t token = w ? part_token(p) : 0;
    pthread_rwlock_unlock(&st->parts_lock);
    return token;
}

uint64_t store_resolve(store *st, const store_label *labels, int n_labels, int64_t from_ms, const store_stack *stacks,
                       size_t n, uint32_t *leaves)
{
    return resolve(st, labels, n_labels, from_ms, stacks, NULL, n, leaves);
}

uint64_t store_resolve_hashed(store *st, const store_label *labels, int n_labels, int64_t from_ms,
                              const hash128 *hashes, size_t n, uint32_t *leaves)
{
    return resolve(st, labels, n_labels, from_ms, NULL, hashes, n, leaves);
}

/* Lists parts/ into the partition list (no file is opened). */
static int list_parts(store *st, char *err, size_t errlen)
{
    DIR *d = opendir(st->parts_dir);
    if (!d) {
        env_set_err(err, errlen, "cannot read %s: %s", st->parts_dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        int64_t start;
        int shard;
        size_t len = strlen(e->d_name);
        /* the copy of a seal cut short (compact.c: seal_part): its file
         * was never renamed over the partition's, which is whole */
        if (len > 9 && !strcmp(e->d_name + len - 9, ".mdb.seal")) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", st->parts_dir, e->d_name);
            unlink(path);
            continue;
        }
        if (part_parse_name(e->d_name, &start, &shard)) continue;
        if (store_part_floor(st, start) != start) {
            env_set_err(err, errlen, "%s/%s does not start on a partition boundary of this store (%lld ms)",
                        st->parts_dir, e->d_name, (long long)st->part_ms);
            rc = -1;
            break;
        }
        part *p = part_new(st->parts_dir, start, st->part_ms, shard);
        if (!p || insert_part(st, p)) {
            part_unref(p);
            env_set_err(err, errlen, "out of memory");
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}

/* flamedb-5 → 6: the blocks stay (version 1 is read as it is); every
 * partition's rollups are dropped and their buckets marked pending, one
 * transaction a partition, so compaction rebuilds them keeping samples
 * and gauges apart.  The format is bumped last: an upgrade cut short is
 * done again at the next open. */
static int upgrade_v5(store *st, char *err, size_t errlen)
{
    for (size_t i = 0; i < st->n_parts; i++) {
        part *p = st->parts[i];
        if (part_open(p, st->part_map_size, st->opt.map_size != 0, 0, err, errlen)) return -1;
        MDB_txn *txn;
        int rc = mdb_txn_begin(part_env(p), NULL, 0, &txn);
        store_status ss = rc ? env_status(rc)
                             : rollup_reset(txn, part_dbi(p, PART_BLOCKS), part_dbi(p, PART_ROLLUPS),
                                            part_dbi(p, PART_PENDING));
        if (!rc && ss) mdb_txn_abort(txn);
        if (!rc && !ss && (rc = mdb_txn_commit(txn))) ss = env_status(rc);
        if (ss) {
            env_set_err(err, errlen, "upgrading %s from flamedb-5: %s", part_path(p),
                        rc ? mdb_strerror(rc) : "cannot reset its rollups");
            return -1;
        }
    }
    if (catalog_set_format(st->cat)) {
        env_set_err(err, errlen, "upgrading %s from flamedb-5: cannot write the new format", st->dir);
        return -1;
    }
    return 0;
}

static void store_release(store *st)
{
    for (size_t i = 0; i < st->n_parts; i++) part_unref(st->parts[i]);
    free(st->parts);
    catalog_close(st->cat);
    for (int i = 0; i < STORE_MAX_WRITERS; i++) {
        ZSTD_freeCCtx(st->writers[i].zcctx);
        pthread_cond_destroy(&st->writers[i].work);
    }
    if (st->lock_fd >= 0) close(st->lock_fd);
    pthread_rwlock_destroy(&st->parts_lock);
    pthread_mutex_destroy(&st->lock);
    pthread_mutex_destroy(&st->cat_lock);
    pthread_cond_destroy(&st->done);
    free(st->dir);
    free(st->parts_dir);
    free(st);
}

store_status store_open(store **out, const store_options *opt, char *err, size_t errlen)
{
    *out = NULL;
    if (!opt || !opt->dir || !*opt->dir) {
        env_set_err(err, errlen, "no data directory given");
        return STORE_EINVAL;
    }
    if (opt->partition_ms < 0 || opt->partition_ms % HOUR_MS) {
        env_set_err(err, errlen, "the partition length must be whole hours");
        return STORE_EINVAL;
    }
    if (mkdir_p(opt->dir)) {
        env_set_err(err, errlen, "cannot create data directory %s: %s", opt->dir, strerror(errno));
        return STORE_EIO;
    }
    store *st = calloc(1, sizeof *st);
    if (!st) return STORE_ENOMEM;
    st->lock_fd = -1;
    pthread_rwlock_init(&st->parts_lock, NULL);
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->cat_lock, NULL);
    pthread_cond_init(&st->done, NULL);
    st->opt = *opt;
    st->n_writers = opt->writers > 0 ? opt->writers : store_default_writers();
    if (st->n_writers > STORE_MAX_WRITERS) st->n_writers = STORE_MAX_WRITERS;
    int zfail = 0;
    for (int i = 0; i < STORE_MAX_WRITERS; i++) {
        writer *w = &st->writers[i];
        w->st = st;
        w->idx = i;
        w->newest_write_ms = INT64_MIN;
        pthread_cond_init(&w->work, NULL);
        if (i < st->n_writers && !(w->zcctx = ZSTD_createCCtx())) zfail = 1;
    }
    if (!st->opt.retention_every_ms) st->opt.retention_every_ms = 60000;
    st->part_map_size = opt->map_size ? opt->map_size : UINT64_C(256) << 30;
    st->dir = strdup(opt->dir);
    size_t n = strlen(opt->dir) + 8;
    st->parts_dir = malloc(n);
    if (!st->dir || !st->parts_dir || zfail) {
        store_release(st);
        env_set_err(err, errlen, "out of memory opening the store");
        return STORE_ENOMEM;
    }
    snprintf(st->parts_dir, n, "%s/parts", opt->dir);
    if (lock_dir(st, err, errlen)) {
        store_release(st);
        return STORE_EIO;
    }
    int v4 = store_has_v4(st->dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/catalog.mdb", st->dir);
    if (v4) { /* an earlier migration did not finish: start again */
        env_remove(path);
        char cmd[4300];
        DIR *d = opendir(st->parts_dir);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.') {
                snprintf(cmd, sizeof cmd, "%s/%s", st->parts_dir, e->d_name);
                unlink(cmd);
            }
        if (d) closedir(d);
    }
    st->part_ms = opt->partition_ms ? opt->partition_ms : DAY_MS;
    int was_v5 = 0;
    store_status ss = catalog_open(&st->cat, path, opt->map_size ? opt->map_size : UINT64_C(64) << 30,
                                   opt->map_size != 0, &st->part_ms, &was_v5, err, errlen);
    if (ss) {
        store_release(st);
        return ss;
    }
    if (opt->partition_ms && opt->partition_ms != st->part_ms) {
        env_set_err(err, errlen, "%s was created with partitions of %lld h; it cannot be opened with %lld h",
                    st->dir, (long long)(st->part_ms / HOUR_MS), (long long)(opt->partition_ms / HOUR_MS));
        store_release(st);
        return STORE_EINVAL;
    }
    if (mkdir_p(st->parts_dir) || list_parts(st, err, errlen)) {
        if (errno && !*err) env_set_err(err, errlen, "cannot create %s: %s", st->parts_dir, strerror(errno));
        store_release(st);
        return STORE_EIO;
    }
    /* Series of a catalog written before series expired: their last
     * partition is taken to be the newest present. */
    ss = catalog_fill_last(st->cat, st->n_parts ? part_start(st->parts[st->n_parts - 1]) : INT64_MIN);
    if (ss) {
        env_set_err(err, errlen, "%s: recording the series' last partitions failed: %s", path,
                    ss == STORE_ENOMEM ? "out of memory" : "cannot write the catalog (is the disk full?)");
        store_release(st);
        return ss;
    }
    if (was_v5 && upgrade_v5(st, err, errlen)) {
        store_release(st);
        return STORE_EIO;
    }
    /* Rollups still pending in the newest partitions are built in the
     * background: compaction visits open partitions. */
    for (size_t i = st->n_parts > 2 ? st->n_parts - 2 : 0; i < st->n_parts; i++)
        part_open(st->parts[i], st->part_map_size, opt->map_size != 0, 0, NULL, 0);
    for (int i = 0; i < st->n_writers; i++) {
        if (pthread_create(&st->writers[i].thread, NULL, writer_main, &st->writers[i])) {
            env_set_err(err, errlen, "cannot start writer thread %d", i + 1);
            store_close(st);
            return STORE_ENOMEM;
        }
        st->writers[i].started = 1;
    }
    if (v4) {
        uint64_t profiles = 0;
        ss = store_migrate_v4(st, &profiles, err, errlen);
        if (ss) {
            store_close(st);
            return ss;
        }
        st->stats.migrated_profiles = profiles;
    }
    *out = st;
    return STORE_OK;
}

void store_close(store *st)
{
    if (!st) return;
    pthread_mutex_lock(&st->lock);
    st->stopping = 1;
    for (int i = 0; i < st->n_writers; i++) pthread_cond_broadcast(&st->writers[i].work);
    pthread_mutex_unlock(&st->lock);
    for (int i = 0; i < st->n_writers; i++)
        if (st->writers[i].started) pthread_join(st->writers[i].thread, NULL);
    store_release(st);
}

void store_get_stats(store *st, store_stats *out)
{
    pthread_mutex_lock(&st->lock);
    *out = st->stats;
    pthread_mutex_unlock(&st->lock);
    out->series = catalog_series_count(st->cat);
    out->nodes = out->strings = 0;
    out->dict_memory = out->catalog_memory = catalog_memory(st->cat);
    char path[4200];
    snprintf(path, sizeof path, "%s/catalog.mdb", st->dir);
    out->db_bytes = env_file_bytes(path);
    pthread_rwlock_rdlock(&st->parts_lock);
    out->partitions = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        if (!i || part_start(st->parts[i]) != part_start(st->parts[i - 1])) out->partitions++;
        out->partition_files++;
        const pdict_w *w = part_writer(st->parts[i]);
        if (w) {
            out->nodes += pdict_w_nodes(w) - 1;
            out->strings += pdict_w_strings(w) - 1;
            out->dict_memory += pdict_w_memory(w);
        }
        out->db_bytes += env_file_bytes(part_path(st->parts[i]));
    }
    pthread_rwlock_unlock(&st->parts_lock);
}
