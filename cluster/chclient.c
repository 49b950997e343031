/* chclient.c — ClickHouse's HTTP interface over libcurl (see chclient.h).
 *
 * Every call is one POST to the endpoint's root: the URL carries the
 * parameters (database, query_id, settings, and for an insert the INSERT
 * statement itself as `query`), the body the statement or the rows.  The
 * answer is collected in memory: flamedb asks ClickHouse for aggregated
 * rows only, and inserts are answered with an empty body.  The status
 * line decides success: 18.16 answers 500 (and 404 for some codes) with
 * the exception text as the body. */
#include "chclient.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ch_client {
    CURL *h;
    struct curl_slist *headers;
    char *url, *user, *password, *database;
    long connect_timeout_ms, timeout_ms;
    /* the last answer */
    char *body;
    size_t body_len, body_cap;
    int body_oom;
    long http_status;
    int server_code;
    char curl_err[CURL_ERROR_SIZE];
    char err[1024];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s, int *oom)
{
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

const char *ch_status_name(ch_status s)
{
    switch (s) {
    case CH_OK: return "ok";
    case CH_EINVAL: return "invalid argument";
    case CH_ECONNECT: return "cannot connect";
    case CH_ETIMEOUT: return "timeout";
    case CH_ENET: return "connection broken";
    case CH_ESERVER: return "ClickHouse error";
    case CH_EPROTO: return "unreadable answer";
    case CH_ENOMEM: return "out of memory";
    }
    return "unknown";
}

ch_status ch_open(ch_client **out, const ch_options *opt, char *err, size_t errlen)
{
    *out = NULL;
    if (!opt || !opt->url || strncmp(opt->url, "http://", 7) != 0 || !opt->url[7]) {
        snprintf(err, errlen, "ClickHouse URL must look like http://host:8123, got \"%s\"",
                 opt && opt->url ? opt->url : "");
        return CH_EINVAL;
    }
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK) {
        snprintf(err, errlen, "libcurl failed to initialise: %s", curl_easy_strerror(curl_init_rc));
        return CH_ENOMEM;
    }
    ch_client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return CH_ENOMEM;
    }
    int oom = 0;
    c->url = dup_or_null(opt->url, &oom);
    c->user = dup_or_null(opt->user, &oom);
    c->password = dup_or_null(opt->password, &oom);
    c->database = dup_or_null(opt->database, &oom);
    if (!oom) {
        size_t n = strlen(c->url);
        while (n > 7 && c->url[n - 1] == '/') c->url[--n] = '\0';  /* we add the path */
    }
    c->connect_timeout_ms = opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 2000;
    c->timeout_ms = opt->timeout_ms > 0 ? opt->timeout_ms : 60000;
    c->h = oom ? NULL : curl_easy_init();
    /* curl's form content type would do no harm, but say what the body is;
     * an empty Expect stops curl waiting for "100 Continue" on big bodies. */
    struct curl_slist *h1 = c->h ? curl_slist_append(NULL, "Content-Type: application/octet-stream") : NULL;
    c->headers = h1 ? curl_slist_append(h1, "Expect:") : NULL;
    if (!c->headers) {
        if (h1) curl_slist_free_all(h1);
        ch_close(c);
        snprintf(err, errlen, "out of memory");
        return CH_ENOMEM;
    }
    *out = c;
    return CH_OK;
}

void ch_close(ch_client *c)
{
    if (!c) return;
    if (c->h) curl_easy_cleanup(c->h);
    curl_slist_free_all(c->headers);
    free(c->url);
    free(c->user);
    free(c->password);
    free(c->database);
    free(c->body);
    free(c);
}

const char *ch_body(const ch_client *c, size_t *len)
{
    if (len) *len = c->body_len;
    return c->body ? c->body : "";
}

const char *ch_errmsg(const ch_client *c) { return c->err; }
int ch_server_code(const ch_client *c) { return c->server_code; }
long ch_http_status(const ch_client *c) { return c->http_status; }
const char *ch_url(const ch_client *c) { return c->url; }

