/* analysis_handlers.c — the query engine's questions over HTTP:
 * /api/v1/top, /stability, /compare, /diff, /timeline, /variance, and
 * DELETE /api/v1/series.
 *
 * Each handler reads and checks its parameters (400 naming the one at
 * fault), opens one read snapshot, asks query/ for the answer and encodes
 * it.  A side (query/side.c) is a selector over a time range, resolved and
 * merged; compare and diff have two (left and right, each with optional left_from,
 * left_until, right_from, right_until over the shared from and until).
 * The answers of one side (top, stability, timeline, variance) say where
 * the selector's profiles are when its range held none (with_head). */
#include <stdlib.h>
#include <string.h>

#include "srv.h"

#define MAX_WINDOWS 10000

/* Reads a side: selector parameter qname (def when absent, NULL:
 * required) and its range, from prefix_from/prefix_until when given, else
 * from/until.  Replies itself on error. */
static int side_read(srv_request *rq, const char *qname, const char *def, const char *prefix, query_side *s)
{
    memset(s, 0, sizeof *s);
    query_selector sel;
    if (srv_selector(rq, qname, def, &sel)) return -1;
    query_side_init(s, &sel, 0, 0);
    if (srv_time_range(rq, "from", "until", SRV_DEFAULT_RANGE_MS, &s->from, &s->until)) return -1;
    if (prefix) {
        /* Each override replaces only its own bound. */
        char fn[32], un[32], err[256];
        snprintf(fn, sizeof fn, "%s_from", prefix);
        snprintf(un, sizeof un, "%s_until", prefix);
        const char *f = srv_param(rq, fn), *u = srv_param(rq, un);
        int64_t now = srv_now_ms();
        if (f && query_time_parse(f, now, &s->from, err, sizeof err)) {
            srv_reply_error(rq, 400, "parameter '%s': %s", fn, err);
            return -1;
        }
        if (u && query_time_parse(u, now, &s->until, err, sizeof err)) {
            srv_reply_error(rq, 400, "parameter '%s': %s", un, err);
            return -1;
        }
        if ((f || u) && s->from >= s->until) {
            srv_reply_error(rq, 400, "parameters '%s' and '%s': the %s range must start before it ends", fn, un, prefix);
            return -1;
        }
    }
    return 0;
}

/* Resolved and merged (query_side_merge); replies itself on error. */
static int side_merge(srv_request *rq, store_reader *r, query_side *s)
{
    char err[256];
    if (srv_side_resolve(rq, r, s)) return -1;
    int mrc = query_side_merge(s, r, NULL, err, sizeof err);
    if (mrc) {
        srv_reply_error(rq, srv_status_of_merge(mrc), "%s", err);
        return -1;
    }
    return 0;
}

static store_reader *begin(srv_request *rq)
{
    store_reader *r;
    return srv_reader_begin(rq, &r) ? NULL : r;
}

/* Adds the common head of an answer: type, unit, from, until, other_types;
 * and when the range held no profile of the selector, where its profiles
 * are ("latest", "earliest": query_extent_json). */
static json_t *with_head(json_t *o, store_reader *r, const query_side *s, const char *unit)
{
    if (!o) return NULL;
    json_t *others = json_array();
    for (size_t i = 0; others && i < s->set.n_other_types; i++) json_array_append_new(others, json_string(s->set.other_types[i]));
    json_object_set_new(o, "type", s->set.type[0] ? json_string(s->set.type) : json_null());
    if (unit) json_object_set_new(o, "unit", json_string(unit));
    json_object_set_new(o, "from", query_time_json(s->from));
    json_object_set_new(o, "until", query_time_json(s->until));
    json_object_set_new(o, "other_types", others);
    query_extent ext;
    if (!s->set.n_series && query_extent_find(r, &s->sel, &ext) == 0) query_extent_json(o, &ext);
    return o;
}

/* Every group merged, by total descending (query_groups_merge); replies
 * the error itself and answers NULL. */
