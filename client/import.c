/* import.c — `flamedb import`: loads perf script text and folded files into
 * a running server over HTTP.
 *
 * Each FILE is detected on its own: `perf script` output has indented frame
 * lines under sample headers; anything else is taken as folded stacks.
 *
 * perf script: samples (ingest_perf_parse) are grouped into windows of
 * --window seconds by their timestamps.  perf's times are seconds since
 * boot, so windows are relative: they are anchored so that the last window
 * ends at the file's modification time (now for stdin, "-").  Each window
 * is folded (identical stacks summed) and pushed as one profile.
 *
 * Folded files are pushed as they are, one profile each, over the window
 * [mtime − window, mtime).
 *
 * Pushes go to POST /api/v1/ingest with service, --labels, from, until and
 * rate (when --rate is given) as parameters, gzip'd, over one keep-alive
 * connection (client/push.c, the agent's push client too).  Any HTTP error stops the import with the server's JSON
 * error and a non-zero exit.
 *
 * A server with --auth takes the token of --token or --token-file (the
 * first line of the file; better than a flag, which other users see in
 * ps) as `Authorization: Bearer`, and --tenant as X-Scope-OrgID.  An
 * https:// server's certificate is verified by libcurl against the system's
 * authorities, or against --ca FILE (a self-made authority or certificate). */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../ingest/ingest.h"
#include "import.h"
#include "push.h"

static const char usage_import[] =
    "Usage: flamedb import --server URL --service NAME [flags] FILE...\n"
    "\n"
    "Loads `perf script` text output and folded stack files into a flamedb server.\n"
    "Each FILE (or - for stdin) is detected on its own: perf script text (sample\n"
    "header lines followed by indented frame lines, default fields or\n"
    "-F comm,pid,tid,time,ip,sym,dso) or folded stacks (\"a;b;c 12\" per line).\n"
    "\n"
    "  --server URL        the server, e.g. http://127.0.0.1:4040 (required)\n"
    "  --service NAME      the service label of every profile pushed (required)\n"
    "  --labels k=v,...    more labels for every profile, e.g. host=db1,env=prod\n"
    "  --rate HZ           the sampling frequency (perf record -F HZ): counts are then\n"
    "                      answered as CPU time (count x 1e9/HZ ns); default none\n"
    "  --window SECONDS    perf samples are grouped into windows of this many seconds,\n"
    "                      one profile each; a folded file's window (default 10)\n"
    "  --token TOKEN       the token for a server with --auth (sent as Authorization:\n"
    "                      Bearer); --token-file FILE reads it from FILE's first line\n"
    "                      instead, out of sight of ps\n"
    "  --tenant NAME       the tenant (X-Scope-OrgID), for a token of several tenants\n"
    "  --ca FILE           verify an https:// server's certificate with this PEM\n"
    "                      certificate or authority (default: the system's)\n"
    "  --help              this text\n"
    "\n"
    "perf script times are seconds since boot: windows are anchored so that the last\n"
    "one ends at the file's modification time (now for stdin).  Frames are the symbol\n"
    "without +0xoffset, an [unknown] symbol is named by its dso's basename, and the\n"
    "root frame is the command name (comm).  A folded file is pushed as one profile\n"
    "over [mtime - window, mtime).  Any HTTP error stops the import with the server's\n"
    "message and exit code 1.\n";

typedef struct {
    const char *server, *service, *labels;
    const char *token, *token_file, *tenant, *ca;
    double rate;
    int64_t window_ms;
    client_push *push;
    int progress;          /* stderr is a terminal */
    uint64_t profiles, samples;
} importer;

typedef struct { char *b; size_t len, cap; } sbuf;

static int sbuf_put(sbuf *s, const char *p, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        size_t cap = (s->cap + n) * 2 + 256;
        char *nb = realloc(s->b, cap);
        if (!nb) return -1;
        s->b = nb;
        s->cap = cap;
    }
    memcpy(s->b + s->len, p, n);
    s->len += n;
    s->b[s->len] = '\0';
    return 0;
}

