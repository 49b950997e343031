/* bench_fleet.c — a fleet of agents pushing to one server: the server's CPU,
 * memory and latency under a steady, realistic load, and nothing lost.
 *
 * Usage: bench_fleet /abs/path/to/flamedb [seconds]
 * Env:   BENCH_FLEET_AGENTS    agents (default 1000)
 *        BENCH_FLEET_SERVICES  services the agents are spread over (default 20)
 *        BENCH_FLEET_INTERVAL  whole seconds between an agent's pushes (default 10)
 *        BENCH_FLEET_SECONDS   seconds of pushing, warm-up included (default
 *                              600; the argument overrides it).  Short mode: 30.
 *        BENCH_FLEET_SHAPE     compact (default) or deep: the shape of the stacks
 *        BENCH_FLEET_GZIP      deflate level of the bodies, 0 = plain text
 *                              (default 6: flamedb-agent's, common/gzip.c)
 *        BENCH_FLEET_THREADS   client threads (default 8)
 *        BENCH_FLEET_BAD       percent of pushes that are malformed (default 0;
 *                              issue 12's soak: 5): each must be answered 400
 *                              and nothing else may be lost
 *        BENCH_FLEET_REPORT    seconds between progress lines (default: every
 *                              interval up to 120 s, else a tenth of the run)
 *
 * The real server binary runs on a fresh temporary data directory
 * (`serve --listen 127.0.0.1:0 --data DIR --retention 0`; the port comes from
 * its "listening on http://127.0.0.1:PORT" stderr line).
 *
 * The fleet.  Each service has its own pool of 20,000 distinct stacks made by
 * gen.h (its own seed, so its own function names), grown like a call tree.
 * compact: depth 10..30, short C names, ~240 bytes a line (the project's
 * "~100-300 bytes a line", bench_ingest's compact); deep: depth 10..60 and
 * Go/C++/Java/Rust names of 20..60 bytes, ~1.3 KB a line (bench_ingest's and
 * bench_storage's deep).  Agent a (labels service=svc(a mod S),
 * instance=agent-a, type=cpu) pushes every interval one profile of the window
 * that just ended: 500 distinct stacks drawn Zipf(1.1) from its service's
 * pool, counts summing to 2,000 samples, rate 100 Hz, as POST
 * /api/v1/ingest?...&from=..&until=.. (unix seconds, real time; an agent's
 * windows are consecutive).  Agents' phases are spread evenly over the
 * interval (a fleet is not synchronized).  Every body is drawn fresh (each
 * agent has its own seeded generator) and gzip'd as the agent does, so the
 * server sees the stacks a real fleet would show it: the union of a
 * service's pushes grows towards its whole pool, and so do the call tree and
 * the rollups.
 *
 * The clients.  A few threads, each driving its share of the agents through
 * one libcurl multi handle: open loop (a push starts on schedule whether or
 * not the server kept up; an agent whose previous push is still running
 * pushes as soon as it ends, as the real agent would), one keep-alive
 * connection per agent (each agent has its own host name resolved to
 * 127.0.0.1, so libcurl never lends one agent's connection to another).  A
 * request counts when answered 200; its latency is libcurl's total time.
 *
 * Warm-up: the first interval, in which every agent pushes once (its series
 * and most of its stacks are new then); its figures are printed apart.  The
 * steady part is everything after it: server CPU (utime + stime of
 * /proc/PID/stat, split by thread name from /proc/PID/task) over wall time,
 * RSS (RssAnon, RssFile of /proc/PID/status sampled every 0.2 s; VmHWM for the
 * peak), p50/p99/max latency, errors.  A progress line every interval (every
 * tenth of the run when it is longer than 120 s) shows CPU, latency, RSS and
 * call-tree nodes over time.
 *
 * Nothing lost: the samples the server acknowledged (the "samples" of each
 * 200 answer) must equal the samples of GET /api/v1/series over the whole
 * range, and the stored profiles the acknowledged requests.
 *
 * Baselines in the same run: the in-process cost of only reading the bytes the
 * fleet sends (ingest_gunzip + ingest_parse_stacks of bodies like the agents',
 * one thread), as a percentage of one core at the fleet's request rate: the
 * floor no ingest path can go below; and this process's own CPU (the clients,
 * and how much of it went to making and gzipping bodies).  The rest of the
 * machine's CPU is printed too: other tasks, irq, steal.
 *
 * Targets (the issue, on the 2-core machine): <= 5 % of one core, RSS <= 100
 * MiB, 0 errors, nothing lost.  Exit status 1 when the server would not start,
 * a request failed, or samples were lost. */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <zlib.h>

#include "../ingest/ingest.h"
#include "gen.h"
#include "server.h"

#define SEED UINT64_C(0x666c656574)
#define POOL 20000
#define DISTINCT 500
#define SAMPLES 2000
#define RATE_HZ 100
#define ZIPF_S 1.1
#define TARGET_CPU_PCT 5.0
#define TARGET_RSS_MIB 100.0
#define MAX_THREADS 64

static double mib(uint64_t kb) { return (double)kb / 1024.0; }

/* ---- the bodies ------------------------------------------------------------ */

typedef struct {
    const char *name;
    gen_shape shape;
    uint32_t n_funcs, dmin, dmax;
} shape_def;

static const shape_def shapes[2] = {
    { "compact", GEN_COMPACT, 2000, 10, 30 },
    { "deep", GEN_DEEP, 4000, 10, 60 },
};

