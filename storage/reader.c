/* reader.c — read snapshots across partitions, and one call tree for them.
 *
 * store_reader_begin copies the partition list (a reference each) and the
 * catalog's published counts; a partition's LMDB read transaction is begun
 * the first time a scan reaches it, and its dictionaries are read straight
 * from the memory map (pdict_r).  Scans visit the partitions of a range in
 * time order, so answers keep their order (the shards of one partition,
 * writer.c, like partitions of the same time, merged in time order when a
 * series lies in several).  Inside a partition a series'
 * profiles are raw blocks and profiles packed into segments (segment.c),
 * walked together in time order (seg_iter); a packed profile is handed out
 * like a block, its bytes in the map, and decodes alone on any thread.
 *
 * One call tree across partitions.  Each partition numbers its own nodes
 * and strings, so a reader keeps its own tree: node = (reader parent,
 * reader function name), interned as the merge translates the nodes it
 * touched (store_part_node: walk up to the first translated ancestor, then
 * intern down), with per-partition arrays remembering each translation.
 * Parents are interned before their children, so reader ids keep the
 * "parent id < child id" order the merge's backwards pass relies on.  The
 * cost follows the nodes a query touches, not the size of the partitions.
 * Function names point into the maps and live as long as the reader.
 *
 * Sample labels (store.h: pseudo-frames STORE_SAMPLE_MARK key=value at the
 * root of a stack) are skipped as the path is interned: a marker node's
 * translation is its parent's (or, for the key kept by
 * store_reader_sample_root, a reader node "key=value"), remembered with
 * Q_MARK so walks know to go on through it: the first real node of a path
 * is where a sample filter sees the whole label set, decides once, and
 * every node below inherits the decision (STORE_NODE_DROPPED or kept). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "block.h"
#include "env.h"
#include "frame.h"
#include "hash.h"
#include "idmap.h"
#include "rmem.h"
#include "rollup.h"
#include "segment.h"
#include "store_internal.h"

#define NAME_SEED UINT64_C(0x3c6ef372fe94f82b)
#define Q_MARK UINT32_C(0x80000000)     /* node_q of a sample-label node: its translation | Q_MARK */
#define MAX_READER_NODES (Q_MARK - 1)   /* reader node ids stay below Q_MARK */
#define MAX_SAMPLE_LABELS 64            /* labels a filter sees; more are not looked at */

struct store_part {
    part *p;                /* NULL: a remote reader's loaded partition (m) */
    store_rmem *m;
    int state;              /* 0 not begun, 1 open, -1 unreadable */
    MDB_txn *txn;
    MDB_cursor *cur, *rcur, *scur; /* blocks, rollups, segments */
    pdict_r *d;
    uint32_t *node_q;       /* partition node -> reader node (0: not yet; Q_MARK, STORE_NODE_DROPPED) */
    uint32_t *str_q;        /* partition string -> reader string */
    uint32_t n_node_q, n_str_q; /* their lengths (a remote partition grows as it loads) */
};

struct store_reader {
    store *st;              /* NULL: a remote reader (rcat, src) */
    catalog_snap cat;       /* the catalog as it was at begin, pinned */
    store_rcat *rcat;       /* a remote reader's catalog, */
    store_rsource src;      /* where it loads from, */
    uint32_t *want;         /* the series prefetched (sorted, unique), */
    size_t n_want;
    rmem_range *ranges;     /* the ranges they were prefetched for, */
    size_t n_ranges;
    int64_t merge_from, merge_until; /* the last merge announced (its series are merged), */
    char *rerr;             /* and why a load failed */
    store_part *parts;
    size_t n_parts;
    store_part **sel;       /* store_reader_parts' answer */
    int use_rollups;
    int64_t deadline_ms;    /* CLOCK_MONOTONIC; 0 none */
    uint64_t max_pairs;     /* 0 none */
    _Atomic uint64_t pairs; /* handed out by scans */
    _Atomic int stop;       /* a store_stop: why the work should end */
    int (*gone)(void *);    /* store_reader_set_cancel */
    void *gone_ctx;
    _Atomic int64_t next_gone_check;
    int64_t rollup_from[ROLLUP_LEVELS]; /* first bucket retention has not touched */
    /* the reader's call tree and names */
    uint32_t *tparent, *tfunc;
    uint32_t n_nodes, cap_nodes;
    const store_part *only;   /* the one partition folded so far: maps not kept */
    int maps_stale;           /* node_map and name_map lack entries */
    int lines;                /* names are whole frame texts, with their locations */
    int names_merge;          /* located frames were cut to their names: names of one
                                 partition are no longer unique, the maps are always kept */
    arena cut_names;          /* those names, NUL-terminated */
    store_sample_filter sfilter;  /* store_reader_sample_filter */
    void *sfilter_ctx;
    char *sfilter_key;        /* what the translations made so far were decided by */
    char *sroot;              /* store_reader_sample_root's key */
    size_t sroot_len;
    int broken;               /* maps could not be rebuilt: every translation fails */
    idmap node_map;
    const char **name;
    uint32_t *name_len;
    uint32_t n_names, cap_names;
    idmap name_map;
    /* decoding */
    seg_dec dec;
    uint32_t *nodes;
    uint64_t *counts;
    size_t pairs_cap;
};

/* A reader with room for n partitions, its tree and names empty. */
static store_reader *reader_new(size_t n)
{
    store_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->cap_nodes = r->cap_names = 1024;
    r->tparent = malloc(r->cap_nodes * sizeof *r->tparent);
    r->tfunc = malloc(r->cap_nodes * sizeof *r->tfunc);
    r->name = malloc(r->cap_names * sizeof *r->name);
    r->name_len = malloc(r->cap_names * sizeof *r->name_len);
    r->parts = calloc(n + 1, sizeof *r->parts);
    r->sel = calloc(n + 1, sizeof *r->sel);
    if (!r->parts || !r->sel || !r->tparent || !r->tfunc || !r->name || !r->name_len ||
        idmap_init(&r->node_map, 1024) || idmap_init(&r->name_map, 1024)) {
        store_reader_end(r);
        return NULL;
    }
    r->tparent[0] = r->tfunc[0] = 0;
    r->n_nodes = 1;
    r->name[0] = "";
    r->name_len[0] = 0;
    r->n_names = 1;
    r->use_rollups = 1;
    return r;
}

store_status store_reader_begin(store *st, store_reader **out)
{
    *out = NULL;
    part **v;
    ssize_t n = store_parts_copy(st, 1, 0, &v);
    if (n < 0) return STORE_ENOMEM;
    store_reader *r = reader_new((size_t)n);
    if (!r) {
        for (ssize_t i = 0; i < n; i++) part_unref(v[i]);
        free(v);
        return STORE_ENOMEM;
    }
    r->st = st;
    r->cat = catalog_snap_begin(st->cat);
    for (ssize_t i = 0; i < n; i++) r->parts[i].p = v[i];
    r->n_parts = (size_t)n;
    free(v);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t cutoff = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - st->opt.retention_ms;
    for (int l = 0; l < ROLLUP_LEVELS; l++)
        r->rollup_from[l] = st->opt.retention_ms > 0 ? -rollup_floor(-cutoff, rollup_size_ms[l]) : INT64_MIN;
    *out = r;
    return STORE_OK;
}

store_status store_reader_begin_remote(store_rcat *cat, const store_rsource *src, store_reader **out)
{
    *out = NULL;
    store_reader *r = reader_new(1);
    store_rmem *m = r ? rmem_new(cat) : NULL;
    if (!m) {
        store_reader_end(r);
        return STORE_ENOMEM;
    }
    store_rcat_ref(cat);
    r->rcat = cat;
    r->src = *src;
    r->parts[0].m = m;
    r->n_parts = 1;
    r->use_rollups = 0;
    *out = r;
    return STORE_OK;
}