static int sbuf_esc(sbuf *s, const char *v, size_t n)
{
    char *e = curl_easy_escape(NULL, v, (int)n);
    if (!e) return -1;
    int rc = sbuf_put(s, e, strlen(e));
    curl_free(e);
    return rc;
}

/* The ingest URL of one profile. */
static int build_url(importer *im, sbuf *u, int64_t from_ms, int64_t until_ms)
{
    char num[96];
    const char *base = im->server;
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/') bl--;
    if (sbuf_put(u, base, bl) || sbuf_put(u, "/api/v1/ingest?service=", 23) ||
        sbuf_esc(u, im->service, strlen(im->service)))
        return -1;
    snprintf(num, sizeof num, "&from=%lld.%03lld&until=%lld.%03lld", (long long)(from_ms / 1000),
             (long long)(from_ms % 1000), (long long)(until_ms / 1000), (long long)(until_ms % 1000));
    if (sbuf_put(u, num, strlen(num))) return -1;
    if (im->rate > 0) {
        snprintf(num, sizeof num, "&rate=%.17g", im->rate);
        if (sbuf_put(u, num, strlen(num))) return -1;
    }
    for (const char *p = im->labels; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (n) {
            if (!eq) {
                fprintf(stderr, "flamedb import: --labels: '%.*s' is not k=v\n", (int)n, p);
                return -2;
            }
            if (sbuf_put(u, "&", 1) || sbuf_esc(u, p, (size_t)(eq - p)) || sbuf_put(u, "=", 1) ||
                sbuf_esc(u, eq + 1, n - (size_t)(eq - p) - 1))
                return -1;
        }
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* Pushes one folded body; answers 0, or prints why and answers -1. */
static int push(importer *im, const char *what, const char *body, size_t len, int64_t from_ms, int64_t until_ms,
                uint64_t samples)
{
    sbuf url = { 0 };
    int rc = build_url(im, &url, from_ms, until_ms);
    if (rc) {
        if (rc == -1) fprintf(stderr, "flamedb import: out of memory\n");
        free(url.b);
        return -1;
    }
    long code;
    int retryable;
    char err[700];
    rc = client_push_send(im->push, url.b, body, len, &code, &retryable, err, sizeof err);
    free(url.b);
    if (rc) {
        if (im->progress) fputc('\n', stderr);
        if (code)
            fprintf(stderr, "flamedb import: %s: the server answered HTTP %ld: %s\n", what, code,
                    client_push_answer(im->push)[0] ? client_push_answer(im->push) : "(no body)");
        else
            fprintf(stderr, "flamedb import: %s: cannot reach %s: %s\n", what, im->server, err);
        return -1;
    }
    im->profiles++;
    im->samples += samples;
    return 0;
}

static int cmp_stack(const void *a, const void *b)
{
    const ingest_perf_sample *x = *(ingest_perf_sample *const *)a, *y = *(ingest_perf_sample *const *)b;
    return strcmp(x->stack, y->stack);
}

/* Folds samples [0, n) (pointers) into "stack count" lines. */
static int fold(ingest_perf_sample **s, size_t n, sbuf *out)
{
    qsort(s, n, sizeof *s, cmp_stack);
    out->len = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && strcmp(s[j]->stack, s[i]->stack) == 0) j++;
        char num[32];
        snprintf(num, sizeof num, " %zu\n", j - i);
        if (sbuf_put(out, s[i]->stack, s[i]->len) || sbuf_put(out, num, strlen(num))) return -1;
        i = j;
    }
    return 0;
}

