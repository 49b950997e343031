/* bench_churn.c — a month of build churn under retention: memory, open
 * time and disk follow what is kept.
 *
 * Issue 9: "10 M distinct stacks pushed over a simulated month of
 * partitions with retention at a week; prints RSS, open time and
 * data-directory size at each step.  Targets: RSS <= 200 MiB at the end,
 * open <= 200 ms, data directory within 10 % of the live partitions' own
 * size."
 *
 * In-process, through the storage API (store_open, store_write,
 * store_compact_run, store_retention_run, store_close), like bench_storage:
 * a store with 1-day partitions and 7 days of retention receives 30
 * simulated days.  Each day's profiles carry mostly NEW stacks, as build
 * churn produces: unsymbolized "libjvm.so+0x1a2b30" frames whose addresses
 * move with every day's build, and JIT names ("LambdaForm$MH/0x...",
 * "LazyCompile:*...", "JIT_0x...") that never repeat.  BENCH_CHURN_STACKS
 * distinct stacks in all (default 10,000,000): a stable set of min(20,000,
 * 10 %) symbolized stacks seen every day, and the rest split over the days,
 * each day's new stacks never seen before or after.
 *
 * A day: its new stacks in blocks of 2,000 consecutive ones (which share
 * prefixes, like one build's call tree), each block pushed twice, in two
 * consecutive 10 s windows of one of 16 instances, with 200 of the stable
 * stacks added to each profile (so ~91 % of a profile's stacks are new that
 * day).  Windows are spread over the day, 4 writer threads.  Then, as a
 * running server would by then have done in the background:
 * store_compact_run ten minutes into the next day (rollups of the closed
 * buckets) and store_retention_run at the day's end (partitions older than
 * 7 days go).
 *
 * Series churn: each day also BENCH_CHURN_PIDS (default 2,000) series that
 * live that day only (labels build and pid, as short-lived processes and
 * deploys give), one small profile each.  Their catalog entries should go
 * with their last partition: the catalog's size (series, bytes in memory,
 * catalog.mdb) is printed each day and compared with the baseline's.
 *
 * At each day the benchmark prints the process RSS (RssAnon, RssFile of
 * /proc/self/status, and malloc's bytes in use), the writer's maps
 * (store_get_stats dict_memory), the data directory's allocated bytes (every
 * file: catalog, partitions, -lock files, LOCK), the live partitions' own
 * size (the partition files present + catalog.mdb) and their ratio.  Every
 * BENCH_CHURN_REOPEN_EVERY days (default 5, and after the last day) it
 * closes and reopens the store, timing each ("open time"), and prints the
 * RSS after the reopen.  Between reopens the writer keeps its maps as a
 * long-running server does (the 2 partitions written last), so the RSS
 * "at the end" is taken after the last day, before the last close.
 *
 * Baseline, in the same run: a fresh store, in a child process of this
 * binary (so its RSS is its own), receives only the last 7 days (same
 * generator, same seeds), compacted and measured the same way; the churned
 * directory's size over the baseline's is the size figure (target 1.10).
 *
 * The simulated month starts 2030-01-01T00:00Z, in the future of the wall
 * clock, so the store's own background retention and compaction (by the
 * wall clock) never touch it: the benchmark runs both itself.
 *
 * Env: BENCH_CHURN_STACKS (default 10000000; 1000000 is the short mode),
 * BENCH_CHURN_DAYS (30), BENCH_CHURN_RETENTION_DAYS (7),
 * BENCH_CHURN_REOPEN_EVERY (5), BENCH_CHURN_PIDS (2000).  Never passes or fails on a figure; exits
 * non-zero only when something could not run. */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../storage/store.h"
#include "dirsize.h"
#include "gen.h"

#define SEED UINT64_C(0x636875726e313021)
#define DAY_MS INT64_C(86400000)
#define BASE_MS INT64_C(1893456000000) /* 2030-01-01T00:00:00Z */
#define WINDOW_MS 10000
#define THREADS 4
#define N_INSTANCES 16
#define BLOCK 2000           /* new stacks a profile */
#define REPEATS 2            /* profiles a block (consecutive windows) */
#define STABLE_PER 200       /* stable stacks a profile */
#define STABLE_MAX 20000
#define FANOUT 12            /* children of a group in the day's call tree */
#define MAX_LEVELS 12
#define N_FUNCS 2000         /* symbolized names (stable across days) */
#define STABLE_SALT UINT32_C(0xffffffff)
#define MAX_STACK_TEXT 4096
#define TARGET_RSS_MIB 200.0
#define TARGET_OPEN_MS 200.0
#define TARGET_SIZE_RATIO 1.10

