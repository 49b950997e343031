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
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../cluster/chfront.h"
#include "../cluster/chsource.h"
#include "../query/query.h"
#include "../storage/store.h"
#include "auth.h"

#define SRV_DEFAULT_RANGE_MS (3600 * 1000)

/* Routes, for dispatch and for metrics.  Each has the scope a token needs
 * for it in http.c's routing table (the SRV_SCOPE_* of auth.h, or one of
 * these). */
#define SRV_SCOPE_OPEN 0x100u     /* no token: the viewer's files, /healthz */
#define SRV_SCOPE_METRICS 0x200u  /* /metrics: open, or admin with --metrics-auth */

/* The label that holds a series' tenant under --auth: added by the server
 * to every series written for a tenant other than "default", forced as an
 * equality matcher on every selector read for one (srv_selector), hidden
 * from listings, refused from clients. */
#define SRV_TENANT_LABEL "__tenant__"

typedef enum {
    ROUTE_INGEST, ROUTE_PYROSCOPE, ROUTE_OTLP, ROUTE_QUERY, ROUTE_LABELS, ROUTE_LABEL_VALUES,
    ROUTE_SERIES, ROUTE_TOP, ROUTE_STABILITY, ROUTE_COMPARE, ROUTE_DIFF, ROUTE_TIMELINE,
    ROUTE_VARIANCE, ROUTE_HOTSPOTS, ROUTE_AGENTS, ROUTE_AGENT_HEARTBEAT, ROUTE_HEALTHZ, ROUTE_METRICS, ROUTE_WEB, ROUTE_CONNECT, ROUTE_RENDER,
    ROUTE_RENDER_DIFF, ROUTE_UNKNOWN, ROUTE_COUNT
} srv_route;

#define SRV_STATUS_SLOTS 16

/* The request head: what flamedb answers with JSON 414 and 431.  The
 * connection's memory in libmicrohttpd (SRV_CONNECTION_MEMORY) is set
 * above both so that such a request reaches the access handler; a head
 * that does not fit in it at all is refused by libmicrohttpd itself with
 * its own HTML page (docs/api.md, "Other answers").  libmicrohttpd zeroes
 * the whole of it after each request of a keep-alive connection, so it is
 * resident memory for every agent's connection: at 64 KiB, 64 MiB of
 * bench_fleet's 1,000 agents (its RSS 143 -> 97 MiB at 16 KiB).  8 KiB of
 * target is what HTTP asks servers to take at least (RFC 9110, 4.1). */
#define SRV_MAX_URI (8u << 10)             /* request target, query string included */
#define SRV_MAX_PARAMS 256                 /* parameters in the query string */
#define SRV_MAX_HEADER_BYTES (8u << 10)    /* header fields, "Name: value\r\n" each */
#define SRV_CONNECTION_MEMORY (16u << 10)  /* MHD_OPTION_CONNECTION_MEMORY_LIMIT */

/* The per-tenant counters of /metrics under --auth (metrics.c). */
typedef struct srv_metrics_tenants srv_metrics_tenants;

typedef struct {
    _Atomic uint64_t requests[ROUTE_COUNT][SRV_STATUS_SLOTS];
    _Atomic uint64_t ingested_samples;
    _Atomic uint64_t ingested_bytes;
    _Atomic uint64_t ingested_profiles;
    _Atomic uint64_t queries_stopped[STORE_STOP_REASONS]; /* by store_stop: deadline, max pairs, client gone, remote */
    srv_metrics_tenants *tenants;        /* the same per tenant; NULL without --auth */
} srv_metrics;

/* The origins allowed by --cors-origin, each as browsers send it in the
 * Origin header, and the host names browsers may reach the server by
 * (--allowed-host, the --listen host, the machine's name) (cors.c). */
#define SRV_CORS_MAX 32
#define SRV_CORS_ORIGIN_LEN 320
#define SRV_HOST_LEN 256
typedef struct {
    size_t n;
    char origin[SRV_CORS_MAX][SRV_CORS_ORIGIN_LEN];
    size_t n_hosts;
    char host[SRV_CORS_MAX + 2][SRV_HOST_LEN]; /* --allowed-host, then the --listen host and gethostname() */
} srv_cors;

/* Open connections, for closing idle and slow ones (conns.c). */
typedef struct srv_conns srv_conns;

