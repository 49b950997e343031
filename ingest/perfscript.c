/* perfscript.c — `perf script` text into stacks, for `flamedb import`.
 *
 * perf script prints one block per sample: a header line that starts at
 * column 0 ("comm pid/tid [cpu] secs.usecs: period event:" with the default
 * fields, "comm pid/tid secs.usecs:" with -F comm,pid,tid,time,ip,sym,dso),
 * then one indented line per frame, leaf first ("\t<ip> <sym>+<off>
 * (<dso>)"), then a blank line.  The comm may contain spaces, so the header
 * is read from its time token ("digits.digits:") backwards: an optional
 * "[cpu]", an optional "pid" or "pid/tid", and everything before is the
 * comm.  Without a time field the sample's time is -1.
 *
 * A sample becomes the stack comm;root...;leaf.  Frames keep the symbol
 * without "+0xoff"; an "[unknown]" symbol is named by the basename of its
 * dso (libc.so.6), or stays "[unknown]" when the dso is unknown too.  ';'
 * in names becomes ':' so a frame stays a folded frame.  perf never writes
 * a NUL byte, and frames are kept NUL-separated: a NUL is an error naming
 * its line, as is a time whose nanoseconds do not fit 63 bits. */
#include "ingest_internal.h"
#include "demangle.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char *b; size_t len, cap; } buf;

static int buf_put(buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        char *nb = realloc(b->b, cap);
        if (!nb) return -1;
        b->b = nb;
        b->cap = cap;
    }
    for (size_t i = 0; i < n; i++) b->b[b->len + i] = s[i] == ';' ? ':' : s[i];
    b->len += n;
    b->b[b->len] = '\0';
    return 0;
}

/* Appends the frame separator (buf_put would turn a ';' into ':'). */
static int buf_sep(buf *b)
{
    if (buf_put(b, " ", 1)) return -1;
    b->b[b->len - 1] = ';';
    return 0;
}

static int is_ws(char c) { return c == ' ' || c == '\t'; }

/* The most seconds a time may have: its nanoseconds fit an int64_t. */
#define MAX_TIME_SEC (INT64_MAX / 1000000000 - 1)

/* "12345.678901:" -> nanoseconds; -1 when tok is not a time token, -2 when
 * it is one of more than MAX_TIME_SEC seconds. */
static int64_t time_token(const char *t, size_t n)
{
    if (n < 3 || t[n - 1] != ':') return -1;
    size_t i = 0;
    int64_t sec = 0, frac = 0, scale = 1000000000;
    for (; i < n && isdigit((unsigned char)t[i]); i++)
        if (sec <= MAX_TIME_SEC) sec = sec * 10 + (t[i] - '0'); /* past it: stays too big, never overflows */
    if (i == 0 || i >= n || t[i] != '.') return -1;
    size_t f0 = ++i;
    while (i < n && isdigit((unsigned char)t[i])) {
        if (scale > 1) {
            scale /= 10;
            frac += (t[i] - '0') * scale;
        }
        i++;
    }
    if (i == f0 || i != n - 1) return -1;
    if (sec > MAX_TIME_SEC) return -2;
    return sec * 1000000000 + frac;
}

static int pid_token(const char *t, size_t n)
{
    size_t i = 0, d1 = 0, d2 = 0;
    while (i < n && isdigit((unsigned char)t[i])) i++, d1++;
    if (i < n && t[i] == '/') {
        i++;
        while (i < n && isdigit((unsigned char)t[i])) i++, d2++;
        if (!d2) return 0;
    }
    return d1 && i == n;
}

static int cpu_token(const char *t, size_t n)
{
    if (n < 3 || t[0] != '[' || t[n - 1] != ']') return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (!isdigit((unsigned char)t[i])) return 0;
    return 1;
}

#define MAX_TOKENS 64

/* Reads a header line: comm (into *comm, *comm_len) and time.  Answers -1
 * when its time is out of range. */