static void view_close(store_part *v)
{
    if (v->m) {
        rmem_free(v->m);
        free(v->node_q);
        free(v->str_q);
        return;
    }
    if (v->cur) mdb_cursor_close(v->cur);
    if (v->rcur) mdb_cursor_close(v->rcur);
    if (v->scur) mdb_cursor_close(v->scur);
    if (v->txn) mdb_txn_abort(v->txn);
    pdict_r_free(v->d);
    free(v->node_q);
    free(v->str_q);
    part_unref(v->p);
}

void store_reader_end(store_reader *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_parts; i++) view_close(&r->parts[i]);
    if (r->st) catalog_snap_end(r->st->cat, &r->cat);
    if (r->src.end) r->src.end(r->src.ctx);
    store_rcat_unref(r->rcat);
    free(r->want);
    free(r->ranges);
    free(r->rerr);
    free(r->parts);
    free(r->sel);
    free(r->tparent);
    free(r->tfunc);
    free(r->name);
    free(r->name_len);
    arena_free(&r->cut_names);
    free(r->sfilter_key);
    free(r->sroot);
    idmap_free(&r->node_map);
    idmap_free(&r->name_map);
    seg_dec_free(&r->dec);
    free(r->nodes);
    free(r->counts);
    free(r);
}

/* Begins the partition's snapshot on first use; answers 0 when readable. */
static int view_open(store_reader *r, store_part *v)
{
    if (v->state) return v->state > 0 ? 0 : -1;
    if (v->m) {
        v->state = 1;
        return 0;
    }
    store *st = r->st;
    v->state = -1;
    if (part_open(v->p, st->part_map_size, st->opt.map_size != 0, 0, NULL, 0)) return -1;
    if (mdb_txn_begin(part_env(v->p), NULL, MDB_RDONLY, &v->txn)) return -1;
    if (mdb_cursor_open(v->txn, part_dbi(v->p, PART_BLOCKS), &v->cur) ||
        mdb_cursor_open(v->txn, part_dbi(v->p, PART_ROLLUPS), &v->rcur) ||
        mdb_cursor_open(v->txn, part_dbi(v->p, PART_SEGMENTS), &v->scur) ||
        pdict_r_open(&v->d, v->txn, part_dbi(v->p, PART_META), part_dbi(v->p, PART_STRINGS),
                     part_dbi(v->p, PART_NODES)))
        return -1;
    v->state = 1;
    return 0;
}

/* A partition's dictionaries, on disk or loaded (a remote reader's). */
static uint32_t v_nodes(const store_part *v) { return v->m ? rmem_nodes(v->m) : pdict_r_nodes(v->d); }
static uint32_t v_strings(const store_part *v) { return v->m ? rmem_strings(v->m) : pdict_r_strings(v->d); }

static int v_node(store_part *v, uint32_t id, uint32_t *parent, uint32_t *func)
{
    return v->m ? rmem_node(v->m, id, parent, func) : pdict_r_node(v->d, id, parent, func);
}

static const char *v_string(store_part *v, uint32_t id, uint32_t *len)
{
    return v->m ? rmem_string(v->m, id, len) : pdict_r_string(v->d, id, len);
}

static int overlaps(const store_part *v, int64_t from, int64_t until)
{
    if (v->m) return from < until;
    return part_start(v->p) < until && part_end(v->p) > from;
}

/* ---- a remote reader's loads (remote.h) ---- */

static void remote_fail(store_reader *r, const char *msg)
{
    if (!r->rerr) r->rerr = strdup(msg);
    int none = STORE_STOP_NONE;
    atomic_compare_exchange_strong(&r->stop, &none, STORE_STOP_REMOTE);
}

typedef struct { rmem_range g; uint32_t sid; } gap;

static int gap_cmp(const void *a, const void *b)
{
    const gap *x = a, *y = b;
    if (x->g.from != y->g.from) return x->g.from < y->g.from ? -1 : 1;
    if (x->g.until != y->g.until) return x->g.until < y->g.until ? -1 : 1;
    return (x->sid > y->sid) - (x->sid < y->sid);
}

/* Loads what is missing of [from, until) for the series sids[0..n): one
 * load per distinct missing range, with every series missing it.  0, or -1
 * once the reader stopped. */
static int remote_load(store_reader *r, const uint32_t *sids, size_t n, int64_t from, int64_t until)
{
    store_part *v = &r->parts[0];
    if (atomic_load(&r->stop) == STORE_STOP_REMOTE) return -1;
    if (from >= until || !n) return 0;
    for (;;) {
        gap *gv = NULL;
        size_t ng = 0, cap = 0;
        for (size_t i = 0; i < n; i++) {
            rmem_range g[8];
            size_t k = rmem_missing(v->m, sids[i], from, until, g, 8);
            if (ng + k > cap) {
                cap = cap ? 2 * cap + k : n + k;
                gap *nv = realloc(gv, cap * sizeof *nv);
                if (!nv) {
                    free(gv);
                    remote_fail(r, "out of memory loading profiles");
                    return -1;
                }
                gv = nv;
            }
            for (size_t j = 0; j < k; j++) gv[ng++] = (gap){ g[j], sids[i] };
        }
        if (!ng) {
            free(gv);
            return 0;
        }
        qsort(gv, ng, sizeof *gv, gap_cmp);
        uint32_t *ids = malloc(ng * sizeof *ids);
        int rc = ids ? 0 : -1;
        char err[1024] = "out of memory loading profiles";
        for (size_t a = 0, b; a < ng && !rc; a = b) {
            size_t k = 0;
            for (b = a; b < ng && gv[b].g.from == gv[a].g.from && gv[b].g.until == gv[a].g.until; b++)
                ids[k++] = gv[b].sid;
            err[0] = '\0';
            rc = r->src.load(r->src.ctx, v->m, ids, k, gv[a].g.from, gv[a].g.until, err, sizeof err);
            for (size_t j = 0; j < k && !rc; j++)
                if (rmem_loaded(v->m, ids[j], gv[a].g.from, gv[a].g.until)) {
                    snprintf(err, sizeof err, "out of memory loading profiles");
                    rc = -1;
                }
        }
        free(ids);
        free(gv);
        if (rc) {
            remote_fail(r, err[0] ? err : "loading profiles failed");
            return -1;
        }
    }
}

static int sid_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void store_reader_prefetch(store_reader *r, const uint32_t *sids, size_t n, int64_t from_ms, int64_t until_ms)
{
    if (!r->rcat || !n) return;
    uint32_t *w = realloc(r->want, (r->n_want + n) * sizeof *w);
    if (!w) {
        remote_fail(r, "out of memory loading profiles");
        return;
    }
    memcpy(w + r->n_want, sids, n * sizeof *w);
    size_t all = r->n_want + n;
    qsort(w, all, sizeof *w, sid_cmp);
    size_t u = 0;
    for (size_t i = 0; i < all; i++)
        if (!u || w[u - 1] != w[i]) w[u++] = w[i];
    r->want = w;
    r->n_want = u;
    if (from_ms >= until_ms) return;
    rmem_range *nr = realloc(r->ranges, (r->n_ranges + 1) * sizeof *nr);
    if (!nr) {
        remote_fail(r, "out of memory loading profiles");
        return;
    }
    r->ranges = nr;
    r->ranges[r->n_ranges++] = (rmem_range){ from_ms, until_ms };
    if (!r->src.presence) {
        remote_load(r, sids, n, from_ms, until_ms);
        return;
    }
    /* which have profiles there: what store_series_has_blocks answers */
    store_rmem *m = r->parts[0].m;
    uint32_t *ask = malloc(n * sizeof *ask);
    unsigned char *present = malloc(n);
    size_t k = 0;
    char err[1024] = "out of memory";
    int rc = ask && present ? 0 : -1;
    for (size_t i = 0; i < n && !rc; i++)
        if (rmem_presence(m, sids[i], from_ms, until_ms) < 0) ask[k++] = sids[i];
    if (!rc && k) {
        err[0] = '\0';
        rc = r->src.presence(r->src.ctx, ask, k, from_ms, until_ms, present, err, sizeof err);
        for (size_t i = 0; i < k && !rc; i++)
            if (rmem_set_presence(m, ask[i], from_ms, until_ms, present[i])) rc = -1;
    }
    if (rc) remote_fail(r, err[0] ? err : "finding the series with data failed");
    free(ask);
    free(present);
}

