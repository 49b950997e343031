/* bench_cluster.c — the load driver of bench/bench_cluster.sh (issue 10:
 * ingest through front ends into a ClickHouse cluster, beside a single-node
 * flamedb).  The script starts the servers and checks what they stored; this
 * program pushes one row's workload and measures it.
 *
 * Usage (one row):
 *   bench_cluster load --urls URL[,URL...] --clients N --kind repeated|new|pool
 *                      (--seconds S | --requests R) --base EPOCH_S
 *                      [--instances I] [--services S] [--step SECONDS]
 *                      [--salt K] [--drain URL[,URL...]]
 *                      [--drain-max S] [--watch NAME=PID[,PID...]]...
 * Run with no arguments (as bench/run.sh does with every bench_* binary) it
 * says how to run the benchmark and exits 0: it needs ClickHouse and
 * ZooKeeper, which the script starts.
 *
 * The workload is bench_ingest's compact shape, same seed, same bytes:
 * folded bodies of 2,000 distinct lines (depth 10..30, short C names, ~240
 * bytes a line) drawn Zipf(1.1) from a pool of 20,000 stacks.
 *   repeated  the 16 bodies, request j sends body j % 16 (the steady state of
 *             a fleet: run `pool` first so the stacks are known);
 *   pool      the whole pool as 10 bodies of 2,000 (request j: body j % 10);
 *   new       every line unseen: a pool stack's prefix, a frame naming the
 *             row (--salt), and four fixed-width frames spelling j * 2000 +
 *             line in base 256, patched into the client's body before each
 *             request.
 * Requests are numbered by one counter shared by the client threads; request
 * j goes to URL j % n (round-robin over the front ends), as instance
 * "i<j % I>" (default I = 50) and the 10 s window starting at base + (j / I)
 * x 10 s.  So --requests R sends the same R profiles whatever the thread
 * timing: the script stores the same data on both sides for bytes per pair.
 * For the query benchmark (bench/bench_cluster_query.sh): --step T spaces
 * the windows T seconds apart (base + (j / I) x T; each still 10 s long),
 * and --services S names the series' services "s00".."s<S-1>" (instance
 * i<k> is service s<k % S>) instead of the one service "bench".
 *
 * A request counts when answered 200 (single node: committed; front end:
 * fsync'd in its spool).  A 503 (a full spool) is counted as refused and the
 * request retried after 50 ms (with --requests, until it is taken; with
 * --seconds, until the deadline); any other failure stops that client.
 *
 * Measured, printed as key=value lines for the script:
 *   requests, lines, samples (the sum of the counts acknowledged: what the
 *   stores must hold), bytes, refused, failed, load_s (the timed part);
 *   drain_s: with --drain, from the end of the load until every URL's
 *   GET /healthz says .clickhouse.spool_bytes 0 (polled every 20 ms), and
 *   drained=0 when --drain-max passed first; spool_end: the spools' bytes
 *   at the first poll (what the load left for the flushers);
 *   per --watch group: CPU seconds of its processes (utime + stime from
 *   /proc/PID/stat) during the load and during the drain, and the largest
 *   RSS of one of them (VmRSS sampled every 100 ms); self_cpu (this
 *   process) and busy_cpu (the whole machine, /proc/stat) over load + drain,
 *   so the script can say what the rest of the machine took. */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "gen.h"
#include "server.h"

#define SEED UINT64_C(0x696e67657374)   /* bench_ingest's: the same bodies */
#define POOL 20000
#define LINES 2000
#define N_BODIES 16
#define N_POOL_BODIES (POOL / LINES)
#define ZIPF_S 1.1
#define N_FUNCS 2000
#define DMIN 10
#define DMAX 30
#define WINDOW_S 10
#define SUFFIX_FRAMES 4
#define MAX_CLIENTS 64
#define MAX_URLS 8
#define MAX_GROUPS 8
#define MAX_PIDS 8

