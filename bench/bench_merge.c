/* bench_merge.c — query merge: (stack, count) pairs merged per second.
 *
 * Stores 10,000 profiles of 2,000 distinct stacks each (100 series x 100
 * ten-second windows) through store_write, then, with a warm cache, runs
 * query_resolve + query_merge over the whole range several times and keeps
 * the best: 20 million pairs per query.  Merging is single-threaded, so the
 * rate is per core.  Target: at least 100 million pairs/s.
 *
 * Beside it, in the same run:
 *   - memcpy of pairs x 12 bytes (u32 node + u64 count), the physical limit
 *     of touching that much data once;
 *   - the time split, through the public reader API: walking the blocks
 *     (LMDB cursor + header parse), + decoding their pairs (lz4 + varints),
 *     + accumulating into a flat array as query_merge does.  What query_merge
 *     costs beyond that is allocating the arrays and the totals pass.
 *
 * The stacks: a pool of 50,000 distinct stacks of depth 10..30 with short
 * C-like names (gen.h), Zipf(1.1) samples per profile until it holds 2,000
 * distinct stacks.  The merge never looks at names, so short ones only make
 * loading faster; the call tree's size (the accumulator's footprint) is what
 * matters, and it is printed. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "../query/query.h"
#include <unistd.h>

#include "../storage/store.h"
#include "gen_load.h"

#define SEED UINT64_C(0x6d657267652d3031)
#define POOL 50000
#define N_FUNCS 2000
#define DEPTH_MIN 10
#define DEPTH_MAX 30
#define ZIPF_S 1.1
#define N_SERIES 100
#define N_WINDOWS 100
#define PAIRS 2000
#define THREADS 4
#define REPS_DEFAULT 5
static int REPS = REPS_DEFAULT; /* BENCH_MERGE_REPS: more, for a profiler to attach */
#define WINDOW_MS 10000
#define BASE_MS INT64_C(1795219200000) /* 2026-11-21T00:00:00Z */
#define TARGET_PAIRS_PER_S 100e6

#define N_PROFILES (N_SERIES * N_WINDOWS)

/* ---- the split: scan, decode, accumulate through the reader API -------- */

typedef struct {
    store_reader *r;
    int mode;            /* 0 scan only, 1 + decode to the reader's ids, 2 + decode and accumulate */
    uint64_t blocks, pairs, sink;
    uint64_t *self;      /* mode 2: indexed by the partition's node ids, as query_merge does */
    uint64_t *touched;
    uint32_t n_nodes;
} split_ctx;

static int split_block(const store_block *b, void *arg)
{
    split_ctx *c = arg;
    c->blocks++;
    c->sink += b->data_len;
    if (c->mode == 0) return 0;
    if (c->mode == 2) { /* the merge's inner loop: partition ids, no translation */
        if (!c->self) {
            c->n_nodes = store_part_nodes(c->r, b->part);
            c->self = gen_xcalloc(c->n_nodes, sizeof *c->self);
            c->touched = gen_xcalloc((c->n_nodes + 63) / 64, sizeof *c->touched);
        }
        uint64_t sum;
        if (store_block_accumulate(c->r, b, 10000000, c->self, c->touched, &sum)) return 1;
        c->pairs += b->n_pairs;
        c->sink += sum;
        return 0;
    }
    const uint32_t *nodes;
    const uint64_t *counts;
    uint32_t n;
    if (store_block_pairs(c->r, b, &nodes, &counts, &n)) return 1;
    c->pairs += n;
    c->sink += nodes[n ? n - 1 : 0] + (n ? counts[0] : 0);
    return 0;
}

static double split_pass(store *st, int mode, uint64_t *pairs)
{
    store_reader *r;
    if (store_reader_begin(st, &r)) return -1;
    store_reader_use_rollups(r, 0); /* every raw pair: rollups are bench_rollup's */
    split_ctx c = { .r = r, .mode = mode };
    double t0 = gen_now();
    for (uint32_t sid = 1; sid <= store_series_max(r); sid++)
        store_blocks_scan(r, sid, BASE_MS, BASE_MS + (int64_t)N_WINDOWS * WINDOW_MS, split_block, &c);
    double t = gen_now() - t0;
    free(c.self);
    free(c.touched);
    store_reader_end(r);
    *pairs = c.pairs;
    if (c.sink == 42) printf(" ");
    return t;
}

