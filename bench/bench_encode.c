/* bench_encode.c — the merged tree's encodings, end to end over HTTP: the
 * nested JSON tree, the compact levels, pprof and folded text of the
 * issue's 500-profile set (issue 11, point 2), and what Grafana's Pyroscope
 * data source asks for the same tree: flamebearer JSON (GET
 * /pyroscope/render, max-nodes=0) and SelectMergeStacktraces in binary
 * protobuf (a connect-go style unary POST, application/proto; max_nodes
 * above the tree's size, as 0 there means Pyroscope's default 16,384);
 * and /api/v1/diff of the same tree split in time (the first two windows
 * against the rest: every node of the tree on one side or both).
 *
 *   bench_encode [FLAMEDB_BIN [BEFORE_BIN]]
 *
 * Pushes N pprof profiles (../shared/bench/gen_pprof.py: 2,000 distinct
 * stacks each out of 20,000, Go-like names; format=pprof, 100 instances x
 * N/100 windows of 10 s as merge_side_by_side.py does) into a fresh server,
 * then asks GET /api/v1/query for the whole set (type cpu, max_nodes=0: the
 * full tree) in each format, one warm-up and REPS timed, and prints the
 * median time and the bytes.  With BEFORE_BIN (e.g. the previous commit's
 * binary) the same data goes into a second server run by it and each
 * format gets its ratio, before / after, in the same run.
 *
 * Env: BENCH_PPROF_DIR  a gen_pprof.py output directory (DIR/pprof/p*.pb.gz);
 *                       without it the profiles are generated into a
 *                       temporary directory first (about 0.2 s a profile)
 *      BENCH_ENCODE_N   profiles to push (default 500)
 * Figures only: nothing passes or fails on time. */
#include <curl/curl.h>
#include <glob.h>

#include "querier.pb-c.h"
#include "server.h"

#define REPS 5
#define BASE_OFFSET_S 3600

typedef struct {
    char *buf;
    size_t len, cap;
} mem;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    mem *m = arg;
    size_t n = size * nmemb;
    if (m->len + n + 1 > m->cap) {
        m->cap = (m->len + n + 1) * 2;
        m->buf = gen_xrealloc(m->buf, m->cap);
    }
    memcpy(m->buf + m->len, data, n);
    m->len += n;
    m->buf[m->len] = '\0';
    return n;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = gen_xmalloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

/* Pushes the files; 0 or -1 (message printed). */
static int push_all(server *s, CURL *c, char **files, size_t n, long base)
{
    for (size_t i = 0; i < n; i++) {
        size_t len;
        char *body = read_file(files[i], &len);
        if (!body) {
            fprintf(stderr, "bench_encode: cannot read %s\n", files[i]);
            return -1;
        }
        char url[512];
        long from = base + (long)(i / 100) * 10;
        snprintf(url, sizeof url,
                 "http://127.0.0.1:%d/api/v1/ingest?service=bench&instance=i-%03zu&format=pprof&from=%ld&until=%ld",
                 s->port, i % 100, from, from + 10);
        mem m = { 0 };
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
        CURLcode rc = curl_easy_perform(c);
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        free(body);
        if (rc != CURLE_OK || code != 200) {
            fprintf(stderr, "bench_encode: push %s: %s, HTTP %ld: %.300s\n", files[i], curl_easy_strerror(rc), code,
                    m.buf ? m.buf : "");
            free(m.buf);
            return -1;
        }
        free(m.buf);
    }
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    return 0;
}

typedef struct {
    double seconds;   /* median; < 0: not answered (HTTP code in status) */
    size_t bytes;
    long status;
    double total;     /* the tree's total, as the answer says it */
} figure;

/* One way to ask for the whole tree. */
typedef struct {
    const char *name;
    int kind;         /* 0 /api/v1/query?format=name, 1 /pyroscope/render, 2 SelectMergeStacktraces,
                         3 /api/v1/diff */
} way;

static const way ways[] = { { "json", 0 }, { "levels", 0 }, { "pprof", 0 }, { "folded", 0 },
                            { "flamebearer", 1 }, { "protobuf", 2 }, { "diff", 3 } };
#define N_FORMATS (sizeof ways / sizeof *ways)

/* The total an answer says: "total" of the JSON formats, flamebearer's
 * "numTicks", the FlameGraph's total, a diff's left plus right total; 0
 * for pprof and folded. */
