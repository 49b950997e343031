/* bench_ingest.c — ingest through HTTP: stack lines/s and MB/s of folded text.
 *
 * Usage: bench_ingest /path/to/flamedb [seconds per scenario, default 2]
 * Env:   BENCH_INGEST_ONLY, a comma list of compact, deep (shape), repeated,
 *        new, parse (kind), 1, 4, 16, 64 (clients), http, inproc (transport):
 *        runs only the rows matching it; a dimension the list does not
 *        mention is not restricted.  E.g. BENCH_INGEST_ONLY=deep,repeated,http.
 *        BENCH_INGEST_STAGGER_MS=N opens client i's connection i x N ms after
 *        the first (default 0: all at once, as a fleet does after a restart).
 *
 * For each scenario the real server binary is started on a fresh temporary
 * data directory (`serve --listen 127.0.0.1:0 --data DIR --retention 0`; the
 * port comes from its "listening on http://127.0.0.1:PORT" stderr line) and
 * 1, 4, 16 or 64 client threads, each with a keep-alive libcurl easy handle,
 * POST folded bodies of 2,000 lines to /api/v1/ingest?service=bench&
 * instance=iN&from=..&until=.. (each request a new 10 s window of its
 * instance) for a fixed duration.  A request counts when answered 200, that
 * is once its group commit is durable.
 *
 * Two kinds of stacks:
 *   repeated  the steady state of a fleet: every request re-sends stacks the
 *             server already knows (the pool is sent once, untimed, first);
 *             16 bodies of 2,000 distinct stacks drawn Zipf(1.1) from a pool
 *             of 20,000, cycled;
 *   new       every line unseen: a known-shape prefix plus four frames that
 *             spell a per-line counter in base 256 (fixed-width names patched
 *             into the body before each request), so each line adds call-tree
 *             nodes.
 * Two shapes of lines:
 *   compact   depth 10..30, short C names: ~240 bytes a line (the issue's
 *             "~100-300 bytes a line");
 *   deep      depth 10..60, Go/C++/Java/Rust names of 20..60 bytes:
 *             ~1,300 bytes a line (the "depth 10-60").
 *
 * Per core: the machine's cores are shared by the server and the clients, so
 * lines/s per core is lines/s divided by the online CPUs; the server's own CPU
 * time (from /proc/PID/stat) gives lines per server CPU-second as well.
 * Target: 1,000,000 stack lines/s per core for repeated stacks.
 *
 * Baselines in the same run, in-process, on the same bodies:
 *   parse     ingest_parse_stacks alone, one thread;
 *   inproc    ingest_parse_stacks + store_write from 4 threads into a store
 *             opened in this process: the storage cost without HTTP. */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "../ingest/ingest.h"
#include "../storage/store.h"
#include "gen.h"
#include "server.h"

#define SEED UINT64_C(0x696e67657374)
#define POOL 20000
#define LINES 2000
#define N_BODIES 16
#define ZIPF_S 1.1
#define SUFFIX_FRAMES 4
#define BASE_S INT64_C(1795219200) /* 2026-11-21T00:00:00Z */
#define WINDOW_S 10
#define TARGET_LINES_PER_CORE 1e6
#define INPROC_THREADS 4
#define MAX_CLIENTS 64

typedef struct {
    const char *name;
    gen_shape shape;
    uint32_t n_funcs, dmin, dmax;
    const char *suffix_fmt; /* printf format of one byte: fixed-width names */
} shape_def;

static const shape_def shapes[2] = {
    { "compact", GEN_COMPACT, 2000, 10, 30, "new_%02x" },
    { "deep", GEN_DEEP, 4000, 10, 60, "github.com/acme/gen/handlers.Handle%02xRequest" },
};

typedef struct { char *buf; size_t len; } body;

/* A body whose lines end in SUFFIX_FRAMES fixed-width frames that are
 * rewritten before each request to spell a fresh counter. */
typedef struct {
    char *buf;
    size_t len;
    uint32_t *slot;     /* offset of each line's suffix */
} new_body;

