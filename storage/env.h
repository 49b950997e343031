/* env.h — opening one LMDB environment: a single file (MDB_NOSUBDIR) with
 * its "-lock" file beside it, named databases, no thread-bound readers
 * (MDB_NOTLS: a reader may be ended by another thread).  Both the catalog
 * and every time partition are one such file. */
#ifndef FLAMEDB_ENV_H
#define FLAMEDB_ENV_H

#include <lmdb.h>
#include <stdint.h>

#include "store.h"

/* Opens (creating when create is set) the environment in file path with
 * room for map_size bytes.  Without an explicit size (fixed = 0) it halves
 * the map while the system refuses the address space (ulimit -v,
 * valgrind), down to 1 GiB; *got receives the size obtained. */
store_status env_open(MDB_env **out, const char *path, uint64_t map_size, int fixed, int create,
                      uint64_t *got, char *err, size_t errlen);

/* Opens the existing environment in file path for reading only
 * (MDB_RDONLY): nothing is written to the file, and it may be open in a
 * writing process at the same time.  Like any LMDB reader it registers its
 * read transactions in the "-lock" file beside it (creating that file when
 * missing), so that a writer keeps the pages they read; on a read-only file
 * system it reads without locks.  The map is the size the file's writer
 * chose; *file_bytes receives the file's size (0 when unknown). */
store_status env_open_readonly(MDB_env **out, const char *path, uint64_t *file_bytes, char *err, size_t errlen);

/* Where an open environment's memory map lies, so that this process's
 * page-table entries for it can be dropped: the pages of the file it has
 * touched then stop counting in its RSS (RssFile); they stay in the page
 * cache, and the next touch maps them again from there (a minor fault).
 * env_map_find reads /proc/self/maps once (a map that is written through,
 * MDB_WRITEMAP, never used here, is not found); env_map_release may then
 * be called at any time, from any thread, with readers running (env.c
 * says why that is safe), until the environment is closed.  It relies on
 * the map never moving while the environment is open: LMDB maps the file
 * in mdb_env_open and moves the map only in mdb_env_set_mapsize, which
 * this process calls on an environment before opening it, never after
 * (env_open, env_open_readonly). */
typedef struct env_map {
    void *addr; /* NULL: not found, release does nothing */
    size_t len;
} env_map;
void env_map_find(MDB_env *env, env_map *m);
void env_map_release(const env_map *m);

/* The bytes of files this process has mapped and resident (RssFile, with
 * shared memory: /proc/self/statm's third field), ~1.5 us a call; 0 when
 * it cannot be read.  What the writer weighs before releasing maps. */
uint64_t env_mapped_file_bytes(void);

/* Removes an environment's file and its lock file. */
void env_remove(const char *path);

/* Bytes the environment's file takes on disk (allocated blocks). */
uint64_t env_file_bytes(const char *path);

/* LMDB and errno codes as store codes. */
store_status env_status(int rc);

/* printf into err (when err is given). */
void env_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
