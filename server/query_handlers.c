/* query_handlers.c — GET /api/v1/query, /api/v1/labels,
 * /api/v1/label/NAME/values and /api/v1/series.
 *
 * Each parses its parameters (400 naming the one at fault), opens a read
 * snapshot, asks query/ for the answer and encodes it.  The snapshot is
 * held only while the answer is built; writers never wait for it.  A JSON
 * answer whose range held no series of the selector says where its
 * profiles are ("latest", "earliest": query/extent.c). */
#include <stdlib.h>
#include <string.h>

#include "../query/query.h"
#include "srv.h"

#define DEFAULT_MAX_NODES 8192

/* The selector and time range every read endpoint takes. */
static int read_selector(srv_request *rq, query_selector *sel, int64_t *from, int64_t *until)
{
    if (srv_selector(rq, "query", "{}", sel)) return -1;
    if (srv_time_range(rq, "from", "until", SRV_DEFAULT_RANGE_MS, from, until)) {
        query_selector_free(sel);
        return -1;
    }
    return 0;
}

static json_t *string_array(char **items, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_string(items[i]));
    return a;
}

/* The answer's members other than the tree: type, unit, figures, what was
 * left out, where the selector's profiles are (ext, when the range held
 * none). */
static json_t *tree_envelope(const query_series_set *set, const query_tree *t, int64_t from, int64_t until,
                             uint64_t tn, uint64_t tt, const query_extent *ext)
{
    json_t *o = json_pack("{s:s?,s:s,s:s,s:o,s:o,s:o,s:o,s:I,s:I,s:o,s:{s:I,s:o}}",
                          "type", set->type[0] ? set->type : NULL, "unit", t->unit, "aggregation",
                          query_aggregation_name(t), "from", query_time_json(from), "until", query_time_json(until),
                          "total", query_value_json(t, t->grand_total), "samples",
                          query_samples_json(t->samples, t->samples_unknown), "profiles", (json_int_t)t->profiles,
                          "series", (json_int_t)t->series, "other_types",
                          string_array(set->other_types, set->n_other_types), "truncated", "nodes", (json_int_t)tn,
                          "total", query_value_json(t, tt));
    if (o && t->inexact) json_object_set_new(o, "approximate", json_true());
    if (o && t->n_other_units) {
        json_object_set_new(o, "other_units", string_array(t->other_units, t->n_other_units));
        json_object_set_new(o, "skipped_profiles", json_integer((json_int_t)t->skipped_profiles));
    }
    query_extent_json(o, ext);
    return o;
}

/* The tree's member of an answer object: levels (its arrays and max_self)
 * or the nested tree already written; frees what it wrote. */
static void put_tree_member(query_buf *b, int levels, query_levels *lv, query_buf *tree)
{
    if (levels) {
        query_buf_put(b, ",", 1);
        query_levels_json_write(b, lv);
        query_buf_puts(b, ",\"max_self\":");
        query_buf_i64(b, lv->max_self);
        query_levels_free(lv);
    } else {
        query_buf_puts(b, ",\"tree\":");
        query_buf_put(b, tree->data, tree->len);
        query_buf_free(tree);
    }
}

/* The envelope, then the tree ("tree": nested JSON) or the levels
 * ("names", "levels", "max_self"), written as they are walked: no jansson
 * value per node (query/encode_tree.c, encode_levels.c). */
static enum MHD_Result reply_tree(srv_request *rq, store_reader *r, const query_series_set *set,
                                  const query_tree *t, int64_t from, int64_t until, size_t max_nodes,
                                  int levels, const query_extent *ext)
{
    query_buf tree = { 0 }, b = { 0 };
    query_levels lv;
    uint64_t tn = 0, tt = 0;
    int rc = levels ? query_levels_build(r, t, max_nodes, &lv) : query_tree_json_write(&tree, r, t, max_nodes, &tn, &tt);
    if (rc) {
        query_buf_free(&tree);
        return srv_reply_json(rq, 500, NULL);
    }
    if (levels) {
        tn = lv.trunc_nodes;
        tt = lv.trunc_total;
    }
    json_t *o = tree_envelope(set, t, from, until, tn, tt, ext);
    query_buf_object_open(&b, o);
    json_decref(o);
    put_tree_member(&b, levels, &lv, &tree);
    query_buf_puts(&b, "}\n");
    size_t len;
    char *text = query_buf_take(&b, &len);
    if (!text) return srv_reply_error(rq, 500, "out of memory encoding the answer");
    return srv_reply_bytes(rq, 200, "application/json", text, len, 1);
}

