/* bench_pprof_ingest.c — pprof ingest next to folded ingest of the same
 * stacks (issue 11, point 6): profiles/s per client.
 *
 * Usage: bench_pprof_ingest DIR [N=100] [FLAMEDB_BIN]
 *   DIR is what ../shared/bench/gen_pprof.py writes: DIR/pprof/pNNNN.pb.gz
 *   (Go-style CPU profiles, 2,000 distinct stacks of depth 10-60 each) and
 *   DIR/folded/pNNNN.folded.gz (the same stacks as folded text).  The first
 *   N of each are read into memory first (untimed).
 *
 * In process, one thread, each profile once (figures, not pass/fail):
 *   gunzip       ingest_gunzip of the pprof body alone (a floor: any decoder
 *                of a gzip'd body pays it);
 *   pprof        ingest_pprof_parse (gunzip + decode + one finished profile
 *                per sample type);
 *   text later   the same with base.text_later, as the server decodes
 *                (keys, no stack text: a store that knows the stacks needs
 *                none; ingest.h);
 *   folded       ingest_gunzip of the folded body + ingest_parse_stacks +
 *                ingest_profile_finish: the same stacks as text.
 *   The totals must agree: the pprof samples/count profile's total and the
 *   folded profile's (the same samples; the folded counts are samples).
 *
 * Over HTTP, when FLAMEDB_BIN is given: the real server on a fresh data
 * directory, one keep-alive client POSTing the N gzip'd pprof bodies to
 * /api/v1/ingest?format=pprof (service=bench, instance i-NNN, one 10 s
 * window each, as merge_side_by_side.py does), then, on another fresh
 * server, the N gzip'd folded bodies (Content-Encoding: gzip, type
 * samples, the same windows).  A request counts once answered 200.
 * Besides profiles/s, each run prints CPU milliseconds a profile: the
 * server's (utime + stime of every thread from /proc, read before it
 * stops), split by thread (MHD's, the parse pool's, the writers', the
 * rest), and the client's own thread: on a shared machine the CPU a
 * profile costs is steadier than the rate. */
#include <curl/curl.h>
#include <glob.h>
#include <inttypes.h>

#include "../ingest/ingest.h"
#include "gen.h"
#include "server.h"

typedef struct { char *buf; size_t len; } blob;

static blob read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_pprof_ingest: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    blob b = { NULL, 0 };
    size_t cap = 0;
    for (;;) {
        if (b.len == cap) b.buf = gen_xrealloc(b.buf, cap = cap ? cap * 2 : 1 << 16);
        size_t n = fread(b.buf + b.len, 1, cap - b.len, f);
        if (!n) break;
        b.len += n;
    }
    fclose(f);
    return b;
}

static void base_profile(ingest_profile *p, int i)
{
    char err[256], inst[32];
    ingest_profile_init(p);
    snprintf(inst, sizeof inst, "i-%03d", i % 100);
    if (ingest_label_add(p, "service", "bench", err, sizeof err) || ingest_label_add(p, "instance", inst, err, sizeof err)) {
        fprintf(stderr, "bench_pprof_ingest: %s\n", err);
        exit(1);
    }
    p->from_ms = INT64_C(1795219200000) + (int64_t)(i / 100) * 10000;
    p->until_ms = p->from_ms + 10000;
}

#define MAX_BODY ((size_t)64 << 20)

/* One pprof body: answers the samples type's total (the folded counts). */
static uint64_t run_pprof(const blob *b, int i, int text_later)
{
    ingest_profile base, *out = NULL;
    size_t n = 0;
    char err[1024];
    base_profile(&base, i);
    base.text_later = text_later;
    if (ingest_pprof_parse(b->buf, b->len, MAX_BODY, &base, 1, &out, &n, err, sizeof err)) {
        fprintf(stderr, "bench_pprof_ingest: pprof %d: %s\n", i, err);
        exit(1);
    }
    uint64_t total = 0;
    for (size_t t = 0; t < n; t++)
        if (strcmp(ingest_label_get(&out[t], "type"), "samples") == 0) total = out[t].total;
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
    return total;
}