typedef struct {
    const shape_def *def;
    gen_pool pool;
    body bodies[N_BODIES];     /* repeated stacks */
    body warm[POOL / LINES];   /* the whole pool, sent once before timing */
    char suffix[256][64];
    size_t suffix_len;
    double line_bytes;         /* mean bytes a line in the bodies */
} shape_data;

/* ---- data ----------------------------------------------------------------- */

static void body_from_profile(body *b, const gen_profile *pr, const gen_pool *p)
{
    size_t cap = 0;
    b->buf = NULL;
    b->len = gen_profile_folded(pr, p, &b->buf, &cap);
}

static void shape_make(shape_data *sd, const shape_def *def)
{
    memset(sd, 0, sizeof *sd);
    sd->def = def;
    gen_pool_make(&sd->pool, SEED + (uint64_t)def->shape, def->shape, def->n_funcs, POOL, def->dmin, def->dmax);
    gen_zipf z;
    gen_zipf_make(&z, POOL, ZIPF_S);
    uint32_t *stamp = gen_xcalloc(POOL, sizeof *stamp), *slot = gen_xcalloc(POOL, sizeof *slot);
    gen_rng r;
    gen_rng_seed(&r, SEED ^ 0x77);
    gen_profile pr = { 0 };
    size_t bytes = 0;
    for (int i = 0; i < N_BODIES; i++) {
        gen_profile_zipf(&pr, &sd->pool, &z, &r, LINES, 0, stamp, slot, (uint32_t)i + 1);
        body_from_profile(&sd->bodies[i], &pr, &sd->pool);
        bytes += sd->bodies[i].len;
    }
    sd->line_bytes = (double)bytes / (N_BODIES * LINES);
    for (int i = 0; i < POOL / LINES; i++) {
        pr.n = 0;
        for (uint32_t k = 0; k < LINES; k++) {
            pr.stack[pr.n] = (uint32_t)i * LINES + k;
            pr.count[pr.n++] = 1;
        }
        body_from_profile(&sd->warm[i], &pr, &sd->pool);
    }
    gen_profile_free(&pr);
    free(stamp);
    free(slot);
    gen_zipf_free(&z);
    for (int i = 0; i < 256; i++) snprintf(sd->suffix[i], sizeof sd->suffix[i], def->suffix_fmt, i);
    sd->suffix_len = strlen(sd->suffix[0]);
}

static void shape_free(shape_data *sd)
{
    for (int i = 0; i < N_BODIES; i++) free(sd->bodies[i].buf);
    for (int i = 0; i < POOL / LINES; i++) free(sd->warm[i].buf);
    gen_pool_free(&sd->pool);
}

/* Lines of a pool-like depth: a pool stack's first depth-4 frames, then the
 * four counter frames. */
static void new_body_make(new_body *nb, const shape_data *sd, uint64_t seed)
{
    gen_rng r;
    gen_rng_seed(&r, seed);
    const gen_pool *p = &sd->pool;
    size_t w = sd->suffix_len, cap = (size_t)LINES * ((size_t)sd->def->dmax * 64 + SUFFIX_FRAMES * (w + 1) + 16);
    nb->buf = gen_xmalloc(cap);
    nb->slot = gen_xmalloc(LINES * sizeof *nb->slot);
    char *o = nb->buf;
    for (uint32_t i = 0; i < LINES; i++) {
        uint32_t s = (uint32_t)gen_below(&r, p->n), d = gen_stack_depth(p, s);
        uint32_t keep = d > SUFFIX_FRAMES + 1 ? d - SUFFIX_FRAMES : 1;
        for (uint32_t f = 0; f < keep; f++) {
            uint32_t fn = p->frames[p->foff[s] + f];
            if (f) *o++ = ';';
            memcpy(o, p->funcs.name[fn], p->funcs.len[fn]);
            o += p->funcs.len[fn];
        }
        nb->slot[i] = (uint32_t)(o - nb->buf) + 1;
        for (int k = 0; k < SUFFIX_FRAMES; k++) {
            *o++ = ';';
            memcpy(o, sd->suffix[0], w);
            o += w;
        }
        o += sprintf(o, " %u\n", 1 + (unsigned)gen_below(&r, 5));
    }
    nb->len = (size_t)(o - nb->buf);
}