static int parse_header(const char *l, size_t n, const char **comm, size_t *comm_len, int64_t *time_ns)
{
    const char *ts[MAX_TOKENS];
    size_t tl[MAX_TOKENS], nt = 0;
    for (size_t i = 0; i < n && nt < MAX_TOKENS;) {
        while (i < n && is_ws(l[i])) i++;
        if (i >= n) break;
        size_t s = i;
        while (i < n && !is_ws(l[i])) i++;
        ts[nt] = l + s;
        tl[nt++] = i - s;
    }
    *time_ns = -1;
    size_t end = nt ? 1 : 0; /* tokens [0, end) are the comm */
    size_t k;
    for (k = 1; k < nt; k++) {
        int64_t t = time_token(ts[k], tl[k]);
        if (t == -2) return -1;
        if (t >= 0) {
            *time_ns = t;
            break;
        }
    }
    size_t j = k < nt ? k : nt; /* walk back from the time token (or the end) */
    if (j > 1 && cpu_token(ts[j - 1], tl[j - 1])) j--;
    if (j > 1 && pid_token(ts[j - 1], tl[j - 1])) j--;
    if (k < nt || j < nt) end = j;
    else {
        /* no time field: the comm ends before the first pid-like token */
        for (end = 1; end < nt && !pid_token(ts[end], tl[end]); end++) {}
    }
    if (!nt) {
        *comm = "[unknown]";
        *comm_len = 9;
        return 0;
    }
    *comm = ts[0];
    *comm_len = (size_t)(ts[end - 1] + tl[end - 1] - ts[0]);
    return 0;
}

/* Reads a frame line into its name. */
static void parse_frame(const char *l, size_t n, const char **name, size_t *name_len, char *tmp, size_t cap)
{
    size_t i = 0;
    while (i < n && is_ws(l[i])) i++;
    size_t s = i;
    while (i < n && !is_ws(l[i])) i++; /* the ip */
    int had_ip = 1;
    for (size_t k = s; k < i; k++) had_ip &= isxdigit((unsigned char)l[k]) != 0;
    if (!had_ip) i = s; /* no ip field: the symbol starts here */
    while (i < n && is_ws(l[i])) i++;
    const char *sym = l + i;
    size_t sl = n - i;
    const char *dso = NULL;
    size_t dl = 0;
    if (sl && sym[sl - 1] == ')') {
        for (size_t k = sl - 1; k-- > 0;) {
            if (sym[k] == '(' && (k == 0 || is_ws(sym[k - 1]))) {
                dso = sym + k + 1;
                dl = sl - k - 2;
                sl = k;
                break;
            }
        }
    }
    while (sl && is_ws(sym[sl - 1])) sl--;
    /* strip +0xoff */
    for (size_t k = sl; k-- > 0;) {
        if (sym[k] == '+' && k + 2 < sl && sym[k + 1] == '0' && sym[k + 2] == 'x') {
            size_t h = k + 3;
            while (h < sl && isxdigit((unsigned char)sym[h])) h++;
            if (h == sl && h > k + 3) sl = k;
            break;
        }
    }
    if (sl == 0 || (sl == 9 && memcmp(sym, "[unknown]", 9) == 0)) {
        if (dso && dl && !(dl == 9 && memcmp(dso, "[unknown]", 9) == 0)) {
            const char *b = dso;
            for (size_t k = 0; k < dl; k++)
                if (dso[k] == '/' && k + 1 < dl) b = dso + k + 1;
            size_t bl = (size_t)(dso + dl - b);
            if (bl >= cap) bl = cap - 1;
            memcpy(tmp, b, bl);
            *name = tmp;
            *name_len = bl;
            return;
        }
        *name = "[unknown]";
        *name_len = 9;
        return;
    }
    *name = sym;
    *name_len = sl;
}

int ingest_perf_detect(const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    for (int lines = 0; p < end && lines < 200; lines++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        if (eol > p && is_ws(*p)) {
            const char *q = p;
            while (q < eol && is_ws(*q)) q++;
            if (q < eol && *q != '\r') return 1;
        }
        p = eol + 1;
    }
    return 0;
}

void ingest_perf_free(ingest_perf_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++) free(s[i].stack);
    free(s);
}

typedef struct {
    ingest_perf_sample *s;
    size_t n, cap;
    buf frames;             /* current sample's frames, leaf first, '\0'-separated */
    size_t *offs;
    size_t n_frames, cap_frames;
    const char *comm;
    size_t comm_len;
    int64_t time_ns;
    int open;
} perf_state;

