/* grafana_handlers.c — what Grafana's Pyroscope data source asks (issue 11,
 * point 3): the unary calls of querier.v1.QuerierService over Connect
 * (connect.c; messages of proto/querier.proto and proto/types.proto), and
 * Pyroscope's GET /pyroscope/render and /pyroscope/render-diff
 * (flamebearer JSON).
 *
 * Pyroscope's conventions, mapped onto flamedb's:
 *   - times are unix milliseconds (start, end); end 0 is now, start 0 an
 *     hour before end;
 *   - a profile type ID is name:sample_type:sample_unit:period_type:period_unit.
 *     flamedb's is the series' `type` label and the unit its values are
 *     answered in (query_block_unit: a rate makes nanoseconds):
 *     sample_type = type, sample_unit = unit, and name, period_type and
 *     period_unit from a table of known types (cpu in nanoseconds is
 *     process_cpu:cpu:nanoseconds:cpu:nanoseconds, alloc_space
 *     memory:alloc_space:bytes:space:bytes); other types name themselves.
 *     Read back, sample_type and sample_unit are all that count;
 *   - `service_name` is flamedb's `service` (in selectors, label names,
 *     values and series); series carry `__profile_type__` and `__name__`;
 *     label names starting with "__" are not listed;
 *   - selectors are flamedb's (Prometheus-like, as Pyroscope's), a
 *     `__profile_type__="ID"` matcher selecting that type.
 * Every selector is scoped to the request's tenant (srv_tenant_scope, as
 * srv_selector does for query strings) and merges go through srv_resolve
 * (--max-series), so tenants and limits are the HTTP API's.
 *
 * The flame graph (SelectMergeStacktraces, render) is query_levels_build's
 * arrays as they are: the protobuf Level messages point into them; a diff
 * is query_levels_diff_build's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "../ingest/ingest.h"
#include "profile.pb-c.h"
#include "querier.pb-c.h"
#include "srv.h"

#define DEFAULT_MAX_NODES 16384  /* Pyroscope's default when max_nodes is not given */
#define MAX_MATCHERS 64

/* ---- allocations of one answer, freed together ------------------------- */

typedef struct {
    void **p;
    size_t n, cap;
    int failed;
} pool;

static void *pool_alloc(pool *pl, size_t size)
{
    if (pl->n == pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : 64;
        void **np = realloc(pl->p, cap * sizeof *np);
        if (!np) {
            pl->failed = 1;
            return NULL;
        }
        pl->p = np;
        pl->cap = cap;
    }
    void *m = calloc(1, size ? size : 1);
    if (!m) {
        pl->failed = 1;
        return NULL;
    }
    pl->p[pl->n++] = m;
    return m;
}

static char *pool_strdup(pool *pl, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = pool_alloc(pl, n);
    if (d) memcpy(d, s, n);
    return d ? d : (char *)"";
}

static void pool_free(pool *pl)
{
    for (size_t i = 0; i < pl->n; i++) free(pl->p[i]);
    free(pl->p);
    memset(pl, 0, sizeof *pl);
}

/* ---- profile types ------------------------------------------------------- */

typedef struct { const char *type, *name, *period_type, *period_unit; } ptype_row;

static const ptype_row ptypes[] = {
    { "cpu", "process_cpu", "cpu", "nanoseconds" },
    { "samples", "process_cpu", "cpu", "nanoseconds" },
    { "wall", "wall", "wall", "nanoseconds" },
    { "offcpu", "offcpu", "offcpu", "nanoseconds" },
    { "alloc_space", "memory", "space", "bytes" },
    { "alloc_objects", "memory", "space", "bytes" },
    { "inuse_space", "memory", "space", "bytes" },
    { "inuse_objects", "memory", "space", "bytes" },
    { "goroutine", "goroutine", "goroutine", "count" },
    { "goroutines", "goroutine", "goroutine", "count" },
    { "contentions", "mutex", "contentions", "count" },
    { "delay", "mutex", "contentions", "count" },
};

typedef struct { char id[400], name[128], type[128], unit[64], period_type[128], period_unit[64]; } ptype;

static void ptype_of(const char *type, const char *unit, ptype *out)
{
    const ptype_row *row = NULL;
    for (size_t i = 0; i < sizeof ptypes / sizeof ptypes[0]; i++)
        if (!strcmp(ptypes[i].type, type)) row = &ptypes[i];
    snprintf(out->type, sizeof out->type, "%s", type);
    snprintf(out->unit, sizeof out->unit, "%s", unit);
    snprintf(out->name, sizeof out->name, "%s", row ? row->name : type);
    snprintf(out->period_type, sizeof out->period_type, "%s", row ? row->period_type : type);
    snprintf(out->period_unit, sizeof out->period_unit, "%s", row ? row->period_unit : unit);
    snprintf(out->id, sizeof out->id, "%s:%s:%s:%s:%s", out->name, type, unit, out->period_type, out->period_unit);
}

/* Reads an ID: type and unit out of its second and third parts. */
static int ptype_parse(const char *id, char *type, size_t tlen, char *unit, size_t ulen)
{
    const char *p[5];
    size_t len[5];
    const char *s = id;
    for (int i = 0; i < 5; i++) {
        p[i] = s;
        const char *c = strchr(s, ':');
        if ((i < 4) != (c != NULL)) return -1;
        len[i] = c ? (size_t)(c - s) : strlen(s);
        s = c ? c + 1 : s;
    }
    if (!len[1] || !len[2] || len[1] >= tlen || len[2] >= ulen) return -1;
    snprintf(type, tlen, "%.*s", (int)len[1], p[1]);
    snprintf(unit, ulen, "%.*s", (int)len[2], p[2]);
    return 0;
}

/* ---- selectors ----------------------------------------------------------- */

static int matcher_add(query_selector *sel, const char *name, const char *value)
{
    query_matcher *m = realloc(sel->matchers, ((size_t)sel->n_matchers + 1) * sizeof *m);
    if (!m) return -1;
    sel->matchers = m;
    query_matcher *x = &m[sel->n_matchers];
    memset(x, 0, sizeof *x);
    x->name = strdup(name);
    x->value = strdup(value);
    x->op = QUERY_EQ;
    sel->n_matchers++;
    return x->name && x->value ? 0 : -1;
}