/* Writes the next LINES counter values into the body's suffixes. */
static void new_body_patch(new_body *nb, const shape_data *sd, uint32_t client, uint32_t *counter)
{
    size_t w = sd->suffix_len;
    for (uint32_t i = 0; i < LINES; i++) {
        uint32_t v = (client << 26) | ((*counter)++ & ((1u << 26) - 1)); /* 64 clients */
        char *q = nb->buf + nb->slot[i];
        for (int k = 0; k < SUFFIX_FRAMES; k++, q += w + 1) memcpy(q, sd->suffix[(v >> (8 * k)) & 255], w);
    }
}

/* ---- the server's CPU (server.h starts it and reads the rest of /proc) ----- */

/* The server's CPU seconds: all of it, and its request threads' share:
 * MHD's ("MHD-...") and the parsing pool's ("flamedb-parse"); the rest is
 * the store's writer threads ("flamedb-writer*"; the main thread sleeps in
 * sigwait).  Only MHD threads count toward the busy-workers column. */
#define MAX_TASKS 256
typedef struct {
    double total, http;
    int n;                      /* HTTP threads seen */
    long tid[MAX_TASKS];
    double cpu[MAX_TASKS];
    int nw;                     /* writer threads seen */
    long wtid[32];
    double wcpu[32];
} server_cpu;

/* The busiest writer thread's CPU seconds between two readings: one
 * thread can do at most one second a second, so with one writer this is
 * the ceiling, and several writers (serve --writers) share the work. */
static double busiest_writer(const server_cpu *a, const server_cpu *b)
{
    double most = 0;
    for (int i = 0; i < b->nw; i++) {
        double before = 0;
        for (int j = 0; j < a->nw; j++)
            if (a->wtid[j] == b->wtid[i]) before = a->wcpu[j];
        if (b->wcpu[i] - before > most) most = b->wcpu[i] - before;
    }
    return most;
}

/* HTTP threads that used CPU between two readings: with keep-alive, each
 * connection stays on one MHD worker, so fewer busy workers than clients
 * means connections share (and wait for) a worker. */
static int busy_http_threads(const server_cpu *a, const server_cpu *b)
{
    int busy = 0;
    for (int i = 0; i < b->n; i++) {
        double before = 0;
        for (int j = 0; j < a->n; j++)
            if (a->tid[j] == b->tid[i]) before = a->cpu[j];
        if (b->cpu[i] - before >= 0.005) busy++; /* at least one 10 ms tick */
    }
    return busy;
}

static void add_task(void *arg, long tid, const char *comm, double t)
{
    server_cpu *c = arg;
    if (strncmp(comm, "flamedb-writer", 14) == 0 && c->nw < 32) {
        c->wtid[c->nw] = tid;
        c->wcpu[c->nw++] = t;
    }
    if (strcmp(comm, "flamedb-parse") == 0) c->http += t;
    if (strncmp(comm, "MHD", 3)) return;
    c->http += t;
    if (c->n < MAX_TASKS) {
        c->tid[c->n] = tid;
        c->cpu[c->n++] = t;
    }
}

static server_cpu proc_cpu(pid_t pid)
{
    server_cpu c;
    memset(&c, 0, sizeof c);
    c.total = proc_task_cpu(pid, add_task, &c);
    return c;
}

/* CPU seconds the whole machine has been busy (all but idle and iowait),
 * to tell how much of it went to processes other than the server and us. */
static double machine_busy_s(void)
{
    machine_cpu m = machine_busy();
    return m.tasks + m.irq + m.steal;
}

/* ---- clients ------------------------------------------------------------- */

