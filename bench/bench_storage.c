/* bench_storage.c — bytes on disk per stored (stack, count) pair.
 *
 * Loads realistic profiles through store_write (several threads, so the
 * writer's group commit batches them), closes the store and measures
 * data.mdb: its allocated size (st_blocks * 512) divided by the number of
 * stored pairs.  Beside it, the same profiles as gzip'd folded text (gzip
 * level 6 of each profile's text, summed), the usual way profiles travel
 * and are archived.  Target: at most 2 bytes per pair.
 *
 * The data: a pool of 20,000 distinct stacks of depth 10..60 sharing
 * prefixes, with Go/C++/Java/Rust-like names of 20..60 bytes (gen.h);
 * 2,000 profiles across 50 series (40 ten-second windows each), each
 * drawing Zipf(1.1)-distributed samples until it holds a uniformly chosen
 * 1,000..3,000 distinct stacks.  Every 5 series (one "service") rank the
 * pool differently.  Fixed seed: the same bytes on every run.
 *
 * After closing the store the benchmark opens data.mdb read-only with LMDB
 * itself to split the bytes between the blocks, the dictionaries and free
 * pages.  That peeks at the storage's private database names, so it is
 * best-effort: if it cannot, only the file figures are printed.
 *
 * gzip of 5.4 GB of folded text would take most of a minute on two cores,
 * so it is measured on every GZIP_EVERY-th profile; per pair it is an
 * average anyway.  The file size is measured on everything. */
#include <lmdb.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <zlib.h>

#include "../storage/store.h"
#include "gen_load.h"

#define SEED UINT64_C(0x666c616d65646231)
#define POOL 20000
#define N_FUNCS 4000
#define DEPTH_MIN 10
#define DEPTH_MAX 60
#define ZIPF_S 1.1
#define N_SERIES 50
#define SERIES_PER_SERVICE 10
#define N_WINDOWS 40
#define PAIRS_MIN 1000
#define PAIRS_MAX 3000
#define THREADS 4
#define WINDOW_MS 10000
#define BASE_MS INT64_C(1795219200000) /* 2026-11-21T00:00:00Z */
#define GZIP_EVERY 10
#define TARGET_BYTES_PER_PAIR 2.0

#define N_PROFILES (N_SERIES * N_WINDOWS)

/* gzip level 6 of buf; answers the compressed size. */
static size_t gzip_size(const char *buf, size_t len, unsigned char **out, size_t *cap)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        fprintf(stderr, "bench_storage: deflateInit2 failed\n");
        exit(1);
    }
    size_t bound = deflateBound(&zs, len);
    if (bound > *cap) {
        *cap = bound;
        *out = gen_xrealloc(*out, bound);
    }
    zs.next_in = (unsigned char *)buf;
    zs.avail_in = (uInt)len;
    zs.next_out = *out;
    zs.avail_out = (uInt)*cap;
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
        fprintf(stderr, "bench_storage: deflate failed\n");
        exit(1);
    }
    size_t n = zs.total_out;
    deflateEnd(&zs);
    return n;
}

typedef struct { uint32_t stack; uint64_t count; } sc_pair;

