/* respond.c — building answers: JSON bodies, JSON errors, raw bytes.
 * Every answer records its status on the request for /metrics, and carries
 * the CORS headers its request's origin is granted (cors.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ingest/ingest.h"
#include "srv.h"

static store_stop stop_of(const srv_request *rq)
{
    return rq->reader ? store_reader_stopped(rq->reader) : rq->stopped;
}

enum MHD_Result srv_reply_bytes(srv_request *rq, int status, const char *content_type,
                                void *data, size_t len, int must_free)
{
    /* --max-answer: a read's answer (the viewer's files, /metrics and
     * /healthz are not reads) */
    size_t max = rq->srv ? rq->srv->max_answer : 0;
    if (max && len > max && status < 300 && rq->route != ROUTE_WEB && rq->route != ROUTE_METRICS &&
        rq->route != ROUTE_HEALTHZ) {
        if (must_free) free(data);
        return srv_reply_error(rq, 422, "the answer would be %zu bytes, more than the %zu one answer may be (flamedb "
                               "serve --max-answer); ask for fewer nodes (max_nodes) or rows (limit), a narrower range "
                               "or selector, or a coarser step", len, max);
    }
    /* Cluster mode: an answer built while a load failed is no answer (the
     * analyses do not all look at the reader after their last scan); and
     * never a silent partial one */
    if (status < 300 && stop_of(rq) == STORE_STOP_REMOTE) {
        if (must_free) free(data);
        return srv_reply_stopped(rq);
    }
    if (rq->partial && status < 300 && !strncmp(content_type, "application/json", 16) && len >= 2 &&
        ((char *)data)[0] == '{') {
        static const char field[] = "\"partial\":true";
        int empty = ((char *)data)[1] == '}';
        char *d = malloc(len + sizeof field + 1);
        if (!d) {
            if (must_free) free(data);
            return MHD_NO;
        }
        d[0] = '{';
        memcpy(d + 1, field, sizeof field - 1);
        size_t at = sizeof field;
        if (!empty) d[at++] = ',';
        memcpy(d + at, (char *)data + 1, len - 1);
        if (must_free) free(data);
        data = d;
        len = at + len - 1;
        must_free = 1;
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, data, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        if (must_free) free(data);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (rq->srv && atomic_load(&rq->srv->stopping))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rq->allowed ? rq->allowed : "GET");
    }
    /* 401: how to authenticate (--auth).  Bearer only: a Basic challenge
     * would make browsers show their own login box instead of the
     * viewer's token field. */
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"flamedb\"");
    if (rq->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", rq->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (rq->partial && status < 300) MHD_add_response_header(resp, "X-Flamedb-Partial", "true");
    if (rq->staleness_ms > 0 && status < 300) {
        char st[24];
        snprintf(st, sizeof st, "%lld", (long long)rq->staleness_ms);
        MHD_add_response_header(resp, "X-Flamedb-Staleness-Ms", st);
    }
    srv_cors_decorate(rq, resp, status);
    rq->status = status;
    enum MHD_Result r = MHD_queue_response(rq->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return r;
}

enum MHD_Result srv_reply_json(srv_request *rq, int status, json_t *body)
{
    /* analyses answer NULL when their reader's work was stopped (nothing
     * partial is answered) */
    if (!body && (stop_of(rq) || (rq->deadline_ms && store_mono_ms() >= rq->deadline_ms)))
        return srv_reply_stopped(rq);
    if (!body) return srv_reply_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory building the answer");
    /* jansson's 17 significant digits: a client reads back the very double
     * (1795560608.4000001 is 1795560608.4 as a double; 15 digits would not
     * round-trip shares a client recomputes) */
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text) return srv_reply_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory encoding the answer");
    size_t len = strlen(text);
    /* A trailing newline makes curl output readable. */
    char *with_nl = realloc(text, len + 2);
    if (with_nl) {
        with_nl[len] = '\n';
        with_nl[len + 1] = '\0';
        text = with_nl;
        len++;
    }
    return srv_reply_bytes(rq, status, "application/json", text, len, 1);
}

enum MHD_Result srv_reply_verror(srv_request *rq, int status, const char *code, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* Messages quote user input; keep the JSON valid whatever it was. */
    if (!utf8_valid(msg, strlen(msg)))
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80) *p = '?';
    if (status >= 500) srv_log("%s %s: %d %s", rq->method, rq->url, status, msg);
    /* a Connect call's errors are Connect's (connect.c) */
    if (rq->connect || code)
        return srv_reply_json(rq, status, json_pack("{s:s,s:s}", "code", code ? code : srv_connect_code(status),
                                                    "message", msg));
    json_t *o = json_object();
    if (o) json_object_set_new(o, "error", json_string(msg));
    return srv_reply_json(rq, status, o);
}

enum MHD_Result srv_reply_error(srv_request *rq, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result r = srv_reply_verror(rq, status, NULL, fmt, ap);
    va_end(ap);
    return r;
}

int srv_status_of_merge(int rc)
{
    /* 499: the client went away (nginx's "client closed request"); the
     * answer goes nowhere, but MHD wants one to close the request */
    return rc == QUERY_ETOOBIG || rc == QUERY_ELIMIT     ? 422
           : rc == QUERY_ETIMEOUT || rc == QUERY_EREMOTE ? 503
           : rc == QUERY_EGONE                           ? 499
                                                         : 500;
}

enum MHD_Result srv_reply_stopped(srv_request *rq)
{
    char err[512];
    int rc = rq->reader ? query_stopped(rq->reader, err, sizeof err) : QUERY_ETIMEOUT;
    if (!rq->reader && rq->stopped == STORE_STOP_GONE) {
        rc = QUERY_EGONE;
        snprintf(err, sizeof err, "the client went away");
    } else if (!rq->reader && rq->stopped == STORE_STOP_PAIRS) {
        rc = QUERY_ELIMIT;
        snprintf(err, sizeof err, "the query merges more than the %llu (stack, count) pairs one query may (flamedb "
                 "serve --max-pairs); narrow the range or the selector, or ask for a coarser step",
                 (unsigned long long)rq->srv->max_pairs);
    } else if (!rq->reader && rq->stopped == STORE_STOP_REMOTE) {
        rc = QUERY_EREMOTE;
        snprintf(err, sizeof err, "%s", rq->stop_msg ? rq->stop_msg : "loading the data failed");
    } else if (!rq->reader) {
        snprintf(err, sizeof err, "%s", SRV_TIMEOUT_MSG);
    }
    return srv_reply_error(rq, srv_status_of_merge(rc), "%s", err);
}

int srv_status_of_store(store_status ss)
{
    switch (ss) {
    case STORE_OK: return MHD_HTTP_OK;
    case STORE_EINVAL: return MHD_HTTP_BAD_REQUEST;
    case STORE_EFULL: return MHD_HTTP_INSUFFICIENT_STORAGE;
    case STORE_ECLOSED: return MHD_HTTP_SERVICE_UNAVAILABLE;
    case STORE_EIO: return MHD_HTTP_SERVICE_UNAVAILABLE; /* a write failed: a failing or full disk */
    default: return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
}