/* ---- the generator: stack i of a day, from hashes alone ---------------- */

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t x = a * UINT64_C(0x9e3779b97f4a7c15) ^ (b + UINT64_C(0x632be59bd9b4e019) + (a << 6) + (a >> 2));
    return gen_splitmix(&x);
}

static gen_funcs funcs;

static const char *const roots[] = {
    "clone3;start_thread;thread_native_entry;JavaThread::run;JavaCalls::call_helper",
    "_start;__libc_start_main;main;node::Start;uv_run",
    "clone3;start_thread;worker_thread_main",
    "clone3;start_thread;pythread_wrapper;PyEval_EvalFrameDefault",
    "_start;__libc_start_main;main;app::Server::run;ev_run",
    "clone3;start_thread;tokio::runtime::scheduler::multi_thread::worker::run",
};
static const char *const libs[] = {
    "libjvm.so", "libv8.so", "libpython3.11.so.1.0", "libapp.so", "libcrypto.so.3", "libstdc++.so.6",
    "libnode.so.108", "libruby.so.3.2",
};
#define ADDRS_PER_LIB 20000  /* distinct code addresses of a library a day */

/* Writes the frames of group g at level l (1..levels; levels is the leaf)
 * for the day's salt into o; answers the bytes written (with a leading
 * ';'). */
static size_t group_frames(char *o, uint32_t salt, int l, int levels, uint64_t g)
{
    uint64_t h = mix(mix(salt, (uint64_t)l), g);
    int leaf = l == levels;
    int nf = leaf ? 1 + (int)(h % 2) : 2 + (int)(h % 3);
    size_t n = 0;
    for (int k = 0; k < nf; k++) {
        uint64_t hk = mix(h, (uint64_t)k + 1);
        o[n++] = ';';
        int kind = (int)(hk % 10);
        if (leaf && k == nf - 1) kind = 10 + (int)(hk % 3); /* unique per stack */
        else if (l == 1) kind = 9;                           /* symbolized, stable */
        if (kind >= 8 && kind <= 9) {
            uint32_t f = (uint32_t)((hk >> 8) % N_FUNCS);
            memcpy(o + n, funcs.name[f], funcs.len[f]);
            n += funcs.len[f];
            continue;
        }
        uint64_t x = hk >> 4;
        int w;
        if (kind <= 4) { /* unsymbolized: the day's build of the library */
            uint32_t lib = (uint32_t)(x % 8);
            uint64_t base = (mix(salt, lib) & 0xfff) << 12;
            w = sprintf(o + n, "%s+0x%llx", libs[lib], (unsigned long long)(base + ((x >> 3) % ADDRS_PER_LIB) * 48));
        } else if (kind == 5 || kind == 10) {
            w = sprintf(o + n, "java.lang.invoke.LambdaForm$MH/0x%016llx.invoke",
                        (unsigned long long)(mix(salt, x) & UINT64_C(0xffffffffff)));
        } else if (kind == 6 || kind == 11) {
            w = sprintf(o + n, "LazyCompile:*%s /app/dist/bundle.%08x.js:%u", funcs.name[x % N_FUNCS],
                        (unsigned)(mix(salt, 7) & 0xffffffff), (unsigned)((x >> 12) % 100000));
        } else {
            w = sprintf(o + n, "JIT_0x%012llx", (unsigned long long)(mix(x, salt) & UINT64_C(0xffffffffffff)));
        }
        n += (size_t)w;
    }
    return n;
}

/* Stack i of a set of n (a day's new stacks, or the stable ones): a path
 * of groups i / FANOUT^(levels-l), level 1 the coarsest; consecutive
 * stacks share their prefix, which the generator reuses. */
typedef struct {
    uint32_t salt;
    int levels;
    uint64_t key[MAX_LEVELS + 1];   /* [0] the root chain, [l] group at level l */
    size_t end[MAX_LEVELS + 1];     /* text length through key l */
    int valid;                      /* keys 0..valid-1 are in text */
    char text[MAX_STACK_TEXT];
} stack_gen;

static int levels_for(uint64_t n)
{
    int l = 1;
    for (uint64_t span = FANOUT; span < n && l < MAX_LEVELS; span *= FANOUT) l++;
    return l;
}

static void stack_gen_init(stack_gen *g, uint32_t salt, uint64_t n)
{
    g->salt = salt;
    g->levels = levels_for(n);
    g->valid = 0;
}