/* Before a scan of sid over [from, until): what is missing of it is
 * loaded, and with it (in one go: the query goes on to them) every wanted
 * series that has profiles there, over the whole range they were
 * prefetched for when it holds this one (a timeline scans its steps one by
 * one).  sid 0: the wanted series alone.  0, or -1 when the reader
 * stopped. */
static int remote_ready(store_reader *r, uint32_t sid, int64_t from, int64_t until)
{
    store_rmem *m = r->parts[0].m;
    rmem_range g;
    if (sid && !rmem_missing(m, sid, from, until, &g, 1)) return 0;
    int in_want = sid && bsearch(&sid, r->want, r->n_want, sizeof *r->want, sid_cmp);
    if (sid && !in_want) return remote_load(r, &sid, 1, from, until);
    const rmem_range *R = NULL;   /* the smallest prefetched range holding [from, until) */
    for (size_t i = 0; i < r->n_ranges; i++)
        if (r->ranges[i].from <= from && r->ranges[i].until >= until &&
            (!R || r->ranges[i].until - r->ranges[i].from < R->until - R->from))
            R = &r->ranges[i];
    rmem_range span = R ? *R : (rmem_range){ from, until };
    uint32_t *ids = malloc((r->n_want ? r->n_want : 1) * sizeof *ids);
    if (!ids) {
        remote_fail(r, "out of memory loading profiles");
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < r->n_want; i++)
        if (r->want[i] == sid || rmem_presence(m, r->want[i], span.from, span.until) != 0) ids[k++] = r->want[i];
    int rc = remote_load(r, ids, k, span.from, span.until);
    free(ids);
    return rc;
}

void store_reader_prefetch_merged(store_reader *r, const uint32_t *sids, size_t n, int64_t from_ms,
                                  int64_t until_ms)
{
    if (!r->rcat || from_ms >= until_ms || atomic_load(&r->stop) == STORE_STOP_REMOTE) return;
    r->merge_from = from_ms;
    r->merge_until = until_ms;
    store_rmem *m = r->parts[0].m;
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        remote_fail(r, "out of memory loading profiles");
        return;
    }
    size_t k = 0, nb;
    rmem_range g;
    for (size_t i = 0; i < n; i++) {
        if (rmem_merged_blocks(m, sids[i], from_ms, until_ms, &nb)) continue;        /* merged already */
        if (!rmem_missing(m, sids[i], from_ms, until_ms, &g, 1)) continue;          /* its raw profiles are in */
        if (rmem_presence(m, sids[i], from_ms, until_ms) == 0) {                     /* nothing there */
            if (rmem_merged_done(m, sids[i], from_ms, until_ms)) goto oom;
            continue;
        }
        ids[k++] = sids[i];
    }
    if (k && (!r->src.merge || until_ms - from_ms < r->src.merge_min_ms)) {
        remote_load(r, ids, k, from_ms, until_ms);
    } else if (k) {
        char err[1024] = "";
        if (r->src.merge(r->src.ctx, m, ids, k, from_ms, until_ms, 0, err, sizeof err)) {
            remote_fail(r, err[0] ? err : "merging in the cluster failed");
        } else {
            for (size_t i = 0; i < k; i++)
                if (rmem_merged_done(m, ids[i], from_ms, until_ms)) goto oom;
        }
    }
    free(ids);
    return;
oom:
    free(ids);
    remote_fail(r, "out of memory loading profiles");
}

void store_reader_prefetch_windows(store_reader *r, const uint32_t *sids, size_t n, int64_t from_ms,
                                   int64_t until_ms, int64_t step_ms)
{
    if (!r->rcat || from_ms >= until_ms || step_ms <= 0 || atomic_load(&r->stop) == STORE_STOP_REMOTE) return;
    if (step_ms >= until_ms - from_ms) return;      /* one window: a merge like any */
    int sum = r->src.merge && step_ms >= r->src.merge_min_ms;
    store_rmem *m = r->parts[0].m;
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        remote_fail(r, "out of memory loading profiles");
        return;
    }
    size_t k = 0;
    rmem_range g;
    for (size_t i = 0; i < n; i++) {
        if (rmem_presence(m, sids[i], from_ms, until_ms) == 0) continue;             /* nothing there */
        if (sum && !rmem_missing(m, sids[i], from_ms, until_ms, &g, 1)) continue;   /* its raw profiles are in */
        ids[k++] = sids[i];
    }
    if (!sum) {
        remote_load(r, ids, k, from_ms, until_ms);
        free(ids);
        return;
    }
    /* series with a window merged already keep their merges as they come */
    size_t kk = 0;
    for (size_t i = 0; i < k; i++) {
        int64_t ws = from_ms;
        for (size_t nb; ws < until_ms; ws += step_ms)
            if (rmem_merged_blocks(m, ids[i], ws, until_ms - ws > step_ms ? ws + step_ms : until_ms, &nb)) break;
        if (ws >= until_ms) ids[kk++] = ids[i];
    }
    k = kk;
    char err[1024] = "";
    if (k && r->src.merge(r->src.ctx, m, ids, k, from_ms, until_ms, step_ms, err, sizeof err)) {
        remote_fail(r, err[0] ? err : "merging in the cluster failed");
    } else {
        for (size_t i = 0; i < k; i++)
            for (int64_t ws = from_ms; ws < until_ms; ws += step_ms)
                if (rmem_merged_done(m, ids[i], ws, until_ms - ws > step_ms ? ws + step_ms : until_ms)) {
                    remote_fail(r, "out of memory loading profiles");
                    free(ids);
                    return;
                }
    }
    free(ids);
}

const char *store_reader_error(const store_reader *r) { return r->rerr; }

void store_reader_prefetch_extent(store_reader *r, const uint32_t *sids, size_t n)
{
    if (!r->rcat || !n || !r->src.extent || atomic_load(&r->stop) == STORE_STOP_REMOTE) return;
    store_rmem *m = r->parts[0].m;
    uint32_t *ask = malloc(n * sizeof *ask);
    store_rextent *e = malloc(n * sizeof *e);
    size_t k = 0;
    char err[1024] = "out of memory";
    int rc = ask && e ? 0 : -1;
    for (size_t i = 0; i < n && !rc; i++) {
        store_rextent x;
        if (!rmem_extent(m, sids[i], &x)) ask[k++] = sids[i];
    }
    if (!rc && k) {
        memset(e, 0, k * sizeof *e);
        err[0] = '\0';
        rc = r->src.extent(r->src.ctx, ask, k, e, err, sizeof err);
        for (size_t i = 0; i < k && !rc; i++) rmem_set_extent(m, ask[i], &e[i]);
    }
    if (rc) remote_fail(r, err[0] ? err : "reading the series' extents failed");
    free(ask);
    free(e);
}

