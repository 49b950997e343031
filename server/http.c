/* http.c — libmicrohttpd wiring: the daemon, the access handler that
 * collects a request's body and dispatches it to its route, and the
 * completion callback that counts it.
 *
 * MHD runs a pool of threads, each with its own event loop.  Handlers run
 * on those threads and never wait for the disk: an ingest queues its
 * profile, suspends its connection and is resumed by the store's writer
 * thread once the group commit is durable; MHD then calls the access
 * handler again and the handler answers.  A body is
 * buffered whole (up to --max-body; past that 413 without reading the rest)
 * because nothing may be stored before all of it has been validated.
 * A CORS preflight (cors.c) skips the method check and is answered at
 * dispatch, once its empty body is read, which keeps the connection open.
 *
 * Before anything else a request is checked against the limits of its head
 * (414 for a target over SRV_MAX_URI or SRV_MAX_PARAMS, 431 for header
 * fields over SRV_MAX_HEADER_BYTES, all JSON) and, when it comes from a
 * browser, against its Origin and Host (cors.c: 403); then, under --auth,
 * its token against the scope its route needs for its method (the routing
 * table below; access.c: 401, 403).  Connections are
 * limited and slow ones closed by conns.c; libmicrohttpd's messages go
 * through log.c, which keeps them from flooding the log. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "srv.h"

#define SRV_BODY_AHEAD ((size_t)1 << 20) /* body bytes allocated before they come */

/* The routing table: every endpoint, its methods, and the scope a token
 * needs (--auth) for GET and HEAD, and for the other methods.  A route
 * whose scope is 0 for a method it allows is refused at start
 * (routes_checked), and tests/integration/test_auth.sh reads this table
 * to try every endpoint without a token: an endpoint cannot be added
 * without saying who may use it.  A path with "{name}" matches any one
 * non-empty part there (handed to the handler as route_arg); "/" stands for
 * every path outside /api/: the viewer's files. */
typedef struct {
    const char *path;
    srv_route route;
    const char *methods;   /* allowed methods, as the Allow header lists them */
    unsigned get_scope;    /* GET, HEAD: SRV_SCOPE_* */
    unsigned other_scope;  /* POST, DELETE: SRV_SCOPE_*; 0 when the route has none */
} route_entry;

