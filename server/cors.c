/* cors.c — CORS for browser clients: `flamedb serve --cors-origin ORIGIN`.
 *
 * A page from another origin (Grafana, a dashboard, a dev server on
 * localhost:3000) may read an answer only when the answer names the page's
 * origin in Access-Control-Allow-Origin, and may send a DELETE, or a POST
 * with a JSON or binary body, only after a preflight (OPTIONS with Origin
 * and Access-Control-Request-Method) that the server answers 204 with the
 * methods and headers it permits.
 *
 * * Nothing by default.  Without --cors-origin no answer carries an
 *   Access-Control-* header, so browsers keep other pages from reading
 *   anything, as before the flag existed.
 * * Listed origins only; "*" is refused.  Without --auth flamedb trusts
 *   every client and takes writes (ingest, series deletion): a wildcard would let
 *   any page a user happens to open read profiles and write through that
 *   user's browser, with its network position and credentials.
 * * Exact matching.  Origins are kept in the form browsers send them (RFC
 *   6454 serialization: lowercase scheme and host, default port left out),
 *   so a request matches by string comparison and the answer echoes that
 *   origin.
 * * Other clients see no change: the answers keep their status and body;
 *   CORS only adds headers (Vary: Origin on every answer once an origin is
 *   configured, since answers then depend on that request header, which
 *   caches must know) and answers preflights, which only browsers send.
 *   Same-origin requests (the built-in viewer) send no Origin, or the
 *   server's own on a POST, and need no CORS headers. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "srv.h"

#define CORS_EXAMPLE "e.g. https://grafana.example.com or http://localhost:3000"

/* Request headers a preflight may be granted; anything else requested is
 * left out of the answer and the browser refuses the request. */
static const char *const safe_headers[] = { "Content-Type", "Content-Encoding", "Authorization", "X-Scope-OrgID" };

static int host_char(unsigned char ch)
{
    return isalnum(ch) || ch == '-' || ch == '.' || ch == '_';
}

int srv_cors_add(srv_cors *c, const char *in, char *err, size_t errlen)
{
    if (!strcmp(in, "*")) {
        snprintf(err, errlen,
                 "'*' is not accepted: any web page a user opens could then read profiles and write "
                 "(ingest, delete series) through that user's browser, with its credentials and network "
                 "access; give each origin, " CORS_EXAMPLE);
        return -1;
    }
    const char *sep = strstr(in, "://");
    size_t sl = sep ? (size_t)(sep - in) : 0;
    int https = sep && sl == 5 && !strncasecmp(in, "https", 5);
    if (!sep || !(https || (sl == 4 && !strncasecmp(in, "http", 4)))) {
        snprintf(err, errlen, "'%s': expected an origin with scheme http or https, " CORS_EXAMPLE, in);
        return -1;
    }
    const char *host = sep + 3, *p = host;
    if (*p == '[') { /* an IPv6 literal */
        p++;
        while (isxdigit((unsigned char)*p) || *p == ':' || *p == '.') p++;
        if (*p != ']' || p == host + 1) {
            snprintf(err, errlen, "'%s': bad IPv6 host; expected e.g. http://[::1]:3000", in);
            return -1;
        }
        p++;
    } else {
        while (host_char((unsigned char)*p)) p++;
    }
    size_t hl = (size_t)(p - host);
    if ((unsigned char)*p >= 0x80) {
        snprintf(err, errlen, "'%s': give a non-ASCII host in its ASCII (xn--) form, as browsers send it", in);
        return -1;
    }
    if (!hl) {
        snprintf(err, errlen, "'%s': no host; " CORS_EXAMPLE, in);
        return -1;
    }
    unsigned long port = https ? 443 : 80;
    if (*p == ':') {
        const char *d = ++p;
        port = 0;
        while (isdigit((unsigned char)*p) && port <= 65535) port = port * 10 + (unsigned long)(*p++ - '0');
        if (p == d || isdigit((unsigned char)*p) || port < 1 || port > 65535) {
            snprintf(err, errlen, "'%s': the port must be a number from 1 to 65535", in);
            return -1;
        }
    }
    if (*p) {
        if (*p == '/' || *p == '?' || *p == '#')
            snprintf(err, errlen, "'%s' has a %s ('%s'); an origin is only scheme://host[:port], e.g. %.*s",
                     in, *p == '/' ? "path" : "query or fragment", p, (int)(p - in), in);
        else if (*p == '@')
            snprintf(err, errlen, "'%s': an origin has no user name; only scheme://host[:port], " CORS_EXAMPLE, in);
        else
            snprintf(err, errlen, "'%s': unexpected '%c' in the host; " CORS_EXAMPLE, in, *p);
        return -1;
    }
    char canon[SRV_CORS_ORIGIN_LEN];
    char portbuf[8] = "";
    if (port != (https ? 443u : 80u)) snprintf(portbuf, sizeof portbuf, ":%lu", port);
    int n = snprintf(canon, sizeof canon, "%s://%.*s%s", https ? "https" : "http", (int)hl, host, portbuf);
    if (n < 0 || (size_t)n >= sizeof canon) {
        snprintf(err, errlen, "'%.60s...': longer than %d bytes", in, SRV_CORS_ORIGIN_LEN - 1);
        return -1;
    }
    for (char *q = canon; *q; q++) *q = (char)tolower((unsigned char)*q);
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->origin[i], canon)) return 0; /* given twice: once is enough */
    if (c->n == SRV_CORS_MAX) {
        snprintf(err, errlen, "'%s': at most %d origins", in, SRV_CORS_MAX);
        return -1;
    }
    memcpy(c->origin[c->n++], canon, (size_t)n + 1);
    return 0;
}