static int import_perf(importer *im, const char *name, const char *text, size_t len, int64_t anchor_ms)
{
    ingest_perf_sample *s;
    size_t n;
    char err[512];
    if (ingest_perf_parse(text, len, &s, &n, err, sizeof err)) {
        fprintf(stderr, "flamedb import: %s: %s\n", name, err);
        return -1;
    }
    if (!n) {
        fprintf(stderr, "flamedb import: %s: no samples\n", name);
        ingest_perf_free(s, n);
        return 0;
    }
    int64_t tmin = INT64_MAX, tmax = INT64_MIN, w_ns = im->window_ms * 1000000;
    for (size_t i = 0; i < n; i++) {
        int64_t t = s[i].time_ns < 0 ? 0 : s[i].time_ns;
        if (t < tmin) tmin = t;
        if (t > tmax) tmax = t;
    }
    int64_t n_windows = (tmax - tmin) / w_ns + 1;
    /* bucket sample pointers by window: counting sort */
    size_t *start = calloc((size_t)n_windows + 1, sizeof *start);
    ingest_perf_sample **order = malloc(n * sizeof *order);
    sbuf body = { 0 };
    int rc = -1;
    if (!start || !order) {
        fprintf(stderr, "flamedb import: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < n; i++) start[((s[i].time_ns < 0 ? 0 : s[i].time_ns) - tmin) / w_ns + 1]++;
    for (int64_t w = 0; w < n_windows; w++) start[w + 1] += start[w];
    {
        size_t *fill = calloc((size_t)n_windows, sizeof *fill);
        if (!fill) goto out;
        for (size_t i = 0; i < n; i++) {
            int64_t w = ((s[i].time_ns < 0 ? 0 : s[i].time_ns) - tmin) / w_ns;
            order[start[w] + fill[w]++] = &s[i];
        }
        free(fill);
    }
    for (int64_t w = 0; w < n_windows; w++) {
        size_t a = start[w], b = start[w + 1];
        if (a == b) continue;
        int64_t from = anchor_ms - (n_windows - w) * im->window_ms;
        if (fold(order + a, b - a, &body)) {
            fprintf(stderr, "flamedb import: out of memory\n");
            goto out;
        }
        char what[600];
        snprintf(what, sizeof what, "%s (window %lld of %lld)", name, (long long)w + 1, (long long)n_windows);
        if (push(im, what, body.b, body.len, from, from + im->window_ms, b - a)) goto out;
        if (im->progress)
            fprintf(stderr, "\rflamedb import: %s: window %lld/%lld, %llu samples pushed", name, (long long)w + 1,
                    (long long)n_windows, (unsigned long long)im->samples);
    }
    if (im->progress) fputc('\n', stderr);
    rc = 0;
out:
    free(start);
    free(order);
    free(body.b);
    ingest_perf_free(s, n);
    return rc;
}

/* Sums the counts of a folded text (for the summary line only). */
static uint64_t folded_samples(const char *t, size_t len)
{
    uint64_t sum = 0;
    const char *p = t, *end = t + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *q = eol;
        while (q > p && (q[-1] == '\r' || q[-1] == ' ' || q[-1] == '\t')) q--;
        const char *d = q;
        while (d > p && d[-1] >= '0' && d[-1] <= '9') d--;
        if (d < q) sum += strtoull(d, NULL, 10);
        p = eol + 1;
    }
    return sum;
}

static int read_file(const char *name, char **out, size_t *len, int64_t *mtime_ms)
{
    FILE *f = strcmp(name, "-") ? fopen(name, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "flamedb import: %s: %s\n", name, strerror(errno));
        return -1;
    }
    struct stat st;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    *mtime_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (f != stdin && fstat(fileno(f), &st) == 0)
        *mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    sbuf b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (sbuf_put(&b, chunk, n)) {
            fprintf(stderr, "flamedb import: %s: out of memory\n", name);
            free(b.b);
            if (f != stdin) fclose(f);
            return -1;
        }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (bad) {
        fprintf(stderr, "flamedb import: %s: read error\n", name);
        free(b.b);
        return -1;
    }
    *out = b.b ? b.b : calloc(1, 1);
    *len = b.len;
    return *out ? 0 : -1;
}

