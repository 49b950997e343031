/* hotspot_handlers.c — GET /api/v1/hotspots/metrics: hotspot shares in
 * Prometheus text format, for a Prometheus server to scrape and alert on.
 *
 * Over the last `range` (from = now − range, until = now) the series that
 * match `query` are split by `group_by` (default service), each group is
 * merged, and its top k functions by self value (query_top's ranking)
 * with a self value above 0 become one gauge each:
 *
 *   flamedb_hotspot_self_share{service="api",function="main.work"} 0.42
 *
 * Group label names get '.' replaced by '_' (Prometheus names), a group key
 * named "function" becomes "group_function"; values are escaped per the
 * text format (backslash, double quote, newline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

#define DEFAULT_K 10
#define DEFAULT_RANGE_MS 60000

typedef struct { char *buf; size_t len, cap; int oom; } text;

static void put(text *t, const char *s, size_t n)
{
    if (t->oom) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->cap + n) * 2;
        char *nb = realloc(t->buf, cap);
        if (!nb) {
            t->oom = 1;
            return;
        }
        t->buf = nb;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void puts_(text *t, const char *s) { put(t, s, strlen(s)); }

/* A label value escaped per the Prometheus text format. */
static void put_value(text *t, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\') puts_(t, "\\\\");
        else if (*v == '"') puts_(t, "\\\"");
        else if (*v == '\n') puts_(t, "\\n");
        else put(t, v, 1);
    }
}

/* A label name: '.' (allowed in flamedb label names) becomes '_'. */
static void put_name(text *t, const char *n)
{
    if (!strcmp(n, "function")) n = "group_function";
    for (; *n; n++) put(t, *n == '.' ? "_" : n, 1);
}

/* The gauges of one merged group. */
static int put_group(text *t, store_reader *r, const query_group_by *by, const query_group *g, const query_tree *tree,
                     size_t k)
{
    query_top_result top;
    query_top_opts o = { .limit = k, .order = QUERY_TOP_SELF };
    if (query_top(r, tree, &o, &top)) return -1;
    for (size_t i = 0; i < top.n; i++) {
        const query_top_row *f = &top.rows[i];
        if (!f->self) continue; /* not a hotspot */
        puts_(t, "flamedb_hotspot_self_share{");
        for (size_t j = 0; j < by->n_keys; j++) {
            put_name(t, by->keys[j]);
            puts_(t, "=\"");
            put_value(t, g->values[j]);
            puts_(t, "\",");
        }
        puts_(t, "function=\"");
        put_value(t, f->name);
        char num[64];
        snprintf(num, sizeof num, "\"} %.9g\n", f->self_share);
        puts_(t, num);
    }
    query_top_free(&top);
    return 0;
}

enum MHD_Result srv_handle_hotspots(srv_request *rq)
{
    char err[512];
    uint64_t k;
    int64_t range;
    int present;
    query_group_by by;
    query_selector sel;
    if (srv_param_uint(rq, "k", DEFAULT_K, 10000, &k)) return MHD_YES;
    if (srv_param_duration(rq, "range", DEFAULT_RANGE_MS, &range)) return MHD_YES;
    if (srv_group_by(rq, "group_by", &by, &present)) return MHD_YES;
    if (!present && query_group_by_parse("service", &by, err, sizeof err))
        return srv_reply_error(rq, 500, "%s", err);
    if (srv_selector(rq, "query", "{}", &sel)) {
        query_group_by_free(&by);
        return MHD_YES;
    }
    int64_t until = srv_now_ms(), from = until - range;
    store_reader *r;
    enum MHD_Result res;
    if (srv_reader_begin(rq, &r)) {
        query_selector_free(&sel);
        query_group_by_free(&by);
        return MHD_YES;
    }
    query_series_set set;
    query_group *g = NULL;
    size_t ng = 0;
    text t = { 0 };
    puts_(&t, "# HELP flamedb_hotspot_self_share Share of the group's samples whose leaf frame is the function, "
              "over the last range.\n# TYPE flamedb_hotspot_self_share gauge\n");
    if (srv_resolve(rq, r, &sel, from, until, &set)) {
        res = MHD_YES;
        goto out;
    }
    if (srv_groups_split(rq, "group_by", r, &set, &by, from, until, 0, &g, &ng)) {
        res = MHD_YES;
        goto out_set;
    }
    for (size_t i = 0; i < ng; i++) {
        query_tree tree;
        int mrc;
        if ((mrc = query_merge(r, &g[i].set, from, until, &tree, err, sizeof err))) {
            res = srv_reply_error(rq, srv_status_of_merge(mrc), "%s", err);
            goto out_groups;
        }
        int rc = put_group(&t, r, &by, &g[i], &tree, (size_t)k);
        query_tree_free(&tree);
        if (rc) t.oom = 1;
    }
    if (t.oom) {
        res = srv_reply_error(rq, 500, "out of memory");
    } else {
        res = srv_reply_bytes(rq, 200, "text/plain; version=0.0.4; charset=utf-8", t.buf, t.len, 1);
        t.buf = NULL;
    }
out_groups:
    query_groups_free(g, ng);
out_set:
    query_series_set_free(&set);
out:
    free(t.buf);
    srv_reader_end(rq, r);
    query_selector_free(&sel);
    query_group_by_free(&by);
    return res;
}
