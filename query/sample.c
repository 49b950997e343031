/* sample.c — selecting stacks by their sample labels (issue 11, point 5).
 *
 * A pprof Sample.label, an OTLP sample attribute or trace link is stored as
 * a pseudo-frame at the root of its stack (storage/store.h), not as a
 * series label: a span id per sample would otherwise make a series per
 * span.  A selector names them like series labels, {service="api",
 * span_id="ab12"}: a matcher whose name no series of the store carries is
 * about sample labels (series labels win, so a selector that worked before
 * means what it meant), and so do reserved names starting with "__" (the
 * tenant's scope), which ingest never keeps as sample labels.  query_resolve matches series without those
 * matchers and keeps them in the series set; query_merge installs them on
 * the reader as a filter over each stack's sample labels (the reader asks
 * once per distinct label prefix, at the first real frame, and every node
 * below inherits the answer).
 *
 * The matchers are kept as the canonical text of a selector made of them
 * alone, parsed again: that text is also the filter's key, so merges with
 * the same matchers (the groups of one answer) keep the reader's decisions
 * and a different set (compare's other side) makes it decide again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"

/* Appends s to the growing buffer *b (length *n, capacity *cap). */
static int put(char **b, size_t *n, size_t *cap, const char *s, size_t len)
{
    if (*n + len + 1 > *cap) {
        size_t c = (*n + len + 1) * 2;
        char *nb = realloc(*b, c);
        if (!nb) return -1;
        *b = nb;
        *cap = c;
    }
    memcpy(*b + *n, s, len);
    *n += len;
    (*b)[*n] = '\0';
    return 0;
}

int query_sample_split(store_reader *r, const query_selector *sel, unsigned char *is_sample, query_selector *sample,
                       char **key)
{
    static const char *const ops[] = { "=", "!=", "=~", "!~" };
    memset(sample, 0, sizeof *sample);
    *key = NULL;
    char *b = NULL;
    size_t n = 0, cap = 0;
    int any = 0;
    for (int i = 0; i < sel->n_matchers; i++) {
        const query_matcher *m = &sel->matchers[i];
        /* reserved names (__tenant__, Pyroscope's __name__) are never sample
         * labels: a tenant's scope must select series whatever the data */
        is_sample[i] = strncmp(m->name, "__", 2) != 0 && !store_label_name_known(r, m->name);
        if (!is_sample[i]) continue;
        if (put(&b, &n, &cap, any ? ", " : "{", any ? 2 : 1) || put(&b, &n, &cap, m->name, strlen(m->name)) ||
            put(&b, &n, &cap, ops[m->op], strlen(ops[m->op])) || put(&b, &n, &cap, "\"", 1))
            goto oom;
        for (const char *v = m->value; *v; v++) {
            char esc[2] = { '\\', *v };
            const char *w = *v == '"' || *v == '\\' ? esc : *v == '\n' ? "\\n" : *v == '\t' ? "\\t" : v;
            if (put(&b, &n, &cap, w, w == v ? 1 : 2)) goto oom;
        }
        if (put(&b, &n, &cap, "\"", 1)) goto oom;
        any = 1;
    }
    if (!any) return 0;
    if (put(&b, &n, &cap, "}", 1)) goto oom;
    char err[256];
    if (query_selector_parse(b, sample, err, sizeof err)) goto oom; /* it parsed once: only memory fails */
    *key = b;
    return 0;
oom:
    free(b);
    return -1;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int query_sample_spans(query_series_set *set, char *const *ids, size_t n, char *err, size_t errlen)
{
    if (!n) {
        snprintf(err, errlen, "span_selector: no span id (give the hex ids of the spans)");
        return -1;
    }
    if (n > QUERY_MAX_SPAN_IDS) {
        snprintf(err, errlen, "span_selector: %zu span ids, at most %d", n, QUERY_MAX_SPAN_IDS);
        return -1;
    }
    char **v = calloc(n, sizeof *v);
    if (!v) goto oom;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(ids[i]);
        if (!len || len > 32 || strspn(ids[i], "0123456789abcdefABCDEF") != len) {
            snprintf(err, errlen, "span_selector[%zu]: '%.40s' is not a span id (1 to 32 hex digits)", i, ids[i]);
            for (size_t k = 0; k < i; k++) free(v[k]);
            free(v);
            return -1;
        }
        if (!(v[i] = strdup(ids[i]))) {
            for (size_t k = 0; k < i; k++) free(v[k]);
            free(v);
            goto oom;
        }
        for (char *p = v[i]; *p; p++)
            if (*p >= 'A' && *p <= 'F') *p = (char)(*p - 'A' + 'a');
    }
    qsort(v, n, sizeof *v, str_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && !strcmp(v[u - 1], v[i])) free(v[i]);
        else v[u++] = v[i];
    }
    /* the filter's key: the matchers', then the spans */
    char *b = NULL;
    size_t bl = 0, cap = 0;
    const char *head = set->sample_key ? set->sample_key : "{}";
    int bad = put(&b, &bl, &cap, head, strlen(head)) || put(&b, &bl, &cap, " spans:", 7);
    for (size_t i = 0; i < u && !bad; i++) bad = put(&b, &bl, &cap, v[i], strlen(v[i])) || put(&b, &bl, &cap, ",", 1);
    if (bad) {
        for (size_t i = 0; i < u; i++) free(v[i]);
        free(v);
        free(b);
        goto oom;
    }
    free(set->sample_key);
    set->sample_key = b;
    set->span_ids = v;
    set->n_span_ids = u;
    return 0;
oom:
    snprintf(err, errlen, "out of memory reading span_selector");
    return -1;
}

/* The reader's filter: every matcher holds for the stack's labels, and its
 * span_id is one of the set's spans when it names any. */
static int sample_accept(void *ctx, const store_sample_label *labels, int n)
{
    const query_series_set *set = ctx;
    const query_selector *sel = &set->sample;
    if (set->n_span_ids) {
        int in = 0;
        for (int k = 0; k < n && !in; k++) {
            if (labels[k].key_len != 7 || memcmp(labels[k].key, "span_id", 7)) continue;
            char id[33];
            if (labels[k].value_len > 32) return 0;
            for (uint32_t i = 0; i < labels[k].value_len; i++) {
                char c = labels[k].value[i];
                id[i] = c >= 'A' && c <= 'F' ? (char)(c - 'A' + 'a') : c;
            }
            id[labels[k].value_len] = '\0';
            const char *key = id;
            in = bsearch(&key, set->span_ids, set->n_span_ids, sizeof *set->span_ids, str_cmp) != NULL;
        }
        if (!in) return 0;
    }
    for (int i = 0; i < sel->n_matchers; i++) {
        const query_matcher *m = &sel->matchers[i];
        size_t nl = strlen(m->name);
        const char *value = NULL;
        char buf[4096];
        for (int k = 0; k < n; k++) {
            if (labels[k].key_len != nl || memcmp(labels[k].key, m->name, nl)) continue;
            size_t vl = labels[k].value_len < sizeof buf - 1 ? labels[k].value_len : sizeof buf - 1;
            memcpy(buf, labels[k].value, vl);
            buf[vl] = '\0';
            value = buf;
            break;
        }
        if (!query_matcher_match(m, value)) return 0;
    }
    return 1;
}

void query_sample_install(store_reader *r, const query_series_set *set)
{
    if (set->sample.n_matchers || set->n_span_ids)
        store_reader_sample_filter(r, sample_accept, (void *)set, set->sample_key);
    else
        store_reader_sample_filter(r, NULL, NULL, NULL);
}
