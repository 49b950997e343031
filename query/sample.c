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
 * and a different set (compare's other side) makes it decide again.
 *
 * Discovery (query_sample_labels_scan): which labels exist is only known
 * from the stacks, so the listings read them with a filter of their own
 * that keeps what the set's matchers keep and records every label set it
 * sees, bounded like a merge.  group_by_sample on a ranking
 * (query_sample_groups) splits a tree merged with the key kept at the
 * roots (store_reader_sample_root) into each value's function figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../storage/remote.h"
#include "query_internal.h"

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
    if (len) memcpy(*b + *n, s, len);
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
    if (n > 1) qsort(v, n, sizeof *v, str_cmp);
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

/* ---- discovering sample labels ---------------------------------------- */

static uint64_t pair_hash(const char *k, size_t kl, const char *v, size_t vl)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < kl; i++) h = (h ^ (unsigned char)k[i]) * UINT64_C(0x100000001b3);
    h = (h ^ 0x1f) * UINT64_C(0x100000001b3);
    for (size_t i = 0; i < vl; i++) h = (h ^ (unsigned char)v[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* Rebuilds the hash of l's pairs with n_slots slots (a power of two). */
static int pairs_rehash(query_sample_labels *l, size_t n_slots)
{
    uint32_t *s = calloc(n_slots, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < l->n; i++) {
        const query_sample_pair *p = &l->pairs[i];
        size_t j = pair_hash(p->key, strlen(p->key), p->value, strlen(p->value)) & (n_slots - 1);
        while (s[j]) j = (j + 1) & (n_slots - 1);
        s[j] = (uint32_t)(i + 1);
    }
    free(l->slots);
    l->slots = s;
    l->n_slots = n_slots;
    return 0;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Adds (k, v) to l unless it is there: 0, or -1 out of memory. */
static int pairs_add(query_sample_labels *l, const char *k, size_t kl, const char *v, size_t vl)
{
    if (l->n >= UINT32_MAX - 1) return -1;
    if ((l->n + 1) * 2 > l->n_slots && pairs_rehash(l, l->n_slots ? l->n_slots * 2 : 64)) return -1;
    size_t j = pair_hash(k, kl, v, vl) & (l->n_slots - 1);
    for (; l->slots[j]; j = (j + 1) & (l->n_slots - 1)) {
        const query_sample_pair *p = &l->pairs[l->slots[j] - 1];
        if (!strncmp(p->key, k, kl) && !p->key[kl] && !strncmp(p->value, v, vl) && !p->value[vl]) return 0;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        query_sample_pair *np = realloc(l->pairs, cap * sizeof *np);
        if (!np) return -1;
        l->pairs = np;
        l->cap = cap;
    }
    query_sample_pair *p = &l->pairs[l->n];
    p->key = dup_n(k, kl);
    p->value = dup_n(v, vl);
    if (!p->key || !p->value) {
        free(p->key);
        free(p->value);
        return -1;
    }
    l->slots[j] = (uint32_t)++l->n;
    return 0;
}

static int pair_cmp(const void *a, const void *b)
{
    const query_sample_pair *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->value, y->value);
}

/* After a scan: sorted, without the keys a selector would take for series
 * labels, hashed again. */
static int pairs_finish(store_reader *r, query_sample_labels *l)
{
    if (l->n > 1) qsort(l->pairs, l->n, sizeof *l->pairs, pair_cmp);
    size_t k = 0;
    int drop = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (!i || strcmp(l->pairs[i].key, l->pairs[i - 1].key))
            drop = !strncmp(l->pairs[i].key, "__", 2) || store_label_name_known(r, l->pairs[i].key);
        if (drop) {
            free(l->pairs[i].key);
            free(l->pairs[i].value);
        } else {
            l->pairs[k++] = l->pairs[i];
        }
    }
    l->n = k;
    return l->n_slots ? pairs_rehash(l, l->n_slots) : 0;
}

int query_sample_resolve(store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                         const char *key, query_sample_labels *found, query_series_set *out, char *err,
                         size_t errlen)
{
    int rc = query_resolve_all(r, sel, from_ms, until_ms, out, err, errlen);
    if (rc) return rc;
    unsigned char *kept = NULL;
    if (out->sample.n_matchers && !(kept = calloc(out->n_series + 1, 1))) {
        query_set_err(err, errlen, "out of memory matching series");
        query_series_set_free(out);
        return -1;
    }
    rc = query_sample_labels_scan(r, out, from_ms, until_ms, key, found, kept, err, errlen);
    if (rc) {
        free(kept);
        query_series_set_free(out);
        return rc;
    }
    size_t n = 0;
    for (size_t i = 0; i < out->n_series; i++)
        if (!kept || kept[i]) out->series[n++] = out->series[i];
    out->n_series = n;
    free(kept);
    return 0;
}

void query_sample_labels_free(query_sample_labels *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->pairs[i].key);
        free(l->pairs[i].value);
    }
    free(l->pairs);
    free(l->slots);
    memset(l, 0, sizeof *l);
}