typedef enum { VIA_HTTP, VIA_INPROC } transport;

typedef struct run run;

typedef struct {
    run *run;
    uint32_t id;
    CURL *curl;
    struct curl_slist *headers;
    new_body nb;
    uint32_t counter;
    uint32_t window;
    uint64_t lines, bytes, requests;
    double cpu;          /* this thread's CPU seconds in the timed part */
    int failed;
} client;

struct run {
    const shape_data *sd;
    transport via;
    int new_stacks;
    int n_clients;
    int port;
    store *st;
    pthread_barrier_t ready, go;   /* warm-up done; timing started */
    double deadline;
    client clients[MAX_CLIENTS];
};

static int send_http(client *c, const char *buf, size_t len)
{
    char url[256];
    reply rep = { .len = 0 };
    long long from = BASE_S + (long long)c->window * WINDOW_S;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/ingest?service=bench&instance=i%u&from=%lld&until=%lld",
             c->run->port, c->id, from, from + WINDOW_S);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, buf);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &rep);
    CURLcode rc = curl_easy_perform(c->curl);
    long code = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code != 200) {
        fprintf(stderr, "bench_ingest: client %u: %s, HTTP %ld: %s\n", c->id, curl_easy_strerror(rc), code, rep.buf);
        return -1;
    }
    return 0;
}

static int send_inproc(client *c, const char *buf, size_t len)
{
    char err[1024], inst[16];
    ingest_profile p;
    ingest_profile_init(&p);
    int rc = -1;
    if (ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, buf, len, err, sizeof err)) {
        fprintf(stderr, "bench_ingest: parse: %s\n", err);
        goto out;
    }
    store_stack *stacks = gen_xmalloc(p.n_stacks * sizeof *stacks);
    for (size_t i = 0; i < p.n_stacks; i++)
        stacks[i] = (store_stack){ p.stacks[i].frames, p.stacks[i].len, p.stacks[i].count };
    /* As the server does: resolve known stacks on this thread. */
    uint32_t *leaves = gen_xmalloc((p.n_stacks ? p.n_stacks : 1) * sizeof *leaves);
    int64_t from = (BASE_S + (int64_t)c->window * WINDOW_S) * 1000;
    snprintf(inst, sizeof inst, "i%u", c->id);
    store_label labels[3] = { { "instance", inst }, { "service", "bench" }, { "type", "cpu" } };
    uint64_t token = store_resolve(c->run->st, labels, 3, from, stacks, p.n_stacks, leaves);
    store_profile sp = { .labels = labels, .n_labels = 3, .from_ms = from, .until_ms = from + WINDOW_S * 1000,
                         .unit = "samples", .stacks = stacks, .n_stacks = p.n_stacks, .leaves = leaves,
                         .part_token = token };
    store_prep *prep = store_prepare(&sp);
    sp.prep = prep;
    if (store_write(c->run->st, &sp, NULL, err, sizeof err)) fprintf(stderr, "bench_ingest: store_write: %s\n", err);
    else rc = 0;
    store_prep_free(prep);
    free(stacks);
    free(leaves);
out:
    ingest_profile_free(&p);
    return rc;
}

/* One request: the next body of this client. */
static int send_one(client *c)
{
    const shape_data *sd = c->run->sd;
    const char *buf;
    size_t len;
    if (c->run->new_stacks) {
        new_body_patch(&c->nb, sd, c->id, &c->counter);
        buf = c->nb.buf;
        len = c->nb.len;
    } else {
        const body *b = &sd->bodies[(c->id + c->window) % N_BODIES];
        buf = b->buf;
        len = b->len;
    }
    int rc = c->run->via == VIA_HTTP ? send_http(c, buf, len) : send_inproc(c, buf, len);
    c->window++;
    if (rc) return -1;
    c->lines += LINES;
    c->bytes += len;
    c->requests++;
    return 0;
}

static int stagger_ms; /* BENCH_INGEST_STAGGER_MS: delay client i's first connection by i x this */