/* A Pyroscope selector (field names it in errors; "" is every series),
 * service_name read as service and __profile_type__="ID" as that type,
 * then scoped to the request's tenant.  type (optional) adds type=.
 * Answers 0, or replies (Connect error or JSON 400) and answers -1. */
static int grafana_selector(srv_request *rq, const char *field, const char *text, const char *type, query_selector *sel)
{
    char err[512];
    while (text && (*text == ' ' || *text == '\t')) text++;
    if (query_selector_parse(text && *text ? text : "{}", sel, err, sizeof err)) {
        srv_reply_error(rq, 400, "%s: %s", field, err);
        return -1;
    }
    for (int i = 0; i < sel->n_matchers; i++) {
        query_matcher *m = &sel->matchers[i];
        if (!strcmp(m->name, "service_name")) {
            char *n = strdup("service");
            if (!n) goto oom;
            free(m->name);
            m->name = n;
        } else if (!strcmp(m->name, "__profile_type__")) {
            char t[128], u[64];
            if (m->op != QUERY_EQ || ptype_parse(m->value, t, sizeof t, u, sizeof u)) {
                query_selector_free(sel);
                srv_reply_error(rq, 400, "%s: __profile_type__ takes = and an ID "
                                "name:sample_type:sample_unit:period_type:period_unit", field);
                return -1;
            }
            char *n = strdup("type"), *v = strdup(t);
            if (!n || !v) {
                free(n);
                free(v);
                goto oom;
            }
            free(m->name);
            free(m->value);
            m->name = n;
            m->value = v;
        }
    }
    if (type && matcher_add(sel, "type", type)) goto oom;
    if (srv_tenant_scope(rq, field, sel)) {
        query_selector_free(sel);
        return -1;
    }
    return 0;
oom:
    query_selector_free(sel);
    srv_reply_error(rq, 500, "out of memory reading %s", field);
    return -1;
}