static query_group_tree *merge_groups(srv_request *rq, store_reader *r, const query_group *g, size_t n,
                                      int64_t from, int64_t until)
{
    char err[256];
    query_group_tree *m;
    int rc = query_groups_merge(r, g, n, from, until, &m, err, sizeof err);
    if (rc) srv_reply_error(rq, srv_status_of_merge(rc), "%s", err);
    return rc ? NULL : m;
}

/* ---- /api/v1/top ------------------------------------------------------ */

/* A tree's ranked functions, JSON-encoded; NULL when out of memory. */
static json_t *top_json(store_reader *r, const query_tree *t, const query_top_opts *opts)
{
    query_top_result top;
    if (query_top(r, t, opts, &top)) return NULL;
    json_t *o = query_top_json(t, &top);
    query_top_free(&top);
    return o;
}

/* group_by_sample: each tree split by the sample label's values, every
 * group ranked (query_sample_rank_trees); answers the groups (labels: the
 * series group's, then the sample label's) in a JSON array, NULL with the
 * reply made. */
static json_t *top_sample_groups(srv_request *rq, store_reader *r, const char *key, const query_group_by *by,
                                 const query_group *g, const query_tree *const *trees, size_t nt,
                                 const query_top_opts *opts)
{
    query_sample_ranking sp;
    if (query_sample_rank_trees(r, trees, nt, key, &sp)) {
        srv_reply_error(rq, 500, "out of memory splitting by the sample label");
        return NULL;
    }
    json_t *groups = NULL;
    if (rq->srv->max_groups && sp.n > rq->srv->max_groups) {
        srv_reply_error(rq, 400, "parameter 'group_by_sample': %zu groups, more than the %zu one answer may hold "
                        "(--max-groups); narrow the selector (a matcher on the sample label) or the range",
                        sp.n, rq->srv->max_groups);
        goto out;
    }
    groups = json_array();
    for (size_t i = 0; i < sp.n && groups; i++) {
        const query_sample_group *x = sp.rows[i].g;
        query_top_result top;
        if (query_top_rank(r, &x->f, &x->figures, opts, &top)) {
            json_decref(groups);
            groups = NULL;
            break;
        }
        json_t *e = query_top_json(&x->figures, &top);
        query_top_free(&top);
        json_t *labels = g ? query_group_labels_json(by, &g[sp.rows[i].tree]) : json_object();
        if (labels) json_object_set_new(labels, key, json_string(x->value));
        if (!e || !labels) {
            json_decref(e);
            json_decref(labels);
            json_decref(groups);
            groups = NULL;
            break;
        }
        json_object_set_new(e, "labels", labels);
        json_object_set_new(e, "unit", json_string(x->figures.unit));
        json_array_append_new(groups, e);
    }
    if (!groups) srv_reply_error(rq, 500, "out of memory encoding the answer");
out:
    query_sample_ranking_free(&sp);
    return groups;
}