static uint64_t run_folded(const blob *b, int i)
{
    ingest_profile p;
    char err[1024], *text = NULL;
    size_t len = 0;
    base_profile(&p, i);
    if (ingest_gunzip(b->buf, b->len, MAX_BODY, &text, &len, err, sizeof err) ||
        ingest_label_add(&p, "type", "samples", err, sizeof err) ||
        ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, text, len, err, sizeof err)) {
        fprintf(stderr, "bench_pprof_ingest: folded %d: %s\n", i, err);
        exit(1);
    }
    if (ingest_profile_finish(&p, err, sizeof err)) {
        fprintf(stderr, "bench_pprof_ingest: folded %d: %s\n", i, err);
        exit(1);
    }
    uint64_t total = p.total;
    ingest_profile_free(&p);
    free(text);
    return total;
}

static void run_gunzip(const blob *b, int i)
{
    char err[256], *out = NULL;
    size_t len;
    if (ingest_gunzip(b->buf, b->len, MAX_BODY, &out, &len, err, sizeof err)) {
        fprintf(stderr, "bench_pprof_ingest: gunzip %d: %s\n", i, err);
        exit(1);
    }
    free(out);
}

/* ---- HTTP ------------------------------------------------------------------- */

/* Server CPU seconds by thread group. */
typedef struct { double mhd, parse, writer, other; } cpu_split;

static void add_task(void *arg, long tid, const char *comm, double cpu)
{
    (void)tid;
    cpu_split *c = arg;
    if (!strncmp(comm, "flamedb-parse", 13)) c->parse += cpu;
    else if (!strncmp(comm, "flamedb-writer", 14)) c->writer += cpu;
    else if (!strncmp(comm, "MHD", 3)) c->mhd += cpu;
    else c->other += cpu;
}

typedef struct { double seconds, server, client; cpu_split split; } http_result;

static http_result http_run(const char *bin, const blob *bodies, int n, int pprof)
{
    server s;
    http_result r = { 0 };
    if (server_start(&s, bin, "bench_pprof_ingest", pprof ? "pprof" : "folded")) exit(1);
    cpu_split before = { 0 };
    double srv0 = proc_task_cpu(s.pid, add_task, &before), cli0 = thread_cpu();
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    h = curl_slist_append(h, pprof ? "Content-Type: application/octet-stream" : "Content-Type: text/plain");
    if (!pprof) h = curl_slist_append(h, "Content-Encoding: gzip");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_reply);
    double t0 = gen_now();
    for (int i = 0; i < n; i++) {
        char url[512];
        int64_t from = INT64_C(1795219200) + (int64_t)(i / 100) * 10;
        snprintf(url, sizeof url,
                 "http://127.0.0.1:%d/api/v1/ingest?service=bench&instance=i-%03d&from=%" PRId64 "&until=%" PRId64 "%s",
                 s.port, i % 100, from, from + 10, pprof ? "&format=pprof" : "&type=samples");
        reply rep = { .len = 0 };
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, bodies[i].buf);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)bodies[i].len);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &rep);
        CURLcode rc = curl_easy_perform(c);
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (rc != CURLE_OK || code != 200) {
            fprintf(stderr, "bench_pprof_ingest: %s %d: %s, HTTP %ld: %s\n", pprof ? "pprof" : "folded", i,
                    curl_easy_strerror(rc), code, rep.buf);
            server_stop(&s, NULL, NULL);
            exit(1);
        }
    }
    r.seconds = gen_now() - t0;
    r.client = thread_cpu() - cli0;
    r.server = proc_task_cpu(s.pid, add_task, &r.split) - srv0;
    r.split.mhd -= before.mhd;
    r.split.parse -= before.parse;
    r.split.writer -= before.writer;
    r.split.other -= before.other;
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    server_stop(&s, NULL, NULL);
    return r;
}