static const char *stack_text(stack_gen *g, uint64_t i, uint32_t *len)
{
    uint64_t key[MAX_LEVELS + 1];
    uint64_t div = 1;
    for (int l = g->levels; l >= 1; l--) {
        key[l] = i / div;
        div *= FANOUT;
    }
    key[0] = mix(g->salt == STABLE_SALT ? 1 : 2, key[1]) % (sizeof roots / sizeof *roots);
    int from = 0;
    while (from < g->valid && from <= g->levels && key[from] == g->key[from]) from++;
    size_t n = from ? g->end[from - 1] : 0;
    for (int l = from; l <= g->levels; l++) {
        if (l == 0) {
            n = strlen(roots[key[0]]);
            memcpy(g->text, roots[key[0]], n);
        } else {
            n += group_frames(g->text + n, g->salt, l, g->levels, key[l]);
        }
        g->key[l] = key[l];
        g->end[l] = n;
    }
    g->valid = g->levels + 1;
    *len = (uint32_t)n;
    return g->text;
}

/* ---- a day's profiles ---------------------------------------------------- */

typedef struct {
    uint64_t stacks;          /* distinct in all */
    uint64_t stable;          /* of which stable */
    int days, retention_days, reopen_every;
    uint32_t pids;            /* short-lived series a day (BENCH_CHURN_PIDS) */
} churn_cfg;

static uint64_t day_new(const churn_cfg *c, int day)
{
    uint64_t rest = c->stacks - c->stable, per = rest / (uint64_t)c->days;
    return per + ((uint64_t)day < rest % (uint64_t)c->days ? 1 : 0);
}

static uint32_t day_profiles(const churn_cfg *c, int day)
{
    return (uint32_t)((day_new(c, day) + BLOCK - 1) / BLOCK) * REPEATS;
}

typedef struct {
    const churn_cfg *cfg;
    store *st;
    int day;
    uint32_t n_profiles;
    _Atomic uint32_t next;
    _Atomic int failed;
    _Atomic uint64_t pairs;
} day_job;

/* A worker's buffers: mmap'd apart from malloc's heap, and given back
 * (MADV_DONTNEED) before each measurement, so the RSS figures are the
 * store's, not the benchmark's. */
typedef struct {
    char *text;
    size_t text_cap;
    store_stack *stacks;
    size_t stacks_cap;
    stack_gen gnew, gstable;
} worker_buf;

static worker_buf workers[THREADS];

static void *xmmap(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "bench_churn: mmap of %zu bytes failed\n", n);
        exit(1);
    }
    return p;
}

static void workers_init(void)
{
    for (int t = 0; t < THREADS; t++) {
        workers[t].text_cap = (size_t)(BLOCK + STABLE_PER) * MAX_STACK_TEXT;
        workers[t].text = xmmap(workers[t].text_cap);
        workers[t].stacks_cap = BLOCK + STABLE_PER;
        workers[t].stacks = xmmap(workers[t].stacks_cap * sizeof(store_stack));
    }
}

static void workers_release(void)
{
    for (int t = 0; t < THREADS; t++) {
        madvise(workers[t].text, workers[t].text_cap, MADV_DONTNEED);
        madvise(workers[t].stacks, workers[t].stacks_cap * sizeof(store_stack), MADV_DONTNEED);
    }
}

typedef struct { day_job *job; int t; } worker_arg;

static void *day_worker(void *arg)
{
    worker_arg *wa = arg;
    day_job *j = wa->job;
    worker_buf *w = &workers[wa->t];
    const churn_cfg *c = j->cfg;
    uint64_t n_new = day_new(c, j->day);
    uint32_t salt = (uint32_t)mix(SEED, (uint64_t)j->day + 1);
    if (salt == STABLE_SALT) salt--;
    stack_gen_init(&w->gnew, salt, n_new);
    stack_gen_init(&w->gstable, STABLE_SALT, c->stable);
    uint32_t n_blocks = j->n_profiles / REPEATS, per_instance = (n_blocks + N_INSTANCES - 1) / N_INSTANCES;
    int64_t slot_ms = DAY_MS / per_instance, day_ms = BASE_MS + (int64_t)j->day * DAY_MS;
    char err[512], inst[32];
    for (;;) {
        uint32_t p = atomic_fetch_add(&j->next, 1);
        if (p >= j->n_profiles || atomic_load(&j->failed)) break;
        uint32_t b = p / REPEATS, rep = p % REPEATS, s = b % N_INSTANCES, slot = b / N_INSTANCES;
        uint64_t lo = (uint64_t)b * BLOCK, hi = lo + BLOCK < n_new ? lo + BLOCK : n_new;
        size_t n = 0, used = 0;
        for (uint64_t i = lo; i < hi; i++) {
            uint32_t len;
            const char *t = stack_text(&w->gnew, i, &len);
            memcpy(w->text + used, t, len);
            w->stacks[n++] = (store_stack){ w->text + used, len, 1 + mix(mix(salt, i), rep) % 7 };
            used += len;
        }
        uint64_t s0 = mix(mix(salt, b), rep) % c->stable;
        for (uint32_t k = 0; k < STABLE_PER && k < c->stable; k++) {
            uint64_t i = (s0 + k) % c->stable;
            uint32_t len;
            const char *t = stack_text(&w->gstable, i, &len);
            memcpy(w->text + used, t, len);
            w->stacks[n++] = (store_stack){ w->text + used, len, 5 + mix(mix(salt, i), rep + 7) % 200 };
            used += len;
        }
        snprintf(inst, sizeof inst, "i-%02u", s);
        store_label labels[3] = { { "instance", inst }, { "service", "churn" }, { "type", "cpu" } };
        int64_t from = day_ms + (int64_t)slot * slot_ms + (int64_t)s * (slot_ms / N_INSTANCES) +
                       (int64_t)rep * WINDOW_MS;
        store_profile sp = { .labels = labels, .n_labels = 3, .from_ms = from, .until_ms = from + WINDOW_MS,
                             .rate = 100, .unit = "samples", .stacks = w->stacks, .n_stacks = n };
        if (store_write(j->st, &sp, NULL, err, sizeof err)) {
            fprintf(stderr, "bench_churn: store_write (day %d): %s\n", j->day + 1, err);
            atomic_store(&j->failed, 1);
            break;
        }
        atomic_fetch_add(&j->pairs, n);
    }
    return NULL;
}

