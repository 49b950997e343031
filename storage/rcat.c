/* rcat.c — a catalog of series built by the caller (remote.h), read like
 * the store's catalog by remote readers.
 *
 * Series are label arrays in an arena, reader ids 1..n in the order added.
 * Sealing sorts two indexes: postings as (name, value, id) triples, so a
 * name=value lookup is a binary search and its ids come out ascending, and
 * the distinct label names.  After sealing nothing changes: readers on any
 * thread read it without locks, and the last reference frees it. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "rmem.h"

typedef struct {
    const char *name, *value;
    uint32_t sid;
} posting;

struct store_rcat {
    _Atomic int refs;
    int sealed;
    arena strs;
    uint64_t bytes;
    uint32_t n;              /* series 1..n */
    store_label **labels;    /* by id; [0] unused */
    int *n_labels;
    uint32_t cap;
    posting *post;
    size_t n_post, cap_post;
    const char **names;      /* distinct, sorted (after sealing) */
    size_t n_names;
};

store_rcat *store_rcat_new(void)
{
    store_rcat *c = calloc(1, sizeof *c);
    if (c) atomic_init(&c->refs, 1);
    return c;
}

static char *copy(store_rcat *c, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(&c->strs, n);
    if (d) memcpy(d, s, n);
    c->bytes += n;
    return d;
}

store_status store_rcat_add(store_rcat *c, const store_label *labels, int n, uint32_t *sid)
{
    if (c->sealed || n < 0) return STORE_EINVAL;
    if (c->n + 1 >= c->cap) {
        uint32_t cap = c->cap ? 2 * c->cap : 256;
        store_label **l = realloc(c->labels, cap * sizeof *l);
        if (l) c->labels = l;
        int *nl = realloc(c->n_labels, cap * sizeof *nl);
        if (nl) c->n_labels = nl;
        if (!l || !nl) return STORE_ENOMEM;
        c->cap = cap;
    }
    if (c->n_post + (size_t)n > c->cap_post) {
        size_t cap = c->cap_post ? 2 * c->cap_post : 1024;
        while (cap < c->n_post + (size_t)n) cap *= 2;
        posting *p = realloc(c->post, cap * sizeof *p);
        if (!p) return STORE_ENOMEM;
        c->post = p;
        c->cap_post = cap;
    }
    store_label *l = arena_alloc(&c->strs, (size_t)(n ? n : 1) * sizeof *l);
    if (!l) return STORE_ENOMEM;
    uint32_t id = c->n + 1;
    for (int i = 0; i < n; i++) {
        l[i].name = copy(c, labels[i].name);
        l[i].value = copy(c, labels[i].value);
        if (!l[i].name || !l[i].value) return STORE_ENOMEM;
        c->post[c->n_post++] = (posting){ l[i].name, l[i].value, id };
    }
    c->labels[id] = l;
    c->n_labels[id] = n;
    c->n = id;
    c->bytes += (uint64_t)n * (sizeof *l + sizeof(posting));
    *sid = id;
    return STORE_OK;
}

static int post_cmp(const void *a, const void *b)
{
    const posting *x = a, *y = b;
    int s = strcmp(x->name, y->name);
    if (!s) s = strcmp(x->value, y->value);
    return s ? s : (x->sid > y->sid) - (x->sid < y->sid);
}

store_status store_rcat_seal(store_rcat *c)
{
    if (c->sealed) return STORE_OK;
    if (c->n_post) qsort(c->post, c->n_post, sizeof *c->post, post_cmp);
    c->names = malloc((c->n_post ? c->n_post : 1) * sizeof *c->names);
    if (!c->names) return STORE_ENOMEM;
    for (size_t i = 0; i < c->n_post; i++)
        if (!c->n_names || strcmp(c->names[c->n_names - 1], c->post[i].name))
            c->names[c->n_names++] = c->post[i].name;
    c->bytes += c->n_names * sizeof *c->names + (uint64_t)c->cap * (sizeof *c->labels + sizeof *c->n_labels);
    c->sealed = 1;
    return STORE_OK;
}

uint32_t store_rcat_count(const store_rcat *c) { return c->n; }
uint64_t store_rcat_memory(const store_rcat *c) { return c->bytes; }

void store_rcat_ref(store_rcat *c) { atomic_fetch_add(&c->refs, 1); }

void store_rcat_unref(store_rcat *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
    arena_free(&c->strs);
    free(c->labels);
    free(c->n_labels);
    free(c->post);
    free(c->names);
    free(c);
}

/* ---- what readers ask (rmem.h) ---- */

int rcat_labels(const store_rcat *c, uint32_t sid, store_label *out, int max)
{
    if (!sid || sid > c->n) return 0;
    int n = c->n_labels[sid];
    for (int i = 0; i < n && i < max; i++) out[i] = c->labels[sid][i];
    return n;
}

const char *rcat_label(const store_rcat *c, uint32_t sid, const char *name)
{
    if (!sid || sid > c->n) return NULL;
    for (int i = 0; i < c->n_labels[sid]; i++)
        if (!strcmp(c->labels[sid][i].name, name)) return c->labels[sid][i].value;
    return NULL;
}

/* The first posting not below (name, value, sid). */
static size_t lower(const store_rcat *c, const char *name, const char *value, uint32_t sid)
{
    size_t a = 0, b = c->n_post;
    posting key = { name, value, sid };
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (post_cmp(&c->post[m], &key) < 0) a = m + 1;
        else b = m;
    }
    return a;
}

store_status rcat_postings(const store_rcat *c, const char *name, const char *value, uint32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    size_t a = lower(c, name, value, 0), b = lower(c, name, value, UINT32_MAX);
    if (a == b) return STORE_OK;
    if (!(*ids = malloc((b - a) * sizeof **ids))) return STORE_ENOMEM;
    for (size_t i = a; i < b; i++) (*ids)[i - a] = c->post[i].sid;
    *n = b - a;
    return STORE_OK;
}

int rcat_name_known(const store_rcat *c, const char *name)
{
    size_t a = 0, b = c->n_names;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        int s = strcmp(c->names[m], name);
        if (!s) return 1;
        if (s < 0) a = m + 1;
        else b = m;
    }
    return 0;
}