static void http_print(const char *what, const http_result *r, int n)
{
    double k = 1e3 / n;
    printf("  %-7s %8.2f s  %8.1f profiles/s  server CPU %.2f ms a profile (MHD %.2f, parse %.2f, writer %.2f, "
           "other %.2f), client %.2f\n",
           what, r->seconds, n / r->seconds, r->server * k, r->split.mhd * k, r->split.parse * k, r->split.writer * k,
           r->split.other * k, r->client * k);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_pprof_ingest DIR [N=100] [FLAMEDB_BIN]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 100;
    const char *bin = argc > 3 ? argv[3] : NULL;
    char pat[4200];
    glob_t gp, gf;
    snprintf(pat, sizeof pat, "%s/pprof/p*.pb.gz", argv[1]);
    if (glob(pat, 0, NULL, &gp) || gp.gl_pathc == 0) {
        fprintf(stderr, "bench_pprof_ingest: no %s (run ../shared/bench/gen_pprof.py DIR first)\n", pat);
        return 1;
    }
    snprintf(pat, sizeof pat, "%s/folded/p*.folded.gz", argv[1]);
    if (glob(pat, 0, NULL, &gf) || gf.gl_pathc < gp.gl_pathc) {
        fprintf(stderr, "bench_pprof_ingest: %s: fewer folded files than pprof files\n", pat);
        return 1;
    }
    if (n <= 0 || (size_t)n > gp.gl_pathc) n = (int)gp.gl_pathc;
    blob *pp = gen_xcalloc((size_t)n, sizeof *pp), *fo = gen_xcalloc((size_t)n, sizeof *fo);
    size_t pp_bytes = 0, fo_bytes = 0;
    for (int i = 0; i < n; i++) {
        pp[i] = read_file(gp.gl_pathv[i]);
        fo[i] = read_file(gf.gl_pathv[i]);
        pp_bytes += pp[i].len;
        fo_bytes += fo[i].len;
    }
    printf("bench_pprof_ingest: %d profiles from %s: pprof %.1f KB gzip'd each, folded %.1f KB gzip'd each\n", n,
           argv[1], pp_bytes / 1e3 / n, fo_bytes / 1e3 / n);

    double t0 = gen_now();
    for (int i = 0; i < n; i++) run_gunzip(&pp[i], i);
    double t_gz = gen_now() - t0;
    uint64_t tot_pp = 0, tot_fo = 0;
    t0 = gen_now();
    for (int i = 0; i < n; i++) tot_pp += run_pprof(&pp[i], i, 0);
    double t_pp = gen_now() - t0;
    uint64_t tot_later = 0;
    t0 = gen_now();
    for (int i = 0; i < n; i++) tot_later += run_pprof(&pp[i], i, 1);
    double t_later = gen_now() - t0;
    t0 = gen_now();
    for (int i = 0; i < n; i++) tot_fo += run_folded(&fo[i], i);
    double t_fo = gen_now() - t0;
    printf("in process, one thread:\n");
    printf("  gunzip of the pprof bodies  %8.2f ms a profile  %8.1f profiles/s\n", t_gz * 1e3 / n, n / t_gz);
    printf("  pprof (ingest_pprof_parse)  %8.2f ms a profile  %8.1f profiles/s\n", t_pp * 1e3 / n, n / t_pp);
    printf("  pprof, text later (keys)    %8.2f ms a profile  %8.1f profiles/s%s\n", t_later * 1e3 / n, n / t_later,
           tot_later == tot_pp ? "" : " (totals DIFFER)");
    printf("  folded (gunzip + parse)     %8.2f ms a profile  %8.1f profiles/s\n", t_fo * 1e3 / n, n / t_fo);
    printf("  pprof / folded time: %.2fx; sample totals %" PRIu64 " and %" PRIu64 " %s\n", t_pp / t_fo, tot_pp, tot_fo,
           tot_pp == tot_fo ? "(equal)" : "(DIFFER)");

    if (bin) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        http_result h_pp = http_run(bin, pp, n, 1), h_fo = http_run(bin, fo, n, 0);
        printf("over HTTP, one client, fresh server each:\n");
        http_print("pprof", &h_pp, n);
        http_print("folded", &h_fo, n);
        printf("  pprof / folded time: %.2fx\n", h_pp.seconds / h_fo.seconds);
        curl_global_cleanup();
    }
    for (int i = 0; i < n; i++) {
        free(pp[i].buf);
        free(fo[i].buf);
    }
    free(pp);
    free(fo);
    globfree(&gp);
    globfree(&gf);
    return 0;
}
