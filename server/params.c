/* params.c — reading query parameters: strings, unsigned integers, and the
 * from/until time range every endpoint shares.  Parse failures answer 400
 * naming the parameter and what it should look like. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "../query/query.h"
#include "../storage/remote.h"
#include "srv.h"

const char *srv_param(srv_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

int64_t srv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int srv_time_range(srv_request *rq, const char *from_name, const char *until_name,
                   int64_t default_span_ms, int64_t *from_ms, int64_t *until_ms)
{
    int64_t now = srv_now_ms();
    char err[512];
    const char *u = srv_param(rq, until_name), *f = srv_param(rq, from_name);
    *until_ms = now;
    if (u && query_time_parse(u, now, until_ms, err, sizeof err)) {
        srv_reply_error(rq, 400, "parameter '%s': %s", until_name, err);
        return -1;
    }
    *from_ms = *until_ms - default_span_ms;
    if (f && query_time_parse(f, now, from_ms, err, sizeof err)) {
        srv_reply_error(rq, 400, "parameter '%s': %s", from_name, err);
        return -1;
    }
    if (*from_ms >= *until_ms) {
        srv_reply_error(rq, 400, "parameter '%s' must be before '%s'", from_name, until_name);
        return -1;
    }
    return 0;
}

int srv_param_uint(srv_request *rq, const char *name, uint64_t def, uint64_t max, uint64_t *out)
{
    const char *v = srv_param(rq, name);
    *out = def;
    if (!v) return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || errno || v[0] == '-' || x > max) {
        srv_reply_error(rq, 400, "parameter '%s': '%s' is not a whole number from 0 to %llu",
                        name, v, (unsigned long long)max);
        return -1;
    }
    *out = x;
    return 0;
}

int srv_selector(srv_request *rq, const char *name, const char *def, query_selector *sel)
{
    char err[512];
    const char *q = srv_param(rq, name);
    if (!q && !def) {
        srv_reply_error(rq, 400, "parameter '%s' is required: a selector like api{build=\"v2\"}", name);
        return -1;
    }
    if (query_selector_parse(q ? q : def, sel, err, sizeof err)) {
        srv_reply_error(rq, 400, "parameter '%s': %s", name, err);
        return -1;
    }
    /* the one place a request's selector is made: scoped to its tenant */
    if (srv_tenant_scope(rq, name, sel)) {
        query_selector_free(sel);
        return -1;
    }
    return 0;
}

int srv_param_double(srv_request *rq, const char *name, double def, double min, double max, double *out)
{
    const char *v = srv_param(rq, name);
    *out = def;
    if (!v) return 0;
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= min && x <= max)) {
        srv_reply_error(rq, 400, "parameter '%s': '%s' is not a number from %g to %g", name, v, min, max);
        return -1;
    }
    *out = x;
    return 0;
}

int srv_param_duration(srv_request *rq, const char *name, int64_t def_ms, int64_t *out_ms)
{
    char err[256] = "";
    const char *v = srv_param(rq, name);
    *out_ms = def_ms;
    if (!v) return 0;
    if (query_duration_parse(v, out_ms, err, sizeof err) || *out_ms <= 0) {
        srv_reply_error(rq, 400, "parameter '%s': %s", name, *out_ms <= 0 && !err[0] ? "must be above 0" : err);
        return -1;
    }
    return 0;
}

/* Whether the client closed its side of the connection: a read's answer
 * would go nowhere.  POLLRDHUP: the peer sent its FIN (also under TLS,
 * where a close_notify may sit unread before it).  A client that shuts
 * down its writing side after the request and still reads the answer is
 * taken for gone; HTTP clients do not do that. */