/* ---- series churn: short-lived series, like pid or build labels ---------- */

typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    uint32_t left;
    int failed;
} pid_wait;

static void pid_done(void *ctx, store_status ss, uint32_t series_id, const char *err)
{
    (void)series_id;
    pid_wait *w = ctx;
    pthread_mutex_lock(&w->m);
    if (ss) {
        fprintf(stderr, "bench_churn: a pid series' write failed: %s\n", err);
        w->failed = 1;
    }
    if (!--w->left) pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
}

/* The day's c->pids series that live one day only: labels {build, pid,
 * service=churn-pids, type=cpu}, pid unique over the month, one small
 * profile each (3 stable stacks), all queued at once so they share group
 * commits.  Answers -1 when a write failed. */
static int run_pids(const churn_cfg *c, store *st, int day)
{
    if (!c->pids) return 0;
    uint32_t n = c->pids;
    char (*pid)[16] = malloc((size_t)n * sizeof *pid);
    store_label (*labels)[4] = malloc((size_t)n * sizeof *labels);
    store_profile *sp = malloc((size_t)n * sizeof *sp);
    static const char *const text[3] = { "main;run;work_a", "main;run;work_b", "main;idle" };
    store_stack stacks[3];
    for (int k = 0; k < 3; k++) stacks[k] = (store_stack){ text[k], (uint32_t)strlen(text[k]), (uint64_t)k + 1 };
    char build[16];
    snprintf(build, sizeof build, "b%03d", day + 1);
    pid_wait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, n, 0 };
    int64_t day_ms = BASE_MS + (int64_t)day * DAY_MS;
    if (!pid || !labels || !sp) {
        fprintf(stderr, "bench_churn: out of memory\n");
        exit(1);
    }
    for (uint32_t i = 0; i < n; i++) {
        snprintf(pid[i], sizeof pid[i], "%u", (unsigned)day * n + i + 1);
        labels[i][0] = (store_label){ "build", build };
        labels[i][1] = (store_label){ "pid", pid[i] };
        labels[i][2] = (store_label){ "service", "churn-pids" };
        labels[i][3] = (store_label){ "type", "cpu" };
        int64_t from = day_ms + (int64_t)(i % 8000) * WINDOW_MS;
        sp[i] = (store_profile){ .labels = labels[i], .n_labels = 4, .from_ms = from, .until_ms = from + WINDOW_MS,
                                 .rate = 100, .unit = "samples", .stacks = stacks, .n_stacks = 3 };
        if (store_write_async(st, &sp[i], pid_done, &w)) {
            fprintf(stderr, "bench_churn: store_write_async refused a pid series\n");
            exit(1);
        }
    }
    pthread_mutex_lock(&w.m);
    while (w.left) pthread_cond_wait(&w.c, &w.m);
    pthread_mutex_unlock(&w.m);
    free(pid);
    free(labels);
    free(sp);
    return w.failed ? -1 : 0;
}

typedef struct {
    uint32_t profiles;
    uint64_t pairs, built, deleted;
    double write_s;
} day_result;

