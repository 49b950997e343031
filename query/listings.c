/* listings.c — what is stored, for discovery: label names with their
 * cardinality, the values of one label, and series with statistics over a
 * time range and the units they are answered in (from the block headers
 * alone: no decoding); and the names
 * and values of the sample labels query_sample_labels_scan found (sample.c:
 * those are read from the stacks).  Each answers a list (data, names the
 * reader's); encode_json.c writes /api/v1's JSON of them and the Connect
 * handlers (LabelNames, LabelValues) their messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

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

/* Room for one more item in a list of at most limit (0: no bound); past
 * it, *cut is set and the item left out. */
static int room(size_t listed, size_t limit, int *cut)
{
    if (limit && listed >= limit) {
        *cut = 1;
        return 0;
    }
    return 1;
}

int query_label_names(store_reader *r, const uint32_t *ids, size_t n, const char *hide, size_t limit,
                      query_label_list *out)
{
    size_t k;
    memset(out, 0, sizeof *out);
    label_ref *refs = collect(r, ids, n, &k);
    out->items = malloc((k ? k : 1) * sizeof *out->items);
    if (!refs || !out->items) {
        free(refs);
        query_label_list_free(out);
        return -1;
    }
    for (size_t i = 0; i < k;) {
        size_t j = i, values = 0;
        while (j < k && strcmp(refs[j].name, refs[i].name) == 0) {
            if (j == i || strcmp(refs[j].value, refs[j - 1].value)) values++;
            j++;
        }
        if (!(hide && !strcmp(refs[i].name, hide))) {
            if (!room(out->n, limit, &out->cut)) break;
            out->items[out->n++] = (query_label_count){ refs[i].name, values };
        }
        i = j;
    }
    free(refs);
    return 0;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

int query_label_values(store_reader *r, const uint32_t *ids, size_t n, const char *name, size_t limit,
                       query_value_list *out)
{
    memset(out, 0, sizeof *out);
    out->items = malloc((n ? n : 1) * sizeof *out->items);
    if (!out->items) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = store_series_label(r, ids[i], name);
        if (v) out->items[k++] = v;
    }
    qsort(out->items, k, sizeof *out->items, str_cmp);
    for (size_t i = 0; i < k; i++) {
        if (out->n && !strcmp(out->items[out->n - 1], out->items[i])) continue;
        if (!room(out->n, limit, &out->cut)) break;
        out->items[out->n++] = out->items[i];
    }
    return 0;
}

int query_sample_names(const query_sample_labels *l, size_t limit, query_label_list *out)
{
    memset(out, 0, sizeof *out);
    out->items = malloc((l->n ? l->n : 1) * sizeof *out->items);
    if (!out->items) return -1;
    for (size_t i = 0; i < l->n;) {
        size_t j = i;
        while (j < l->n && !strcmp(l->pairs[j].key, l->pairs[i].key)) j++;
        if (!room(out->n, limit, &out->cut)) break;
        out->items[out->n++] = (query_label_count){ l->pairs[i].key, j - i };
        i = j;
    }
    return 0;
}

int query_sample_values(const query_sample_labels *l, const char *key, size_t limit, query_value_list *out)
{
    memset(out, 0, sizeof *out);
    out->items = malloc((l->n ? l->n : 1) * sizeof *out->items);
    if (!out->items) return -1;
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->pairs[i].key, key)) continue;
        if (!room(out->n, limit, &out->cut)) break;
        out->items[out->n++] = l->pairs[i].value;
    }
    return 0;
}

void query_label_list_free(query_label_list *l)
{
    free(l->items);
    memset(l, 0, sizeof *l);
}

void query_value_list_free(query_value_list *l)
{
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int unit_block(const store_block *b, void *arg)
{
    query_unit_set *u = arg;
    uint64_t w;
    const char *unit = query_block_unit(b, &w);
    for (int i = 0; i < u->n; i++)
        if (!strcmp(u->units[i], unit)) return 0;
    if (u->n < QUERY_MAX_UNITS) snprintf(u->units[u->n++], sizeof u->units[0], "%s", unit);
    return 0;
}

void query_series_units(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms, query_unit_set *out)
{
    out->n = 0;
    store_blocks_scan(r, sid, from_ms, until_ms, unit_block, out);
}

/* Scanning one series' blocks into its figures. */
typedef struct {
    store_reader *r;
    query_series_stat *s;
    int filtered;       /* the reader has the set's sample filter: kept stacks only */
    uint64_t blocks;
    int rc;             /* 0, QUERY_ETOOBIG, -1 damaged, -2 out of memory, -4 stopped */
} stat_ctx;

static int stat_block(const store_block *b, void *arg)
{
    stat_ctx *c = arg;
    query_series_stat *s = c->s;
    uint64_t counts = b->counts;
    if (c->filtered) {
        if (!(c->blocks++ & 255) && store_reader_expired(c->r)) { /* decoding costs what a merge does */
            c->rc = -4;
            return 1;
        }
        /* the stacks the filter keeps (store_part_node drops the others) */
        const uint32_t *nodes;
        const uint64_t *pc;
        uint32_t np;
        store_status ss = store_block_pairs(c->r, b, &nodes, &pc, &np);
        if (ss) {
            c->rc = ss == STORE_ENOMEM ? -2 : -1;
            return 1;
        }
        counts = 0;
        for (uint32_t i = 0; i < np; i++) counts += pc[i]; /* at most b->counts */
        if (!np) return 0;      /* no stack kept: not a profile of the listing */
        if (counts != b->counts) s->dropped = 1;
    }
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
    if (query_add_weighted(&s->total, counts, w)) c->rc = QUERY_ETOOBIG;
    return c->rc != 0;
}

int query_series_stats(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                       size_t limit, query_series_list *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    stat_ctx c = { .r = r, .filtered = set->sample.n_matchers > 0 };
    out->items = calloc(set->n_series ? set->n_series : 1, sizeof *out->items);
    if (!out->items) {
        query_set_err(err, errlen, "out of memory listing series");
        return -1;
    }
    if (c.filtered) query_sample_install(r, set);
    int rc = 0;
    for (size_t i = 0; i < set->n_series && !rc; i++) {
        if (store_reader_expired(r)) { /* nothing partial: the caller says why */
            rc = query_stopped(r, err, errlen);
            break;
        }
        query_series_stat *s = &out->items[out->n];
        memset(s, 0, sizeof *s);
        s->id = set->series[i];
        c.s = s;
        store_blocks_scan(r, s->id, from_ms, until_ms, stat_block, &c);
        rc = c.rc;
        if (rc || !s->profiles) continue; /* held no stack the filter keeps */
        if (!room(out->n, limit, &out->cut)) break;
        out->n++;
    }
    if (c.filtered) store_reader_sample_filter(r, NULL, NULL, NULL);
    if (rc == -4)
        rc = query_stopped(r, err, errlen);
    else if (rc == QUERY_ETOOBIG)
        query_set_err(err, errlen, "a series' profiles in this range add up to more than 2^63 in their unit: "
                                   "too much for exact integers; narrow the range or the selector");
    else if (rc == -2)
        query_set_err(err, errlen, "out of memory listing series");
    else if (rc == -1)
        query_set_err(err, errlen, "a stored profile could not be decoded (damaged data file?)");
    if (rc) query_series_list_free(out);
    return rc;
}

void query_series_list_free(query_series_list *l)
{
    free(l->items);
    memset(l, 0, sizeof *l);
}