/* The reader's filter while scanning: the set's own decision, and the
 * labels of every stack it keeps recorded. */
typedef struct {
    const query_series_set *set;
    const char *key;        /* NULL: every key */
    query_sample_labels *out;
    int failed;             /* out of memory */
} collect_ctx;

static int collect(void *ctx, const store_sample_label *labels, int n)
{
    collect_ctx *c = ctx;
    if (!sample_accept((void *)c->set, labels, n)) return 0;
    size_t kl = c->key ? strlen(c->key) : 0;
    for (int k = 0; c->out && k < n; k++) {
        if (c->key && (labels[k].key_len != kl || memcmp(labels[k].key, c->key, kl))) continue;
        if (pairs_add(c->out, labels[k].key, labels[k].key_len, labels[k].value, labels[k].value_len)) c->failed = 1;
    }
    return 1;
}

typedef struct {
    store_reader *r;
    unsigned char *kept;    /* per series, or NULL: blocks accumulated into acc */
    size_t cur;             /* the series being scanned */
    uint64_t *acc, *touched;
    uint64_t blocks;
    int rc;                 /* -1 damaged, -2 out of memory, -4 stopped */
} scan_ctx;

static int scan_block(const store_block *b, void *arg)
{
    scan_ctx *c = arg;
    if (!(c->blocks++ & 255) && store_reader_expired(c->r)) {
        c->rc = -4;
        return 1;
    }
    store_status ss;
    if (c->kept) {
        /* translated one by one: the pairs the filter kept say whether the
         * series holds a stack the matchers keep */
        const uint32_t *nodes;
        const uint64_t *counts;
        uint32_t n;
        ss = store_block_pairs(c->r, b, &nodes, &counts, &n);
        if (!ss && n) c->kept[c->cur] = 1;
    } else {
        uint64_t sum; /* the values do not matter, only which nodes were hit */
        ss = store_block_accumulate(c->r, b, 1, c->acc, c->touched, &sum);
    }
    if (ss) {
        c->rc = ss == STORE_ENOMEM ? -2 : -1;
        return 1;
    }
    return 0;
}

int query_sample_labels_scan(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                             const char *key, query_sample_labels *out, unsigned char *kept, char *err,
                             size_t errlen)
{
    if (kept) memset(kept, 0, set->n_series);
    if (!out && !kept) return 0;
    /* a key of its own: decisions of another filter (or of a merge) are
     * not taken for this one's, which must see every label set */
    const char *sk = set->sample_key ? set->sample_key : "{}";
    char *fkey = malloc(strlen(sk) + 16);
    if (!fkey) goto oom;
    snprintf(fkey, strlen(sk) + 16, "\001labels %s", sk);
    collect_ctx cc = { set, key, out, 0 };
    store_reader_sample_filter(r, collect, &cc, fkey);
    store_reader_prefetch_merged(r, set->series, set->n_series, from_ms, until_ms);
    store_part **parts;
    size_t np = store_reader_parts(r, from_ms, until_ms, &parts);
    scan_ctx c = { .r = r, .kept = kept };
    int rc = 0;
    for (size_t k = 0; k < np && !rc; k++) {
        uint32_t nl = store_part_nodes(r, parts[k]);
        if (!nl) continue;
        if (!kept) {
            c.acc = calloc(nl, sizeof *c.acc);
            c.touched = calloc(((size_t)nl + 63) / 64, sizeof *c.touched);
            if (!c.acc || !c.touched) rc = -2;
        }
        for (size_t i = 0; i < set->n_series && !rc; i++) {
            if (store_reader_expired(r)) {
                rc = -4;
                break;
            }
            c.cur = i;
            store_part_scan_merged(r, parts[k], set->series[i], from_ms, until_ms, scan_block, &c);
            rc = c.rc;
        }
        /* translating the hit nodes shows the filter every label set */
        for (size_t w = 0; !rc && !kept && w < ((size_t)nl + 63) / 64; w++) {
            uint64_t bits = c.touched[w];
            while (bits && !rc) {
                int failed = 0;
                store_part_node(r, parts[k], (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits)), &failed);
                bits &= bits - 1;
                if (failed) rc = -1;
            }
        }
        free(c.acc);
        free(c.touched);
        c.acc = c.touched = NULL;
        if (!rc && cc.failed) rc = -2;
    }
    /* a budget passed by the last scan stops it too: nothing partial */
    if (!rc && store_reader_expired(r)) rc = -4;
    store_reader_sample_filter(r, NULL, NULL, NULL);
    free(fkey);
    if (!rc && out && pairs_finish(r, out)) rc = -2;
    if (rc == -4) return query_stopped(r, err, errlen);
    if (rc == -2) goto oom;
    if (rc) {
        snprintf(err, errlen, "a stored profile could not be decoded (damaged data file?)");
        return -1;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory reading sample labels");
    return -1;
}