/* One group of a group-by answer, merged. */
/* A group's name for speedscope: "k=v,k=v". */
static void group_name(const query_group_by *by, const query_group *g, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < by->n_keys && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s=%s", i ? "," : "", by->keys[i], g->values[i]);
}

/* group_by: every group merged, sorted by total; JSON trees, levels or speedscope. */
static enum MHD_Result reply_groups(srv_request *rq, store_reader *r, const query_series_set *set,
                                    const query_group_by *by, int64_t from, int64_t until, size_t max_nodes,
                                    int speedscope, int levels, const query_extent *ext)
{
    char err[256];
    query_group *g;
    size_t ng;
    if (srv_groups_split(rq, "group_by", r, set, by, from, until, 1, &g, &ng)) return MHD_YES;
    query_group_tree *gt = NULL;
    enum MHD_Result res;
    int mrc = query_groups_merge(r, g, ng, from, until, &gt, err, sizeof err);
    if (mrc) {
        res = srv_reply_error(rq, srv_status_of_merge(mrc), "%s", err);
        goto out;
    }
    if (speedscope) {
        const query_tree **trees = malloc((ng ? ng : 1) * sizeof *trees);
        const char **names = malloc((ng ? ng : 1) * sizeof *names);
        char (*buf)[512] = malloc((ng ? ng : 1) * sizeof *buf);
        json_t *o = NULL;
        if (trees && names && buf) {
            for (size_t i = 0; i < ng; i++) {
                trees[i] = &gt[i].tree;
                group_name(by, &g[gt[i].group], buf[i], sizeof buf[i]);
                names[i] = buf[i];
            }
            o = query_trees_speedscope(r, trees, names, ng, set->type);
        }
        free(trees);
        free(names);
        free(buf);
        res = srv_reply_json(rq, 200, o);
        goto out;
    }
    /* the groups' trees (or levels) written as they are walked, each
     * after its group's figures; the list after the answer's own members */
    query_buf b = { 0 };
    json_t *o = json_pack("{s:s?,s:o,s:o,s:o}", "type", set->type[0] ? set->type : NULL, "from",
                          query_time_json(from), "until", query_time_json(until), "other_types",
                          string_array(set->other_types, set->n_other_types));
    query_extent_json(o, ext);
    query_buf_object_open(&b, o);
    json_decref(o);
    query_buf_puts(&b, ",\"groups\":[");
    for (size_t i = 0; i < ng && !b.failed; i++) {
        uint64_t tn = 0, tt = 0;
        const query_tree *t = &gt[i].tree;
        query_buf tree = { 0 };
        query_levels lv;
        int rc = levels ? query_levels_build(r, t, max_nodes, &lv)
                        : query_tree_json_write(&tree, r, t, max_nodes, &tn, &tt);
        if (rc) {
            b.failed = 1;
            break;
        }
        if (levels) {
            tn = lv.trunc_nodes;
            tt = lv.trunc_total;
        }
        json_t *e = json_pack("{s:o,s:s,s:o,s:o,s:I,s:I,s:{s:I,s:o}}", "labels",
                              query_group_labels_json(by, &g[gt[i].group]), "unit", t->unit, "total",
                              query_value_json(t, t->grand_total), "samples",
                              query_samples_json(t->samples, t->samples_unknown), "profiles",
                              (json_int_t)t->profiles, "series", (json_int_t)t->series, "truncated", "nodes",
                              (json_int_t)tn, "total", query_value_json(t, tt));
        if (i) query_buf_put(&b, ",", 1);
        query_buf_object_open(&b, e);
        json_decref(e);
        put_tree_member(&b, levels, &lv, &tree);
        query_buf_put(&b, "}", 1);
    }
    query_buf_puts(&b, "]}\n");
    size_t len;
    char *text = query_buf_take(&b, &len);
    res = text ? srv_reply_bytes(rq, 200, "application/json", text, len, 1)
               : srv_reply_error(rq, 500, "out of memory encoding the answer");
out:
    query_group_trees_free(gt, gt ? ng : 0);
    query_groups_free(g, ng);
    return res;
}

