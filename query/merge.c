/* merge.c — merging stored profiles into one call tree.
 *
 * One time partition at a time: every stack of a partition is a node of
 * that partition's call tree, so merging is addition into flat arrays
 * indexed by its node ids: for each block in range, self[node] += count *
 * weight, and a bitmap remembers which nodes were hit (the arrays come from
 * calloc, so pages no block touches are never backed by memory).  Then the
 * hit nodes are folded into the reader's call tree (store_part_node: one
 * tree across partitions, by function names) and added to the answer's
 * arrays, which grow as the reader's tree does.  Totals come from one
 * backwards pass over the answer's bitmap (children have larger ids than
 * their parents), which also marks the ancestors of every hit node.
 *
 * Weight.  A `samples` profile that carries a sampling rate is answered in
 * CPU time: each count weighs round(1e9 / rate) nanoseconds, so profiles
 * taken at different frequencies add up correctly.  Integer weights keep
 * every answer exact and reproducible (the rounding is below 1 ns a sample).
 *
 * Parallel.  A partition's blocks are collected by the reader's thread (LMDB
 * snapshots belong to one thread; the blocks' bytes stay valid in the map
 * until the reader ends); when they hold many pairs, several threads decode
 * and accumulate them, each into its own arrays, summed afterwards.
 * Integer sums do not depend on the order: answers are byte-identical.
 *
 * Units.  One answer has one unit.  The unit with the most profiles wins
 * (ties: alphabetical); profiles in other units are left out and listed, so
 * nothing is silently mixed.
 *
 * Sample labels.  The set's matchers on sample labels (sample.c) are
 * installed on the reader, which answers STORE_NODE_DROPPED for the nodes
 * of refused stacks: their values leave the grand total (counted in
 * sample_dropped), and since the samples behind a block cannot be split by
 * stack, a merge that dropped any value has no known sample count (no
 * intervals). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../storage/remote.h"
#include "query.h"

typedef struct {
    char name[64];
    uint64_t profiles;
    int gauge;              /* some profile in this unit is a gauge */
} unit_count;

typedef struct {
    store_block b;
    uint64_t weight;
} pending_block;

typedef struct {
    store_reader *r;
    query_tree *t;
    uint64_t *acc, *acc_touched;   /* the partition being merged */
    pending_block *pending;        /* its blocks, accumulated after the scan */
    size_t n_pending, cap_pending;
    uint64_t pending_pairs;
    const char *want;       /* the unit to merge, or NULL: take the first seen */
    unit_count units[16];
    int n_units;
    int failed;             /* 1 undecodable, 2 out of memory, 3 values past 2^63 */
    uint64_t planned;       /* sum of the values of the blocks taken, weighted */
    size_t cur;             /* index in the set of the series being scanned */
    /* Gauges (averaged over time): a gauge block of series i weighs
     * gauge_scale[i], a counter block counter_scale; NULL / 1 when the
     * merge has no gauges.  The counting pass fills gauge_n and sums. */
    const uint64_t *gauge_scale;
    uint64_t counter_scale;
    int counting;
    uint64_t *gauge_n;
    unsigned __int128 *gauge_sum, counter_sum;
} merge_ctx;

const char *query_block_unit(const store_block *b, uint64_t *weight)
{
    return store_value_unit(b->unit, b->rate, weight);
}

/* Counts a block's profiles (a rollup block holds many) for its unit. */
static void count_unit(merge_ctx *c, const char *unit, uint64_t profiles, int gauge)
{
    for (int i = 0; i < c->n_units; i++) {
        if (strcmp(c->units[i].name, unit) == 0) {
            c->units[i].profiles += profiles;
            c->units[i].gauge |= gauge;
            return;
        }
    }
    if (c->n_units < 16) {
        snprintf(c->units[c->n_units].name, sizeof c->units[0].name, "%s", unit);
        c->units[c->n_units].gauge = gauge;
        c->units[c->n_units++].profiles = profiles;
    }
}

/* The counting pass of a merge with gauges: per series, the gauge profiles
 * in the unit and the sum of their values; the sum of the counters. */
static int count_block(const store_block *b, void *arg)
{
    merge_ctx *c = arg;
    uint64_t w;
    if (strcmp(query_block_unit(b, &w), c->want) != 0) return 0;
    unsigned __int128 v = (unsigned __int128)b->counts * w;
    if (b->gauge) {
        c->gauge_n[c->cur] += b->n_profiles;
        c->gauge_sum[c->cur] += v;
    } else {
        c->counter_sum += v;
    }
    return 0;
}

