/* bench_fleet_round.c — a fleet's hour, then its round of compaction, in
 * process: how much the round maps of the partition file (RssFile) and
 * allocates (RssAnon) at its peak.
 *
 * bench_fleet measures the server over HTTP for minutes, and its RSS peak
 * comes from the rounds of compaction that close a fleet's buckets (every
 * 10 minutes, and every hour the hours' builds, which read every profile
 * of the hour).  On a shared machine a late client backlog inflates that
 * run's memory; this one has no clients: it writes an hour of a fleet's
 * profiles through store_write (N series, a 10 s window each, 500
 * distinct stacks drawn Zipf(1.1) from a pool of 20,000 stacks of depth
 * 10..30, like bench_fleet's compact shape), in 2030 so the store's own
 * compaction (by the wall clock) leaves them alone, then runs
 * store_compact_run as the writer would after the hour, sampling the
 * process's RssFile and RssAnon every 5 ms.
 *
 * Env: BENCH_FLEET_ROUND_SERIES (default 200), BENCH_FLEET_ROUND_WINDOWS
 * (360: an hour).  Prints figures; never passes or fails on them. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "../storage/store.h"
#include "gen.h"

#define SEED UINT64_C(0x666c6565742d726e)
#define BASE_MS INT64_C(1893456000000) /* 2030-01-01T00:00:00Z */
#define WINDOW_MS 10000
#define POOL 20000
#define PAIRS 500
#define THREADS 4

typedef struct { double file, anon; } rss_mib;

static rss_mib read_rss(void)
{
    rss_mib m = { 0, 0 };
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        double v;
        if (sscanf(line, "RssFile: %lf", &v) == 1) m.file = v / 1024;
        else if (sscanf(line, "RssAnon: %lf", &v) == 1) m.anon = v / 1024;
    }
    if (f) fclose(f);
    return m;
}

typedef struct {
    store *st;
    const gen_pool *pool;
    const gen_zipf *zipf;
    uint32_t n_series, n_windows;
    _Atomic uint32_t next;
    _Atomic int failed;
} load_ctx;

static void *load_thread(void *arg)
{
    load_ctx *c = arg;
    gen_profile pr = { 0 };
    uint32_t *stamp = gen_xcalloc(POOL, sizeof *stamp), *slot = gen_xcalloc(POOL, sizeof *slot), tag = 0;
    store_stack *stacks = gen_xmalloc(PAIRS * sizeof *stacks);
    char err[512], inst[32], svc[32];
    for (;;) {
        uint32_t i = atomic_fetch_add(&c->next, 1);
        if (i >= c->n_series * c->n_windows || atomic_load(&c->failed)) break;
        uint32_t s = i % c->n_series, w = i / c->n_series;
        gen_rng r;
        gen_rng_seed(&r, SEED ^ ((uint64_t)i * UINT64_C(0x9e3779b97f4a7c15)));
        /* a service's stacks: the pool shifted by its number */
        gen_profile_zipf(&pr, c->pool, c->zipf, &r, PAIRS, (s % 20) * 997, stamp, slot, ++tag);
        for (uint32_t k = 0; k < pr.n; k++) {
            stacks[k].frames = gen_stack_text(c->pool, pr.stack[k], &stacks[k].len);
            stacks[k].count = pr.count[k];
        }
        snprintf(inst, sizeof inst, "agent-%u", s);
        snprintf(svc, sizeof svc, "svc%u", s % 20);
        store_label labels[3] = { { "instance", inst }, { "service", svc }, { "type", "cpu" } };
        int64_t from = BASE_MS + (int64_t)w * WINDOW_MS;
        store_profile sp = { .labels = labels, .n_labels = 3, .from_ms = from, .until_ms = from + WINDOW_MS,
                             .rate = 100, .unit = "samples", .stacks = stacks, .n_stacks = pr.n };
        if (store_write(c->st, &sp, NULL, err, sizeof err)) {
            fprintf(stderr, "bench_fleet_round: store_write: %s\n", err);
            atomic_store(&c->failed, 1);
        }
    }
    gen_profile_free(&pr);
    free(stamp);
    free(slot);
    free(stacks);
    return NULL;
}