static int import_file(importer *im, const char *name)
{
    char *text;
    size_t len;
    int64_t mtime;
    if (read_file(name, &text, &len, &mtime)) return -1;
    uint64_t before = im->samples, profiles = im->profiles;
    int rc, perf = ingest_perf_detect(text, len);
    if (perf) rc = import_perf(im, name, text, len, mtime);
    else rc = push(im, name, text, len, mtime - im->window_ms, mtime, folded_samples(text, len));
    free(text);
    if (!rc)
        printf("%s: %s, %llu samples in %llu profiles\n", name, perf ? "perf script" : "folded",
               (unsigned long long)(im->samples - before), (unsigned long long)(im->profiles - profiles));
    return rc;
}

int client_import_main(int argc, char **argv)
{
    importer im = { .window_ms = 10000, .progress = isatty(2) };
    int first_file = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_import, stdout);
            return 0;
        }
        if (strncmp(a, "--", 2) || !strcmp(a, "--")) {
            first_file = !strcmp(a, "--") ? i + 1 : i;
            break;
        }
        if (strcmp(a, "--server") && strcmp(a, "--service") && strcmp(a, "--labels") && strcmp(a, "--rate") &&
            strcmp(a, "--window") && strcmp(a, "--token") && strcmp(a, "--token-file") && strcmp(a, "--tenant") &&
            strcmp(a, "--ca")) {
            fprintf(stderr, "flamedb import: unknown flag '%s'\n%s", a, usage_import);
            return 2;
        }
        if (!v) {
            fprintf(stderr, "flamedb import: missing value for '%s'\n", a);
            return 2;
        }
        i++;
        char *end;
        if (!strcmp(a, "--server")) im.server = v;
        else if (!strcmp(a, "--token")) im.token = v;
        else if (!strcmp(a, "--token-file")) im.token_file = v;
        else if (!strcmp(a, "--tenant")) im.tenant = v;
        else if (!strcmp(a, "--ca")) im.ca = v;
        else if (!strcmp(a, "--service")) im.service = v;
        else if (!strcmp(a, "--labels")) im.labels = v;
        else if (!strcmp(a, "--rate")) {
            im.rate = strtod(v, &end);
            if (*end || !(im.rate > 0 && im.rate <= 1e9)) {
                fprintf(stderr, "flamedb import: --rate '%s': expected a frequency in Hz above 0\n", v);
                return 2;
            }
        } else {
            double w = strtod(v, &end);
            if (*end || !(w >= 0.001 && w <= 86400 * 365)) {
                fprintf(stderr, "flamedb import: --window '%s': expected a number of seconds above 0\n", v);
                return 2;
            }
            im.window_ms = (int64_t)(w * 1000 + 0.5);
        }
    }
    if (!im.server || !im.service) {
        fprintf(stderr, "flamedb import: --server and --service are required\n%s", usage_import);
        return 2;
    }
    if (first_file < 0 || first_file >= argc) {
        fprintf(stderr, "flamedb import: no FILE given\n%s", usage_import);
        return 2;
    }
    if (im.token && im.token_file) {
        fprintf(stderr, "flamedb import: --token and --token-file exclude each other\n");
        return 2;
    }
    if (im.tenant && (!*im.tenant ||
                      strspn(im.tenant, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
                          strlen(im.tenant))) {
        fprintf(stderr, "flamedb import: --tenant '%s': expected letters, digits, '_', '.' or '-'\n", im.tenant);
        return 2;
    }
    char token[1100], err[700];
    if (im.token_file && client_token_read(im.token_file, token, sizeof token, err, sizeof err)) {
        fprintf(stderr, "flamedb import: %s\n", err);
        return 2;
    }
    if (!(im.push = client_push_new())) {
        fprintf(stderr, "flamedb import: cannot initialise libcurl\n");
        return 1;
    }
    client_push_timeout(im.push, 300);
    if (client_push_auth(im.push, im.token_file ? token : im.token, im.tenant, im.ca, err, sizeof err)) {
        fprintf(stderr, "flamedb import: %s%s\n", im.token && strstr(err, "token") ? "--token: " : "", err);
        client_push_free(im.push);
        return 2;
    }
    memset(token, 0, sizeof token);
    int rc = 0;
    for (int i = first_file; i < argc && !rc; i++)
        if (import_file(&im, argv[i])) rc = 1;
    client_push_free(im.push);
    return rc;
}