static int add_block(const store_block *b, void *arg)
{
    merge_ctx *c = arg;
    query_tree *t = c->t;
    uint64_t w;
    const char *unit = query_block_unit(b, &w);
    count_unit(c, unit, b->n_profiles, b->gauge);
    if (!c->want) {
        snprintf(t->unit, sizeof t->unit, "%s", unit);
        c->want = t->unit;
    }
    if (strcmp(unit, c->want) != 0) return 0;
    w *= b->gauge ? (c->gauge_scale ? c->gauge_scale[c->cur] : 1) : (c->counter_scale ? c->counter_scale : 1);
    /* Every node's value is at most the grand total: checking the sum of
     * the blocks (one multiply and add a block, not a pair) keeps every
     * value below 2^63, exact as a JSON integer. */
    if (query_add_weighted(&c->planned, b->counts, w)) {
        c->failed = 3;
        return 1;
    }
    if (c->n_pending == c->cap_pending) {
        size_t cap = c->cap_pending ? c->cap_pending * 2 : 256;
        pending_block *np = realloc(c->pending, cap * sizeof *np);
        if (!np) {
            c->failed = 2;
            return 1;
        }
        c->pending = np;
        c->cap_pending = cap;
    }
    c->pending[c->n_pending++] = (pending_block){ *b, w };
    c->pending_pairs += b->n_pairs;
    if (b->samples_known) t->samples += b->samples;
    else t->samples_unknown += b->n_profiles;
    t->profiles += b->n_profiles;
    return 0;
}

/* Fills total[] from self[] and marks every ancestor of a hit node. */
static void finish_totals(store_reader *r, query_tree *t)
{
    memcpy(t->total, t->self, (size_t)t->n_nodes * sizeof *t->total);
    t->total[0] = t->grand_total;
    for (size_t w = (t->n_nodes + 63) / 64; w-- > 0;) {
        uint64_t bits = t->touched[w];
        while (bits) {
            int b = 63 - __builtin_clzll(bits);
            bits &= ~(UINT64_C(1) << b);
            uint32_t id = (uint32_t)(w * 64 + (size_t)b);
            if (id == 0) continue;
            uint32_t p = store_node_parent(r, id);
            if (p) t->total[p] += t->total[id];
            t->touched[p >> 6] |= UINT64_C(1) << (p & 63);
            if ((p >> 6) == w) bits |= UINT64_C(1) << (p & 63);
        }
    }
}

static int alloc_tree(query_tree *t, uint32_t n_nodes)
{
    memset(t, 0, sizeof *t);
    t->n_nodes = n_nodes;
    t->self = calloc(n_nodes, sizeof *t->self);
    t->total = calloc(n_nodes, sizeof *t->total);
    t->touched = calloc((n_nodes + 63) / 64, sizeof *t->touched);
    return t->self && t->total && t->touched ? 0 : -1;
}

/* Grows the answer's arrays to at least n nodes, zero-filled.  calloc,
 * not realloc + memset: pages no node reaches are never backed, as with
 * the exact-size arrays of a single merge. */
static int grow_tree(query_tree *t, uint32_t n)
{
    if (n <= t->n_nodes) return 0;
    uint64_t *s = calloc(n, sizeof *s), *tot = calloc(n, sizeof *tot);
    uint64_t *tb = calloc(((size_t)n + 63) / 64, sizeof *tb);
    if (!s || !tot || !tb) {
        free(s);
        free(tot);
        free(tb);
        return -1;
    }
    if (t->n_nodes) {
        memcpy(s, t->self, (size_t)t->n_nodes * sizeof *s);
        memcpy(tot, t->total, (size_t)t->n_nodes * sizeof *tot);
        memcpy(tb, t->touched, ((size_t)t->n_nodes + 63) / 64 * sizeof *tb);
    }
    free(t->self);
    free(t->total);
    free(t->touched);
    t->self = s;
    t->total = tot;
    t->touched = tb;
    t->n_nodes = n;
    return 0;
}

/* Adds one partition's hit nodes into the answer under the reader's ids. */
static int fold_part(store_reader *r, store_part *p, uint32_t nl, query_tree *t, const uint64_t *acc,
                     const uint64_t *touched)
{
    int failed = 0;
    /* At most one new reader node per partition node: grow once. */
    uint64_t bound = (uint64_t)store_node_max(r) + 1 + nl;
    if (bound > t->n_nodes && grow_tree(t, bound > UINT32_MAX ? UINT32_MAX : (uint32_t)bound)) return -2;
    for (size_t w = 0; w < (nl + 63) / 64; w++) {
        uint64_t bits = touched[w];
        while (bits) {
            int b = __builtin_ctzll(bits);
            bits &= bits - 1;
            uint32_t x = (uint32_t)(w * 64 + (size_t)b);
            uint32_t q = store_part_node(r, p, x, &failed);
            if (failed) return -1;
            if (q == STORE_NODE_DROPPED) { /* the sample filter refused its stack */
                t->grand_total -= acc[x];
                t->sample_dropped += acc[x];
                continue;
            }
            if (q >= t->n_nodes && grow_tree(t, q + 1 + q / 2)) return -2;
            t->self[q] += acc[x];
            t->touched[q >> 6] |= UINT64_C(1) << (q & 63);
        }
    }
    return 0;
}

