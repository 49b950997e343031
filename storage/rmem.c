/* rmem.c — a remote reader's loaded data (remote.h): one partition held
 * in memory.
 *
 * Its dictionaries are those of an LMDB partition, in memory: strings
 * (frame texts and units, copied into an arena, found by a 64-bit hash
 * confirmed by comparison) and a call tree (node = parent + string, parents
 * created before children, found by (parent, string)).  A profile becomes a
 * block value in storage's block codec (block.h), so the reader scans,
 * decodes and accumulates it like a stored one.  Per series: its blocks in
 * time order, and the time ranges loaded so far (sorted, disjoint), so
 * that a load asks only for what is missing; merged blocks by the exact
 * range a merge asked for (a few per reader); and what the source said of
 * the series' presence in ranges. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "arena.h"
#include "block.h"
#include "hash.h"
#include "idmap.h"
#include "rmem.h"

#define STR_SEED UINT64_C(0x9e3779b97f4a7c15)

typedef struct {
    rmem_block *b;
    size_t n, cap;
    int unsorted;            /* a load appended blocks before earlier ones */
    rmem_range *loaded;
    size_t n_loaded, cap_loaded;
    int has_extent;
    store_rextent extent;
    struct rmerged *mg;      /* merged blocks, by range */
    size_t n_mg, cap_mg;
    struct rpres *pr;        /* presence, by range */
    size_t n_pr;
} rser;

typedef struct rmerged {
    int64_t from, until;
    rmem_block *b;
    size_t n, cap;
    int done;
} rmerged;

typedef struct rpres {
    int64_t from, until;
    int present;
} rpres;

struct store_rmem {
    const store_rcat *cat;
    arena bytes;              /* strings */
    const char **str;
    uint32_t *str_len;
    uint32_t n_str, cap_str;
    idmap str_map;
    uint32_t *parent, *func;
    uint32_t n_nodes, cap_nodes;
    idmap node_map;
    rser *ser;                /* by series id, [0] unused */
    uint32_t n_ser;
    ZSTD_CCtx *zc;
    uint32_t *tn;             /* a profile's pairs, being sorted */
    uint64_t *tc;
    size_t tcap;
    uint64_t memory;
};

store_rmem *rmem_new(const store_rcat *cat)
{
    store_rmem *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->cat = cat;
    m->n_ser = store_rcat_count(cat);
    m->ser = calloc((size_t)m->n_ser + 1, sizeof *m->ser);
    m->cap_str = m->cap_nodes = 1024;
    m->str = malloc(m->cap_str * sizeof *m->str);
    m->str_len = malloc(m->cap_str * sizeof *m->str_len);
    m->parent = malloc(m->cap_nodes * sizeof *m->parent);
    m->func = malloc(m->cap_nodes * sizeof *m->func);
    if (!m->ser || !m->str || !m->str_len || !m->parent || !m->func || idmap_init(&m->str_map, 1024) ||
        idmap_init(&m->node_map, 1024)) {
        rmem_free(m);
        return NULL;
    }
    m->str[0] = "";
    m->str_len[0] = 0;
    m->n_str = 1;
    m->parent[0] = m->func[0] = 0;
    m->n_nodes = 1;
    return m;
}

void rmem_free(store_rmem *m)
{
    if (!m) return;
    for (uint32_t i = 0; m->ser && i <= m->n_ser; i++) {
        for (size_t k = 0; k < m->ser[i].n; k++) free((void *)m->ser[i].b[k].val);
        free(m->ser[i].b);
        free(m->ser[i].loaded);
        for (size_t g = 0; g < m->ser[i].n_mg; g++) {
            for (size_t k = 0; k < m->ser[i].mg[g].n; k++) free((void *)m->ser[i].mg[g].b[k].val);
            free(m->ser[i].mg[g].b);
        }
        free(m->ser[i].mg);
        free(m->ser[i].pr);
    }
    free(m->ser);
    arena_free(&m->bytes);
    free(m->str);
    free(m->str_len);
    free(m->parent);
    free(m->func);
    idmap_free(&m->str_map);
    idmap_free(&m->node_map);
    ZSTD_freeCCtx(m->zc);
    free(m->tn);
    free(m->tc);
    free(m);
}

uint32_t rmem_nodes(const store_rmem *m) { return m->n_nodes; }
uint32_t rmem_strings(const store_rmem *m) { return m->n_str; }