static const route_entry routes[] = {
    { "/api/v1/ingest", ROUTE_INGEST, "POST", 0, SRV_SCOPE_WRITE },
    { "/ingest", ROUTE_PYROSCOPE, "POST", 0, SRV_SCOPE_WRITE },
    { "/v1development/profiles", ROUTE_OTLP, "POST", 0, SRV_SCOPE_WRITE },
    { "/api/v1/query", ROUTE_QUERY, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/labels", ROUTE_LABELS, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/label/{name}/values", ROUTE_LABEL_VALUES, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/series", ROUTE_SERIES, "GET, DELETE", SRV_SCOPE_READ, SRV_SCOPE_ADMIN },
    { "/api/v1/top", ROUTE_TOP, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/stability", ROUTE_STABILITY, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/compare", ROUTE_COMPARE, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/diff", ROUTE_DIFF, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/timeline", ROUTE_TIMELINE, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/variance", ROUTE_VARIANCE, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/hotspots/metrics", ROUTE_HOTSPOTS, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/agents", ROUTE_AGENTS, "GET", SRV_SCOPE_READ, 0 },
    { "/api/v1/agents/heartbeat", ROUTE_AGENT_HEARTBEAT, "POST", 0, SRV_SCOPE_WRITE },
    { "/querier.v1.QuerierService/{name}", ROUTE_CONNECT, "POST", 0, SRV_SCOPE_READ },
    { "/pyroscope/render", ROUTE_RENDER, "GET", SRV_SCOPE_READ, 0 },
    { "/pyroscope/render-diff", ROUTE_RENDER_DIFF, "GET", SRV_SCOPE_READ, 0 },
    { "/healthz", ROUTE_HEALTHZ, "GET", SRV_SCOPE_OPEN, 0 },
    { "/metrics", ROUTE_METRICS, "GET", SRV_SCOPE_METRICS, 0 },
    { "/", ROUTE_WEB, "GET", SRV_SCOPE_OPEN, 0 },
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

/* Whether url matches a path with one "{name}" part; *arg: that part and
 * what follows (e.g. "NAME/values"). */
static int path_match(const char *path, const char *url, const char **arg)
{
    const char *open = strchr(path, '{'), *close = open ? strchr(open, '}') : NULL;
    if (!close) return strcmp(path, url) == 0;
    size_t pl = (size_t)(open - path), sl = strlen(close + 1), n = strlen(url);
    if (n <= pl + sl || strncmp(url, path, pl) || strcmp(url + n - sl, close + 1)) return 0;
    *arg = url + pl;
    return 1;
}

static const route_entry *route_of(const char *url, srv_route *route, const char **arg)
{
    *arg = NULL;
    for (size_t i = 0; i < N_ROUTES; i++) {
        if (routes[i].route != ROUTE_WEB && path_match(routes[i].path, url, arg)) {
            *route = routes[i].route;
            return &routes[i];
        }
    }
    *arg = NULL;
    if (strncmp(url, "/api/", 5) == 0) {
        *route = ROUTE_UNKNOWN;
        return NULL;
    }
    *route = ROUTE_WEB;
    return &routes[N_ROUTES - 1];
}

static int is_read_method(const char *method)
{
    return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

/* Every route has a scope for each method it allows (checked at start). */
static int routes_checked(char *err, size_t errlen)
{
    for (size_t i = 0; i < N_ROUTES; i++) {
        const route_entry *e = &routes[i];
        int reads = 0, others = 0;
        for (const char *m = e->methods; *m; m += strspn(m, ", ")) {
            size_t n = strcspn(m, ", ");
            if ((n == 3 && !strncmp(m, "GET", 3)) || (n == 4 && !strncmp(m, "HEAD", 4))) reads = 1;
            else others = 1;
            m += n;
        }
        if ((reads && !e->get_scope) || (others && !e->other_scope)) {
            snprintf(err, errlen, "internal: route %s has no scope for its methods %s", e->path, e->methods);
            return -1;
        }
    }
    return 0;
}

/* allowed is a list like "GET, DELETE"; HEAD goes wherever GET does. */
static int method_allowed(const char *allowed, const char *method)
{
    size_t n = strlen(method);
    for (const char *p = allowed; (p = strstr(p, method)); p += n)
        if ((p == allowed || p[-1] == ' ') && (p[n] == '\0' || p[n] == ',')) return 1;
    return strcmp(method, "HEAD") == 0 && method_allowed(allowed, "GET");
}

static enum MHD_Result dispatch(srv_request *rq)
{
    if (srv_cors_is_preflight(rq)) return srv_cors_preflight(rq);
    switch (rq->route) {
    case ROUTE_INGEST: return srv_handle_ingest(rq);
    case ROUTE_PYROSCOPE: return srv_handle_pyroscope(rq);
    case ROUTE_OTLP: return srv_handle_otlp(rq);
    case ROUTE_QUERY: return srv_handle_query(rq);
    case ROUTE_LABELS: return srv_handle_labels(rq);
    case ROUTE_LABEL_VALUES: return srv_handle_label_values(rq);
    case ROUTE_SERIES: return strcmp(rq->method, "DELETE") ? srv_handle_series(rq) : srv_handle_delete(rq);
    case ROUTE_TOP: return srv_handle_top(rq);
    case ROUTE_STABILITY: return srv_handle_stability(rq);
    case ROUTE_COMPARE: return srv_handle_compare(rq);
    case ROUTE_DIFF: return srv_handle_diff(rq);
    case ROUTE_TIMELINE: return srv_handle_timeline(rq);
    case ROUTE_VARIANCE: return srv_handle_variance(rq);
    case ROUTE_HOTSPOTS: return srv_handle_hotspots(rq);
    case ROUTE_AGENTS: return srv_handle_agents(rq);
    case ROUTE_AGENT_HEARTBEAT: return srv_handle_agent_heartbeat(rq);
    case ROUTE_HEALTHZ: return srv_handle_healthz(rq);
    case ROUTE_METRICS: return srv_handle_metrics(rq);
    case ROUTE_WEB: return srv_handle_web(rq);
    case ROUTE_CONNECT: return srv_handle_connect(rq);
    case ROUTE_RENDER: return srv_handle_render(rq);
    case ROUTE_RENDER_DIFF: return srv_handle_render_diff(rq);
    default: return srv_reply_error(rq, MHD_HTTP_NOT_FOUND, "no such endpoint: %s", rq->url);
    }
}

/* Finds a query parameter whose name or value holds a NUL byte (%00):
 * everything downstream reads C strings, so "a%00b" would silently be "a". */
typedef struct { const char *bad; } nul_walk;

static enum MHD_Result find_nul(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                const char *value, size_t value_size)
{
    (void)kind;
    nul_walk *w = cls;
    if (strlen(key) != key_size || (value && strlen(value) != value_size)) {
        w->bad = key;
        return MHD_NO;
    }
    return MHD_YES;
}

/* Sums the header fields as sent: "Name: value\r\n" each. */
static enum MHD_Result add_header_size(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                       const char *value, size_t value_size)
{
    (void)kind;
    (void)key;
    (void)value;
    *(size_t *)cls += key_size + value_size + 4;
    return MHD_YES;
}

/* MHD_OPTION_URI_LOG_CALLBACK: the request line is in.  The request is
 * allocated here to keep the length of its target as sent (with its query
 * string, before unescaping) and its number of parameters, for the 414 in
 * begin_request; the completion callback frees it also when MHD refuses
 * the head before the access handler sees it.
 *
 * A target over either limit has its query string cut here, in MHD's own
 * buffer, before MHD splits it: MHD keeps a record of ~56 bytes a
 * parameter in the connection's memory, and a few thousand parameters
 * ("?a&a&a...") filled it, after which MHD closed the connection without
 * any answer.  The cut target is only ever answered 414 (rq->uri_len and
 * uri_params keep what was sent); if rq cannot be allocated nothing is cut
 * and the request meets MHD's own limits as before. */
static void *uri_received(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    srv_request *rq = calloc(1, sizeof *rq);
    if (!rq) return NULL;
    rq->uri_len = strlen(uri);
    char *q = strchr(uri, '?');
    if (q) {
        rq->uri_params = 1;
        for (const char *p = q + 1; *p; p++) rq->uri_params += *p == '&';
        if (rq->uri_len > SRV_MAX_URI || rq->uri_params > SRV_MAX_PARAMS) q[1] = '\0';
    }
    return rq;
}

/* First call for a request: route it, and refuse early what must be
 * refused before its body is read. */
static enum MHD_Result begin_request(srv_ctx *srv, struct MHD_Connection *conn, const char *url,
                                     const char *method, void **con_cls)
{
    srv_request *rq = *con_cls ? *con_cls : calloc(1, sizeof *rq);
    if (!rq) return MHD_NO;
    rq->srv = srv;
    rq->conn = conn;
    rq->method = method;
    rq->url = url;
    rq->begun = 1;
    *con_cls = rq;
    srv_conns_busy(srv, conn);
    atomic_fetch_add(&srv->in_flight, 1);
    const route_entry *re = route_of(url, &rq->route, &rq->route_arg);
    const char *allowed = re ? re->methods : NULL;
    rq->allowed = allowed;
    rq->connect = rq->route == ROUTE_CONNECT; /* every answer a Connect error (connect.c) */
    /* First the target cut by uri_received: refused whatever else. */
    if (rq->uri_len > SRV_MAX_URI)
        return srv_reply_error(rq, MHD_HTTP_URI_TOO_LONG,
                               "the request target (path and query string) is %zu bytes, over the limit of %u",
                               rq->uri_len, SRV_MAX_URI);
    if (rq->uri_params > SRV_MAX_PARAMS)
        return srv_reply_error(rq, MHD_HTTP_URI_TOO_LONG,
                               "the query string has %zu parameters, over the limit of %u", rq->uri_params,
                               SRV_MAX_PARAMS);
    /* Counted in flight before looking: srv_stop sets the flag, then waits
     * for in_flight to drain, so no request can start after the wait and
     * suspend its connection under MHD_stop_daemon. */
    if (atomic_load(&srv->stopping))
        return srv_reply_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is shutting down");
    size_t header_bytes = 0;
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, add_header_size, &header_bytes);
    if (header_bytes > SRV_MAX_HEADER_BYTES)
        return srv_reply_error(rq, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
                               "the header fields are %zu bytes, over the limit of %u", header_bytes,
                               SRV_MAX_HEADER_BYTES);
    if (srv_browser_check(rq)) return MHD_YES;
    /* Answered once its (empty) body is read, so the connection is kept
     * for the request the preflight is for. */
    if (srv_cors_is_preflight(rq)) return MHD_YES;
    if (!allowed) return srv_reply_error(rq, MHD_HTTP_NOT_FOUND, "no such endpoint: %s", url);
    if (!method_allowed(allowed, method)) {
        srv_reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "method %s is not allowed on %s (use %s)",
                        method, url, allowed);
        return MHD_YES;
    }
    /* --auth: 401/403 before the body is read (access.c) */
    if (srv_access_check(rq, is_read_method(method) ? re->get_scope : re->other_scope)) return MHD_YES;
    nul_walk w = { NULL };
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, find_nul, &w);
    if (w.bad)
        return srv_reply_error(rq, MHD_HTTP_BAD_REQUEST, "parameter '%s': contains a NUL byte (%%00)", w.bad);
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long body = cl ? strtoull(cl, NULL, 10) : 0;
    if (body > srv->max_body)
        return srv_reply_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "body of %s bytes exceeds the limit of %zu bytes (--max-body)",
                               cl, srv->max_body);
    /* The body comes in pieces of the connection's read buffer (a few KB
     * each): with its length announced it goes into one allocation of that
     * size (up to SRV_BODY_AHEAD before any of it came), not one realloc a
     * piece. */
    size_t ahead = body < SRV_BODY_AHEAD ? (size_t)body : SRV_BODY_AHEAD;
    if (ahead && !(rq->body = malloc(ahead + 1))) return MHD_NO;
    rq->body_cap = ahead ? ahead + 1 : 0;
    return MHD_YES;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version, const char *upload_data,
                                      size_t *upload_data_size, void **con_cls)
{
    (void)version;
    srv_request *rq = *con_cls;
    if (!rq || !rq->begun) return begin_request(cls, conn, url, method, con_cls);
    if (rq->job) return dispatch(rq); /* resumed after a suspension */
    if (rq->status) { /* answered already (405, 413): drop the body */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rq->body_too_big || rq->body_len + n > rq->srv->max_body) {
            rq->body_too_big = 1;
            return MHD_YES;
        }
        if (rq->body_len + n + 1 > rq->body_cap) { /* no length announced, or more than it said */
            size_t cap = rq->body_cap ? rq->body_cap : 4096;
            while (cap < rq->body_len + n + 1) cap *= 2;
            char *b = realloc(rq->body, cap);
            if (!b) return MHD_NO;
            rq->body = b;
            rq->body_cap = cap;
        }
        memcpy(rq->body + rq->body_len, upload_data, n);
        rq->body_len += n;
        rq->body[rq->body_len] = '\0';
        return MHD_YES;
    }
    if (rq->body_too_big)
        return srv_reply_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "body exceeds the limit of %zu bytes (--max-body)",
                               rq->srv->max_body);
    if (!rq->body) {
        rq->body = calloc(1, 1);
        if (!rq->body) return MHD_NO;
    }
    return dispatch(rq);
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    srv_ctx *srv = cls;
    srv_request *rq = *con_cls;
    if (!rq) return;
    *con_cls = NULL;
    if (!rq->begun) { /* refused by MHD before the access handler saw it */
        free(rq);
        return;
    }
    srv_conns_idle(srv, conn);
    srv_metrics_count(rq);
    if (rq->job_free) rq->job_free(rq->job);
    free(rq->body);
    free(rq->stop_msg);
    free(rq);
    atomic_fetch_sub(&srv->in_flight, 1);
}

