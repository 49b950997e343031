/* listings.c — what is stored, for discovery: label names with their
 * cardinality, the values of one label, and series with statistics over a
 * time range (from the block headers alone: no decoding); and the JSON of
 * the sample labels query_sample_labels_scan found (sample.c: those are
 * read from the stacks). */
#include <stdlib.h>
#include <string.h>

#include "query.h"

typedef struct { const char *name, *value; } label_ref;

static int ref_cmp(const void *a, const void *b)
{
    const label_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

/* Every (name, value) of the series, sorted, with duplicates. */
static label_ref *collect(store_reader *r, const uint32_t *ids, size_t n, size_t *out_n)
{
    size_t cap = 64, k = 0;
    label_ref *refs = malloc(cap * sizeof *refs);
    store_label labels[64];
    for (size_t i = 0; refs && i < n; i++) {
        int nl = store_series_labels(r, ids[i], labels, 64);
        if (nl > 64) nl = 64;
        for (int j = 0; j < nl; j++) {
            if (k == cap) {
                label_ref *nr = realloc(refs, cap * 2 * sizeof *refs);
                if (!nr) { free(refs); return NULL; }
                refs = nr;
                cap *= 2;
            }
            refs[k].name = labels[j].name;
            refs[k++].value = labels[j].value;
        }
    }
    if (refs) qsort(refs, k, sizeof *refs, ref_cmp);
    *out_n = k;
    return refs;
}

json_t *query_labels_json(store_reader *r, const uint32_t *ids, size_t n)
{
    size_t k;
    label_ref *refs = collect(r, ids, n, &k);
    json_t *arr = json_array(), *o = json_object();
    if (!refs || !arr || !o) goto fail;
    for (size_t i = 0; i < k;) {
        size_t j = i, values = 0;
        while (j < k && strcmp(refs[j].name, refs[i].name) == 0) {
            if (j == i || strcmp(refs[j].value, refs[j - 1].value)) values++;
            j++;
        }
        json_t *e = json_pack("{s:s,s:I}", "name", refs[i].name, "values", (json_int_t)values);
        if (!e || json_array_append_new(arr, e)) goto fail;
        i = j;
    }
    free(refs);
    json_object_set_new(o, "labels", arr);
    return o;
fail:
    free(refs);
    json_decref(arr);
    json_decref(o);
    return NULL;
}

json_t *query_label_values_json(store_reader *r, const uint32_t *ids, size_t n, const char *name)
{
    size_t k;
    label_ref *refs = collect(r, ids, n, &k);
    json_t *arr = json_array(), *o = json_object();
    if (!refs || !arr || !o) goto fail;
    for (size_t i = 0; i < k; i++) {
        if (strcmp(refs[i].name, name)) continue;
        if (i && strcmp(refs[i - 1].name, name) == 0 && strcmp(refs[i - 1].value, refs[i].value) == 0) continue;
        if (json_array_append_new(arr, json_string(refs[i].value))) goto fail;
    }
    free(refs);
    json_object_set_new(o, "values", arr);
    return o;
fail:
    free(refs);
    json_decref(arr);
    json_decref(o);
    return NULL;
}

typedef struct {
    uint64_t profiles, samples, samples_unknown, total;
    int gauge;
    int64_t first, last;
    const char *unit;
    int mixed;
    int too_big;        /* total passed 2^63 */
} series_stats;

static int stat_block(const store_block *b, void *arg)
{
    series_stats *s = arg;
    uint64_t w;
    const char *unit = query_block_unit(b, &w);
    if (!s->unit) s->unit = unit;
    else if (strcmp(s->unit, unit)) s->mixed = 1;
    if (!s->profiles || b->from_ms < s->first) s->first = b->from_ms;
    if (!s->profiles || b->from_ms > s->last) s->last = b->from_ms;
    s->profiles += b->n_profiles;
    s->gauge |= b->gauge;
    if (b->samples_known) s->samples += b->samples;
    else s->samples_unknown += b->n_profiles;
    if (query_add_weighted(&s->total, b->counts, w)) s->too_big = 1;
    return s->too_big;
}

json_t *query_series_json(store_reader *r, const uint32_t *ids, size_t n, int64_t from_ms, int64_t until_ms,
                          int *too_big)
{
    *too_big = 0;
    json_t *arr = json_array(), *o = json_object();
    store_label labels[64];
    if (!arr || !o) goto fail;
    for (size_t i = 0; i < n; i++) {
        series_stats s = { 0 };
        if (store_reader_expired(r)) goto fail; /* nothing partial: the caller says why */
        store_blocks_scan(r, ids[i], from_ms, until_ms, stat_block, &s);
        if (s.too_big) {
            *too_big = 1;
            goto fail;
        }
        json_t *lj = json_object();
        int nl = store_series_labels(r, ids[i], labels, 64);
        for (int j = 0; lj && j < nl && j < 64; j++) json_object_set_new(lj, labels[j].name, json_string(labels[j].value));
        /* a gauge's total over time is the average of its snapshots */
        json_t *total = s.gauge && s.profiles ? json_real((double)s.total / (double)s.profiles)
                                              : json_integer((json_int_t)s.total);
        json_t *e = json_pack("{s:o,s:I,s:o,s:o,s:s,s:s,s:o,s:o}", "labels", lj, "profiles", (json_int_t)s.profiles,
                              "samples", query_samples_json(s.samples, s.samples_unknown), "total", total,
                              "aggregation", s.gauge ? "average" : "sum",
                              "unit", s.mixed ? "mixed" : (s.unit ? s.unit : "samples"),
                              "first", query_time_json(s.first), "last", query_time_json(s.last));
        if (!e || json_array_append_new(arr, e)) goto fail;
    }
    json_object_set_new(o, "series", arr);
    return o;
fail:
    json_decref(arr);
    json_decref(o);
    return NULL;
}

json_t *query_sample_names_json(const query_sample_labels *l)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < l->n;) {
        size_t j = i;
        while (j < l->n && !strcmp(l->pairs[j].key, l->pairs[i].key)) j++;
        json_t *e = json_pack("{s:s,s:I}", "name", l->pairs[i].key, "values", (json_int_t)(j - i));
        if (!e || json_array_append_new(arr, e)) {
            json_decref(arr);
            return NULL;
        }
        i = j;
    }
    return arr;
}

json_t *query_sample_values_json(const query_sample_labels *l, const char *key)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < l->n; i++) {
        if (strcmp(l->pairs[i].key, key)) continue;
        if (json_array_append_new(arr, json_string(l->pairs[i].value))) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr ? json_pack("{s:o}", "values", arr) : NULL;
}