uint64_t rmem_memory(const store_rmem *m)
{
    return m->memory + (uint64_t)m->cap_str * (sizeof *m->str + sizeof *m->str_len) +
           (uint64_t)m->cap_nodes * 8 + idmap_bytes(&m->str_map) + idmap_bytes(&m->node_map);
}

int rmem_node(const store_rmem *m, uint32_t id, uint32_t *parent, uint32_t *func)
{
    if (id >= m->n_nodes) return -1;
    *parent = m->parent[id];
    *func = m->func[id];
    return 0;
}

const char *rmem_string(const store_rmem *m, uint32_t id, uint32_t *len)
{
    if (id >= m->n_str) return NULL;
    if (len) *len = m->str_len[id];
    return m->str[id];
}

typedef struct { const store_rmem *m; const char *s; uint32_t len; } str_probe;

static int str_eq(void *ctx, uint32_t id)
{
    str_probe *p = ctx;
    return p->m->str_len[id] == p->len && !memcmp(p->m->str[id], p->s, p->len);
}

/* The id of string s[0..len), added (NUL-terminated copy) when new; 0 when
 * memory ran out. */
static uint32_t intern_string(store_rmem *m, const char *s, uint32_t len)
{
    uint64_t h = hash_bytes(s, len, STR_SEED);
    str_probe p = { m, s, len };
    uint32_t id = idmap_find(&m->str_map, h, str_eq, &p);
    if (id) return id;
    if (m->n_str == m->cap_str) {
        uint32_t cap = 2 * m->cap_str;
        const char **ns = realloc(m->str, cap * sizeof *ns);
        if (ns) m->str = ns;
        uint32_t *nl = realloc(m->str_len, cap * sizeof *nl);
        if (nl) m->str_len = nl;
        if (!ns || !nl) return 0;
        m->cap_str = cap;
    }
    char *c = arena_alloc(&m->bytes, (size_t)len + 1);
    if (!c) return 0;
    memcpy(c, s, len);
    c[len] = '\0';
    m->memory += len + 1;
    id = m->n_str;
    m->str[id] = c;
    m->str_len[id] = len;
    if (idmap_put(&m->str_map, h, id)) return 0;
    m->n_str++;
    return id;
}

static uint32_t intern_node(store_rmem *m, uint32_t parent, uint32_t func)
{
    uint64_t key = ((uint64_t)parent << 32) | func;
    uint32_t id = idmap_find(&m->node_map, key, NULL, NULL);
    if (id) return id;
    if (m->n_nodes == m->cap_nodes) {
        uint32_t cap = 2 * m->cap_nodes;
        uint32_t *np = realloc(m->parent, cap * sizeof *np);
        if (np) m->parent = np;
        uint32_t *nf = realloc(m->func, cap * sizeof *nf);
        if (nf) m->func = nf;
        if (!np || !nf) return 0;
        m->cap_nodes = cap;
    }
    id = m->n_nodes;
    m->parent[id] = parent;
    m->func[id] = func;
    if (idmap_put(&m->node_map, key, id)) return 0;
    m->n_nodes++;
    return id;
}

uint32_t store_rmem_stack(store_rmem *m, const char *frames, uint32_t len)
{
    uint32_t node = 0, pos = 0;
    while (pos <= len) {
        const char *semi = memchr(frames + pos, ';', len - pos);
        uint32_t flen = semi ? (uint32_t)(semi - (frames + pos)) : len - pos;
        uint32_t func = intern_string(m, frames + pos, flen);
        if (!func || !(node = intern_node(m, node, func))) return 0;
        pos += flen + 1;
    }
    return node;
}

/* ---- profiles ---- */

typedef struct { uint32_t node; uint64_t count; } pair;

static int pair_cmp(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    return (x->node > y->node) - (x->node < y->node);
}