static const char *header(const srv_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *srv_cors_match(const srv_request *rq)
{
    if (!rq->srv || !rq->srv->cors.n) return NULL;
    const char *origin = header(rq, MHD_HTTP_HEADER_ORIGIN);
    if (!origin) return NULL;
    for (size_t i = 0; i < rq->srv->cors.n; i++)
        if (!strcmp(origin, rq->srv->cors.origin[i])) return rq->srv->cors.origin[i];
    return NULL;
}

void srv_cors_decorate(const srv_request *rq, struct MHD_Response *resp, int status)
{
    if (!rq->srv || !rq->srv->cors.n) return;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ORIGIN);
    const char *origin = srv_cors_match(rq);
    if (!origin) return;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    /* Allow (on 405) is the one header of ours a script cannot read
     * without this; Content-Type and Content-Length it always can. */
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_EXPOSE_HEADERS, MHD_HTTP_HEADER_ALLOW);
}

int srv_cors_is_preflight(const srv_request *rq)
{
    return !strcmp(rq->method, "OPTIONS") && header(rq, MHD_HTTP_HEADER_ORIGIN) &&
           header(rq, MHD_HTTP_HEADER_ACCESS_CONTROL_REQUEST_METHOD);
}

/* The requested headers (a comma-separated list) that are on the safe
 * list, in their usual spelling, each once. */
static void granted_headers(const char *requested, char *out, size_t outlen)
{
    int given[sizeof safe_headers / sizeof safe_headers[0]] = { 0 };
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = requested; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        const char *end = p;
        while (*end && *end != ',') end++;
        size_t n = (size_t)(end - p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        for (size_t i = 0; n && i < sizeof safe_headers / sizeof safe_headers[0]; i++) {
            if (given[i] || strlen(safe_headers[i]) != n || strncasecmp(p, safe_headers[i], n)) continue;
            given[i] = 1;
            int w = snprintf(out + len, outlen - len, "%s%s", len ? ", " : "", safe_headers[i]);
            if (w > 0 && (size_t)w < outlen - len) len += (size_t)w;
        }
        p = end;
    }
}

