/* migrate.c — moving a flamedb-4 data directory (one DATA/data.mdb with a
 * global dictionary) into this format.
 *
 * Every stored profile is read back with its labels, window, rate, unit
 * and stacks (spelled from the old call tree) and written through the
 * ordinary write path, so the new partitions, dictionaries and rollups are
 * exactly what ingest would have made.  Old rollups are not read: they are
 * rebuilt.  Writes are queued asynchronously, a bounded number at a time,
 * so they share group commits.
 *
 * The old file is moved to DATA/flamedb-4-backup/data.mdb only once every
 * profile is durable: that rename is the migration's commit point.  A
 * migration cut short (kill -9, a full disk) leaves data.mdb in place, and
 * the next open throws away the partial new files and starts again
 * (store.c).  The backup can be deleted once the new store is trusted. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block.h"
#include "env.h"
#include "store_internal.h"
#include "../common/varint.h"

#define V4_FORMAT "flamedb-4"
#define IN_FLIGHT 64

int store_has_v4(const char *dir)
{
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    return stat(path, &sb) == 0;
}

typedef struct {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi meta, strings, nodes, series, blocks;
    char **str;             /* NUL-terminated copies */
    uint32_t n_str;
    uint32_t *parent, *func;
    uint32_t n_nodes;
} v4;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int in_flight;
    store_status failed;
    char err[256];
} tracker;

typedef struct {
    tracker *t;
    store_profile p;
    store_label labels[64];
    store_stack *stacks;
    char *text;
} job;

static void job_done(void *ctx, store_status ss, uint32_t series, const char *err)
{
    (void)series;
    job *j = ctx;
    tracker *t = j->t;
    pthread_mutex_lock(&t->lock);
    if (ss && !t->failed) {
        t->failed = ss;
        snprintf(t->err, sizeof t->err, "%s", err);
    }
    t->in_flight--;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    free(j->stacks);
    free(j->text);
    free(j);
}

static int load_chunks(v4 *o, MDB_dbi dbi, int nodes)
{
    MDB_cursor *c;
    MDB_val k, v;
    if (mdb_cursor_open(o->txn, dbi, &c)) return -1;
    uint32_t next = 1, cap = 0;
    int rc;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        uint32_t first;
        if (k.mv_size != 4) break;
        memcpy(&first, k.mv_data, 4);
        if (first != next) break;
        const unsigned char *p = v.mv_data, *end = p + v.mv_size;
        while (p < end) {
            if (next >= cap) {
                cap = cap ? cap * 2 : 4096;
                if (nodes) {
                    uint32_t *np = realloc(o->parent, cap * sizeof *np), *nf = np ? realloc(o->func, cap * sizeof *nf) : NULL;
                    if (np) o->parent = np;
                    if (!np || !nf) goto fail;
                    o->func = nf;
                } else {
                    char **ns = realloc(o->str, cap * sizeof *ns);
                    if (!ns) goto fail;
                    o->str = ns;
                }
            }
            uint64_t a, b;
            if (varint_get(&p, end, &a)) goto fail;
            if (nodes) {
                if (varint_get(&p, end, &b) || a == 0 || a > next || b == 0 || b >= o->n_str) goto fail;
                o->parent[next] = next - (uint32_t)a;
                o->func[next] = (uint32_t)b;
            } else {
                if ((uint64_t)(end - p) < a || !(o->str[next] = malloc(a + 1))) goto fail;
                memcpy(o->str[next], p, a);
                o->str[next][a] = '\0';
                p += a;
                o->n_str = next + 1;
            }
            next++;
        }
    }
    mdb_cursor_close(c);
    if (nodes) o->n_nodes = next;
    return rc == MDB_NOTFOUND ? 0 : -1;
fail:
    mdb_cursor_close(c);
    return -1;
}

static void v4_close(v4 *o)
{
    for (uint32_t i = 1; i < o->n_str; i++) free(o->str[i]);
    free(o->str);
    free(o->parent);
    free(o->func);
    if (o->txn) mdb_txn_abort(o->txn);
    if (o->env) mdb_env_close(o->env);
}

