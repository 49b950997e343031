/* part.c — time partitions as LMDB files: naming, lazy opening,
 * references and dropping (see part.h).
 *
 * Why one file per partition: LMDB never gives pages back to the file
 * system, so retention inside one file only makes room for new data.  A
 * partition that expires is unlinked whole, and its dictionaries with it:
 * the data directory and the memory follow what is kept.  A reader that
 * still uses a dropped partition keeps its environment (the mapping of an
 * unlinked file stays valid on Linux) until its reference goes. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "part.h"
#include "pdict.h"

struct part {
    int64_t start_ms, len_ms;
    int shard;
    char *path;
    pthread_mutex_t open_lock;
    _Atomic int opened;
    MDB_env *env;
    env_map map; /* where env's map lies, found once it opened */
    MDB_dbi dbi[PART_NDBS];
    _Atomic int refs;
    uint64_t token;
    pdict_w *writer;
};

static _Atomic uint64_t next_token = 1;

part *part_new(const char *dir, int64_t start_ms, int64_t len_ms, int shard)
{
    part *p = calloc(1, sizeof *p);
    char name[64];
    part_file_name(name, sizeof name, start_ms, shard);
    size_t n = strlen(dir) + strlen(name) + 2;
    if (!p || !(p->path = malloc(n))) {
        free(p);
        return NULL;
    }
    snprintf(p->path, n, "%s/%s", dir, name);
    p->start_ms = start_ms;
    p->len_ms = len_ms;
    p->shard = shard;
    pthread_mutex_init(&p->open_lock, NULL);
    atomic_init(&p->refs, 1);
    p->token = atomic_fetch_add(&next_token, 1);
    return p;
}

static const char *const db_names[PART_NDBS] = { "meta", "strings", "nodes", "blocks", "rollups", "pending",
                                                       "segments" };

store_status part_open(part *p, uint64_t map_size, int fixed_map, int create, char *err, size_t errlen)
{
    if (atomic_load_explicit(&p->opened, memory_order_acquire)) return STORE_OK;
    pthread_mutex_lock(&p->open_lock);
    store_status ss = STORE_OK;
    if (!atomic_load_explicit(&p->opened, memory_order_relaxed)) {
        MDB_env *env;
        ss = env_open(&env, p->path, map_size, fixed_map, create, NULL, err, errlen);
        MDB_txn *txn = NULL;
        int rc = 0;
        if (!ss && !(rc = mdb_txn_begin(env, NULL, 0, &txn))) {
            for (int i = 0; i < PART_NDBS && !rc; i++) {
                unsigned flags = MDB_CREATE | (i == PART_STRINGS || i == PART_NODES ? MDB_INTEGERKEY : 0);
                rc = mdb_dbi_open(txn, db_names[i], flags, &p->dbi[i]);
            }
            if (!rc) rc = pdict_init_meta(txn, p->dbi[PART_META], p->start_ms, p->len_ms);
            if (!rc) rc = mdb_txn_commit(txn);
            else mdb_txn_abort(txn);
        }
        if (!ss && rc) {
            env_set_err(err, errlen, "%s: %s", p->path, mdb_strerror(rc));
            ss = env_status(rc);
            mdb_env_close(env);
        } else if (!ss) {
            p->env = env;
            env_map_find(env, &p->map);
            atomic_store_explicit(&p->opened, 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&p->open_lock);
    return ss;
}

int part_is_open(const part *p) { return atomic_load_explicit(&p->opened, memory_order_acquire); }

void part_ref(part *p) { atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed); }

void part_unref(part *p)
{
    if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) return;
    if (p->writer) pdict_w_free(p->writer);
    if (p->env) mdb_env_close(p->env);
    pthread_mutex_destroy(&p->open_lock);
    free(p->path);
    free(p);
}

void part_drop(part *p) { env_remove(p->path); }

uint64_t part_token(const part *p) { return p->token; }
int64_t part_start(const part *p) { return p->start_ms; }
int64_t part_end(const part *p) { return p->start_ms + p->len_ms; }
int part_shard(const part *p) { return p->shard; }
const char *part_path(const part *p) { return p->path; }
MDB_env *part_env(const part *p) { return p->env; }

void part_release_map(const part *p)
{
    if (part_is_open(p)) env_map_release(&p->map);
}
MDB_dbi part_dbi(const part *p, int which) { return p->dbi[which]; }
pdict_w *part_writer(const part *p) { return p->writer; }
void part_set_writer(part *p, pdict_w *w) { p->writer = w; }

void part_file_name(char *buf, size_t cap, int64_t start_ms, int shard)
{
    struct tm tm;
    time_t t = (time_t)(start_ms / 1000);
    char sfx[16] = "";
    if (shard) snprintf(sfx, sizeof sfx, ".%d", shard);
    if (start_ms % 60000 == 0 && start_ms >= 0 && gmtime_r(&t, &tm) && tm.tm_year + 1900 <= 9999)
        snprintf(buf, cap, "%04d%02d%02dT%02d%02dZ%s.mdb", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, sfx);
    else
        snprintf(buf, cap, "t%lld%s.mdb", (long long)start_ms, sfx);
}

int part_parse_name(const char *name, int64_t *start_ms, int *shard)
{
    size_t n = strlen(name);
    if (n < 5 || n > 40 || strcmp(name + n - 4, ".mdb")) return -1;
    /* the shard: ".<1..PART_MAX_SHARDS-1>" before ".mdb", none for shard 0 */
    char base[48];
    memcpy(base, name, n - 4);
    base[n - 4] = '\0';
    *shard = 0;
    char *dot = strrchr(base, '.');
    if (dot) {
        char *end;
        errno = 0;
        long v = strtol(dot + 1, &end, 10);
        if (errno || *end || end == dot + 1 || dot[1] == '0' || v < 1 || v >= PART_MAX_SHARDS) return -1;
        *shard = (int)v;
        *dot = '\0';
    }
    size_t bn = strlen(base);
    if (base[0] == 't') {
        char *end;
        errno = 0;
        long long v = strtoll(base + 1, &end, 10);
        if (errno || *end || end == base + 1) return -1;
        *start_ms = v;
    } else {
        struct tm tm = { 0 };
        int Y, M, D, h, m;
        char z;
        if (bn != 14 || sscanf(base, "%4d%2d%2dT%2d%2d%c", &Y, &M, &D, &h, &m, &z) != 6 || z != 'Z') return -1;
        tm.tm_year = Y - 1900;
        tm.tm_mon = M - 1;
        tm.tm_mday = D;
        tm.tm_hour = h;
        tm.tm_min = m;
        *start_ms = (int64_t)timegm(&tm) * 1000;
    }
    char back[64];
    part_file_name(back, sizeof back, *start_ms, *shard);
    return strcmp(back, name) ? -1 : 0;
}