static void *client_main(void *arg)
{
    client *c = arg;
    if (stagger_ms > 0) usleep((useconds_t)(c->id * stagger_ms * 1000));
    /* one untimed request: the connection, the series, the code paths */
    if (send_one(c)) c->failed = 1;
    c->lines = c->bytes = c->requests = 0;
    pthread_barrier_wait(&c->run->ready);
    pthread_barrier_wait(&c->run->go);
    double cpu0 = thread_cpu();
    while (!c->failed && gen_now() < c->run->deadline)
        if (send_one(c)) c->failed = 1;
    c->cpu = thread_cpu() - cpu0;
    return NULL;
}

static int client_init(client *c, run *r, uint32_t id)
{
    memset(c, 0, sizeof *c);
    c->run = r;
    c->id = id;
    if (r->new_stacks) new_body_make(&c->nb, r->sd, SEED * 31 + id);
    if (r->via != VIA_HTTP) return 0;
    c->curl = curl_easy_init();
    if (!c->curl) return -1;
    c->headers = curl_slist_append(NULL, "Content-Type: text/plain");
    c->headers = curl_slist_append(c->headers, "Expect:"); /* no 100-continue round trip */
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_reply);
    return 0;
}

static void client_free(client *c)
{
    if (c->curl) curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->headers);
    free(c->nb.buf);
    free(c->nb.slot);
}

/* Reads flamedb_commit_duration_seconds_count from /metrics (0 if absent). */
static uint64_t server_commits(int port)
{
    CURL *h = curl_easy_init();
    if (!h) return 0;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    typedef struct { char *buf; size_t len; } text;
    text t = { NULL, 0 };
    FILE *mem = open_memstream(&t.buf, &t.len);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(h);
    fclose(mem);
    curl_easy_cleanup(h);
    uint64_t n = 0;
    const char *m = rc == CURLE_OK && t.buf ? strstr(t.buf, "flamedb_commit_duration_seconds_count ") : NULL;
    if (m) n = strtoull(m + strlen("flamedb_commit_duration_seconds_count "), NULL, 10);
    free(t.buf);
    return n;
}

typedef struct {
    double seconds, lines_per_s, mb_per_s, latency_ms;
    double server_cpu;   /* CPU seconds of the storing side: the server, or this process's writer+clients */
    double writer_cpu;   /* of which the store's writer threads */
    double wmax_cpu;     /* of which the busiest writer thread (HTTP only) */
    double http_cpu;     /* of which HTTP threads (or the in-process client threads parsing) */
    double client_cpu;   /* this process (HTTP clients); 0 in-process, where it is server_cpu */
    double other_cpu;    /* everything else the machine ran meanwhile */
    uint64_t lines, requests, commits, db_bytes;
    int busy_workers;    /* MHD threads that worked in the timed part */
    int ok;
} result;