/* ---- accumulating a partition's blocks, on one thread or several ---- */

static _Atomic unsigned merge_threads = 0;           /* 0: one per online CPU */
static _Atomic uint64_t merge_parallel_pairs = QUERY_MERGE_PARALLEL_PAIRS;

void query_merge_parallel(unsigned threads, uint64_t min_pairs)
{
    atomic_store(&merge_threads, threads);
    atomic_store(&merge_parallel_pairs, min_pairs);
}

typedef struct {
    const pending_block *blocks;
    size_t n, first, step;
    uint32_t nl;
    uint64_t *acc, *touched, sum;
    int failed;
} acc_job;

static void *acc_run(void *arg)
{
    acc_job *j = arg;
    store_decoder *d = store_decoder_new();
    if (!d) {
        j->failed = 2;
        return NULL;
    }
    for (size_t i = j->first; i < j->n && !j->failed; i += j->step) {
        uint64_t sum;
        if (store_decoder_accumulate(d, &j->blocks[i].b, j->blocks[i].weight, j->nl, j->acc, j->touched, &sum))
            j->failed = 1;
        j->sum += sum;
    }
    store_decoder_free(d);
    return NULL;
}

/* Accumulates the pending blocks into c->acc; answers 0, -1, -2. */
static int accumulate_pending(merge_ctx *c, uint32_t nl)
{
    unsigned threads = atomic_load(&merge_threads);
    if (!threads) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (threads > 64) threads = 64;
    if (c->pending_pairs < atomic_load(&merge_parallel_pairs) || c->n_pending < 2 * (size_t)threads) threads = 1;
    uint64_t total = 0;
    int failed = 0;
    if (threads == 1) {
        for (size_t i = 0; i < c->n_pending && !failed; i++) {
            if (!(i & 255) && store_reader_expired(c->r)) {
                failed = 4;
                break;
            }
            uint64_t sum;
            store_status ss = store_block_accumulate(c->r, &c->pending[i].b, c->pending[i].weight, c->acc,
                                                     c->acc_touched, &sum);
            if (ss) failed = ss == STORE_ENOMEM ? 2 : 1;
            total += sum;
        }
    } else {
        acc_job jobs[64];
        pthread_t th[64];
        size_t words = ((size_t)nl + 63) / 64;
        unsigned started = 0;
        for (unsigned k = 0; k < threads; k++) {
            jobs[k] = (acc_job){ c->pending, c->n_pending, k, threads, nl, c->acc, c->acc_touched, 0, 0 };
            if (k && (!(jobs[k].acc = calloc(nl, sizeof *jobs[k].acc)) ||
                      !(jobs[k].touched = calloc(words, sizeof *jobs[k].touched)))) {
                free(jobs[k].acc);
                failed = 2;
                break;
            }
            if (k && pthread_create(&th[k], NULL, acc_run, &jobs[k])) {
                free(jobs[k].acc);
                free(jobs[k].touched);
                failed = 2;
                break;
            }
            started = k + 1;
        }
        if (started) acc_run(&jobs[0]);
        for (unsigned k = 0; k < started; k++) {
            if (k) pthread_join(th[k], NULL);
            if (jobs[k].failed > failed) failed = jobs[k].failed;
            total += jobs[k].sum;
            if (!k) continue;
            for (size_t w = 0; w < words; w++) {
                uint64_t bits = jobs[k].touched[w];
                c->acc_touched[w] |= bits;
                while (bits) {
                    size_t x = w * 64 + (size_t)__builtin_ctzll(bits);
                    bits &= bits - 1;
                    c->acc[x] += jobs[k].acc[x];
                }
            }
            free(jobs[k].acc);
            free(jobs[k].touched);
        }
    }
    c->t->grand_total += total;
    c->n_pending = 0;
    c->pending_pairs = 0;
    return failed == 4 ? -4 : failed == 2 ? -2 : failed ? -1 : 0;
}