typedef struct srv_workpool srv_workpool;
/* Fleet control (agents.c): the registry of agents and their plan. */
typedef struct srv_fleet srv_fleet;
#define SRV_FLEET_CAP 10000                 /* agents in the registry */
#define SRV_FLEET_EXPIRE_PERIODS 10         /* an agent not seen this long is forgotten ... */
#define SRV_FLEET_EXPIRE_MIN_MS (600 * 1000) /* ... and not before 10 minutes */
typedef struct srv_ratelimit srv_ratelimit;
typedef void (*srv_work_fn)(void *arg);

typedef struct {
    store *st;
    chfront *front;             /* cluster mode (--store clickhouse=...): st is NULL, data goes here */
    chsource *source;           /* ... and reads come from there (cluster/chsource.h) */
    struct MHD_Daemon *daemon;
    srv_workpool *pool;    /* parses request bodies off the MHD threads */
    size_t max_body;
    int64_t retention_ms;      /* 0: keep everything; ingest refuses what retention would drop */
    const char *data_dir;      /* for the free-space check (ingest_handlers.c) */
    uint64_t min_free_bytes;   /* --min-free-space: ingest answers 507 below it; 0 = no check */
    _Atomic int64_t free_checked_ms;   /* when free_bytes was last read (at most once a second) */
    _Atomic uint64_t free_bytes;
    size_t max_groups;         /* --max-groups: the most groups one group_by answer splits into; 0 = none */
    size_t max_series;         /* --max-series: the most series one query may merge; 0 = none */
    int64_t query_timeout_ms;  /* --query-timeout: a read's work ends by then (503); 0 = none */
    uint64_t max_pairs;        /* --max-pairs: the most (stack, count) pairs one read merges (422); 0 = none */
    size_t max_answer;         /* --max-answer: the largest answer of a read, in bytes (422); 0 = none */
    uint64_t max_ingest_held;  /* --max-ingest-queue: bytes of pushes in flight before 503; 0 = no limit */
    _Atomic uint64_t ingest_held;      /* bodies (and gunzipped text) of pushes not yet answered */
    srv_metrics metrics;
    _Atomic int in_flight;   /* requests begun and not completed */
    _Atomic int stopping;    /* set by srv_stop: new requests get 503 */
    int verbose;
    srv_cors cors;           /* none: no Access-Control-* headers, preflights refused */
    unsigned max_connections;     /* --max-connections, MHD_OPTION_CONNECTION_LIMIT */
    unsigned max_per_ip;          /* --max-connections-per-ip; 0: no limit */
    unsigned conn_timeout_s;      /* --connection-timeout */
    srv_conns *conns;
    const char *auth_path;        /* --auth FILE; NULL: no authentication */
    srv_auth *auth;               /* its tokens, swapped whole on SIGHUP under auth_lock (access.c) */
    pthread_rwlock_t auth_lock;
    int metrics_auth;             /* --metrics-auth: /metrics takes an admin token */
    int insecure_no_auth;         /* --insecure-no-auth: any address without --auth */
    const char *tls_cert, *tls_key; /* PEM text of --tls-cert and --tls-key; NULL: plain HTTP */
    srv_ratelimit *ingest_rate;   /* --ingest-rate: each tenant's push bytes a second; NULL: none */
    srv_fleet *fleet;             /* fleet control (--fleet-duty, agents.c) */
} srv_ctx;

/* The memory the merged trees of one grouped answer may take (query, top
 * with group_by): more groups than fit are refused before any merge. */
#define SRV_GROUP_TREES_BYTES (UINT64_C(1) << 30)

/* The error of a read that ran past --query-timeout. */
#define SRV_TIMEOUT_MSG "the query ran past its time limit (flamedb serve --query-timeout); narrow the range or the selector"

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
    size_t body_cap;       /* bytes allocated at body */
    int body_too_big;
    int begun;             /* the access handler has seen the request */
    size_t uri_len;        /* the request target as sent (MHD_OPTION_URI_LOG_CALLBACK) */
    size_t uri_params;     /* its parameters, as sent */
    int status;            /* the status answered, for metrics */
    int retry_after;       /* seconds: a Retry-After header on the answer (503, 507); 0 none */
    int64_t deadline_ms;   /* CLOCK_MONOTONIC: --query-timeout of a read (srv_reader_begin); 0 none */
    store_reader *reader;  /* the read's snapshot (srv_reader_begin) until srv_reader_end */
    store_stop stopped;    /* why its work was stopped (srv_reader_end keeps it) */
    char *stop_msg;        /* STORE_STOP_REMOTE: the loader's message (srv_reader_end keeps it) */
    int partial;           /* cluster mode, partial=true: some shard's data is missing from the answer */
    int64_t staleness_ms;  /* cluster mode reads: X-Flamedb-Staleness-Ms (srv_reader_begin); 0: nothing waits, no header */
    const char *route_arg; /* e.g. NAME in /api/v1/label/NAME/values */
    const char *allowed;   /* the route's methods, for the Allow header */
    int scoped;            /* acts for tenant (--auth): reads and writes are scoped to it */
    char tenant[SRV_TENANT_MAX + 1];
    int every_tenant;      /* /metrics by the operator: an admin token of "*" without X-Scope-OrgID */
    int connect;           /* a Connect call (connect.c): errors are {"code", "message"} */
    int connect_json;      /* ... in application/json (else application/proto) */
    void *job;             /* a handler's state across a suspension */
    void (*job_free)(void *job);
} srv_request;

