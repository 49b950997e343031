/* env.c — the LMDB environment layer: see env.h.
 *
 * LMDB commits with fsync by default (no MDB_NOSYNC here), so a committed
 * transaction survives kill -9 and power loss, and the file always opens
 * (copy-on-write B-trees need no recovery step). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env.h"

void env_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

store_status env_status(int rc)
{
    switch (rc) {
    case 0: return STORE_OK;
    case MDB_MAP_FULL: case ENOSPC: case MDB_TXN_FULL: case EDQUOT: return STORE_EFULL;
    case ENOMEM: return STORE_ENOMEM;
    default: return STORE_EIO;
    }
}

store_status env_open(MDB_env **out, const char *path, uint64_t map_size, int fixed, int create,
                      uint64_t *got, char *err, size_t errlen)
{
    *out = NULL;
    struct stat sb;
    if (!create && stat(path, &sb) != 0) {
        env_set_err(err, errlen, "%s: %s", path, strerror(errno));
        return STORE_EIO;
    }
    uint64_t size = map_size;
    MDB_env *env = NULL;
    int rc;
    for (;;) {
        rc = mdb_env_create(&env);
        if (!rc) rc = mdb_env_set_maxdbs(env, 8);
        if (!rc) rc = mdb_env_set_maxreaders(env, 1024);
        if (!rc) rc = mdb_env_set_mapsize(env, (size_t)size);
        if (!rc) rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOTLS, 0644);
        if (!rc || fixed || size <= (UINT64_C(1) << 30) || (rc != EINVAL && rc != ENOMEM)) break;
        mdb_env_close(env);
        env = NULL;
        size /= 4;
    }
    if (rc) {
        if (env) mdb_env_close(env);
        env_set_err(err, errlen, "cannot open %s: %s", path, mdb_strerror(rc));
        return env_status(rc) == STORE_EFULL ? STORE_EFULL : STORE_EIO;
    }
    if (got) *got = size;
    *out = env;
    return STORE_OK;
}

store_status env_open_readonly(MDB_env **out, const char *path, uint64_t *file_bytes, char *err, size_t errlen)
{
    *out = NULL;
    if (file_bytes) *file_bytes = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        env_set_err(err, errlen, "%s: %s", path, strerror(errno));
        return STORE_EIO;
    }
    if (file_bytes) *file_bytes = (uint64_t)sb.st_size;
    MDB_env *env = NULL;
    int rc;
    /* First the map size its writer stored in the file; where the system
     * refuses that much address space, the file's own size (LMDB raises it
     * to the data the file holds). */
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = mdb_env_create(&env);
        if (!rc) rc = mdb_env_set_maxdbs(env, 8);
        if (!rc) rc = mdb_env_set_maxreaders(env, 1024);
        if (!rc) rc = mdb_env_set_mapsize(env, attempt ? (size_t)sb.st_size : 0);
        if (!rc) rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOTLS | MDB_RDONLY, 0644);
        if (!rc || (rc != EINVAL && rc != ENOMEM)) break;
        mdb_env_close(env);
        env = NULL;
    }
    if (rc) {
        if (env) mdb_env_close(env);
        env_set_err(err, errlen, "cannot open %s: %s", path, mdb_strerror(rc));
        return env_status(rc) == STORE_ENOMEM ? STORE_ENOMEM : STORE_EIO;
    }
    *out = env;
    return STORE_OK;
}

/* Why dropping the maps' pages is safe.  Without MDB_WRITEMAP, LMDB maps
 * the file read-only and shared (PROT_READ, MAP_SHARED) and writes with
 * pwrite: our page-table entries for the map only ever point at the page
 * cache's own pages of the file, and no page of the map is ever dirty in
 * this process.  MADV_DONTNEED on such a mapping removes the entries and
 * nothing else (madvise(2): later accesses "repopulate the memory contents
 * from the up-to-date contents of the underlying mapped file"), so a read
 * after it, on any thread, sees the very bytes it would have seen before:
 * pointers into the map (values returned by mdb_get, strings used in
 * place, blocks decoded by the parallel merge) stay valid, and a reader
 * racing with the call takes at most a minor fault.
 *
 * Where the maps are.  LMDB answers a map's address (me_mapaddr) only for
 * MDB_FIXEDMAP, so it is read from /proc/self/maps on each call: a
 * read-only shared mapping ("r--s") of the file's inode from offset 0 whose
 * length is the map size.  Only such mappings are ever advised, so even a
 * mapping taken for another (an inode number equal on another file system)
 * could lose nothing: for any read-only shared file mapping the call only
 * drops entries.  An address kept from the opening instead would be wrong
 * after anything remapped the file (mdb_env_set_mapsize on an open
 * environment moves the map), and advising whatever was mapped there next
 * could zero anonymous memory.  Reading the table costs ~0.3 us a mapping
 * (~100 us for the server's ~350, once a compaction step).
 *
 * The whole map is advised, not only the file's pages: past the end of the
 * file there is nothing to drop, and the kernel skips empty page tables.
 * After it, each page touched again costs a minor fault; with fault-around
 * one fault maps up to 16 pages already in the page cache (a 64 KiB run),
 * so a few hundred scattered touches map a few MiB again. */
void env_release_maps(MDB_env *const *envs, size_t n)
{
    struct want { unsigned long ino, len; } *want = malloc((n ? n : 1) * sizeof *want);
    if (!want) return;
    size_t k = 0;
    unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n; i++) {
        int fd;
        struct stat sb;
        MDB_envinfo info;
        unsigned int flags;
        if (!envs[i] || mdb_env_get_flags(envs[i], &flags) || (flags & MDB_WRITEMAP) ||
            mdb_env_get_fd(envs[i], &fd) || fstat(fd, &sb) || mdb_env_info(envs[i], &info))
            continue;
        want[k].ino = (unsigned long)sb.st_ino;
        want[k].len = ((unsigned long)info.me_mapsize + page - 1) / page * page;
        k++;
    }
    FILE *f = k ? fopen("/proc/self/maps", "re") : NULL;
    if (!f) {
        free(want);
        return;
    }
    char line[512];
    int at_start = 1; /* the buffer holds the start of a line */
    while (fgets(line, sizeof line, f)) {
        int starts = at_start;
        at_start = strchr(line, '\n') != NULL;
        unsigned long lo, hi, off, ino;
        char perms[8];
        if (!starts || sscanf(line, "%lx-%lx %7s %lx %*x:%*x %lu", &lo, &hi, perms, &off, &ino) != 5 || off ||
            strcmp(perms, "r--s"))
            continue;
        for (size_t i = 0; i < k; i++)
            if (ino == want[i].ino && hi - lo == want[i].len) madvise((void *)lo, hi - lo, MADV_DONTNEED);
    }
    fclose(f);
    free(want);
}

void env_remove(const char *path)
{
    char lock[4200];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(path);
    unlink(lock);
}

uint64_t env_file_bytes(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_blocks * 512 : 0;
}