enum MHD_Result srv_cors_preflight(srv_request *rq)
{
    const char *origin = srv_cors_match(rq);
    if (!origin)
        return srv_reply_error(rq, MHD_HTTP_FORBIDDEN, "origin '%s' is not allowed (flamedb serve --cors-origin)",
                               header(rq, MHD_HTTP_HEADER_ORIGIN));
    if (!rq->allowed) return srv_reply_error(rq, MHD_HTTP_NOT_FOUND, "no such endpoint: %s", rq->url);
    char allow_headers[128];
    granted_headers(header(rq, MHD_HTTP_HEADER_ACCESS_CONTROL_REQUEST_HEADERS), allow_headers,
                    sizeof allow_headers);
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ORIGIN);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_METHODS, rq->allowed);
    if (allow_headers[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_HEADERS, allow_headers);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_MAX_AGE, "600");
    rq->status = MHD_HTTP_NO_CONTENT;
    enum MHD_Result r = MHD_queue_response(rq->conn, MHD_HTTP_NO_CONTENT, resp);
    MHD_destroy_response(resp);
    return r;
}

/* ---- requests from browsers: Host and Origin checks (issue 12) ----------
 *
 * flamedb has no authentication yet, so a browser is the way in for a web
 * page: a page on any site can send a form POST or a no-cors fetch to
 * http://127.0.0.1:4040 (it cannot read the answer, but the profile is
 * stored or the series deleted), and a page whose DNS name its owner
 * points at 127.0.0.1 after loading (DNS rebinding) is even same-origin
 * with the server and reads every answer.  Browsers say they are browsers:
 * they send Origin on every POST and DELETE and on cross-origin requests,
 * and Sec-Fetch-Site on every request (Chrome 76, Firefox 90, Safari 16.4).
 * Requests with neither (curl, agents, flamedb import, a server-side proxy
 * that does not pass them on) are not checked at all.  For those with
 * either:
 *
 * 1. An Origin listed with --cors-origin passes: the operator trusts it.
 * 2. Host must be a name of this server: an IP literal, localhost or
 *    *.localhost, the --listen host, the machine's host name, or a name
 *    given with --allowed-host.  A rebinding page's requests carry the
 *    page's own name in Host, so they stop here (also its GETs).
 * 3. A POST or DELETE (any method but GET, HEAD, OPTIONS) must come from
 *    the server's own pages: its Origin's host[:port] equals Host (ports 80
 *    and 443 as their schemes' defaults).  Without Origin,
 *    Sec-Fetch-Site must not say cross-site or same-site.
 *
 * Each refusal is a 403 before the body is read, naming the header and the
 * flag that would let it through. */

static int ieq(const char *a, size_t an, const char *b)
{
    return strlen(b) == an && !strncasecmp(a, b, an);
}

int srv_cors_add_host(srv_cors *c, const char *name, char *err, size_t errlen)
{
    size_t n = strlen(name);
    while (n && name[n - 1] == '.') n--;
    if (!n || n >= SRV_HOST_LEN) {
        snprintf(err, errlen, "'%s': expected a DNS name like flamedb.example.com", name);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!host_char((unsigned char)name[i])) {
            snprintf(err, errlen, "'%s': expected a DNS name like flamedb.example.com (no scheme, port or path)", name);
            return -1;
        }
    }
    for (size_t i = 0; i < c->n_hosts; i++)
        if (ieq(name, n, c->host[i])) return 0;
    if (c->n_hosts == sizeof c->host / sizeof c->host[0]) {
        snprintf(err, errlen, "'%s': too many names", name);
        return -1;
    }
    for (size_t i = 0; i < n; i++) c->host[c->n_hosts][i] = (char)tolower((unsigned char)name[i]);
    c->host[c->n_hosts++][n] = '\0';
    return 0;
}

/* Splits a Host header value into its host (brackets of an IPv6 literal
 * kept) and its port (NULL when none). */
static void split_host(const char *v, const char **host, size_t *hl, const char **port)
{
    *host = v;
    *port = NULL;
    if (*v == '[') {
        const char *e = strchr(v, ']');
        *hl = e ? (size_t)(e - v + 1) : strlen(v);
        if (e && e[1] == ':') *port = e + 2;
        return;
    }
    const char *colon = strchr(v, ':');
    if (colon && strchr(colon + 1, ':')) colon = NULL; /* a bare IPv6 literal */
    *hl = colon ? (size_t)(colon - v) : strlen(v);
    if (colon) *port = colon + 1;
}

