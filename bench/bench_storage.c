/* bench_storage.c — bytes on disk per stored (stack, count) pair.
 *
 * Loads realistic profiles through store_write (several threads, so the
 * writer's group commit batches them), closes the store and measures the
 * whole data directory (storage v2: catalog.mdb and one parts/<start>.mdb
 * per time partition): the allocated size (st_blocks * 512) of catalog.mdb
 * and of every partition file, divided by the number of stored pairs.  The
 * -lock files beside them are LMDB's reader tables, a fixed size whatever
 * the data: their total is printed apart, not counted.  Beside it, the same
 * profiles as gzip'd folded text (gzip level 6 of each profile's text,
 * summed), the usual way profiles travel and are archived.  Target: at most
 * 2 bytes per pair.
 *
 * The data: a pool of 20,000 distinct stacks of depth 10..60 sharing
 * prefixes, with Go/C++/Java/Rust-like names of 20..60 bytes (gen.h);
 * 2,000 profiles across 50 series (40 ten-second windows each), each
 * drawing Zipf(1.1)-distributed samples until it holds a uniformly chosen
 * 1,000..3,000 distinct stacks.  Every 5 series (one "service") rank the
 * pool differently.  Fixed seed: the same bytes on every run.  The whole
 * span is 400 s, so everything lands in one partition.
 *
 * After closing the store the benchmark opens each partition file
 * read-only with LMDB itself to split the bytes between the raw blocks, the
 * segments (closed 10-minute buckets packed, storage/segment.c), the
 * rollups, the dictionaries (strings + nodes + meta) and free pages, summed
 * over the partitions, and the catalog apart.  Pages in use (the files
 * less LMDB's free pages) are printed beside the headline: LMDB never
 * shrinks a file, so the raw blocks the packing freed stay in the file as
 * free pages, which later writes reuse.  That peeks at the storage's
 * private database names, so it is best-effort: if it cannot, only the
 * file figures are printed.
 *
 * gzip of 5.4 GB of folded text would take most of a minute on two cores,
 * so it is measured on every GZIP_EVERY-th profile; per pair it is an
 * average anyway.  The file sizes are measured on everything.
 *
 * A second case (BENCH_STORAGE_PPROF=N profiles, default 200; 0 leaves it
 * out): profiles written as pprof by ../shared/bench/gen_pprof.py
 * (BENCH_STORAGE_PPROF_GEN names the script; BENCH_STORAGE_PPROF_DIR an
 * already generated directory, to skip the ~0.2 s a profile of Python),
 * decoded by ingest_pprof_parse as the server does (two sample types each:
 * samples/count and cpu/nanoseconds, so two stored profiles a file), loaded
 * as N/40 instances x 40 windows of 10 s, measured the same way, next to
 * the gzip'd pprof and folded files the script wrote.  Skipped with a note
 * when python3 or the script is missing.
 *
 * BENCH_STORAGE_KEEP=DIR keeps each case's data directory, moved to
 * DIR/main and DIR/pprof, to look at (flamedb check, another binary). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../ingest/ingest.h"
#include "../storage/store.h"
#include "dirsize.h"
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
/* two days after the data: every rollup bucket has closed, and so has its
 * day partition (sealed when worth it: storage/compact.c) */
#define COMPACT_AT_MS (BASE_MS + INT64_C(2) * 86400000)

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
/* data_len is not counted: a profile in a version-2 segment holds only
 * its header there, its payload sharing the segment's area (segment.c);
 * the stored sizes are measured through LMDB ("profile values"). */
typedef struct { uint64_t blocks, pairs, raw_bytes; } block_sizes;

static int count_block(const store_block *b, void *arg)
{
    block_sizes *bs = arg;
    bs->blocks++;
    bs->pairs += b->n_pairs;
    bs->raw_bytes += b->raw_len;
    return 0;
}

/* ---- the data directory ----------------------------------------------- */

typedef struct {
    dir_sizes d;
    lmdb_sum parts, cat;
} store_measure;

/* Sizes of a closed store's directory, then LMDB's split of each file. */
/* Removes a case's data directory, or moves it under BENCH_STORAGE_KEEP. */
static void keep_or_remove(const char *dir, const char *name)
{
    const char *keep = getenv("BENCH_STORAGE_KEEP");
    char to[4200];
    if (keep && *keep) {
        snprintf(to, sizeof to, "%s/%s", keep, name);
        if (!rename(dir, to)) {
            printf("  data directory kept in %s\n", to);
            return;
        }
        fprintf(stderr, "bench_storage: cannot move %s to %s (%s); removed\n", dir, to, strerror(errno));
    }
    gen_rm_rf(dir);
}