enum MHD_Result srv_handle_query(srv_request *rq)
{
    char err[512];
    query_selector sel;
    query_group_by by;
    int grouped;
    int64_t from, until;
    uint64_t max_nodes;
    const char *format = srv_param(rq, "format");
    if (format && strcmp(format, "json") && strcmp(format, "levels") && strcmp(format, "folded") &&
        strcmp(format, "speedscope") && strcmp(format, "pprof"))
        return srv_reply_error(rq, 400,
                               "parameter 'format': unknown format '%s' (supported: json, levels, folded, speedscope, "
                               "pprof)", format);
    int folded = format && !strcmp(format, "folded"), speedscope = format && !strcmp(format, "speedscope");
    int pprof = format && !strcmp(format, "pprof"), levels = format && !strcmp(format, "levels");
    uint64_t lines = 0;
    if (srv_param_uint(rq, "max_nodes", DEFAULT_MAX_NODES, UINT32_MAX, &max_nodes) ||
        srv_param_uint(rq, "lines", 0, 1, &lines))
        return MHD_YES;
    if (lines && (folded || speedscope || levels))
        return srv_reply_error(rq, 400, "parameter 'lines': format=%s has function names only (use json or pprof)",
                               format);
    if (srv_group_by(rq, "group_by", &by, &grouped)) return MHD_YES;
    if (grouped && (folded || pprof)) {
        query_group_by_free(&by);
        return srv_reply_error(rq, 400, "parameter 'group_by': format=%s has one profile, not groups (use json or speedscope)",
                               format);
    }
    /* group_by_sample=KEY: the tree split by a sample label, its first
     * frames "KEY=value" (store_reader_sample_root), in any format */
    const char *sample_key;
    if (srv_group_by_sample(rq, &sample_key)) {
        query_group_by_free(&by);
        return MHD_YES;
    }
    if (read_selector(rq, &sel, &from, &until)) {
        query_group_by_free(&by);
        return MHD_YES;
    }

    store_reader *r;
    enum MHD_Result res = MHD_YES;
    if (srv_reader_begin(rq, &r)) {
        query_selector_free(&sel);
        query_group_by_free(&by);
        return MHD_YES;
    }
    /* pprof always keeps lines: go tool pprof -list and -lines need them */
    store_reader_lines(r, lines || pprof);
    if (sample_key) store_reader_sample_root(r, sample_key);
    query_side side; /* query/side.c: it takes sel */
    query_side_init(&side, &sel, from, until);
    const query_series_set *set = &side.set;
    const query_tree *t = &side.tree;
    if (srv_side_resolve(rq, r, &side)) goto out;
    /* JSON answers of an empty range say where the selector's profiles are */
    query_extent ext = { 0 };
    if (!set->n_series && !folded && !pprof && !speedscope && query_extent_find(r, &side.sel, &ext)) ext.found = 0;
    if (grouped) {
        res = reply_groups(rq, r, set, &by, from, until, (size_t)max_nodes, speedscope, levels, &ext);
        goto out;
    }
    int mrc;
    if ((mrc = query_side_merge(&side, r, NULL, err, sizeof err))) {
        res = srv_reply_error(rq, srv_status_of_merge(mrc), "%s", err);
        goto out;
    }
    if (pprof) {
        size_t len = 0;
        char *gz = query_tree_pprof(r, t, set->type, from, until, &len);
        res = gz ? srv_reply_bytes(rq, 200, "application/octet-stream", gz, len, 1)
                 : srv_reply_error(rq, 500, "out of memory encoding pprof");
    } else if (folded) {
        size_t len = 0;
        char *text = query_tree_folded(r, t, &len);
        res = text ? srv_reply_bytes(rq, 200, "text/plain; charset=utf-8", text, len, 1)
                   : srv_reply_error(rq, 500, "out of memory encoding folded stacks");
    } else if (speedscope) {
        const query_tree *trees[1] = { t };
        const char *names[1] = { set->type[0] ? set->type : "profile" };
        res = srv_reply_json(rq, 200, query_trees_speedscope(r, trees, names, 1, names[0]));
    } else {
        res = reply_tree(rq, r, set, t, from, until, (size_t)max_nodes, levels, &ext);
    }
out:
    query_side_free(&side);
    srv_reader_end(rq, r);
    query_group_by_free(&by);
    return res;
}

