/* timeline.c — totals over time, from the block headers alone (no block is
 * decoded): each profile's value (samples x weight) goes to the step its
 * window starts in.  Steps are aligned to `from`; empty steps are 0.  Like a
 * merge, one unit per answer: the unit with the most profiles.  A block's
 * value is its stored counts times its weight (rollups store weighted
 * counts and weigh 1).
 *
 * Gauges (snapshots: heap in use) are averaged, not added: within a step,
 * each series adds the mean of its gauge profiles there (the sum of their
 * values over their number), so a step holding two snapshots of 15 MB
 * shows 15 MB, as the merge of that step would.
 *
 * query_timeline answers the points as data (time, counters' sum, gauges'
 * averages); query_timeline_json (encode_json.c) writes /api/v1/timeline's
 * [[t, total], ...] and the Connect SelectSeries handler makes its Points
 * of the same data. */
#include <stdlib.h>
#include <string.h>

#include "query.h"

int64_t query_timeline_default_step(int64_t from_ms, int64_t until_ms)
{
    int64_t step = (until_ms - from_ms + 299) / 300;          /* about 300 points */
    step = (step + 9999) / 10000 * 10000;                     /* a multiple of 10 s */
    return step > 0 ? step : 10000;
}

/* One pass: values per (unit, step); the unit with the most profiles is
 * answered.  Each step is read with store_blocks_scan_merged, so whole
 * rollup buckets inside a step count once: a day reads hundreds of blocks
 * a series, not thousands. */
#define TL_UNITS 16

typedef struct {
    size_t n, step_index;
    uint64_t *values;                 /* [TL_UNITS][n]: counters */
    double *averages;                 /* [TL_UNITS][n]: gauges, summed over series */
    char units[TL_UNITS][64];
    uint64_t unit_profiles[TL_UNITS];
    int unit_gauge[TL_UNITS];
    int n_units;
    uint64_t gauge_sum[TL_UNITS], gauge_n[TL_UNITS]; /* of one series in one step */
    int too_big;                      /* some sum passed 2^63 */
} tl_ctx;

static int tl_block(const store_block *b, void *arg)
{
    tl_ctx *c = arg;
    uint64_t w;
    const char *u = query_block_unit(b, &w);
    int i = 0;
    while (i < c->n_units && strcmp(c->units[i], u)) i++;
    if (i == c->n_units) {
        if (c->n_units == TL_UNITS) return 0; /* more units than anyone pushes: ignored */
        snprintf(c->units[c->n_units++], 64, "%s", u);
    }
    c->unit_profiles[i] += b->n_profiles;
    if (b->gauge) {
        c->unit_gauge[i] = 1;
        if (query_add_weighted(&c->gauge_sum[i], b->counts, w)) c->too_big = 1;
        c->gauge_n[i] += b->n_profiles;
    } else if (query_add_weighted(&c->values[(size_t)i * c->n + c->step_index], b->counts, w)) {
        c->too_big = 1;
    }
    return c->too_big;
}

int query_timeline(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms, int64_t step_ms,
                   query_timeline_result *out)
{
    tl_ctx c = { 0 };
    int rc = -1;
    memset(out, 0, sizeof *out);
    if (set->sample.n_matchers) return -1; /* block headers know no sample labels: the caller refuses them */
    c.n = (size_t)((until_ms - from_ms + step_ms - 1) / step_ms);
    c.values = calloc((c.n ? c.n : 1) * TL_UNITS, sizeof *c.values);
    c.averages = calloc((c.n ? c.n : 1) * TL_UNITS, sizeof *c.averages);
    out->points = malloc((c.n ? c.n : 1) * sizeof *out->points);
    /* series in label-set order: the gauge averages are floating-point sums
     * over series, whose ids follow push order and layout; in a content
     * order the answer is the data's alone (docs/ARCHITECTURE.md) */
    uint32_t *order = malloc((set->n_series ? set->n_series : 1) * sizeof *order);
    if (!c.values || !c.averages || !out->points || !order) goto out;
    memcpy(order, set->series, set->n_series * sizeof *order);
    if (query_series_sort(r, order, set->n_series)) goto out;
    for (size_t i = 0; i < set->n_series; i++) {
        for (c.step_index = 0; c.step_index < c.n; c.step_index++) {
            int64_t ws = from_ms + (int64_t)c.step_index * step_ms;
            int64_t we = ws + step_ms < until_ms ? ws + step_ms : until_ms;
            if (store_reader_expired(r)) goto out; /* nothing partial: the caller says why */
            store_blocks_scan_merged(r, order[i], ws, we, tl_block, &c);
            if (c.too_big) {
                rc = QUERY_ETOOBIG;
                goto out;
            }
            for (int u = 0; u < c.n_units; u++) {
                if (c.gauge_n[u])
                    c.averages[(size_t)u * c.n + c.step_index] += (double)c.gauge_sum[u] / (double)c.gauge_n[u];
                c.gauge_sum[u] = c.gauge_n[u] = 0;
            }
        }
    }
    int best = -1;
    for (int i = 0; i < c.n_units; i++)
        if (best < 0 || c.unit_profiles[i] > c.unit_profiles[best] ||
            (c.unit_profiles[i] == c.unit_profiles[best] && strcmp(c.units[i], c.units[best]) < 0))
            best = i;
    snprintf(out->unit, sizeof out->unit, "%s", best >= 0 ? c.units[best] : "samples");
    out->gauge = best >= 0 && c.unit_gauge[best];
    for (size_t k = 0; k < c.n; k++)
        out->points[k] = (query_point){ from_ms + (int64_t)k * step_ms, best >= 0 ? c.values[(size_t)best * c.n + k] : 0,
                                        out->gauge ? c.averages[(size_t)best * c.n + k] : 0 };
    out->n = c.n;
    rc = 0;
out:
    free(order);
    free(c.values);
    free(c.averages);
    if (rc) query_timeline_free(out);
    return rc;
}

void query_timeline_free(query_timeline_result *tl)
{
    free(tl->points);
    memset(tl, 0, sizeof *tl);
}