/* Writes a day, builds its rollups, runs retention at its end. */
static int run_day(const churn_cfg *c, store *st, int day, day_result *r)
{
    day_job j = { .cfg = c, .st = st, .day = day, .n_profiles = day_profiles(c, day) };
    pthread_t th[THREADS];
    worker_arg wa[THREADS];
    double t0 = gen_now();
    for (int t = 0; t < THREADS; t++) {
        wa[t] = (worker_arg){ &j, t };
        pthread_create(&th[t], NULL, day_worker, &wa[t]);
    }
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    if (run_pids(c, st, day)) return -1;
    r->write_s = gen_now() - t0;
    r->profiles = j.n_profiles + c->pids;
    r->pairs = atomic_load(&j.pairs) + 3 * (uint64_t)c->pids;
    if (atomic_load(&j.failed)) return -1;
    int64_t end = BASE_MS + (int64_t)(day + 1) * DAY_MS;
    if (store_compact_run(st, end + 10 * 60000, &r->built)) {
        fprintf(stderr, "bench_churn: store_compact_run failed (day %d)\n", day + 1);
        return -1;
    }
    if (store_retention_run(st, end, &r->deleted)) {
        fprintf(stderr, "bench_churn: store_retention_run failed (day %d)\n", day + 1);
        return -1;
    }
    workers_release();
    return 0;
}

/* ---- measuring ---------------------------------------------------------- */

typedef struct { double rss, anon, file, hwm; } mem_kb;

static void read_mem(mem_kb *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        double v;
        if (sscanf(line, "VmRSS: %lf", &v) == 1) m->rss = v;
        else if (sscanf(line, "RssAnon: %lf", &v) == 1) m->anon = v;
        else if (sscanf(line, "RssFile: %lf", &v) == 1) m->file = v;
        else if (sscanf(line, "VmHWM: %lf", &v) == 1) m->hwm = v;
    }
    if (f) fclose(f);
}

/* malloc's bytes in use, and what it holds from the system (arenas +
 * mmap'd chunks), over all arenas. */
static void heap_mib(double *in_use, double *held)
{
    struct mallinfo2 mi = mallinfo2();
    *in_use = (double)(mi.uordblks + mi.hblkhd) / 1048576.0;
    *held = (double)(mi.arena + mi.hblkhd) / 1048576.0;
}

/* all: every file of the data directory, allocated; live: catalog.mdb and
 * the partition files present (dirsize.h's walk). */
typedef struct { uint64_t all, live, catalog; uint32_t parts; } dir_bytes;

static void measure_dir_bytes(const char *dir, dir_bytes *d)
{
    dir_sizes s;
    measure_dir(dir, &s);
    d->all = dir_sizes_all(&s);
    d->live = dir_sizes_live(&s);
    d->parts = s.n_parts;
    d->catalog = s.catalog_size;
}

/* What the live partitions hold, by database: each file opened read-only
 * with LMDB once the store is closed (dirsize.h). */
static void print_split(const char *dir)
{
    lmdb_sum s = { 0 };
    inspect_parts(dir, 0, &s);
    if (!s.files || s.failed) {
        printf("  (could not split the partition files by database)\n");
        return;
    }
    printf("  the %d live partitions by database (LMDB pages of %u bytes): ", s.files, s.psize);
    uint64_t named = 0;
    for (int i = 0; i < DIRSIZE_MAX_DBS; i++) {
        named += s.db_pages[i];
        printf("%s%s %.1f MB (%llu entries)", i ? ", " : "", dirsize_part_dbs[i], s.db_pages[i] * (double)s.psize / 1e6,
               (unsigned long long)s.db_entries[i]);
    }
    printf(", free %.1f MB, other %.1f MB\n", s.free_pages * (double)s.psize / 1e6,
           (s.used_pages > named + s.free_pages ? s.used_pages - named - s.free_pages : 0) * (double)s.psize / 1e6);
}

static double mib(double bytes) { return bytes / 1048576.0; }

static store *open_store(const churn_cfg *c, const char *dir, double *ms)
{
    store *st;
    char err[1024];
    store_options opt = { .dir = dir, .partition_ms = DAY_MS, .retention_ms = (int64_t)c->retention_days * DAY_MS,
                          .retention_every_ms = 3600 * 1000 };
    double t0 = gen_now();
    if (store_open(&st, &opt, err, sizeof err)) {
        fprintf(stderr, "bench_churn: store_open: %s\n", err);
        return NULL;
    }
    if (ms) *ms = (gen_now() - t0) * 1e3;
    return st;
}

