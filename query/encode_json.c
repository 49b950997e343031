/* encode_json.c — the analyses' and listings' answers as JSON: top,
 * compare, stability, variance, timeline, label names and values, series
 * (a diff is a tree: encode_tree.c writes it as it walks).  Each analysis (top.c, compare.c, stability.c, variance.c,
 * timeline.c, diff.c, listings.c) answers data — rows, units, points, a
 * view over two trees, lists — and nothing else; these functions are the
 * only place their JSON shapes are written (docs/api.md shows them), so an
 * HTTP handler picks an encoder and the Connect handlers build protobuf
 * messages from the same data.
 *
 * Values: a merge's values are integers in its unit, or numbers when the
 * unit's profiles are gauges (a value over its divisor: query_value_json);
 * a figure not known (samples of profiles that did not say theirs, a
 * distance with nothing to compare) is null, never 0.  Jansson builds the
 * answers: they are small (rows and units, not nodes). */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

/* ---- top -------------------------------------------------------------- */

/* [lo, hi], or null when the number of samples is not known. */
static json_t *interval_json(const query_top_result *top, const double ci[2])
{
    return top->has_ci ? json_pack("[f,f]", ci[0], ci[1]) : json_null();
}

json_t *query_top_json(const query_tree *t, const query_top_result *top)
{
    json_t *arr = json_array();
    if (!arr) return NULL;
    for (size_t k = 0; k < top->n; k++) {
        const query_top_row *row = &top->rows[k];
        json_t *e = json_pack("{s:s,s:o,s:o,s:f,s:f,s:o,s:o}", "name", row->name, "self", query_value_json(t, row->self),
                              "total", query_value_json(t, row->total), "self_share", row->self_share, "total_share",
                              row->total_share, "self_ci95", interval_json(top, row->self_ci), "total_ci95",
                              interval_json(top, row->total_ci));
        if (!e || json_array_append_new(arr, e)) {
            json_decref(arr);
            return NULL;
        }
    }
    return json_pack("{s:o,s:o,s:I,s:I,s:o}", "total", query_value_json(t, t->grand_total), "samples",
                     query_samples_json(t->samples, t->samples_unknown), "functions_total",
                     (json_int_t)top->n_functions, "offset", (json_int_t)top->offset, "functions", arr);
}

/* ---- figures, compare ------------------------------------------------- */

/* Keys are written in the order docs/api.md shows them (jansson keeps
 * insertion order): clients that print answers see them so. */
static json_t *total_json(const query_figures *f)
{
    return f->divisor > 1 ? json_real((double)f->total / (double)f->divisor) : json_integer((json_int_t)f->total);
}

static json_t *compare_side_json(const query_compare_side *s)
{
    return json_pack("{s:o,s:o,s:I,s:o,s:s}", "total", total_json(&s->f), "samples",
                     query_samples_json(s->f.samples, s->f.samples_unknown), "profiles", (json_int_t)s->f.profiles,
                     "entropy", query_real_or_null(s->entropy), "unit", s->unit);
}

json_t *query_compare_json(const query_compare_result *c)
{
    json_t *arr = json_array();
    for (size_t q = 0; arr && q < c->n; q++) {
        const query_compare_row *row = &c->rows[q];
        json_t *sig = row->significant < 0 ? json_null() : json_boolean(row->significant);
        json_t *e = json_pack("{s:s,s:f,s:f,s:f,s:o}", "name", row->name, "left_share", row->left_share,
                              "right_share", row->right_share, "delta", row->delta, "significant", sig);
        if (!e || json_array_append_new(arr, e)) {
            json_decref(arr);
            return NULL;
        }
    }
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "left", compare_side_json(&c->left), "right",
                     compare_side_json(&c->right), "manhattan", query_real_or_null(c->manhattan), "jsd",
                     query_real_or_null(c->jsd), "functions", arr);
}

/* ---- stability -------------------------------------------------------- */

static json_t *summary_json(const query_stability_summary *s)
{
    json_t *stable = s->stable < 0 ? json_null() : json_boolean(s->stable);
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:f,s:f}", "entropy_mean", query_real_or_null(s->entropy_mean),
                     "entropy_stddev", query_real_or_null(s->entropy_stddev), "manhattan_mean",
                     query_real_or_null(s->manhattan_mean), "manhattan_max", query_real_or_null(s->manhattan_max),
                     "jsd_mean", query_real_or_null(s->jsd_mean), "jsd_max", query_real_or_null(s->jsd_max), "stable",
                     stable, "comparisons", (json_int_t)s->comparisons, "max_manhattan", s->max_manhattan, "max_jsd",
                     s->max_jsd);
}

