/* metrics.c — GET /metrics in Prometheus text format: requests by route and
 * status, samples, profiles and bytes ingested, the commit latency
 * histogram, the database size and the number of series, server-wide and
 * (under --auth) per tenant.  Request counters are atomics in fixed tables
 * (route x status slot): counting takes no lock without --auth, and under it
 * only the read lock that finds the tenant's slot.
 *
 * Per tenant (issue 12, point 2).  Under --auth every figure that describes
 * a tenant's data and use is also kept per tenant, and written as the same
 * metric with a `tenant` label, the tenant's name as the --auth file and
 * X-Scope-OrgID spell it ("default" for the default tenant):
 * flamedb_http_requests_total{tenant, route, code} (ingest accepted and
 * refused by status, queries served), flamedb_queries_stopped_total{tenant,
 * reason}, flamedb_ingested_{samples,profiles,bytes}_total{tenant},
 * flamedb_ingest_rate_limited_total{tenant} (its 429s), flamedb_series{tenant}
 * (its series stored: those with its __tenant__ label, or without one for
 * "default"; counted when scraped) and flamedb_agents{tenant} (agents in the
 * fleet registry, agents.c).  Requests refused before a tenant is known
 * (401, 403) count server-wide only.
 *
 * Who sees what.  Which tenants' series an answer holds is decided here from
 * what access.c found, never from a parameter:
 * * without --metrics-auth (with or without --auth) /metrics is open and
 *   answers the server-wide figures only, unlabelled, exactly as a server
 *   without --auth does: no tenant's name reaches whoever can reach the port;
 * * with --metrics-auth, a token with the admin scope for every tenant ("*")
 *   sent without X-Scope-OrgID (rq->every_tenant) gets the server-wide
 *   figures and, in the same families, every tenant's labelled series: the
 *   operator's view;
 * * any other token with the read or admin scope acts for one tenant T as
 *   on every endpoint (X-Scope-OrgID where it may act for several) and gets
 *   T's labelled series only: no server-wide figure (each would count other
 *   tenants), no other name.
 * An unlabelled series is the server's sum, so an operator sums tenants with
 * sum(x{tenant!=""}).
 *
 * Bounded.  The tenants are those the --auth file names (and, when it has a
 * "*" token, those met through it, on their first request), at most
 * SRV_METRICS_TENANTS; a tenant beyond that counts server-wide only (logged
 * once).  The table is rebuilt on each load of the file (start, SIGHUP),
 * keeping the counters of the tenants that stay: a tenant's slot moves to
 * the new table as it is.  It is sorted by name and guarded by a read-write
 * lock: counting takes the read lock to find the slot (the write lock only
 * to add a tenant met through "*"), a reload and that addition the write
 * lock, and a scrape the read lock while it writes the tenants' series. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

#define SRV_METRICS_TENANTS 4096

static const int status_slots[SRV_STATUS_SLOTS] = { 200, 400, 403, 404, 405, 413, 414, 415, 422, 429, 431,
                                                     500, 503, 507, 0, 0 };

static const char *route_names[ROUTE_COUNT] = {
    "/api/v1/ingest", "/ingest", "/v1development/profiles", "/api/v1/query", "/api/v1/labels", "/api/v1/label/values",
    "/api/v1/series", "/api/v1/top", "/api/v1/stability", "/api/v1/compare", "/api/v1/diff",
    "/api/v1/timeline", "/api/v1/variance", "/api/v1/hotspots/metrics", "/api/v1/agents",
    "/api/v1/agents/heartbeat", "/healthz", "/metrics", "/",
    "/querier.v1.QuerierService", "/pyroscope/render", "/pyroscope/render-diff", "other",
};

const char *srv_route_name(srv_route route) { return route_names[route]; }

static int slot_of(int status)
{
    for (int i = 0; i < SRV_STATUS_SLOTS && status_slots[i]; i++)
        if (status_slots[i] == status) return i;
    return SRV_STATUS_SLOTS - 1; /* "other" */
}

/* ---- the tenants' counters ---------------------------------------------- */

typedef struct {
    char name[SRV_TENANT_MAX + 1];
    int from_file;      /* named in the --auth file (else met through a "*" token) */
    int kept;           /* during a reload: taken into the new table */
    _Atomic uint64_t requests[ROUTE_COUNT][SRV_STATUS_SLOTS];
    _Atomic uint64_t ingested_samples, ingested_bytes, ingested_profiles;
    _Atomic uint64_t queries_stopped[STORE_STOP_REASONS];
    _Atomic uint64_t rate_limited;
} tenant_slot;

