/* srv.h — private to server/: the server's context, the request each
 * handler receives, and the helpers handlers share.
 *
 * server/ wires libmicrohttpd to ingest/, query/ and storage/.  It owns
 * parameters, limits, error mapping and metrics, and knows nothing of the
 * on-disk format.  Every error answer is JSON {"error": "..."} naming the
 * parameter, line or label at fault. */
#ifndef FLAMEDB_SRV_H
#define FLAMEDB_SRV_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../query/query.h"
#include "../storage/store.h"

#define SRV_DEFAULT_RANGE_MS (3600 * 1000)

/* Routes, for dispatch and for metrics. */
typedef enum {
    ROUTE_INGEST, ROUTE_PYROSCOPE, ROUTE_QUERY, ROUTE_LABELS, ROUTE_LABEL_VALUES,
    ROUTE_SERIES, ROUTE_TOP, ROUTE_STABILITY, ROUTE_COMPARE, ROUTE_DIFF, ROUTE_TIMELINE,
    ROUTE_VARIANCE, ROUTE_HOTSPOTS, ROUTE_HEALTHZ, ROUTE_METRICS, ROUTE_WEB, ROUTE_UNKNOWN, ROUTE_COUNT
} srv_route;

#define SRV_STATUS_SLOTS 12

typedef struct {
    _Atomic uint64_t requests[ROUTE_COUNT][SRV_STATUS_SLOTS];
    _Atomic uint64_t ingested_samples;
    _Atomic uint64_t ingested_bytes;
    _Atomic uint64_t ingested_profiles;
} srv_metrics;

/* The origins allowed by --cors-origin, each as browsers send it in the
 * Origin header (cors.c). */
#define SRV_CORS_MAX 32
#define SRV_CORS_ORIGIN_LEN 320
typedef struct {
    size_t n;
    char origin[SRV_CORS_MAX][SRV_CORS_ORIGIN_LEN];
} srv_cors;

typedef struct srv_workpool srv_workpool;
typedef void (*srv_work_fn)(void *arg);

typedef struct {
    store *st;
    struct MHD_Daemon *daemon;
    srv_workpool *pool;    /* parses request bodies off the MHD threads */
    size_t max_body;
    int64_t retention_ms;      /* 0: keep everything; ingest refuses what retention would drop */
    const char *data_dir;      /* for the free-space check (ingest_handlers.c) */
    uint64_t min_free_bytes;   /* --min-free-space: ingest answers 507 below it; 0 = no check */
    _Atomic int64_t free_checked_ms;   /* when free_bytes was last read (at most once a second) */
    _Atomic uint64_t free_bytes;
    uint64_t max_ingest_held;  /* --max-ingest-queue: bytes of pushes in flight before 503; 0 = no limit */
    _Atomic uint64_t ingest_held;      /* bodies (and gunzipped text) of pushes not yet answered */
    srv_metrics metrics;
    _Atomic int in_flight;   /* requests begun and not completed */
    _Atomic int stopping;    /* set by srv_stop: new requests get 503 */
    int verbose;
    srv_cors cors;           /* none: no Access-Control-* headers, preflights refused */
} srv_ctx;

/* Retry-After of an ingest refused because the store cannot write now. */
#define SRV_RETRY_AFTER_S 30

/* One request: what the handler needs, and what it answered. */
typedef struct {
    srv_ctx *srv;
    struct MHD_Connection *conn;
    const char *method;
    const char *url;
    srv_route route;
    char *body;            /* the whole body, NUL-terminated */
    size_t body_len;
    int body_too_big;
    int status;            /* the status answered, for metrics */
    int retry_after;       /* seconds: a Retry-After header on the answer (503, 507); 0 none */
    const char *route_arg; /* e.g. NAME in /api/v1/label/NAME/values */
    const char *allowed;   /* the route's methods, for the Allow header */
    void *job;             /* a handler's state across a suspension */
    void (*job_free)(void *job);
} srv_request;

/* http.c */
int srv_start(srv_ctx *srv, const char *listen_addr, unsigned threads, char *err, size_t errlen);
void srv_stop(srv_ctx *srv);

