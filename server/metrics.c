/* metrics.c — GET /metrics in Prometheus text format: requests by route and
 * status, samples, profiles and bytes ingested, the commit latency
 * histogram, the database size and the number of series.  Request counters
 * are atomics in a fixed table (route x status slot), so counting costs no
 * lock on the request path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

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

void srv_metrics_count(srv_ctx *srv, srv_route route, int status)
{
    if (!status) return; /* connection dropped before an answer */
    atomic_fetch_add(&srv->metrics.requests[route][slot_of(status)], 1);
}

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

/* One metric without labels: its HELP and TYPE lines, then its value. */
static void put_one(text *t, const char *name, const char *type, const char *help, unsigned long long v)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

enum MHD_Result srv_handle_metrics(srv_request *rq)
{
    srv_ctx *srv = rq->srv;
    store_stats s;
    store_get_stats(srv->st, &s);
    text t = { malloc(8192), 0, 8192, 0 };
    if (!t.buf) return MHD_NO;

    put(&t, "# HELP flamedb_http_requests_total HTTP requests answered, by route and status code.\n"
            "# TYPE flamedb_http_requests_total counter\n");
    for (int r = 0; r < ROUTE_COUNT; r++) {
        for (int i = 0; i < SRV_STATUS_SLOTS; i++) {
            uint64_t n = atomic_load(&srv->metrics.requests[r][i]);
            if (!n) continue;
            char code[8];
            if (status_slots[i]) snprintf(code, sizeof code, "%d", status_slots[i]);
            else snprintf(code, sizeof code, "other");
            put(&t, "flamedb_http_requests_total{route=\"%s\",code=\"%s\"} %llu\n", route_names[r], code,
                (unsigned long long)n);
        }
    }
    srv_conns_stats cs;
    srv_conns_get_stats(srv, &cs);
    put_one(&t, "flamedb_http_connections", "gauge",
            "HTTP connections open.", (unsigned long long)cs.open);
    put_one(&t, "flamedb_http_connections_max", "gauge",
            "The most HTTP connections open at once (serve --max-connections).",
            (unsigned long long)srv->max_connections);
    put(&t, "# HELP flamedb_http_connections_closed_total HTTP connections closed by the server without a request "
            "going: timeout (no whole request head within serve --connection-timeout) or evicted (the oldest such "
            "when near serve --max-connections).\n"
            "# TYPE flamedb_http_connections_closed_total counter\n"
            "flamedb_http_connections_closed_total{reason=\"timeout\"} %llu\n"
            "flamedb_http_connections_closed_total{reason=\"evicted\"} %llu\n",
        (unsigned long long)cs.timed_out, (unsigned long long)cs.evicted);
    put(&t, "# HELP flamedb_queries_stopped_total Reads whose work was stopped before their answer: past serve "
            "--query-timeout, past --max-pairs, or because their client went away.\n"
            "# TYPE flamedb_queries_stopped_total counter\n"
            "flamedb_queries_stopped_total{reason=\"timeout\"} %llu\n"
            "flamedb_queries_stopped_total{reason=\"max_pairs\"} %llu\n"
            "flamedb_queries_stopped_total{reason=\"client_gone\"} %llu\n",
        (unsigned long long)atomic_load(&srv->metrics.queries_stopped[STORE_STOP_DEADLINE]),
        (unsigned long long)atomic_load(&srv->metrics.queries_stopped[STORE_STOP_PAIRS]),
        (unsigned long long)atomic_load(&srv->metrics.queries_stopped[STORE_STOP_GONE]));
    put_one(&t, "flamedb_ingested_samples_total", "counter",
            "Samples (sums of stack counts) accepted by ingest.",
            (unsigned long long)atomic_load(&srv->metrics.ingested_samples));
    put_one(&t, "flamedb_ingested_profiles_total", "counter",
            "Profiles accepted by ingest.",
            (unsigned long long)atomic_load(&srv->metrics.ingested_profiles));
    put_one(&t, "flamedb_ingested_bytes_total", "counter",
            "Request body bytes accepted by ingest, as received.",
            (unsigned long long)atomic_load(&srv->metrics.ingested_bytes));
    put(&t, "# HELP flamedb_commit_duration_seconds Time of each durable LMDB commit (group commit).\n"
            "# TYPE flamedb_commit_duration_seconds histogram\n");
    for (int i = 0; i < STORE_COMMIT_BUCKETS; i++)
        put(&t, "flamedb_commit_duration_seconds_bucket{le=\"%g\"} %llu\n", store_commit_bucket_le[i],
            (unsigned long long)s.commit_bucket[i]);
    put(&t, "flamedb_commit_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
            "flamedb_commit_duration_seconds_sum %.6f\n"
            "flamedb_commit_duration_seconds_count %llu\n",
        (unsigned long long)s.commits, s.commit_seconds_sum, (unsigned long long)s.commits);
    put_one(&t, "flamedb_ingest_queue_bytes", "gauge",
            "Bytes of pushes in flight (bodies and their gunzipped text) not yet answered; "
            "past serve --max-ingest-queue pushes get 503.",
            (unsigned long long)atomic_load(&srv->ingest_held));
    put_one(&t, "flamedb_ingest_rate_limited_total", "counter",
            "Pushes answered 429: their tenant pushed more than serve --ingest-rate allows.",
            (unsigned long long)srv_ratelimit_limited(srv->ingest_rate));
    put_one(&t, "flamedb_commit_waits_total", "counter",
            "Batches the writer held for requests on their way before committing (serve --commit-wait).",
            (unsigned long long)s.gather_waits);
    put(&t, "# HELP flamedb_commit_wait_seconds_total Time batches were held before committing (serve --commit-wait).\n"
            "# TYPE flamedb_commit_wait_seconds_total counter\n"
            "flamedb_commit_wait_seconds_total %.6f\n", s.gather_wait_s);
    put_one(&t, "flamedb_database_bytes", "gauge",
            "Disk space used by the catalog and the partition files.",
            (unsigned long long)s.db_bytes);
    put_one(&t, "flamedb_series", "gauge",
            "Series (distinct label sets) stored.",
            (unsigned long long)s.series);
    put_one(&t, "flamedb_call_tree_nodes", "gauge",
            "Call-tree nodes (distinct stack prefixes) of the partitions whose dictionaries the writer holds in memory.",
            (unsigned long long)s.nodes);
    put_one(&t, "flamedb_dictionary_memory_bytes", "gauge",
            "Memory of the writer's dictionary maps and the catalog.",
            (unsigned long long)s.dict_memory);
    put_one(&t, "flamedb_partitions", "gauge",
            "Time partitions stored (one file each).",
            (unsigned long long)s.partitions);
    put_one(&t, "flamedb_rollups_built_total", "counter",
            "Rollup buckets built by compaction.",
            (unsigned long long)s.rollups_built);
    put_one(&t, "flamedb_retention_dropped_partitions_total", "counter",
            "Partitions dropped whole by retention.",
            (unsigned long long)s.retention_partitions);
    put_one(&t, "flamedb_retention_deleted_profiles_total", "counter",
            "Profiles deleted by retention.",
            (unsigned long long)s.retention_deleted);
    if (t.oom) {
        free(t.buf);
        return MHD_NO;
    }
    return srv_reply_bytes(rq, 200, "text/plain; version=0.0.4; charset=utf-8", t.buf, t.len, 1);
}