/* http.c: answers 0, or -1 (could not listen) or -2 (refused: an address
 * beyond loopback without --auth, a TLS flag alone) with a message. */
int srv_start(srv_ctx *srv, const char *listen_addr, unsigned threads, char *err, size_t errlen);
void srv_stop(srv_ctx *srv);

/* respond.c: answers; each returns an MHD result for the access handler. */
enum MHD_Result srv_reply_json(srv_request *rq, int status, json_t *body); /* steals body */
enum MHD_Result srv_reply_error(srv_request *rq, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same from a va_list; code: a Connect error code to answer
 * {"code", "message"} with (NULL: Connect's for a Connect call, else
 * {"error": ...}). */
enum MHD_Result srv_reply_verror(srv_request *rq, int status, const char *code, const char *fmt, va_list ap);
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

/* Host names: adds NAME (a DNS name, no port) to the names browsers may
 * reach the server by; answers 0, or -1 with a message in err. */
int srv_cors_add_host(srv_cors *c, const char *name, char *err, size_t errlen);
/* The checks on requests from browsers (those that send Origin or
 * Sec-Fetch-Site): a Host that is not a name of this server is refused
 * (DNS rebinding), and so is a POST or DELETE from a page that is neither
 * this server's own nor allowed by --cors-origin.  Answers 0 to go on, or
 * replies 403 itself and answers -1. */
int srv_browser_check(srv_request *rq);

/* conns.c: open connections; closes those that keep no request going
 * (idle keep-alive, or a request head still arriving) after
 * --connection-timeout, and the oldest of them when the server nears
 * --max-connections, so that slow clients cannot hold every slot. */
int srv_conns_start(srv_ctx *srv);
void srv_conns_stop(srv_ctx *srv);
/* MHD_OPTION_NOTIFY_CONNECTION */
void srv_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe);
/* A request's head is complete (the access handler's first call) / its
 * answer is sent (the completion callback). */
void srv_conns_busy(srv_ctx *srv, struct MHD_Connection *conn);
void srv_conns_idle(srv_ctx *srv, struct MHD_Connection *conn);
typedef struct { uint64_t open, evicted, timed_out; } srv_conns_stats;
void srv_conns_get_stats(srv_ctx *srv, srv_conns_stats *out);

/* access.c: tokens (--auth) and tenants. */
/* (Re)loads srv->auth_path into a new table and puts it in place; on error
 * the table in use stays and err names the line. */
int srv_access_load(srv_ctx *srv, char *err, size_t errlen);
size_t srv_access_tokens(srv_ctx *srv);
void srv_access_free(srv_ctx *srv);
/* Checks the request's token for scope (SRV_SCOPE_*): answers 0 to go on
 * (rq->scoped and rq->tenant set under --auth), or replies 401, 403 or 400
 * itself and answers -1. */
int srv_access_check(srv_request *rq, unsigned scope);
/* The tenant label's value for the request: NULL when its series carry
 * none (no --auth, or the default tenant). */
const char *srv_tenant_value(const srv_request *rq);
/* The labels a push of rq stores: in (n labels sorted by name, from the
 * client, without SRV_TENANT_LABEL) with the request's tenant label at its
 * place, into out (room for n + 1); answers their number.  Every ingest
 * path builds its series' labels here, so that none forgets the tenant. */
int srv_tenant_labels(const srv_request *rq, const store_label *in, int n, store_label *out);
/* Scopes a parsed selector to the request's tenant: refuses (400, naming
 * param) a matcher on the tenant label and adds the tenant's; a no-op
 * without --auth.  Answers 0, or replies itself and answers -1. */