static void print_header(const char *who)
{
    printf("  %s%-4s %5s %8s %6s %8s %6s %6s | %7s %7s %7s %7s %7s | %8s %8s %6s | %7s %7s %7s | %6s %6s %7s\n", who,
           "day", "parts", "new", "profs", "pairs", "write", "stk/s", "anon", "file", "malloc", "held", "maps",
           "dir MB", "live MB", "ratio", "series", "catalog", "cat.mdb", "close", "open", "anon'");
    printf("  %s%-4s %5s %8s %6s %8s %6s %6s | %7s %7s %7s %7s %7s | %8s %8s %6s | %7s %7s %7s | %6s %6s %7s\n", who,
           "", "", "stacks", "", "", "s", "k", "MiB", "MiB", "in use", "MiB", "MiB", "", "", "dir/lv", "", "KiB",
           "KiB", "ms", "ms", "MiB");
}

typedef struct {
    mem_kb mem;
    double heap, held, maps_mib;
    dir_bytes d;
    uint64_t series, cat_mem;   /* the catalog: live series, bytes in memory */
} step_figs;

static void measure_step(store *st, const char *dir, step_figs *f)
{
    read_mem(&f->mem);
    heap_mib(&f->heap, &f->held);
    store_stats s;
    store_get_stats(st, &s);
    f->maps_mib = mib((double)s.dict_memory);
    f->series = s.series;
    f->cat_mem = s.catalog_memory;
    measure_dir_bytes(dir, &f->d);
}

static void print_row(const char *who, const churn_cfg *c, int day, const day_result *r, const step_figs *f,
                      const double *close_ms, const double *open_ms, const mem_kb *after)
{
    char cl[16] = "-", op[16] = "-", af[16] = "-";
    if (close_ms) snprintf(cl, sizeof cl, "%.1f", *close_ms);
    if (open_ms) snprintf(op, sizeof op, "%.1f", *open_ms);
    if (after) snprintf(af, sizeof af, "%.1f", after->anon / 1024);
    printf("  %s%-4d %5u %8llu %6u %8llu %6.2f %6.0f | %7.1f %7.1f %7.1f %7.1f %7.1f | %8.1f %8.1f %6.3f | %7llu %7.0f "
           "%7.0f | %6s %6s %7s\n",
           who, day + 1, f->d.parts, (unsigned long long)day_new(c, day), r->profiles, (unsigned long long)r->pairs,
           r->write_s, (double)day_new(c, day) / r->write_s / 1e3, f->mem.anon / 1024, f->mem.file / 1024, f->heap,
           f->held, f->maps_mib, f->d.all / 1e6, f->d.live / 1e6, (double)f->d.all / (double)f->d.live,
           (unsigned long long)f->series, f->cat_mem / 1024.0, f->d.catalog / 1024.0, cl, op, af);
}

/* ---- the baseline child -------------------------------------------------- */

typedef struct {
    double dir_all, dir_live, anon, file, rss, open_ms;
    uint32_t parts;
    double series, cat_mem, cat_file;
} baseline_figs;

static int run_baseline(const churn_cfg *c, const char *out_path)
{
    int first = c->days - c->retention_days;
    if (first < 0) first = 0;
    char *dir = gen_tempdir("bench-churn-base");
    store *st = open_store(c, dir, NULL);
    if (!st) return 1;
    print_header("base ");
    step_figs f = { 0 };
    for (int day = first; day < c->days; day++) {
        day_result r = { 0 };
        if (run_day(c, st, day, &r)) return 1;
        measure_step(st, dir, &f);
        print_row("base ", c, day, &r, &f, NULL, NULL, NULL);
    }
    double close_ms, open_ms;
    double t0 = gen_now();
    store_close(st);
    close_ms = (gen_now() - t0) * 1e3;
    if (!(st = open_store(c, dir, &open_ms))) return 1;
    store_close(st);
    printf("  base: close %.1f ms, open %.1f ms\n", close_ms, open_ms);
    gen_rm_rf(dir);
    free(dir);
    FILE *o = fopen(out_path, "w");
    if (!o) return 1;
    fprintf(o, "%.0f %.0f %.1f %.1f %.1f %.3f %u %.0f %.0f %.0f\n", (double)f.d.all, (double)f.d.live, f.mem.anon,
            f.mem.file, f.mem.rss, open_ms, f.d.parts, (double)f.series, (double)f.cat_mem, (double)f.d.catalog);
    fclose(o);
    return 0;
}

static int spawn_baseline(baseline_figs *b)
{
    char *tmp = gen_tempdir("bench-churn-result");
    char path[4200];
    snprintf(path, sizeof path, "%s/baseline.txt", tmp);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execl("/proc/self/exe", "bench_churn", "--baseline", path, (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "bench_churn: the baseline run failed\n");
        gen_rm_rf(tmp);
        return -1;
    }
    FILE *f = fopen(path, "r");
    int ok = f && fscanf(f, "%lf %lf %lf %lf %lf %lf %u %lf %lf %lf", &b->dir_all, &b->dir_live, &b->anon, &b->file,
                         &b->rss, &b->open_ms, &b->parts, &b->series, &b->cat_mem, &b->cat_file) == 10;
    if (f) fclose(f);
    gen_rm_rf(tmp);
    free(tmp);
    return ok ? 0 : -1;
}