typedef struct {
    const shape_def *def;
    int gzip;                /* deflate level, 0 = plain text */
    uint32_t n_services;
    gen_pool *pools;         /* one a service */
    gen_zipf zipf;           /* read-only once made: shared by the threads */
    unsigned bad_pct;        /* BENCH_FLEET_BAD */
    unsigned char *bad_body; /* a malformed push: its second line has no count */
    size_t bad_len;
} fleet_data;

/* What one thread needs to make bodies: Zipf scratch, the folded text, a
 * deflate stream reused with deflateReset. */
typedef struct {
    uint32_t *stamp, *slot, tag;
    gen_profile pr;
    char *text;
    size_t text_cap;
    z_stream z;
    int level;
    double cpu;              /* thread CPU seconds spent making bodies */
} body_maker;

static void maker_init(body_maker *m, int level)
{
    memset(m, 0, sizeof *m);
    m->stamp = gen_xcalloc(POOL, sizeof *m->stamp);
    m->slot = gen_xcalloc(POOL, sizeof *m->slot);
    m->level = level;
    if (level && deflateInit2(&m->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        fprintf(stderr, "bench_fleet: deflateInit2 failed\n");
        exit(1);
    }
}

static void maker_free(body_maker *m)
{
    if (m->level) deflateEnd(&m->z);
    free(m->stamp);
    free(m->slot);
    free(m->text);
    gen_profile_free(&m->pr);
}

/* DISTINCT distinct stacks drawn Zipf, then counts brought to SAMPLES: more
 * Zipf draws that land on the chosen stacks, or (rarely, when reaching
 * DISTINCT took more than SAMPLES draws) one sample at a time taken back from
 * random stacks that have more than one. */
static void fleet_profile(gen_profile *pr, const gen_pool *p, const gen_zipf *z, gen_rng *r, uint32_t *stamp,
                          uint32_t *slot, uint32_t tag)
{
    gen_profile_zipf(pr, p, z, r, DISTINCT, 0, stamp, slot, tag);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < pr->n; i++) sum += pr->count[i];
    while (sum < SAMPLES) {
        uint32_t s = p->perm[gen_zipf_draw(z, r)];
        if (stamp[s] != tag) continue;
        pr->count[slot[s]]++;
        sum++;
    }
    while (sum > SAMPLES) {
        uint32_t i = (uint32_t)gen_below(r, pr->n);
        if (pr->count[i] < 2) continue;
        pr->count[i]--;
        sum--;
    }
}

/* A fresh body of the service into *buf (grown as needed): a new profile
 * drawn with r, as folded text, gzip'd when the level is not 0.  Answers the
 * bytes to send; *raw_len is the folded text's length. */
static size_t make_body(body_maker *m, const fleet_data *fd, uint32_t service, gen_rng *r, unsigned char **buf,
                        size_t *cap, size_t *raw_len)
{
    double c0 = thread_cpu();
    const gen_pool *p = &fd->pools[service];
    fleet_profile(&m->pr, p, &fd->zipf, r, m->stamp, m->slot, ++m->tag);
    size_t len = gen_profile_folded(&m->pr, p, &m->text, &m->text_cap), out;
    *raw_len = len;
    if (!m->level) {
        if (len > *cap) *buf = gen_xrealloc(*buf, *cap = len);
        memcpy(*buf, m->text, len);
        out = len;
    } else {
        size_t need = deflateBound(&m->z, len) + 32;
        if (need > *cap) *buf = gen_xrealloc(*buf, *cap = need);
        deflateReset(&m->z);
        m->z.next_in = (Bytef *)m->text;
        m->z.avail_in = (uInt)len;
        m->z.next_out = *buf;
        m->z.avail_out = (uInt)*cap;
        if (deflate(&m->z, Z_FINISH) != Z_STREAM_END) {
            fprintf(stderr, "bench_fleet: deflate failed\n");
            exit(1);
        }
        out = m->z.total_out;
    }
    m->cpu += thread_cpu() - c0;
    return out;
}

/* Makes two bodies a service like the agents' and measures, on one thread,
 * what only reading them costs the server: ingest_gunzip (when gzip'd) and
 * ingest_parse_stacks.  Answers seconds a body; *raw and *sent are the mean
 * bytes of a body before and after gzip, *make the seconds to make one. */
static double parse_floor(const fleet_data *fd, double *raw, double *sent, double *make)
{
    enum { PER_SERVICE = 2, REPEAT = 3 };
    uint32_t n = fd->n_services * PER_SERVICE;
    unsigned char **bufs = gen_xcalloc(n, sizeof *bufs);
    size_t *lens = gen_xcalloc(n, sizeof *lens);
    body_maker m;
    maker_init(&m, fd->gzip);
    gen_rng r;
    gen_rng_seed(&r, SEED ^ 0xf100);
    *raw = *sent = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t cap = 0, rl;
        lens[i] = make_body(&m, fd, i / PER_SERVICE, &r, &bufs[i], &cap, &rl);
        *raw += (double)rl / n;
        *sent += (double)lens[i] / n;
    }
    *make = m.cpu / n;
    maker_free(&m);
    char err[512];
    double t0 = gen_now();
    for (int rep = 0; rep < REPEAT; rep++) {
        for (uint32_t i = 0; i < n; i++) {
            char *plain = NULL;
            size_t len = lens[i];
            const char *text = (const char *)bufs[i];
            if (fd->gzip) {
                if (ingest_gunzip(bufs[i], lens[i], (size_t)64 << 20, &plain, &len, err, sizeof err)) {
                    fprintf(stderr, "bench_fleet: gunzip: %s\n", err);
                    exit(1);
                }
                text = plain;
            }
            ingest_profile p;
            ingest_profile_init(&p);
            if (ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, text, len, err, sizeof err)) {
                fprintf(stderr, "bench_fleet: parse: %s\n", err);
                exit(1);
            }
            ingest_profile_free(&p);
            free(plain);
        }
    }
    double per = (gen_now() - t0) / (REPEAT * n);
    for (uint32_t i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(lens);
    return per;
}