static void measure_store(const char *dir, store_measure *m)
{
    memset(m, 0, sizeof *m);
    measure_dir(dir, &m->d);
    inspect_parts(dir, 1, &m->parts);
    char path[4400];
    snprintf(path, sizeof path, "%s/catalog.mdb", dir);
    if (inspect_file(path, dirsize_catalog_dbs, 3, 0, &m->cat)) m->cat.failed++;
}

static uint64_t disk_bytes(const store_measure *m) { return dir_sizes_live(&m->d); }

static void print_db_row(const char *name, uint64_t pages, double ps, uint64_t pairs, const char *extra)
{
    printf("    %-12s %8llu pages %9.2f MB %7.3f B/pair%s\n", name, (unsigned long long)pages, pages * ps / 1e6,
           pages * ps / (double)pairs, extra);
}

static void print_measure(const store_measure *m, uint64_t pairs)
{
    const dir_sizes *d = &m->d;
    printf("  data directory: catalog.mdb %.2f MB + %u partition file%s %.2f MB = %.2f MB allocated "
           "(st_blocks*512; file sizes %.2f MB)\n",
           d->catalog / 1e6, d->n_parts, d->n_parts == 1 ? "" : "s", d->parts / 1e6, disk_bytes(m) / 1e6,
           (d->catalog_size + d->parts_size) / 1e6);
    printf("    not counted: %u -lock files (LMDB reader tables, fixed size, sparse) %.3f MB allocated, %.3f MB "
           "file sizes; %u other file%s (LOCK) %.3f MB\n",
           d->n_locks, d->locks / 1e6, d->locks_size / 1e6, d->n_other, d->n_other == 1 ? "" : "s", d->other / 1e6);
    const lmdb_sum *p = &m->parts;
    if (p->files && !p->failed) {
        double ps = p->psize;
        uint64_t named = 0;
        for (int i = 0; i < DIRSIZE_MAX_DBS; i++) named += p->db_pages[i];
        printf("  partitions, LMDB's split (%u-byte pages, summed over %d file%s): %llu pages used, %llu free\n",
               p->psize, p->files, p->files == 1 ? "" : "s", (unsigned long long)p->used_pages,
               (unsigned long long)p->free_pages);
        char extra[96];
        for (int i = 0; i < DIRSIZE_MAX_DBS; i++) {
            snprintf(extra, sizeof extra, "  (%llu entries)", (unsigned long long)p->db_entries[i]);
            print_db_row(dirsize_part_dbs[i], p->db_pages[i], ps, pairs, extra);
        }
        print_db_row("free", p->free_pages, ps, pairs, "");
        uint64_t rest = p->used_pages > named + p->free_pages ? p->used_pages - named - p->free_pages : 0;
        print_db_row("other", rest, ps, pairs, "  (LMDB meta pages, main and free-list trees)");
        print_db_row("= dicts", p->db_pages[2] + p->db_pages[3] + p->db_pages[4], ps, pairs,
                     "  (strings + nodes + meta)");
        /* dirsize.h sums the values of "blocks" and "segments" (index 6) */
        double held = (double)(p->db_pages[0] + p->db_pages[6]) * ps;
        printf("  profile values (raw blocks and segments): %llu values, %.3f B/pair encoded, %.0f B/value; "
               "pages hold %.3f B/pair: %.0f%% overhead of page rounding and B-tree\n",
               (unsigned long long)p->values, (double)p->value_bytes / (double)pairs,
               (double)p->value_bytes / (double)(p->values ? p->values : 1), held / (double)pairs,
               p->value_bytes ? 100.0 * (held - (double)p->value_bytes) / (double)p->value_bytes : 0.0);
        printf("  pages in use (the files less LMDB's free pages): %.3f B/pair\n",
               (double)(p->used_pages - p->free_pages) * ps / (double)pairs);
    } else {
        printf("  (could not open %d of the %d partition files read-only to split them by database)\n",
               p->failed, p->files + p->failed);
    }
    const lmdb_sum *c = &m->cat;
    if (c->files && !c->failed) {
        double ps = c->psize;
        printf("  catalog.mdb: %llu pages used: series %llu (%llu entries), strings %llu, meta %llu, free %llu, "
               "other %llu; %.4f B/pair\n",
               (unsigned long long)c->used_pages, (unsigned long long)c->db_pages[0],
               (unsigned long long)c->db_entries[0], (unsigned long long)c->db_pages[1],
               (unsigned long long)c->db_pages[2], (unsigned long long)c->free_pages,
               (unsigned long long)(c->used_pages - c->db_pages[0] - c->db_pages[1] - c->db_pages[2] - c->free_pages),
               c->used_pages * ps / (double)pairs);
    } else {
        printf("  (could not open catalog.mdb read-only)\n");
    }
}

