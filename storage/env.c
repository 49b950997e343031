/* env.c — the LMDB environment layer: see env.h.
 *
 * LMDB commits with fsync by default (no MDB_NOSYNC here), so a committed
 * transaction survives kill -9 and power loss, and the file always opens
 * (copy-on-write B-trees need no recovery step). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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