/* Splits "host:port", "[v6]:port" or ":port". */
static int split_listen(const char *s, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':') return -1;
        snprintf(host, hostlen, "%.*s", (int)(end - s - 1), s + 1);
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon) return -1;
        snprintf(host, hostlen, "%.*s", (int)(colon - s), s);
    }
    if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1)) return -1;
    snprintf(port, portlen, "%s", colon + 1);
    return 0;
}

/* Whether ADDR is the wildcard (every interface), a loopback address, or
 * another one. */
typedef enum { ADDR_EVERY, ADDR_LOOPBACK, ADDR_OTHER } addr_kind;

static addr_kind kind_of(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return a == INADDR_ANY ? ADDR_EVERY : (a >> 24) == 127 ? ADDR_LOOPBACK : ADDR_OTHER;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_UNSPECIFIED(a)) return ADDR_EVERY;
        if (IN6_IS_ADDR_LOOPBACK(a)) return ADDR_LOOPBACK;
        if (IN6_IS_ADDR_V4MAPPED(a)) return a->s6_addr[12] == 127 ? ADDR_LOOPBACK : ADDR_OTHER;
    }
    return ADDR_OTHER;
}

int srv_start(srv_ctx *srv, const char *listen_addr, unsigned threads, char *err, size_t errlen)
{
    char host[256], port[16];
    if (split_listen(listen_addr, host, sizeof host, port, sizeof port)) {
        snprintf(err, errlen, "--listen '%s': expected ADDR:PORT, e.g. 127.0.0.1:4040 or [::1]:4040", listen_addr);
        return -1;
    }
    if (routes_checked(err, errlen)) return -1;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
    int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (rc) {
        snprintf(err, errlen, "--listen '%s': %s", listen_addr, gai_strerror(rc));
        return -1;
    }
    /* Without --auth anyone who reaches the port may read, write and
     * delete everything: loopback only, unless --insecure-no-auth says
     * that is meant (issue 12). */
    addr_kind kind = kind_of(ai->ai_addr);
    if (kind != ADDR_LOOPBACK && !srv->auth_path && !srv->insecure_no_auth) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "--listen %s: refusing to listen %s without authentication: anyone who can reach "
                 "it could read and write every profile and delete series. Give --auth FILE (tokens: see "
                 "flamedb serve --help), listen on loopback (127.0.0.1:PORT), or add --insecure-no-auth if "
                 "that is really meant", listen_addr, kind == ADDR_EVERY ? "on every interface" : "on an address "
                 "that is not loopback");
        return -2;
    }
    if ((srv->tls_cert != NULL) != (srv->tls_key != NULL)) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "--tls-cert and --tls-key go together: give both for HTTPS");
        return -2;
    }
    if (srv->tls_cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "--tls-cert: this libmicrohttpd was built without TLS (GnuTLS); HTTPS is not "
                 "available: put a TLS proxy in front, or install a libmicrohttpd with TLS");
        return -2;
    }
    if (srv_conns_start(srv)) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "cannot start the connection reaper thread");
        return -1;
    }
    /* Ingest suspends its connection while the group commit runs, so a worker
     * thread never blocks on the disk; suspend/resume also brings the ITC
     * that lets MHD_quiesce_daemon close the listening socket at shutdown. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    if (srv->tls_cert) flags |= MHD_USE_TLS;
    /* Limits (issue 12): at most --max-connections (kept below the
     * process's open-file limit by main.c, so accept() never fails for want
     * of descriptors); conns.c's deadline and eviction for connections
     * without a request going.  libmicrohttpd's own timeout is for a
     * request that stalls (a body or an answer that stops moving); it is at
     * least 120 s because it also runs out while a handler works and would
     * drop the answer of a long query.  The connection's memory holds a
     * request head well past SRV_MAX_URI and SRV_MAX_HEADER_BYTES, so that
     * those get a JSON 414 or 431 from begin_request rather than
     * libmicrohttpd's HTML. */
    unsigned mhd_timeout = srv->conn_timeout_s > 120 ? srv->conn_timeout_s : 120;
    srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, access_handler, srv,
                                   MHD_OPTION_EXTERNAL_LOGGER, srv_log_mhd, NULL,
                                   MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                   MHD_OPTION_THREAD_POOL_SIZE, threads,
                                   MHD_OPTION_CONNECTION_LIMIT, srv->max_connections,
                                   MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->max_per_ip,
                                   MHD_OPTION_CONNECTION_TIMEOUT, mhd_timeout,
                                   MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SRV_CONNECTION_MEMORY,
                                   MHD_OPTION_URI_LOG_CALLBACK, uri_received, srv,
                                   MHD_OPTION_NOTIFY_CONNECTION, srv_conns_notify, srv,
                                   MHD_OPTION_NOTIFY_COMPLETED, request_completed, srv,
                                   /* HTTPS: the PEM texts read by main.c (--tls-cert, --tls-key) */
                                   srv->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, srv->tls_cert,
                                   MHD_OPTION_HTTPS_MEM_KEY, srv->tls_key,
                                   MHD_OPTION_END);
    char shown[INET6_ADDRSTRLEN] = "?";
    getnameinfo(ai->ai_addr, ai->ai_addrlen, shown, sizeof shown, NULL, 0, NI_NUMERICHOST);
    int v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    if (!srv->daemon) {
        srv_conns_stop(srv);
        if (srv->tls_cert)
            snprintf(err, errlen, "cannot listen on %s: address in use or not permitted, or --tls-cert and "
                     "--tls-key are not a PEM certificate and its private key (see libmicrohttpd's message above)",
                     listen_addr);
        else
            snprintf(err, errlen, "cannot listen on %s (address in use, or not permitted?)", listen_addr);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info ? info->port : 0;
    srv_log("listening on %s://%s%s%s:%u", srv->tls_cert ? "https" : "http", v6 ? "[" : "", shown, v6 ? "]" : "",
            bound);
    srv_log("at most %u connections%s; one without a complete request for %u s is closed, and the oldest such when "
            "near the limit", srv->max_connections, srv->max_per_ip ? " (fewer from one address)" : "",
            srv->conn_timeout_s);
    /* Say who may do what (issue 12). */
    if (srv->auth_path)
        srv_log("authentication: %zu tokens from %s (reloaded on SIGHUP); /healthz%s and the viewer's files "
                "need none", srv_access_tokens(srv), srv->auth_path, srv->metrics_auth ? "" : ", /metrics");
    else if (kind == ADDR_EVERY)
        srv_log("listening on every interface with no authentication: anyone who can reach port %u can read "
                "and write every profile (and delete series) (--insecure-no-auth)", bound);
    else if (kind == ADDR_OTHER)
        srv_log("listening on %s, not loopback, with no authentication: anyone who can reach %s port %u can "
                "read and write every profile (and delete series) (--insecure-no-auth)", shown, shown, bound);
    else
        srv_log("authentication off (no --auth): loopback only; every local user and process may read, write "
                "and delete profiles");
    return 0;
}

/* Stops accepting, answers 503 to requests on open keep-alive connections,
 * lets requests in flight finish (up to 30 s), stops. */
void srv_stop(srv_ctx *srv)
{
    if (!srv->daemon) return;
    MHD_socket s = MHD_quiesce_daemon(srv->daemon);
    if (s != MHD_INVALID_SOCKET) close(s);
    atomic_store(&srv->stopping, 1);
    for (int i = 0; i < 3000 && atomic_load(&srv->in_flight) > 0; i++) usleep(10000);
    MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    srv_conns_stop(srv);
}