size_t store_reader_parts(store_reader *r, int64_t from_ms, int64_t until_ms, store_part ***parts)
{
    if (r->rcat) {
        /* a merge sizes its arrays by the partition's nodes after this:
         * whatever it scans must be in now.  A merge announced with
         * store_reader_prefetch_merged has its sums; any other loads the
         * wanted series' profiles */
        if (from_ms != r->merge_from || until_ms != r->merge_until) remote_ready(r, 0, from_ms, until_ms);
        r->sel[0] = &r->parts[0];
        *parts = r->sel;
        return from_ms < until_ms ? 1 : 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->n_parts; i++)
        if (overlaps(&r->parts[i], from_ms, until_ms)) r->sel[n++] = &r->parts[i];
    *parts = r->sel;
    return n;
}

uint32_t store_part_nodes(store_reader *r, store_part *v)
{
    return view_open(r, v) ? 0 : v_nodes(v);
}

/* ---- the reader's call tree ---- */

typedef struct { const store_reader *r; const char *s; uint32_t len; } name_probe;

static int name_eq(void *ctx, uint32_t id)
{
    name_probe *pr = ctx;
    return pr->r->name_len[id] == pr->len && memcmp(pr->r->name[id], pr->s, pr->len) == 0;
}

/* Appends a name or node (the caller knows it is new). */
static uint32_t push_name(store_reader *r, const char *s, uint32_t len)
{
    if (r->n_names == r->cap_names) {
        uint32_t cap = r->cap_names * 2;
        const char **nn = realloc(r->name, cap * sizeof *nn);
        if (nn) r->name = nn;
        uint32_t *nl = realloc(r->name_len, cap * sizeof *nl);
        if (nl) r->name_len = nl;
        if (!nn || !nl) return 0;
        r->cap_names = cap;
    }
    r->name[r->n_names] = s;
    r->name_len[r->n_names] = len;
    return r->n_names++;
}

/* Makes room for cap nodes in the reader's tree; answers 0 or -1. */
static int reserve_nodes(store_reader *r, uint64_t cap)
{
    if (cap <= r->cap_nodes) return 0;
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    uint32_t *np = realloc(r->tparent, cap * sizeof *np);
    if (np) r->tparent = np;
    uint32_t *nf = realloc(r->tfunc, cap * sizeof *nf);
    if (nf) r->tfunc = nf;
    if (!np || !nf) return -1;
    r->cap_nodes = (uint32_t)cap;
    return 0;
}

static uint32_t push_node(store_reader *r, uint32_t parent, uint32_t func)
{
    if (r->n_nodes >= MAX_READER_NODES) return 0;
    if (r->n_nodes == r->cap_nodes && reserve_nodes(r, (uint64_t)r->cap_nodes * 2)) return 0;
    r->tparent[r->n_nodes] = parent;
    r->tfunc[r->n_nodes] = func;
    return r->n_nodes++;
}

/* Makes the maps hold every name and node (before a second partition). */
static int build_maps(store_reader *r)
{
    if (!r->maps_stale) return 0;
    idmap_clear(&r->name_map);
    idmap_clear(&r->node_map);
    for (uint32_t i = 1; i < r->n_names; i++)
        if (idmap_put(&r->name_map, hash_bytes(r->name[i], r->name_len[i], NAME_SEED), i)) return -1;
    for (uint32_t i = 1; i < r->n_nodes; i++)
        if (idmap_put(&r->node_map, ((uint64_t)r->tparent[i] << 32) | r->tfunc[i], i)) return -1;
    r->maps_stale = 0;
    return 0;
}

/* The id of name s (len bytes); a new name is kept as s points, or, when
 * s is not NUL-terminated at len (a located frame's name), as a copy. */
static uint32_t reader_name(store_reader *r, const char *s, uint32_t len)
{
    if (r->maps_stale) return push_name(r, s, len); /* one partition: names are unique */
    uint64_t h = hash_bytes(s, len, NAME_SEED);
    name_probe pr = { r, s, len };
    uint32_t id = idmap_find(&r->name_map, h, name_eq, &pr);
    if (id) return id;
    if (s[len]) {
        char *c = arena_alloc(&r->cut_names, (size_t)len + 1);
        if (!c) return 0;
        memcpy(c, s, len);
        c[len] = '\0';
        s = c;
    }
    id = push_name(r, s, len);
    return id && !idmap_put(&r->name_map, h, id) ? id : 0;
}

static uint32_t reader_node(store_reader *r, uint32_t parent, uint32_t func)
{
    if (r->maps_stale) return push_node(r, parent, func); /* one partition: nodes are unique */
    uint64_t key = ((uint64_t)parent << 32) | func;
    uint32_t id = idmap_find(&r->node_map, key, NULL, NULL);
    if (id) return id;
    id = push_node(r, parent, func);
    return id && !idmap_put(&r->node_map, key, id) ? id : 0;
}

/* The reader's name of a partition string: the whole frame text with
 * lines, else its name alone (storage/frame.h), so that locations of one
 * function merge.  A cut name may repeat inside one partition: the first
 * one switches the reader to keeping its maps. */
static uint32_t part_name(store_reader *r, store_part *v, uint32_t sid)
{
    if (v->n_str_q < v_strings(v) + 1) {
        uint32_t n = v_strings(v) + 1;
        uint32_t *q = realloc(v->str_q, n * sizeof *q);
        if (!q) return 0;
        memset(q + v->n_str_q, 0, (n - v->n_str_q) * sizeof *q);
        v->str_q = q;
        v->n_str_q = n;
    }
    if (sid < v->n_str_q && v->str_q[sid]) return v->str_q[sid];
    uint32_t len;
    const char *s = v_string(v, sid, &len);
    if (!s) return 0;
    uint32_t name_len = r->lines ? len : frame_name_len(s, len);
    if (name_len < len && !r->names_merge) {
        r->names_merge = 1;
        r->only = NULL;
        if (build_maps(r)) return 0;
    }
    return v->str_q[sid] = reader_name(r, s, name_len);
}

/* A sample-label pseudo-frame's text (store.h). */
static int is_sample_label(const char *s, uint32_t len)
{
    return len && s[0] == STORE_SAMPLE_MARK;
}

static store_sample_label sample_label_of(const char *s, uint32_t len)
{
    const char *eq = memchr(s + 1, '=', len - 1);
    uint32_t kl = eq ? (uint32_t)(eq - s - 1) : len - 1;
    return (store_sample_label){ s + 1, eq ? eq + 1 : s + len, kl, eq ? len - 2 - kl : 0 };
}

/* A translation that ends a walk up: a real node's, or a dropped one. */
static int q_final(uint32_t t)
{
    return t == STORE_NODE_DROPPED || (t && !(t & Q_MARK));
}