/* p as a block value: its pairs sorted, repeated leaves summed. */
static store_status encode(store_rmem *m, const store_rprofile *p, uint64_t n_profiles, void **val, size_t *len)
{
    pair *v = malloc((p->n ? p->n : 1) * sizeof *v);
    if (!v) return STORE_ENOMEM;
    for (size_t i = 0; i < p->n; i++) v[i] = (pair){ p->leaves[i], p->counts[i] };
    qsort(v, p->n, sizeof *v, pair_cmp);
    if (p->n > m->tcap) {
        uint32_t *tn = realloc(m->tn, p->n * sizeof *tn);
        if (tn) m->tn = tn;
        uint64_t *tc = realloc(m->tc, p->n * sizeof *tc);
        if (tc) m->tc = tc;
        if (!tn || !tc) {
            free(v);
            return STORE_ENOMEM;
        }
        m->tcap = p->n;
    }
    uint32_t k = 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!v[i].node || v[i].node >= m->n_nodes || !v[i].count) {
            free(v);
            return STORE_EINVAL;
        }
        if (k && m->tn[k - 1] == v[i].node) {
            m->tc[k - 1] += v[i].count;
        } else {
            m->tn[k] = v[i].node;
            m->tc[k++] = v[i].count;
        }
        sum += v[i].count;
    }
    free(v);
    uint32_t unit = intern_string(m, p->unit, (uint32_t)strlen(p->unit));
    if (!unit) return STORE_ENOMEM;
    if (!m->zc && !(m->zc = ZSTD_createCCtx())) return STORE_ENOMEM;
    block_header h = {
        .unit = unit, .n_pairs = k, .n_profiles = (uint32_t)n_profiles, .duration_ms = p->until_ms - p->from_ms,
        .rate = p->rate, .samples = p->samples_known ? p->samples : 0, .count_sum = sum,
        .samples_unknown = !p->samples_known, .gauge = p->gauge, .version = 2,
    };
    return block_encode(&h, m->tn, m->tc, m->zc, val, len);
}

store_status store_rmem_profile(store_rmem *m, const store_rprofile *p)
{
    if (!p->series || p->series > m->n_ser || !p->n || p->until_ms < p->from_ms) return STORE_EINVAL;
    void *val;
    size_t len;
    store_status ss = encode(m, p, 1, &val, &len);
    if (ss) return ss;
    rser *s = &m->ser[p->series];
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        rmem_block *nb = realloc(s->b, cap * sizeof *nb);
        if (!nb) {
            free(val);
            return STORE_ENOMEM;
        }
        s->b = nb;
        s->cap = cap;
    }
    if (s->n && s->b[s->n - 1].from_ms > p->from_ms) s->unsorted = 1;
    s->b[s->n++] = (rmem_block){ p->from_ms, p->until_ms, val, len };
    m->memory += len + sizeof(rmem_block);
    return STORE_OK;
}

/* Stable: equal starts keep their load order. */
static void sort_blocks(rmem_block *v, size_t n, rmem_block *tmp)
{
    if (n < 2) return;
    size_t h = n / 2;
    sort_blocks(v, h, tmp);
    sort_blocks(v + h, n - h, tmp);
    size_t a = 0, b = h, k = 0;
    while (a < h && b < n) tmp[k++] = v[b].from_ms < v[a].from_ms ? v[b++] : v[a++];
    while (a < h) tmp[k++] = v[a++];
    while (b < n) tmp[k++] = v[b++];
    memcpy(v, tmp, n * sizeof *v);
}

const rmem_block *rmem_blocks(store_rmem *m, uint32_t sid, size_t *n)
{
    *n = 0;
    if (!sid || sid > m->n_ser) return NULL;
    rser *s = &m->ser[sid];
    if (s->unsorted) {
        rmem_block *tmp = malloc(s->n * sizeof *tmp);
        if (!tmp) return NULL;
        sort_blocks(s->b, s->n, tmp);
        free(tmp);
        s->unsorted = 0;
    }
    *n = s->n;
    return s->b;
}

/* ---- what is loaded ---- */

size_t rmem_missing(const store_rmem *m, uint32_t sid, int64_t from, int64_t until, rmem_range *out, size_t max)
{
    if (!sid || sid > m->n_ser || from >= until) return 0;
    const rser *s = &m->ser[sid];
    size_t k = 0;
    int64_t at = from;
    for (size_t i = 0; i < s->n_loaded && at < until && k < max; i++) {
        const rmem_range *l = &s->loaded[i];
        if (l->until <= at) continue;
        if (l->from >= until) break;
        if (l->from > at) out[k++] = (rmem_range){ at, l->from };
        at = l->until;
    }
    if (at < until && k < max) out[k++] = (rmem_range){ at, until };
    return k;
}