/* ---- the server's CPU (server.h starts it and reads the rest of /proc) ------- */

/* The server's CPU seconds, split by its threads' names: the store's writer
 * ("flamedb-writer"), the parsing pool ("flamedb-parse"), libmicrohttpd's
 * ("MHD-..."), the rest (main, retention). */
typedef struct { double total, writer, parse, http, other; int threads; } server_cpu;

static void add_task(void *arg, long tid, const char *comm, double t)
{
    server_cpu *c = arg;
    (void)tid;
    c->threads++;
    if (!strncmp(comm, "flamedb-writer", 14)) c->writer += t; /* every writer thread */
    else if (!strcmp(comm, "flamedb-parse")) c->parse += t;
    else if (!strncmp(comm, "MHD", 3)) c->http += t;
    else c->other += t;
}

static server_cpu proc_cpu(pid_t pid)
{
    server_cpu c = { 0 };
    c.total = proc_task_cpu(pid, add_task, &c);
    return c;
}

/* ---- HTTP GETs of the main thread ---------------------------------------------- */

static size_t to_memstream(char *data, size_t size, size_t nmemb, void *arg)
{
    return fwrite(data, size, nmemb, (FILE *)arg);
}

/* GETs url into a malloc'd NUL-terminated string; NULL unless answered 200. */
static char *http_get(CURL *h, const char *url)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_memstream);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    CURLcode rc = curl_easy_perform(h);
    fclose(mem);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code != 200) {
        fprintf(stderr, "bench_fleet: GET %s: %s, HTTP %ld: %.300s\n", url, curl_easy_strerror(rc), code,
                buf ? buf : "");
        free(buf);
        return NULL;
    }
    return buf;
}

/* A value of /metrics ("name value" at the start of a line), or -1. */
static double metric(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == ' ') return atof(p + n + 1);
    return -1;
}

typedef struct { double commits, commit_s, commits_100ms, nodes, series, dict_bytes; } server_metrics;

static server_metrics get_metrics(CURL *h, int port)
{
    server_metrics m = { -1, -1, -1, -1, -1, -1 };
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    char *t = http_get(h, url);
    if (!t) return m;
    m.commits = metric(t, "flamedb_commit_duration_seconds_count");
    m.commit_s = metric(t, "flamedb_commit_duration_seconds_sum");
    m.commits_100ms = metric(t, "flamedb_commit_duration_seconds_bucket{le=\"0.1\"}");
    if (m.commits >= 0 && m.commits_100ms >= 0) m.commits_100ms = m.commits - m.commits_100ms;
    m.nodes = metric(t, "flamedb_call_tree_nodes");
    m.series = metric(t, "flamedb_series");
    m.dict_bytes = metric(t, "flamedb_dictionary_memory_bytes");
    free(t);
    return m;
}

/* ---- the agents ---------------------------------------------------------------- */

typedef struct {
    uint32_t id, service;
    double phase;              /* seconds after t0 of the first push */
    uint32_t pushes;           /* started */
    int busy, steady;          /* a request in flight; it is past the warm-up */
    int bad;                   /* the push in flight is malformed */
    gen_rng rng;               /* draws the agent's profiles */
    unsigned char *body;       /* the body in flight */
    size_t body_cap;
    CURL *h;
    struct curl_slist *resolve;
    reply rep;
} agent;

typedef struct { float *v; size_t n, cap; } lat_list;

static void lat_add(lat_list *l, float v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->v = gen_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = v;
}

typedef struct fleet fleet;

typedef struct {
    fleet *f;
    uint32_t first, step;      /* agents first, first + step, ... */
    agent *agents;
    uint32_t n;
    CURLM *multi;
    body_maker maker;
    pthread_mutex_t lock;      /* lat and the counters, read by the main thread's progress lines */
    lat_list lat[2];           /* ms, [0] warm-up, [1] steady */
    size_t reported[2];        /* lat entries already in a progress line */
    uint64_t ok[2], errors[2], samples_acked[2], bytes[2], raw_bytes[2], late;
    uint64_t bad_sent[2], bad_refused[2]; /* malformed pushes, and those answered 400 */
    double make_cpu[2];        /* CPU seconds making bodies */
    uint64_t reconnects;       /* requests that opened a new connection after the agent's first */
} worker;

struct fleet {
    const fleet_data *fd;
    int port;
    uint32_t n_agents, n_services, n_threads;
    double interval, duration;
    double t0;                 /* monotonic, first push of phase 0 */
    int64_t t0_unix;
    struct curl_slist *headers;
    pthread_barrier_t ready;
    worker workers[MAX_THREADS];
    _Atomic int errors_printed;
};

