/* dirsize.h — what a closed store's data directory takes on disk, for the
 * benchmarks that report it (bench_storage, bench_churn).
 *
 * Two views of the storage v2 layout (DATA/catalog.mdb, DATA/parts/NAME.mdb,
 * each with its -lock file, and DATA/LOCK):
 *   dir_sizes     allocated bytes (st_blocks * 512) and st_size of the
 *                 files, by kind, from one walk of the directory;
 *   lmdb_sum      LMDB's own view: each file opened read-only once the store
 *                 is closed, its pages summed by named database (and the
 *                 free list).  This peeks at storage's private database
 *                 names (dirsize_part_dbs): a file without one of them counts
 *                 as failed, so a renaming shows as a note, not wrong figures.
 *
 * Header-only (static functions), like gen.h, so that each bench_*.c stays
 * one translation unit. */
#ifndef FLAMEDB_BENCH_DIRSIZE_H
#define FLAMEDB_BENCH_DIRSIZE_H

#include <dirent.h>
#include <ftw.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static inline int dirsize_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* ---- the files ----------------------------------------------------------- */

/* Allocated bytes (st_blocks * 512) of the data directory's files, by
 * kind. */
typedef struct {
    uint64_t catalog, parts, locks, other;   /* allocated */
    uint64_t catalog_size, parts_size, locks_size; /* st_size */
    uint32_t n_parts, n_locks, n_other;
} dir_sizes;

static dir_sizes *dirsize_walk_sizes;
static size_t dirsize_walk_root_len;

static inline int dirsize_walk_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F) return 0;
    dir_sizes *d = dirsize_walk_sizes;
    const char *rel = path + dirsize_walk_root_len;
    while (*rel == '/') rel++;
    uint64_t alloc = (uint64_t)sb->st_blocks * 512;
    if (!strcmp(rel, "catalog.mdb")) {
        d->catalog += alloc;
        d->catalog_size += (uint64_t)sb->st_size;
    } else if (!strncmp(rel, "parts/", 6) && dirsize_ends_with(rel, ".mdb")) {
        d->parts += alloc;
        d->parts_size += (uint64_t)sb->st_size;
        d->n_parts++;
    } else if (dirsize_ends_with(rel, "-lock")) {
        d->locks += alloc;
        d->locks_size += (uint64_t)sb->st_size;
        d->n_locks++;
    } else {
        d->other += alloc;
        d->n_other++;
    }
    return 0;
}

static inline void measure_dir(const char *dir, dir_sizes *d)
{
    memset(d, 0, sizeof *d);
    dirsize_walk_sizes = d;
    dirsize_walk_root_len = strlen(dir);
    nftw(dir, dirsize_walk_entry, 16, FTW_PHYS);
    dirsize_walk_sizes = NULL;
}

/* Every file of the directory, allocated. */
static inline uint64_t dir_sizes_all(const dir_sizes *d) { return d->catalog + d->parts + d->locks + d->other; }

/* What the data takes: catalog.mdb and the partition files present. */
static inline uint64_t dir_sizes_live(const dir_sizes *d) { return d->catalog + d->parts; }

/* ---- LMDB's view of the files -------------------------------------------- */

#define DIRSIZE_MAX_DBS 7

/* Pages of some LMDB files, summed; names[0]'s values are also summed when
 * asked for. */
typedef struct {
    int files, failed;
    unsigned psize;
    uint64_t used_pages, free_pages;
    uint64_t db_pages[DIRSIZE_MAX_DBS], db_entries[DIRSIZE_MAX_DBS];
    uint64_t values, value_bytes;
} lmdb_sum;

/* A partition file's databases.  "pending" (rollup buckets not built yet)
 * came with storage v2 step 2 and "segments" (closed buckets' profiles
 * packed, segment.c) later: either may be absent. */
static const char *const dirsize_part_dbs[DIRSIZE_MAX_DBS] = { "blocks", "rollups", "strings", "nodes", "meta",
                                                               "pending", "segments" };
#define DIRSIZE_OPTIONAL_DB(name) (!strcmp((name), "pending") || !strcmp((name), "segments"))
static const char *const dirsize_catalog_dbs[3] = { "series", "strings", "meta" };

static inline uint64_t dirsize_stat_pages(const MDB_stat *ms)
{
    return (uint64_t)ms->ms_branch_pages + ms->ms_leaf_pages + ms->ms_overflow_pages;
}

/* Opens one closed LMDB file read-only and adds its pages to s (and, when
 * values_too is set, the count and bytes of names[0]'s values). */
static inline int inspect_file(const char *path, const char *const *names, int n, int values_too, lmdb_sum *s)
{
    MDB_env *env;
    MDB_txn *txn;
    int ok = 0;
    if (mdb_env_create(&env)) return -1;
    mdb_env_set_maxdbs(env, 8);
    if (mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY, 0644) || mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) {
        mdb_env_close(env);
        return -1;
    }
    MDB_envinfo info;
    MDB_stat ms;
    mdb_env_info(env, &info);
    mdb_env_stat(env, &ms);
    uint64_t pages[DIRSIZE_MAX_DBS] = { 0 }, entries[DIRSIZE_MAX_DBS] = { 0 }, free_pages = 0, values = 0,
             value_bytes = 0;
    /* the free list: values are arrays of page numbers, the first the count */
    MDB_cursor *c;
    MDB_val k, v;
    if (!mdb_cursor_open(txn, 0, &c)) {
        int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
        while (rc == 0) {
            if (v.mv_size >= sizeof(size_t)) {
                size_t cnt;
                memcpy(&cnt, v.mv_data, sizeof cnt);
                free_pages += cnt;
            }
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
        mdb_cursor_close(c);
    }
    for (int i = 0; i < n; i++) {
        MDB_dbi dbi;
        int orc = mdb_dbi_open(txn, names[i], 0, &dbi);
        if (orc == MDB_NOTFOUND && DIRSIZE_OPTIONAL_DB(names[i])) continue;
        if (orc || mdb_stat(txn, dbi, &ms)) goto out;
        pages[i] = dirsize_stat_pages(&ms);
        entries[i] = ms.ms_entries;
        if ((i == 0 || !strcmp(names[i], "segments")) && values_too && !mdb_cursor_open(txn, dbi, &c)) {
            int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
            while (rc == 0) {
                value_bytes += v.mv_size;
                values++;
                rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
            }
            mdb_cursor_close(c);
        }
    }
    ok = 1;
    s->psize = ms.ms_psize;
    s->files++;
    s->used_pages += (uint64_t)info.me_last_pgno + 1;
    s->free_pages += free_pages;
    for (int i = 0; i < n; i++) {
        s->db_pages[i] += pages[i];
        s->db_entries[i] += entries[i];
    }
    s->values += values;
    s->value_bytes += value_bytes;
out:
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return ok ? 0 : -1;
}

/* Every DIR/parts/NAME.mdb through inspect_file with dirsize_part_dbs; a file
 * that would not open, or a missing parts/, counts in s->failed. */
static inline void inspect_parts(const char *dir, int values_too, lmdb_sum *s)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/parts", dir);
    DIR *dd = opendir(path);
    struct dirent *e;
    while (dd && (e = readdir(dd))) {
        if (e->d_name[0] == '.' || !dirsize_ends_with(e->d_name, ".mdb")) continue;
        snprintf(path, sizeof path, "%s/parts/%s", dir, e->d_name);
        if (inspect_file(path, dirsize_part_dbs, DIRSIZE_MAX_DBS, values_too, s)) s->failed++;
    }
    if (dd) closedir(dd);
    else s->failed++;
}

#endif