static store_status v4_open(v4 *o, const char *dir, char *err, size_t errlen)
{
    int rc = mdb_env_create(&o->env);
    if (!rc) rc = mdb_env_set_maxdbs(o->env, 8);
    if (!rc) rc = mdb_env_set_mapsize(o->env, 0);
    if (!rc) rc = mdb_env_open(o->env, dir, MDB_RDONLY | MDB_NOTLS, 0644);
    if (!rc) rc = mdb_txn_begin(o->env, NULL, MDB_RDONLY, &o->txn);
    if (!rc && ((rc = mdb_dbi_open(o->txn, "meta", 0, &o->meta)) || (rc = mdb_dbi_open(o->txn, "strings", MDB_INTEGERKEY, &o->strings)) ||
                (rc = mdb_dbi_open(o->txn, "nodes", MDB_INTEGERKEY, &o->nodes)) ||
                (rc = mdb_dbi_open(o->txn, "series", MDB_INTEGERKEY, &o->series)) ||
                (rc = mdb_dbi_open(o->txn, "blocks", 0, &o->blocks)))) {
    }
    if (rc) {
        env_set_err(err, errlen, "cannot read %s/data.mdb to migrate it: %s", dir, mdb_strerror(rc));
        return STORE_EIO;
    }
    MDB_val k = { 6, "format" }, v;
    if (mdb_get(o->txn, o->meta, &k, &v) || v.mv_size != strlen(V4_FORMAT) || memcmp(v.mv_data, V4_FORMAT, v.mv_size)) {
        env_set_err(err, errlen, "%s/data.mdb is not of format %s: this flamedb cannot migrate it", dir, V4_FORMAT);
        return STORE_EINVAL;
    }
    if (load_chunks(o, o->strings, 0) || load_chunks(o, o->nodes, 1)) {
        env_set_err(err, errlen, "%s/data.mdb: its dictionaries are damaged (or out of memory)", dir);
        return STORE_EIO;
    }
    return STORE_OK;
}

/* Builds the job for one old block: labels, stacks spelled root first. */
static job *make_job(v4 *o, uint32_t sid, int64_t from, const MDB_val *val, int *damaged)
{
    block_header h;
    const void *payload;
    size_t plen;
    int compressed;
    *damaged = 1;
    if (block_parse_header(val->mv_data, val->mv_size, &h, &payload, &plen, &compressed) || h.unit >= o->n_str ||
        !h.unit)
        return NULL;
    MDB_val sk = { 4, &sid }, sv;
    if (mdb_get(o->txn, o->series, &sk, &sv) || sv.mv_size % 8 || sv.mv_size == 0 || sv.mv_size > 64 * 8) return NULL;
    job *j = calloc(1, sizeof *j);
    uint32_t *nodes = malloc(((size_t)h.n_pairs + 1) * sizeof *nodes);
    uint64_t *counts = malloc(((size_t)h.n_pairs + 1) * sizeof *counts);
    char *scratch = malloc((size_t)h.raw_len + 1);
    if (!j || !nodes || !counts || !scratch) goto fail;
    *damaged = 0;
    if (block_decode(&h, payload, plen, compressed, NULL, scratch, nodes, counts)) {
        *damaged = 1;
        goto fail;
    }
    int n_labels = (int)(sv.mv_size / 8);
    for (int i = 0; i < n_labels; i++) {
        uint32_t pr[2];
        memcpy(pr, (const char *)sv.mv_data + 8 * i, 8);
        if (!pr[0] || !pr[1] || pr[0] >= o->n_str || pr[1] >= o->n_str) {
            *damaged = 1;
            goto fail;
        }
        j->labels[i].name = o->str[pr[0]];
        j->labels[i].value = o->str[pr[1]];
    }
    /* total text: the frames of every stack */
    size_t total = 0;
    for (uint32_t i = 0; i < h.n_pairs; i++) {
        if (!nodes[i] || nodes[i] >= o->n_nodes) {
            *damaged = 1;
            goto fail;
        }
        for (uint32_t x = nodes[i]; x; x = o->parent[x]) total += strlen(o->str[o->func[x]]) + 1;
    }
    j->text = malloc(total + 1);
    j->stacks = malloc(((size_t)h.n_pairs + 1) * sizeof *j->stacks);
    if (!j->text || !j->stacks) goto fail;
    char *w = j->text;
    for (uint32_t i = 0; i < h.n_pairs; i++) {
        uint32_t chain[1100], d = 0;
        for (uint32_t x = nodes[i]; x && d < 1100; x = o->parent[x]) chain[d++] = x;
        char *start = w;
        while (d--) {
            const char *f = o->str[o->func[chain[d]]];
            size_t fl = strlen(f);
            memcpy(w, f, fl);
            w += fl;
            if (d) *w++ = ';';
        }
        j->stacks[i] = (store_stack){ start, (uint32_t)(w - start), counts[i] };
    }
    j->p = (store_profile){
        .labels = j->labels, .n_labels = n_labels, .from_ms = from, .until_ms = from + h.duration_ms, .rate = h.rate,
        .unit = o->str[h.unit], .stacks = j->stacks, .n_stacks = h.n_pairs,
        .samples_kind = block_samples_known(&h, o->str[h.unit]) ? STORE_SAMPLES_COUNTS : STORE_SAMPLES_UNKNOWN,
    };
    free(nodes);
    free(counts);
    free(scratch);
    return j;
fail:
    if (j) {
        free(j->text);
        free(j->stacks);
    }
    free(j);
    free(nodes);
    free(counts);
    free(scratch);
    return NULL;
}