typedef enum { LIST_LABELS, LIST_VALUES } list_kind;

/* limit on a listing: the most items listed, 0 (the default) all of
 * them; *given says whether the client asked, so that the answer says
 * whether the list was cut ("truncated") only then and is otherwise what
 * it always was. */
static int read_limit(srv_request *rq, uint64_t *limit, int *given)
{
    *given = srv_param(rq, "limit") != NULL;
    return srv_param_uint(rq, "limit", 0, UINT32_MAX, limit);
}

/* The series of /series, sorted by labels.  A selector's matchers on
 * sample labels list the series holding a stack they keep, with the
 * figures of those stacks alone (query_series_stats). */
static enum MHD_Result list_series(srv_request *rq)
{
    query_selector sel;
    int64_t from, until;
    uint64_t limit;
    int limited;
    if (read_limit(rq, &limit, &limited) || read_selector(rq, &sel, &from, &until)) return MHD_YES;
    store_reader *r;
    if (srv_reader_begin(rq, &r)) {
        query_selector_free(&sel);
        return MHD_YES;
    }
    char err[512];
    query_series_set set;
    query_series_list l = { 0 };
    enum MHD_Result res;
    if (query_resolve_all(r, &sel, from, until, &set, err, sizeof err)) {
        res = srv_reply_error(rq, 500, "%s", err);
        goto out;
    }
    if (query_series_sort(r, set.series, set.n_series)) { /* by labels: ids follow push order */
        res = srv_reply_error(rq, 500, "out of memory sorting series");
        goto out_set;
    }
    int rc = query_series_stats(r, &set, from, until, (size_t)limit, &l, err, sizeof err);
    if (rc) {
        res = srv_reply_error(rq, srv_status_of_merge(rc), "%s", err);
        goto out_set;
    }
    /* under --auth the tenant label is the server's, not the client's (its
     * value is the request's own tenant: the selector was scoped to it) */
    json_t *answer = query_series_json(r, &l, rq->scoped ? SRV_TENANT_LABEL : NULL);
    if (answer && limited) json_object_set_new(answer, "truncated", json_boolean(l.cut));
    query_extent ext;
    if (answer && !l.n && query_extent_find(r, &sel, &ext) == 0) query_extent_json(answer, &ext);
    res = srv_reply_json(rq, 200, answer);
out_set:
    query_series_set_free(&set);
out:
    query_series_list_free(&l);
    srv_reader_end(rq, r);
    query_selector_free(&sel);
    return res;
}

/* /labels and /label/NAME/values.  The selector splits as a query's does
 * (query_sample_resolve): its matchers on sample labels keep the series
 * holding a stack they keep.  Sample labels are found by scanning the
 * stacks (query_sample_labels_scan, under the query bounds): their names
 * in "sample_labels" beside the series' when asked (sample_labels=1: the
 * viewer lists labels on every load, and a scan costs a merge), and the
 * values of NAME when no series carries it.  limit bounds each list
 * (labels and sample_labels apart), with "truncated" (and
 * "sample_labels_truncated") saying whether it was cut. */