/* ---- main ---------------------------------------------------------------- */

static long env_long(const char *name, long def)
{
    const char *s = getenv(name);
    return s && *s ? strtol(s, NULL, 10) : def;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    churn_cfg c = { .stacks = (uint64_t)env_long("BENCH_CHURN_STACKS", 10000000),
                    .days = (int)env_long("BENCH_CHURN_DAYS", 30),
                    .retention_days = (int)env_long("BENCH_CHURN_RETENTION_DAYS", 7),
                    .reopen_every = (int)env_long("BENCH_CHURN_REOPEN_EVERY", 5),
                    .pids = (uint32_t)env_long("BENCH_CHURN_PIDS", 2000) };
    if (c.days < 1 || c.retention_days < 1 || c.reopen_every < 1 || c.stacks < (uint64_t)c.days * 10 ||
        c.pids > 1000000) {
        fprintf(stderr, "bench_churn: bad BENCH_CHURN_* settings\n");
        return 2;
    }
    c.stable = c.stacks / 10 < STABLE_MAX ? c.stacks / 10 : STABLE_MAX;
    gen_rng rng;
    gen_rng_seed(&rng, SEED);
    gen_funcs_make(&funcs, &rng, GEN_DEEP, N_FUNCS);
    workers_init();
    if (argc == 3 && !strcmp(argv[1], "--baseline")) return run_baseline(&c, argv[2]);

    double t_start = gen_now();
    printf("bench_churn: %llu distinct stacks over %d days of 1-day partitions, retention %d days\n",
           (unsigned long long)c.stacks, c.days, c.retention_days);
    printf("  each day: ~%llu new stacks (unsymbolized lib.so+0x.. and JIT frames) in blocks of %d, "
           "each pushed %d times, + %d of %llu stable stacks a profile; %d instances, %d writer threads\n",
           (unsigned long long)day_new(&c, 0), BLOCK, REPEATS, STABLE_PER, (unsigned long long)c.stable,
           N_INSTANCES, THREADS);
    printf("  and %u short-lived series a day (labels build, pid: one day each), one small profile each\n", c.pids);
    /* the generator's depth, measured on a sample of the first day */
    {
        stack_gen g;
        stack_gen_init(&g, 1, day_new(&c, 0));
        uint64_t frames = 0, bytes = 0, n = 0;
        for (uint64_t i = 0; i < day_new(&c, 0); i += 97, n++) {
            uint32_t len;
            const char *t = stack_text(&g, i, &len);
            bytes += len;
            frames++;
            for (uint32_t k = 0; k < len; k++) frames += t[k] == ';';
        }
        printf("  stacks: %d levels of %d-way groups, mean depth %.1f frames, %.0f B of text\n", g.levels, FANOUT,
               (double)frames / (double)n, (double)bytes / (double)n);
    }
    mem_kb m0;
    read_mem(&m0);
    printf("  process before the store: RSS %.1f MiB (anon %.1f, file %.1f)\n", m0.rss / 1024, m0.anon / 1024,
           m0.file / 1024);

    char *dir = gen_tempdir("bench-churn");
    double open_ms = 0;
    store *st = open_store(&c, dir, &open_ms);
    if (!st) return 1;
    print_header("");
    step_figs f = { 0 }, end = { 0 };
    store_stats stats;
    double max_open = 0, last_open = 0, last_close = 0;
    mem_kb after = { 0 };
    int reopens = 0;
    uint64_t total_pairs = 0, total_deleted = 0, dropped = 0, commits = 0;
    double max_rss = 0;
    int max_rss_day = 0;
    for (int day = 0; day < c.days; day++) {
        day_result r = { 0 };
        if (run_day(&c, st, day, &r)) return 1;
        total_pairs += r.pairs;
        total_deleted += r.deleted;
        measure_step(st, dir, &f);
        if (f.mem.rss > max_rss) {
            max_rss = f.mem.rss;
            max_rss_day = day + 1;
        }
        int last = day + 1 == c.days;
        if ((day + 1) % c.reopen_every && !last) {
            print_row("", &c, day, &r, &f, NULL, NULL, NULL);
            continue;
        }
        store_get_stats(st, &stats); /* counters start again at each open */
        dropped += stats.retention_partitions;
        commits += stats.commits;
        if (last) end = f; /* the end: the writer holds its maps as a running server does */
        double t0 = gen_now();
        store_close(st);
        last_close = (gen_now() - t0) * 1e3;
        if (!(st = open_store(&c, dir, &last_open))) return 1;
        read_mem(&after);
        reopens++;
        if (last_open > max_open) max_open = last_open;
        print_row("", &c, day, &r, &f, &last_close, &last_open, &after);
    }
    printf("  end (day %d, before the last close): %u partitions, RSS %.1f MiB (anon %.1f, file %.1f); malloc: "
           "%.1f MiB in use (writer maps + catalog %.1f), %.1f MiB held from the system; data directory %.1f MB, "
           "live %.1f MB (%.3f)\n",
           c.days, end.d.parts, end.mem.rss / 1024, end.mem.anon / 1024, end.mem.file / 1024, end.heap, end.maps_mib,
           end.held,
           end.d.all / 1e6, end.d.live / 1e6, (double)end.d.all / (double)end.d.live);
    printf("  store: %llu series, %llu nodes and %llu strings in the writer's maps, %llu partitions dropped, "
           "%llu profiles deleted, %llu commits; %llu pairs written in all\n",
           (unsigned long long)stats.series, (unsigned long long)stats.nodes, (unsigned long long)stats.strings,
           (unsigned long long)dropped, (unsigned long long)total_deleted, (unsigned long long)commits,
           (unsigned long long)total_pairs);
    printf("  RSS: highest at a step %.1f MiB (day %d); peak (VmHWM) of this process %.1f MiB\n", max_rss / 1024,
           max_rss_day, after.hwm / 1024);
    store_close(st);
    print_split(dir);
    gen_rm_rf(dir);
    free(dir);
    double t_churn = gen_now() - t_start;

    printf("  baseline: a fresh store that receives only the last %d days (child process)\n", c.retention_days);
    baseline_figs b;
    if (spawn_baseline(&b)) return 1;
    double size_ratio = (double)end.d.all / b.dir_all;
    printf("  baseline: dir %.1f MB, live %.1f MB, %u partitions, RSS %.1f MiB (anon %.1f, file %.1f), open %.1f ms\n",
           b.dir_all / 1e6, b.dir_live / 1e6, b.parts, b.rss / 1024, b.anon / 1024, b.file / 1024, b.open_ms);
    printf("RESULT churn: %llu stacks, %d days, retention %d: RSS at the end %.1f MiB (anon %.1f + file %.1f; "
           "highest at a step %.1f; fresh %d-day store %.1f); target <= %.0f MiB; measured/target = %.2f\n",
           (unsigned long long)c.stacks, c.days, c.retention_days, end.mem.rss / 1024, end.mem.anon / 1024,
           end.mem.file / 1024, max_rss / 1024, c.retention_days, b.rss / 1024, TARGET_RSS_MIB, end.mem.rss / 1024 / TARGET_RSS_MIB);
    printf("RESULT churn: open %.1f ms (slowest of %d reopens; last %.1f); target <= %.0f ms; measured/target = %.2f\n",
           max_open, reopens, last_open, TARGET_OPEN_MS, max_open / TARGET_OPEN_MS);
    printf("RESULT churn: data directory %.1f MB = %.3f x the live partitions + catalog (%.1f MB), %.3f x a fresh "
           "store of the last %d days (%.1f MB); target <= %.2f; measured/target = %.2f\n",
           end.d.all / 1e6, (double)end.d.all / (double)end.d.live, end.d.live / 1e6, size_ratio, c.retention_days,
           b.dir_all / 1e6, TARGET_SIZE_RATIO, size_ratio / TARGET_SIZE_RATIO);
    double cat_ratio = b.cat_mem > 0 ? (double)end.cat_mem / b.cat_mem : 0;
    double cat_file_ratio = b.cat_file > 0 ? (double)end.d.catalog / b.cat_file : 0;
    printf("RESULT churn: catalog %llu series, %.0f KiB in memory = %.3f x a fresh store of the last %d days (%.0f "
           "series, %.0f KiB); catalog.mdb %.0f KiB = %.3f x (%.0f KiB); target <= %.2f; measured/target = %.2f\n",
           (unsigned long long)end.series, end.cat_mem / 1024.0, cat_ratio, c.retention_days, b.series,
           b.cat_mem / 1024.0, end.d.catalog / 1024.0, cat_file_ratio, b.cat_file / 1024.0, TARGET_SIZE_RATIO,
           (cat_ratio > cat_file_ratio ? cat_ratio : cat_file_ratio) / TARGET_SIZE_RATIO);
    printf("  churn %.1f s, total time %.1f s\n", t_churn, gen_now() - t_start);
    gen_funcs_free(&funcs);
    return 0;
}
