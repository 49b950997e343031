/* params.c — reading query parameters: strings, unsigned integers, and the
 * from/until time range every endpoint shares.  Parse failures answer 400
 * naming the parameter and what it should look like. */
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "../query/query.h"
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
    return 0;
}
