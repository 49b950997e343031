/* timeline.c — totals over time, from the block headers alone (no block is
 * decoded): each profile's value (samples x weight) goes to the step its
 * window starts in.  Steps are aligned to `from`; empty steps are 0.  Like a
 * merge, one unit per answer: the unit with the most profiles. */
#include <stdlib.h>
#include <string.h>

#include "query.h"

int64_t query_timeline_default_step(int64_t from_ms, int64_t until_ms)
{
    int64_t step = (until_ms - from_ms + 299) / 300;          /* about 300 points */
    step = (step + 9999) / 10000 * 10000;                     /* a multiple of 10 s */
    return step > 0 ? step : 10000;
}

typedef struct {
    const char *unit;        /* count only this unit; NULL: tally units */
    int64_t from, step;
    size_t n;
    uint64_t *values;
    char units[16][64];
    uint64_t unit_profiles[16];
    int n_units;
} tl_ctx;

static int tl_block(const store_block *b, void *arg)
{
    tl_ctx *c = arg;
    uint64_t w;
    const char *u = query_block_unit(b, &w);
    if (!c->unit) {
        int i = 0;
        while (i < c->n_units && strcmp(c->units[i], u)) i++;
        if (i == c->n_units && c->n_units < 16) snprintf(c->units[c->n_units++], 64, "%s", u);
        if (i < 16) c->unit_profiles[i] += b->n_profiles;
        return 0;
    }
    if (strcmp(u, c->unit)) return 0;
    size_t k = (size_t)((b->from_ms - c->from) / c->step);
    if (k < c->n) c->values[k] += b->samples * w;
    return 0;
}

json_t *query_timeline_json(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                            int64_t step_ms, char *unit_out, size_t unit_len)
{
    tl_ctx c = { .from = from_ms, .step = step_ms };
    c.n = (size_t)((until_ms - from_ms + step_ms - 1) / step_ms);
    /* First pass: which unit wins. */
    for (size_t i = 0; i < set->n_series; i++) store_blocks_scan(r, set->series[i], from_ms, until_ms, tl_block, &c);
    int best = -1;
    for (int i = 0; i < c.n_units; i++)
        if (best < 0 || c.unit_profiles[i] > c.unit_profiles[best] ||
            (c.unit_profiles[i] == c.unit_profiles[best] && strcmp(c.units[i], c.units[best]) < 0))
            best = i;
    snprintf(unit_out, unit_len, "%s", best >= 0 ? c.units[best] : "samples");
    c.unit = unit_out;
    c.values = calloc(c.n ? c.n : 1, sizeof *c.values);
    json_t *points = json_array();
    if (!c.values || !points) goto fail;
    for (size_t i = 0; i < set->n_series; i++) store_blocks_scan(r, set->series[i], from_ms, until_ms, tl_block, &c);
    for (size_t k = 0; k < c.n; k++)
        if (json_array_append_new(points, json_pack("[o,I]", query_time_json(from_ms + (int64_t)k * step_ms),
                                                    (json_int_t)c.values[k])))
            goto fail;
    free(c.values);
    return points;
fail:
    free(c.values);
    json_decref(points);
    return NULL;
}