static result run_scenario(const char *bin, const shape_data *sd, transport via, int new_stacks, int n_clients,
                           double duration)
{
    result res = { 0 };
    run *r = gen_xcalloc(1, sizeof *r);
    r->sd = sd;
    r->via = via;
    r->new_stacks = new_stacks;
    r->n_clients = n_clients;
    server srv = { 0 };
    char *dir = NULL;
    if (via == VIA_HTTP) {
        if (server_start(&srv, bin, "bench_ingest", "bench-ingest")) goto out;
        r->port = srv.port;
    } else {
        dir = gen_tempdir("bench-ingest-inproc");
        char err[512];
        store_options opt = { .dir = dir, .writers = getenv("BENCH_WRITERS") ? atoi(getenv("BENCH_WRITERS")) : 0 };
        if (store_open(&r->st, &opt, err, sizeof err)) {
            fprintf(stderr, "bench_ingest: store_open: %s\n", err);
            goto out;
        }
    }
    if (!new_stacks) { /* the fleet's stacks are known before the timed part */
        client w;
        if (client_init(&w, r, 99)) goto out;
        for (int i = 0; i < POOL / LINES && !w.failed; i++) {
            const char *buf = sd->warm[i].buf;
            size_t len = sd->warm[i].len;
            w.failed = (via == VIA_HTTP ? send_http(&w, buf, len) : send_inproc(&w, buf, len)) != 0;
            w.window++;
        }
        int failed = w.failed;
        client_free(&w);
        if (failed) goto out;
    }
    pthread_barrier_init(&r->ready, NULL, (unsigned)n_clients + 1);
    pthread_barrier_init(&r->go, NULL, (unsigned)n_clients + 1);
    pthread_t th[MAX_CLIENTS];
    for (int i = 0; i < n_clients; i++) {
        if (client_init(&r->clients[i], r, (uint32_t)i)) {
            fprintf(stderr, "bench_ingest: curl_easy_init failed\n");
            exit(1);
        }
        pthread_create(&th[i], NULL, client_main, &r->clients[i]);
    }
    pthread_barrier_wait(&r->ready);
    uint64_t commits0 = via == VIA_HTTP ? server_commits(r->port) : 0;
    store_stats ss0 = { 0 }, ss1 = { 0 };
    if (r->st) store_get_stats(r->st, &ss0);
    server_cpu srv0;
    memset(&srv0, 0, sizeof srv0);
    if (via == VIA_HTTP) srv0 = proc_cpu(srv.pid);
    double self0 = self_cpu(), busy0 = machine_busy_s();
    double t0 = gen_now();
    r->deadline = t0 + duration;
    pthread_barrier_wait(&r->go);
    int failed = 0;
    for (int i = 0; i < n_clients; i++) {
        pthread_join(th[i], NULL);
        client *c = &r->clients[i];
        failed |= c->failed;
        res.lines += c->lines;
        res.requests += c->requests;
        res.mb_per_s += (double)c->bytes;
        res.http_cpu += c->cpu;
    }
    res.seconds = gen_now() - t0;
    double self = self_cpu() - self0, busy = machine_busy_s() - busy0;
    if (via == VIA_HTTP) {
        server_cpu srv1 = proc_cpu(srv.pid);
        res.server_cpu = srv1.total - srv0.total;
        res.http_cpu = srv1.http - srv0.http;
        res.writer_cpu = res.server_cpu - res.http_cpu;
        res.wmax_cpu = busiest_writer(&srv0, &srv1);
        res.client_cpu = self;
        res.busy_workers = busy_http_threads(&srv0, &srv1);
        res.commits = server_commits(r->port) - commits0;
    } else {
        /* in-process: the clients parse and wait; the rest is the writer */
        res.server_cpu = self;
        res.writer_cpu = self - res.http_cpu;
        store_get_stats(r->st, &ss1);
        res.commits = ss1.commits - ss0.commits;
    }
    res.other_cpu = busy - res.server_cpu - res.client_cpu;
    if (res.other_cpu < 0) res.other_cpu = 0;
    for (int i = 0; i < n_clients; i++) client_free(&r->clients[i]);
    pthread_barrier_destroy(&r->ready);
    pthread_barrier_destroy(&r->go);
    res.lines_per_s = (double)res.lines / res.seconds;
    res.mb_per_s = res.mb_per_s / res.seconds / 1e6;
    res.latency_ms = res.requests ? res.seconds * n_clients / (double)res.requests * 1e3 : 0;
    res.ok = !failed && res.requests > 0;
out:
    if (via == VIA_HTTP) {
        if (srv.dir) res.db_bytes = server_stop(&srv, NULL, NULL);
    } else {
        if (r->st) {
            store_get_stats(r->st, &ss1);
            res.db_bytes = ss1.db_bytes;
            store_close(r->st);
        }
        if (dir) gen_rm_rf(dir);
        free(dir);
    }
    free(r);
    return res;
}

/* ---- the parse baseline ---------------------------------------------------- */