typedef struct {
    char *buf;
    size_t len;
    uint64_t samples;   /* the sum of its counts */
} body;

typedef enum { KIND_REPEATED, KIND_POOL, KIND_NEW } kind;

typedef struct {
    char name[32];
    pid_t pid[MAX_PIDS];
    int n;
    double cpu0, cpu1, cpu2;   /* CPU seconds at load start, load end, drain end */
    uint64_t rss_max_kb;
} group;

typedef struct {
    const char *urls[MAX_URLS];
    int n_urls;
    int clients;
    kind kind;
    double seconds;
    long long requests;         /* 0: --seconds */
    long long base;
    int instances;
    int services;               /* 0: every request is service "bench" */
    long long step;             /* seconds between a series' windows */
    unsigned salt;
    const char *drain;
    double drain_max;
    group groups[MAX_GROUPS];
    int n_groups;

    gen_pool pool;
    body bodies[N_BODIES];
    body pool_bodies[N_POOL_BODIES];

    _Atomic long long next;     /* the next request number */
    _Atomic int stop;
    double deadline;
    pthread_barrier_t go;
    _Atomic int first_error_set;
    char first_error[600];
} driver;

typedef struct {
    driver *d;
    int id;
    CURL *curl[MAX_URLS];
    struct curl_slist *headers;
    body nb;                    /* --kind new: this client's body */
    uint32_t *slot;             /* its lines' suffix offsets */
    uint64_t requests, lines, samples, bytes, refused;
    int failed;
} client;

/* ---- bodies ----------------------------------------------------------------- */

static uint64_t body_sum(const char *buf, size_t len)
{
    uint64_t sum = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        const char *sp = nl;
        while (sp > p && sp[-1] != ' ') sp--;
        sum += strtoull(sp, NULL, 10);
        p = nl + 1;
    }
    return sum;
}

static void bodies_make(driver *d)
{
    gen_pool_make(&d->pool, SEED + (uint64_t)GEN_COMPACT, GEN_COMPACT, N_FUNCS, POOL, DMIN, DMAX);
    gen_zipf z;
    gen_zipf_make(&z, POOL, ZIPF_S);
    uint32_t *stamp = gen_xcalloc(POOL, sizeof *stamp), *slot = gen_xcalloc(POOL, sizeof *slot);
    gen_rng r;
    gen_rng_seed(&r, SEED ^ 0x77);
    gen_profile pr = { 0 };
    for (int i = 0; i < N_BODIES; i++) {
        size_t cap = 0;
        gen_profile_zipf(&pr, &d->pool, &z, &r, LINES, 0, stamp, slot, (uint32_t)i + 1);
        d->bodies[i].buf = NULL;
        d->bodies[i].len = gen_profile_folded(&pr, &d->pool, &d->bodies[i].buf, &cap);
        d->bodies[i].samples = body_sum(d->bodies[i].buf, d->bodies[i].len);
    }
    for (int i = 0; i < N_POOL_BODIES; i++) {
        size_t cap = 0;
        pr.n = 0;
        for (uint32_t k = 0; k < LINES; k++) {
            pr.stack[pr.n] = (uint32_t)i * LINES + k;
            pr.count[pr.n++] = 1;
        }
        d->pool_bodies[i].buf = NULL;
        d->pool_bodies[i].len = gen_profile_folded(&pr, &d->pool, &d->pool_bodies[i].buf, &cap);
        d->pool_bodies[i].samples = LINES;
    }
    gen_profile_free(&pr);
    free(stamp);
    free(slot);
    gen_zipf_free(&z);
}

/* --kind new: lines of a pool stack's first depth-5 frames, the row's frame,
 * then four "new_XX" frames rewritten before each request. */