enum MHD_Result srv_handle_top(srv_request *rq)
{
    uint64_t limit, offset;
    const char *order = srv_param(rq, "order");
    if (order && strcmp(order, "self") && strcmp(order, "total") && strcmp(order, "name"))
        return srv_reply_error(rq, 400, "parameter 'order': '%s' (supported: self, total, name)", order);
    if (srv_param_uint(rq, "limit", 20, 1000000, &limit)) return MHD_YES;
    if (srv_param_uint(rq, "offset", 0, 1000000000, &offset)) return MHD_YES;
    query_top_opts opts = { .offset = (size_t)offset, .limit = (size_t)limit, .match = srv_param(rq, "match"),
                            .order = !order || !strcmp(order, "self") ? QUERY_TOP_SELF
                                     : !strcmp(order, "total") ? QUERY_TOP_TOTAL : QUERY_TOP_NAME };
    const char *sample_key = NULL;
    if (srv_group_by_sample(rq, &sample_key)) return MHD_YES;
    query_group_by by;
    int grouped;
    query_side s;
    if (srv_group_by(rq, "group_by", &by, &grouped)) return MHD_YES;
    if (side_read(rq, "query", "{}", NULL, &s)) {
        query_group_by_free(&by);
        return MHD_YES;
    }
    store_reader *r = begin(rq);
    enum MHD_Result res = MHD_YES;
    if (!r) goto out;
    /* the sample label's frames kept at the roots, to be split by */
    if (sample_key) store_reader_sample_root(r, sample_key);
    if (!grouped) {
        if (side_merge(rq, r, &s)) goto out;
        if (sample_key) {
            const query_tree *trees[1] = { &s.tree };
            json_t *groups = top_sample_groups(rq, r, sample_key, NULL, NULL, trees, 1, &opts);
            if (!groups) goto out;
            json_t *o = with_head(json_object(), r, &s, s.tree.unit);
            if (o) json_object_set_new(o, "groups", groups);
            else json_decref(groups);
            res = srv_reply_json(rq, 200, o);
            goto out;
        }
        json_t *o = with_head(top_json(r, &s.tree, &opts), r, &s, s.tree.unit);
        res = srv_reply_json(rq, 200, o);
        goto out;
    }
    if (srv_side_resolve(rq, r, &s)) goto out;
    query_group *g;
    size_t ng;
    if (srv_groups_split(rq, "group_by", r, &s.set, &by, s.from, s.until, 1, &g, &ng)) goto out;
    query_group_tree *m = merge_groups(rq, r, g, ng, s.from, s.until);
    if (m && sample_key) {
        /* each series group split again, in the series groups' order */
        const query_tree **trees = malloc((ng ? ng : 1) * sizeof *trees);
        query_group *sorted = malloc((ng ? ng : 1) * sizeof *sorted);
        json_t *groups = NULL;
        if (trees && sorted) {
            for (size_t i = 0; i < ng; i++) {
                trees[i] = &m[i].tree;
                sorted[i] = g[m[i].group];
            }
            groups = top_sample_groups(rq, r, sample_key, &by, sorted, trees, ng, &opts);
        } else {
            srv_reply_error(rq, 500, "out of memory");
        }
        free(trees);
        free(sorted);
        if (groups) {
            json_t *o = with_head(json_object(), r, &s, NULL);
            if (o) json_object_set_new(o, "groups", groups);
            else json_decref(groups);
            res = srv_reply_json(rq, 200, o);
        }
    } else if (m) {
        json_t *groups = json_array();
        for (size_t i = 0; groups && i < ng; i++) {
            json_t *e = top_json(r, &m[i].tree, &opts);
            if (!e) continue;
            json_object_set_new(e, "labels", query_group_labels_json(&by, &g[m[i].group]));
            json_object_set_new(e, "unit", json_string(m[i].tree.unit));
            json_array_append_new(groups, e);
        }
        json_t *o = with_head(json_object(), r, &s, NULL);
        if (o) json_object_set_new(o, "groups", groups);
        res = srv_reply_json(rq, 200, o);
    }
    if (m) query_group_trees_free(m, ng);
    query_groups_free(g, ng);
out:
    if (r) srv_reader_end(rq, r);
    query_side_free(&s);
    query_group_by_free(&by);
    return res;
}

/* ---- /api/v1/stability ------------------------------------------------ */