static void parse_baseline(const shape_data *sd, double seconds, double *lines_per_s, double *mb_per_s)
{
    char err[512];
    uint64_t lines = 0, bytes = 0;
    double t0 = gen_now(), t;
    ingest_profile p;
    do {
        for (int i = 0; i < N_BODIES; i++) {
            ingest_profile_init(&p);
            if (ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, sd->bodies[i].buf, sd->bodies[i].len, err, sizeof err)) {
                fprintf(stderr, "bench_ingest: parse: %s\n", err);
                exit(1);
            }
            lines += p.n_stacks;
            bytes += sd->bodies[i].len;
            ingest_profile_free(&p);
        }
    } while ((t = gen_now() - t0) < seconds);
    *lines_per_s = (double)lines / t;
    *mb_per_s = (double)bytes / t / 1e6;
}

/* ---- main ------------------------------------------------------------------ */

static const char *only;

/* A row runs when, for each dimension (shape, kind, clients, via), the
 * filter names none of the dimension's values or names the row's value; a
 * NULL value means the dimension does not apply to the row. */
static int selected(const char *shape, const char *kind, const char *clients, const char *via)
{
    static const char *const all[4][4] = {
        { "compact", "deep" }, { "repeated", "new", "parse" }, { "1", "4", "16", "64" }, { "http", "inproc" },
    };
    const char *mine[4] = { shape, kind, clients, via };
    if (!only || !*only) return 1;
    char hay[512], tok[32];
    snprintf(hay, sizeof hay, ",%s,", only);
    for (int d = 0; d < 4; d++) {
        int named_any = 0, named_mine = 0;
        for (int k = 0; k < 4 && all[d][k]; k++) {
            snprintf(tok, sizeof tok, ",%s,", all[d][k]);
            if (!strstr(hay, tok)) continue;
            named_any = 1;
            if (mine[d] && !strcmp(mine[d], all[d][k])) named_mine = 1;
        }
        if (named_any && mine[d] && !named_mine) return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/flamedb [seconds per scenario]\n", argv[0]);
        return 2;
    }
    const char *bin = argv[1];
    double duration = argc > 2 ? atof(argv[2]) : 2.0;
    if (duration <= 0) duration = 2.0;
    only = getenv("BENCH_INGEST_ONLY");
    if (getenv("BENCH_INGEST_STAGGER_MS")) stagger_ms = atoi(getenv("BENCH_INGEST_STAGGER_MS"));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    double t_start = gen_now();
    printf("bench_ingest: HTTP ingest of folded text, %d lines a request, %.1f s a scenario, %ld cores "
           "(server and clients share them)\n", LINES, duration, cores);

    static const int clients[4] = { 1, 4, 16, 64 };
    int failures = 0;
    for (int s = 0; s < 2; s++) {
        if (!selected(shapes[s].name, NULL, NULL, NULL)) continue;
        shape_data *sd = gen_xmalloc(sizeof *sd);
        shape_make(sd, &shapes[s]);
        printf("\n[%s] depth %u..%u (mean %.1f), %.0f bytes a line in the bodies; pool %d stacks, Zipf s=%.1f\n",
               shapes[s].name, shapes[s].dmin, shapes[s].dmax, gen_pool_mean_depth(&sd->pool), sd->line_bytes, POOL,
               ZIPF_S);
        double parse_lps = 0, parse_mbs = 0;
        if (selected(shapes[s].name, "parse", NULL, NULL)) {
            parse_baseline(sd, 0.5, &parse_lps, &parse_mbs);
            printf("  baseline ingest_parse_stacks in-process, 1 thread: %.2f M lines/s, %.0f MB/s\n", parse_lps / 1e6,
                   parse_mbs);
        }
        printf("  %-7s %-8s %3s %8s %7s %7s %9s %6s %8s %5s %7s %5s %5s %7s %6s %9s %7s %7s %6s\n", "via", "stacks", "cl",
               "Mlines/s", "MB/s", "ms/req", "Ml/s/core", "target", "vs parse", "CPU%", "writer%", "wmax%", "http%",
               "client%", "other%", "Ml/CPU-s", "req/com", "workers", "db MB");
        for (int kind = 0; kind < 2; kind++) {
            for (int ci = 0; ci < 5; ci++) {
                transport via = ci < 4 ? VIA_HTTP : VIA_INPROC;
                int n = ci < 4 ? clients[ci] : INPROC_THREADS;
                char nbuf[8];
                snprintf(nbuf, sizeof nbuf, "%d", n);
                if (!selected(shapes[s].name, kind ? "new" : "repeated", nbuf, via == VIA_HTTP ? "http" : "inproc"))
                    continue;
                result r = run_scenario(bin, sd, via, kind, n, duration);
                if (!r.ok) {
                    printf("  %-9s %-8s %7d   FAILED (see stderr)\n", via == VIA_HTTP ? "http" : "in-proc",
                           kind ? "new" : "repeated", n);
                    failures++;
                    continue;
                }
                double per_core = r.lines_per_s / (double)cores;
                double per_cpu = r.server_cpu > 0 ? (double)r.lines / r.server_cpu : 0;
                char vs[16] = "-", workers[16] = "-";
                if (via == VIA_HTTP) snprintf(workers, sizeof workers, "%d", r.busy_workers);
                if (parse_lps > 0) snprintf(vs, sizeof vs, "%.3f", per_core / parse_lps);
                printf("  %-7s %-8s %3d %8.3f %7.1f %7.1f %9.3f %6.3f %8s %5.0f %7.0f %5.0f %5.0f %7.0f %6.0f %9.3f %7.1f %7s %6.1f\n",
                       via == VIA_HTTP ? "http" : "in-proc", kind ? "new" : "repeated", n, r.lines_per_s / 1e6,
                       r.mb_per_s, r.latency_ms, per_core / 1e6, per_core / TARGET_LINES_PER_CORE, vs,
                       100 * r.server_cpu / r.seconds, 100 * r.writer_cpu / r.seconds, 100 * r.wmax_cpu / r.seconds,
                       100 * r.http_cpu / r.seconds,
                       100 * r.client_cpu / r.seconds, 100 * r.other_cpu / r.seconds, per_cpu / 1e6, r.commits ? (double)r.requests / (double)r.commits : 0.0, workers, r.db_bytes / 1e6);
                printf("RESULT ingest %s %s %s %d: %.0f lines/s, %.0f lines/s/core, %.1f MB/s, target ratio %.3f, "
                       "%.0f lines per server CPU-s\n",
                       shapes[s].name, via == VIA_HTTP ? "http" : "inproc", kind ? "new" : "repeated", n,
                       r.lines_per_s, per_core, r.mb_per_s, per_core / TARGET_LINES_PER_CORE, per_cpu);
            }
        }
        shape_free(sd);
        free(sd);
    }
    printf("\n  columns: Mlines/s = stack lines stored per second, all clients; ms/req = mean request latency;\n"
           "  Ml/s/core = Mlines/s / %ld cores (server and clients share them); target = Ml/s/core / 1.0;\n"
           "  vs parse = Ml/s/core / in-process ingest_parse_stacks on one thread; CPU%% = server CPU time / wall\n"
           "  time (in-proc: this process), split into writer%% (the store's writer threads; wmax%% the busiest,\n"
           "  the ceiling a single writer hits at 100; BENCH_WRITERS=N runs serve --writers N) and http%% (MHD\n"
           "  threads; in-proc: the parsing threads); client%% = this process's HTTP clients; other%% =\n"
           "  the rest of the machine meanwhile (another process, or hypervisor steal: a noisy figure);\n"
           "  Ml/CPU-s = M lines per server CPU-second; workers = MHD threads that did work (a keep-alive\n"
           "  connection stays on one worker, so fewer workers than clients means clients queue on one);\n"
           "  req/com = requests per group commit; db MB = the data directory's *.mdb files at the end.\n", cores);
    printf("  total time %.1f s\n", gen_now() - t_start);
    curl_global_cleanup();
    return failures ? 1 : 0;
}