static double answer_total(const way *w, const mem *m)
{
    if (!m->buf) return 0;
    if (w->kind == 2) {
        Querier__V1__SelectMergeStacktracesResponse *r =
            querier__v1__select_merge_stacktraces_response__unpack(NULL, m->len, (const uint8_t *)m->buf);
        double t = r && r->flamegraph ? (double)r->flamegraph->total : -1;
        if (r) querier__v1__select_merge_stacktraces_response__free_unpacked(r, NULL);
        return t;
    }
    if (w->kind == 3) {
        const char *l = strstr(m->buf, "\"left_total\":"), *r = strstr(m->buf, "\"right_total\":");
        return l && r ? strtod(l + 13, NULL) + strtod(r + 14, NULL) : 0;
    }
    const char *key = w->kind == 1 ? "\"numTicks\":" : "\"total\":";
    const char *tot = m->buf[0] == '{' ? strstr(m->buf, key) : NULL;
    return tot ? strtod(tot + strlen(key), NULL) : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static figure ask(server *s, CURL *c, const way *w, long base)
{
    figure f = { -1, 0, 0, 0 };
    char url[512];
    uint8_t *body = NULL;
    size_t body_len = 0;
    struct curl_slist *headers = NULL;
    if (w->kind == 0) { /* {service="bench",type="cpu"} */
        snprintf(url, sizeof url,
                 "http://127.0.0.1:%d/api/v1/query?query=%%7Bservice%%3D%%22bench%%22%%2Ctype%%3D%%22cpu%%22%%7D"
                 "&from=%ld&until=now&max_nodes=0&format=%s", s->port, base - 10, w->name);
    } else if (w->kind == 1) { /* process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="bench"} */
        snprintf(url, sizeof url,
                 "http://127.0.0.1:%d/pyroscope/render?query=process_cpu%%3Acpu%%3Ananoseconds%%3Acpu%%3Ananoseconds"
                 "%%7Bservice_name%%3D%%22bench%%22%%7D&from=%ld&until=now&max-nodes=0&format=json", s->port, base - 10);
    } else if (w->kind == 3) { /* the first two windows (200 profiles of 500) against the rest */
        snprintf(url, sizeof url,
                 "http://127.0.0.1:%d/api/v1/diff?left=%%7Bservice%%3D%%22bench%%22%%2Ctype%%3D%%22cpu%%22%%7D"
                 "&right=%%7Bservice%%3D%%22bench%%22%%2Ctype%%3D%%22cpu%%22%%7D&from=%ld&until=now"
                 "&left_until=%ld&right_from=%ld", s->port, base - 10, base + 20, base + 20);
    } else {
        snprintf(url, sizeof url, "http://127.0.0.1:%d/querier.v1.QuerierService/SelectMergeStacktraces", s->port);
        Querier__V1__SelectMergeStacktracesRequest rq = QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
        rq.profile_typeid = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
        rq.label_selector = "{service_name=\"bench\"}";
        rq.start = (int64_t)(base - 10) * 1000;
        rq.end = (int64_t)time(NULL) * 1000 + 1000;
        rq.max_nodes = INT64_C(1) << 40;
        body_len = querier__v1__select_merge_stacktraces_request__get_packed_size(&rq);
        body = gen_xrealloc(NULL, body_len ? body_len : 1);
        querier__v1__select_merge_stacktraces_request__pack(&rq, body);
        headers = curl_slist_append(NULL, "Content-Type: application/proto");
        headers = curl_slist_append(headers, "Connect-Protocol-Version: 1");
    }
    double t[REPS];
    for (int i = 0; i <= REPS; i++) {
        mem m = { 0 };
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
        if (body) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        } else {
            curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
        }
        double t0 = gen_now();
        CURLcode rc = curl_easy_perform(c);
        double dt = gen_now() - t0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f.status);
        if (rc != CURLE_OK || f.status != 200) {
            free(m.buf);
            if (f.status == 200) f.status = -1; /* cut short */
            break;
        }
        if (i) t[i - 1] = dt;
        f.bytes = m.len;
        f.total = answer_total(w, &m);
        free(m.buf);
    }
    free(body);
    curl_slist_free_all(headers);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (f.status != 200) return f;
    qsort(t, REPS, sizeof t[0], cmp_double);
    f.seconds = t[REPS / 2];
    return f;
}