static void new_body_make(client *c)
{
    const gen_pool *p = &c->d->pool;
    gen_rng r;
    gen_rng_seed(&r, SEED * 31 + (uint64_t)c->id);
    size_t cap = (size_t)LINES * ((size_t)DMAX * 64 + 64);
    char *o = c->nb.buf = gen_xmalloc(cap);
    c->slot = gen_xmalloc(LINES * sizeof *c->slot);
    for (uint32_t i = 0; i < LINES; i++) {
        uint32_t s = (uint32_t)gen_below(&r, p->n), dep = gen_stack_depth(p, s);
        uint32_t keep = dep > SUFFIX_FRAMES + 2 ? dep - SUFFIX_FRAMES - 1 : 1;
        for (uint32_t f = 0; f < keep; f++) {
            uint32_t fn = p->frames[p->foff[s] + f];
            if (f) *o++ = ';';
            memcpy(o, p->funcs.name[fn], p->funcs.len[fn]);
            o += p->funcs.len[fn];
        }
        o += sprintf(o, ";bench_row_%04x", c->d->salt & 0xffff);
        c->slot[i] = (uint32_t)(o - c->nb.buf) + 1;
        for (int k = 0; k < SUFFIX_FRAMES; k++) o += sprintf(o, ";new_00");
        o += sprintf(o, " %u\n", 1 + (unsigned)gen_below(&r, 5));
    }
    c->nb.len = (size_t)(o - c->nb.buf);
    c->nb.samples = body_sum(c->nb.buf, c->nb.len);
}

static void new_body_patch(client *c, long long j)
{
    static const char hex[] = "0123456789abcdef";
    for (uint32_t i = 0; i < LINES; i++) {
        uint32_t v = (uint32_t)((uint64_t)j * LINES + i);
        char *q = c->nb.buf + c->slot[i] + 4;   /* after "new_" */
        for (int k = 0; k < SUFFIX_FRAMES; k++, q += 7) { /* "00;new_" to the next */
            unsigned b = (v >> (8 * k)) & 255;
            q[0] = hex[b >> 4];
            q[1] = hex[b & 15];
        }
    }
}

/* ---- clients ---------------------------------------------------------------- */

static void note_error(driver *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_error(driver *d, const char *fmt, ...)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&d->first_error_set, &expect, 1)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->first_error, sizeof d->first_error, fmt, ap);
    va_end(ap);
    for (char *p = d->first_error; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

/* Request j: 200 -> 0, 503 -> 1 (retry), anything else -> -1. */
static int send_one(client *c, long long j)
{
    driver *d = c->d;
    const body *b;
    if (d->kind == KIND_NEW) {
        new_body_patch(c, j);
        b = &c->nb;
    } else if (d->kind == KIND_POOL) {
        b = &d->pool_bodies[j % N_POOL_BODIES];
    } else {
        b = &d->bodies[j % N_BODIES];
    }
    int u = (int)(j % d->n_urls);
    long long from = d->base + (j / d->instances) * d->step;
    char url[512], service[16] = "bench";
    if (d->services) snprintf(service, sizeof service, "s%02lld", (j % d->instances) % d->services);
    snprintf(url, sizeof url, "%s/api/v1/ingest?service=%s&instance=i%lld&from=%lld&until=%lld", d->urls[u],
             service, j % d->instances, from, from + WINDOW_S);
    reply rep = { .len = 0 };
    CURL *h = c->curl[u];
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, b->buf);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &rep);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc == CURLE_OK && code == 200) {
        c->requests++;
        c->lines += LINES;
        c->samples += b->samples;
        c->bytes += b->len;
        return 0;
    }
    if (rc == CURLE_OK && code == 503) {
        c->refused++;
        note_error(d, "%s answered 503: %s", d->urls[u], rep.buf);
        return 1;
    }
    note_error(d, "%s: %s, HTTP %ld: %s", d->urls[u], curl_easy_strerror(rc), code, rep.buf);
    return -1;
}