static int client_gone(void *ctx)
{
    srv_request *rq = ctx;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd p = { .fd = ci->connect_fd, .events = POLLIN | POLLRDHUP };
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

int srv_reader_begin(srv_request *rq, store_reader **r)
{
    *r = NULL;
    if (!rq->srv->st) {     /* cluster mode: the data is in ClickHouse */
        const char *p = srv_param(rq, "partial");
        int partial = p && (!strcmp(p, "true") || !strcmp(p, "1"));
        if (p && !partial && strcmp(p, "false") && strcmp(p, "0")) {
            srv_reply_error(rq, 400, "parameter 'partial': true or false, not '%s'", p);
            return -1;
        }
        char err[1200];
        /* what of this front end's acknowledged profiles the answer may
         * lack: the age of the oldest one still in its spool */
        chfront_stats fs;
        chfront_stats_get(rq->srv->front, &fs);
        rq->staleness_ms = fs.spool_oldest_ms ? srv_now_ms() - fs.spool_oldest_ms : 0;
        if (rq->staleness_ms < 0) rq->staleness_ms = 0;
        if (!rq->srv->source || chsource_reader_begin(rq->srv->source, partial, &rq->partial, r, err, sizeof err)) {
            rq->stopped = STORE_STOP_REMOTE; /* counted as a read ClickHouse could not serve */
            srv_metrics_stopped(rq);
            srv_reply_error(rq, 503, "%s", rq->srv->source ? err : "this front end reads nothing");
            return -1;
        }
    } else if (store_reader_begin(rq->srv->st, r)) {
        srv_reply_error(rq, 503, "cannot open a read snapshot (too many readers?)");
        return -1;
    }
    rq->deadline_ms = rq->srv->query_timeout_ms ? store_mono_ms() + rq->srv->query_timeout_ms : 0;
    store_reader_set_deadline(*r, rq->deadline_ms);
    store_reader_set_max_pairs(*r, rq->srv->max_pairs);
    store_reader_set_cancel(*r, client_gone, rq);
    rq->reader = *r;
    rq->stopped = STORE_STOP_NONE;
    return 0;
}

void srv_reader_end(srv_request *rq, store_reader *r)
{
    if (!r) return;
    if (rq->reader == r) {
        rq->stopped = store_reader_stopped(r);
        if (rq->stopped == STORE_STOP_REMOTE && !rq->stop_msg && store_reader_error(r))
            rq->stop_msg = strdup(store_reader_error(r));
        rq->reader = NULL;
        srv_metrics_stopped(rq);
        if (rq->stopped == STORE_STOP_GONE)
            srv_log("%s %s: the client went away; its query was stopped", rq->method, rq->url);
    }
    store_reader_end(r);
}

int srv_series_limit(srv_request *rq, const query_series_set *set)
{
    size_t max = rq->srv->max_series;
    if (!max || set->n_series <= max) return 0;
    srv_reply_error(rq, 400, "the selector matches %zu series with profiles in the range, more than the %zu one "
                    "query may merge (--max-series); narrow it with a label (service=, instance=) or "
                    "shorten the range", set->n_series, max);
    return -1;
}

int srv_side_resolve(srv_request *rq, store_reader *r, query_side *s)
{
    char err[256];
    if (query_side_resolve(s, r, err, sizeof err)) {
        srv_reply_error(rq, 500, "%s", err);
        return -1;
    }
    return srv_series_limit(rq, &s->set);
}

int srv_resolve(srv_request *rq, store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                query_series_set *set)
{
    char err[256];
    if (query_resolve(r, sel, from_ms, until_ms, set, err, sizeof err)) {
        srv_reply_error(rq, 500, "%s", err);
        return -1;
    }
    if (srv_series_limit(rq, set)) {
        query_series_set_free(set);
        memset(set, 0, sizeof *set);
        return -1;
    }
    return 0;
}

int srv_groups_split(srv_request *rq, const char *param, store_reader *r, const query_series_set *set,
                     const query_group_by *by, int64_t from_ms, int64_t until_ms, int keeps_trees,
                     query_group **groups, size_t *n)
{
    size_t cap = rq->srv->max_groups, max = query_groups_limit(r, set, from_ms, until_ms, cap,
                                                               keeps_trees ? SRV_GROUP_TREES_BYTES : 0);
    int rc = query_groups_split(r, set, by, max, groups, n);
    if (rc == QUERY_ETOOMANY) {
        if (max < cap)
            srv_reply_error(rq, 400, "parameter '%s': %zu groups, more than the %zu whose trees fit in %llu MiB "
                            "for this range's call tree (--max-groups %zu for a small tree); group by fewer "
                            "labels, or narrow the selector or the range",
                            param, *n, max, (unsigned long long)(SRV_GROUP_TREES_BYTES >> 20), cap);
        else
            srv_reply_error(rq, 400, "parameter '%s': %zu groups, more than the %zu one answer may hold "
                            "(--max-groups); group by fewer labels or narrow the selector", param, *n, cap);
        return -1;
    }
    if (rc) {
        srv_reply_error(rq, 500, "out of memory splitting into groups");
        return -1;
    }
    return 0;
}

int srv_group_by(srv_request *rq, const char *name, query_group_by *by, int *present)
{
    char err[256];
    const char *v = srv_param(rq, name);
    *present = v != NULL;
    memset(by, 0, sizeof *by);
    if (!v) return 0;
    if (query_group_by_parse(v, by, err, sizeof err)) {
        srv_reply_error(rq, 400, "parameter '%s': %s", name, err);
        return -1;
    }
    for (size_t i = 0; rq->scoped && i < by->n_keys; i++)
        if (!strcmp(by->keys[i], SRV_TENANT_LABEL)) {
            query_group_by_free(by);
            srv_reply_error(rq, 400, "parameter '%s': the label %s is reserved", name, SRV_TENANT_LABEL);
            return -1;
        }
    return 0;
}

int srv_group_by_sample(srv_request *rq, const char **key)
{
    char err[256];
    *key = srv_param(rq, "group_by_sample");
    if (!*key) return 0;
    int bad = 0;
    if (!**key) {
        bad = snprintf(err, sizeof err, "expected one sample label name, like span_id") > 0;
    } else if (strchr(*key, ',')) {
        bad = snprintf(err, sizeof err, "one sample label name, not a list ('%.64s')", *key) > 0;
    } else {
        query_group_by one; /* the label name rules group_by checks */
        bad = query_group_by_parse(*key, &one, err, sizeof err); /* frees what it made on error */
        query_group_by_free(&one);
    }
    if (bad) {
        srv_reply_error(rq, 400, "parameter 'group_by_sample': %s", err);
        return -1;
    }
    return 0;
}