/* ---- the second case: gen_pprof.py's profiles -------------------------- */

#define PPROF_WINDOWS 40

typedef struct {
    store *st;
    const char *dir;
    uint32_t n, n_inst;
    _Atomic uint32_t next;
    _Atomic int failed;
    _Atomic uint64_t stored_profiles;
} pprof_load;

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Reads, decodes (as the server's format=pprof) and stores files in turn. */
static void *pprof_thread(void *arg)
{
    pprof_load *c = arg;
    char err[1024], path[4400], inst[32];
    store_label labels[INGEST_MAX_LABELS];
    store_stack *stacks = NULL;
    size_t cap = 0;
    for (;;) {
        uint32_t i = atomic_fetch_add(&c->next, 1);
        if (i >= c->n || atomic_load(&c->failed)) break;
        uint32_t s = i % c->n_inst, w = i / c->n_inst;
        snprintf(path, sizeof path, "%s/pprof/p%04u.pb.gz", c->dir, i);
        size_t len;
        char *body = read_file(path, &len);
        if (!body) {
            fprintf(stderr, "bench_storage: cannot read %s\n", path);
            atomic_store(&c->failed, 1);
            break;
        }
        ingest_profile base;
        ingest_profile_init(&base);
        snprintf(inst, sizeof inst, "i-%03u", s);
        base.from_ms = BASE_MS + (int64_t)w * WINDOW_MS;
        base.until_ms = base.from_ms + WINDOW_MS;
        ingest_profile *ps = NULL;
        size_t np = 0;
        if (ingest_label_add(&base, "service", "bench", err, sizeof err) ||
            ingest_label_add(&base, "instance", inst, err, sizeof err) ||
            ingest_pprof_parse(body, len, (size_t)1 << 30, &base, 1, &ps, &np, err, sizeof err)) {
            fprintf(stderr, "bench_storage: %s: %s\n", path, err);
            atomic_store(&c->failed, 1);
            free(body);
            ingest_profile_free(&base);
            break;
        }
        for (size_t j = 0; j < np && !atomic_load(&c->failed); j++) {
            const ingest_profile *ip = &ps[j];
            if (ip->n_stacks > cap) {
                cap = ip->n_stacks;
                stacks = gen_xrealloc(stacks, cap * sizeof *stacks);
            }
            for (size_t k = 0; k < ip->n_stacks; k++)
                stacks[k] = (store_stack){ ip->stacks[k].frames, ip->stacks[k].len, ip->stacks[k].count };
            for (int k = 0; k < ip->n_labels; k++) labels[k] = (store_label){ ip->labels[k].name, ip->labels[k].value };
            store_profile sp = { .labels = labels, .n_labels = ip->n_labels, .from_ms = ip->from_ms,
                                 .until_ms = ip->until_ms, .rate = ip->rate, .unit = ip->unit,
                                 .stacks = stacks, .n_stacks = ip->n_stacks };
            if (store_write(c->st, &sp, NULL, err, sizeof err)) {
                fprintf(stderr, "bench_storage: store_write (%s): %s\n", path, err);
                atomic_store(&c->failed, 1);
            }
            atomic_fetch_add(&c->stored_profiles, 1);
        }
        ingest_pprof_free(ps, np);
        ingest_profile_free(&base);
        free(body);
    }
    free(stacks);
    return NULL;
}

/* Answers 0 when the case ran or was skipped with a note, -1 when it
 * failed. */
static int pprof_case(void)
{
    const char *env = getenv("BENCH_STORAGE_PPROF");
    long n = env && *env ? strtol(env, NULL, 10) : 200;
    if (n <= 0) {
        printf("\nbench_storage pprof: left out (BENCH_STORAGE_PPROF=%s)\n", env);
        return 0;
    }
    double t_start = gen_now();
    printf("\nbench_storage pprof: %ld profiles written as pprof by gen_pprof.py, through ingest_pprof_parse\n", n);
    const char *given = getenv("BENCH_STORAGE_PPROF_DIR");
    char *gen_dir = NULL;
    const char *dir = given;
    char path[4400], cmd[9000];
    if (!given || !*given) {
        const char *script = getenv("BENCH_STORAGE_PPROF_GEN");
        if (!script || !*script) script = "../shared/bench/gen_pprof.py";
        if (access(script, R_OK) || system("python3 -c '' 2>/dev/null") != 0) {
            printf("  skipped: needs python3 and %s (BENCH_STORAGE_PPROF_GEN names the script; "
                   "BENCH_STORAGE_PPROF=0 leaves this case out)\n", script);
            return 0;
        }
        gen_dir = gen_tempdir("bench-storage-pprof");
        dir = gen_dir;
        snprintf(cmd, sizeof cmd, "python3 '%s' '%s' %ld > /dev/null", script, gen_dir, n);
        double t0 = gen_now();
        if (system(cmd) != 0) {
            fprintf(stderr, "bench_storage: %s failed\n", cmd);
            gen_rm_rf(gen_dir);
            free(gen_dir);
            return -1;
        }
        printf("  generated by %s in %.1f s\n", script, gen_now() - t0);
    }
    /* the inputs: gzip'd pprof and gzip'd folded text, as written */
    uint64_t pprof_gz = 0, folded_gz = 0;
    for (long i = 0; i < n; i++) {
        uint64_t sz = 0;
        snprintf(path, sizeof path, "%s/pprof/p%04ld.pb.gz", dir, i);
        if (gen_file_bytes(path, NULL, &sz)) {
            fprintf(stderr, "bench_storage: %s is missing (BENCH_STORAGE_PPROF_DIR holds fewer profiles?)\n", path);
            if (gen_dir) gen_rm_rf(gen_dir);
            free(gen_dir);
            return -1;
        }
        pprof_gz += sz;
        snprintf(path, sizeof path, "%s/folded/p%04ld.folded.gz", dir, i);
        if (!gen_file_bytes(path, NULL, &sz)) folded_gz += sz;
    }

    char *sdir = gen_tempdir("bench-storage-pp");
    store *st;
    char err[1024];
    store_options opt = { .dir = sdir };
    if (store_open(&st, &opt, err, sizeof err)) {
        fprintf(stderr, "bench_storage: store_open: %s\n", err);
        return -1;
    }
    pprof_load pl = { .st = st, .dir = dir, .n = (uint32_t)n,
                      .n_inst = n >= PPROF_WINDOWS ? (uint32_t)(n / PPROF_WINDOWS) : 1 };
    double t0 = gen_now();
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, pprof_thread, &pl);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    double t_load = gen_now() - t0;
    int failed = atomic_load(&pl.failed);
    uint64_t built = 0;
    if (!failed && store_compact_run(st, COMPACT_AT_MS, &built)) {
        fprintf(stderr, "bench_storage: store_compact_run failed\n");
        failed = 1;
    }
    store_stats stats;
    store_get_stats(st, &stats);
    uint64_t rollups_built = stats.rollups_built;
    block_sizes bs = { 0 };
    store_reader *rd;
    if (!failed && store_reader_begin(st, &rd) == STORE_OK) {
        for (uint32_t sid = 1; sid <= store_series_max(rd); sid++)
            store_blocks_scan(rd, sid, INT64_MIN, INT64_MAX, count_block, &bs);
        store_reader_end(rd);
    }
    store_close(st);
    if (failed) {
        gen_rm_rf(sdir);
        if (gen_dir) gen_rm_rf(gen_dir);
        return -1;
    }
    store_measure m;
    measure_store(sdir, &m);
    keep_or_remove(sdir, "pprof");
    free(sdir);
    if (gen_dir) gen_rm_rf(gen_dir);
    free(gen_dir);

    uint64_t pairs = bs.pairs, samples = (uint64_t)n * 2000; /* gen_pprof.py: 2,000 distinct stacks a profile */
    printf("  data: %ld files = %u instances x %ld windows of %d s; %llu stored profiles (one per sample type), "
           "%llu stored pairs; loaded in %.2f s with %d threads\n",
           n, pl.n_inst, (n + pl.n_inst - 1) / pl.n_inst, WINDOW_MS / 1000,
           (unsigned long long)atomic_load(&pl.stored_profiles), (unsigned long long)pairs, t_load, THREADS);
    printf("  rollups: %llu buckets built, %llu of them by store_compact_run, the rest in the background\n",
           (unsigned long long)rollups_built, (unsigned long long)built);
    print_measure(&m, pairs);
    printf("  blocks (reader API): %llu blocks; payload before zstd %.3f B/pair (stored: 'profile values' above)\n",
           (unsigned long long)bs.blocks, (double)bs.raw_bytes / (double)pairs);
    double disk = (double)disk_bytes(&m);
    printf("  inputs: gzip'd pprof %.2f MB (%.3f B/sample, both values), gzip'd folded %.2f MB (%.3f B/sample)\n",
           pprof_gz / 1e6, (double)pprof_gz / (double)samples, folded_gz / 1e6, (double)folded_gz / (double)samples);
    printf("RESULT storage pprof: %.3f bytes/pair on disk (%ld gen_pprof.py profiles, 2 sample types: %llu stored pairs)\n",
           disk / (double)pairs, n, (unsigned long long)pairs);
    printf("RESULT storage pprof: %.3f bytes/sample on disk (both values) vs %.3f gzip'd pprof: gzip'd pprof is %.1fx larger\n",
           disk / (double)samples, (double)pprof_gz / (double)samples, (double)pprof_gz / disk);
    printf("  case time %.1f s\n", gen_now() - t_start);
    return 0;
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
    /* Rollups are built once their bucket has closed (storage v2 step 2),
     * in the background by the wall clock: build them all now, as a day
     * later, so the figures do not depend on how far that got. */
    uint64_t built = 0;
    t0 = gen_now();
    if (store_compact_run(st, COMPACT_AT_MS, &built)) {
        fprintf(stderr, "bench_storage: store_compact_run failed\n");
        return 1;
    }
    double t_compact = gen_now() - t0;
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

    store_measure m;
    measure_store(dir, &m);
    keep_or_remove(dir, "main");

    uint64_t on_disk = disk_bytes(&m);
    double per_pair = (double)on_disk / (double)pairs;
    double gz_per_pair = (double)gj.gz_bytes / (double)gj.pairs;
    printf("  load: %.2f s with %d threads: %.0f profiles/s, %.2f M pairs/s, %llu commits (%.1f profiles/commit)\n",
           t_load, THREADS, N_PROFILES / t_load, (double)pairs / t_load / 1e6, (unsigned long long)stats.commits,
           stats.commits ? (double)N_PROFILES / (double)stats.commits : 0.0);
    printf("  rollups: %llu buckets built, %llu of them by store_compact_run (%.2f s), the rest in the background\n",
           (unsigned long long)stats.rollups_built, (unsigned long long)built, t_compact);
    printf("  store: %llu series, %llu partition%s, %llu call-tree nodes (%.1f per pool stack), %llu strings "
           "(in the writer's maps, %.1f MB of maps)\n",
           (unsigned long long)stats.series, (unsigned long long)stats.partitions, stats.partitions == 1 ? "" : "s",
           (unsigned long long)stats.nodes, (double)stats.nodes / POOL, (unsigned long long)stats.strings,
           stats.dict_memory / 1e6);
    print_measure(&m, pairs);
    printf("  blocks (reader API): %llu blocks, %llu pairs; payload before zstd %.3f B/pair (stored: 'profile values' "
           "above)\n",
           (unsigned long long)bs.blocks, (unsigned long long)bs.pairs, (double)bs.raw_bytes / (double)pairs);
    printf("  folded text: %.1f B/pair raw, gzip -6 %.3f B/pair (measured on %u of %u profiles, %.1f MB of text in %.1f s)\n",
           (double)gj.text_bytes / (double)gj.pairs, gz_per_pair, gj.n_profiles, N_PROFILES, gj.text_bytes / 1e6,
           gj.seconds);
    printf("RESULT storage: %.3f bytes/pair on disk (catalog + partition files allocated / pairs)\n", per_pair);
    if (m.parts.files && !m.parts.failed) {
        printf("RESULT storage: %.3f bytes/pair in blocks and segments (their pages), %.3f bytes/pair encoded values\n",
               (m.parts.db_pages[0] + m.parts.db_pages[6]) * (double)m.parts.psize / (double)pairs,
               (double)m.parts.value_bytes / (double)pairs);
        printf("RESULT storage: %.3f bytes/pair in pages in use (catalog + partitions less LMDB's free pages)\n",
               ((double)(m.parts.used_pages - m.parts.free_pages) * m.parts.psize +
                (double)(m.cat.used_pages - m.cat.free_pages) * m.cat.psize) / (double)pairs);
    }
    printf("RESULT storage: %.3f bytes/pair as gzip'd folded text; store/gzip = %.4f (gzip is %.1fx larger)\n",
           gz_per_pair, per_pair / gz_per_pair, gz_per_pair / per_pair);
    printf("RESULT storage: target <= %.1f bytes/pair; measured/target = %.2f\n", TARGET_BYTES_PER_PAIR,
           per_pair / TARGET_BYTES_PER_PAIR);
    printf("  main case time %.1f s\n", gen_now() - t_start);

    for (uint32_t i = 0; i < N_PROFILES; i++) gen_profile_free(&profiles[i]);
    free(profiles);
    free(dir);
    gen_zipf_free(&zipf);
    gen_pool_free(&pool);

    int rc = pprof_case();
    printf("  total time %.1f s\n", gen_now() - t_start);
    return rc ? 1 : 0;
}