/* ---- the query ---------------------------------------------------------- */

typedef struct { double resolve, merge, merge_cpu; uint64_t profiles, grand_total; uint32_t n_nodes; } query_times;

/* This thread's CPU time: on a shared machine the wall time of a merge
 * counts the other tasks' turns too; its CPU time does not. */
static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_query(store *st, const query_selector *sel, query_times *qt)
{
    store_reader *r;
    char err[512];
    if (store_reader_begin(st, &r)) return -1;
    store_reader_use_rollups(r, 0); /* every raw pair: rollups are bench_rollup's */
    query_series_set set;
    query_tree t;
    int64_t from = BASE_MS, until = BASE_MS + (int64_t)N_WINDOWS * WINDOW_MS;
    double t0 = gen_now();
    if (query_resolve(r, sel, from, until, &set, err, sizeof err)) {
        fprintf(stderr, "bench_merge: query_resolve: %s\n", err);
        store_reader_end(r);
        return -1;
    }
    double t1 = gen_now(), c1 = thread_cpu();
    if (query_merge(r, &set, from, until, &t, err, sizeof err)) {
        fprintf(stderr, "bench_merge: query_merge: %s\n", err);
        query_series_set_free(&set);
        store_reader_end(r);
        return -1;
    }
    double t2 = gen_now(), c2 = thread_cpu();
    qt->resolve = t1 - t0;
    qt->merge = t2 - t1;
    qt->merge_cpu = c2 - c1;
    qt->profiles = t.profiles;
    qt->grand_total = t.grand_total;
    qt->n_nodes = t.n_nodes;
    query_tree_free(&t);
    query_series_set_free(&set);
    store_reader_end(r);
    return 0;
}