uint32_t store_part_node(store_reader *r, store_part *v, uint32_t node, int *failed)
{
    if (!node) return 0;
    if (r->broken || view_open(r, v) || node >= v_nodes(v)) {
        *failed = 1;
        return 0;
    }
    if (v->n_node_q < v_nodes(v)) {
        /* At most one reader node per partition node: room for all of them
         * now rather than doubling (pages never written are never backed);
         * a remote partition grows with its loads. */
        uint32_t n = v_nodes(v);
        uint32_t *q = realloc(v->node_q, n * sizeof *q);
        if (q) {
            memset(q + v->n_node_q, 0, (n - v->n_node_q) * sizeof *q);
            v->node_q = q;
        }
        if (!q || reserve_nodes(r, (uint64_t)r->n_nodes + (n - v->n_node_q))) {
            *failed = 1;
            return 0;
        }
        v->n_node_q = n;
    }
    if (q_final(v->node_q[node])) return v->node_q[node];
    /* While one partition only is folded, its names and nodes are unique
     * and the maps are not kept (most queries read one partition); a
     * second partition first builds them. */
    if (!r->only && r->n_nodes == 1 && !r->names_merge) {
        r->only = v;
        r->maps_stale = 1;
    } else if (r->only != v) {
        r->only = NULL;
        if (build_maps(r)) {
            *failed = 1;
            return 0;
        }
    }
    /* Walk up to a translated real ancestor (through sample labels, whose
     * values the filter needs), then intern the path down. */
    uint32_t chain[1100], funcs[1100], n = 0, x = node, parent, func;
    while (x && !q_final(v->node_q[x])) {
        if (n == sizeof chain / sizeof *chain || v_node(v, x, &parent, &func)) {
            *failed = 1;
            return 0;
        }
        chain[n] = x;
        funcs[n++] = func;
        x = parent;
    }
    uint32_t q = x ? v->node_q[x] : 0;
    if (q == STORE_NODE_DROPPED) {
        while (n--) v->node_q[chain[n]] = STORE_NODE_DROPPED;
        return STORE_NODE_DROPPED;
    }
    int decided = x != 0, nlab = 0;
    store_sample_label labels[MAX_SAMPLE_LABELS];
    while (n--) {
        uint32_t len, f;
        const char *s = v_string(v, funcs[n], &len);
        if (!s) {
            *failed = 1;
            return 0;
        }
        if (is_sample_label(s, len)) {
            store_sample_label l = sample_label_of(s, len);
            if (!r->names_merge) {
                /* paths that differ only in sample labels meet in one
                 * reader node: partition nodes are no longer unique, the
                 * maps are kept (as for names cut from locations) */
                r->names_merge = 1;
                r->only = NULL;
                if (build_maps(r)) {
                    *failed = 1;
                    return 0;
                }
            }
            if (v->node_q[chain[n]]) {
                q = v->node_q[chain[n]] & ~Q_MARK;
            } else {
                if (r->sroot && l.key_len == r->sroot_len && !memcmp(l.key, r->sroot, l.key_len)) {
                    /* the kept key: a frame "key=value" (s is NUL-terminated at len) */
                    if (!(f = reader_name(r, s + 1, len - 1)) || !(q = reader_node(r, q, f))) {
                        *failed = 1;
                        return 0;
                    }
                }
                v->node_q[chain[n]] = q | Q_MARK;
            }
            if (!decided && nlab < MAX_SAMPLE_LABELS) labels[nlab++] = l;
            continue;
        }
        if (!decided) {
            decided = 1;
            if (r->sfilter && !r->sfilter(r->sfilter_ctx, labels, nlab)) {
                for (uint32_t k = 0; k <= n; k++) v->node_q[chain[k]] = STORE_NODE_DROPPED;
                return STORE_NODE_DROPPED;
            }
        }
        if (!(f = part_name(r, v, funcs[n])) || !(q = reader_node(r, q, f))) {
            *failed = 1;
            return 0;
        }
        v->node_q[chain[n]] = q;
    }
    /* a stack of sample labels alone (no ingest makes one) */
    if (!decided && r->sfilter && !r->sfilter(r->sfilter_ctx, labels, nlab)) return STORE_NODE_DROPPED;
    return q;
}

void store_reader_sample_filter(store_reader *r, store_sample_filter fn, void *ctx, const char *key)
{
    int same = fn ? r->sfilter_key && key && !strcmp(key, r->sfilter_key) : !r->sfilter_key;
    r->sfilter = fn;
    r->sfilter_ctx = ctx;
    if (same) return;
    free(r->sfilter_key);
    r->sfilter_key = fn ? strdup(key ? key : "") : NULL;
    if (fn && !r->sfilter_key) r->broken = 1;
    /* Forget what was decided; the reader's tree stays, so from now on its
     * maps are kept (a path translated again must find its nodes). */
    int any = 0;
    for (size_t i = 0; i < r->n_parts; i++) {
        if (!r->parts[i].node_q) continue;
        free(r->parts[i].node_q);
        r->parts[i].node_q = NULL;
        r->parts[i].n_node_q = 0;
        any = 1;
    }
    r->names_merge = 1;
    r->only = NULL;
    if (any && build_maps(r)) r->broken = 1;
}

void store_reader_sample_root(store_reader *r, const char *key)
{
    free(r->sroot);
    r->sroot = key ? strdup(key) : NULL;
    r->sroot_len = r->sroot ? strlen(r->sroot) : 0;
    if (key && !r->sroot) r->broken = 1;
    /* "key=value" may also be a real frame's name: names are not unique
     * in a partition any more, the maps are kept */
    r->names_merge = 1;
    r->only = NULL;
    if (build_maps(r)) r->broken = 1;
}

int store_label_name_known(const store_reader *r, const char *name)
{
    return r->rcat ? rcat_name_known(r->rcat, name) : catalog_name_known(&r->cat, name);
}

uint32_t store_series_max(const store_reader *r)
{
    return r->rcat ? store_rcat_count(r->rcat) : catalog_series_max(&r->cat);
}

uint32_t store_series_next(const store_reader *r, uint32_t sid)
{
    if (r->rcat) return sid < store_rcat_count(r->rcat) ? sid + 1 : 0;
    return catalog_series_next(&r->cat, sid);
}

uint32_t store_series_count(const store_reader *r)
{
    return r->rcat ? store_rcat_count(r->rcat) : r->cat.n_pos - 1;
}
uint32_t store_node_max(const store_reader *r) { return r->n_nodes - 1; }
uint32_t store_string_max(const store_reader *r) { return r->n_names - 1; }

uint32_t store_node_parent(const store_reader *r, uint32_t node)
{
    return node < r->n_nodes ? r->tparent[node] : 0;
}

uint32_t store_node_func(const store_reader *r, uint32_t node)
{
    return node < r->n_nodes ? r->tfunc[node] : 0;
}

const char *store_string(const store_reader *r, uint32_t id, uint32_t *len)
{
    if (id >= r->n_names) id = 0;
    if (len) *len = r->name_len[id];
    return r->name[id];
}

/* ---- series ---- */

int store_series_labels(const store_reader *r, uint32_t sid, store_label *out, int max)
{
    return r->rcat ? rcat_labels(r->rcat, sid, out, max) : catalog_series_labels(&r->cat, sid, out, max);
}

const char *store_series_label(const store_reader *r, uint32_t sid, const char *name)
{
    return r->rcat ? rcat_label(r->rcat, sid, name) : catalog_series_label(&r->cat, sid, name);
}

store_status store_postings(const store_reader *r, const char *name, const char *value, uint32_t **ids, size_t *n)
{
    return r->rcat ? rcat_postings(r->rcat, name, value, ids, n) : catalog_postings(&r->cat, name, value, ids, n);
}

/* ---- scans ---- */

/* The pairs of a block a scan hands out, against the budget. */
static void count_pairs(store_reader *r, const store_block *b)
{
    uint64_t n = atomic_fetch_add_explicit(&r->pairs, b->n_pairs, memory_order_relaxed) + b->n_pairs;
    if (r->max_pairs && n > r->max_pairs) {
        int none = STORE_STOP_NONE;
        atomic_compare_exchange_strong(&r->stop, &none, STORE_STOP_PAIRS);
    }
}

/* Fills b from a stored value: a block, or a profile in a segment (the
 * caller sets series and times). */
static int parse_value(const void *data, size_t len, store_part *pv, store_block *b)
{
    block_header h;
    if (seg_value_header(data, len, &h)) return -1;
    const char *unit = v_string(pv, h.unit, NULL);
    if (!unit) return -1;
    b->until_ms = h.duration_ms; /* the caller adds the start */
    b->rate = h.rate;
    b->unit = unit;
    b->samples_known = block_samples_known(&h, unit);
    b->samples = b->samples_known ? h.samples : 0;
    b->gauge = h.gauge;
    b->counts = h.count_sum;
    b->n_pairs = h.n_pairs;
    b->n_profiles = h.n_profiles;
    b->data = data;  /* the whole value: accumulate re-parses */
    b->data_len = len;
    b->raw_len = h.raw_len;
    b->part = pv;
    return 0;
}