static void agent_start(worker *w, agent *a)
{
    fleet *f = w->f;
    char url[320];
    /* window n of the agent: the interval that ended at its push n */
    int64_t from = f->t0_unix + (int64_t)a->phase + ((int64_t)a->pushes - 1) * (int64_t)f->interval;
    snprintf(url, sizeof url,
             "http://agent-%u:%d/api/v1/ingest?service=svc%u&instance=agent-%u&type=cpu&from=%lld&until=%lld&rate=%d",
             a->id, f->port, a->service, a->id, (long long)from, (long long)(from + (int64_t)f->interval), RATE_HZ);
    double c0 = w->maker.cpu;
    /* every BENCH_FLEET_BAD-th percent of pushes is malformed, by push
     * number: the agents' profiles are drawn as without them */
    a->bad = f->fd->bad_pct && (a->id * 7919u + a->pushes) % 100 < f->fd->bad_pct;
    size_t raw = 0, len = a->bad ? f->fd->bad_len : make_body(&w->maker, f->fd, a->service, &a->rng, &a->body,
                                                               &a->body_cap, &raw);
    a->rep.len = 0;
    a->rep.buf[0] = '\0';
    a->steady = a->pushes > 0;
    w->make_cpu[a->steady] += w->maker.cpu - c0;
    curl_easy_setopt(a->h, CURLOPT_URL, url);
    curl_easy_setopt(a->h, CURLOPT_POSTFIELDS, a->bad ? f->fd->bad_body : a->body);
    curl_easy_setopt(a->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(a->h, CURLOPT_PRIVATE, a);
    w->bytes[a->steady] += len;
    w->raw_bytes[a->steady] += raw;
    a->pushes++;
    a->busy = 1;
    curl_multi_add_handle(w->multi, a->h);
}

static void agent_done(worker *w, agent *a, CURLcode rc)
{
    long code = 0;
    curl_off_t total_us = 0;
    long connects = 0;
    curl_easy_getinfo(a->h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(a->h, CURLINFO_TOTAL_TIME_T, &total_us);
    curl_easy_getinfo(a->h, CURLINFO_NUM_CONNECTS, &connects);
    curl_multi_remove_handle(w->multi, a->h);
    a->busy = 0;
    int st = a->steady;
    pthread_mutex_lock(&w->lock);
    if (connects > 0 && a->pushes > 1) w->reconnects++;
    if (a->bad) {
        w->bad_sent[st]++;
        int refused = rc == CURLE_OK && code == 400;
        w->bad_refused[st] += (uint64_t)refused;
        pthread_mutex_unlock(&w->lock);
        if (!refused && atomic_fetch_add(&w->f->errors_printed, 1) < 10)
            fprintf(stderr, "bench_fleet: agent %u push %u, malformed: %s, HTTP %ld (not 400): %s\n", a->id,
                    a->pushes - 1, curl_easy_strerror(rc), code, a->rep.buf);
        return;
    }
    if (rc == CURLE_OK && code == 200) {
        const char *m = strstr(a->rep.buf, "\"samples\":");
        w->ok[st]++;
        w->samples_acked[st] += m ? strtoull(m + 10, NULL, 10) : 0;
        lat_add(&w->lat[st], (float)((double)total_us / 1e3));
        pthread_mutex_unlock(&w->lock);
        return;
    }
    w->errors[st]++;
    pthread_mutex_unlock(&w->lock);
    if (atomic_fetch_add(&w->f->errors_printed, 1) < 10)
        fprintf(stderr, "bench_fleet: agent %u push %u: %s, HTTP %ld: %s\n", a->id, a->pushes - 1,
                curl_easy_strerror(rc), code, a->rep.buf);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    fleet *f = w->f;
    pthread_barrier_wait(&f->ready);
    double end = f->t0 + f->duration;
    for (;;) {
        double now = gen_now(), next = end;
        int in_flight = 0;
        for (uint32_t i = 0; i < w->n; i++) {
            agent *a = &w->agents[i];
            double due = f->t0 + a->phase + a->pushes * f->interval;
            if (a->busy) {
                in_flight = 1;
                continue;
            }
            if (due >= end) continue;
            if (due <= now) {
                if (now - due > 1.0) w->late++; /* the previous push held it up */
                agent_start(w, a);
                in_flight = 1;
            } else if (due < next) {
                next = due;
            }
        }
        int running = 0;
        curl_multi_perform(w->multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(w->multi, &left)))
            if (msg->msg == CURLMSG_DONE) {
                agent *a = NULL;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&a);
                agent_done(w, a, msg->data.result);
            }
        now = gen_now();
        if (!in_flight && now >= end) break;
        double wait = next - now;
        if (wait > 0.05) wait = 0.05;
        if (wait < 0) wait = 0;
        curl_multi_poll(w->multi, NULL, 0, (int)(wait * 1000), NULL);
    }
    return NULL;
}