static double best_memcpy(size_t bytes)
{
    char *src = gen_xmalloc(bytes), *dst = gen_xmalloc(bytes);
    memset(src, 1, bytes);
    memset(dst, 2, bytes);  /* both touched: no page faults in the timing */
    double best = 1e9;
    for (int i = 0; i < REPS; i++) {
        double t0 = gen_now();
        memcpy(dst, src, bytes);
        double t = gen_now() - t0;
        if (t < best) best = t;
        src[i] = dst[bytes - 1 - (size_t)i]; /* keep the copies observable */
    }
    if (dst[bytes / 2] == 42) printf(" ");
    free(src);
    free(dst);
    return best;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t_start = gen_now();
    const char *reps = getenv("BENCH_MERGE_REPS");
    if (reps && atoi(reps) > 0) REPS = atoi(reps);
    gen_pool pool;
    gen_pool_make(&pool, SEED, GEN_COMPACT, N_FUNCS, POOL, DEPTH_MIN, DEPTH_MAX);
    gen_zipf zipf;
    gen_zipf_make(&zipf, POOL, ZIPF_S);
    gen_profile *profiles = gen_xcalloc(N_PROFILES, sizeof *profiles);
    uint32_t *stamp = gen_xcalloc(POOL, sizeof *stamp), *slot = gen_xcalloc(POOL, sizeof *slot);
    gen_rng rng;
    gen_rng_seed(&rng, SEED ^ 0xa5a5);
    uint64_t pairs = 0, samples = 0;
    for (uint32_t i = 0; i < N_PROFILES; i++) {
        gen_profile_zipf(&profiles[i], &pool, &zipf, &rng, PAIRS, 0, stamp, slot, i + 1);
        pairs += profiles[i].n;
        for (uint32_t k = 0; k < profiles[i].n; k++) samples += profiles[i].count[k];
    }
    free(stamp);
    free(slot);
    printf("bench_merge: (stack, count) pairs merged per second, warm cache, one thread\n");
    printf("  data: %u profiles = %d series x %d windows, %u distinct stacks each: %.1f M pairs, %.1f samples/pair\n",
           N_PROFILES, N_SERIES, N_WINDOWS, PAIRS, (double)pairs / 1e6, (double)samples / (double)pairs);
    printf("  stacks: pool of %d, Zipf s=%.1f, depth %d..%d (mean %.1f), %.0f B/stack; generated in %.1f s\n", POOL,
           ZIPF_S, DEPTH_MIN, DEPTH_MAX, gen_pool_mean_depth(&pool), gen_pool_mean_len(&pool), gen_now() - t_start);

    /* BENCH_MERGE_DIR: load once into that directory and keep it; a later
     * run finding a store there only queries it (A/B runs of two builds on
     * the same data). */
    const char *keep = getenv("BENCH_MERGE_DIR");
    char catalog[4200];
    snprintf(catalog, sizeof catalog, "%s/catalog.mdb", keep ? keep : "");
    int reuse = keep && access(catalog, F_OK) == 0;
    char *dir = keep ? strdup(keep) : gen_tempdir("bench-merge");
    store *st;
    char err[1024];
    store_options opt = { .dir = dir };
    if (store_open(&st, &opt, err, sizeof err)) {
        fprintf(stderr, "bench_merge: store_open: %s\n", err);
        return 1;
    }
    static char names[N_SERIES][32];
    const char *instance[N_SERIES], *service[N_SERIES];
    for (int s = 0; s < N_SERIES; s++) {
        snprintf(names[s], sizeof names[s], "i-%03d", s);
        instance[s] = names[s];
        service[s] = "bench";
    }
    gen_load_ctx lc = { .st = st, .pool = &pool, .profiles = profiles, .n_profiles = N_PROFILES,
                        .n_series = N_SERIES, .instance = instance, .service = service, .base_ms = BASE_MS,
                        .window_ms = WINDOW_MS, .max_pairs = PAIRS, .tag = "bench_merge" };
    double t0 = gen_now();
    if (!reuse && gen_load(&lc, THREADS)) return 1;
    double t_load = gen_now() - t0;
    for (uint32_t i = 0; i < N_PROFILES; i++) gen_profile_free(&profiles[i]);
    free(profiles);
    /* Every bucket is closed (the data is days old): pack them all now, as
     * the store's background compaction would within seconds, so that the
     * query always reads the same thing (segments, as stored data is once
     * its 10 minutes are over) and no compaction runs beside it. */
    uint64_t built = 0;
    double tc = gen_now();
    if (store_compact_run(st, (int64_t)time(NULL) * 1000, &built)) {
        fprintf(stderr, "bench_merge: store_compact_run failed\n");
        return 1;
    }
    tc = gen_now() - tc;
    store_stats stats;
    store_get_stats(st, &stats);
    printf("  load: %.1f s with %d threads (%.2f M pairs/s), %llu call-tree nodes, data %.0f MB; compaction %.1f s "
           "(%llu buckets: every profile packed in segments)\n", t_load, THREADS, (double)pairs / t_load / 1e6,
           (unsigned long long)stats.nodes, stats.db_bytes / 1e6, tc, (unsigned long long)built);

    query_selector sel;
    if (query_selector_parse("{service=\"bench\"}", &sel, err, sizeof err)) {
        fprintf(stderr, "bench_merge: selector: %s\n", err);
        return 1;
    }
    query_times qt, best = { 1e9, 1e9, 1e9, 0, 0, 0 };
    query_merge_parallel(1, UINT64_MAX); /* per core: one thread */
    printf("  querying\n");
    if (run_query(st, &sel, &qt)) return 1; /* warm-up: page cache, allocator */
    double sum_merge = 0;
    for (int i = 0; i < REPS; i++) {
        if (run_query(st, &sel, &qt)) return 1;
        if (qt.merge < best.merge) best.merge = qt.merge;
        if (qt.merge_cpu < best.merge_cpu) best.merge_cpu = qt.merge_cpu;
        if (qt.resolve < best.resolve) best.resolve = qt.resolve;
        best.profiles = qt.profiles;
        best.grand_total = qt.grand_total;
        best.n_nodes = qt.n_nodes;
        sum_merge += qt.merge;
    }
    /* The same query with the merge split across every core. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    query_merge_parallel(0, 0);
    double par_best = 1e9;
    uint64_t par_total = 0;
    for (int i = 0; i < REPS; i++) {
        if (run_query(st, &sel, &qt)) return 1;
        if (qt.merge < par_best) par_best = qt.merge;
        par_total = qt.grand_total;
    }
    query_merge_parallel(0, 1u << 20);
    query_selector_free(&sel);
    if (best.profiles != N_PROFILES) printf("  WARNING: merged %llu profiles, expected %u\n",
                                            (unsigned long long)best.profiles, N_PROFILES);

    double split[3];
    uint64_t split_pairs = 0;
    for (int mode = 0; mode < 3; mode++) {
        split[mode] = 1e9;
        for (int i = 0; i < REPS; i++) {
            double t = split_pass(st, mode, &split_pairs);
            if (t >= 0 && t < split[mode]) split[mode] = t;
        }
    }
    store_close(st);
    if (!keep) gen_rm_rf(dir);
    free(dir);

    double rate = (double)pairs / best.merge;
    double t_memcpy = best_memcpy((size_t)pairs * 12);
    double memcpy_rate = (double)pairs / t_memcpy;
    printf("  query: resolve %.3f ms, merge best %.1f ms (mean %.1f ms) of %d, %llu profiles, %u nodes in the accumulator "
           "(%.1f MB of arrays)\n",
           best.resolve * 1e3, best.merge * 1e3, sum_merge / REPS * 1e3, REPS, (unsigned long long)best.profiles,
           best.n_nodes, best.n_nodes * 16.125 / 1e6);
    printf("  split (reader API, best of %d): block walk %.1f ms; walk + decode and accumulate in partition ids (the "
           "merge's inner loop) %.1f ms; walk + decode to the reader's ids, one pair at a time %.1f ms\n",
           REPS, split[0] * 1e3, split[2] * 1e3, split[1] * 1e3);
    printf("    walk %.0f%%, decode+accumulate %.0f%%, rest of query_merge (fold into the reader's tree, alloc, totals) "
           "%.0f%% of the merge\n",
           100 * split[0] / best.merge, 100 * (split[2] - split[0]) / best.merge,
           100 * (best.merge - split[2]) / best.merge);
    printf("    decode+accumulate: %.0f M pairs/s\n", (double)split_pairs / split[2] / 1e6);
    printf("  memcpy of %.0f MB (pairs x 12 B): %.1f ms = %.1f GB/s = %.0f M pairs/s\n", pairs * 12 / 1e6,
           t_memcpy * 1e3, pairs * 12 / t_memcpy / 1e9, memcpy_rate / 1e6);
    printf("RESULT merge: %.1f M pairs/s per core (query_resolve + query_merge, best of %d, %.1f M pairs in %.1f ms)\n",
           (double)pairs / (best.merge + best.resolve) / 1e6, REPS, pairs / 1e6, (best.merge + best.resolve) * 1e3);
    printf("RESULT merge: %.1f M pairs/s per core in query_merge alone; memcpy limit %.0f M pairs/s; merge/memcpy = %.3f\n",
           rate / 1e6, memcpy_rate / 1e6, rate / memcpy_rate);
    printf("RESULT merge: target >= %.0f M pairs/s per core; measured/target = %.2f\n", TARGET_PAIRS_PER_S / 1e6,
           rate / TARGET_PAIRS_PER_S);
    printf("RESULT merge cpu: %.1f M pairs/s per CPU second of the merging thread (best of %d: %.1f ms), the figure "
           "that holds on a shared machine\n", (double)pairs / best.merge_cpu / 1e6, REPS, best.merge_cpu * 1e3);
    printf("RESULT merge parallel: %ld threads: %.1f ms, %.1f M pairs/s; %.2fx one thread (%.1f ms); totals %s\n", cores,
           par_best * 1e3, (double)pairs / par_best / 1e6, best.merge / par_best, best.merge * 1e3,
           par_total == best.grand_total ? "equal" : "DIFFER");
    printf("  total time %.1f s\n", gen_now() - t_start);
    gen_zipf_free(&zipf);
    gen_pool_free(&pool);
    return 0;
}