/* [start, end) in ms: end 0 is now, start 0 an hour before end. */
static int grafana_range(srv_request *rq, int64_t start, int64_t end, int64_t *from, int64_t *until)
{
    *until = end ? end : srv_now_ms();
    *from = start ? start : *until - SRV_DEFAULT_RANGE_MS;
    if (*from >= *until) {
        srv_reply_error(rq, 400, "start (%lld) must be before end (%lld), both unix milliseconds", (long long)*from,
                        (long long)*until);
        return -1;
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The series matching any of the selectors (none: every series) with a
 * profile in the range, ascending, unique.  A selector's matchers on
 * sample labels keep the series holding a stack they keep
 * (query_sample_resolve, as /api/v1/labels lists); found (NULL: not asked)
 * receives the sample labels of the stacks each selector keeps (key
 * non-NULL: that label's only), read from the stacks under the query
 * bounds (a stopped scan is the call's error, never a shorter list). */
static int match_any(srv_request *rq, store_reader *r, char **matchers, size_t n, int64_t from, int64_t until,
                     const char *key, query_sample_labels *found, uint32_t **ids, size_t *n_ids)
{
    *ids = NULL;
    *n_ids = 0;
    if (n > MAX_MATCHERS) {
        srv_reply_error(rq, 400, "matchers: %zu selectors, at most %d", n, MAX_MATCHERS);
        return -1;
    }
    for (size_t i = 0; i < (n ? n : 1); i++) {
        query_selector sel;
        query_series_set set;
        char field[32], err[512];
        snprintf(field, sizeof field, "matchers[%zu]", i);
        if (grafana_selector(rq, field, n ? matchers[i] : "{}", NULL, &sel)) goto fail;
        int rc = query_sample_resolve(r, &sel, from, until, key, found, &set, err, sizeof err);
        query_selector_free(&sel);
        if (rc) {
            srv_reply_error(rq, srv_status_of_merge(rc), "%s", err);
            goto fail;
        }
        uint32_t *all = realloc(*ids, (*n_ids + set.n_series + 1) * sizeof *all);
        if (!all) {
            query_series_set_free(&set);
            srv_reply_error(rq, 500, "out of memory matching series");
            goto fail;
        }
        *ids = all;
        memcpy(all + *n_ids, set.series, set.n_series * sizeof *all);
        *n_ids += set.n_series;
        query_series_set_free(&set);
    }
    /* sorted, each once */
    if (n > 1) qsort(*ids, *n_ids, sizeof **ids, cmp_u32);
    size_t u = 0;
    for (size_t i = 0; i < *n_ids; i++)
        if (!u || (*ids)[u - 1] != (*ids)[i]) (*ids)[u++] = (*ids)[i];
    *n_ids = u;
    return 0;
fail:
    free(*ids);
    *ids = NULL;
    return -1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorts and removes duplicates of an array of strings; answers the count. */
static size_t sort_unique(char **v, size_t n)
{
    if (n > 1) qsort(v, n, sizeof *v, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || strcmp(v[u - 1], v[i])) v[u++] = v[i];
    return u;
}

/* ---- the calls ------------------------------------------------------------ */

typedef struct {
    srv_request *rq;
    store_reader *r;
    pool pl;
} call;

/* Every (type, unit) of the series in the range, as profile types. */
static int profile_types(call *c, const uint32_t *ids, size_t n, int64_t from, int64_t until, ptype **out,
                         size_t *n_out)
{
    ptype *pt = NULL;
    size_t np = 0, cap = 0;
    for (size_t i = 0; i < n; i++) {
        const char *type = store_series_label(c->r, ids[i], "type");
        query_unit_set us;
        query_series_units(c->r, ids[i], from, until, &us);
        for (int k = 0; k < us.n; k++) {
            ptype p;
            ptype_of(type ? type : "cpu", us.units[k], &p);
            size_t j = 0;
            while (j < np && strcmp(pt[j].id, p.id)) j++;
            if (j < np) continue;
            if (np == cap) {
                cap = cap ? cap * 2 : 8;
                ptype *q = realloc(pt, cap * sizeof *q);
                if (!q) {
                    free(pt);
                    return -1;
                }
                pt = q;
            }
            pt[np++] = p;
        }
    }
    *out = pt;
    *n_out = np;
    return 0;
}

static int cmp_ptype(const void *a, const void *b) { return strcmp(((const ptype *)a)->id, ((const ptype *)b)->id); }

static enum MHD_Result do_profile_types(call *c, const ProtobufCMessage *m)
{
    const Querier__V1__ProfileTypesRequest *req = (const Querier__V1__ProfileTypesRequest *)m;
    int64_t from, until;
    if (grafana_range(c->rq, req->start, req->end, &from, &until)) return MHD_YES;
    uint32_t *ids;
    size_t n;
    if (match_any(c->rq, c->r, NULL, 0, from, until, NULL, NULL, &ids, &n)) return MHD_YES;
    ptype *pt;
    size_t np;
    if (profile_types(c, ids, n, from, until, &pt, &np)) {
        free(ids);
        return srv_reply_error(c->rq, 500, "out of memory listing profile types");
    }
    free(ids);
    if (np) qsort(pt, np, sizeof *pt, cmp_ptype);
    Querier__V1__ProfileTypesResponse resp = QUERIER__V1__PROFILE_TYPES_RESPONSE__INIT;
    Types__V1__ProfileType *items = pool_alloc(&c->pl, np * sizeof *items);
    Types__V1__ProfileType **ptrs = pool_alloc(&c->pl, np * sizeof *ptrs);
    for (size_t i = 0; items && ptrs && i < np; i++) {
        Types__V1__ProfileType t = TYPES__V1__PROFILE_TYPE__INIT;
        t.id = pt[i].id;
        t.name = pt[i].name;
        t.sample_type = pt[i].type;
        t.sample_unit = pt[i].unit;
        t.period_type = pt[i].period_type;
        t.period_unit = pt[i].period_unit;
        items[i] = t;
        ptrs[i] = &items[i];
    }
    resp.n_profile_types = c->pl.failed ? 0 : np;
    resp.profile_types = ptrs;
    enum MHD_Result res = c->pl.failed ? srv_reply_error(c->rq, 500, "out of memory")
                                       : srv_connect_reply(c->rq, &resp.base);
    free(pt);
    return res;
}

/* Label names: the series' names without the "__" ones, service_name
 * beside service, sorted; then the sample labels' names (those no series
 * carries, never "__" ones), sorted. */
static enum MHD_Result do_label_names(call *c, const ProtobufCMessage *m)
{
    const Types__V1__LabelNamesRequest *req = (const Types__V1__LabelNamesRequest *)m;
    int64_t from, until;
    if (grafana_range(c->rq, req->start, req->end, &from, &until)) return MHD_YES;
    uint32_t *ids;
    size_t n;
    query_sample_labels sl = { 0 };
    if (match_any(c->rq, c->r, req->matchers, req->n_matchers, from, until, NULL, &sl, &ids, &n)) {
        query_sample_labels_free(&sl);
        return MHD_YES;
    }
    query_label_list series = { 0 }, sample = { 0 };
    int failed = query_label_names(c->r, ids, n, NULL, 0, &series) || query_sample_names(&sl, 0, &sample);
    free(ids);
    /* room for service_name too */
    char **names = failed ? NULL : malloc((series.n + sample.n + 1) * sizeof *names);
    enum MHD_Result res;
    if (!names) {
        res = srv_reply_error(c->rq, 500, "out of memory listing label names");
        goto out;
    }
    /* Grafana's: "__" names hidden (the tenant's too), service_name beside service */
    size_t k = 0;
    int service = 0;
    for (size_t i = 0; i < series.n; i++) {
        if (!strncmp(series.items[i].name, "__", 2)) continue;
        service |= !strcmp(series.items[i].name, "service");
        names[k++] = (char *)series.items[i].name;
    }
    if (service) {
        names[k++] = (char *)"service_name";
        k = sort_unique(names, k);
    }
    /* then the sample labels' names (by name), a name met as a series label not repeated */
    size_t series_names = k;
    for (size_t i = 0; i < sample.n; i++)
        if (!bsearch(&sample.items[i].name, names, series_names, sizeof *names, cmp_str))
            names[k++] = (char *)sample.items[i].name;
    Types__V1__LabelNamesResponse resp = TYPES__V1__LABEL_NAMES_RESPONSE__INIT;
    resp.n_names = k;
    resp.names = names;
    res = srv_connect_reply(c->rq, &resp.base);
    free(names);
out:
    query_label_list_free(&series);
    query_label_list_free(&sample);
    query_sample_labels_free(&sl);
    return res;
}

static enum MHD_Result do_label_values(call *c, const ProtobufCMessage *m)
{
    const Types__V1__LabelValuesRequest *req = (const Types__V1__LabelValuesRequest *)m;
    int64_t from, until;
    if (grafana_range(c->rq, req->start, req->end, &from, &until)) return MHD_YES;
    const char *name = req->name && *req->name ? req->name : NULL;
    if (!name) return srv_reply_error(c->rq, 400, "name: the label name is required");
    if (!strcmp(name, "service_name")) name = "service";
    if (c->rq->scoped && !strcmp(name, SRV_TENANT_LABEL))
        return srv_reply_error(c->rq, 400, "name: the label %s is reserved", SRV_TENANT_LABEL);
    uint32_t *ids;
    size_t n;
    /* a name no series carries (never a "__" one) is a sample label's */
    int sample = strncmp(name, "__", 2) && !store_label_name_known(c->r, name);
    query_sample_labels sl = { 0 };
    if (match_any(c->rq, c->r, req->matchers, req->n_matchers, from, until, sample ? name : NULL, sample ? &sl : NULL,
                  &ids, &n)) {
        query_sample_labels_free(&sl);
        return MHD_YES;
    }
    query_value_list values = { 0 };
    ptype *pt = NULL;
    size_t np = 0;
    int failed;
    char **list = NULL;
    if (!strcmp(name, "__profile_type__")) {
        /* the type ids Grafana asks by, not the stored label's values */
        failed = profile_types(c, ids, n, from, until, &pt, &np) || !(list = malloc((np ? np : 1) * sizeof *list));
        for (size_t i = 0; !failed && i < np; i++) list[i] = pt[i].id;
        np = failed ? 0 : sort_unique(list, np);
    } else {
        failed = sample ? query_sample_values(&sl, name, 0, &values)
                        : query_label_values(c->r, ids, n, name, 0, &values);
    }
    free(ids);
    enum MHD_Result res;
    if (failed) {
        res = srv_reply_error(c->rq, 500, "out of memory listing label values");
    } else {
        Types__V1__LabelValuesResponse resp = TYPES__V1__LABEL_VALUES_RESPONSE__INIT;
        resp.n_names = list ? np : values.n;
        resp.names = list ? list : (char **)values.items;
        res = srv_connect_reply(c->rq, &resp.base);
    }
    free(list);
    free(pt);
    query_value_list_free(&values);
    query_sample_labels_free(&sl);
    return res;
}

static int cmp_pair(const void *a, const void *b)
{
    const Types__V1__LabelPair *x = *(Types__V1__LabelPair *const *)a, *y = *(Types__V1__LabelPair *const *)b;
    return strcmp(x->name, y->name);
}

/* A label set as "n\1v\1n\1v": for finding equal sets. */
static int cmp_labels(const void *a, const void *b)
{
    const Types__V1__Labels *x = *(Types__V1__Labels *const *)a, *y = *(Types__V1__Labels *const *)b;
    for (size_t i = 0; i < x->n_labels && i < y->n_labels; i++) {
        int c = strcmp(x->labels[i]->name, y->labels[i]->name);
        if (!c) c = strcmp(x->labels[i]->value, y->labels[i]->value);
        if (c) return c;
    }
    return (x->n_labels > y->n_labels) - (x->n_labels < y->n_labels);
}

static int wanted(const Querier__V1__SeriesRequest *req, const char *name)
{
    if (!req->n_label_names) return 1;
    for (size_t i = 0; i < req->n_label_names; i++)
        if (!strcmp(req->label_names[i], name)) return 1;
    return 0;
}

/* Series: each series' labels (service_name beside service, the tenant's
 * label left out), __profile_type__ and __name__ once per unit it has;
 * only label_names when given; equal sets once. */
static enum MHD_Result do_series(call *c, const ProtobufCMessage *m)
{
    const Querier__V1__SeriesRequest *req = (const Querier__V1__SeriesRequest *)m;
    int64_t from, until;
    if (grafana_range(c->rq, req->start, req->end, &from, &until)) return MHD_YES;
    uint32_t *ids;
    size_t n;
    if (match_any(c->rq, c->r, req->matchers, req->n_matchers, from, until, NULL, NULL, &ids, &n)) return MHD_YES;
    if (query_series_sort(c->r, ids, n)) { /* by labels: ids follow push order */
        free(ids);
        return srv_reply_error(c->rq, 500, "out of memory sorting series");
    }
    size_t cap = n * QUERY_MAX_UNITS + 1, k = 0;
    Types__V1__Labels **sets = pool_alloc(&c->pl, cap * sizeof *sets);
    store_label labels[64];
    for (size_t i = 0; sets && i < n && !c->pl.failed; i++) {
        int nl = store_series_labels(c->r, ids[i], labels, 64);
        if (nl > 64) nl = 64;
        const char *type = store_series_label(c->r, ids[i], "type");
        query_unit_set us;
        query_series_units(c->r, ids[i], from, until, &us);
        for (int u = 0; u < us.n && !c->pl.failed; u++) {
            ptype pt;
            ptype_of(type ? type : "cpu", us.units[u], &pt);
            Types__V1__LabelPair **pairs = pool_alloc(&c->pl, ((size_t)nl + 3) * sizeof *pairs);
            size_t np = 0;
            for (int j = 0; pairs && j < nl + 3; j++) {
                const char *name, *value;
                if (j < nl) {
                    name = labels[j].name;
                    value = labels[j].value;
                    if (c->rq->scoped && !strcmp(name, SRV_TENANT_LABEL)) continue;
                } else if (j == nl) {
                    name = "__profile_type__";
                    value = pt.id;
                } else if (j == nl + 1) {
                    name = "__name__";
                    value = pt.name;
                } else {
                    name = "service_name";
                    value = store_series_label(c->r, ids[i], "service");
                    if (!value) continue;
                }
                if (!wanted(req, name)) continue;
                Types__V1__LabelPair *p = pool_alloc(&c->pl, sizeof *p);
                if (!p) break;
                Types__V1__LabelPair init = TYPES__V1__LABEL_PAIR__INIT;
                *p = init;
                p->name = pool_strdup(&c->pl, name);
                p->value = pool_strdup(&c->pl, value);
                pairs[np++] = p;
            }
            if (c->pl.failed) break;
            if (np > 1) qsort(pairs, np, sizeof *pairs, cmp_pair);
            Types__V1__Labels *set = pool_alloc(&c->pl, sizeof *set);
            if (!set) break;
            Types__V1__Labels init = TYPES__V1__LABELS__INIT;
            *set = init;
            set->labels = pairs;
            set->n_labels = np;
            sets[k++] = set;
        }
    }
    free(ids);
    if (c->pl.failed) return srv_reply_error(c->rq, 500, "out of memory listing series");
    if (k > 1) qsort(sets, k, sizeof *sets, cmp_labels);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || cmp_labels(&sets[u - 1], &sets[i])) sets[u++] = sets[i];
    Querier__V1__SeriesResponse resp = QUERIER__V1__SERIES_RESPONSE__INIT;
    resp.n_labels_set = u;
    resp.labels_set = sets;
    return srv_connect_reply(c->rq, &resp.base);
}

/* The side a SelectMerge* call asks (query/side.c): its type's series
 * matching the selector (of the given spans only, when spans), merged in
 * the ID's unit.  Answers 0 with s resolved and merged, or replies and
 * answers -1 with s freed. */
static int select_merge(call *c, const char *type_id, const char *selector, char *const *spans, size_t n_spans,
                        int64_t start, int64_t end, query_side *s)
{
    char type[128], unit[64], err[512];
    int64_t from, until;
    memset(s, 0, sizeof *s);
    if (!type_id || ptype_parse(type_id, type, sizeof type, unit, sizeof unit)) {
        srv_reply_error(c->rq, 400, "profile_typeID '%s': expected name:sample_type:sample_unit:period_type:period_unit "
                        "(ProfileTypes lists them)", type_id ? type_id : "");
        return -1;
    }
    if (grafana_range(c->rq, start, end, &from, &until)) return -1;
    query_selector sel;
    if (grafana_selector(c->rq, "label_selector", selector, type, &sel)) return -1;
    query_side_init(s, &sel, from, until);
    if (srv_side_resolve(c->rq, c->r, s)) {
        /* replied */
    } else if (spans && query_sample_spans(&s->set, spans, n_spans, err, sizeof err)) {
        srv_reply_error(c->rq, 400, "%s", err);
    } else {
        int mrc = query_side_merge(s, c->r, unit, err, sizeof err);
        if (!mrc) return 0;
        srv_reply_error(c->rq, srv_status_of_merge(mrc), "%s", err);
    }
    query_side_free(s);
    return -1;
}

/* The flame graph of levels l, pointing into it (and into c's pool). */
static Querier__V1__FlameGraph *flame_graph(call *c, const query_levels *l)
{
    Querier__V1__FlameGraph *fg = pool_alloc(&c->pl, sizeof *fg);
    Querier__V1__Level *lv = pool_alloc(&c->pl, l->n_levels * sizeof *lv);
    Querier__V1__Level **lvp = pool_alloc(&c->pl, l->n_levels * sizeof *lvp);
    char **names = pool_alloc(&c->pl, l->n_names * sizeof *names);
    if (c->pl.failed) return NULL;
    Querier__V1__FlameGraph init = QUERIER__V1__FLAME_GRAPH__INIT;
    *fg = init;
    for (size_t i = 0; i < l->n_levels; i++) {
        Querier__V1__Level li = QUERIER__V1__LEVEL__INIT;
        li.n_values = l->levels[i].n;
        li.values = l->levels[i].v;
        lv[i] = li;
        lvp[i] = &lv[i];
    }
    /* names are whole NUL-terminated strings: the reader keeps no lines */
    for (size_t i = 0; i < l->n_names; i++) names[i] = (char *)l->names[i];
    fg->n_names = l->n_names;
    fg->names = names;
    fg->n_levels = l->n_levels;
    fg->levels = lvp;
    fg->total = l->total;
    fg->max_self = l->max_self;
    return fg;
}

/* Answers s's tree as a flame graph (SelectMergeStacktraces' or
 * SelectMergeSpanProfile's answer, the same fields) and frees s. */
static enum MHD_Result reply_flame_graph(call *c, query_side *s, int64_t max_nodes_req, int span)
{
    const query_tree *t = &s->tree;
    query_levels l;
    enum MHD_Result res;
    size_t max_nodes = max_nodes_req ? (size_t)max_nodes_req : DEFAULT_MAX_NODES;
    if (query_levels_build(c->r, t, max_nodes, &l)) {
        res = srv_reply_error(c->rq, 500, "out of memory building the flame graph");
    } else {
        Querier__V1__FlameGraph *fg = flame_graph(c, &l);
        if (!fg) {
            res = srv_reply_error(c->rq, 500, "out of memory building the flame graph");
        } else if (span) {
            Querier__V1__SelectMergeSpanProfileResponse resp = QUERIER__V1__SELECT_MERGE_SPAN_PROFILE_RESPONSE__INIT;
            resp.flamegraph = fg;
            res = srv_connect_reply(c->rq, &resp.base);
        } else {
            Querier__V1__SelectMergeStacktracesResponse resp = QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
            resp.flamegraph = fg;
            res = srv_connect_reply(c->rq, &resp.base);
        }
        query_levels_free(&l);
    }
    query_side_free(s);
    return res;
}

static enum MHD_Result do_select_merge_stacktraces(call *c, const ProtobufCMessage *m)
{
    const Querier__V1__SelectMergeStacktracesRequest *req = (const Querier__V1__SelectMergeStacktracesRequest *)m;
    query_side s;
    if (req->max_nodes < 0) return srv_reply_error(c->rq, 400, "max_nodes: must be 0 (the default) or more");
    if (select_merge(c, req->profile_typeid, req->label_selector, NULL, 0, req->start, req->end, &s)) return MHD_YES;
    return reply_flame_graph(c, &s, req->max_nodes, 0);
}

/* The merged flame graph of given spans: SelectMergeStacktraces' answer for
 * the stacks whose sample label span_id is one of span_selector
 * (query_sample_spans). */
static enum MHD_Result do_select_merge_span_profile(call *c, const ProtobufCMessage *m)
{
    const Querier__V1__SelectMergeSpanProfileRequest *req = (const Querier__V1__SelectMergeSpanProfileRequest *)m;
    query_side s;
    if (req->max_nodes < 0) return srv_reply_error(c->rq, 400, "max_nodes: must be 0 (the default) or more");
    if (select_merge(c, req->profile_typeid, req->label_selector, req->span_selector, req->n_span_selector,
                     req->start, req->end, &s))
        return MHD_YES;
    return reply_flame_graph(c, &s, req->max_nodes, 1);
}

/* pprof, as /api/v1/query?format=pprof writes it, not gzip'd (the Connect
 * answer is the message itself). */
static enum MHD_Result do_select_merge_profile(call *c, const ProtobufCMessage *m)
{
    const Querier__V1__SelectMergeProfileRequest *req = (const Querier__V1__SelectMergeProfileRequest *)m;
    query_side s;
    if (select_merge(c, req->profile_typeid, req->label_selector, NULL, 0, req->start, req->end, &s)) return MHD_YES;
    size_t gz_len = 0, len = 0;
    char *gz = query_tree_pprof(c->r, &s.tree, s.set.type, s.from, s.until, &gz_len), *raw = NULL, err[256];
    enum MHD_Result res;
    if (!gz || ingest_gunzip(gz, gz_len, SIZE_MAX / 2, &raw, &len, err, sizeof err) != INGEST_OK)
        res = srv_reply_error(c->rq, 500, "out of memory encoding pprof");
    else
        res = srv_connect_reply_packed(c->rq, &perftools__profiles__profile__descriptor, raw, len);
    free(gz);
    query_side_free(&s);
    return res;
}

/* A timeline's points as Points (timestamps in ms); their sum in *sum. */
static Types__V1__Point **points_of(call *c, const query_timeline_result *tl, double *sum)
{
    Types__V1__Point *pts = pool_alloc(&c->pl, tl->n * sizeof *pts);
    Types__V1__Point **ptrs = pool_alloc(&c->pl, tl->n * sizeof *ptrs);
    *sum = 0;
    if (c->pl.failed) return NULL;
    for (size_t i = 0; i < tl->n; i++) {
        Types__V1__Point init = TYPES__V1__POINT__INIT;
        pts[i] = init;
        pts[i].timestamp = tl->points[i].t_ms;
        pts[i].value = query_point_value(&tl->points[i]);
        *sum += pts[i].value;
        ptrs[i] = &pts[i];
    }
    return ptrs;
}

typedef struct {
    Types__V1__Series *s;
    double sum;
} ranked_series;

static int by_sum_desc(const void *a, const void *b)
{
    double x = ((const ranked_series *)a)->sum, y = ((const ranked_series *)b)->sum;
    return (x < y) - (x > y);
}

static enum MHD_Result do_select_series(call *c, const ProtobufCMessage *m)
{
    const Querier__V1__SelectSeriesRequest *req = (const Querier__V1__SelectSeriesRequest *)m;
    char type[128], unit[64];
    if (!req->profile_typeid || ptype_parse(req->profile_typeid, type, sizeof type, unit, sizeof unit))
        return srv_reply_error(c->rq, 400, "profile_typeID '%s': expected name:sample_type:sample_unit:period_type:"
                               "period_unit", req->profile_typeid ? req->profile_typeid : "");
    if (!(req->step >= 0) || req->step > 1e9) return srv_reply_error(c->rq, 400, "step: seconds, 0 for the default");
    if (req->limit < 0) return srv_reply_error(c->rq, 400, "limit: must be 0 (no limit) or more");
    int64_t from, until;
    if (grafana_range(c->rq, req->start, req->end, &from, &until)) return MHD_YES;
    int64_t step = req->step > 0 ? (int64_t)llround(req->step * 1000) : query_timeline_default_step(from, until);
    if (step < 1000) step = 1000;
    if ((until - from) / step > 100000)
        return srv_reply_error(c->rq, 400, "step: %.3f s makes more than 100000 points over the range", req->step);
    query_group_by by = { .n_keys = 0 };
    if (req->n_group_by > QUERY_MAX_GROUP_KEYS)
        return srv_reply_error(c->rq, 400, "group_by: at most %d labels", QUERY_MAX_GROUP_KEYS);
    for (size_t i = 0; i < req->n_group_by; i++) {
        const char *k = !strcmp(req->group_by[i], "service_name") ? "service" : req->group_by[i];
        if (c->rq->scoped && !strcmp(k, SRV_TENANT_LABEL)) {
            query_group_by_free(&by);
            return srv_reply_error(c->rq, 400, "group_by: the label %s is reserved", SRV_TENANT_LABEL);
        }
        by.keys[by.n_keys++] = strdup(k);
    }
    query_selector sel;
    if (grafana_selector(c->rq, "label_selector", req->label_selector, type, &sel)) {
        query_group_by_free(&by);
        return MHD_YES;
    }
    query_series_set set;
    int rc = srv_resolve(c->rq, c->r, &sel, from, until, &set);
    query_selector_free(&sel);
    if (rc) {
        query_group_by_free(&by);
        return MHD_YES;
    }
    if (set.sample.n_matchers) {
        srv_reply_error(c->rq, 400, "label_selector: %s names sample labels, which SelectSeries cannot select "
                        "(it reads profile totals)", set.sample_key);
        query_series_set_free(&set);
        query_group_by_free(&by);
        return MHD_YES;
    }
    query_group *groups = NULL;
    size_t ng = 0;
    enum MHD_Result res = MHD_YES;
    if (by.n_keys && srv_groups_split(c->rq, "group_by", c->r, &set, &by, from, until, 0, &groups, &ng)) goto out;
    size_t nparts = by.n_keys ? ng : 1;
    ranked_series *rs = pool_alloc(&c->pl, nparts * sizeof *rs);
    size_t k = 0;
    for (size_t g = 0; rs && g < nparts; g++) {
        const query_series_set *part = by.n_keys ? &groups[g].set : &set;
        if (!part->n_series) continue;
        query_timeline_result tl;
        int trc = query_timeline(c->r, part, from, until, step, &tl);
        if (trc) {
            res = trc == QUERY_ETOOBIG ? srv_reply_error(c->rq, 422, "a step's values add up past 2^63: narrow the range")
                                       : srv_reply_json(c->rq, 500, NULL);
            goto out;
        }
        Types__V1__Series *s = pool_alloc(&c->pl, sizeof *s);
        if (!s) {
            query_timeline_free(&tl);
            break;
        }
        Types__V1__Series init = TYPES__V1__SERIES__INIT;
        *s = init;
        double sum;
        s->points = points_of(c, &tl, &sum);
        s->n_points = s->points ? tl.n : 0;
        query_timeline_free(&tl);
        size_t nl = by.n_keys;
        s->labels = pool_alloc(&c->pl, (nl ? nl : 1) * sizeof *s->labels);
        for (size_t i = 0; s->labels && i < nl; i++) {
            Types__V1__LabelPair *p = pool_alloc(&c->pl, sizeof *p);
            if (!p) break;
            Types__V1__LabelPair pi = TYPES__V1__LABEL_PAIR__INIT;
            *p = pi;
            p->name = pool_strdup(&c->pl, req->group_by[i]);
            p->value = pool_strdup(&c->pl, groups[g].values[i]);
            s->labels[s->n_labels++] = p;
        }
        rs[k].s = s;
        rs[k++].sum = sum;
    }
    if (c->pl.failed) {
        res = srv_reply_error(c->rq, 500, "out of memory building the series");
        goto out;
    }
    /* the largest first; limit keeps the top ones */
    if (k > 1) qsort(rs, k, sizeof *rs, by_sum_desc);
    if (req->limit && (size_t)req->limit < k) k = (size_t)req->limit;
    Types__V1__Series **list = pool_alloc(&c->pl, (k ? k : 1) * sizeof *list);
    if (!list) {
        res = srv_reply_error(c->rq, 500, "out of memory building the series");
        goto out;
    }
    for (size_t i = 0; i < k; i++) list[i] = rs[i].s;
    Querier__V1__SelectSeriesResponse resp = QUERIER__V1__SELECT_SERIES_RESPONSE__INIT;
    resp.n_series = k;
    resp.series = list;
    res = srv_connect_reply(c->rq, &resp.base);
out:
    query_groups_free(groups, ng);
    query_series_set_free(&set);
    query_group_by_free(&by);
    return res;
}

static enum MHD_Result do_get_profile_stats(call *c, const ProtobufCMessage *m)
{
    (void)m; /* GetProfileStatsRequest has no fields */
    query_selector sel;
    if (grafana_selector(c->rq, "selector", "{}", NULL, &sel)) return MHD_YES;
    query_extent e;
    int rc = query_extent_find(c->r, &sel, &e);
    query_selector_free(&sel);
    if (rc) return srv_reply_error(c->rq, 500, "out of memory finding the profiles");
    Types__V1__GetProfileStatsResponse resp = TYPES__V1__GET_PROFILE_STATS_RESPONSE__INIT;
    resp.data_ingested = e.found;
    if (e.found) {
        resp.oldest_profile_time = e.earliest_from_ms;
        resp.newest_profile_time = e.latest_until_ms;
    }
    return srv_connect_reply(c->rq, &resp.base);
}

/* ---- dispatch ------------------------------------------------------------- */

typedef enum MHD_Result (*method_fn)(call *c, const ProtobufCMessage *req);

typedef struct {
    const char *name;
    const ProtobufCMessageDescriptor *req;
    method_fn fn;
} method;

static const method methods[] = {
    { "ProfileTypes", &querier__v1__profile_types_request__descriptor, do_profile_types },
    { "LabelNames", &types__v1__label_names_request__descriptor, do_label_names },
    { "LabelValues", &types__v1__label_values_request__descriptor, do_label_values },
    { "Series", &querier__v1__series_request__descriptor, do_series },
    { "SelectMergeStacktraces", &querier__v1__select_merge_stacktraces_request__descriptor,
      do_select_merge_stacktraces },
    { "SelectMergeSpanProfile", &querier__v1__select_merge_span_profile_request__descriptor,
      do_select_merge_span_profile },
    { "SelectMergeProfile", &querier__v1__select_merge_profile_request__descriptor,
      do_select_merge_profile },
    { "SelectSeries", &querier__v1__select_series_request__descriptor, do_select_series },
    { "GetProfileStats", &types__v1__get_profile_stats_request__descriptor, do_get_profile_stats },
};

enum MHD_Result srv_handle_connect(srv_request *rq)
{
    const method *m = NULL;
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (!strcmp(methods[i].name, rq->route_arg)) m = &methods[i];
    if (!m)
        return srv_connect_error(rq, 404, "unimplemented",
                                 "querier.v1.QuerierService/%s is not a method flamedb answers (it answers "
                                 "ProfileTypes, LabelNames, LabelValues, Series, SelectMergeStacktraces, "
                                 "SelectMergeSpanProfile, SelectMergeProfile, SelectSeries, GetProfileStats)", rq->route_arg);
    ProtobufCMessage *req;
    if (srv_connect_read(rq, m->req, &req)) return MHD_YES;
    call c = { .rq = rq };
    enum MHD_Result res;
    if (srv_reader_begin(rq, &c.r)) {
        res = MHD_YES;
    } else {
        res = m->fn(&c, req);
        srv_reader_end(rq, c.r);
    }
    pool_free(&c.pl);
    protobuf_c_message_free_unpacked(req, NULL);
    return res;
}

/* ---- Pyroscope's render ----------------------------------------------------- */

/* Reads a render side (query/side.c) from param and its range:
 * query=ID{selector} (Pyroscope 1.x) or query=selector, type and unit from
 * the ID when given, else the type query_resolve picks and the unit with
 * the most profiles.  Replies itself on error, with the side freed. */
static int render_side_read(srv_request *rq, store_reader *r, const char *param, const char *from_name,
                            const char *until_name, query_side *s)
{
    char err[512];
    int64_t from, until;
    memset(s, 0, sizeof *s);
    const char *q = srv_param(rq, param);
    if (!q) {
        srv_reply_error(rq, 400, "parameter '%s' is required: a profile type ID and a selector, e.g. "
                        "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"api\"}", param);
        return -1;
    }
    if (srv_time_range(rq, from_name, until_name, SRV_DEFAULT_RANGE_MS, &from, &until)) return -1;
    char type[128] = "", unit[64] = "", id[400];
    const char *brace = strchr(q, '{');
    size_t idlen = brace ? (size_t)(brace - q) : strlen(q);
    int has_id = idlen < sizeof id && memchr(q, ':', idlen);
    if (has_id) {
        snprintf(id, sizeof id, "%.*s", (int)idlen, q);
        if (ptype_parse(id, type, sizeof type, unit, sizeof unit)) {
            srv_reply_error(rq, 400, "parameter '%s': '%s' is not a profile type ID "
                            "name:sample_type:sample_unit:period_type:period_unit", param, id);
            return -1;
        }
    }
    char field[64];
    snprintf(field, sizeof field, "parameter '%s'", param);
    query_selector sel;
    if (grafana_selector(rq, field, has_id ? (brace ? brace : "{}") : q, has_id ? type : NULL, &sel)) return -1;
    query_side_init(s, &sel, from, until);
    if (!srv_side_resolve(rq, r, s)) {
        int mrc = query_side_merge(s, r, has_id ? unit : NULL, err, sizeof err);
        if (!mrc) return 0;
        srv_reply_error(rq, srv_status_of_merge(mrc), "%s", err);
    }
    query_side_free(s);
    return -1;
}

/* Pyroscope's units: samples, objects, bytes, or the unit itself. */
static const char *render_units(const char *unit)
{
    if (!strcmp(unit, "nanoseconds")) return "samples"; /* CPU time: the UI formats it as time with sampleRate */
    if (!strcmp(unit, "count")) return "objects";
    return unit;
}

/* What render and render-diff read first: format (json only), max-nodes,
 * the reader; 0, or the error answered and -1. */
static int render_begin(srv_request *rq, uint64_t *max_nodes, store_reader **r)
{
    const char *format = srv_param(rq, "format");
    if (format && strcmp(format, "json")) {
        srv_reply_error(rq, 400, "parameter 'format': only json (flamebearer) is answered, not '%s'", format);
        return -1;
    }
    if (srv_param_uint(rq, "max-nodes", DEFAULT_MAX_NODES, UINT32_MAX, max_nodes)) return -1;
    return srv_reader_begin(rq, r);
}

/* {"version":1,"flamebearer":{"names","levels","numTicks","maxSelf"},
 *  "metadata":{"format":"single","units","sampleRate","spyName","name"},
 *  "timeline":null} */
enum MHD_Result srv_handle_render(srv_request *rq)
{
    uint64_t max_nodes;
    store_reader *r;
    if (render_begin(rq, &max_nodes, &r)) return MHD_YES;
    query_side s;
    enum MHD_Result res = MHD_YES;
    if (render_side_read(rq, r, "query", "from", "until", &s)) goto out;
    query_levels l;
    if (query_levels_build(r, &s.tree, (size_t)max_nodes, &l)) {
        res = srv_reply_error(rq, 500, "out of memory building the flame graph");
        query_side_free(&s);
        goto out;
    }
    query_buf b = { 0 };
    /* nanoseconds are shown as samples of 1e9 / sampleRate ns: a rate of 1e9 keeps them exact */
    int ns = !strcmp(s.tree.unit, "nanoseconds");
    query_buf_puts(&b, "{\"version\":1,\"flamebearer\":{");
    query_levels_json_write(&b, &l);
    query_buf_puts(&b, ",\"numTicks\":");
    query_buf_i64(&b, l.total);
    query_buf_puts(&b, ",\"maxSelf\":");
    query_buf_i64(&b, l.max_self);
    query_buf_puts(&b, "},\"metadata\":");
    json_t *meta = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s}", "format", "single", "units", render_units(s.tree.unit),
                             "sampleRate", (json_int_t)(ns ? 1000000000 : 100), "spyName", "flamedb", "name",
                             s.set.type[0] ? s.set.type : "profile", "aggregation", query_aggregation_name(&s.tree));
    query_buf_json(&b, meta);
    json_decref(meta);
    query_buf_puts(&b, ",\"timeline\":null}\n");
    query_levels_free(&l);
    query_side_free(&s);
    size_t len;
    char *text = query_buf_take(&b, &len);
    res = text ? srv_reply_bytes(rq, 200, "application/json", text, len, 1)
               : srv_reply_error(rq, 500, "out of memory encoding the answer");
out:
    srv_reader_end(rq, r);
    return res;
}

/* Pyroscope's diff: leftQuery, leftFrom, leftUntil and the same for right
 * (each as render's query); one reader, so the two merges share node ids.
 * {"version":1,"flamebearer":{...7 values a node...},"metadata":{"format":
 * "double",...},"leftTicks","rightTicks","timeline":null} */
enum MHD_Result srv_handle_render_diff(srv_request *rq)
{
    uint64_t max_nodes;
    store_reader *r;
    if (render_begin(rq, &max_nodes, &r)) return MHD_YES;
    query_side a, b;
    enum MHD_Result res = MHD_YES;
    if (render_side_read(rq, r, "leftQuery", "leftFrom", "leftUntil", &a)) goto out;
    if (render_side_read(rq, r, "rightQuery", "rightFrom", "rightUntil", &b)) {
        query_side_free(&a);
        goto out;
    }
    query_levels l;
    if (strcmp(a.tree.unit, b.tree.unit) && a.tree.grand_total && b.tree.grand_total) {
        res = srv_reply_error(rq, 400, "leftQuery is in %s, rightQuery in %s: a diff compares one unit (give both "
                              "the same profile type ID)", a.tree.unit, b.tree.unit);
    } else if (query_levels_diff_build(r, &a.tree, &b.tree, (size_t)max_nodes, &l)) {
        res = srv_reply_error(rq, 500, "out of memory building the flame graph");
    } else {
        const char *unit = a.tree.grand_total ? a.tree.unit : b.tree.unit;
        int ns = !strcmp(unit, "nanoseconds");
        query_buf buf = { 0 };
        query_buf_puts(&buf, "{\"version\":1,\"flamebearer\":{");
        query_levels_json_write(&buf, &l);
        query_buf_puts(&buf, ",\"numTicks\":");
        query_buf_i64(&buf, l.total);
        query_buf_puts(&buf, ",\"maxSelf\":");
        query_buf_i64(&buf, l.max_self);
        query_buf_puts(&buf, "},\"metadata\":");
        json_t *meta = json_pack("{s:s,s:s,s:I,s:s,s:s}", "format", "double", "units", render_units(unit),
                                 "sampleRate", (json_int_t)(ns ? 1000000000 : 100), "spyName", "flamedb", "name",
                                 a.set.type[0] ? a.set.type : b.set.type[0] ? b.set.type : "profile");
        query_buf_json(&buf, meta);
        json_decref(meta);
        query_buf_puts(&buf, ",\"leftTicks\":");
        query_buf_i64(&buf, l.left_total);
        query_buf_puts(&buf, ",\"rightTicks\":");
        query_buf_i64(&buf, l.right_total);
        query_buf_puts(&buf, ",\"timeline\":null}\n");
        query_levels_free(&l);
        size_t len;
        char *text = query_buf_take(&buf, &len);
        res = text ? srv_reply_bytes(rq, 200, "application/json", text, len, 1)
                   : srv_reply_error(rq, 500, "out of memory encoding the answer");
    }
    query_side_free(&a);
    query_side_free(&b);
out:
    srv_reader_end(rq, r);
    return res;
}