/* respond.c: answers; each returns an MHD result for the access handler. */
enum MHD_Result srv_reply_json(srv_request *rq, int status, json_t *body); /* steals body */
enum MHD_Result srv_reply_error(srv_request *rq, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum MHD_Result srv_reply_bytes(srv_request *rq, int status, const char *content_type,
                                void *data, size_t len, int must_free);
/* Maps a storage status to an HTTP status. */
int srv_status_of_store(store_status ss);
/* The HTTP status of a failed query_merge: 422 when the answer's values
 * would pass 2^63 (QUERY_ETOOBIG: narrow the range), else 500. */
int srv_status_of_merge(int rc);

/* cors.c: CORS for browser clients (--cors-origin). */
/* Validates ORIGIN, adds it in its canonical form; answers 0, or -1 with a
 * message in err. */
int srv_cors_add(srv_cors *c, const char *origin, char *err, size_t errlen);
/* The configured origin the request's Origin header names, or NULL. */
const char *srv_cors_match(const srv_request *rq);
/* Adds the CORS headers an answer of this status carries (respond.c). */
void srv_cors_decorate(const srv_request *rq, struct MHD_Response *resp, int status);
/* Whether the request is a CORS preflight: OPTIONS with Origin and
 * Access-Control-Request-Method. */
int srv_cors_is_preflight(const srv_request *rq);
/* Answers a preflight: 204 with the route's methods, 403 for an origin not
 * configured, 404 for no such endpoint. */
enum MHD_Result srv_cors_preflight(srv_request *rq);

/* params.c */
const char *srv_param(srv_request *rq, const char *name);
/* Parses from/until (defaults: until=now, from=until-default_span_ms);
 * answers 0, or replies 400 itself and answers -1. */
int srv_time_range(srv_request *rq, const char *from_name, const char *until_name,
                   int64_t default_span_ms, int64_t *from_ms, int64_t *until_ms);
/* Parses an unsigned integer parameter with a default and a maximum. */
int srv_param_uint(srv_request *rq, const char *name, uint64_t def, uint64_t max, uint64_t *out);
int64_t srv_now_ms(void);
/* A selector parameter (def when absent; NULL def: required). */
int srv_selector(srv_request *rq, const char *name, const char *def, query_selector *sel);
/* A number parameter in [min, max]. */
int srv_param_double(srv_request *rq, const char *name, double def, double min, double max, double *out);
/* A positive duration parameter ("60" is seconds; "1m", "1h", ...). */
int srv_param_duration(srv_request *rq, const char *name, int64_t def_ms, int64_t *out_ms);
/* An optional group_by parameter; *present says whether it was given. */
int srv_group_by(srv_request *rq, const char *name, query_group_by *by, int *present);

/* Handlers. */
enum MHD_Result srv_handle_ingest(srv_request *rq);
enum MHD_Result srv_handle_pyroscope(srv_request *rq);
enum MHD_Result srv_handle_query(srv_request *rq);
enum MHD_Result srv_handle_labels(srv_request *rq);
enum MHD_Result srv_handle_label_values(srv_request *rq);
enum MHD_Result srv_handle_series(srv_request *rq);
enum MHD_Result srv_handle_delete(srv_request *rq);
enum MHD_Result srv_handle_top(srv_request *rq);
enum MHD_Result srv_handle_stability(srv_request *rq);
enum MHD_Result srv_handle_compare(srv_request *rq);
enum MHD_Result srv_handle_diff(srv_request *rq);
enum MHD_Result srv_handle_timeline(srv_request *rq);
enum MHD_Result srv_handle_variance(srv_request *rq);
enum MHD_Result srv_handle_hotspots(srv_request *rq);
enum MHD_Result srv_handle_healthz(srv_request *rq);
enum MHD_Result srv_handle_metrics(srv_request *rq);
enum MHD_Result srv_handle_web(srv_request *rq);

/* workpool.c */
int srv_workpool_start(srv_workpool **out, unsigned n_threads);
int srv_workpool_submit(srv_workpool *wp, srv_work_fn fn, void *arg);
/* Runs what is queued, joins the threads, frees the pool. */
void srv_workpool_stop(srv_workpool *wp);

/* metrics.c */
void srv_metrics_count(srv_ctx *srv, srv_route route, int status);
const char *srv_route_name(srv_route route);

/* import.c: `flamedb import` (a client: perf script and folded files
 * pushed over HTTP). */
int srv_import_main(int argc, char **argv);

/* log.c */
void srv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