int srv_tenant_scope(srv_request *rq, const char *param, query_selector *sel);

/* ratelimit.c: --ingest-rate and --ingest-burst, a token bucket of body
 * bytes per tenant.  burst 0: ten seconds of rate. */
srv_ratelimit *srv_ratelimit_new(uint64_t rate, uint64_t burst);
void srv_ratelimit_free(srv_ratelimit *rl);
/* Takes a push of bytes from tenant's bucket: 0, or -1 with the seconds
 * to wait (429 Retry-After); always 0 for a NULL rl. */
int srv_ratelimit_take(srv_ratelimit *rl, const char *tenant, uint64_t bytes, int64_t now_ms, int *retry_after_s);
uint64_t srv_ratelimit_limited(const srv_ratelimit *rl);
void srv_ratelimit_limits(const srv_ratelimit *rl, uint64_t *rate, uint64_t *burst);

/* params.c */
const char *srv_param(srv_request *rq, const char *name);
/* Parses from/until (defaults: until=now, from=until-default_span_ms);
 * answers 0, or replies 400 itself and answers -1. */
int srv_time_range(srv_request *rq, const char *from_name, const char *until_name,
                   int64_t default_span_ms, int64_t *from_ms, int64_t *until_ms);
/* Parses an unsigned integer parameter with a default and a maximum. */
int srv_param_uint(srv_request *rq, const char *name, uint64_t def, uint64_t max, uint64_t *out);
int64_t srv_now_ms(void);
/* A selector parameter (def when absent; NULL def: required), scoped to
 * the request's tenant under --auth (srv_tenant_scope): every read and
 * deletion takes its selector from here. */
int srv_selector(srv_request *rq, const char *name, const char *def, query_selector *sel);
/* A number parameter in [min, max]. */
int srv_param_double(srv_request *rq, const char *name, double def, double min, double max, double *out);
/* A positive duration parameter ("60" is seconds; "1m", "1h", ...). */
int srv_param_duration(srv_request *rq, const char *name, int64_t def_ms, int64_t *out_ms);
/* An optional group_by parameter; *present says whether it was given.
 * The tenant label is refused under --auth. */
int srv_group_by(srv_request *rq, const char *name, query_group_by *by, int *present);
/* group_by_sample=KEY: one sample label name (query, top), NULL when
 * absent; replies 400 and answers -1 when malformed. */
int srv_group_by_sample(srv_request *rq, const char **key);
/* Begins a read snapshot with the request's limits: its deadline
 * (--query-timeout), its pairs budget (--max-pairs), and a check that its
 * client is still connected; answers 0, or replies 503 itself and answers
 * -1.  srv_reader_end ends it, keeping why its work stopped (if it did). */
int srv_reader_begin(srv_request *rq, store_reader **r);
void srv_reader_end(srv_request *rq, store_reader *r);
/* A read whose work was stopped (store_reader_expired): 503 past
 * --query-timeout, 422 past --max-pairs; a client that went away gets
 * nothing (the connection is closed).  srv_reply_json calls it when an
 * analysis answered nothing. */
enum MHD_Result srv_reply_stopped(srv_request *rq);
/* --max-series: 0 when set has at most that many series, else replies
 * 400 naming the limit and answers -1 (set left to its owner). */
int srv_series_limit(srv_request *rq, const query_series_set *set);
/* A side's series (query_side_resolve) within --max-series: 0, or replies
 * itself (500, or 400 naming the limit) and answers -1, the side left to
 * its owner to free. */
int srv_side_resolve(srv_request *rq, store_reader *r, query_side *s);
/* query_resolve bounded by --max-series: answers 0, or replies itself
 * (400 naming the limit, 500) and answers -1; set is empty then. */
int srv_resolve(srv_request *rq, store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                query_series_set *set);
/* query_groups_split bounded by query_groups_limit (keeps_trees: the answer
 * keeps a merged tree a group); answers 0, or replies 400 (too many groups,
 * naming the limit) or 500 itself and answers -1. */
int srv_groups_split(srv_request *rq, const char *param, store_reader *r, const query_series_set *set,
                     const query_group_by *by, int64_t from_ms, int64_t until_ms, int keeps_trees,
                     query_group **groups, size_t *n);