static void *client_main(void *arg)
{
    client *c = arg;
    driver *d = c->d;
    pthread_barrier_wait(&d->go);
    while (!c->failed && !atomic_load(&d->stop)) {
        if (!d->requests && gen_now() >= d->deadline) break;
        long long j = atomic_fetch_add(&d->next, 1);
        if (d->requests && j >= d->requests) break;
        int rc;
        while ((rc = send_one(c, j)) == 1) {
            if (!d->requests && gen_now() >= d->deadline) break;
            usleep(50000);
        }
        if (rc < 0) c->failed = 1;
    }
    return NULL;
}

static CURL *new_handle(struct curl_slist *headers)
{
    CURL *h = curl_easy_init();
    if (!h) {
        fprintf(stderr, "bench_cluster: curl_easy_init failed\n");
        exit(1);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_reply);
    return h;
}

/* ---- measuring ---------------------------------------------------------------- */

static double group_cpu(const group *g)
{
    double t = 0;
    char path[64];
    for (int i = 0; i < g->n; i++) {
        snprintf(path, sizeof path, "/proc/%d/stat", (int)g->pid[i]);
        t += stat_cpu(path, NULL, 0);
    }
    return t;
}

static void sample_rss(driver *d)
{
    for (int k = 0; k < d->n_groups; k++) {
        group *g = &d->groups[k];
        for (int i = 0; i < g->n; i++) {
            char path[64], line[256];
            snprintf(path, sizeof path, "/proc/%d/status", (int)g->pid[i]);
            FILE *f = fopen(path, "r");
            if (!f) continue;
            while (fgets(line, sizeof line, f)) {
                unsigned long long v;
                if (sscanf(line, "VmRSS: %llu", &v) == 1 && v > g->rss_max_kb) g->rss_max_kb = v;
            }
            fclose(f);
        }
    }
}

typedef struct { char *buf; size_t len, cap; } text;

static size_t on_text(char *data, size_t size, size_t nmemb, void *arg)
{
    text *t = arg;
    size_t n = size * nmemb;
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->buf = gen_xrealloc(t->buf, t->cap);
    }
    memcpy(t->buf + t->len, data, n);
    t->len += n;
    t->buf[t->len] = '\0';
    return n;
}

/* The bytes in URL's spool (GET /healthz .clickhouse.spool_bytes); -1 when
 * it does not answer or says nothing about a spool. */
static long long spool_bytes(CURL *h, const char *base)
{
    char url[512];
    text t = { 0 };
    snprintf(url, sizeof url, "%s/healthz", base);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_text);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    long long n = -1;
    if (curl_easy_perform(h) == CURLE_OK && t.buf) {
        const char *m = strstr(t.buf, "\"spool_bytes\"");
        if (m && (m = strchr(m, ':'))) n = strtoll(m + 1, NULL, 10);
    }
    free(t.buf);
    return n;
}

/* ---- main --------------------------------------------------------------------- */

