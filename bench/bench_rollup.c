/* bench_rollup.c — fast long ranges: a day of a service with 100 instances
 * pushing every 10 s, about 300 distinct stacks a profile, loaded through
 * the storage API; then the warm merge time (query_resolve + query_merge,
 * best of 3) over the last 1 h, 6 h and 24 h, with rollups and with rollups
 * disabled in the same run, and their ratio.  Target: 24 h in at most
 * 500 ms warm, and time growing far slower than the range.
 *
 * Env: BENCH_ROLLUP_HOURS (default 24), BENCH_ROLLUP_INSTANCES (default
 * 100), to try smaller days quickly. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../query/query.h"
#include "../storage/store.h"
#include "gen.h"

#define STACKS 300        /* distinct stacks in a profile */
#define POOL 1500         /* distinct stacks of the service */
#define WINDOW_S 10

static int hours = 24, instances = 100;
static const int64_t base_ms = 1795200000000LL; /* a whole hour */

typedef struct {
    store *st;
    char **pool;          /* stack texts */
    int first, step;      /* instances first, first+step, ... */
    uint64_t pairs;
} loader;

/* The pool: a service's call tree, stacks of depth 8..24 sharing prefixes. */
static char **make_pool(gen_rng *rng)
{
    char **pool = gen_xmalloc(POOL * sizeof *pool);
    for (int i = 0; i < POOL; i++) {
        char buf[2048];
        size_t len = (size_t)snprintf(buf, sizeof buf, "main;server::run;handler_%d", (int)gen_below(rng, 12));
        int depth = 8 + (int)gen_below(rng, 17);
        for (int d = 3; d < depth; d++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, ";pkg%d::fn_%d_%d", d % 7,
                                    (int)gen_below(rng, 4 + d * 2), d);
        pool[i] = strdup(buf);
    }
    return pool;
}

