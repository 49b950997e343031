/* chsource.c — a front end's reads from ClickHouse; see chsource.h. */
#include "chsource.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chclient.h"
#include "chread.h"
#include "chselect.h"

#define MAX_URLS 16
#define POOL 16
#define MAX_LABELS 256
/* Merges of shorter ranges load the profiles (store_rsource.merge_min_ms):
 * under an hour, the rollups hold at most five 10-minute buckets and the
 * three statements of a merge cost more than the rows they save
 * (measured: docs/cluster.md, "Measured: queries"). */
#define MERGE_MIN_MS (3600 * 1000)

/* ---- the catalog, shared by the readers that began with it ---- */

typedef struct {
    char *tenant;       /* NUL-terminated */
    uint64_t series;
} skey;

typedef struct {
    _Atomic int refs;
    store_rcat *cat;
    skey *keys;         /* by reader id; [0] unused */
    uint32_t n;
    uint64_t version;
} chcat;

static void chcat_unref(chcat *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
    for (uint32_t i = 1; i <= c->n; i++) free(c->keys[i].tenant);
    free(c->keys);
    store_rcat_unref(c->cat);
    free(c);
}

struct chsource {
    chsource_options o;
    chschema_options schema;
    char db[128], cluster[128], tenant_label[64];
    char *urls[MAX_URLS];
    int n_urls, cur;
    pthread_mutex_t lock;      /* below */
    chcat *cat;
    chread *idle[POOL];        /* all on urls[cur] */
    int n_idle;
    chsource_stats stats;
};

int chsource_open(chsource **out, const chsource_options *o, char *err, size_t errlen)
{
    *out = NULL;
    chsource *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->o = *o;
    snprintf(s->db, sizeof s->db, "%s", o->schema.database ? o->schema.database : "flamedb");
    snprintf(s->cluster, sizeof s->cluster, "%s", o->schema.cluster ? o->schema.cluster : "");
    snprintf(s->tenant_label, sizeof s->tenant_label, "%s", o->tenant_label ? o->tenant_label : "__tenant__");
    s->schema = o->schema;
    s->schema.database = s->db;
    s->schema.cluster = s->cluster[0] ? s->cluster : NULL;
    const char *p = o->urls ? o->urls : "";
    while (*p && s->n_urls < MAX_URLS) {
        size_t n = strcspn(p, ",");
        if (n && !(s->urls[s->n_urls++] = strndup(p, n))) {
            chsource_close(s);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        p += n + (p[n] == ',');
    }
    if (!s->n_urls) {
        chsource_close(s);
        snprintf(err, errlen, "no ClickHouse URL");
        return -1;
    }
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return 0;
}

void chsource_close(chsource *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_idle; i++) chread_close(s->idle[i]);
    for (int i = 0; i < s->n_urls; i++) free(s->urls[i]);
    chcat_unref(s->cat);
    if (s->n_urls) pthread_mutex_destroy(&s->lock);
    free(s);
}

void chsource_stats_get(chsource *s, chsource_stats *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    pthread_mutex_unlock(&s->lock);
}

/* A client from the pool, or a new one on the endpoint in use; *url is
 * its endpoint (an index into s->urls), for client_put. */
static chread *client_get(chsource *s, int *url, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->lock);
    chread *c = s->n_idle ? s->idle[--s->n_idle] : NULL;
    *url = s->cur;
    pthread_mutex_unlock(&s->lock);
    if (c) chread_set_skip_unavailable(c, 0);
    return c ? c : chread_open(s->urls[*url], &s->schema, s->o.timeout_ms, err, errlen);
}

/* Back to the pool, or closed after a failure, and the next endpoint
 * tried by the next reader.  The pool holds clients on the endpoint in
 * use only: when the endpoint moves on, the idle clients (on the one that
 * failed) are closed, else the next readers would take them and fail in
 * turn (with two endpoints, moving back to the one that failed: the first
 * queries after a replica was killed answered 503).  A failure on an
 * endpoint another reader already moved away from moves nothing. */