/* Ends the current sample: stack = comm;frames reversed. */
static int sample_end(perf_state *st)
{
    if (!st->open) return 0;
    st->open = 0;
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 1024;
        ingest_perf_sample *ns = realloc(st->s, cap * sizeof *ns);
        if (!ns) return -1;
        st->s = ns;
        st->cap = cap;
    }
    buf b = { 0 };
    if (buf_put(&b, st->comm_len ? st->comm : "[unknown]", st->comm_len ? st->comm_len : 9)) return -1;
    for (size_t k = st->n_frames; k-- > 0;) {
        const char *f = st->frames.b + st->offs[k];
        if (buf_sep(&b) || buf_put(&b, f, strlen(f))) {
            free(b.b);
            return -1;
        }
    }
    st->s[st->n++] = (ingest_perf_sample){ st->time_ns, b.b, b.len };
    st->frames.len = 0;
    st->n_frames = 0;
    return 0;
}

static int frame_add(perf_state *st, const char *name, size_t n)
{
    if (st->n_frames == st->cap_frames) {
        size_t cap = st->cap_frames ? st->cap_frames * 2 : 64;
        size_t *no = realloc(st->offs, cap * sizeof *no);
        if (!no) return -1;
        st->offs = no;
        st->cap_frames = cap;
    }
    st->offs[st->n_frames++] = st->frames.len;
    if (buf_put(&st->frames, name, n)) return -1;
    st->frames.len++; /* keep the NUL as separator */
    return 0;
}

ingest_status ingest_perf_parse(const char *text, size_t len, ingest_perf_sample **out, size_t *n_out,
                                char *err, size_t errlen)
{
    perf_state st = { 0 };
    demangle_cache *dmc = NULL;     /* made at the first mangled-looking name */
    const char *p = text, *end = text + len;
    size_t line = 0;
    char tmp[512];
    ingest_status s = INGEST_OK;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        size_t n = (size_t)(eol - p);
        line++;
        if (memchr(p, '\0', n)) {
            /* frames are kept NUL-separated and stacks are C strings */
            snprintf(err, errlen, "line %zu: a NUL byte (perf script text has none)", line);
            s = INGEST_EINVAL;
            goto fail;
        }
        if (n && p[n - 1] == '\r') n--;
        size_t k = 0;
        while (k < n && is_ws(p[k])) k++;
        if (k == n) {
            if (sample_end(&st)) goto oom;
        } else if (k > 0) {
            if (!st.open) {
                snprintf(err, errlen, "line %zu: a frame line without a sample header before it", line);
                s = INGEST_EINVAL;
                goto fail;
            }
            const char *name;
            size_t nl;
            parse_frame(p, n, &name, &nl, tmp, sizeof tmp);
            /* C++ and Rust names perf left mangled (perf script --no-demangle,
             * a perf built without a demangler): demangled once per name by
             * ingest/demangle.c, the agent's demangler too */
            if (demangle_candidate(name, nl) && (dmc || (dmc = demangle_cache_new()))) {
                const char *dm = demangle_cached(dmc, name, nl);
                if (dm) { name = dm; nl = strlen(dm); }
            }
            if (nl > INGEST_MAX_FRAME) nl = INGEST_MAX_FRAME;
            if (frame_add(&st, name, nl)) goto oom;
        } else {
            if (sample_end(&st)) goto oom;
            if (p[0] == '#') { /* perf script -header comments */
                p = eol + 1;
                continue;
            }
            if (parse_header(p, n, &st.comm, &st.comm_len, &st.time_ns)) {
                snprintf(err, errlen, "line %zu: a time of more than %lld seconds", line, (long long)MAX_TIME_SEC);
                s = INGEST_EINVAL;
                goto fail;
            }
            if (st.comm_len > INGEST_MAX_FRAME) st.comm_len = INGEST_MAX_FRAME;
            st.open = 1;
        }
        p = eol + 1;
    }
    if (sample_end(&st)) goto oom;
    demangle_cache_free(dmc);
    free(st.frames.b);
    free(st.offs);
    *out = st.s;
    *n_out = st.n;
    return INGEST_OK;
oom:
    snprintf(err, errlen, "out of memory reading perf script text");
    s = INGEST_ENOMEM;
fail:
    demangle_cache_free(dmc);
    free(st.frames.b);
    free(st.offs);
    ingest_perf_free(st.s, st.n);
    *out = NULL;
    *n_out = 0;
    return s;
}