/* The profiles of a series in one partition, raw blocks and segments
 * together, in time order (seg_iter). */
static int scan_part(store_reader *r, store_part *v, uint32_t sid, int64_t from_ms, int64_t until_ms,
                     store_block_fn fn, void *ctx)
{
    if (view_open(r, v)) return 0;
    seg_iter it;
    seg_item item;
    seg_iter_begin(&it, v->cur, v->scur, sid, from_ms, until_ms);
    while (seg_iter_next(&it, &item)) {
        store_block b;
        if (parse_value(item.data, item.data_len, v, &b)) continue;
        b.series = sid;
        b.from_ms = item.from_ms;
        b.until_ms += item.from_ms;
        count_pairs(r, &b);
        int stop = fn(&b, ctx);
        if (stop) return stop;
    }
    return 0;
}

/* Whether v holds a profile of sid starting in [from, until). */
static int part_holds(store_reader *r, store_part *v, uint32_t sid, int64_t from_ms, int64_t until_ms)
{
    if (view_open(r, v)) return 0;
    seg_iter it;
    seg_item item;
    seg_iter_begin(&it, v->cur, v->scur, sid, from_ms, until_ms);
    return seg_iter_next(&it, &item);
}

typedef struct {
    store_block *v;
    size_t n, cap;
    int oom;
} block_list;

static int collect(const store_block *b, void *ctx)
{
    block_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        store_block *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) {
            l->oom = 1;
            return 1;
        }
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = *b;
    return 0;
}

/* Stable: collect appended shard after shard, each in time order. */
static void sort_by_start(store_block *v, size_t n, store_block *tmp)
{
    if (n < 2) return;
    size_t h = n / 2;
    sort_by_start(v, h, tmp);
    sort_by_start(v + h, n - h, tmp);
    size_t a = 0, b = h, k = 0;
    while (a < h && b < n) tmp[k++] = v[b].from_ms < v[a].from_ms ? v[b++] : v[a++];
    while (a < h) tmp[k++] = v[a++];
    while (b < n) tmp[k++] = v[b++];
    memcpy(v, tmp, n * sizeof *v);
}

/* The shards of one partition (parts[a..b), one start): a series is in
 * one of them unless it was written in a group led by another series or
 * by a run with another number of writers (writer.c).  When several hold
 * it, their profiles are gathered (their bytes stay in the maps until the
 * reader ends) and handed out in time order. */
static int scan_shards(store_reader *r, size_t a, size_t b, uint32_t sid, int64_t from_ms, int64_t until_ms,
                       store_block_fn fn, void *ctx)
{
    size_t holding = 0, which = a;
    for (size_t i = a; i < b; i++)
        if (part_holds(r, &r->parts[i], sid, from_ms, until_ms)) {
            holding++;
            which = i;
        }
    if (!holding) return 0;
    if (holding == 1) return scan_part(r, &r->parts[which], sid, from_ms, until_ms, fn, ctx);
    block_list l = { 0 };
    for (size_t i = a; i < b && !l.oom; i++) scan_part(r, &r->parts[i], sid, from_ms, until_ms, collect, &l);
    store_block *tmp = l.oom ? NULL : malloc(l.n * sizeof *tmp);
    int stop = 0;
    if (tmp) {
        sort_by_start(l.v, l.n, tmp);
        for (size_t i = 0; i < l.n && !stop; i++) stop = fn(&l.v[i], ctx);
    } else { /* out of memory: each shard in order, times interleaving */
        for (size_t i = a; i < b && !stop; i++) stop = scan_part(r, &r->parts[i], sid, from_ms, until_ms, fn, ctx);
    }
    free(tmp);
    free(l.v);
    return stop;
}

/* A remote reader's scan: the loaded profiles of sid starting in [from,
 * until), loading what is missing first. */
/* Hands out a remote reader's loaded blocks b[0..n) of sid, as scans of
 * a store hand out stored ones. */
static int hand_out(store_reader *r, uint32_t sid, const rmem_block *b, size_t n, store_block_fn fn, void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        store_block blk;
        if (parse_value(b[i].val, b[i].len, &r->parts[0], &blk)) continue;
        blk.series = sid;
        blk.from_ms = b[i].from_ms;
        blk.until_ms = b[i].until_ms;
        count_pairs(r, &blk);
        int stop = fn(&blk, ctx);
        if (stop) return stop;
    }
    return 0;
}

/* The loaded profiles of sid from the first starting at or after from
 * (*at), loading what is missing of [from, until) first; NULL when none. */
static const rmem_block *remote_blocks(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms, size_t *n,
                                       size_t *at)
{
    *n = *at = 0;
    if (remote_ready(r, sid, from_ms, until_ms)) return NULL;
    const rmem_block *b = rmem_blocks(r->parts[0].m, sid, n);
    size_t a = 0, z = *n;
    while (a < z) {
        size_t mid = a + (z - a) / 2;
        if (b[mid].from_ms < from_ms) a = mid + 1;
        else z = mid;
    }
    *at = a;
    return b;
}

static int remote_scan(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms, store_block_fn fn,
                       void *ctx)
{
    size_t n, a;
    const rmem_block *b = remote_blocks(r, sid, from_ms, until_ms, &n, &a);
    if (!b) return 0;
    size_t z = a;
    while (z < n && b[z].from_ms < until_ms) z++;
    return hand_out(r, sid, b + a, z - a, fn, ctx);
}

int store_blocks_scan(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms, store_block_fn fn, void *ctx)
{
    if (r->rcat) return remote_scan(r, sid, from_ms, until_ms, fn, ctx);
    for (size_t i = 0, j; i < r->n_parts; i = j) {
        for (j = i + 1; j < r->n_parts && part_start(r->parts[j].p) == part_start(r->parts[i].p);) j++;
        if (!overlaps(&r->parts[i], from_ms, until_ms)) continue;
        int stop = j - i == 1 ? scan_part(r, &r->parts[i], sid, from_ms, until_ms, fn, ctx)
                              : scan_shards(r, i, j, sid, from_ms, until_ms, fn, ctx);
        if (stop) return stop;
    }
    return 0;
}

void store_reader_use_rollups(store_reader *r, int on) { r->use_rollups = on; }

int64_t store_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void store_reader_set_deadline(store_reader *r, int64_t mono_ms)
{
    r->deadline_ms = mono_ms;
    atomic_store(&r->stop, STORE_STOP_NONE);
}

void store_reader_set_max_pairs(store_reader *r, uint64_t max_pairs) { r->max_pairs = max_pairs; }

void store_reader_set_cancel(store_reader *r, int (*gone)(void *ctx), void *ctx)
{
    r->gone = gone;
    r->gone_ctx = ctx;
}

uint64_t store_reader_pairs(const store_reader *r) { return atomic_load(&r->pairs); }

uint64_t store_reader_max_pairs(const store_reader *r) { return r->max_pairs; }

store_stop store_reader_stopped(const store_reader *r) { return atomic_load(&r->stop); }


/* Any thread (the parallel merge asks from its workers).  The client is
 * asked at most every 50 ms: a poll(2) a time. */
int store_reader_expired(store_reader *r)
{
    if (atomic_load_explicit(&r->stop, memory_order_relaxed)) return 1;
    if (!r->deadline_ms && !r->gone) return 0;
    int64_t now = store_mono_ms();
    int why = STORE_STOP_NONE;
    if (r->deadline_ms && now >= r->deadline_ms) why = STORE_STOP_DEADLINE;
    int64_t next = atomic_load_explicit(&r->next_gone_check, memory_order_relaxed);
    if (!why && r->gone && now >= next &&
        atomic_compare_exchange_strong(&r->next_gone_check, &next, now + 50) && r->gone(r->gone_ctx))
        why = STORE_STOP_GONE;
    if (why) {
        int none = STORE_STOP_NONE;
        atomic_compare_exchange_strong(&r->stop, &none, why);
    }
    return atomic_load(&r->stop) != STORE_STOP_NONE;
}