/* Handlers. */
enum MHD_Result srv_handle_ingest(srv_request *rq);
enum MHD_Result srv_handle_pyroscope(srv_request *rq);
enum MHD_Result srv_handle_otlp(srv_request *rq);
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
/* agents.c: fleet control.  duty: the fraction of the agents sampling at
 * a time (1: all), period_ms: whole seconds, rate: Hz (0: the agents'). */
srv_fleet *srv_fleet_new(double duty, int64_t period_ms, double rate);
void srv_fleet_free(srv_fleet *f);
enum MHD_Result srv_handle_agent_heartbeat(srv_request *rq);
enum MHD_Result srv_handle_agents(srv_request *rq);
/* Calls fn with the tenant label value of every agent in the registry
 * ("" for the default tenant), under the registry's lock (metrics.c). */
void srv_fleet_each(srv_fleet *f, void (*fn)(void *ctx, const char *tenant), void *ctx);
/* grafana_handlers.c: Grafana's Pyroscope data source (issue 11, point 3) */
enum MHD_Result srv_handle_connect(srv_request *rq);
enum MHD_Result srv_handle_render(srv_request *rq);
enum MHD_Result srv_handle_render_diff(srv_request *rq);

/* connect.c: the Connect protocol's unary calls. */
struct ProtobufCMessage;
struct ProtobufCMessageDescriptor;
/* The Connect error code of an HTTP status (400 invalid_argument, 401
 * unauthenticated, 404 not_found, 503 unavailable, ...). */
const char *srv_connect_code(int status);
/* A Connect error {"code", "message"} with the HTTP status given. */
enum MHD_Result srv_connect_error(srv_request *rq, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The request's message (application/proto or application/json, gzip'd or
 * not); answers 0, or replies the Connect error itself and answers -1.
 * Free *out with protobuf_c_message_free_unpacked. */
int srv_connect_read(srv_request *rq, const struct ProtobufCMessageDescriptor *d, struct ProtobufCMessage **out);
/* The answer m in the request's codec. */
enum MHD_Result srv_connect_reply(srv_request *rq, const struct ProtobufCMessage *m);
/* The same for a message already packed (malloc'd; taken). */
enum MHD_Result srv_connect_reply_packed(srv_request *rq, const struct ProtobufCMessageDescriptor *d, void *packed,
                                         size_t len);
/* m in protobuf's JSON mapping (lowerCamelCase keys, 64-bit integers as
 * strings, defaults left out). */
void srv_protojson_write(query_buf *b, const struct ProtobufCMessage *m);

/* workpool.c */
int srv_workpool_start(srv_workpool **out, unsigned n_threads);
int srv_workpool_submit(srv_workpool *wp, srv_work_fn fn, void *arg);
/* Runs task(arg, i) for every i in [0, n) on the calling thread and on
 * the pool's idle ones, and returns when all have returned (ingest_par's
 * run: a job's own tasks, called from a job). */
void srv_workpool_lend(srv_workpool *wp, size_t n, void (*task)(void *arg, size_t i), void *arg);
unsigned srv_workpool_threads(const srv_workpool *wp);
/* Runs what is queued, joins the threads, frees the pool. */
void srv_workpool_stop(srv_workpool *wp);

/* metrics.c: counting, server-wide and for the request's tenant (under
 * --auth).  A request's answer (at its end: http.c); what an ingest stored
 * (its body's bytes with it); a read whose work was stopped (rq->stopped). */
void srv_metrics_count(srv_request *rq);
void srv_metrics_ingested(srv_request *rq, uint64_t samples, uint64_t profiles);
void srv_metrics_stopped(srv_request *rq);
/* (Re)builds the tenants' table from a token table (access.c, at start and
 * on SIGHUP), keeping the counts of the tenants that stay; -1: out of
 * memory (the table in use stays). */
int srv_metrics_tenants_load(srv_ctx *srv, const srv_auth *a);
void srv_metrics_free(srv_ctx *srv);
const char *srv_route_name(srv_route route);

/* log.c: one line per event on stderr.  Each format string may log a
 * burst of lines a minute; more are counted and summed up in one line, so
 * that no client can flood the log (issue 12: 12 M lines in 30 s). */
void srv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* MHD_OPTION_EXTERNAL_LOGGER: libmicrohttpd's messages, limited the same way. */
void srv_log_mhd(void *cls, const char *fmt, va_list ap);
/* Logs the summaries of lines dropped in windows that have ended (all:
 * in every window, at shutdown). */
void srv_log_flush(int all);

#endif