static enum MHD_Result list(srv_request *rq, list_kind kind)
{
    query_selector sel;
    int64_t from, until;
    uint64_t want_names = 0, limit;
    int limited;
    if (kind == LIST_LABELS && srv_param_uint(rq, "sample_labels", 0, 1, &want_names)) return MHD_YES;
    if (read_limit(rq, &limit, &limited) || read_selector(rq, &sel, &from, &until)) return MHD_YES;
    store_reader *r;
    if (srv_reader_begin(rq, &r)) {
        query_selector_free(&sel);
        return MHD_YES;
    }
    char err[512];
    query_series_set set;
    query_sample_labels sl = { 0 };
    json_t *answer = NULL;
    enum MHD_Result res;
    const char *name = rq->route_arg;
    /* a name no series carries (never a reserved one) is a sample label's */
    int sample_values = kind == LIST_VALUES && strncmp(name, "__", 2) && !store_label_name_known(r, name);
    query_sample_labels *found = sample_values || (kind == LIST_LABELS && want_names) ? &sl : NULL;
    int rc = query_sample_resolve(r, &sel, from, until, sample_values ? name : NULL, found, &set, err, sizeof err);
    if (rc) {
        res = srv_reply_error(rq, srv_status_of_merge(rc), "%s", err);
        goto out;
    }
    int cut = 0, failed = 0;
    if (kind == LIST_LABELS) {
        query_label_list names, sample_names = { 0 };
        /* under --auth the tenant label is the server's: not listed */
        failed = query_label_names(r, set.series, set.n_series, rq->scoped ? SRV_TENANT_LABEL : NULL, (size_t)limit,
                                   &names) ||
                 query_sample_names(&sl, (size_t)limit, &sample_names);
        if (!failed) {
            cut = names.cut;
            answer = json_pack("{s:o}", "labels", query_label_list_json(&names));
            if (answer && sl.n) json_object_set_new(answer, "sample_labels", query_label_list_json(&sample_names));
            if (answer && limited && want_names)
                json_object_set_new(answer, "sample_labels_truncated", json_boolean(sample_names.cut));
        }
        query_label_list_free(&names);
        query_label_list_free(&sample_names);
    } else {
        query_value_list values;
        failed = sample_values ? query_sample_values(&sl, name, (size_t)limit, &values)
                               : query_label_values(r, set.series, set.n_series, name, (size_t)limit, &values);
        if (!failed) {
            cut = values.cut;
            answer = json_pack("{s:o}", "values", query_value_list_json(&values));
            query_value_list_free(&values);
        }
    }
    if (answer && limited) json_object_set_new(answer, "truncated", json_boolean(cut));
    query_extent ext;
    if (answer && !set.n_series && query_extent_find(r, &sel, &ext) == 0) query_extent_json(answer, &ext);
    res = srv_reply_json(rq, 200, answer);
    query_series_set_free(&set);
out:
    query_sample_labels_free(&sl);
    srv_reader_end(rq, r);
    query_selector_free(&sel);
    return res;
}

enum MHD_Result srv_handle_labels(srv_request *rq) { return list(rq, LIST_LABELS); }
enum MHD_Result srv_handle_series(srv_request *rq) { return list_series(rq); }

enum MHD_Result srv_handle_label_values(srv_request *rq)
{
    const char *name = rq->route_arg;
    size_t n = strlen(name) - strlen("/values");
    char buf[256];
    if (n == 0 || n >= sizeof buf) return srv_reply_error(rq, 400, "label name in the path must be 1 to 128 bytes");
    memcpy(buf, name, n);
    buf[n] = '\0';
    if (rq->scoped && !strcmp(buf, SRV_TENANT_LABEL))
        return srv_reply_error(rq, 400, "the label %s is reserved: the server sets it from the token's tenant",
                               SRV_TENANT_LABEL);
    rq->route_arg = buf;
    return list(rq, LIST_VALUES);
}