void store_reader_lines(store_reader *r, int on) { r->lines = on; }

static int plan(store_reader *r, store_part *v, uint32_t sid, int64_t from, int64_t until, int level,
                store_block_fn fn, void *ctx);

/* Calls fn for the rollup blocks of one level with buckets in [a, b); the
 * buckets without a rollup (not compacted yet) are covered by the next
 * finer level.  The finer scans move the shared cursor, so the walk seeks
 * back to where it was after each. */
static int scan_rollups(store_reader *r, store_part *v, int level, uint32_t sid, int64_t a, int64_t b,
                        store_block_fn fn, void *ctx)
{
    int64_t size = rollup_size_ms[level], pos = a;
    unsigned char key[ROLLUP_KEY_LEN];
    rollup_key(key, level, sid, a, 0);
    MDB_val k = { ROLLUP_KEY_LEN, key }, val;
    int rc = mdb_cursor_get(v->rcur, &k, &val, MDB_SET_RANGE);
    while (rc == 0) {
        int kl;
        uint32_t ksid;
        int64_t bucket;
        if (k.mv_size != ROLLUP_KEY_LEN) break;
        rollup_key_parse(k.mv_data, &kl, &ksid, &bucket, NULL);
        if (kl != level || ksid != sid || bucket >= b) break;
        if (bucket > pos) { /* a gap: buckets not built yet */
            memcpy(key, k.mv_data, ROLLUP_KEY_LEN);
            int stop = plan(r, v, sid, pos, bucket, level + 1, fn, ctx);
            if (stop) return stop;
            pos = bucket;
            k.mv_size = ROLLUP_KEY_LEN;
            k.mv_data = key;
            if ((rc = mdb_cursor_get(v->rcur, &k, &val, MDB_SET_RANGE))) break;
            continue;
        }
        store_block blk;
        if (parse_value(val.mv_data, val.mv_size, v, &blk) == 0) {
            blk.series = sid;
            blk.from_ms = bucket;
            blk.until_ms = bucket + size;
            count_pairs(r, &blk);
            int stop = fn(&blk, ctx);
            if (stop) return stop;
        }
        if (bucket + size > pos) pos = bucket + size;
        rc = mdb_cursor_get(v->rcur, &k, &val, MDB_NEXT);
    }
    return pos < b ? plan(r, v, sid, pos, b, level + 1, fn, ctx) : 0;
}

/* Covers [from, until) with whole buckets of this level where it can, and
 * finer levels (at last raw blocks) at the edges and in the gaps.  Buckets
 * never straddle partitions: partitions are whole hours, aligned. */
static int plan(store_reader *r, store_part *v, uint32_t sid, int64_t from, int64_t until, int level,
                store_block_fn fn, void *ctx)
{
    if (from >= until) return 0;
    const int64_t lim = INT64_C(1) << 60; /* far beyond any real time: raw */
    if (level >= ROLLUP_LEVELS || !r->use_rollups || from < -lim || until > lim)
        return scan_part(r, v, sid, from, until, fn, ctx);
    int64_t size = rollup_size_ms[level];
    int64_t a = -rollup_floor(-from, size), b = rollup_floor(until, size);
    if (a < r->rollup_from[level]) a = r->rollup_from[level];
    if (a >= b) return plan(r, v, sid, from, until, level + 1, fn, ctx);
    int rc = plan(r, v, sid, from, a, level + 1, fn, ctx);
    if (!rc) rc = scan_rollups(r, v, level, sid, a, b, fn, ctx);
    if (!rc) rc = plan(r, v, sid, b, until, level + 1, fn, ctx);
    return rc;
}

/* Merged blocks of sid over exactly [from, until), when a merge loaded
 * them: handed out like rollups; -1 when there are none. */
static int remote_scan_merged(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms, store_block_fn fn,
                              void *ctx)
{
    store_part *v = &r->parts[0];
    size_t n;
    const rmem_block *b = rmem_merged_blocks(v->m, sid, from_ms, until_ms, &n);
    return b ? hand_out(r, sid, b, n, fn, ctx) : -1;
}

int store_part_scan_merged(store_reader *r, store_part *v, uint32_t sid, int64_t from_ms, int64_t until_ms,
                           store_block_fn fn, void *ctx)
{
    if (v->m) {
        int rc = remote_scan_merged(r, sid, from_ms, until_ms, fn, ctx);
        return rc >= 0 ? rc : remote_scan(r, sid, from_ms, until_ms, fn, ctx);
    }
    if (view_open(r, v)) return 0;
    int64_t a = from_ms > part_start(v->p) ? from_ms : part_start(v->p);
    int64_t b = until_ms < part_end(v->p) ? until_ms : part_end(v->p);
    return plan(r, v, sid, a, b, 0, fn, ctx);
}

int store_blocks_scan_merged(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms, store_block_fn fn,
                             void *ctx)
{
    for (size_t i = 0; i < r->n_parts; i++) {
        if (!overlaps(&r->parts[i], from_ms, until_ms)) continue;
        int stop = store_part_scan_merged(r, &r->parts[i], sid, from_ms, until_ms, fn, ctx);
        if (stop) return stop;
    }
    return 0;
}

int store_series_has_blocks(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms)
{
    if (r->rcat) {
        /* what the source said, when it was asked for this range */
        rmem_range g;
        int p = rmem_presence(r->parts[0].m, sid, from_ms, until_ms);
        if (p >= 0 && rmem_missing(r->parts[0].m, sid, from_ms, until_ms, &g, 1)) return p;
        size_t n, a;
        const rmem_block *b = remote_blocks(r, sid, from_ms, until_ms, &n, &a);
        return b && a < n && b[a].from_ms < until_ms;
    }
    for (size_t i = 0; i < r->n_parts; i++) {
        store_part *v = &r->parts[i];
        if (!overlaps(v, from_ms, until_ms) || view_open(r, v)) continue;
        seg_iter it;
        seg_item item;
        seg_iter_begin(&it, v->cur, v->scur, sid, from_ms, until_ms);
        if (seg_iter_next(&it, &item)) return 1;
    }
    return 0;
}

/* The newest or oldest profile of a series, for answers that say where a
 * selector has data when their range held none: block keys sort by series
 * then start, so a series' last (first) block in a partition is one cursor
 * seek away, and partitions are disjoint in time, so the first partition
 * holding the series, walking newest (oldest) first, has the answer (of
 * its shards, the one with the newest (oldest) profile).  Cost:
 * one seek per partition walked and one block header; no block is decoded.
 * A block whose header cannot be read is stepped over, as scans do. */

/* The window of the block at k, v of series sid: 1, or 0 when its header
 * is unreadable. */
static int block_window(const MDB_val *k, const MDB_val *v, int64_t *from_ms, int64_t *until_ms)
{
    block_header h;
    const void *payload;
    size_t plen;
    int compressed;
    if (block_parse_header(v->mv_data, v->mv_size, &h, &payload, &plen, &compressed)) return 0;
    block_key_parse(k->mv_data, NULL, from_ms, NULL);
    *until_ms = *from_ms + h.duration_ms;
    return 1;
}

/* The newest raw block of sid in v starting in [since, +inf) with a
 * readable header: 1 and its window. */