static int worker_init(worker *w, fleet *f, uint32_t first)
{
    w->f = f;
    w->first = first;
    w->step = f->n_threads;
    w->n = first < f->n_agents ? (f->n_agents - first + w->step - 1) / w->step : 0;
    w->agents = gen_xcalloc(w->n ? w->n : 1, sizeof *w->agents);
    w->multi = curl_multi_init();
    if (!w->multi) return -1;
    /* keep every agent's idle connection */
    curl_multi_setopt(w->multi, CURLMOPT_MAXCONNECTS, (long)w->n + 16);
    maker_init(&w->maker, f->fd->gzip);
    pthread_mutex_init(&w->lock, NULL);
    for (uint32_t i = 0; i < w->n; i++) {
        agent *a = &w->agents[i];
        a->id = first + i * w->step;
        a->service = a->id % f->n_services;
        a->phase = f->interval * a->id / f->n_agents;
        gen_rng_seed(&a->rng, SEED * 31 + a->id);
        a->h = curl_easy_init();
        if (!a->h) return -1;
        char res[96];
        snprintf(res, sizeof res, "agent-%u:%d:127.0.0.1", a->id, f->port);
        a->resolve = curl_slist_append(NULL, res);
        curl_easy_setopt(a->h, CURLOPT_RESOLVE, a->resolve);
        curl_easy_setopt(a->h, CURLOPT_HTTPHEADER, f->headers);
        curl_easy_setopt(a->h, CURLOPT_POST, 1L);
        curl_easy_setopt(a->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(a->h, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(a->h, CURLOPT_CONNECTTIMEOUT, 5L);
        curl_easy_setopt(a->h, CURLOPT_TIMEOUT, 30L); /* as flamedb-agent */
        curl_easy_setopt(a->h, CURLOPT_WRITEFUNCTION, on_reply);
        curl_easy_setopt(a->h, CURLOPT_WRITEDATA, &a->rep);
    }
    return 0;
}

static void worker_free(worker *w)
{
    for (uint32_t i = 0; i < w->n; i++) {
        if (w->agents[i].h) curl_easy_cleanup(w->agents[i].h);
        curl_slist_free_all(w->agents[i].resolve);
        free(w->agents[i].body);
    }
    if (w->multi) curl_multi_cleanup(w->multi);
    maker_free(&w->maker);
    pthread_mutex_destroy(&w->lock);
    free(w->agents);
    free(w->lat[0].v);
    free(w->lat[1].v);
}

/* ---- figures -------------------------------------------------------------------- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

typedef struct { double p50, p99, max; size_t n; } lat_summary;

static lat_summary lat_merge(fleet *f, int which)
{
    lat_list all = { 0 };
    for (uint32_t t = 0; t < f->n_threads; t++)
        for (size_t i = 0; i < f->workers[t].lat[which].n; i++) lat_add(&all, f->workers[t].lat[which].v[i]);
    lat_summary s = { 0, 0, 0, all.n };
    if (all.n) {
        qsort(all.v, all.n, sizeof *all.v, cmp_float);
        s.p50 = all.v[(all.n - 1) / 2];
        s.p99 = all.v[(size_t)((double)(all.n - 1) * 0.99)];
        s.max = all.v[all.n - 1];
    }
    free(all.v);
    return s;
}

/* Sums "samples" and "profiles" over every series of GET /api/v1/series. */
static int stored_totals(CURL *h, int port, int64_t from, int64_t until, uint64_t *samples, uint64_t *profiles,
                         size_t *series)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/series?query=%%7B%%7D&from=%lld&until=%lld", port,
             (long long)from, (long long)until);
    char *t = http_get(h, url);
    if (!t) return -1;
    json_error_t jerr;
    json_t *root = json_loads(t, 0, &jerr);
    free(t);
    json_t *arr = root ? json_object_get(root, "series") : NULL;
    if (!json_is_array(arr)) {
        fprintf(stderr, "bench_fleet: /api/v1/series: no \"series\" array (%s)\n", root ? "" : jerr.text);
        json_decref(root);
        return -1;
    }
    *samples = *profiles = 0;
    *series = json_array_size(arr);
    for (size_t i = 0; i < *series; i++) {
        json_t *s = json_array_get(arr, i);
        *samples += (uint64_t)json_integer_value(json_object_get(s, "samples"));
        *profiles += (uint64_t)json_integer_value(json_object_get(s, "profiles"));
    }
    json_decref(root);
    return 0;
}

/* Requests answered 200 and errors so far, and p99 and max latency of the
 * requests answered since the last call. */
static void progress(fleet *f, uint64_t *req, uint64_t *err, double *p99, double *max)
{
    lat_list l = { 0 };
    *req = *err = 0;
    for (uint32_t t = 0; t < f->n_threads; t++) {
        worker *w = &f->workers[t];
        pthread_mutex_lock(&w->lock);
        for (int k = 0; k < 2; k++) {
            *req += w->ok[k];
            *err += w->errors[k];
            for (size_t i = w->reported[k]; i < w->lat[k].n; i++) lat_add(&l, w->lat[k].v[i]);
            w->reported[k] = w->lat[k].n;
        }
        pthread_mutex_unlock(&w->lock);
    }
    *p99 = *max = 0;
    if (l.n) {
        qsort(l.v, l.n, sizeof *l.v, cmp_float);
        *p99 = l.v[(size_t)((double)(l.n - 1) * 0.99)];
        *max = l.v[l.n - 1];
    }
    free(l.v);
}