/* ---- a tree split by one sample label (group_by_sample) --------------- */

typedef struct {
    uint32_t node;
    const char *value;      /* the label's value; "" for a root without the label */
    uint32_t value_len;
    int label;              /* the root is the label's frame */
} sroot;

static int sroot_cmp(const void *a, const void *b)
{
    const sroot *x = a, *y = b;
    uint32_t n = x->value_len < y->value_len ? x->value_len : y->value_len;
    int c = memcmp(x->value, y->value, n);
    if (c) return c;
    if (x->value_len != y->value_len) return x->value_len < y->value_len ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

typedef struct {
    uint32_t group, fn;
    uint64_t self, total;
} sentry;

static int sentry_cmp(const void *a, const void *b)
{
    const sentry *x = a, *y = b;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    return (x->fn > y->fn) - (x->fn < y->fn);
}

static int sgroup_cmp(const void *a, const void *b)
{
    const query_sample_group *x = a, *y = b;
    if (x->figures.grand_total != y->figures.grand_total)
        return x->figures.grand_total > y->figures.grand_total ? -1 : 1;
    return strcmp(x->value, y->value);
}

#define SLABEL_ROOT UINT32_C(0x80000000) /* gid of a label's own frame */

int query_sample_groups(store_reader *r, const query_tree *t, const char *key, query_sample_group **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t kl = strlen(key), n_roots = 0, n_entries = 0, ng = 0;
    uint32_t *gid = calloc(t->n_nodes ? t->n_nodes : 1, sizeof *gid);
    sroot *roots = NULL;
    sentry *e = NULL;
    query_sample_group *g = NULL;
    if (!gid) goto oom;
    size_t n_touched = 0;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (id) n_touched++;
    })
    roots = malloc((n_touched ? n_touched : 1) * sizeof *roots);
    e = malloc((n_touched ? n_touched : 1) * sizeof *e);
    if (!roots || !e) goto oom;
    /* the root's children: a label's frame "key=value", or a stack's own root */
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (!id || store_node_parent(r, id)) continue;
        uint32_t len;
        const char *s = store_string(r, store_node_func(r, id), &len);
        int label = s && len > kl && s[kl] == '=' && !memcmp(s, key, kl);
        roots[n_roots++] = (sroot){ id, label ? s + kl + 1 : "", label ? len - (uint32_t)kl - 1 : 0, label };
    })
    if (n_roots > 1) qsort(roots, n_roots, sizeof *roots, sroot_cmp);
    g = calloc(n_roots ? n_roots : 1, sizeof *g);
    if (!g) goto oom;
    for (size_t i = 0; i < n_roots; i++) {
        if (!i || roots[i].value_len != roots[i - 1].value_len ||
            memcmp(roots[i].value, roots[i - 1].value, roots[i].value_len)) {
            query_sample_group *x = &g[ng++];
            if (!(x->value = dup_n(roots[i].value, roots[i].value_len))) goto oom;
            snprintf(x->figures.unit, sizeof x->figures.unit, "%s", t->unit);
            x->figures.divisor = t->divisor;
            x->figures.gauge = t->gauge;
            x->figures.inexact = t->inexact;
        }
        g[ng - 1].figures.grand_total += t->total[roots[i].node];
        gid[roots[i].node] = (uint32_t)(ng - 1) | (roots[i].label ? SLABEL_ROOT : 0);
    }
    /* every node's group is its root's (parents have smaller ids); each
     * function's self and total per group, recursion counted once */
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (!id) continue;
        uint32_t p = store_node_parent(r, id);
        if (p) gid[id] = gid[p] & ~SLABEL_ROOT;
        if (gid[id] & SLABEL_ROOT) continue;
        uint32_t f = store_node_func(r, id);
        int shadowed = 0;
        for (uint32_t a = p; a && !shadowed; a = store_node_parent(r, a)) shadowed = store_node_func(r, a) == f;
        e[n_entries++] = (sentry){ gid[id], f, t->self[id], shadowed ? 0 : t->total[id] };
    })
    if (n_entries > 1) qsort(e, n_entries, sizeof *e, sentry_cmp);
    for (size_t i = 0; i < n_entries;) {
        size_t j = i + 1, n = 1; /* the group's entries [i, j), n distinct functions */
        for (; j < n_entries && e[j].group == e[i].group; j++)
            if (e[j].fn != e[j - 1].fn) n++;
        query_functions *f = &g[e[i].group].f;
        f->fn = malloc(n * sizeof *f->fn);
        f->self = malloc(n * sizeof *f->self);
        f->total = malloc(n * sizeof *f->total);
        if (!f->fn || !f->self || !f->total) goto oom;
        for (size_t k = i; k < j; k++) {
            if (k == i || e[k].fn != e[k - 1].fn) {
                f->fn[f->n] = e[k].fn;
                f->self[f->n] = f->total[f->n] = 0;
                f->n++;
            }
            f->self[f->n - 1] += e[k].self;
            f->total[f->n - 1] += e[k].total;
        }
        i = j;
    }
    for (size_t i = 0; i < ng; i++) {
        /* a group holding the whole tree has its samples; others cannot
         * say (a block's samples are not split by stack) */
        int whole = g[i].figures.grand_total == t->grand_total;
        g[i].figures.samples = whole ? t->samples : 0;
        g[i].figures.samples_unknown = whole ? t->samples_unknown : 1;
    }
    if (ng > 1) qsort(g, ng, sizeof *g, sgroup_cmp);
    free(gid);
    free(roots);
    free(e);
    *out = g;
    *n_out = ng;
    return 0;