enum MHD_Result srv_handle_stability(srv_request *rq)
{
    int64_t step;
    uint64_t k;
    double max_m, max_jsd;
    if (srv_param_duration(rq, "step", 60000, &step) || srv_param_uint(rq, "k", 10, 10000, &k) ||
        srv_param_double(rq, "max_manhattan", 0.2, 0, 2, &max_m) || srv_param_double(rq, "max_jsd", 0.05, 0, 1, &max_jsd))
        return MHD_YES;
    if (k == 0) return srv_reply_error(rq, 400, "parameter 'k': must be at least 1");
    query_group_by by;
    int grouped;
    query_side s;
    if (srv_group_by(rq, "group_by", &by, &grouped)) return MHD_YES;
    if (side_read(rq, "query", "{}", NULL, &s)) {
        query_group_by_free(&by);
        return MHD_YES;
    }
    enum MHD_Result res = MHD_YES;
    store_reader *r = NULL;
    if (!grouped && query_window_count(s.from, s.until, step) > MAX_WINDOWS) {
        res = srv_reply_error(rq, 400, "parameter 'step': %zu windows, at most %d (use a larger step)",
                              query_window_count(s.from, s.until, step), MAX_WINDOWS);
        goto out;
    }
    if (!(r = begin(rq))) goto out;
    json_t *o = NULL;
    query_stability_result st;
    int arc;
    if (!grouped) {
        if (srv_side_resolve(rq, r, &s)) goto out;
        if (!(arc = query_stability_windows(r, &s.set, s.from, s.until, step, (size_t)k, max_m, max_jsd, &st)))
            o = query_stability_json(&st, NULL, NULL);
    } else {
        if (side_merge(rq, r, &s)) goto out;
        query_group *g;
        size_t ng;
        if (srv_groups_split(rq, "group_by", r, &s.set, &by, s.from, s.until, 0, &g, &ng)) goto out;
        if (!(arc = query_stability_groups(r, g, ng, &s.tree, s.from, s.until, (size_t)k, max_m, max_jsd, &st)))
            o = query_stability_json(&st, &by, g);
        query_groups_free(g, ng);
    }
    if (!arc) query_stability_free(&st);
    res = srv_reply_json(rq, 200, with_head(o, r, &s, NULL));
out:
    if (r) srv_reader_end(rq, r);
    query_side_free(&s);
    query_group_by_free(&by);
    return res;
}

/* ---- /api/v1/compare and /api/v1/diff --------------------------------- */

static enum MHD_Result two_sides(srv_request *rq, int diff)
{
    uint64_t k = 10, limit = 50;
    if (!diff && (srv_param_uint(rq, "k", 10, 10000, &k) || srv_param_uint(rq, "limit", 50, 1000000, &limit)))
        return MHD_YES;
    if (!diff && k == 0) return srv_reply_error(rq, 400, "parameter 'k': must be at least 1");
    query_side L, R;
    memset(&R, 0, sizeof R);
    if (side_read(rq, "left", NULL, "left", &L)) {
        query_side_free(&L);
        return MHD_YES;
    }
    enum MHD_Result res = MHD_YES;
    store_reader *r = NULL;
    if (side_read(rq, "right", NULL, "right", &R) || !(r = begin(rq))) goto out;
    if (side_merge(rq, r, &L) || side_merge(rq, r, &R)) goto out;
    const char *lt = L.set.type[0] ? L.set.type : NULL, *rt = R.set.type[0] ? R.set.type : NULL;
    if (diff) { /* a tree: written as it is walked (encode_tree.c) */
        query_buf b = { 0 };
        size_t len;
        char *text = NULL;
        if (!query_diff_json_write(&b, r, &L.tree, &R.tree, lt, rt)) {
            query_buf_put(&b, "\n", 1);
            text = query_buf_take(&b, &len);
        }
        query_buf_free(&b);
        res = text ? srv_reply_bytes(rq, 200, "application/json", text, len, 1)
                   : srv_reply_error(rq, 500, "out of memory encoding the answer");
        goto out;
    }
    json_t *o = NULL;
    query_compare_result cmp;
    if (!query_compare(r, &L.tree, &R.tree, (size_t)k, (size_t)limit, &cmp)) {
        o = query_compare_json(&cmp);
        query_compare_free(&cmp);
    }
    if (o) {
        json_object_set_new(o, "left_type", L.set.type[0] ? json_string(L.set.type) : json_null());
        json_object_set_new(o, "right_type", R.set.type[0] ? json_string(R.set.type) : json_null());
    }
    res = srv_reply_json(rq, 200, o);
out:
    if (r) srv_reader_end(rq, r);
    query_side_free(&L);
    query_side_free(&R);
    return res;
}

enum MHD_Result srv_handle_compare(srv_request *rq) { return two_sides(rq, 0); }
enum MHD_Result srv_handle_diff(srv_request *rq) { return two_sides(rq, 1); }

/* ---- /api/v1/timeline ------------------------------------------------- */

/* {"points", "unit"} of one set, or a group's {"labels", "unit", "points"};
 * NULL on failure (*too_big set past 2^63). */