static int is_ip_literal(const char *h, size_t n)
{
    char buf[64];
    if (n >= sizeof buf) return 0;
    if (h[0] == '[' && n > 2 && h[n - 1] == ']') h++, n -= 2;
    memcpy(buf, h, n);
    buf[n] = '\0';
    unsigned char a[16];
    return inet_pton(AF_INET, buf, a) == 1 || inet_pton(AF_INET6, buf, a) == 1;
}

static int host_known(const srv_cors *c, const char *h, size_t n)
{
    while (n && h[n - 1] == '.') n--;
    if (is_ip_literal(h, n)) return 1;
    static const char lh[] = "localhost", dlh[] = ".localhost";
    if (ieq(h, n, lh) || (n > sizeof dlh - 1 && !strncasecmp(h + n - (sizeof dlh - 1), dlh, sizeof dlh - 1)))
        return 1;
    for (size_t i = 0; i < c->n_hosts; i++)
        if (ieq(h, n, c->host[i])) return 1;
    return 0;
}

/* host[:port] of an origin "scheme://host[:port]", the scheme's default
 * port left out; 0 when it is no such origin (e.g. "null"). */
static int origin_authority(const char *origin, const char **auth, size_t *al, const char **port, int *https)
{
    const char *sep = strstr(origin, "://");
    if (!sep) return 0;
    *https = (size_t)(sep - origin) == 5 && !strncasecmp(origin, "https", 5);
    split_host(sep + 3, auth, al, port);
    return *al > 0;
}

/* The origin and the Host header name the same host and port. */
static int same_origin(const char *origin, const char *host_hdr)
{
    const char *oh, *op, *hh, *hp;
    size_t ol, hl;
    int https;
    if (!origin_authority(origin, &oh, &ol, &op, &https)) return 0;
    split_host(host_hdr, &hh, &hl, &hp);
    if (ol != hl || strncasecmp(oh, hh, ol)) return 0;
    const char *odef = https ? "443" : "80";
    if (!op || !*op) op = odef;
    if (!hp || !*hp) hp = odef;
    /* behind a proxy that ends TLS, Host may carry either default port */
    if (!strcmp(op, hp)) return 1;
    return (!strcmp(op, "443") || !strcmp(op, "80")) && (!strcmp(hp, "443") || !strcmp(hp, "80"));
}

int srv_browser_check(srv_request *rq)
{
    const char *origin = header(rq, MHD_HTTP_HEADER_ORIGIN);
    const char *site = header(rq, "Sec-Fetch-Site");
    if (!origin && !site) return 0; /* not a browser */
    if (origin && srv_cors_match(rq)) return 0;
    const char *host_hdr = header(rq, MHD_HTTP_HEADER_HOST);
    const srv_cors *c = &rq->srv->cors;
    if (host_hdr) {
        const char *h, *port;
        size_t hl;
        split_host(host_hdr, &h, &hl, &port);
        if (!host_known(c, h, hl)) {
            srv_reply_error(rq, MHD_HTTP_FORBIDDEN,
                            "Host '%s' is not a name of this server: a browser request naming another host may "
                            "come from a page whose name was pointed at this server (DNS rebinding); if browsers "
                            "reach the server by that name, start it with --allowed-host %.*s",
                            host_hdr, (int)hl, h);
            return -1;
        }
    }
    if (!strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD") || !strcmp(rq->method, "OPTIONS")) return 0;
    if (origin) {
        if (host_hdr && same_origin(origin, host_hdr)) return 0;
        srv_reply_error(rq, MHD_HTTP_FORBIDDEN,
                        "origin '%s' may not send %s requests: a page may change data only when it is this "
                        "server's own (Host '%s') or its origin is allowed with --cors-origin",
                        origin, rq->method, host_hdr ? host_hdr : "");
        return -1;
    }
    if (!strcmp(site, "cross-site") || !strcmp(site, "same-site")) {
        srv_reply_error(rq, MHD_HTTP_FORBIDDEN,
                        "a %s from another site (Sec-Fetch-Site: %s) is refused: a page may change data only "
                        "when it is this server's own or its origin is allowed with --cors-origin",
                        rq->method, site);
        return -1;
    }
    return 0;
}