static void wait_below(tracker *t, int n)
{
    pthread_mutex_lock(&t->lock);
    while (t->in_flight > n) pthread_cond_wait(&t->cond, &t->lock);
    pthread_mutex_unlock(&t->lock);
}

store_status store_migrate_v4(store *st, uint64_t *profiles, char *err, size_t errlen)
{
    v4 o = { 0 };
    store_status ss = v4_open(&o, st->dir, err, errlen);
    tracker t = { .in_flight = 0 };
    pthread_mutex_init(&t.lock, NULL);
    pthread_cond_init(&t.cond, NULL);
    MDB_cursor *c = NULL;
    if (!ss && mdb_cursor_open(o.txn, o.blocks, &c)) ss = STORE_EIO;
    MDB_val k, v;
    int rc = ss ? MDB_NOTFOUND : mdb_cursor_get(c, &k, &v, MDB_FIRST);
    for (; !ss && rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != BLOCK_KEY_LEN) continue;
        uint32_t sid;
        int64_t from;
        block_key_parse(k.mv_data, &sid, &from, NULL);
        int damaged;
        job *j = make_job(&o, sid, from, &v, &damaged);
        if (!j) {
            ss = damaged ? STORE_EIO : STORE_ENOMEM;
            env_set_err(err, errlen, "%s/data.mdb: %s at series %u, time %lld ms", st->dir,
                        damaged ? "a damaged profile" : "out of memory", sid, (long long)from);
            break;
        }
        j->t = &t;
        wait_below(&t, IN_FLIGHT - 1);
        pthread_mutex_lock(&t.lock);
        t.in_flight++;
        ss = t.failed;
        pthread_mutex_unlock(&t.lock);
        if (!ss) ss = store_write_async(st, &j->p, job_done, j);
        if (ss) {
            pthread_mutex_lock(&t.lock);
            t.in_flight--;
            pthread_mutex_unlock(&t.lock);
            free(j->stacks);
            free(j->text);
            free(j);
            if (!*err) env_set_err(err, errlen, "migrating %s: %s", st->dir, t.err[0] ? t.err : "a write failed");
            break;
        }
        (*profiles)++;
    }
    wait_below(&t, 0);
    if (!ss && t.failed) {
        ss = t.failed;
        env_set_err(err, errlen, "migrating %s: %s", st->dir, t.err);
    }
    if (!ss && rc != MDB_NOTFOUND) {
        ss = STORE_EIO;
        env_set_err(err, errlen, "reading %s/data.mdb: %s", st->dir, mdb_strerror(rc));
    }
    if (c) mdb_cursor_close(c);
    v4_close(&o);
    pthread_mutex_destroy(&t.lock);
    pthread_cond_destroy(&t.cond);
    if (ss) return ss;
    /* Every profile is durable: move the old file aside (the commit point). */
    char from_path[4200], to_dir[4200], to_path[4300], lock_path[4200];
    snprintf(from_path, sizeof from_path, "%s/data.mdb", st->dir);
    snprintf(to_dir, sizeof to_dir, "%s/flamedb-4-backup", st->dir);
    snprintf(to_path, sizeof to_path, "%s/data.mdb", to_dir);
    snprintf(lock_path, sizeof lock_path, "%s/lock.mdb", st->dir);
    if ((mkdir(to_dir, 0755) && errno != EEXIST) || rename(from_path, to_path)) {
        env_set_err(err, errlen, "cannot move %s to %s: %s", from_path, to_path, strerror(errno));
        return STORE_EIO;
    }
    unlink(lock_path);
    int dfd = open(st->dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return STORE_OK;
}