/* Starts bin, pushes, measures every format; -1 when the server failed. */
static int run(const char *bin, const char *tag, char **files, size_t n, figure *out, double *push_s)
{
    server s;
    if (server_start(&s, bin, "bench_encode", tag)) return -1;
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    long base = (long)time(NULL) - BASE_OFFSET_S;
    double t0 = gen_now();
    int rc = push_all(&s, c, files, n, base);
    *push_s = gen_now() - t0;
    for (size_t i = 0; rc == 0 && i < N_FORMATS; i++) out[i] = ask(&s, c, &ways[i], base);
    curl_easy_cleanup(c);
    server_stop(&s, NULL, NULL);
    return rc;
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : "bin/flamedb";
    const char *before = argc > 2 ? argv[2] : NULL;
    const char *dir = getenv("BENCH_PPROF_DIR");
    size_t want = getenv("BENCH_ENCODE_N") ? strtoul(getenv("BENCH_ENCODE_N"), NULL, 10) : 500;
    char *made = NULL;
    if (!dir) {
        made = gen_tempdir("bench-encode-pprof");
        char cmd[8400];
        snprintf(cmd, sizeof cmd, "python3 ../shared/bench/gen_pprof.py %s %zu >/dev/null", made, want);
        printf("generating %zu pprof profiles (../shared/bench/gen_pprof.py) into %s\n", want, made);
        fflush(stdout);
        if (system(cmd)) {
            fprintf(stderr, "bench_encode: %s failed (run from the repository; or set BENCH_PPROF_DIR)\n", cmd);
            gen_rm_rf(made);
            return 2;
        }
        dir = made;
    }
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s/pprof/p*.pb.gz", dir);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) || g.gl_pathc == 0) {
        fprintf(stderr, "bench_encode: no %s\n", pattern);
        return 2;
    }
    size_t n = g.gl_pathc < want ? g.gl_pathc : want;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    printf("%zu pprof profiles of %s, merged whole (max_nodes=0), median of %d, HTTP end to end\n", n, dir, REPS);

    figure after[N_FORMATS] = { 0 }, prev[N_FORMATS] = { 0 };
    double push_after = 0, push_before = 0;
    if (run(bin, "bench-encode", g.gl_pathv, n, after, &push_after)) return 1;
    int have_before = before && run(before, "bench-encode-before", g.gl_pathv, n, prev, &push_before) == 0;
    printf("pushed in %.2f s (%s)%s", push_after, bin, have_before ? "" : "\n");
    if (have_before) printf(", %.2f s (%s)\n", push_before, before);
    printf("%-11s %10s %12s %10s %12s %8s %8s\n", "format", "seconds", "bytes", "before s", "before B", "speedup",
           "size");
    for (size_t i = 0; i < N_FORMATS; i++) {
        figure *a = &after[i], *b = &prev[i];
        if (a->seconds < 0) {
            printf("%-11s HTTP %ld\n", ways[i].name, a->status);
            continue;
        }
        printf("%-11s %10.3f %12zu", ways[i].name, a->seconds, a->bytes);
        if (have_before && b->seconds >= 0)
            printf(" %10.3f %12zu %7.1fx %7.2fx", b->seconds, b->bytes, b->seconds / a->seconds,
                   (double)a->bytes / (double)b->bytes);
        else if (have_before)
            printf(" %10s %12s", b->status ? "HTTP" : "-", "-");
        printf("\n");
    }
    /* against the old nested JSON of the same run, or this run's json */
    figure *ref = have_before && prev[0].seconds > 0 ? &prev[0] : &after[0];
    const char *refname = ref == &prev[0] ? "json before" : "json";
    for (size_t i = 0; i < N_FORMATS; i++)
        if (after[i].seconds > 0 && ref->seconds > 0)
            printf("RESULT encode %s: %.3f s, %zu bytes (%.1fx faster, %.2fx the bytes of %s)\n", ways[i].name,
                   after[i].seconds, after[i].bytes, ref->seconds / after[i].seconds,
                   (double)after[i].bytes / (double)ref->bytes, refname);
    for (size_t i = 1; i < N_FORMATS; i++)
        if (after[i].seconds > 0 && after[i].total && after[i].total != after[0].total)
            printf("note: json total %.0f != %s total %.0f\n", after[0].total, ways[i].name, after[i].total);
    globfree(&g);
    if (made) gen_rm_rf(made);
    curl_global_cleanup();
    return 0;
}