static void *load(void *arg)
{
    loader *l = arg;
    gen_rng rng;
    gen_rng_seed(&rng, 0x726f6c6cu + (uint64_t)l->first);
    store_stack stacks[STACKS];
    int64_t windows = (int64_t)hours * 3600 / WINDOW_S;
    for (int inst = l->first; inst < instances; inst += l->step) {
        char name[16];
        snprintf(name, sizeof name, "i-%03d", inst);
        store_label labels[3] = { { "instance", name }, { "service", "api" }, { "type", "cpu" } };
        /* Each instance draws its ~300 stacks from the pool, mostly the
         * same ones from window to window. */
        int mine[STACKS];
        for (int s = 0; s < STACKS; s++) mine[s] = (int)gen_below(&rng, POOL);
        for (int64_t w = 0; w < windows; w++) {
            if (gen_below(&rng, 10) == 0) mine[gen_below(&rng, STACKS)] = (int)gen_below(&rng, POOL);
            for (int s = 0; s < STACKS; s++)
                stacks[s] = (store_stack){ l->pool[mine[s]], (uint32_t)strlen(l->pool[mine[s]]), 1 + gen_below(&rng, 9) };
            int64_t from = base_ms + w * WINDOW_S * 1000;
            uint32_t leaves[STACKS]; /* as the server does, off the writer thread */
            uint64_t token = store_resolve(l->st, labels, 3, from, stacks, STACKS, leaves);
            store_profile p = { labels, 3, from, from + WINDOW_S * 1000, 99, "samples", stacks, STACKS, leaves, token, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
            store_prep *prep = store_prepare(&p);
            p.prep = prep;
            char err[256];
            int failed = store_write(l->st, &p, NULL, err, sizeof err) != STORE_OK;
            store_prep_free(prep);
            if (failed) {
                fprintf(stderr, "bench_rollup: store_write: %s\n", err);
                exit(1);
            }
            l->pairs += STACKS;
        }
    }
    return NULL;
}

/* Best of 3 warm merges of api{} over [from, until); *total for checking. */
static double merge_ms(store *st, int64_t from, int64_t until, int rollups, uint64_t *total, uint64_t *profiles)
{
    double best = 1e18;
    for (int rep = 0; rep < 3; rep++) {
        store_reader *r;
        query_selector sel;
        query_series_set set;
        query_tree t;
        char err[256];
        if (store_reader_begin(st, &r) || query_selector_parse("api{}", &sel, err, sizeof err)) exit(1);
        store_reader_use_rollups(r, rollups);
        double t0 = gen_now();
        if (query_resolve(r, &sel, from, until, &set, err, sizeof err) ||
            query_merge(r, &set, from, until, &t, err, sizeof err)) {
            fprintf(stderr, "bench_rollup: %s\n", err);
            exit(1);
        }
        double ms = (gen_now() - t0) * 1e3;
        if (ms < best) best = ms;
        *total = t.grand_total;
        *profiles = t.profiles;
        query_tree_free(&t);
        query_series_set_free(&set);
        query_selector_free(&sel);
        store_reader_end(r);
    }
    return best;
}

int main(void)
{
    if (getenv("BENCH_ROLLUP_HOURS")) hours = atoi(getenv("BENCH_ROLLUP_HOURS"));
    if (getenv("BENCH_ROLLUP_INSTANCES")) instances = atoi(getenv("BENCH_ROLLUP_INSTANCES"));
    if (hours < 1 || instances < 1) return 2;
    char *dir = gen_tempdir("rollup");
    store *st;
    char err[256];
    store_options opt = { .dir = dir };
    if (store_open(&st, &opt, err, sizeof err)) {
        fprintf(stderr, "bench_rollup: %s\n", err);
        return 1;
    }
    gen_rng rng;
    gen_rng_seed(&rng, 0x666c616d65646233ULL);
    char **pool = make_pool(&rng);
    printf("bench_rollup: %d instances pushing every %d s for %d h, %d stacks a profile (pool %d, depth 8..24)\n",
           instances, WINDOW_S, hours, STACKS, POOL);
    double t0 = gen_now();
    enum { THREADS = 32 }; /* many waiting writers: large group commits */
    loader l[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        l[i] = (loader){ st, pool, i, THREADS, 0 };
        pthread_create(&th[i], NULL, load, &l[i]);
    }
    uint64_t pairs = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        pairs += l[i].pairs;
    }
    double load_s = gen_now() - t0;
    uint64_t profiles = (uint64_t)instances * (uint64_t)hours * 3600 / WINDOW_S;
    int64_t end = base_ms + (int64_t)hours * 3600 * 1000;
    /* Rollups are built once their bucket has closed, in the background;
     * here all at once, as they would be a minute after the last window. */
    double t1 = gen_now();
    uint64_t built = 0;
    if (store_compact_run(st, end + 120 * 1000, &built)) {
        fprintf(stderr, "bench_rollup: compaction failed\n");
        return 1;
    }
    double compact_s = gen_now() - t1;
    store_stats stats;
    store_get_stats(st, &stats);
    printf("  load: %llu profiles, %.1f M pairs in %.1f s (%.0f profiles/s); then %llu rollup buckets built in %.1f s "
           "(%.0f profiles/s for both); data %.0f MB\n",
           (unsigned long long)profiles, pairs / 1e6, load_s, profiles / load_s, (unsigned long long)built, compact_s,
           profiles / (load_s + compact_s), stats.db_bytes / 1e6);

    const int spans[] = { 1, 6, 24 };
    printf("  %-6s %12s %12s %8s %14s %10s\n", "range", "rollups ms", "raw ms", "ratio", "total equal", "profiles");
    for (int i = 0; i < 3; i++) {
        if (spans[i] > hours) continue;
        /* The last N hours, ending mid-minute: edges exercise finer levels. */
        int64_t until = end - 25 * 1000, from = until - (int64_t)spans[i] * 3600 * 1000;
        uint64_t t_on, t_off, p_on, p_off;
        merge_ms(st, from, until, 1, &t_on, &p_on); /* warm the cache */
        double on = merge_ms(st, from, until, 1, &t_on, &p_on);
        double off = merge_ms(st, from, until, 0, &t_off, &p_off);
        printf("  %3d h  %12.1f %12.1f %7.1fx %14s %10llu\n", spans[i], on, off, off / on,
               t_on == t_off && p_on == p_off ? "yes" : "NO", (unsigned long long)p_on);
        printf("RESULT rollup %d h: %.1f ms with rollups, %.1f ms raw, raw/rollups = %.1f\n", spans[i], on, off,
               off / on);
        if (spans[i] == 24)
            printf("RESULT rollup: target 24 h <= 500 ms warm; measured/target = %.3f\n", on / 500.0);
    }
    store_close(st);
    gen_rm_rf(dir);
    for (int i = 0; i < POOL; i++) free(pool[i]);
    free(pool);
    return 0;
}
