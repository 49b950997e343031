/* push.c — the folded-push client: POST /api/v1/ingest over libcurl, for
 * the agent and `flamedb import`.
 *
 * One CURL easy handle for the client's life, so the connection is kept
 * alive between pushes; bodies are gzip'd (Content-Encoding: gzip).  The
 * caller decides about retries and spooling from *retryable.
 *
 * For a server with --auth every push carries the token (Authorization:
 * Bearer) and, for a token of several tenants, X-Scope-OrgID; an https://
 * server's certificate is verified by libcurl against --ca FILE, or the
 * system's authorities.  A 401 or 403 is a 4xx: the profile is dropped
 * (the server will not take it), and the answer says why.
 */
#include "push.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/gzip.h"

struct client_push {
    CURL *curl;
    struct curl_slist *headers;
    struct curl_slist *jheaders;    /* client_push_json: JSON, not gzip'd */
    char answer[512];
    size_t answer_len;
    char *ca;
    long timeout_s;                 /* client_push_send */
};

static size_t push_write(char *data, size_t size, size_t n, void *arg)
{
    client_push *p = arg;
    size_t len = size * n, room = sizeof p->answer - 1 - p->answer_len;
    size_t k = len < room ? len : room;
    memcpy(p->answer + p->answer_len, data, k);
    p->answer_len += k;
    p->answer[p->answer_len] = 0;
    return len;
}

/* POSTs body with headers; 0 on 2xx (p->answer holds the answer's first
 * bytes), -1 with err; *status the HTTP status (0: none). */
static int push_post(client_push *p, const char *url, struct curl_slist *headers, const void *body,
                     size_t len, long timeout_s, int *retryable, long *status, char *err, size_t errlen)
{
    CURL *c = p->curl;
    *retryable = 0;
    if (status) *status = 0;
    p->answer_len = 0;
    p->answer[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, push_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    if (p->ca) curl_easy_setopt(c, CURLOPT_CAINFO, p->ca);
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s%s", curl_easy_strerror(rc),
                 rc == CURLE_PEER_FAILED_VERIFICATION ? " (the server's certificate is not signed by an authority "
                                                        "this machine trusts: give it with --ca FILE)" : "");
        *retryable = 1;
        return -1;
    }
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (status) *status = code;
    if (code >= 200 && code < 300) return 0;
    snprintf(err, errlen, "HTTP %ld: %s", code, p->answer);
    *retryable = code >= 500 || code == 429 || code == 408;
    return -1;
}

client_push *client_push_new(void)
{
    static int inited;
    if (!inited) { curl_global_init(CURL_GLOBAL_DEFAULT); inited = 1; }
    client_push *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->curl = curl_easy_init();
    if (!p->curl) { free(p); return NULL; }
    p->headers = curl_slist_append(NULL, "Content-Encoding: gzip");
    p->headers = curl_slist_append(p->headers, "Content-Type: text/plain");
    p->headers = curl_slist_append(p->headers, "Expect:");
    p->jheaders = curl_slist_append(NULL, "Content-Type: application/json");
    p->jheaders = curl_slist_append(p->jheaders, "Expect:");
    p->timeout_s = 30;
    return p;
}

void client_push_free(client_push *p)
{
    if (!p) return;
    curl_slist_free_all(p->headers);
    curl_slist_free_all(p->jheaders);
    curl_easy_cleanup(p->curl);
    free(p->ca);
    free(p);
}

int client_push_send(client_push *p, const char *url, const void *body, size_t len, long *status, int *retryable,
                     char *err, size_t errlen)
{
    unsigned char *gz;
    size_t gzlen;
    *retryable = 0;
    if (status) *status = 0;
    if (gzip_compress(body, len, &gz, &gzlen) < 0) {
        snprintf(err, errlen, "out of memory compressing %zu bytes", len);
        return -1;
    }
    int rc = push_post(p, url, p->headers, gz, gzlen, p->timeout_s, retryable, status, err, errlen);
    free(gz);
    return rc;
}

void client_push_timeout(client_push *p, long seconds)
{
    p->timeout_s = seconds;
}

const char *client_push_answer(const client_push *p)
{
    return p->answer;
}

int client_push_json(client_push *p, const char *url, const char *body, size_t len,
                    long *status, const char **answer, char *err, size_t errlen)
{
    int retryable;
    return push_post(p, url, p->jheaders, body, len, 5L, &retryable, status, err, errlen) < 0 ? -1
           : (*answer = p->answer, 0);
}

/* A token or tenant fit for a header line: printable, no blanks. */
static int header_safe(const char *s)
{
    if (!*s || strlen(s) > 1000) return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || *s == 0x7f) return 0;
    return 1;
}

int client_push_auth(client_push *p, const char *token, const char *tenant, const char *ca,
                    char *err, size_t errlen)
{
    char line[1100];
    if (token) {
        if (!header_safe(token)) { snprintf(err, errlen, "the token must be 1 to 1000 printable characters"); return -1; }
        snprintf(line, sizeof line, "Authorization: Bearer %s", token);
        p->headers = curl_slist_append(p->headers, line);
        p->jheaders = curl_slist_append(p->jheaders, line);
    }
    if (tenant) {
        if (!header_safe(tenant)) { snprintf(err, errlen, "--tenant '%s': not a tenant name", tenant); return -1; }
        snprintf(line, sizeof line, "X-Scope-OrgID: %s", tenant);
        p->headers = curl_slist_append(p->headers, line);
        p->jheaders = curl_slist_append(p->jheaders, line);
    }
    if (ca) {
        FILE *f = fopen(ca, "r");
        if (!f) { snprintf(err, errlen, "--ca %s: %s", ca, strerror(errno)); return -1; }
        fclose(f);
        free(p->ca);
        if (!(p->ca = strdup(ca))) { snprintf(err, errlen, "out of memory"); return -1; }
    }
    if (!p->headers || !p->jheaders) { snprintf(err, errlen, "out of memory"); return -1; }
    return 0;
}

int client_token_read(const char *path, char *buf, size_t cap, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno)); return -1; }
    char *line = fgets(buf, (int)cap, f);
    fclose(f);
    const char *t = line ? buf : "";
    while (*t == ' ' || *t == '\t') t++;
    size_t n = strcspn(t, "\r\n");
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    memmove(buf, t, n);
    buf[n] = 0;
    if (!header_safe(buf)) {
        snprintf(err, errlen, "--token-file %s: its first line is no token (1 to 1000 printable characters)", path);
        return -1;
    }
    return 0;
}