struct srv_metrics_tenants {
    pthread_rwlock_t lock;
    tenant_slot **v;    /* sorted by name */
    size_t n;
    int open_ended;     /* the file has a "*" token: tenants are added when first met */
    int full_logged;
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_slot(const void *a, const void *b)
{
    return strcmp((*(tenant_slot *const *)a)->name, (*(tenant_slot *const *)b)->name);
}

/* The slot of name in v (sorted), or NULL. */
static tenant_slot *slot_in(tenant_slot *const *v, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(v[mid]->name, name);
        if (!c) return v[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* Adds a tenant met through a "*" token (T's write lock held); NULL when
 * the table is full. */
static tenant_slot *slot_add(srv_metrics_tenants *T, const char *name)
{
    tenant_slot *s = NULL, **v = NULL;
    if (T->n < SRV_METRICS_TENANTS && (s = calloc(1, sizeof *s)) && (v = realloc(T->v, (T->n + 1) * sizeof *v))) {
        T->v = v;
        snprintf(s->name, sizeof s->name, "%s", name);
        size_t at = T->n;
        while (at > 0 && strcmp(v[at - 1]->name, name) > 0) at--;
        memmove(v + at + 1, v + at, (T->n - at) * sizeof *v);
        v[at] = s;
        T->n++;
        return s;
    }
    free(s);
    if (!T->full_logged) {
        T->full_logged = 1;
        srv_log("/metrics: more than %d tenants: tenant '%s' (and any further) is counted in the server-wide "
                "figures only", SRV_METRICS_TENANTS, name);
    }
    return NULL;
}

/* Takes T's lock and answers tenant's slot (added when T is open-ended),
 * or NULL; the caller unlocks T. */
static tenant_slot *slot_lock(srv_metrics_tenants *T, const char *tenant)
{
    pthread_rwlock_rdlock(&T->lock);
    tenant_slot *s = slot_in(T->v, T->n, tenant);
    if (s || !T->open_ended) return s;
    pthread_rwlock_unlock(&T->lock);
    pthread_rwlock_wrlock(&T->lock);
    s = slot_in(T->v, T->n, tenant);
    return s ? s : slot_add(T, tenant);
}

int srv_metrics_tenants_load(srv_ctx *srv, const srv_auth *a)
{
    srv_metrics_tenants *T = srv->metrics.tenants;
    if (!T) {
        if (!(T = calloc(1, sizeof *T))) return -1;
        pthread_rwlock_init(&T->lock, NULL);
        srv->metrics.tenants = T; /* at start, before any request */
    }
    /* the file's tenants, sorted, without duplicates */
    size_t n = 0, cap = 0, max = SRV_METRICS_TENANTS;
    const char **names = NULL;
    int open_ended = 0, dropped = 0;
    for (size_t i = 0; i < srv_auth_count(a); i++) {
        const srv_auth_token *t = srv_auth_at(a, i);
        open_ended |= t->any_tenant;
        for (size_t k = 0; k < t->n_tenants; k++) {
            if (n == cap) {
                const char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *nn);
                if (!nn) goto oom;
                names = nn;
            }
            names[n++] = t->tenants[k];
        }
    }
    qsort(names, n, sizeof *names, cmp_name);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || strcmp(names[u - 1], names[i])) names[u++] = names[i];
    n = u;
    if (n > max) {
        dropped = (int)(n - max);
        n = max;
    }
    pthread_rwlock_wrlock(&T->lock);
    tenant_slot **v = calloc(max, sizeof *v);
    size_t nv = 0;
    if (!v) {
        pthread_rwlock_unlock(&T->lock);
        goto oom;
    }
    for (size_t i = 0; i < T->n; i++) T->v[i]->kept = 0;
    for (size_t i = 0; i < n; i++) {
        tenant_slot *s = slot_in(T->v, T->n, names[i]);
        if (!s && !(s = calloc(1, sizeof *s))) continue;
        snprintf(s->name, sizeof s->name, "%s", names[i]);
        s->from_file = 1;
        s->kept = 1;
        v[nv++] = s;
    }
    /* tenants met through "*" stay while the file has a "*" token */
    for (size_t i = 0; open_ended && i < T->n && nv < max; i++)
        if (!T->v[i]->kept && !T->v[i]->from_file) {
            T->v[i]->kept = 1;
            v[nv++] = T->v[i];
        }
    qsort(v, nv, sizeof *v, cmp_slot);
    for (size_t i = 0; i < T->n; i++)
        if (!T->v[i]->kept) free(T->v[i]);
    free(T->v);
    T->v = v;
    T->n = nv;
    T->open_ended = open_ended;
    T->full_logged = dropped > 0;
    pthread_rwlock_unlock(&T->lock);
    free(names);
    if (dropped)
        srv_log("/metrics: the --auth file names %d tenants more than the %d counted one by one; they are counted "
                "in the server-wide figures only", dropped, SRV_METRICS_TENANTS);
    return 0;
oom:
    free(names);
    return -1;
}

void srv_metrics_free(srv_ctx *srv)
{
    srv_metrics_tenants *T = srv->metrics.tenants;
    if (!T) return;
    for (size_t i = 0; i < T->n; i++) free(T->v[i]);
    free(T->v);
    pthread_rwlock_destroy(&T->lock);
    free(T);
    srv->metrics.tenants = NULL;
}

/* ---- counting ----------------------------------------------------------- */

void srv_metrics_count(srv_request *rq)
{
    srv_ctx *srv = rq->srv;
    if (!rq->status) return; /* connection dropped before an answer */
    int slot = slot_of(rq->status);
    atomic_fetch_add(&srv->metrics.requests[rq->route][slot], 1);
    if (!rq->scoped || !srv->metrics.tenants) return;
    tenant_slot *s = slot_lock(srv->metrics.tenants, rq->tenant);
    if (s) {
        atomic_fetch_add(&s->requests[rq->route][slot], 1);
        /* the one 429 the server answers: --ingest-rate (ratelimit.c) */
        if (rq->status == 429) atomic_fetch_add(&s->rate_limited, 1);
    }
    pthread_rwlock_unlock(&srv->metrics.tenants->lock);
}

void srv_metrics_ingested(srv_request *rq, uint64_t samples, uint64_t profiles)
{
    srv_ctx *srv = rq->srv;
    atomic_fetch_add(&srv->metrics.ingested_samples, samples);
    atomic_fetch_add(&srv->metrics.ingested_bytes, rq->body_len);
    atomic_fetch_add(&srv->metrics.ingested_profiles, profiles);
    if (!rq->scoped || !srv->metrics.tenants) return;
    tenant_slot *s = slot_lock(srv->metrics.tenants, rq->tenant);
    if (s) {
        atomic_fetch_add(&s->ingested_samples, samples);
        atomic_fetch_add(&s->ingested_bytes, rq->body_len);
        atomic_fetch_add(&s->ingested_profiles, profiles);
    }
    pthread_rwlock_unlock(&srv->metrics.tenants->lock);
}

void srv_metrics_stopped(srv_request *rq)
{
    srv_ctx *srv = rq->srv;
    if (!rq->stopped) return;
    atomic_fetch_add(&srv->metrics.queries_stopped[rq->stopped], 1);
    if (!rq->scoped || !srv->metrics.tenants) return;
    tenant_slot *s = slot_lock(srv->metrics.tenants, rq->tenant);
    if (s) atomic_fetch_add(&s->queries_stopped[rq->stopped], 1);
    pthread_rwlock_unlock(&srv->metrics.tenants->lock);
}

/* ---- the answer ----------------------------------------------------------- */

typedef struct { char *buf; size_t len, cap; int oom; } text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    if (t->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) { t->oom = 1; return; }
        if ((size_t)n < t->cap - t->len) { t->len += (size_t)n; return; }
        size_t ncap = (t->cap + (size_t)n) * 2;
        char *nb = realloc(t->buf, ncap);
        if (!nb) { t->oom = 1; return; }
        t->buf = nb;
        t->cap = ncap;
    }
}