/* Answers 0, -1 when a block could not be decoded, -2 out of memory. */
static int merge_pass(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                      query_tree *t, merge_ctx *c)
{
    store_part **parts;
    size_t np = store_reader_parts(r, from_ms, until_ms, &parts);
    unsigned char *seen = calloc(set->n_series + 1, 1);
    if (!seen) return -2;
    int rc = 0;
    for (size_t k = 0; k < np && !rc; k++) {
        uint32_t nl = store_part_nodes(r, parts[k]);
        if (!nl) continue;
        c->acc = calloc(nl, sizeof *c->acc);
        c->acc_touched = calloc((nl + 63) / 64, sizeof *c->acc_touched);
        if (!c->acc || !c->acc_touched) rc = -2;
        for (size_t i = 0; i < set->n_series && !rc; i++) {
            if (store_reader_expired(r)) {
                rc = -4;
                break;
            }
            uint64_t before = t->profiles;
            c->cur = i;
            store_part_scan_merged(r, parts[k], set->series[i], from_ms, until_ms, add_block, c);
            if (c->failed) rc = c->failed == 2 ? -2 : c->failed == 3 ? -3 : -1;
            if (t->profiles > before) seen[i] = 1;
        }
        if (!rc) rc = accumulate_pending(c, nl);
        c->n_pending = 0;
        c->pending_pairs = 0;
        if (!rc) rc = fold_part(r, parts[k], nl, t, c->acc, c->acc_touched);
        free(c->acc);
        free(c->acc_touched);
        c->acc = c->acc_touched = NULL;
    }
    for (size_t i = 0; i < set->n_series; i++) t->series += seen[i];
    free(seen);
    free(c->pending);
    c->pending = NULL;
    c->cap_pending = 0;
    if (!rc && grow_tree(t, store_node_max(r) + 1)) rc = -2;
    return rc;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Weights for a merge that averages gauges over time: series i's gauge
 * profiles (n_i of them in the range) weigh L / n_i and counters L, where L
 * (the answer's divisor) is the least common multiple of the n_i, so every
 * value stays an exact integer and values / L are the averages.  When L
 * or the weighted sums would not fit 63 bits, L is instead the largest
 * that fits and each weight L / n_i is rounded (*inexact: a relative error
 * below n_i / 2L a series).  Answers 0, -2 out of memory. */
static int gauge_plan(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms, const char *unit,
                      uint64_t **scale, uint64_t *counter_scale, uint64_t *divisor, int *inexact)
{
    merge_ctx c = { .r = r, .want = unit, .counting = 1 };
    c.gauge_n = calloc(set->n_series + 1, sizeof *c.gauge_n);
    c.gauge_sum = calloc(set->n_series + 1, sizeof *c.gauge_sum);
    *scale = calloc(set->n_series + 1, sizeof **scale);
    if (!c.gauge_n || !c.gauge_sum || !*scale) {
        free(c.gauge_n);
        free(c.gauge_sum);
        free(*scale);
        *scale = NULL;
        return -2;
    }
    store_part **parts;
    size_t np = store_reader_parts(r, from_ms, until_ms, &parts);
    for (size_t k = 0; k < np; k++)
        for (c.cur = 0; c.cur < set->n_series; c.cur++)
            store_part_scan_merged(r, parts[k], set->series[c.cur], from_ms, until_ms, count_block, &c);
    const uint64_t max_l = UINT64_C(1) << 40;
    uint64_t L = 1;
    *inexact = 0;
    for (size_t i = 0; i < set->n_series && !*inexact; i++) {
        uint64_t n = c.gauge_n[i];
        if (!n) continue;
        unsigned __int128 next = (unsigned __int128)(L / gcd_u64(L, n)) * n;
        if (next > max_l) *inexact = 1;
        else L = (uint64_t)next;
    }
    unsigned __int128 bound = c.counter_sum * L;
    for (size_t i = 0; i < set->n_series && !*inexact; i++)
        if (c.gauge_n[i]) bound += c.gauge_sum[i] * (L / c.gauge_n[i]);
    if (!*inexact && bound >= (unsigned __int128)1 << 63) *inexact = 1;
    if (*inexact) {
        /* the averages' sum, then the largest L that keeps sum x L below 2^62 */
        double avg = (double)c.counter_sum;
        for (size_t i = 0; i < set->n_series; i++)
            if (c.gauge_n[i]) avg += (double)c.gauge_sum[i] / (double)c.gauge_n[i];
        double l = avg >= 1 ? 4611686018427387904.0 / (avg * 2) : (double)max_l;
        if (l > (double)max_l) l = (double)max_l;
        L = l < 1 ? 1 : (uint64_t)l;
    }
    for (size_t i = 0; i < set->n_series; i++) {
        if (!c.gauge_n[i]) continue;
        uint64_t w = (L + c.gauge_n[i] / 2) / c.gauge_n[i];
        (*scale)[i] = w ? w : 1;
    }
    *counter_scale = L;
    *divisor = L;
    free(c.gauge_n);
    free(c.gauge_sum);
    return 0;
}

static int unit_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int query_merge(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                query_tree *out, char *err, size_t errlen)
{
    return query_merge_in_unit(r, set, from_ms, until_ms, NULL, out, err, errlen);
}

int query_merge_in_unit(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                        const char *unit, query_tree *out, char *err, size_t errlen)
{
    query_sample_install(r, set);
    /* a remote reader (cluster mode) has the sums made where the data is */
    store_reader_prefetch_merged(r, set->series, set->n_series, from_ms, until_ms);
    uint32_t n_nodes = store_node_max(r) + 1;
    if (alloc_tree(out, n_nodes)) goto oom;
    merge_ctx c = { .r = r, .t = out };
    if (unit) {
        snprintf(out->unit, sizeof out->unit, "%s", unit);
        c.want = out->unit;
    }
    int mrc = merge_pass(r, set, from_ms, until_ms, out, &c);
    if (mrc) goto failed;

    /* The unit with the most profiles wins; merge again if it was not the
     * first one seen (rare: one type pushed both with and without a rate). */
    int best = -1;
    for (int i = 0; i < c.n_units; i++)
        if (best < 0 || c.units[i].profiles > c.units[best].profiles ||
            (c.units[i].profiles == c.units[best].profiles && strcmp(c.units[i].name, c.units[best].name) < 0))
            best = i;
    if (unit) {
        /* The caller chose the unit: everything else is left out. */
        for (best = 0; best < c.n_units && strcmp(c.units[best].name, unit); best++)
            ;
        if (best == c.n_units) best = -1;
    }
    int gauge = best >= 0 && c.units[best].gauge;
    if (best >= 0 && (gauge || strcmp(c.units[best].name, out->unit) != 0)) {
        /* Merge again: in the unit chosen, and with gauges averaged. */
        char want[64];
        snprintf(want, sizeof want, "%s", c.units[best].name);
        uint64_t *scale = NULL, counter_scale = 1, divisor = 1;
        int inexact = 0;
        if (gauge && gauge_plan(r, set, from_ms, until_ms, want, &scale, &counter_scale, &divisor, &inexact)) goto oom;
        query_tree_free(out);
        if (alloc_tree(out, n_nodes)) {
            free(scale);
            goto oom;
        }
        snprintf(out->unit, sizeof out->unit, "%s", want);
        merge_ctx c2 = { .r = r, .t = out, .want = out->unit, .gauge_scale = scale, .counter_scale = counter_scale };
        mrc = merge_pass(r, set, from_ms, until_ms, out, &c2);
        free(scale);
        if (mrc) goto failed;
        out->gauge = gauge;
        out->divisor = divisor;
        out->inexact = inexact;
    }
    if (!out->divisor) out->divisor = 1;
    if (best >= 0 && c.n_units > 1) {
        out->other_units = calloc((size_t)c.n_units, sizeof *out->other_units);
        if (!out->other_units) goto oom;
        for (int i = 0; i < c.n_units; i++) {
            if (i == best) continue;
            out->other_units[out->n_other_units++] = strdup(c.units[i].name);
            out->skipped_profiles += c.units[i].profiles;
        }
        qsort(out->other_units, out->n_other_units, sizeof *out->other_units, unit_cmp);
    }
    if (!out->unit[0]) snprintf(out->unit, sizeof out->unit, "samples");
    if (out->sample_dropped && !out->samples_unknown) out->samples_unknown = 1; /* see "Sample labels" */
    finish_totals(r, out);
    return 0;
oom:
    query_tree_free(out);
    snprintf(err, errlen, "out of memory merging profiles");
    return -1;
failed:
    if (mrc == -2) goto oom;
    query_tree_free(out);
    if (mrc == -4) return query_stopped(r, err, errlen);
    if (mrc == -3) {
        snprintf(err, errlen, "the profiles of this range add up to more than 2^63 %s: too much for exact "
                 "integers; narrow the range or the selector", unit ? unit : "in their unit");
        return QUERY_ETOOBIG;
    }
    snprintf(err, errlen, "a stored profile could not be decoded (damaged data file?)");
    return -1;
}

void query_tree_free(query_tree *t)
{
    free(t->self);
    free(t->total);
    free(t->touched);
    for (size_t i = 0; i < t->n_other_units; i++) free(t->other_units[i]);
    free(t->other_units);
    memset(t, 0, sizeof *t);
}