int rmem_loaded(store_rmem *m, uint32_t sid, int64_t from, int64_t until)
{
    if (!sid || sid > m->n_ser || from >= until) return 0;
    rser *s = &m->ser[sid];
    if (s->n_loaded == s->cap_loaded) {
        size_t cap = s->cap_loaded ? 2 * s->cap_loaded : 4;
        rmem_range *nl = realloc(s->loaded, cap * sizeof *nl);
        if (!nl) return -1;
        s->loaded = nl;
        s->cap_loaded = cap;
    }
    /* insert in order, then merge what touches */
    size_t i = 0;
    while (i < s->n_loaded && s->loaded[i].from < from) i++;
    memmove(s->loaded + i + 1, s->loaded + i, (s->n_loaded - i) * sizeof *s->loaded);
    s->loaded[i] = (rmem_range){ from, until };
    s->n_loaded++;
    size_t k = 0;
    for (size_t j = 0; j < s->n_loaded; j++) {
        if (k && s->loaded[j].from <= s->loaded[k - 1].until) {
            if (s->loaded[j].until > s->loaded[k - 1].until) s->loaded[k - 1].until = s->loaded[j].until;
        } else {
            s->loaded[k++] = s->loaded[j];
        }
    }
    s->n_loaded = k;
    return 0;
}

int rmem_extent(const store_rmem *m, uint32_t sid, store_rextent *out)
{
    if (!sid || sid > m->n_ser || !m->ser[sid].has_extent) return 0;
    *out = m->ser[sid].extent;
    return 1;
}

void rmem_set_extent(store_rmem *m, uint32_t sid, const store_rextent *e)
{
    if (!sid || sid > m->n_ser) return;
    m->ser[sid].extent = *e;
    m->ser[sid].has_extent = 1;
}

/* ---- merged blocks and presence ---- */

/* Newest first: a windowed merge adds its windows in time order, and
 * its blocks come for the windows added last. */
static rmerged *merged_at(rser *s, int64_t from, int64_t until, int create)
{
    for (size_t i = s->n_mg; i-- > 0;)
        if (s->mg[i].from == from && s->mg[i].until == until) return &s->mg[i];
    if (!create) return NULL;
    if (s->n_mg == s->cap_mg) {
        size_t cap = s->cap_mg ? 2 * s->cap_mg : 4;
        rmerged *ng = realloc(s->mg, cap * sizeof *ng);
        if (!ng) return NULL;
        s->mg = ng;
        s->cap_mg = cap;
    }
    s->mg[s->n_mg] = (rmerged){ .from = from, .until = until };
    return &s->mg[s->n_mg++];
}

store_status store_rmem_merged(store_rmem *m, const store_rprofile *p, uint64_t n_profiles)
{
    if (!p->series || p->series > m->n_ser || p->until_ms < p->from_ms || n_profiles > UINT32_MAX)
        return STORE_EINVAL;
    rmerged *g = merged_at(&m->ser[p->series], p->from_ms, p->until_ms, 1);
    if (!g) return STORE_ENOMEM;
    if (g->done) return STORE_EINVAL;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 4;
        rmem_block *nb = realloc(g->b, cap * sizeof *nb);
        if (!nb) return STORE_ENOMEM;
        g->b = nb;
        g->cap = cap;
    }
    void *val;
    size_t len;
    store_status ss = encode(m, p, n_profiles, &val, &len);
    if (ss) return ss;
    g->b[g->n++] = (rmem_block){ p->from_ms, p->until_ms, val, len };
    m->memory += len + sizeof(rmem_block);
    return STORE_OK;
}

const rmem_block *rmem_merged_blocks(const store_rmem *m, uint32_t sid, int64_t from, int64_t until, size_t *n)
{
    *n = 0;
    if (!sid || sid > m->n_ser) return NULL;
    rmerged *g = merged_at(&m->ser[sid], from, until, 0);
    if (!g || !g->done) return NULL;
    *n = g->n;
    return g->b ? g->b : (const rmem_block *)m; /* not NULL: loaded, maybe empty */
}

int rmem_merged_done(store_rmem *m, uint32_t sid, int64_t from, int64_t until)
{
    if (!sid || sid > m->n_ser) return 0;
    rmerged *g = merged_at(&m->ser[sid], from, until, 1);
    if (!g) return -1;
    g->done = 1;
    return 0;
}

int rmem_presence(const store_rmem *m, uint32_t sid, int64_t from, int64_t until)
{
    if (!sid || sid > m->n_ser) return -1;
    const rser *s = &m->ser[sid];
    for (size_t i = 0; i < s->n_pr; i++)
        if (s->pr[i].from == from && s->pr[i].until == until) return s->pr[i].present;
    return -1;
}

int rmem_set_presence(store_rmem *m, uint32_t sid, int64_t from, int64_t until, int present)
{
    if (!sid || sid > m->n_ser) return 0;
    rser *s = &m->ser[sid];
    rpres *np = realloc(s->pr, (s->n_pr + 1) * sizeof *np);
    if (!np) return -1;
    s->pr = np;
    s->pr[s->n_pr++] = (rpres){ from, until, present != 0 };
    return 0;
}
