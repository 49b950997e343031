/* resolve.c — from a selector to the series it matches, of one type.
 *
 * Candidates come from the label index when the selector has an equality
 * matcher with a non-empty value (the shortest such postings list wins);
 * otherwise every series is a candidate.  Each candidate is then checked
 * against every matcher.  A query merges one profile type at a time: the
 * matched series are split by their `type` label and one type is chosen
 * (the selector's own type=, else cpu, else samples, else the first
 * alphabetically); the others are reported so the user can ask for them. */
#include <stdlib.h>
#include <string.h>

#include "../storage/remote.h"
#include "query.h"

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The candidate series: a postings list copy (answers 1), or all (0).
 * skip (may be NULL): matchers left out (sample labels, sample.c). */
static int candidates(store_reader *r, const query_selector *sel, const unsigned char *skip, uint32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    int have = 0;
    for (int i = 0; i < sel->n_matchers; i++) {
        const query_matcher *m = &sel->matchers[i];
        if (m->op != QUERY_EQ || !m->value[0] || (skip && skip[i])) continue;
        uint32_t *p;
        size_t pn;
        if (store_postings(r, m->name, m->value, &p, &pn)) {
            free(*ids);
            return -1;
        }
        if (!have || pn < *n) {
            free(*ids);
            *ids = p;
            *n = pn;
        } else {
            free(p);
        }
        have = 1;
    }
    return have;
}

static int series_matches(store_reader *r, const query_selector *sel, const unsigned char *skip, uint32_t sid)
{
    for (int i = 0; i < sel->n_matchers; i++) {
        const query_matcher *m = &sel->matchers[i];
        if (skip && skip[i]) continue;
        if (!query_matcher_match(m, store_series_label(r, sid, m->name))) return 0;
    }
    return 1;
}

static int match_labels(store_reader *r, const query_selector *sel, const unsigned char *skip, uint32_t **ids,
                        size_t *n)
{
    uint32_t *cand;
    size_t n_cand;
    int have = candidates(r, sel, skip, &cand, &n_cand);
    if (have < 0) return -1;
    size_t total = have ? n_cand : store_series_count(r);
    uint32_t *out = malloc((total ? total : 1) * sizeof *out);
    if (!out) {
        free(cand);
        return -1;
    }
    size_t k = 0;
    uint32_t sid = 0;
    for (size_t i = 0; i < total; i++) {
        sid = have ? cand[i] : store_series_next(r, sid); /* ids have gaps where series expired */
        if (sid && series_matches(r, sel, skip, sid)) out[k++] = sid;
    }
    free(cand);
    *ids = out;
    *n = k;
    return 0;
}

int query_match_labels(store_reader *r, const query_selector *sel, uint32_t **ids, size_t *n)
{
    return match_labels(r, sel, NULL, ids, n);
}

static int match_in(store_reader *r, const query_selector *sel, const unsigned char *skip, int64_t from_ms,
                    int64_t until_ms, uint32_t **ids, size_t *n)
{
    if (match_labels(r, sel, skip, ids, n)) return -1;
    /* a remote reader (storage/remote.h) loads them all now, in one go */
    store_reader_prefetch(r, *ids, *n, from_ms, until_ms);
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (store_series_has_blocks(r, (*ids)[i], from_ms, until_ms)) (*ids)[k++] = (*ids)[i];
    *n = k;
    return 0;
}

int query_match(store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                uint32_t **ids, size_t *n)
{
    return match_in(r, sel, NULL, from_ms, until_ms, ids, n);
}

/* Picks the type to merge among the distinct types matched. */
static const char *pick_type(const query_selector *sel, char **types, size_t n)
{
    const char *want = query_selector_eq(sel, "type");
    for (size_t i = 0; want && i < n; i++)
        if (strcmp(types[i], want) == 0) return types[i];
    for (size_t i = 0; i < n; i++)
        if (strcmp(types[i], "cpu") == 0) return types[i];
    for (size_t i = 0; i < n; i++)
        if (strcmp(types[i], "samples") == 0) return types[i];
    return n ? types[0] : NULL;
}

int query_resolve(store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                  query_series_set *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint32_t *matched = NULL;
    size_t n_matched = 0, n_types = 0;
    const char **mtype = NULL;
    char **types = NULL;
    unsigned char *skip = calloc((size_t)sel->n_matchers + 1, 1);
    if (!skip || query_sample_split(r, sel, skip, &out->sample, &out->sample_key) ||
        match_in(r, sel, skip, from_ms, until_ms, &matched, &n_matched)) {
        free(skip);
        goto oom;
    }
    free(skip);
    mtype = malloc((n_matched ? n_matched : 1) * sizeof *mtype);
    types = malloc((n_matched ? n_matched : 1) * sizeof *types);
    out->series = malloc((n_matched ? n_matched : 1) * sizeof *out->series);
    if (!mtype || !types || !out->series) goto oom;
    for (size_t i = 0; i < n_matched; i++) {
        const char *t = store_series_label(r, matched[i], "type");
        mtype[i] = t ? t : "";
        size_t j = 0;
        while (j < n_types && strcmp(types[j], mtype[i])) j++;
        if (j == n_types) types[n_types++] = (char *)mtype[i];
    }
    qsort(types, n_types, sizeof *types, str_cmp);
    const char *chosen = pick_type(sel, types, n_types);
    if (chosen) snprintf(out->type, sizeof out->type, "%s", chosen);
    for (size_t i = 0; i < n_matched; i++)
        if (chosen && strcmp(mtype[i], chosen) == 0) out->series[out->n_series++] = matched[i];
    out->other_types = calloc(n_types ? n_types : 1, sizeof *out->other_types);
    if (!out->other_types) goto oom;
    for (size_t i = 0; i < n_types; i++) {
        if (chosen && strcmp(types[i], chosen) == 0) continue;
        if (!(out->other_types[out->n_other_types] = strdup(types[i]))) goto oom;
        out->n_other_types++;
    }
    free(matched);
    free(mtype);
    free(types);
    return 0;
oom:
    free(matched);
    free(mtype);
    free(types);
    query_series_set_free(out);
    snprintf(err, errlen, "out of memory resolving the selector");
    return -1;
}

int query_resolve_all(store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                      query_series_set *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    unsigned char *skip = calloc((size_t)sel->n_matchers + 1, 1);
    if (!skip || query_sample_split(r, sel, skip, &out->sample, &out->sample_key) ||
        match_in(r, sel, skip, from_ms, until_ms, &out->series, &out->n_series)) {
        free(skip);
        query_series_set_free(out);
        snprintf(err, errlen, "out of memory resolving the selector");
        return -1;
    }
    free(skip);
    return 0;
}

void query_series_set_free(query_series_set *set)
{
    for (size_t i = 0; i < set->n_other_types; i++) free(set->other_types[i]);
    free(set->other_types);
    free(set->series);
    query_selector_free(&set->sample);
    free(set->sample_key);
    for (size_t i = 0; i < set->n_span_ids; i++) free(set->span_ids[i]);
    free(set->span_ids);
    memset(set, 0, sizeof *set);
}