oom:
    free(gid);
    free(roots);
    free(e);
    query_sample_groups_free(g, ng);
    return -1;
}

void query_sample_groups_free(query_sample_group *g, size_t n)
{
    for (size_t i = 0; g && i < n; i++) {
        free(g[i].value);
        query_functions_free(&g[i].f);
    }
    free(g);
}

int query_sample_rank_trees(store_reader *r, const query_tree *const *trees, size_t n_trees, const char *key,
                             query_sample_ranking *out)
{
    memset(out, 0, sizeof *out);
    out->groups = calloc(n_trees ? n_trees : 1, sizeof *out->groups);
    out->n_groups = calloc(n_trees ? n_trees : 1, sizeof *out->n_groups);
    out->n_trees = n_trees;
    if (!out->groups || !out->n_groups) goto fail;
    size_t all = 0;
    for (size_t i = 0; i < n_trees; i++) {
        if (query_sample_groups(r, trees[i], key, &out->groups[i], &out->n_groups[i])) goto fail;
        all += out->n_groups[i];
    }
    if (!(out->rows = malloc((all ? all : 1) * sizeof *out->rows))) goto fail;
    for (size_t i = 0; i < n_trees; i++)
        for (size_t j = 0; j < out->n_groups[i]; j++) out->rows[out->n++] = (query_sample_row){ i, &out->groups[i][j] };
    /* insertion sort keeps the tie order: stable */
    for (size_t a = 1; a < out->n; a++)
        for (size_t b = a; b > 0 && out->rows[b].g->figures.grand_total > out->rows[b - 1].g->figures.grand_total; b--) {
            query_sample_row t = out->rows[b];
            out->rows[b] = out->rows[b - 1];
            out->rows[b - 1] = t;
        }
    return 0;
fail:
    query_sample_ranking_free(out);
    return -1;
}

void query_sample_ranking_free(query_sample_ranking *s)
{
    for (size_t i = 0; s->groups && i < s->n_trees; i++) query_sample_groups_free(s->groups[i], s->n_groups[i]);
    free(s->groups);
    free(s->n_groups);
    free(s->rows);
    memset(s, 0, sizeof *s);
}