static void client_put(chsource *s, chread *c, int url, int failed)
{
    if (!c) return;
    chread *stale[POOL];
    int n_stale = 0;
    pthread_mutex_lock(&s->lock);
    if (failed) {
        s->stats.load_errors++;
        if (url == s->cur) {
            s->cur = (s->cur + 1) % s->n_urls;
            n_stale = s->n_idle;
            memcpy(stale, s->idle, (size_t)n_stale * sizeof *stale);
            s->n_idle = 0;
        }
    } else if (url == s->cur && s->n_idle < POOL) {
        s->idle[s->n_idle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    chread_close(c);
    for (int i = 0; i < n_stale; i++) chread_close(stale[i]);
}

typedef struct {
    chsource *s;
    chcat *cat;
    char err[512];
} cat_build;

static int add_series(void *ctx, const chread_series_row *row)
{
    cat_build *b = ctx;
    chcat *c = b->cat;
    if (row->n_labels + 1 > MAX_LABELS) {
        snprintf(b->err, sizeof b->err, "series %llu has %zu labels, more than %d", (unsigned long long)row->series,
                 row->n_labels, MAX_LABELS - 1);
        return -1;
    }
    /* NUL-terminated copies; a tenant other than the default as a label,
     * in name order (how a single node stores it) */
    size_t bytes = row->tenant_len + 2 + strlen(b->s->tenant_label);
    for (size_t i = 0; i < row->n_labels; i++) bytes += row->name_lens[i] + row->value_lens[i] + 2;
    char *buf = malloc(bytes + 1), *at = buf;
    store_label l[MAX_LABELS];
    if (!buf) return -1;
    int n = 0, tenant_put = row->tenant_len == 0;
    char *tenant = at;
    memcpy(at, row->tenant, row->tenant_len);
    at[row->tenant_len] = '\0';
    at += row->tenant_len + 1;
    for (size_t i = 0; i <= row->n_labels; i++) {
        const char *name = i < row->n_labels ? at : NULL;
        if (name) {
            memcpy(at, row->names[i], row->name_lens[i]);
            at[row->name_lens[i]] = '\0';
            at += row->name_lens[i] + 1;
        }
        if (!tenant_put && (!name || strcmp(b->s->tenant_label, name) < 0)) {
            l[n++] = (store_label){ b->s->tenant_label, tenant };
            tenant_put = 1;
        }
        if (!name) break;
        memcpy(at, row->values[i], row->value_lens[i]);
        at[row->value_lens[i]] = '\0';
        l[n++] = (store_label){ name, at };
        at += row->value_lens[i] + 1;
    }
    uint32_t sid;
    int rc = store_rcat_add(c->cat, l, n, &sid) ? -1 : 0;
    if (!rc) {
        skey *k = realloc(c->keys, ((size_t)sid + 1) * sizeof *k);
        if (!k || !(k[sid].tenant = strdup(tenant))) rc = -1;
        if (k) c->keys = k;
        if (!rc) {
            k[sid].series = row->series;
            c->n = sid;
        }
    }
    free(buf);
    if (rc && !b->err[0]) snprintf(b->err, sizeof b->err, "out of memory reading the series");
    return rc;
}

/* ClickHouse's codes for a shard it could not reach. */
static int shard_unreachable(int code)
{
    return code == 279 || code == 210 || code == 209 || code == 32;
}

/* The message of c's failed statement, naming the shards that are down
 * when that was the cause (ClickHouse's own message may not: the first
 * statement after a shard went away reads "Attempt to read after eof"). */
static void describe_failure(chread *c, char *err, size_t errlen)
{
    if (!shard_unreachable(chread_code(c))) {
        snprintf(err, errlen, "%s", chread_error(c));
        return;
    }
    char msg[1024], down[512];
    snprintf(msg, sizeof msg, "%s", chread_error(c));
    if (chread_down_shards(c, down, sizeof down) > 0)
        snprintf(err, errlen, "ClickHouse %s cannot be reached (no replica answers); ask with partial=true for an "
                 "answer from the shards that are up, marked \"partial\": true. %s", down, msg);
    else
        snprintf(err, errlen, "a ClickHouse shard cannot be reached; ask with partial=true for an answer from the "
                 "shards that are up, marked \"partial\": true. %s", msg);
}

/* The catalog for a reader beginning now: the current one, or a new one
 * when the series table changed.  A reference for the caller.  With a
 * shard down: an error naming it, or with partial (skip_unavailable set on
 * c, *partial_out set) a catalog of the shards that answer, for this
 * reader alone (never kept: it lacks series). */
static chcat *catalog_now(chsource *s, chread *c, int partial, int *partial_out, char *err, size_t errlen)
{
    uint64_t version;
    int ok = !chread_series_version(c, &version);
    if (!ok && shard_unreachable(chread_code(c))) ok = !chread_series_version(c, &version); /* a stale connection */
    int own = 0;
    if (!ok && partial && shard_unreachable(chread_code(c))) {
        chread_set_skip_unavailable(c, 1);
        *partial_out = 1;
        own = 1;
        ok = !chread_series_version(c, &version);
    }
    if (!ok) {
        describe_failure(c, err, errlen);
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    chcat *cur = s->cat;
    if (!own && cur && cur->version == version) {
        atomic_fetch_add(&cur->refs, 1);
        pthread_mutex_unlock(&s->lock);
        return cur;
    }
    pthread_mutex_unlock(&s->lock);
    cat_build b = { .s = s };
    chcat *nc = calloc(1, sizeof *nc);
    if (nc) {
        atomic_init(&nc->refs, 1);
        nc->version = version;
        nc->cat = store_rcat_new();
    }
    if (!nc || !nc->cat) {
        free(nc);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b.cat = nc;
    if (chread_series_all(c, add_series, &b) || store_rcat_seal(nc->cat)) {
        if (b.err[0]) snprintf(err, errlen, "%s", b.err);
        else describe_failure(c, err, errlen);
        chcat_unref(nc);
        return NULL;
    }
    if (own) return nc;
    pthread_mutex_lock(&s->lock);
    chcat *old = s->cat;
    s->cat = nc;
    atomic_fetch_add(&nc->refs, 1);      /* the source's */
    s->stats.series = nc->n;
    s->stats.catalog_bytes = store_rcat_memory(nc->cat);
    s->stats.catalog_loads++;
    pthread_mutex_unlock(&s->lock);
    chcat_unref(old);
    return nc;
}

/* ---- one reader ---- */

typedef struct { uint8_t id[16]; uint32_t leaf; } stack_slot;

typedef struct {
    uint64_t series;
    const char *tenant;
    uint32_t sid;
} sid_key;

typedef struct {
    uint32_t sid;
    int64_t window_start;
    uint64_t batch;
    char *unit;
    uint32_t window_ms;
    double rate;
    int gauge;
    uint64_t samples;
    int samples_known;
} prow;

typedef struct {
    chsource *s;
    chcat *cat;
    chread *c;
    int url;                            /* c's endpoint (client_get) */
    int partial, *partial_out, failed;
    store_rmem *m;
    /* stacks met: 16-byte id -> leaf, open addressing, at most half full */
    stack_slot *stacks;
    size_t stacks_cap, stacks_len;
    /* the load under way */
    sid_key *lookup;
    size_t n_lookup;
    prow *prof;
    size_t n_prof, cap_prof;
    int prof_sorted;
    int have_cur;                       /* a profile's samples are being gathered */
    chread_key cur;                     /* its key (strings copied below) */
    char cur_tenant[256], cur_unit[256];
    uint32_t *leaves;
    uint64_t *counts;
    size_t n_pairs, cap_pairs;
    uint64_t loaded;
    char err[512];
} reader_ctx;

static uint64_t id_hash(const uint8_t *id)
{
    uint64_t h;
    memcpy(&h, id, 8);   /* a content hash already */
    return h;
}

static int stack_put(reader_ctx *x, const uint8_t *id, uint32_t leaf)
{
    if (2 * (x->stacks_len + 1) > x->stacks_cap) {
        size_t cap = x->stacks_cap ? 2 * x->stacks_cap : 4096;
        stack_slot *ns = calloc(cap, sizeof *ns);
        if (!ns) return -1;
        for (size_t i = 0; i < x->stacks_cap; i++) {
            if (!x->stacks[i].leaf) continue;
            size_t j = id_hash(x->stacks[i].id) & (cap - 1);
            while (ns[j].leaf) j = (j + 1) & (cap - 1);
            ns[j] = x->stacks[i];
        }
        free(x->stacks);
        x->stacks = ns;
        x->stacks_cap = cap;
    }
    size_t j = id_hash(id) & (x->stacks_cap - 1);
    while (x->stacks[j].leaf) {
        if (!memcmp(x->stacks[j].id, id, 16)) return 0;
        j = (j + 1) & (x->stacks_cap - 1);
    }
    memcpy(x->stacks[j].id, id, 16);
    x->stacks[j].leaf = leaf;
    x->stacks_len++;
    return 0;
}

static uint32_t stack_get(const reader_ctx *x, const uint8_t *id)
{
    if (!x->stacks_cap) return 0;
    size_t j = id_hash(id) & (x->stacks_cap - 1);
    while (x->stacks[j].leaf) {
        if (!memcmp(x->stacks[j].id, id, 16)) return x->stacks[j].leaf;
        j = (j + 1) & (x->stacks_cap - 1);
    }
    return 0;
}

static int sid_key_cmp(const void *a, const void *b)
{
    const sid_key *x = a, *y = b;
    if (x->series != y->series) return x->series < y->series ? -1 : 1;
    return strcmp(x->tenant, y->tenant);
}

static uint32_t sid_of(const reader_ctx *x, const char *tenant, size_t tl, uint64_t series)
{
    char t[256];
    if (tl >= sizeof t) return 0;
    memcpy(t, tenant, tl);
    t[tl] = '\0';
    sid_key k = { series, t, 0 }, *f = bsearch(&k, x->lookup, x->n_lookup, sizeof k, sid_key_cmp);
    return f ? f->sid : 0;
}

static int prow_cmp(const void *a, const void *b)
{
    const prow *x = a, *y = b;
    if (x->sid != y->sid) return x->sid < y->sid ? -1 : 1;
    if (x->window_start != y->window_start) return x->window_start < y->window_start ? -1 : 1;
    if (x->batch != y->batch) return x->batch < y->batch ? -1 : 1;
    return strcmp(x->unit, y->unit);
}

static int on_frames(void *ctx, const uint8_t *stack, const char *frames, size_t len)
{
    reader_ctx *x = ctx;
    if (stack_get(x, stack)) return 0;
    uint32_t leaf = len <= UINT32_MAX ? store_rmem_stack(x->m, frames, (uint32_t)len) : 0;
    if (!leaf || stack_put(x, stack, leaf)) {
        snprintf(x->err, sizeof x->err, "out of memory loading stacks");
        return -1;
    }
    return 0;
}

static int on_profile(void *ctx, const chread_profile_row *p)
{
    reader_ctx *x = ctx;
    uint32_t sid = sid_of(x, p->key.tenant, p->key.tenant_len, p->key.series);
    if (!sid) return 0;   /* a series that came after the catalog: not in this reader */
    if (x->n_prof == x->cap_prof) {
        size_t cap = x->cap_prof ? 2 * x->cap_prof : 256;
        prow *np = realloc(x->prof, cap * sizeof *np);
        if (!np) goto oom;
        x->prof = np;
        x->cap_prof = cap;
    }
    prow *r = &x->prof[x->n_prof];
    *r = (prow){ .sid = sid, .window_start = p->key.window_start, .batch = p->key.batch,
                 .unit = strndup(p->key.unit, p->key.unit_len), .window_ms = p->window_ms, .rate = p->rate,
                 .gauge = p->gauge, .samples = p->samples, .samples_known = p->samples_known };
    if (!r->unit) goto oom;
    x->n_prof++;
    return 0;
oom:
    snprintf(x->err, sizeof x->err, "out of memory loading profiles");
    return -1;
}

/* The profile whose samples were gathered, into the loaded partition. */
static int flush_profile(reader_ctx *x)
{
    if (!x->have_cur) return 0;
    x->have_cur = 0;
    uint32_t sid = sid_of(x, x->cur.tenant, x->cur.tenant_len, x->cur.series);
    if (!sid || !x->n_pairs) return 0;
    prow key = { .sid = sid, .window_start = x->cur.window_start, .batch = x->cur.batch, .unit = x->cur_unit };
    const prow *p = bsearch(&key, x->prof, x->n_prof, sizeof key, prow_cmp);
    if (!p) {
        snprintf(x->err, sizeof x->err, "samples of series %llu at %lld have no row in the profiles table",
                 (unsigned long long)x->cur.series, (long long)x->cur.window_start);
        return -1;
    }
    store_rprofile rp = { .series = sid, .from_ms = p->window_start, .until_ms = p->window_start + p->window_ms,
                          .unit = p->unit, .rate = p->rate, .samples = p->samples,
                          .samples_known = p->samples_known, .gauge = p->gauge, .leaves = x->leaves,
                          .counts = x->counts, .n = x->n_pairs };
    if (store_rmem_profile(x->m, &rp)) {
        snprintf(x->err, sizeof x->err, "out of memory loading profiles");
        return -1;
    }
    x->loaded++;
    x->n_pairs = 0;
    return 0;
}

static int same_key(const chread_key *a, const chread_key *b)
{
    return a->series == b->series && a->window_start == b->window_start && a->batch == b->batch &&
           a->tenant_len == b->tenant_len && a->unit_len == b->unit_len &&
           !memcmp(a->tenant, b->tenant, a->tenant_len) && !memcmp(a->unit, b->unit, a->unit_len);
}

/* Appends (leaf, count) to the profile or merged block being built. */
static int pairs_push(reader_ctx *x, uint32_t leaf, uint64_t count)
{
    if (x->n_pairs == x->cap_pairs) {
        size_t cap = x->cap_pairs ? 2 * x->cap_pairs : 1024;
        uint32_t *nl = realloc(x->leaves, cap * sizeof *nl);
        if (nl) x->leaves = nl;
        uint64_t *nc = realloc(x->counts, cap * sizeof *nc);
        if (nc) x->counts = nc;
        if (!nl || !nc) {
            snprintf(x->err, sizeof x->err, "out of memory loading samples");
            return -1;
        }
        x->cap_pairs = cap;
    }
    x->leaves[x->n_pairs] = leaf;
    x->counts[x->n_pairs++] = count;
    return 0;
}

static int on_sample(void *ctx, const chread_sample_row *r)
{
    reader_ctx *x = ctx;
    if (!x->prof_sorted) { /* every profile row is in: the samples follow */
        if (x->n_prof) qsort(x->prof, x->n_prof, sizeof *x->prof, prow_cmp);
        x->prof_sorted = 1;
    }
    if (!x->have_cur || !same_key(&r->key, &x->cur)) {
        if (flush_profile(x)) return -1;
        if (r->key.tenant_len >= sizeof x->cur_tenant || r->key.unit_len >= sizeof x->cur_unit) {
            snprintf(x->err, sizeof x->err, "a tenant or unit name longer than %zu bytes", sizeof x->cur_unit - 1);
            return -1;
        }
        x->cur = r->key;
        memcpy(x->cur_tenant, r->key.tenant, r->key.tenant_len);
        x->cur_tenant[r->key.tenant_len] = '\0';
        memcpy(x->cur_unit, r->key.unit, r->key.unit_len);
        x->cur_unit[r->key.unit_len] = '\0';
        x->cur.tenant = x->cur_tenant;
        x->cur.unit = x->cur_unit;
        x->have_cur = 1;
    }
    if (!r->value) return 0;
    uint32_t leaf = stack_get(x, r->stack);
    /* a partial answer: the frames of a stack may be on the shard that is
     * down (stacks are sharded by their hash); its values are part of what
     * the answer lacks */
    if (!leaf && *x->partial_out) return 0;
    if (!leaf) {
        snprintf(x->err, sizeof x->err, "a stack of series %llu at %lld has no frames in ClickHouse's stacks table",
                 (unsigned long long)r->key.series, (long long)r->key.window_start);
        return -1;
    }
    return pairs_push(x, leaf, r->value);
}

/* Forgets what a load gathered (before it runs again), keeping its series. */
static void load_clear(reader_ctx *x)
{
    for (size_t i = 0; i < x->n_prof; i++) free(x->prof[i].unit);
    x->n_prof = 0;
    x->prof_sorted = 0;
    x->n_pairs = 0;
    x->have_cur = 0;
}

static void load_reset(reader_ctx *x)
{
    load_clear(x);
    free(x->lookup);
    x->lookup = NULL;
    x->n_lookup = 0;
}

/* "(tenant = 't' AND series IN (1, 2)) OR ...": the series of a load,
 * grouped by tenant (reader ids are in (tenant, series) order). */
static char *series_cond(const reader_ctx *x, const uint32_t *sids, size_t n)
{
    size_t cap = 64 + n * 24, len = 0;
    for (size_t i = 0; i < n; i++) cap += 2 * strlen(x->cat->keys[sids[i]].tenant) + 40;
    char *out = malloc(cap);
    if (!out) return NULL;
    out[0] = '\0';
    for (size_t i = 0; i < n;) {
        const char *t = x->cat->keys[sids[i]].tenant;
        len += (size_t)snprintf(out + len, cap - len, "%s(tenant = ", i ? " OR " : "(");
        if (chselect_quote(t, out, cap) < 0) {
            free(out);
            return NULL;
        }
        len = strlen(out);
        len += (size_t)snprintf(out + len, cap - len, " AND series IN (");
        size_t j = i;
        for (; j < n && !strcmp(x->cat->keys[sids[j]].tenant, t); j++)
            len += (size_t)snprintf(out + len, cap - len, "%s%llu", j > i ? ", " : "",
                                    (unsigned long long)x->cat->keys[sids[j]].series);
        len += (size_t)snprintf(out + len, cap - len, "))");
        i = j;
    }
    snprintf(out + len, cap - len, ")");
    return out;
}

/* The load's series by (ClickHouse series id, tenant): rows name them so. */
static int lookup_build(reader_ctx *x, const uint32_t *sids, size_t n)
{
    free(x->lookup);
    x->n_lookup = 0;
    if (!(x->lookup = malloc((n ? n : 1) * sizeof *x->lookup))) return -1;
    for (size_t i = 0; i < n; i++)
        x->lookup[i] = (sid_key){ x->cat->keys[sids[i]].series, x->cat->keys[sids[i]].tenant, sids[i] };
    x->n_lookup = n;
    qsort(x->lookup, n, sizeof *x->lookup, sid_key_cmp);
    return 0;
}


static int fail_load(reader_ctx *x, char *err, size_t errlen)
{
    if (x->err[0]) snprintf(err, errlen, "%s", x->err);
    else describe_failure(x->c, err, errlen);
    x->failed = 1;
    return -1;
}

/* Every callback begins so: the condition naming its series, and their
 * lookup; NULL (err set) when memory ran out. */
static char *call_begin(reader_ctx *x, const uint32_t *sids, size_t n, char *err, size_t errlen)
{
    x->err[0] = '\0';
    char *cond = series_cond(x, sids, n);
    if (!cond || lookup_build(x, sids, n)) {
        free(cond);
        load_reset(x);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return cond;
}

/* ... and ends so: the error, if any, and the counts. */
static int call_end(reader_ctx *x, char *cond, int rc, int merge, char *err, size_t errlen)
{
    free(cond);
    if (rc) fail_load(x, err, errlen);
    load_reset(x);
    pthread_mutex_lock(&x->s->lock);
    if (merge == 1) x->s->stats.merges++;
    else if (!merge) x->s->stats.loads++;
    x->s->stats.profiles_loaded += x->loaded;
    pthread_mutex_unlock(&x->s->lock);
    x->loaded = 0;
    return rc ? -1 : 0;
}

/* Runs a callback's statements (run; clear forgets a failed attempt's
 * rows): once more when a shard could not be reached (the first statement
 * after a shard came back, or went, may meet a connection ClickHouse had
 * pooled), and with partial=true once more from the shards that answer. */
static int with_retries(reader_ctx *x, int (*run)(reader_ctx *x, void *arg), void (*clear)(reader_ctx *x, void *arg),
                        void *arg)
{
    int rc = run(x, arg);
    if (rc && !x->err[0] && shard_unreachable(chread_code(x->c))) {
        clear(x, arg);
        rc = run(x, arg);
    }
    if (rc && !x->err[0] && x->partial && shard_unreachable(chread_code(x->c))) {
        clear(x, arg);
        chread_set_skip_unavailable(x->c, 1);
        *x->partial_out = 1;
        rc = run(x, arg);
    }
    return rc;
}

static void nothing_to_clear(reader_ctx *x, void *arg)
{
    (void)x;
    (void)arg;
}

/* A call's statement arguments. */
typedef struct {
    const char *cond;
    int64_t from, until;
    void *ctx;
} call_args;

static int load_run(reader_ctx *x, void *arg)
{
    const call_args *a = arg;
    /* profiles come before their samples: sorted once the profiles are in */
    return chread_load(x->c, a->cond, a->from, a->until, on_frames, on_profile, on_sample, x);
}

static void load_clear_cb(reader_ctx *x, void *arg)
{
    (void)arg;
    load_clear(x);
}

static int do_load(void *ctx, store_rmem *m, const uint32_t *sids, size_t n, int64_t from_ms, int64_t until_ms,
                   char *err, size_t errlen)
{
    reader_ctx *x = ctx;
    x->m = m;
    char *cond = call_begin(x, sids, n, err, errlen);
    if (!cond) return -1;
    call_args a = { cond, from_ms, until_ms, NULL };
    int rc = with_retries(x, load_run, load_clear_cb, &a);
    if (!rc) rc = flush_profile(x);
    return call_end(x, cond, rc, 0, err, errlen);
}

typedef struct {
    reader_ctx *x;
    const uint32_t *sids;
    size_t n;
    store_rextent *out;
} extent_ctx;

static int on_extent(void *ctx, const chread_extent_row *e)
{
    extent_ctx *ec = ctx;
    uint32_t sid = sid_of(ec->x, e->tenant, e->tenant_len, e->series);
    for (size_t i = 0; sid && i < ec->n; i++)
        if (ec->sids[i] == sid)
            ec->out[i] = (store_rextent){ 1, e->first_from, e->first_until, e->last_from, e->last_until };
    return 0;
}

static int extent_run(reader_ctx *x, void *arg)
{
    const call_args *a = arg;
    return chread_extents(x->c, a->cond, on_extent, a->ctx);
}

static int do_extent(void *ctx, const uint32_t *sids, size_t n, store_rextent *out, char *err, size_t errlen)
{
    reader_ctx *x = ctx;
    char *cond = call_begin(x, sids, n, err, errlen);
    if (!cond) return -1;
    memset(out, 0, n * sizeof *out);
    extent_ctx ec = { x, sids, n, out };
    call_args a = { cond, 0, 0, &ec };
    int rc = with_retries(x, extent_run, nothing_to_clear, &a);
    return call_end(x, cond, rc, -1, err, errlen);
}

/* ---- presence ---- */

typedef struct {
    reader_ctx *x;
    const uint32_t *sids;
    size_t n;
    unsigned char *present;
} presence_ctx;

static int on_present(void *ctx, const char *tenant, size_t tl, uint64_t series)
{
    presence_ctx *pc = ctx;
    uint32_t sid = sid_of(pc->x, tenant, tl, series);
    for (size_t i = 0; sid && i < pc->n; i++)
        if (pc->sids[i] == sid) pc->present[i] = 1;
    return 0;
}

static int presence_run(reader_ctx *x, void *arg)
{
    const call_args *a = arg;
    return chread_presence(x->c, a->cond, a->from, a->until, on_present, a->ctx);
}

static int do_presence(void *ctx, const uint32_t *sids, size_t n, int64_t from_ms, int64_t until_ms,
                       unsigned char *present, char *err, size_t errlen)
{
    reader_ctx *x = ctx;
    char *cond = call_begin(x, sids, n, err, errlen);
    if (!cond) return -1;
    memset(present, 0, n);
    presence_ctx pc = { x, sids, n, present };
    call_args a = { cond, from_ms, until_ms, &pc };
    int rc = with_retries(x, presence_run, nothing_to_clear, &a);
    return call_end(x, cond, rc, -1, err, errlen);
}

/* ---- merges: summed on the shards ---- */

typedef struct {
    uint32_t window, sid;
    const char *unit;     /* interned in the merge's own table */
    double rate;
    int gauge;
    uint8_t stack[16];
    uint64_t value;
} mrow;

typedef struct {
    uint32_t window, sid;
    const char *unit;
    double rate;
    int gauge;
    uint64_t profiles, samples, unknown;
} mprof;

typedef struct {
    reader_ctx *x;
    mrow *rows;
    size_t n_rows, cap_rows;
    mprof *prof;
    size_t n_prof, cap_prof;
    char **units;         /* distinct units met */
    size_t n_units;
    int64_t step;         /* the windows' (chread_windows) */
    int oom;
} merge_ctx;

static const char *unit_of(merge_ctx *mc, const char *u, size_t ul)
{
    for (size_t i = 0; i < mc->n_units; i++)
        if (strlen(mc->units[i]) == ul && !memcmp(mc->units[i], u, ul)) return mc->units[i];
    char **nu = realloc(mc->units, (mc->n_units + 1) * sizeof *nu);
    if (!nu) return NULL;
    mc->units = nu;
    if (!(nu[mc->n_units] = strndup(u, ul))) return NULL;
    return nu[mc->n_units++];
}

static void on_merged_row(void *ctx, const chread_sum *r)
{
    merge_ctx *mc = ctx;
    if (mc->oom) return;
    uint32_t sid = sid_of(mc->x, r->tenant, r->tenant_len, r->series);
    if (!sid || !r->value) return;
    if (mc->n_rows == mc->cap_rows) {
        size_t cap = mc->cap_rows ? 2 * mc->cap_rows : 4096;
        mrow *nr = realloc(mc->rows, cap * sizeof *nr);
        if (!nr) {
            mc->oom = 1;
            return;
        }
        mc->rows = nr;
        mc->cap_rows = cap;
    }
    mrow *m = &mc->rows[mc->n_rows];
    if (!(m->unit = unit_of(mc, r->unit, r->unit_len))) {
        mc->oom = 1;
        return;
    }
    m->window = r->window;
    m->sid = sid;
    m->rate = r->rate;
    m->gauge = r->gauge;
    memcpy(m->stack, r->stack, 16);
    m->value = r->value;
    mc->n_rows++;
}

static int on_merged_profiles(void *ctx, const chread_profile_sum *r)
{
    merge_ctx *mc = ctx;
    uint32_t sid = sid_of(mc->x, r->tenant, r->tenant_len, r->series);
    if (!sid) return 0;
    if (mc->n_prof == mc->cap_prof) {
        size_t cap = mc->cap_prof ? 2 * mc->cap_prof : 256;
        mprof *np = realloc(mc->prof, cap * sizeof *np);
        if (!np) return -1;
        mc->prof = np;
        mc->cap_prof = cap;
    }
    const char *u = unit_of(mc, r->unit, r->unit_len);
    if (!u) return -1;
    mc->prof[mc->n_prof++] = (mprof){ r->window, sid, u, r->rate, r->gauge, r->profiles, r->samples, r->unknown };
    return 0;
}

/* Blocks are per (window, series, unit, rate, gauge): units are
 * interned, so pointers compare.  The window and series come packed in
 * one number, window first. */
static uint64_t group_key(uint32_t window, uint32_t sid) { return (uint64_t)window << 32 | sid; }

static int group_cmp(uint64_t sa, const char *ua, double ra, int ga, uint64_t sb, const char *ub, double rb, int gb)
{
    if (sa != sb) return sa < sb ? -1 : 1;
    if (ua != ub) return ua < ub ? -1 : 1;
    if (ra != rb) return ra < rb ? -1 : 1;
    return (ga > gb) - (ga < gb);
}

static int mrow_cmp(const void *a, const void *b)
{
    const mrow *x = a, *y = b;
    return group_cmp(group_key(x->window, x->sid), x->unit, x->rate, x->gauge, group_key(y->window, y->sid), y->unit,
                     y->rate, y->gauge);
}

static int mprof_cmp(const void *a, const void *b)
{
    const mprof *x = a, *y = b;
    return group_cmp(group_key(x->window, x->sid), x->unit, x->rate, x->gauge, group_key(y->window, y->sid), y->unit,
                     y->rate, y->gauge);
}

static void on_merged_frames(void *ctx, const uint8_t *stack, const char *frames, size_t len)
{
    merge_ctx *mc = ctx;
    if (mc->oom || stack_get(mc->x, stack)) return;
    uint32_t leaf = len <= UINT32_MAX ? store_rmem_stack(mc->x->m, frames, (uint32_t)len) : 0;
    if (!leaf || stack_put(mc->x, stack, leaf)) mc->oom = 1;
}

/* The merged rows as blocks: for each (window, series, unit, rate,
 * gauge), one block over the window with every value and the profiles
 * that knew their samples, and one empty block counting those that did
 * not (a single node counts them apart the same way). */
static int merged_blocks(merge_ctx *mc, const chread_windows *w)
{
    reader_ctx *x = mc->x;
    if (mc->n_rows) qsort(mc->rows, mc->n_rows, sizeof *mc->rows, mrow_cmp);
    if (mc->n_prof) qsort(mc->prof, mc->n_prof, sizeof *mc->prof, mprof_cmp);
    size_t a = 0;
    for (size_t k = 0; k < mc->n_prof; k++) {
        const mprof *p = &mc->prof[k];
        uint64_t pk = group_key(p->window, p->sid);
        while (a < mc->n_rows && group_cmp(group_key(mc->rows[a].window, mc->rows[a].sid), mc->rows[a].unit,
                                           mc->rows[a].rate, mc->rows[a].gauge, pk, p->unit, p->rate, p->gauge) < 0)
            a++;
        x->n_pairs = 0;
        for (; a < mc->n_rows && !group_cmp(group_key(mc->rows[a].window, mc->rows[a].sid), mc->rows[a].unit,
                                             mc->rows[a].rate, mc->rows[a].gauge, pk, p->unit, p->rate, p->gauge);
             a++) {
            uint32_t leaf = stack_get(x, mc->rows[a].stack);
            if (!leaf) {
                if (*x->partial_out) continue;   /* its frames are on a shard that is down */
                snprintf(x->err, sizeof x->err, "a stack of series %llu has no frames in ClickHouse's stacks table",
                         (unsigned long long)x->cat->keys[p->sid].series);
                return -1;
            }
            if (pairs_push(x, leaf, mc->rows[a].value)) return -1;
        }
        uint64_t known = p->profiles - (p->unknown < p->profiles ? p->unknown : p->profiles);
        int64_t from_ms, until_ms;
        if (chread_window(w, p->window, &from_ms, &until_ms)) {
            snprintf(x->err, sizeof x->err, "ClickHouse answered a merge's window %u, past the range",
                     (unsigned)p->window);
            return -1;
        }
        store_rprofile rp = { .series = p->sid, .from_ms = from_ms, .until_ms = until_ms, .unit = p->unit,
                              .rate = p->rate, .samples = p->samples, .samples_known = known > 0,
                              .gauge = p->gauge, .leaves = x->leaves, .counts = x->counts, .n = x->n_pairs };
        if (store_rmem_merged(x->m, &rp, known ? known : p->profiles)) return -1;
        if (known && known < p->profiles) {
            store_rprofile un = rp;
            un.samples = 0;
            un.samples_known = 0;
            un.n = 0;
            if (store_rmem_merged(x->m, &un, p->profiles - known)) return -1;
        }
        x->loaded += p->profiles;
    }
    x->n_pairs = 0;
    return 0;
}

/* Three statements: the frames of the stacks summed, the sums, the
 * profiles' counts. */
static int merge_run(reader_ctx *x, void *arg)
{
    const call_args *a = arg;
    merge_ctx *mc = a->ctx;
    chread_windows w = { a->from, a->until, mc->step };
    int rc = chread_merge_frames(x->c, a->cond, &w, on_merged_frames, mc);
    if (!rc && !mc->oom) rc = chread_merge(x->c, a->cond, &w, on_merged_row, mc);
    if (!rc && !mc->oom) rc = chread_merge_profiles(x->c, a->cond, &w, on_merged_profiles, mc);
    if (mc->oom && !x->err[0]) snprintf(x->err, sizeof x->err, "out of memory merging");
    return rc || mc->oom ? -1 : 0;
}

static void merge_ctx_reset(merge_ctx *mc);

static void merge_clear(reader_ctx *x, void *arg)
{
    (void)x;
    merge_ctx_reset(((call_args *)arg)->ctx);
}

static void merge_ctx_reset(merge_ctx *mc)
{
    free(mc->rows);
    free(mc->prof);
    for (size_t i = 0; i < mc->n_units; i++) free(mc->units[i]);
    free(mc->units);
    reader_ctx *x = mc->x;
    int64_t step = mc->step;
    memset(mc, 0, sizeof *mc);
    mc->x = x;
    mc->step = step;
}

/* Windows one merge call sums at most: a statement names each window's
 * ranges (about 7 AST elements each, 3 ranges a window on the raw and
 * 10-minute tables), and ClickHouse parses 50,000 elements at most. */
#define MERGE_WINDOWS 256

static int do_merge(void *ctx, store_rmem *m, const uint32_t *sids, size_t n, int64_t from_ms, int64_t until_ms,
                    int64_t step_ms, char *err, size_t errlen)
{
    reader_ctx *x = ctx;
    x->m = m;
    if (step_ms <= 0 || step_ms >= until_ms - from_ms) step_ms = 0;
    int64_t chunk = step_ms ? step_ms * MERGE_WINDOWS : until_ms - from_ms;
    int rc = 0;
    for (int64_t a0 = from_ms; a0 < until_ms && !rc; a0 += chunk) {
        int64_t b0 = until_ms - a0 > chunk ? a0 + chunk : until_ms;
        char *cond = call_begin(x, sids, n, err, errlen);
        if (!cond) return -1;
        merge_ctx mc = { .x = x, .step = step_ms };
        call_args a = { cond, a0, b0, &mc };
        chread_windows w = { a0, b0, step_ms };
        rc = with_retries(x, merge_run, merge_clear, &a);
        if (!rc) rc = merged_blocks(&mc, &w);
        if (rc && mc.oom && !x->err[0]) snprintf(x->err, sizeof x->err, "out of memory merging");
        merge_ctx_reset(&mc);
        rc = call_end(x, cond, rc, 1, err, errlen);
    }
    return rc;
}

static void do_end(void *ctx)
{
    reader_ctx *x = ctx;
    load_reset(x);
    client_put(x->s, x->c, x->url, x->failed);
    chcat_unref(x->cat);
    free(x->stacks);
    free(x->prof);
    free(x->leaves);
    free(x->counts);
    free(x);
}

int chsource_reader_begin(chsource *s, int partial, int *partial_out, store_reader **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    reader_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    x->s = s;
    x->partial = partial;
    x->partial_out = partial_out;
    /* the endpoints in turn, until one answers */
    char e[1024] = "";
    for (int tries = 0; tries < s->n_urls && !x->cat; tries++) {
        if (!(x->c = client_get(s, &x->url, e, sizeof e))) break;
        if (!(x->cat = catalog_now(s, x->c, partial, partial_out, e, sizeof e))) {
            int shard = shard_unreachable(chread_code(x->c));
            client_put(s, x->c, x->url, 1);
            x->c = NULL;
            if (shard) break; /* the endpoint answered: a shard behind it did not */
        }
    }
    if (!x->cat) {
        snprintf(err, errlen, "%s%s", strstr(e, "ClickHouse") ? "" : "ClickHouse does not answer: ", e[0] ? e : "no endpoint");
        free(x);
        return -1;
    }
    store_rsource src = { .load = do_load, .merge = getenv("FLAMEDB_CH_NO_PUSHDOWN") ? NULL : do_merge,
                          .merge_min_ms = MERGE_MIN_MS, .presence = do_presence, .extent = do_extent,
                          .end = do_end, .ctx = x };
    if (store_reader_begin_remote(x->cat->cat, &src, out)) {
        do_end(x);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