static double env_num(const char *name, double def)
{
    const char *v = getenv(name);
    if (!v || !*v) return def;
    double x = atof(v);
    return x > 0 ? x : def;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        /* bench/run.sh runs every bench_* without arguments */
        fprintf(stderr, "usage: %s /abs/path/to/flamedb [seconds]  (env BENCH_FLEET_AGENTS, _SERVICES, _INTERVAL, "
                        "_SECONDS, _SHAPE, _GZIP, _THREADS, _BAD, _REPORT)\n", argv[0]);
        printf("RESULT fleet: skipped, no flamedb binary given (run: bench_fleet /abs/path/to/flamedb [seconds])\n");
        return 0;
    }
    const char *bin = argv[1];
    fleet *f = gen_xcalloc(1, sizeof *f);
    f->n_agents = (uint32_t)env_num("BENCH_FLEET_AGENTS", 1000);
    f->n_services = (uint32_t)env_num("BENCH_FLEET_SERVICES", 20);
    f->interval = (double)(long)(env_num("BENCH_FLEET_INTERVAL", 10) + 0.5); /* whole seconds: the windows */
    if (f->interval < 1) f->interval = 1;
    f->duration = argc > 2 && atof(argv[2]) > 0 ? atof(argv[2]) : env_num("BENCH_FLEET_SECONDS", 600);
    f->n_threads = (uint32_t)env_num("BENCH_FLEET_THREADS", 8);
    if (f->n_threads > MAX_THREADS) f->n_threads = MAX_THREADS;
    if (f->n_threads > f->n_agents) f->n_threads = f->n_agents;
    if (f->n_services > f->n_agents) f->n_services = f->n_agents;
    const char *shape_env = getenv("BENCH_FLEET_SHAPE");
    const shape_def *def = shape_env && !strcmp(shape_env, "deep") ? &shapes[1] : &shapes[0];
    const char *gz_env = getenv("BENCH_FLEET_GZIP");
    int gzip = gz_env && *gz_env ? atoi(gz_env) : 6; /* flamedb-agent's level */
    if (gzip < 0 || gzip > 9) gzip = 6;
    if (f->duration < 2 * f->interval)
        fprintf(stderr, "bench_fleet: %.0f s is less than two intervals: the steady part is short\n", f->duration);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    double t_start = gen_now();

    /* one keep-alive connection per agent, and the server's sockets */
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < (rlim_t)f->n_agents + 256) {
        fprintf(stderr, "bench_fleet: open files limit %llu < %u agents + 256: raise ulimit -n\n",
                (unsigned long long)rl.rlim_cur, f->n_agents);
        return 1;
    }

    /* the services' stack pools, before the server starts */
    fleet_data *fd = gen_xcalloc(1, sizeof *fd);
    fd->def = def;
    fd->gzip = gzip;
    fd->n_services = f->n_services;
    fd->pools = gen_xcalloc(f->n_services, sizeof *fd->pools);
    for (uint32_t k = 0; k < f->n_services; k++)
        gen_pool_make(&fd->pools[k], SEED + 7919 * (uint64_t)k, def->shape, def->n_funcs, POOL, def->dmin, def->dmax);
    gen_zipf_make(&fd->zipf, POOL, ZIPF_S);
    fd->bad_pct = (unsigned)env_num("BENCH_FLEET_BAD", 0);
    if (fd->bad_pct > 100) fd->bad_pct = 100;
    if (fd->bad_pct) {
        static const char text[] = "main;work 12\nmain;idle x\n";
        fd->bad_body = gen_xcalloc(1, 256);
        if (gzip) {
            z_stream z;
            memset(&z, 0, sizeof z);
            if (deflateInit2(&z, gzip, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 1;
            z.next_in = (Bytef *)text;
            z.avail_in = sizeof text - 1;
            z.next_out = fd->bad_body;
            z.avail_out = 256;
            if (deflate(&z, Z_FINISH) != Z_STREAM_END) return 1;
            fd->bad_len = z.total_out;
            deflateEnd(&z);
        } else {
            memcpy(fd->bad_body, text, sizeof text - 1);
            fd->bad_len = sizeof text - 1;
        }
    }
    f->fd = fd;
    double raw_body, sent_body, make_s, floor_s = parse_floor(fd, &raw_body, &sent_body, &make_s);
    double req_per_s = f->n_agents / f->interval;
    char gz_name[32] = "plain";
    if (gzip) snprintf(gz_name, sizeof gz_name, "gzip'd (level %d)", gzip);
    printf("bench_fleet: %u agents over %u services, a push every %.0f s each (%.1f requests/s), %.0f s "
           "(warm-up %.0f s), %u client threads, %ld cores (server and clients share them)\n",
           f->n_agents, f->n_services, f->interval, req_per_s, f->duration, f->interval, f->n_threads, cores);
    printf("  stacks: %s, depth %u..%u (mean %.1f), pool of %d a service, Zipf s=%.1f; a push: %d distinct "
           "stacks, %d samples, rate %d Hz\n", def->name, def->dmin, def->dmax, gen_pool_mean_depth(&fd->pools[0]),
           POOL, ZIPF_S, DISTINCT, SAMPLES, RATE_HZ);
    printf("  a body: %.0f KB of folded text (%.0f bytes a line), sent %s: %.0f KB, made fresh for each push in "
           "%.2f ms; %.2f MB/s offered\n", raw_body / 1e3, raw_body / DISTINCT, gz_name, sent_body / 1e3,
           make_s * 1e3, sent_body * req_per_s / 1e6);
    printf("  baseline: %s ingest_parse_stacks of a body in-process, 1 thread: %.3f ms; at %.1f requests/s: "
           "%.2f %% of one core\n", gzip ? "ingest_gunzip +" : "", floor_s * 1e3, req_per_s,
           100 * floor_s * req_per_s);

    server srv;
    if (server_start(&srv, bin, "bench_fleet", "bench-fleet")) return 1;
    f->port = srv.port;
    CURL *mh = curl_easy_init();
    f->headers = curl_slist_append(NULL, "Content-Type: text/plain");
    f->headers = curl_slist_append(f->headers, "Expect:"); /* no 100-continue round trip */
    if (gzip) f->headers = curl_slist_append(f->headers, "Content-Encoding: gzip");
    pthread_barrier_init(&f->ready, NULL, f->n_threads + 1);
    pthread_t th[MAX_THREADS];
    for (uint32_t t = 0; t < f->n_threads; t++) {
        if (worker_init(&f->workers[t], f, t)) {
            fprintf(stderr, "bench_fleet: curl init failed\n");
            return 1;
        }
        pthread_create(&th[t], NULL, worker_main, &f->workers[t]);
    }
    server_cpu c_start = proc_cpu(srv.pid);
    double self_start = self_cpu();
    server_rss rss0 = proc_rss(srv.pid);
    f->t0 = gen_now() + 0.05;
    f->t0_unix = (int64_t)time(NULL);
    pthread_barrier_wait(&f->ready);

    /* the main thread watches: RSS every second, CPU at the end of the
     * warm-up, a progress line every report_every seconds */
    double report_every = f->duration <= 120 ? f->interval : f->interval * (double)(int)(f->duration / f->interval / 10);
    if (getenv("BENCH_FLEET_REPORT")) report_every = env_num("BENCH_FLEET_REPORT", report_every);
    server_cpu c_warm = c_start, c_prev = c_start;
    machine_cpu busy_warm = machine_busy();
    double self_warm = self_start, t_warm = f->t0 + f->interval, t_prev = f->t0, next_report = f->t0 + report_every;
    server_rss peak = rss0, last = rss0;
    uint64_t peak_total = 0;
    int warm_taken = 0, done = 0, joined[MAX_THREADS] = { 0 };
    printf("  %6s %8s %6s %7s %8s %8s %8s %8s %8s %8s %7s\n", "t s", "requests", "errors", "CPU%", "p99 ms", "max ms",
           "RSS MiB", "anon", "file", "nodes", "other%");
    machine_cpu m_prev = machine_busy();
    double self_prev = self_start;
    while (!done) {
        usleep(200000);
        double now = gen_now();
        done = 1;
        for (uint32_t t = 0; t < f->n_threads; t++) {
            if (!joined[t] && pthread_tryjoin_np(th[t], NULL) == 0) joined[t] = 1;
            done &= joined[t];
        }
        last = proc_rss(srv.pid);
        uint64_t total = last.anon + last.file + last.shmem;
        if (total > peak_total) peak_total = total;
        if (last.anon > peak.anon) peak.anon = last.anon;
        if (last.file > peak.file) peak.file = last.file;
        if (!warm_taken && now >= t_warm) {
            c_warm = proc_cpu(srv.pid);
            self_warm = self_cpu();
            busy_warm = machine_busy();
            t_warm = now;
            warm_taken = 1;
        }
        if (now >= next_report || done) {
            server_cpu c = proc_cpu(srv.pid);
            server_metrics m = get_metrics(mh, srv.port);
            uint64_t req, err;
            double p99, max, self = self_cpu();
            machine_cpu mc = machine_busy();
            progress(f, &req, &err, &p99, &max);
            double other_p = 100 * (mc.tasks - m_prev.tasks - (c.total - c_prev.total) - (self - self_prev)) / (now - t_prev);
            printf("  %6.0f %8llu %6llu %7.2f %8.1f %8.1f %8.1f %8.1f %8.1f %8.0f %7.1f\n", now - f->t0,
                   (unsigned long long)req, (unsigned long long)err, 100 * (c.total - c_prev.total) / (now - t_prev),
                   p99, max, mib(total), mib(last.anon), mib(last.file), m.nodes, other_p < 0 ? 0.0 : other_p);
            m_prev = mc;
            self_prev = self;
            c_prev = c;
            t_prev = now;
            next_report += report_every;
        }
    }
    double t_end = gen_now();
    server_cpu c_end = proc_cpu(srv.pid);
    double self_end = self_cpu();
    machine_cpu busy_end = machine_busy();
    server_rss rss_end = proc_rss(srv.pid);
    int fds = proc_fds(srv.pid);
    /* sampling misses short peaks; the kernel's high-water mark does not */
    if (rss_end.hwm > peak_total) peak_total = rss_end.hwm;
    server_metrics m_end = get_metrics(mh, srv.port);

    /* totals */
    uint64_t ok[2] = { 0 }, errors[2] = { 0 }, acked[2] = { 0 }, bytes[2] = { 0 }, raw_bytes[2] = { 0 }, late = 0,
             reconnects = 0, bad_sent = 0, bad_refused = 0;
    double make_cpu = 0;
    for (uint32_t t = 0; t < f->n_threads; t++) {
        worker *w = &f->workers[t];
        for (int k = 0; k < 2; k++) {
            ok[k] += w->ok[k];
            errors[k] += w->errors[k];
            acked[k] += w->samples_acked[k];
            bytes[k] += w->bytes[k];
            raw_bytes[k] += w->raw_bytes[k];
            bad_sent += w->bad_sent[k];
            bad_refused += w->bad_refused[k];
        }
        make_cpu += w->make_cpu[1];
        late += w->late;
        reconnects += w->reconnects;
    }
    lat_summary lw = lat_merge(f, 0), ls = lat_merge(f, 1);
    uint64_t stored = 0, profiles = 0;
    size_t n_series = 0;
    int64_t q_from = f->t0_unix - 2 * (int64_t)f->interval, q_until = f->t0_unix + (int64_t)(f->duration + 2 * f->interval) + 2;
    double tq = gen_now();
    int q_ok = stored_totals(mh, srv.port, q_from, q_until, &stored, &profiles, &n_series) == 0;
    tq = gen_now() - tq;

    double warm_s = t_warm - f->t0, steady_s = t_end - t_warm;
    double cpu_warm = 100 * (c_warm.total - c_start.total) / warm_s;
    double cpu = 100 * (c_end.total - c_warm.total) / steady_s;
    double client = 100 * (self_end - self_warm) / steady_s;
    double other = 100 * (busy_end.tasks - busy_warm.tasks) / steady_s - cpu - client;
    if (other < 0) other = 0;
    double irq = 100 * (busy_end.irq - busy_warm.irq) / steady_s, steal = 100 * (busy_end.steal - busy_warm.steal) / steady_s;
    uint64_t acked_all = acked[0] + acked[1], ok_all = ok[0] + ok[1], err_all = errors[0] + errors[1];
    int64_t lost = (int64_t)acked_all - (int64_t)stored;
    double commits = m_end.commits >= 0 ? m_end.commits : 0;

    printf("\n  warm-up (%.1f s, every agent's first push): %llu requests, %llu errors, server %.2f %% of one core, "
           "p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", warm_s, (unsigned long long)ok[0],
           (unsigned long long)errors[0], cpu_warm, lw.p50, lw.p99, lw.max);
    printf("  steady  (%.1f s): %llu requests (%.1f/s), %llu errors, %.2f MB/s received (%.1f MB/s of folded "
           "text), %llu pushes more than 1 s late, %llu reconnects\n", steady_s, (unsigned long long)ok[1],
           ok[1] / steady_s, (unsigned long long)errors[1], bytes[1] / steady_s / 1e6, raw_bytes[1] / steady_s / 1e6,
           (unsigned long long)late, (unsigned long long)reconnects);
    printf("    server CPU: %.2f %% of one core = writer %.2f + parse %.2f + http %.2f + other %.2f (%d threads); "
           "%.3f ms a request\n", cpu, 100 * (c_end.writer - c_warm.writer) / steady_s,
           100 * (c_end.parse - c_warm.parse) / steady_s, 100 * (c_end.http - c_warm.http) / steady_s,
           100 * (c_end.other - c_warm.other) / steady_s, c_end.threads,
           ok[1] ? 1e3 * (c_end.total - c_warm.total) / (double)ok[1] : 0.0);
    printf("    vs baselines: %.1f x the parse floor (%.2f %%); clients (this process) %.2f %% of one core, of which "
           "making bodies %.2f; the rest of the machine: other tasks %.2f %%, irq %.2f %%, steal %.2f %%\n",
           cpu / (100 * floor_s * ok[1] / steady_s), 100 * floor_s * ok[1] / steady_s, client,
           100 * make_cpu / steady_s, other, irq, steal);
    printf("    latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu requests)\n", ls.p50, ls.p99, ls.max, ls.n);
    printf("  server RSS: end %.1f MiB (anon %.1f, file %.1f, shmem %.1f), peak %.1f MiB (VmHWM; sampled every 0.2 s: "
           "anon %.1f, file %.1f); at start %.1f MiB\n", mib(rss_end.anon + rss_end.file + rss_end.shmem), mib(rss_end.anon),
           mib(rss_end.file), mib(rss_end.shmem), mib(peak_total), mib(peak.anon), mib(peak.file),
           mib(rss0.anon + rss0.file + rss0.shmem));
    printf("  server: %.0f call-tree nodes (the writer's dictionary maps and catalog %.1f MiB), %.0f series, %d open "
           "files, %.0f group commits (%.1f requests each, mean %.1f ms, %.0f over 100 ms)\n", m_end.nodes,
           m_end.dict_bytes / 1048576.0, m_end.series, fds, commits,
           commits > 0 ? ok_all / commits : 0.0, commits > 0 ? 1e3 * m_end.commit_s / commits : 0.0,
           m_end.commits_100ms);
    if (q_ok)
        printf("  loss check: acknowledged %llu samples in %llu requests (sent %llu in them), stored %llu samples "
               "in %llu profiles of %zu series (listing %.0f ms): lost=%lld\n", (unsigned long long)acked_all,
               (unsigned long long)ok_all, (unsigned long long)(ok_all * SAMPLES), (unsigned long long)stored,
               (unsigned long long)profiles, n_series, tq * 1e3, (long long)lost);
    else
        printf("  loss check: /api/v1/series failed (see stderr)\n");

    if (fd->bad_pct)
        printf("  malformed pushes (BENCH_FLEET_BAD=%u %%): %llu sent, %llu answered 400, %llu otherwise\n", fd->bad_pct,
               (unsigned long long)bad_sent, (unsigned long long)bad_refused,
               (unsigned long long)(bad_sent - bad_refused));
    int clean, log_lines;
    uint64_t db = server_stop(&srv, &clean, &log_lines);
    printf("  LMDB files %.1f MB; server log %d lines; stopped %s; total time %.1f s\n", db / 1e6, log_lines,
           clean ? "cleanly" : "NOT cleanly", gen_now() - t_start);
    printf("RESULT fleet cpu: %u agents every %.0f s, %.0f s steady: %.2f %% of one core; target <= %.0f %%; "
           "measured/target = %.2f\n", f->n_agents, f->interval, steady_s, cpu, TARGET_CPU_PCT, cpu / TARGET_CPU_PCT);
    printf("RESULT fleet rss: peak %.1f MiB (sampled peaks: anon %.1f, file %.1f); target <= %.0f MiB; measured/target = %.2f\n",
           mib(peak_total), mib(peak.anon), mib(peak.file), TARGET_RSS_MIB, mib(peak_total) / TARGET_RSS_MIB);
    printf("RESULT fleet: p50 %.1f ms, p99 %.1f ms, max %.1f ms; errors %llu (target 0); acknowledged %llu, "
           "stored %llu, lost=%lld (target 0)\n", ls.p50, ls.p99, ls.max, (unsigned long long)err_all,
           (unsigned long long)acked_all,
           (unsigned long long)stored, (long long)(q_ok ? lost : -1));

    for (uint32_t t = 0; t < f->n_threads; t++) worker_free(&f->workers[t]);
    curl_easy_cleanup(mh);
    curl_slist_free_all(f->headers);
    for (uint32_t k = 0; k < f->n_services; k++) gen_pool_free(&fd->pools[k]);
    free(fd->pools);
    free(fd->bad_body);
    gen_zipf_free(&fd->zipf);
    free(fd);
    pthread_barrier_destroy(&f->ready);
    int bad = !q_ok || lost != 0 || err_all != 0 || !clean || ok_all == 0 || bad_refused != bad_sent;
    free(f);
    curl_global_cleanup();
    return bad ? 1 : 0;
}