static int split_urls(char *s, const char **out, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) out[n++] = tok;
    return n;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s load --urls URL[,URL...] --clients N --kind repeated|new|pool\n"
            "          (--seconds S | --requests R) --base EPOCH_S [--instances I] [--services S]\n"
            "          [--step SECONDS] [--salt K] [--drain URL[,URL...]] [--drain-max S]\n"
            "          [--watch NAME=PID[,PID...]]...\n",
            argv0);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        printf("bench_cluster: the load driver of bench/bench_cluster.sh, which starts a two-shard ClickHouse\n"
               "  cluster with ZooKeeper, flamedb front ends and a single-node flamedb, and runs it:\n"
               "    bash bench/bench_cluster.sh \"$PWD/bin/flamedb\"     (see bench/README.md)\n"
               "  nothing to do without arguments.\n");
        return 0;
    }
    if (strcmp(argv[1], "load")) {
        usage(argv[0]);
        return 2;
    }
    driver *d = gen_xcalloc(1, sizeof *d);
    char *urls = NULL, *drain = NULL;
    d->instances = 50;
    d->step = WINDOW_S;
    d->drain_max = 600;
    d->kind = KIND_REPEATED;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_cluster: %s needs a value\n", a);
            goto bad;
        }
        i++;
        if (!strcmp(a, "--urls")) urls = strdup(v);
        else if (!strcmp(a, "--clients")) d->clients = atoi(v);
        else if (!strcmp(a, "--seconds")) d->seconds = atof(v);
        else if (!strcmp(a, "--requests")) d->requests = atoll(v);
        else if (!strcmp(a, "--base")) d->base = atoll(v);
        else if (!strcmp(a, "--instances")) d->instances = atoi(v);
        else if (!strcmp(a, "--services")) d->services = atoi(v);
        else if (!strcmp(a, "--step")) d->step = atoll(v);
        else if (!strcmp(a, "--salt")) d->salt = (unsigned)atoi(v);
        else if (!strcmp(a, "--drain")) drain = strdup(v);
        else if (!strcmp(a, "--drain-max")) d->drain_max = atof(v);
        else if (!strcmp(a, "--kind")) {
            if (!strcmp(v, "repeated")) d->kind = KIND_REPEATED;
            else if (!strcmp(v, "new")) d->kind = KIND_NEW;
            else if (!strcmp(v, "pool")) d->kind = KIND_POOL;
            else {
                fprintf(stderr, "bench_cluster: --kind '%s': expected repeated, new or pool\n", v);
                goto bad;
            }
        } else if (!strcmp(a, "--watch")) {
            const char *eq = strchr(v, '=');
            if (!eq || d->n_groups == MAX_GROUPS) {
                fprintf(stderr, "bench_cluster: --watch '%s': expected NAME=PID[,PID...] (at most %d)\n", v,
                        MAX_GROUPS);
                goto bad;
            }
            group *g = &d->groups[d->n_groups++];
            snprintf(g->name, sizeof g->name, "%.*s", (int)(eq - v), v);
            for (const char *p = eq + 1; *p && g->n < MAX_PIDS;) {
                g->pid[g->n++] = (pid_t)atol(p);
                p += strcspn(p, ",");
                if (*p == ',') p++;
            }
        } else {
            fprintf(stderr, "bench_cluster: unknown option %s\n", a);
            usage(argv[0]);
            goto bad;
        }
    }
    if (urls) d->n_urls = split_urls(urls, d->urls, MAX_URLS);
    if (!d->n_urls || d->clients < 1 || d->clients > MAX_CLIENTS || d->instances < 1 || d->base <= 0 ||
        d->services < 0 || d->services > 100 || d->step < WINDOW_S ||
        (d->seconds <= 0) == (d->requests <= 0)) {
        usage(argv[0]);
    bad:
        free(urls);
        free(drain);
        free(d);
        return 2;
    }
    const char *drain_urls[MAX_URLS];
    int n_drain = drain ? split_urls(drain, drain_urls, MAX_URLS) : 0;
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    bodies_make(d);

    client *cl = gen_xcalloc((size_t)d->clients, sizeof *cl);
    pthread_t th[MAX_CLIENTS];
    pthread_barrier_init(&d->go, NULL, (unsigned)d->clients + 1);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: text/plain");
    headers = curl_slist_append(headers, "Expect:"); /* no 100-continue round trip */
    for (int i = 0; i < d->clients; i++) {
        cl[i].d = d;
        cl[i].id = i;
        for (int u = 0; u < d->n_urls; u++) cl[i].curl[u] = new_handle(headers);
        if (d->kind == KIND_NEW) new_body_make(&cl[i]);
        pthread_create(&th[i], NULL, client_main, &cl[i]);
    }
    for (int k = 0; k < d->n_groups; k++) d->groups[k].cpu0 = group_cpu(&d->groups[k]);
    machine_cpu m0 = machine_busy();
    double self0 = self_cpu(), t0 = gen_now();
    d->deadline = t0 + d->seconds;
    pthread_barrier_wait(&d->go);

    /* the load: RSS every 100 ms until every client is done */
    int joined[MAX_CLIENTS] = { 0 };
    for (;;) {
        sample_rss(d);
        int done = 1;
        for (int i = 0; i < d->clients; i++) {
            if (!joined[i] && pthread_tryjoin_np(th[i], NULL) == 0) joined[i] = 1;
            if (!joined[i]) done = 0;
        }
        if (done) break;
        usleep(100000);
    }
    double t1 = gen_now();
    for (int k = 0; k < d->n_groups; k++) d->groups[k].cpu1 = group_cpu(&d->groups[k]);

    /* the drain: every spool empty */
    int drained = 1;
    long long spool_end = -1;   /* the spools' bytes when the load ended */
    if (n_drain) {
        CURL *h = curl_easy_init();
        double last_rss = 0;
        for (;;) {
            int empty = 1;
            long long held = 0;
            for (int u = 0; u < n_drain && (empty || spool_end < 0); u++) {
                long long b = spool_bytes(h, drain_urls[u]);
                if (b != 0) empty = 0;
                if (b < 0) note_error(d, "%s/healthz: no .clickhouse.spool_bytes", drain_urls[u]);
                else held += b;
            }
            if (spool_end < 0) spool_end = held;
            if (empty) break;
            if (gen_now() - t1 > d->drain_max) {
                drained = 0;
                break;
            }
            if (gen_now() - last_rss >= 0.1) {
                sample_rss(d);
                last_rss = gen_now();
            }
            usleep(20000);
        }
        curl_easy_cleanup(h);
    }
    double t2 = gen_now();
    for (int k = 0; k < d->n_groups; k++) d->groups[k].cpu2 = group_cpu(&d->groups[k]);
    machine_cpu m2 = machine_busy();
    double self = self_cpu() - self0;

    uint64_t requests = 0, lines = 0, samples = 0, bytes = 0, refused = 0;
    int failed = 0;
    for (int i = 0; i < d->clients; i++) {
        requests += cl[i].requests;
        lines += cl[i].lines;
        samples += cl[i].samples;
        bytes += cl[i].bytes;
        refused += cl[i].refused;
        failed += cl[i].failed;
    }
    printf("requests=%llu\nlines=%llu\nsamples=%llu\nbytes=%llu\nrefused=%llu\nfailed=%d\n",
           (unsigned long long)requests, (unsigned long long)lines, (unsigned long long)samples,
           (unsigned long long)bytes, (unsigned long long)refused, failed);
    printf("load_s=%.3f\ndrain_s=%.3f\ndrained=%d\nspool_end=%lld\n", t1 - t0, n_drain ? t2 - t1 : 0.0, drained,
           spool_end < 0 ? 0 : spool_end);
    printf("self_cpu=%.2f\nbusy_cpu=%.2f\n", self, (m2.tasks + m2.irq + m2.steal) - (m0.tasks + m0.irq + m0.steal));
    for (int k = 0; k < d->n_groups; k++) {
        const group *g = &d->groups[k];
        printf("cpu_load.%s=%.2f\ncpu_drain.%s=%.2f\nrss_kb.%s=%llu\n", g->name, g->cpu1 - g->cpu0, g->name,
               g->cpu2 - g->cpu1, g->name, (unsigned long long)g->rss_max_kb);
    }
    if (d->first_error_set) printf("first_error=%s\n", d->first_error);

    for (int i = 0; i < d->clients; i++) {
        for (int u = 0; u < d->n_urls; u++) curl_easy_cleanup(cl[i].curl[u]);
        free(cl[i].nb.buf);
        free(cl[i].slot);
    }
    curl_slist_free_all(headers);
    for (int i = 0; i < N_BODIES; i++) free(d->bodies[i].buf);
    for (int i = 0; i < N_POOL_BODIES; i++) free(d->pool_bodies[i].buf);
    gen_pool_free(&d->pool);
    pthread_barrier_destroy(&d->go);
    free(cl);
    free(urls);
    free(drain);
    free(d);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