static ch_status set_err(ch_client *c, ch_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ch_status set_err(ch_client *c, ch_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- exceptions ---------------------------------------------------------- */

static const char *find(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(s + i, needle, n) == 0) return s + i;
    return NULL;
}

int ch_parse_exception(const char *body, size_t len, char *msg, size_t msglen)
{
    if (msglen) msg[0] = '\0';
    if (!body) return 0;
    size_t skip = 0;
    while (skip < len && (body[skip] == ' ' || body[skip] == '\n' || body[skip] == '\r' || body[skip] == '\t')) skip++;
    body += skip;
    len -= skip;
    if (len < 7 || memcmp(body, "Code: ", 6) != 0) return 0;
    const char *p = body + 6, *end = body + len;
    long code = 0;
    if (p >= end || *p < '0' || *p > '9') return 0;
    while (p < end && *p >= '0' && *p <= '9' && code < 1000000) code = code * 10 + (*p++ - '0');
    if (code <= 0) return 0;
    /* 18.16: "Code: N, e.displayText() = DB::Exception: msg, e.what() = DB::Exception"
     * today:  "Code: N. DB::Exception: msg. (NAME) (version X)" */
    const char *m = find(p, (size_t)(end - p), "e.displayText() = ");
    if (m) m += strlen("e.displayText() = ");
    else {
        m = p;
        while (m < end && (*m == ',' || *m == '.' || *m == ' ')) m++;
    }
    /* the last ", e.what() = ": a nested log (279's "All connection tries
     * failed. Log: Code: 210, ... Connection refused (host:port), e.what()
     * = ...") is the useful part, it names the servers */
    const char *mend = NULL;
    for (const char *q = m; (q = find(q, (size_t)(end - q), ", e.what() = ")) != NULL; q++) mend = q;
    if (!mend) mend = end;
    /* "DB::Exception: ", "DB::NetException: ": the class says nothing to a user */
    if ((size_t)(mend - m) > 4 && memcmp(m, "DB::", 4) == 0) {
        const char *q = m + 4;
        while (q < mend && ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z'))) q++;
        if (q + 2 <= mend && q[0] == ':' && q[1] == ' ' && q - m >= 13 && memcmp(q - 9, "Exception", 9) == 0) m = q + 2;
    }
    while (mend > m && (mend[-1] == '\n' || mend[-1] == '\r' || mend[-1] == ' ')) mend--;
    if (msglen) {
        /* one line: control characters become spaces, runs of spaces one */
        size_t o = 0;
        for (const char *q = m; q < mend && o + 1 < msglen; q++) {
            unsigned char ch = (unsigned char)*q;
            if (ch < 0x20 || ch == 0x7f) ch = ' ';
            if (ch == ' ' && (o == 0 || msg[o - 1] == ' ')) continue;
            msg[o++] = (char)ch;
        }
        msg[o] = '\0';
    }
    return (int)code;
}

/* ---- requests ------------------------------------------------------------ */

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    ch_client *c = ud;
    size_t n = size * nmemb;
    if (c->body_len + n + 1 > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap : 16384;
        while (cap < c->body_len + n + 1) cap *= 2;
        char *b = realloc(c->body, cap);
        if (!b) {
            c->body_oom = 1;
            return 0;  /* curl stops with CURLE_WRITE_ERROR */
        }
        c->body = b;
        c->body_cap = cap;
    }
    memcpy(c->body + c->body_len, ptr, n);
    c->body_len += n;
    c->body[c->body_len] = '\0';
    return n;
}

/* Appends "&name=escaped(value)" to a growable URL. */
static int url_param(ch_client *c, char **url, size_t *len, size_t *cap, const char *name, const char *value)
{
    char *en = curl_easy_escape(c->h, name, 0);
    char *ev = curl_easy_escape(c->h, value, 0);
    int ok = en && ev;
    if (ok) {
        size_t need = *len + strlen(en) + strlen(ev) + 3;
        if (need > *cap) {
            size_t nc = *cap * 2 > need ? *cap * 2 : need;
            char *u = realloc(*url, nc);
            if (!u) ok = 0;
            else {
                *url = u;
                *cap = nc;
            }
        }
        if (ok) *len += (size_t)sprintf(*url + *len, "%s%s=%s", (*url)[*len - 1] == '?' ? "" : "&", en, ev);
    }
    curl_free(en);
    curl_free(ev);
    return ok;
}

/* One POST: URL parameters, body; fills c->body, c->http_status. */
static ch_status request(ch_client *c, const char *insert_query, int wait_end, const char *body, size_t body_len,
                         const ch_query_opts *qo)
{
    c->err[0] = '\0';
    c->server_code = 0;
    c->http_status = 0;
    c->body_len = 0;
    c->body_oom = 0;
    if (c->body) c->body[0] = '\0';

    size_t cap = strlen(c->url) + 256, len;
    char *url = malloc(cap);
    if (!url) return set_err(c, CH_ENOMEM, "out of memory");
    len = (size_t)sprintf(url, "%s/?", c->url);
    int ok = 1;
    if (c->database) ok = ok && url_param(c, &url, &len, &cap, "database", c->database);
    if (insert_query) ok = ok && url_param(c, &url, &len, &cap, "query", insert_query);
    if (wait_end) ok = ok && url_param(c, &url, &len, &cap, "wait_end_of_query", "1");
    if (qo && qo->query_id) ok = ok && url_param(c, &url, &len, &cap, "query_id", qo->query_id);
    for (size_t i = 0; qo && ok && i < qo->n_settings; i++) {
        const ch_setting *s = &qo->settings[i];
        if (!s->name || !s->value || !*s->name) {
            free(url);
            return set_err(c, CH_EINVAL, "setting %zu has no name or no value", i);
        }
        ok = url_param(c, &url, &len, &cap, s->name, s->value);
    }
    if (!ok) {
        free(url);
        return set_err(c, CH_ENOMEM, "out of memory");
    }

    CURL *h = c->h;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (c->user || c->password) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, c->user ? c->user : "default");
        curl_easy_setopt(h, CURLOPT_PASSWORD, c->password ? c->password : "");
    }
    c->curl_err[0] = '\0';
    CURLcode rc = curl_easy_perform(h);
    free(url);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->http_status);
    const char *why = c->curl_err[0] ? c->curl_err : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_OK:
        break;
    case CURLE_WRITE_ERROR:
        if (c->body_oom) return set_err(c, CH_ENOMEM, "out of memory reading the answer of ClickHouse at %s", c->url);
        return set_err(c, CH_ENET, "ClickHouse at %s: %s", c->url, why);
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return set_err(c, CH_ECONNECT, "cannot connect to ClickHouse at %s: %s", c->url, why);
    case CURLE_OPERATION_TIMEDOUT:
        return set_err(c, CH_ETIMEOUT, "ClickHouse at %s did not answer in time (connect timeout %ld ms, request timeout %ld ms): %s",
                       c->url, c->connect_timeout_ms, c->timeout_ms, why);
    case CURLE_OUT_OF_MEMORY:
        return set_err(c, CH_ENOMEM, "out of memory talking to ClickHouse at %s", c->url);
    default:
        return set_err(c, CH_ENET, "ClickHouse at %s: %s", c->url, why);
    }
    if (c->http_status != 200) {
        char msg[768];
        c->server_code = ch_parse_exception(c->body, c->body_len, msg, sizeof msg);
        if (c->server_code)
            return set_err(c, CH_ESERVER, "ClickHouse at %s answered code %d: %s", c->url, c->server_code, msg);
        size_t n = c->body_len < 300 ? c->body_len : 300;
        return set_err(c, CH_ESERVER, "ClickHouse at %s answered HTTP %ld: %.*s", c->url, c->http_status, (int)n,
                       c->body ? c->body : "");
    }
    return CH_OK;
}

ch_status ch_exec(ch_client *c, const char *sql, const ch_query_opts *qo)
{
    if (!sql || !*sql) return set_err(c, CH_EINVAL, "empty statement");
    return request(c, NULL, 0, sql, strlen(sql), qo);
}

ch_status ch_insert(ch_client *c, const char *target, const void *rows, size_t len, const ch_query_opts *qo)
{
    if (!target || !*target) return set_err(c, CH_EINVAL, "insert: no table named");
    size_t n = strlen(target) + 40;
    char *q = malloc(n);
    if (!q) return set_err(c, CH_ENOMEM, "out of memory");
    snprintf(q, n, "INSERT INTO %s FORMAT RowBinary", target);
    ch_status st = request(c, q, 0, rows ? rows : "", len, qo);
    free(q);
    return st;
}

ch_status ch_select(ch_client *c, const char *sql, const ch_query_opts *qo, chrow_reader *rows)
{
    chrow_reader_init(rows, NULL, 0);
    if (!sql || !*sql) return set_err(c, CH_EINVAL, "empty statement");
    ch_status st = request(c, NULL, 1, sql, strlen(sql), qo);
    if (st == CH_OK) chrow_reader_init(rows, c->body, c->body_len);
    return st;
}