typedef struct {
    _Atomic int stop;
    rss_mib peak, at_start;
    double peak_total;
} sampler;

static void *sample_thread(void *arg)
{
    sampler *s = arg;
    while (!atomic_load(&s->stop)) {
        rss_mib m = read_rss();
        if (m.file > s->peak.file) s->peak.file = m.file;
        if (m.anon > s->peak.anon) s->peak.anon = m.anon;
        if (m.file + m.anon > s->peak_total) s->peak_total = m.file + m.anon;
        usleep(5000);
    }
    return NULL;
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : def;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint32_t n_series = (uint32_t)env_long("BENCH_FLEET_ROUND_SERIES", 200);
    uint32_t n_windows = (uint32_t)env_long("BENCH_FLEET_ROUND_WINDOWS", 360);
    if (!n_series || !n_windows || n_windows > 360) {
        fprintf(stderr, "bench_fleet_round: bad BENCH_FLEET_ROUND_* settings (windows: 1..360)\n");
        return 2;
    }
    gen_pool pool;
    gen_pool_make(&pool, SEED, GEN_COMPACT, 2000, POOL, 10, 30);
    gen_zipf zipf;
    gen_zipf_make(&zipf, POOL, 1.1);
    char *dir = gen_tempdir("bench-fleet-round");
    store *st;
    char err[1024];
    store_options opt = { .dir = dir, .writers = 1 };
    if (store_open(&st, &opt, err, sizeof err)) {
        fprintf(stderr, "bench_fleet_round: store_open: %s\n", err);
        return 1;
    }
    printf("bench_fleet_round: %u series x %u windows of 10 s, %d distinct stacks a profile (pool %d, Zipf 1.1), "
           "one writer\n", n_series, n_windows, PAIRS, POOL);
    load_ctx lc = { .st = st, .pool = &pool, .zipf = &zipf, .n_series = n_series, .n_windows = n_windows };
    pthread_t th[THREADS];
    double t0 = gen_now();
    for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, load_thread, &lc);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    if (atomic_load(&lc.failed)) return 1;
    double t_load = gen_now() - t0;
    store_stats s0;
    store_get_stats(st, &s0);
    /* what the writes left mapped goes at the first step anyway: start
     * from a step that finds nothing closed yet */
    uint64_t built = 0;
    if (store_compact_run(st, BASE_MS, &built)) return 1;
    rss_mib before = read_rss();
    printf("  load: %.1f s, %llu nodes, files %.1f MB; before the round: RssFile %.1f MiB, RssAnon %.1f MiB\n", t_load,
           (unsigned long long)s0.nodes, s0.db_bytes / 1e6, before.file, before.anon);

    sampler sm = { .at_start = before };
    pthread_t sth;
    pthread_create(&sth, NULL, sample_thread, &sm);
    t0 = gen_now();
    int64_t after_hour = BASE_MS + (int64_t)n_windows * WINDOW_MS + 3600 * 1000 + 120000;
    store_status ss = store_compact_run(st, after_hour, &built);
    double t_round = gen_now() - t0;
    atomic_store(&sm.stop, 1);
    pthread_join(sth, NULL);
    rss_mib end = read_rss();
    if (ss) {
        fprintf(stderr, "bench_fleet_round: store_compact_run failed\n");
        return 1;
    }
    store_stats s1;
    store_get_stats(st, &s1);
    printf("  round: %llu buckets built in %.1f s; files %.1f MB after\n", (unsigned long long)built, t_round,
           s1.db_bytes / 1e6);
    printf("RESULT fleet round: peak during the round RssFile %.1f MiB (+%.1f), RssAnon %.1f MiB (+%.1f), both %.1f "
           "MiB; after it file %.1f, anon %.1f\n",
           sm.peak.file, sm.peak.file - before.file, sm.peak.anon, sm.peak.anon - before.anon, sm.peak_total, end.file,
           end.anon);
    store_close(st);
    gen_rm_rf(dir);
    free(dir);
    gen_zipf_free(&zipf);
    gen_pool_free(&pool);
    return 0;
}
