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
 * dispatch, once its empty body is read, which keeps the connection open. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "srv.h"

typedef struct {
    const char *path;
    srv_route route;
    const char *methods;   /* allowed methods, as the Allow header lists them */
} route_entry;

static const route_entry routes[] = {
    { "/api/v1/ingest", ROUTE_INGEST, "POST" },
    { "/ingest", ROUTE_PYROSCOPE, "POST" },
    { "/api/v1/query", ROUTE_QUERY, "GET" },
    { "/api/v1/labels", ROUTE_LABELS, "GET" },
    { "/api/v1/series", ROUTE_SERIES, "GET, DELETE" },
    { "/api/v1/top", ROUTE_TOP, "GET" },
    { "/api/v1/stability", ROUTE_STABILITY, "GET" },
    { "/api/v1/compare", ROUTE_COMPARE, "GET" },
    { "/api/v1/diff", ROUTE_DIFF, "GET" },
    { "/api/v1/timeline", ROUTE_TIMELINE, "GET" },
    { "/api/v1/variance", ROUTE_VARIANCE, "GET" },
    { "/api/v1/hotspots/metrics", ROUTE_HOTSPOTS, "GET" },
    { "/healthz", ROUTE_HEALTHZ, "GET" },
    { "/metrics", ROUTE_METRICS, "GET" },
};

static const char *route_of(const char *url, srv_route *route, const char **arg)
{
    *arg = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(url, routes[i].path) == 0) {
            *route = routes[i].route;
            return routes[i].methods;
        }
    }
    static const char prefix[] = "/api/v1/label/", suffix[] = "/values";
    size_t n = strlen(url), pl = sizeof prefix - 1, sl = sizeof suffix - 1;
    if (n > pl + sl && strncmp(url, prefix, pl) == 0 && strcmp(url + n - sl, suffix) == 0) {
        *route = ROUTE_LABEL_VALUES;
        *arg = url + pl;
        return "GET";
    }
    if (strncmp(url, "/api/", 5) == 0) {
        *route = ROUTE_UNKNOWN;
        return NULL;
    }
    *route = ROUTE_WEB;
    return "GET";
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
    case ROUTE_HEALTHZ: return srv_handle_healthz(rq);
    case ROUTE_METRICS: return srv_handle_metrics(rq);
    case ROUTE_WEB: return srv_handle_web(rq);
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

/* First call for a request: route it, and refuse early what must be
 * refused before its body is read. */
static enum MHD_Result begin_request(srv_ctx *srv, struct MHD_Connection *conn, const char *url,
                                     const char *method, void **con_cls)
{
    srv_request *rq = calloc(1, sizeof *rq);
    if (!rq) return MHD_NO;
    rq->srv = srv;
    rq->conn = conn;
    rq->method = method;
    rq->url = url;
    *con_cls = rq;
    atomic_fetch_add(&srv->in_flight, 1);
    const char *allowed = route_of(url, &rq->route, &rq->route_arg);
    /* Counted in flight before looking: srv_stop sets the flag, then waits
     * for in_flight to drain, so no request can start after the wait and
     * suspend its connection under MHD_stop_daemon. */
    if (atomic_load(&srv->stopping))
        return srv_reply_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is shutting down");
    rq->allowed = allowed;
    /* Answered once its (empty) body is read, so the connection is kept
     * for the request the preflight is for. */
    if (srv_cors_is_preflight(rq)) return MHD_YES;
    if (!allowed) return srv_reply_error(rq, MHD_HTTP_NOT_FOUND, "no such endpoint: %s", url);
    if (!method_allowed(allowed, method)) {
        srv_reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "method %s is not allowed on %s (use %s)",
                        method, url, allowed);
        return MHD_YES;
    }
    nul_walk w = { NULL };
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, find_nul, &w);
    if (w.bad)
        return srv_reply_error(rq, MHD_HTTP_BAD_REQUEST, "parameter '%s': contains a NUL byte (%%00)", w.bad);
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > srv->max_body)
        return srv_reply_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "body of %s bytes exceeds the limit of %zu bytes (--max-body)",
                               cl, srv->max_body);
    return MHD_YES;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version, const char *upload_data,
                                      size_t *upload_data_size, void **con_cls)
{
    (void)version;
    srv_request *rq = *con_cls;
    if (!rq) return begin_request(cls, conn, url, method, con_cls);
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
        char *b = realloc(rq->body, rq->body_len + n + 1);
        if (!b) return MHD_NO;
        memcpy(b + rq->body_len, upload_data, n);
        rq->body = b;
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
    (void)conn;
    (void)toe;
    srv_ctx *srv = cls;
    srv_request *rq = *con_cls;
    if (!rq) return;
    srv_metrics_count(srv, rq->route, rq->status);
    if (rq->job_free) rq->job_free(rq->job);
    free(rq->body);
    free(rq);
    *con_cls = NULL;
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

int srv_start(srv_ctx *srv, const char *listen_addr, unsigned threads, char *err, size_t errlen)
{
    char host[256], port[16];
    if (split_listen(listen_addr, host, sizeof host, port, sizeof port)) {
        snprintf(err, errlen, "--listen '%s': expected ADDR:PORT, e.g. 127.0.0.1:4040 or [::1]:4040", listen_addr);
        return -1;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
    int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (rc) {
        snprintf(err, errlen, "--listen '%s': %s", listen_addr, gai_strerror(rc));
        return -1;
    }
    /* Ingest suspends its connection while the group commit runs, so a worker
     * thread never blocks on the disk; suspend/resume also brings the ITC
     * that lets MHD_quiesce_daemon close the listening socket at shutdown. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, access_handler, srv,
                                   MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                   MHD_OPTION_THREAD_POOL_SIZE, threads,
                                   MHD_OPTION_CONNECTION_LIMIT, 4096,
                                   MHD_OPTION_CONNECTION_TIMEOUT, 120,
                                   MHD_OPTION_NOTIFY_COMPLETED, request_completed, srv,
                                   MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!srv->daemon) {
        snprintf(err, errlen, "cannot listen on %s (address in use, or not permitted?)", listen_addr);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv_log("listening on http://%s%s%s:%u", strchr(host, ':') ? "[" : "", host[0] ? host : "0.0.0.0",
            strchr(host, ':') ? "]" : "", info ? info->port : 0);
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
}