static json_t *stability_unit_json(const query_stability_unit *u, const query_group_by *by, const query_group *groups)
{
    json_t *samples = query_samples_json(u->f.samples, u->f.samples_unknown);
    if (groups)
        return json_pack("{s:o,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "labels",
                         query_group_labels_json(by, &groups[u->group]), "profiles", (json_int_t)u->f.profiles,
                         "total", total_json(&u->f), "samples", samples, "entropy", query_real_or_null(u->entropy),
                         "manhattan", query_real_or_null(u->manhattan), "manhattan_noise",
                         query_real_or_null(u->manhattan_noise), "manhattan_z", query_real_or_null(u->manhattan_z),
                         "jsd", query_real_or_null(u->jsd));
    return json_pack("{s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:o}", "from", query_time_json(u->from_ms), "until",
                     query_time_json(u->until_ms), "profiles", (json_int_t)u->f.profiles, "total", total_json(&u->f),
                     "samples", samples, "entropy", query_real_or_null(u->entropy), "manhattan",
                     query_real_or_null(u->manhattan), "jsd", query_real_or_null(u->jsd));
}

json_t *query_stability_json(const query_stability_result *s, const query_group_by *by, const query_group *groups)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < s->n; i++) {
        json_t *e = stability_unit_json(&s->units[i], by, groups);
        if (!e || json_array_append_new(arr, e)) {
            json_decref(arr);
            return NULL;
        }
    }
    if (groups) return json_pack("{s:o,s:o}", "groups", arr, "summary", summary_json(&s->summary));
    return json_pack("{s:o,s:o,s:o}", "step", query_time_json(s->step_ms), "windows", arr, "summary",
                     summary_json(&s->summary));
}

/* ---- variance --------------------------------------------------------- */

json_t *query_variance_json(const query_variance_result *v)
{
    json_t *arr = json_array();
    for (size_t q = 0; arr && q < v->n; q++) {
        const query_variance_row *row = &v->rows[q];
        json_t *e = json_pack("{s:s,s:o,s:o,s:o,s:o}", "name", row->name, "contribution",
                              query_real_or_null(row->contribution), "contribution_se",
                              query_real_or_null(row->contribution_se), "mean", query_real_or_null(row->mean),
                              "variance", query_real_or_null(row->variance));
        if (!e || json_array_append_new(arr, e)) {
            json_decref(arr);
            return NULL;
        }
    }
    json_t *o = json_pack("{s:I,s:o,s:o,s:o}", "units", (json_int_t)v->units, "mean", query_real_or_null(v->mean),
                          "variance", query_real_or_null(v->variance), "functions", arr);
    if (o && v->step_ms) json_object_set_new(o, "step", query_time_json(v->step_ms));
    return o;
}

/* ---- timeline --------------------------------------------------------- */

json_t *query_timeline_json(const query_timeline_result *tl)
{
    json_t *points = json_array();
    for (size_t k = 0; points && k < tl->n; k++) {
        const query_point *p = &tl->points[k];
        json_t *value = tl->gauge ? json_real(query_point_value(p)) : json_integer((json_int_t)p->sum);
        if (json_array_append_new(points, json_pack("[o,o]", query_time_json(p->t_ms), value))) {
            json_decref(points);
            return NULL;
        }
    }
    return points;
}

/* ---- listings --------------------------------------------------------- */

json_t *query_label_list_json(const query_label_list *l)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < l->n; i++) {
        json_t *e = json_pack("{s:s,s:I}", "name", l->items[i].name, "values", (json_int_t)l->items[i].values);
        if (!e || json_array_append_new(arr, e)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

json_t *query_value_list_json(const query_value_list *l)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < l->n; i++)
        if (json_array_append_new(arr, json_string(l->items[i]))) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

json_t *query_series_json(store_reader *r, const query_series_list *l, const char *hide)
{
    json_t *arr = json_array(), *o = json_object();
    store_label labels[64];
    if (!arr || !o) goto fail;
    for (size_t i = 0; i < l->n; i++) {
        const query_series_stat *s = &l->items[i];
        json_t *lj = json_object();
        int nl = store_series_labels(r, s->id, labels, 64);
        for (int j = 0; lj && j < nl && j < 64; j++)
            if (!hide || strcmp(labels[j].name, hide)) json_object_set_new(lj, labels[j].name, json_string(labels[j].value));
        /* a gauge's total over time is the average of its snapshots */
        json_t *total = s->gauge && s->profiles ? json_real((double)s->total / (double)s->profiles)
                                                : json_integer((json_int_t)s->total);
        /* a profile's samples are not split by stack: unknown once one was left out */
        json_t *samples = s->dropped ? json_null() : query_samples_json(s->samples, s->samples_unknown);
        json_t *e = json_pack("{s:o,s:I,s:o,s:o,s:s,s:s,s:o,s:o}", "labels", lj, "profiles", (json_int_t)s->profiles,
                              "samples", samples, "total", total, "aggregation", s->gauge ? "average" : "sum",
                              "unit", s->mixed ? "mixed" : (s->unit ? s->unit : "samples"),
                              "first", query_time_json(s->first), "last", query_time_json(s->last));
        if (!e || json_array_append_new(arr, e)) goto fail;
    }
    json_object_set_new(o, "series", arr);
    return o;
fail:
    json_decref(arr);
    json_decref(o);
    return NULL;
}