static int cmp_text(const void *a, const void *b, void *pool)
{
    uint32_t la, lb;
    const char *ta = gen_stack_text(pool, ((const sc_pair *)a)->stack, &la);
    const char *tb = gen_stack_text(pool, ((const sc_pair *)b)->stack, &lb);
    int c = memcmp(ta, tb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

typedef struct {
    const gen_pool *pool;
    const gen_profile *profiles;
    uint64_t pairs, text_bytes, gz_bytes;
    uint32_t n_profiles;
    double seconds;
} gzip_job;

/* Folded text as a collapsing tool writes it (one line per stack, sorted),
 * gzip'd profile by profile. */
static void *gzip_profiles(void *arg)
{
    gzip_job *j = arg;
    double t0 = gen_now();
    char *text = NULL;
    unsigned char *gz = NULL;
    size_t text_cap = 0, gz_cap = 0;
    sc_pair *sorted = gen_xmalloc(PAIRS_MAX * sizeof *sorted);
    gen_profile view = { 0 };
    view.stack = gen_xmalloc(PAIRS_MAX * sizeof *view.stack);
    view.count = gen_xmalloc(PAIRS_MAX * sizeof *view.count);
    view.cap = PAIRS_MAX;
    for (uint32_t i = 0; i < N_PROFILES; i += GZIP_EVERY) {
        const gen_profile *pr = &j->profiles[i];
        for (uint32_t k = 0; k < pr->n; k++) sorted[k] = (sc_pair){ pr->stack[k], pr->count[k] };
        qsort_r(sorted, pr->n, sizeof *sorted, cmp_text, (void *)j->pool);
        for (uint32_t k = 0; k < pr->n; k++) {
            view.stack[k] = sorted[k].stack;
            view.count[k] = sorted[k].count;
        }
        view.n = pr->n;
        size_t len = gen_profile_folded(&view, j->pool, &text, &text_cap);
        j->text_bytes += len;
        j->gz_bytes += gzip_size(text, len, &gz, &gz_cap);
        j->pairs += pr->n;
        j->n_profiles++;
    }
    gen_profile_free(&view);
    free(sorted);
    free(text);
    free(gz);
    j->seconds = gen_now() - t0;
    return NULL;
}

/* Sizes of the stored blocks through the public reader API. */
typedef struct { uint64_t blocks, pairs, value_bytes, raw_bytes; } block_sizes;

static int count_block(const store_block *b, void *arg)
{
    block_sizes *bs = arg;
    bs->blocks++;
    bs->pairs += b->n_pairs;
    bs->value_bytes += b->data_len;
    bs->raw_bytes += b->raw_len;
    return 0;
}

typedef struct {
    int ok;
    unsigned psize;
    uint64_t used_pages, free_pages;
    uint64_t db_pages[6], db_entries[6];
    uint64_t block_value_bytes, blocks;
} lmdb_breakdown;

static const char *const db_names[6] = { "blocks", "rollups", "nodes", "strings", "series", "meta" };

static uint64_t stat_pages(const MDB_stat *ms)
{
    return (uint64_t)ms->ms_branch_pages + ms->ms_leaf_pages + ms->ms_overflow_pages;
}

/* Opens the closed store's data.mdb read-only and measures its databases. */
static void inspect_lmdb(const char *dir, lmdb_breakdown *b)
{
    memset(b, 0, sizeof *b);
    MDB_env *env;
    MDB_txn *txn;
    if (mdb_env_create(&env)) return;
    mdb_env_set_maxdbs(env, 16);
    if (mdb_env_open(env, dir, MDB_RDONLY | MDB_NOLOCK, 0644) || mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) {
        mdb_env_close(env);
        return;
    }
    MDB_envinfo info;
    MDB_stat ms;
    mdb_env_info(env, &info);
    mdb_env_stat(env, &ms);
    b->psize = ms.ms_psize;
    b->used_pages = (uint64_t)info.me_last_pgno + 1;
    /* the free list: values are arrays of page numbers, the first the count */
    MDB_cursor *c;
    MDB_val k, v;
    if (!mdb_cursor_open(txn, 0, &c)) {
        int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
        while (rc == 0) {
            if (v.mv_size >= sizeof(size_t)) {
                size_t n;
                memcpy(&n, v.mv_data, sizeof n);
                b->free_pages += n;
            }
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
        mdb_cursor_close(c);
    }
    for (int i = 0; i < 6; i++) {
        MDB_dbi dbi;
        if (mdb_dbi_open(txn, db_names[i], 0, &dbi) || mdb_stat(txn, dbi, &ms)) goto out;
        b->db_pages[i] = stat_pages(&ms);
        b->db_entries[i] = ms.ms_entries;
        if (i == 0 && !mdb_cursor_open(txn, dbi, &c)) {
            int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
            while (rc == 0) {
                b->block_value_bytes += v.mv_size;
                b->blocks++;
                rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
            }
            mdb_cursor_close(c);
        }
    }
    b->ok = 1;
out:
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t_start = gen_now();
    gen_pool pool;
    gen_pool_make(&pool, SEED, GEN_DEEP, N_FUNCS, POOL, DEPTH_MIN, DEPTH_MAX);
    gen_zipf zipf;
    gen_zipf_make(&zipf, POOL, ZIPF_S);

    /* all profiles up front: what each holds does not depend on threads */
    gen_profile *profiles = gen_xcalloc(N_PROFILES, sizeof *profiles);
    uint32_t *stamp = gen_xcalloc(POOL, sizeof *stamp), *slot = gen_xcalloc(POOL, sizeof *slot);
    gen_rng rng;
    gen_rng_seed(&rng, SEED ^ 0x5a5a);
    uint64_t pairs = 0, samples = 0;
    for (uint32_t i = 0; i < N_PROFILES; i++) {
        uint32_t s = i % N_SERIES, service = s / SERIES_PER_SERVICE;
        uint32_t distinct = PAIRS_MIN + (uint32_t)gen_below(&rng, PAIRS_MAX - PAIRS_MIN + 1);
        gen_profile_zipf(&profiles[i], &pool, &zipf, &rng, distinct, service * 977, stamp, slot, i + 1);
        pairs += profiles[i].n;
        for (uint32_t k = 0; k < profiles[i].n; k++) samples += profiles[i].count[k];
    }
    free(stamp);
    free(slot);
    double t_gen = gen_now() - t_start;
    printf("bench_storage: bytes on disk per stored (stack, count) pair\n");
    printf("  data: %u profiles = %d series x %d windows of %d s, %llu pairs (mean %.0f/profile), %.1f samples/pair\n",
           N_PROFILES, N_SERIES, N_WINDOWS, WINDOW_MS / 1000, (unsigned long long)pairs, (double)pairs / N_PROFILES,
           (double)samples / (double)pairs);
    printf("  stacks: pool of %d distinct, Zipf s=%.1f, depth %d..%d (mean %.1f), %.0f B/stack of text, %d names (%s)\n",
           POOL, ZIPF_S, DEPTH_MIN, DEPTH_MAX, gen_pool_mean_depth(&pool), gen_pool_mean_len(&pool), N_FUNCS,
           "20..60 B");
    printf("  generated in %.2f s (seed %#llx)\n", t_gen, (unsigned long long)SEED);

    char *dir = gen_tempdir("bench-storage");
    store *st;
    char err[1024];
    store_options opt = { .dir = dir };
    if (store_open(&st, &opt, err, sizeof err)) {
        fprintf(stderr, "bench_storage: store_open: %s\n", err);
        return 1;
    }
    static char series_name[N_SERIES][32], service_name[N_SERIES][32];
    const char *instance[N_SERIES], *service[N_SERIES];
    for (int s = 0; s < N_SERIES; s++) {
        snprintf(series_name[s], sizeof series_name[s], "host-%02d", s);
        snprintf(service_name[s], sizeof service_name[s], "svc-%d", s / SERIES_PER_SERVICE);
        instance[s] = series_name[s];
        service[s] = service_name[s];
    }
    gen_load_ctx lc = { .st = st, .pool = &pool, .profiles = profiles, .n_profiles = N_PROFILES,
                        .n_series = N_SERIES, .instance = instance, .service = service, .base_ms = BASE_MS,
                        .window_ms = WINDOW_MS, .max_pairs = PAIRS_MAX, .tag = "bench_storage" };
    double t0 = gen_now();
    if (gen_load(&lc, THREADS)) return 1;
    double t_load = gen_now() - t0;
    store_stats stats;
    store_get_stats(st, &stats);
    block_sizes bs = { 0 };
    store_reader *rd;
    if (store_reader_begin(st, &rd) == STORE_OK) {
        for (uint32_t sid = 1; sid <= store_series_max(rd); sid++)
            store_blocks_scan(rd, sid, INT64_MIN, INT64_MAX, count_block, &bs);
        store_reader_end(rd);
    }
    store_close(st);

    /* the gzip baseline, once the store is closed (no sharing of cores) */
    gzip_job gj = { .pool = &pool, .profiles = profiles };
    gzip_profiles(&gj);

    char path[4200];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    uint64_t allocated = 0, size = 0;
    gen_file_bytes(path, &allocated, &size);
    lmdb_breakdown b;
    inspect_lmdb(dir, &b);
    gen_rm_rf(dir);

    double per_pair = (double)allocated / (double)pairs;
    double gz_per_pair = (double)gj.gz_bytes / (double)gj.pairs;
    printf("  load: %.2f s with %d threads: %.0f profiles/s, %.2f M pairs/s, %llu commits (%.1f profiles/commit)\n",
           t_load, THREADS, N_PROFILES / t_load, (double)pairs / t_load / 1e6, (unsigned long long)stats.commits,
           stats.commits ? (double)N_PROFILES / (double)stats.commits : 0.0);
    printf("  store: %llu series, %llu call-tree nodes (%.1f per pool stack), %llu strings\n",
           (unsigned long long)stats.series, (unsigned long long)stats.nodes, (double)stats.nodes / POOL,
           (unsigned long long)stats.strings);
    printf("  data.mdb: %.2f MB allocated (st_blocks*512), %.2f MB file size\n", allocated / 1e6, size / 1e6);
    if (b.ok) {
        double ps = b.psize;
        printf("  LMDB (%u-byte pages): %llu pages used, of which %llu free (reusable)\n", b.psize,
               (unsigned long long)b.used_pages, (unsigned long long)b.free_pages);
        for (int i = 0; i < 6; i++)
            printf("    %-8s %8llu pages %9.2f MB %7.3f B/pair  (%llu entries)\n", db_names[i],
                   (unsigned long long)b.db_pages[i], b.db_pages[i] * ps / 1e6, b.db_pages[i] * ps / (double)pairs,
                   (unsigned long long)b.db_entries[i]);
        printf("    %-8s %8llu pages %9.2f MB %7.3f B/pair\n", "free", (unsigned long long)b.free_pages,
               b.free_pages * ps / 1e6, b.free_pages * ps / (double)pairs);
        printf("  block values: %llu blocks, %.3f B/pair encoded (zstd'd varints + header), %.0f B/block; "
               "pages hold %.3f B/pair: %.0f%% overhead of page rounding and B-tree\n",
               (unsigned long long)b.blocks, (double)b.block_value_bytes / (double)pairs,
               (double)b.block_value_bytes / (double)(b.blocks ? b.blocks : 1), b.db_pages[0] * ps / (double)pairs,
               100.0 * (b.db_pages[0] * ps - (double)b.block_value_bytes) / (double)b.block_value_bytes);
    } else {
        printf("  (could not open data.mdb read-only to split it by database)\n");
    }
    printf("  blocks (reader API): %llu blocks, %llu pairs; payload before zstd %.3f B/pair, stored value %.3f B/pair "
           "(zstd saves %.0f%%)\n",
           (unsigned long long)bs.blocks, (unsigned long long)bs.pairs, (double)bs.raw_bytes / (double)pairs,
           (double)bs.value_bytes / (double)pairs, 100.0 * (1 - (double)bs.value_bytes / (double)bs.raw_bytes));
    printf("  folded text: %.1f B/pair raw, gzip -6 %.3f B/pair (measured on %u of %u profiles, %.1f MB of text in %.1f s)\n",
           (double)gj.text_bytes / (double)gj.pairs, gz_per_pair, gj.n_profiles, N_PROFILES, gj.text_bytes / 1e6,
           gj.seconds);
    printf("RESULT storage: %.3f bytes/pair on disk (data.mdb allocated / pairs)\n", per_pair);
    if (b.ok)
        printf("RESULT storage: %.3f bytes/pair in blocks (block db pages), %.3f bytes/pair encoded values\n",
               b.db_pages[0] * (double)b.psize / (double)pairs, (double)b.block_value_bytes / (double)pairs);
    printf("RESULT storage: %.3f bytes/pair as gzip'd folded text; store/gzip = %.4f (gzip is %.1fx larger)\n",
           gz_per_pair, per_pair / gz_per_pair, gz_per_pair / per_pair);
    printf("RESULT storage: target <= %.1f bytes/pair; measured/target = %.2f\n", TARGET_BYTES_PER_PAIR,
           per_pair / TARGET_BYTES_PER_PAIR);
    printf("  total time %.1f s\n", gen_now() - t_start);

    for (uint32_t i = 0; i < N_PROFILES; i++) gen_profile_free(&profiles[i]);
    free(profiles);
    free(dir);
    gen_zipf_free(&zipf);
    gen_pool_free(&pool);
    return 0;
}