static int raw_last(store_part *v, uint32_t sid, int64_t since_ms, int64_t *from_ms, int64_t *until_ms)
{
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, INT64_MAX, UINT32_MAX);
    MDB_val k = { BLOCK_KEY_LEN, key }, val;
    int rc = mdb_cursor_get(v->cur, &k, &val, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND) rc = mdb_cursor_get(v->cur, &k, &val, MDB_LAST);
    else if (rc == 0 && memcmp(k.mv_data, key, BLOCK_KEY_LEN)) rc = mdb_cursor_get(v->cur, &k, &val, MDB_PREV);
    for (; rc == 0 && k.mv_size == BLOCK_KEY_LEN; rc = mdb_cursor_get(v->cur, &k, &val, MDB_PREV)) {
        uint32_t ksid;
        int64_t kfrom;
        block_key_parse(k.mv_data, &ksid, &kfrom, NULL);
        if (ksid != sid || kfrom < since_ms) return 0;
        if (block_window(&k, &val, from_ms, until_ms)) return 1;
    }
    return 0;
}

static int raw_first(store_part *v, uint32_t sid, int64_t before_ms, int64_t *from_ms, int64_t *until_ms)
{
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, INT64_MIN, 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, val;
    int rc = mdb_cursor_get(v->cur, &k, &val, MDB_SET_RANGE);
    for (; rc == 0 && k.mv_size == BLOCK_KEY_LEN; rc = mdb_cursor_get(v->cur, &k, &val, MDB_NEXT)) {
        uint32_t ksid;
        int64_t kfrom;
        block_key_parse(k.mv_data, &ksid, &kfrom, NULL);
        if (ksid != sid || kfrom >= before_ms) return 0;
        if (block_window(&k, &val, from_ms, until_ms)) return 1;
    }
    return 0;
}

/* In a partition, a series' newest profile is its newest raw block or the
 * newest profile of its segments: of equal starts the raw one, stored
 * after the segment was packed (the oldest: the segment's). */
/* A remote series' extent, asked for when not prefetched. */
static int remote_extent(store_reader *r, uint32_t sid, store_rextent *e)
{
    if (!rmem_extent(r->parts[0].m, sid, e)) store_reader_prefetch_extent(r, &sid, 1);
    return rmem_extent(r->parts[0].m, sid, e) && e->found;
}

int store_series_last(store_reader *r, uint32_t sid, int64_t since_ms, int64_t *from_ms, int64_t *until_ms)
{
    if (r->rcat) {
        store_rextent e;
        if (!remote_extent(r, sid, &e) || e.last_from < since_ms) return 0;
        *from_ms = e.last_from;
        *until_ms = e.last_until;
        return 1;
    }
    int found = 0;
    for (size_t i = r->n_parts; i-- > 0;) {
        store_part *v = &r->parts[i];
        if (part_end(v->p) <= since_ms) break;
        /* the other shards of the partition found may hold a newer one */
        if (found && part_start(v->p) != part_start(r->parts[i + 1].p)) break;
        if (view_open(r, v)) continue;
        int64_t rf = 0, ru = 0, sf = 0, su = 0;
        int raw = raw_last(v, sid, since_ms, &rf, &ru);
        int seg = seg_edge(v->scur, sid, 1, since_ms, INT64_MAX, &sf, &su);
        if (!raw && !seg) continue;
        int use_raw = raw && (!seg || rf >= sf);
        int64_t f = use_raw ? rf : sf;
        if (found && f <= *from_ms) continue;
        *from_ms = f;
        *until_ms = use_raw ? ru : su;
        found = 1;
    }
    return found;
}

int store_series_first(store_reader *r, uint32_t sid, int64_t before_ms, int64_t *from_ms, int64_t *until_ms)
{
    if (r->rcat) {
        store_rextent e;
        if (!remote_extent(r, sid, &e) || e.first_from >= before_ms) return 0;
        *from_ms = e.first_from;
        *until_ms = e.first_until;
        return 1;
    }
    int found = 0;
    for (size_t i = 0; i < r->n_parts; i++) {
        store_part *v = &r->parts[i];
        if (part_start(v->p) >= before_ms) break;
        if (found && part_start(v->p) != part_start(r->parts[i - 1].p)) break;
        if (view_open(r, v)) continue;
        int64_t rf = 0, ru = 0, sf = 0, su = 0;
        int raw = raw_first(v, sid, before_ms, &rf, &ru);
        int seg = seg_edge(v->scur, sid, 0, INT64_MIN, before_ms, &sf, &su);
        if (!raw && !seg) continue;
        int use_seg = seg && (!raw || sf <= rf);
        int64_t f = use_seg ? sf : rf;
        if (found && f >= *from_ms) continue;
        *from_ms = f;
        *until_ms = use_seg ? su : ru;
        found = 1;
    }
    return found;
}

/* ---- decoding ---- */

store_status store_block_accumulate(store_reader *r, const store_block *b, uint64_t weight,
                                    uint64_t *acc, uint64_t *touched, uint64_t *sum)
{
    if (seg_value_accumulate(&r->dec, b->data, b->data_len, v_nodes(b->part), weight, acc, touched, sum))
        return STORE_EIO;
    return STORE_OK;
}

struct store_decoder {
    seg_dec dec;
};

store_decoder *store_decoder_new(void) { return calloc(1, sizeof(store_decoder)); }

void store_decoder_free(store_decoder *d)
{
    if (!d) return;
    seg_dec_free(&d->dec);
    free(d);
}

store_status store_decoder_accumulate(store_decoder *d, const store_block *b, uint64_t weight, uint32_t n_nodes,
                                      uint64_t *acc, uint64_t *touched, uint64_t *sum)
{
    if (seg_value_accumulate(&d->dec, b->data, b->data_len, n_nodes, weight, acc, touched, sum)) return STORE_EIO;
    return STORE_OK;
}

typedef struct { uint32_t node; uint64_t count; } pair;

static int pair_cmp(const void *a, const void *b)
{
    uint32_t x = ((const pair *)a)->node, y = ((const pair *)b)->node;
    return (x > y) - (x < y);
}

store_status store_block_pairs(store_reader *r, const store_block *b, const uint32_t **nodes,
                               const uint64_t **counts, uint32_t *n)
{
    block_header h;
    if (seg_value_header(b->data, b->data_len, &h)) return STORE_EIO;
    if (h.n_pairs > r->pairs_cap) {
        size_t cap = h.n_pairs;
        uint32_t *nd = realloc(r->nodes, cap * sizeof *nd);
        if (nd) r->nodes = nd;
        uint64_t *ct = realloc(r->counts, cap * sizeof *ct);
        if (ct) r->counts = ct;
        if (!nd || !ct) return STORE_ENOMEM;
        r->pairs_cap = cap;
    }
    if (seg_value_decode(&r->dec, b->data, b->data_len, r->nodes, r->counts)) return STORE_EIO;
    pair *tmp = malloc((h.n_pairs ? h.n_pairs : 1) * sizeof *tmp);
    if (!tmp) return STORE_ENOMEM;
    int failed = 0;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < h.n_pairs && !failed; i++) {
        tmp[kept].node = store_part_node(r, b->part, r->nodes[i], &failed);
        tmp[kept].count = r->counts[i];
        kept += tmp[kept].node != STORE_NODE_DROPPED; /* a sample filter refused it */
    }
    if (failed) {
        free(tmp);
        return STORE_EIO;
    }
    h.n_pairs = kept;
    qsort(tmp, h.n_pairs, sizeof *tmp, pair_cmp);
    for (uint32_t i = 0; i < h.n_pairs; i++) {
        r->nodes[i] = tmp[i].node;
        r->counts[i] = tmp[i].count;
    }
    free(tmp);
    *nodes = r->nodes;
    *counts = r->counts;
    *n = h.n_pairs;
    return STORE_OK;
}