static json_t *timeline_json(store_reader *r, const query_series_set *set, int64_t from, int64_t until, int64_t step,
                             json_t *labels, int *too_big)
{
    query_timeline_result tl;
    int rc = query_timeline(r, set, from, until, step, &tl);
    if (rc) {
        *too_big = rc == QUERY_ETOOBIG;
        json_decref(labels);
        return NULL;
    }
    json_t *o = labels ? json_pack("{s:o,s:s,s:o}", "labels", labels, "unit", tl.unit, "points", query_timeline_json(&tl))
                       : json_pack("{s:o,s:s}", "points", query_timeline_json(&tl), "unit", tl.unit);
    query_timeline_free(&tl);
    return o;
}

enum MHD_Result srv_handle_timeline(srv_request *rq)
{
    query_group_by by;
    int grouped;
    query_side s;
    if (srv_group_by(rq, "group_by", &by, &grouped)) return MHD_YES;
    if (side_read(rq, "query", "{}", NULL, &s)) {
        query_group_by_free(&by);
        return MHD_YES;
    }
    enum MHD_Result res = MHD_YES;
    store_reader *r = NULL;
    int64_t step;
    if (srv_param_duration(rq, "step", query_timeline_default_step(s.from, s.until), &step)) goto out;
    if (query_window_count(s.from, s.until, step) > 100000) {
        res = srv_reply_error(rq, 400, "parameter 'step': more than 100000 points (use a larger step)");
        goto out;
    }
    if (!(r = begin(rq)) || srv_side_resolve(rq, r, &s)) goto out;
    if (s.set.sample.n_matchers) {
        res = srv_reply_error(rq, 400, "parameter 'query': %s names sample labels, which the timeline cannot "
                              "select (it reads profile totals); use them in query, top or the other analyses",
                              s.set.sample_key);
        goto out;
    }
    int too_big = 0, failed = 0;
    json_t *o = json_pack("{s:o}", "step", query_time_json(step));
    if (!grouped) {
        json_t *tl = timeline_json(r, &s.set, s.from, s.until, step, NULL, &too_big);
        failed = !tl;
        json_object_update_missing_new(o, tl);
    } else {
        query_group *g;
        size_t ng;
        json_t *groups = json_array();
        if (srv_groups_split(rq, "group_by", r, &s.set, &by, s.from, s.until, 0, &g, &ng)) {
            json_decref(o);
            json_decref(groups);
            goto out;
        }
        for (size_t i = 0; i < ng && !failed && !too_big; i++) {
            json_t *tl = timeline_json(r, &g[i].set, s.from, s.until, step, query_group_labels_json(&by, &g[i]), &too_big);
            failed = !tl;
            json_array_append_new(groups, tl);
        }
        query_groups_free(g, ng);
        json_object_set_new(o, "groups", groups);
    }
    if (too_big) {
        json_decref(o);
        res = srv_reply_error(rq, 422, "the profiles of a step add up to more than 2^63 in their unit: too much for "
                                       "exact integers; narrow the range, the step or the selector");
        goto out;
    }
    if (failed) { /* past --query-timeout (503), else out of memory */
        json_decref(o);
        res = srv_reply_json(rq, 200, NULL);
        goto out;
    }
    res = srv_reply_json(rq, 200, with_head(o, r, &s, NULL));
out:
    if (r) srv_reader_end(rq, r);
    query_side_free(&s);
    query_group_by_free(&by);
    return res;
}

/* ---- /api/v1/variance ------------------------------------------------- */

