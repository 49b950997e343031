/* env.c — the LMDB environment layer: see env.h.
 *
 * LMDB commits with fsync by default (no MDB_NOSYNC here), so a committed
 * transaction survives kill -9 and power loss, and the file always opens
 * (copy-on-write B-trees need no recovery step). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
 * Where the map is.  LMDB answers a map's address (me_mapaddr) only for
 * MDB_FIXEDMAP, so it is read from /proc/self/maps once, right after the
 * environment opened: a read-only shared mapping ("r--s") of the file's
 * inode from offset 0 whose length is the map size.  The address is kept
 * for the environment's life (env.h: the map does not move while it is
 * open), so a release costs one madvise, no read of the table (~0.3 us a
 * mapping, 0.1-0.3 ms for the server's ~350).  Cheap, but not after every
 * commit: the next commit faults the same upper B-tree pages in again, and
 * both were 5 % of the server's CPU under bench_fleet; the writer releases
 * once env_mapped_file_bytes has grown by its slack (writer.c).  Two such mappings of one inode (an environment opened twice)
 * are never in one process; where one would be, nothing is found.
 *
 * Why so often: how much one touch maps.  Since
 * ext4 keeps large folios in the page cache (kernel 6.16+), a buffered
 * write of N contiguous pages leaves a folio of up to N pages, and a fault
 * on any of its pages maps the whole folio (64 KiB at least, the
 * fault-around window): LMDB writes a commit's runs of contiguous dirty
 * pages with one pwritev each, so a B-tree descent in a later commit maps
 * 64-256 KiB a page it reads.  bench_fleet's writer, releasing every 2 s,
 * held 7-24 MiB of the partition mapped (a 1 MiB-written test file: every
 * 4 KiB touch mapped 1 MiB; 64 KiB writes: 64 KiB).
 *
 * The whole map is advised, not only the file's pages: past the end of the
 * file there is nothing to drop, and the kernel skips empty page tables. */
void env_map_find(MDB_env *env, env_map *m)
{
    m->addr = NULL;
    m->len = 0;
    int fd;
    struct stat sb;
    MDB_envinfo info;
    unsigned int flags;
    if (!env || mdb_env_get_flags(env, &flags) || (flags & MDB_WRITEMAP) || mdb_env_get_fd(env, &fd) ||
        fstat(fd, &sb) || mdb_env_info(env, &info))
        return;
    unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
    unsigned long want_ino = (unsigned long)sb.st_ino;
    unsigned long want_len = ((unsigned long)info.me_mapsize + page - 1) / page * page;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f) return;
    char line[512];
    int at_start = 1, found = 0; /* the buffer holds the start of a line */
    unsigned long at = 0;
    while (fgets(line, sizeof line, f)) {
        int starts = at_start;
        at_start = strchr(line, '\n') != NULL;
        unsigned long lo, hi, off, ino;
        char perms[8];
        if (!starts || sscanf(line, "%lx-%lx %7s %lx %*x:%*x %lu", &lo, &hi, perms, &off, &ino) != 5 || off ||
            strcmp(perms, "r--s") || ino != want_ino || hi - lo != want_len)
            continue;
        found++;
        at = lo;
    }
    fclose(f);
    if (found != 1) return;
    m->addr = (void *)at;
    m->len = want_len;
}

void env_map_release(const env_map *m)
{
    if (m->addr) madvise(m->addr, m->len, MADV_DONTNEED);
}

static int statm_fd = -1;
static pthread_once_t statm_once = PTHREAD_ONCE_INIT;

static void statm_open(void) { statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC); }

/* Read again from offset 0 each time (/proc regenerates the text), the
 * file opened once: a pread, not an open, a read and a close. */
uint64_t env_mapped_file_bytes(void)
{
    pthread_once(&statm_once, statm_open);
    if (statm_fd < 0) return 0;
    char buf[160];
    ssize_t n = pread(statm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    unsigned long size, resident, shared;
    if (sscanf(buf, "%lu %lu %lu", &size, &resident, &shared) != 3) return 0;
    return (uint64_t)shared * (uint64_t)sysconf(_SC_PAGESIZE);
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