/* What one answer shows: the server-wide figures or not, and the tenants
 * whose labelled series it holds (sorted by name; slot NULL for one beyond
 * the table, which then has its gauges only). */
typedef struct {
    const char *name;
    tenant_slot *slot;
    uint64_t series, agents;
} shown_tenant;

typedef struct {
    int server;
    shown_tenant *t;
    size_t n;
} view;

/* A metric's HELP and TYPE lines. */
static void put_head(text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One metric without labels: its HELP and TYPE lines, then its value. */
static void put_one(text *t, const char *name, const char *type, const char *help, unsigned long long v)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

/* A counter of the server and of each tenant shown: the unlabelled
 * server-wide value (when shown), then one series a tenant (the counter at
 * offset in its slot). */
static void put_counter(text *t, const view *vw, const char *name, const char *help, uint64_t server,
                        size_t offset)
{
    put_head(t, name, "counter", help);
    if (vw->server) put(t, "%s %llu\n", name, (unsigned long long)server);
    for (size_t i = 0; i < vw->n; i++) {
        const char *s = (const char *)vw->t[i].slot;
        if (s) put(t, "%s{tenant=\"%s\"} %llu\n", name, vw->t[i].name,
                   (unsigned long long)atomic_load((_Atomic uint64_t *)(s + offset)));
    }
}

static void put_requests(text *t, const view *vw, _Atomic uint64_t (*server)[SRV_STATUS_SLOTS])
{
    put(t, "# HELP flamedb_http_requests_total HTTP requests answered, by route and status code.\n"
           "# TYPE flamedb_http_requests_total counter\n");
    for (size_t k = 0; k < vw->n + (size_t)vw->server; k++) {
        /* the server's rows first, then each tenant's */
        int is_server = vw->server && k == 0;
        const shown_tenant *st = is_server ? NULL : &vw->t[k - (size_t)vw->server];
        if (!is_server && !st->slot) continue;
        _Atomic uint64_t(*req)[SRV_STATUS_SLOTS] = is_server ? server : st->slot->requests;
        for (int r = 0; r < ROUTE_COUNT; r++) {
            for (int i = 0; i < SRV_STATUS_SLOTS; i++) {
                uint64_t n = atomic_load(&req[r][i]);
                if (!n) continue;
                char code[8];
                if (status_slots[i]) snprintf(code, sizeof code, "%d", status_slots[i]);
                else snprintf(code, sizeof code, "other");
                if (is_server)
                    put(t, "flamedb_http_requests_total{route=\"%s\",code=\"%s\"} %llu\n", route_names[r], code,
                        (unsigned long long)n);
                else
                    put(t, "flamedb_http_requests_total{tenant=\"%s\",route=\"%s\",code=\"%s\"} %llu\n", st->name,
                        route_names[r], code, (unsigned long long)n);
            }
        }
    }
}

static void put_stopped(text *t, const view *vw, _Atomic uint64_t *server, int cluster)
{
    static const char *const reasons[STORE_STOP_REASONS] = { NULL, "timeout", "max_pairs", "client_gone",
                                                             "clickhouse_unavailable" };
    static const int order[4] = { STORE_STOP_DEADLINE, STORE_STOP_PAIRS, STORE_STOP_GONE, STORE_STOP_REMOTE };
    int nr = cluster ? 4 : 3; /* the last only where reads come from ClickHouse */
    put(t, "# HELP flamedb_queries_stopped_total Reads whose work was stopped before their answer: past serve "
           "--query-timeout, past --max-pairs, because their client went away, or (cluster mode) because "
           "ClickHouse could not give their data.\n"
           "# TYPE flamedb_queries_stopped_total counter\n");
    for (int k = 0; vw->server && k < nr; k++)
        put(t, "flamedb_queries_stopped_total{reason=\"%s\"} %llu\n", reasons[order[k]],
            (unsigned long long)atomic_load(&server[order[k]]));
    for (size_t i = 0; i < vw->n; i++)
        for (int k = 0; vw->t[i].slot && k < nr; k++)
            put(t, "flamedb_queries_stopped_total{tenant=\"%s\",reason=\"%s\"} %llu\n", vw->t[i].name,
                reasons[order[k]], (unsigned long long)atomic_load(&vw->t[i].slot->queries_stopped[order[k]]));
}

/* A gauge counted when scraped, per tenant (flamedb_series, flamedb_agents). */
static void put_tenant_gauges(text *t, const view *vw, const char *name, int series)
{
    for (size_t i = 0; i < vw->n; i++)
        put(t, "%s{tenant=\"%s\"} %llu\n", name, vw->t[i].name,
            (unsigned long long)(series ? vw->t[i].series : vw->t[i].agents));
}

/* Each shown tenant's series: those with its tenant label, or without
 * one for "default" (the selector every read of the tenant adds). */
static void count_series(srv_ctx *srv, view *vw)
{
    store_reader *r;
    if (!vw->n || !srv->st || store_reader_begin(srv->st, &r)) return;
    for (size_t i = 0; i < vw->n; i++) {
        if (!strcmp(vw->t[i].name, SRV_TENANT_DEFAULT)) {
            uint32_t max = store_series_max(r);
            for (uint32_t sid = 1; sid <= max; sid++) vw->t[i].series += !store_series_label(r, sid, SRV_TENANT_LABEL);
        } else {
            uint32_t *ids = NULL;
            size_t n = 0;
            if (store_postings(r, SRV_TENANT_LABEL, vw->t[i].name, &ids, &n) == STORE_OK) vw->t[i].series = n;
            free(ids);
        }
    }
    store_reader_end(r);
}

static int cmp_shown(const void *key, const void *elem)
{
    return strcmp(key, ((const shown_tenant *)elem)->name);
}

static void count_agent(void *ctx, const char *tenant)
{
    view *vw = ctx;
    shown_tenant *st = bsearch(tenant[0] ? tenant : SRV_TENANT_DEFAULT, vw->t, vw->n, sizeof *vw->t, cmp_shown);
    if (st) st->agents++;
}

/* Cluster mode (--store clickhouse=...): the spool and the flusher
 * (cluster/chfront.h) instead of the LMDB store's figures. */
/* Cluster mode's reads (cluster/chsource.h). */
static void put_source(text *t, chsource *s)
{
    chsource_stats c;
    chsource_stats_get(s, &c);
    put_one(t, "flamedb_clickhouse_catalog_series", "gauge",
            "Series in the front end's catalog, as last read from ClickHouse's series table.",
            (unsigned long long)c.series);
    put_one(t, "flamedb_clickhouse_catalog_bytes", "gauge", "Memory of that catalog.",
            (unsigned long long)c.catalog_bytes);
    put_one(t, "flamedb_clickhouse_catalog_loads_total", "counter",
            "Times the catalog was read again (the series table had changed).", (unsigned long long)c.catalog_loads);
    put_one(t, "flamedb_clickhouse_read_loads_total", "counter",
            "Profiles loaded by queries, one load per set of series and range.", (unsigned long long)c.loads);
    put_one(t, "flamedb_clickhouse_read_merges_total", "counter",
            "Merges summed in ClickHouse (GROUP BY on the shards, with the rollups).", (unsigned long long)c.merges);
    put_one(t, "flamedb_clickhouse_read_profiles_total", "counter",
            "Profiles read by queries (loaded one by one, or summed in merges).",
            (unsigned long long)c.profiles_loaded);
    put_one(t, "flamedb_clickhouse_read_errors_total", "counter",
            "Reads ClickHouse could not serve (a shard down, a timeout).", (unsigned long long)c.load_errors);
}

static void put_front(text *t, chfront *f)
{
    chfront_stats c;
    chfront_stats_get(f, &c);
    int64_t now = srv_now_ms();
    put_one(t, "flamedb_clickhouse_up", "gauge",
            "1 when ClickHouse answered the flusher's last exchange (cluster mode), else 0.",
            (unsigned long long)c.reachable);
    put_one(t, "flamedb_spool_bytes", "gauge",
            "Bytes of acknowledged profiles in the front end's spool, not yet in ClickHouse.",
            (unsigned long long)c.spool_bytes);
    put_one(t, "flamedb_spool_max_bytes", "gauge",
            "The spool's limit (serve --spool-max); past it ingest answers 503.", (unsigned long long)c.spool_max);
    put_one(t, "flamedb_spool_files", "gauge", "Files in the spool (sealed and open).",
            (unsigned long long)c.spool_files);
    put(t, "# HELP flamedb_spool_oldest_age_seconds Age of the oldest record still in the spool: how far "
           "ClickHouse lags behind what was acknowledged (0 when the spool is empty).\n"
           "# TYPE flamedb_spool_oldest_age_seconds gauge\n"
           "flamedb_spool_oldest_age_seconds %.3f\n",
        c.spool_oldest_ms ? (double)(now - c.spool_oldest_ms) / 1000.0 : 0.0);
    put_one(t, "flamedb_spool_appends_total", "counter", "Requests' rows appended to the spool.",
            (unsigned long long)c.appends);
    put_one(t, "flamedb_spool_fsyncs_total", "counter",
            "fsyncs of the spool (group commit: one covers every record written before it).",
            (unsigned long long)c.fsyncs);
    put_one(t, "flamedb_clickhouse_flushed_files_total", "counter", "Spool files inserted into ClickHouse and removed.",
            (unsigned long long)c.flushed_files);
    put_one(t, "flamedb_clickhouse_inserted_profiles_total", "counter", "Profiles inserted into ClickHouse.",
            (unsigned long long)c.flushed_profiles);
    put_one(t, "flamedb_clickhouse_inserted_rows_total", "counter",
            "Rows of the samples table inserted into ClickHouse (one per profile and stack).",
            (unsigned long long)c.flushed_rows);
    put_one(t, "flamedb_clickhouse_inserted_bytes_total", "counter", "RowBinary bytes inserted into ClickHouse.",
            (unsigned long long)c.flushed_bytes);
    put_one(t, "flamedb_clickhouse_errors_total", "counter",
            "Failed exchanges with ClickHouse (inserts, schema, retention); the last is in /healthz.",
            (unsigned long long)c.insert_errors);
    put_one(t, "flamedb_clickhouse_retention_dropped_days_total", "counter",
            "Day partitions dropped by retention in ClickHouse.", (unsigned long long)c.days_dropped);
}

static void render(srv_ctx *srv, view *vw, text *t)
{
    srv_metrics *m = &srv->metrics;
    count_series(srv, vw);
    if (vw->n) srv_fleet_each(srv->fleet, count_agent, vw);
    store_stats s;
    /* the store's own figures: a single node's (cluster mode has none) */
    int local = vw->server && srv->st;
    if (local) store_get_stats(srv->st, &s);

    put_requests(t, vw, m->requests);
    if (vw->server) {
        srv_conns_stats cs;
        srv_conns_get_stats(srv, &cs);
        put_one(t, "flamedb_http_connections", "gauge",
                "HTTP connections open.", (unsigned long long)cs.open);
        put_one(t, "flamedb_http_connections_max", "gauge",
                "The most HTTP connections open at once (serve --max-connections).",
                (unsigned long long)srv->max_connections);
        put(t, "# HELP flamedb_http_connections_closed_total HTTP connections closed by the server without a request "
               "going: timeout (no whole request head within serve --connection-timeout) or evicted (the oldest such "
               "when near serve --max-connections).\n"
               "# TYPE flamedb_http_connections_closed_total counter\n"
               "flamedb_http_connections_closed_total{reason=\"timeout\"} %llu\n"
               "flamedb_http_connections_closed_total{reason=\"evicted\"} %llu\n",
            (unsigned long long)cs.timed_out, (unsigned long long)cs.evicted);
    }
    put_stopped(t, vw, m->queries_stopped, srv->source != NULL);
    put_counter(t, vw, "flamedb_ingested_samples_total", "Samples (sums of stack counts) accepted by ingest.",
                atomic_load(&m->ingested_samples), offsetof(tenant_slot, ingested_samples));
    put_counter(t, vw, "flamedb_ingested_profiles_total", "Profiles accepted by ingest.",
                atomic_load(&m->ingested_profiles), offsetof(tenant_slot, ingested_profiles));
    put_counter(t, vw, "flamedb_ingested_bytes_total", "Request body bytes accepted by ingest, as received.",
                atomic_load(&m->ingested_bytes), offsetof(tenant_slot, ingested_bytes));
    if (local) {
        put(t, "# HELP flamedb_commit_duration_seconds Time of each durable LMDB commit (group commit).\n"
               "# TYPE flamedb_commit_duration_seconds histogram\n");
        for (int i = 0; i < STORE_COMMIT_BUCKETS; i++)
            put(t, "flamedb_commit_duration_seconds_bucket{le=\"%g\"} %llu\n", store_commit_bucket_le[i],
                (unsigned long long)s.commit_bucket[i]);
        put(t, "flamedb_commit_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
               "flamedb_commit_duration_seconds_sum %.6f\n"
               "flamedb_commit_duration_seconds_count %llu\n",
            (unsigned long long)s.commits, s.commit_seconds_sum, (unsigned long long)s.commits);
        put_one(t, "flamedb_ingest_queue_bytes", "gauge",
                "Bytes of pushes in flight (bodies and their gunzipped text) not yet answered; "
                "past serve --max-ingest-queue pushes get 503.",
                (unsigned long long)atomic_load(&srv->ingest_held));
    }
    if (vw->server && srv->front) put_front(t, srv->front);
    if (vw->server && srv->source) put_source(t, srv->source);
    put_counter(t, vw, "flamedb_ingest_rate_limited_total",
                "Pushes answered 429: their tenant pushed more than serve --ingest-rate allows.",
                srv_ratelimit_limited(srv->ingest_rate), offsetof(tenant_slot, rate_limited));
    if (local) {
        put_one(t, "flamedb_commit_waits_total", "counter",
                "Batches the writer held for requests on their way before committing (serve --commit-wait).",
                (unsigned long long)s.gather_waits);
        put(t, "# HELP flamedb_commit_wait_seconds_total Time batches were held before committing (serve --commit-wait).\n"
               "# TYPE flamedb_commit_wait_seconds_total counter\n"
               "flamedb_commit_wait_seconds_total %.6f\n", s.gather_wait_s);
        put_one(t, "flamedb_database_bytes", "gauge",
                "Disk space used by the catalog and the partition files.",
                (unsigned long long)s.db_bytes);
    }
    if (srv->st) {
        put_head(t, "flamedb_series", "gauge", "Series (distinct label sets) stored.");
        if (local) put(t, "flamedb_series %llu\n", (unsigned long long)s.series);
        put_tenant_gauges(t, vw, "flamedb_series", 1);
    }
    if (local) {
        put_one(t, "flamedb_call_tree_nodes", "gauge",
                "Call-tree nodes (distinct stack prefixes) of the partitions whose dictionaries the writer holds in memory.",
                (unsigned long long)s.nodes);
        put_one(t, "flamedb_dictionary_memory_bytes", "gauge",
                "Memory of the writer's dictionary maps and the catalog.",
                (unsigned long long)s.dict_memory);
        put_one(t, "flamedb_partitions", "gauge",
                "Time partitions stored (one file each).",
                (unsigned long long)s.partitions);
        put_one(t, "flamedb_rollups_built_total", "counter",
                "Rollup buckets built by compaction.",
                (unsigned long long)s.rollups_built);
        put_one(t, "flamedb_retention_dropped_partitions_total", "counter",
                "Partitions dropped whole by retention.",
                (unsigned long long)s.retention_partitions);
        put_one(t, "flamedb_retention_deleted_profiles_total", "counter",
                "Profiles deleted by retention.",
                (unsigned long long)s.retention_deleted);
        put_one(t, "flamedb_series_expired_total", "counter",
                "Series dropped from the catalog once retention dropped their last partition.",
                (unsigned long long)s.series_expired);
        put_one(t, "flamedb_catalog_memory_bytes", "gauge",
                "Memory of the catalog (series, label strings, postings): live series only.",
                (unsigned long long)s.catalog_memory);
    }
    if (vw->n) {
        put_head(t, "flamedb_agents", "gauge", "Agents in the fleet registry (seen within its expiry), by tenant.");
        put_tenant_gauges(t, vw, "flamedb_agents", 0);
    }
}

enum MHD_Result srv_handle_metrics(srv_request *rq)
{
    srv_ctx *srv = rq->srv;
    srv_metrics_tenants *T = srv->metrics.tenants;
    text t = { malloc(8192), 0, 8192, 0 };
    if (!t.buf) return MHD_NO;
    /* access.c decided who asks: open or the operator (server-wide), the
     * operator also every tenant, or one tenant alone */
    view vw = { .server = !rq->scoped };
    shown_tenant one = { .name = rq->tenant };
    if (rq->scoped) {
        if (T) one.slot = slot_lock(T, rq->tenant);
        vw.t = &one;
        vw.n = 1;
    } else if (rq->every_tenant && T) {
        pthread_rwlock_rdlock(&T->lock);
        vw.t = calloc(T->n ? T->n : 1, sizeof *vw.t);
        for (size_t i = 0; vw.t && i < T->n; i++) vw.t[i] = (shown_tenant){ .name = T->v[i]->name, .slot = T->v[i] };
        vw.n = vw.t ? T->n : 0;
        t.oom = !vw.t;
    }
    if (!t.oom) render(srv, &vw, &t);
    if (T && (rq->scoped || rq->every_tenant)) pthread_rwlock_unlock(&T->lock);
    if (vw.t != &one) free(vw.t);
    if (t.oom) {
        free(t.buf);
        return MHD_NO;
    }
    return srv_reply_bytes(rq, 200, "text/plain; version=0.0.4; charset=utf-8", t.buf, t.len, 1);
}