enum MHD_Result srv_handle_variance(srv_request *rq)
{
    int64_t step;
    uint64_t k;
    if (srv_param_duration(rq, "step", 60000, &step) || srv_param_uint(rq, "k", 10, 10000, &k)) return MHD_YES;
    if (k == 0) return srv_reply_error(rq, 400, "parameter 'k': must be at least 1");
    if (srv_param(rq, "step") && srv_param(rq, "by"))
        return srv_reply_error(rq, 400, "parameters 'step' and 'by' exclude each other: units are windows or groups");
    query_group_by by;
    int grouped;
    query_side s;
    if (srv_group_by(rq, "by", &by, &grouped)) return MHD_YES;
    if (side_read(rq, "query", "{}", NULL, &s)) {
        query_group_by_free(&by);
        return MHD_YES;
    }
    enum MHD_Result res = MHD_YES;
    store_reader *r = NULL;
    if (!grouped && query_window_count(s.from, s.until, step) > MAX_WINDOWS) {
        res = srv_reply_error(rq, 400, "parameter 'step': more than %d windows (use a larger step)", MAX_WINDOWS);
        goto out;
    }
    if (!(r = begin(rq)) || srv_side_resolve(rq, r, &s)) goto out;
    json_t *o = NULL;
    query_variance_result v;
    int arc;
    if (!grouped) {
        arc = query_variance_windows(r, &s.set, s.from, s.until, step, (size_t)k, &v);
    } else {
        query_group *g;
        size_t ng;
        if (srv_groups_split(rq, "by", r, &s.set, &by, s.from, s.until, 0, &g, &ng)) goto out;
        arc = query_variance_groups(r, &s.set, g, ng, s.from, s.until, (size_t)k, &v);
        query_groups_free(g, ng);
    }
    if (!arc) {
        o = query_variance_json(&v);
        query_variance_free(&v);
    }
    res = srv_reply_json(rq, 200, with_head(o, r, &s, NULL));
out:
    if (r) srv_reader_end(rq, r);
    query_side_free(&s);
    query_group_by_free(&by);
    return res;
}

/* ---- DELETE /api/v1/series -------------------------------------------- */

/* Cluster mode: a mutation in ClickHouse, applied in the background
 * (chfront_delete): 202, with what matched. */
static enum MHD_Result delete_front(srv_request *rq, query_selector *sel)
{
    uint64_t series, profiles;
    char err[800];
    chfront_status fs = chfront_delete(rq->srv->front, sel, SRV_TENANT_LABEL, &series, &profiles, err, sizeof err);
    query_selector_free(sel);
    if (fs) {
        if (fs == CHFRONT_EIO) rq->retry_after = SRV_RETRY_AFTER_S;
        return srv_reply_error(rq, fs == CHFRONT_EINVAL ? 400 : fs == CHFRONT_EIO ? 503 : 500, "%s", err);
    }
    srv_log("deleting %llu series, %llu profiles in ClickHouse (a mutation)", (unsigned long long)series,
            (unsigned long long)profiles);
    return srv_reply_json(rq, 202, json_pack("{s:I,s:I,s:s}", "deleted_series", (json_int_t)series,
                                             "deleted_profiles", (json_int_t)profiles, "status",
                                             "submitted: ClickHouse removes the rows in the background"));
}

enum MHD_Result srv_handle_delete(srv_request *rq)
{
    query_selector sel;
    if (srv_selector(rq, "query", NULL, &sel)) return MHD_YES;
    const char *all = srv_param(rq, "all");
    /* under --auth the selector has the tenant's matcher besides the client's */
    if (sel.n_matchers == rq->scoped && !(all && !strcmp(all, "true"))) {
        query_selector_free(&sel);
        return srv_reply_error(rq, 400, "parameter 'query': {} would delete every series; add all=true to mean it");
    }
    if (rq->srv->front) return delete_front(rq, &sel);
    store_reader *r = begin(rq);
    if (!r) {
        query_selector_free(&sel);
        return MHD_YES;
    }
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc = query_match(r, &sel, INT64_MIN, INT64_MAX, &ids, &n);
    srv_reader_end(rq, r);
    query_selector_free(&sel);
    if (rc) return srv_reply_error(rq, 500, "out of memory");
    uint64_t deleted = 0;
    store_status ss = store_delete_series(rq->srv->st, ids, n, &deleted);
    free(ids);
    if (ss) return srv_reply_error(rq, srv_status_of_store(ss), "deletion failed after %llu profiles",
                                   (unsigned long long)deleted);
    srv_log("deleted %zu series, %llu profiles", n, (unsigned long long)deleted);
    return srv_reply_json(rq, 200, json_pack("{s:I,s:I}", "deleted_series", (json_int_t)n, "deleted_profiles",
                                             (json_int_t)deleted));
}
