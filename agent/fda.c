/* fda.c — adaptive sampling frequency (Atys FDA).
 *
 * Each interval yields the distribution of the top-10 functions by self
 * samples (normalized over those ten).  D is the Jensen-Shannon divergence,
 * base 2 (so 0 <= D <= 1), between this interval's distribution and the
 * previous one's, functions matched by name.  When the profile shifts
 * (D > theta) the frequency rises: f <- min(f / lambda, max).  When it has
 * been steady (D <= theta) for AGENT_FDA_STEADY consecutive intervals, it
 * falls: f <- max(f * lambda, min), and the count starts again.  Pure.
 * Functions are named by the name part of their frame text: the lines of
 * one function (frames with lines, issue 15) are one function here.
 */
#include "fda.h"
#include "frametext.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *name; size_t len; uint64_t count; } fda_row;

static int fda_name_cmp(const fda_row *x, const fda_row *y)
{
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int fda_by_name(const void *a, const void *b) { return fda_name_cmp(a, b); }

static int fda_cmp(const void *a, const void *b)
{
    const fda_row *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return fda_name_cmp(x, y);
}

void agent_fda_top(const char *const *names, const uint64_t *counts, size_t n,
                   agent_fda_dist *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0) return;
    fda_row *rows = malloc(n * sizeof *rows);
    if (!rows) return;
    /* functions, not lines: frame texts that differ only in their
     * location (agent_frame_locate) are one function */
    for (size_t i = 0; i < n; i++)
        rows[i] = (fda_row){ names[i], agent_frame_name_len(names[i]), counts[i] };
    qsort(rows, n, sizeof *rows, fda_by_name);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && fda_name_cmp(&rows[m - 1], &rows[i]) == 0) rows[m - 1].count += rows[i].count;
        else rows[m++] = rows[i];
    }
    n = m;
    qsort(rows, n, sizeof *rows, fda_cmp);
    uint64_t sum = 0;
    int k = 0;
    for (size_t i = 0; i < n && k < AGENT_FDA_TOP; i++) {
        if (rows[i].count == 0) break;
        snprintf(out->name[k], sizeof out->name[k], "%.*s", (int)rows[i].len, rows[i].name);
        out->p[k] = (double)rows[i].count;
        sum += rows[i].count;
        k++;
    }
    for (int i = 0; i < k; i++) out->p[i] /= (double)sum;
    out->n = k;
    free(rows);
}

static double fda_find(const agent_fda_dist *d, const char *name)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->name[i], name) == 0) return d->p[i];
    return 0.0;
}

/* Adds the JS terms of the functions of `a` (and, when `b_only`, only
 * those absent from `other`). */
static double fda_terms(const agent_fda_dist *a, const agent_fda_dist *other,
                        int a_is_p, int only_missing)
{
    double s = 0;
    for (int i = 0; i < a->n; i++) {
        double q = fda_find(other, a->name[i]);
        if (only_missing && q > 0) continue;
        double p1 = a_is_p ? a->p[i] : q, p2 = a_is_p ? q : a->p[i];
        double m = (p1 + p2) / 2;
        if (p1 > 0) s += 0.5 * p1 * log2(p1 / m);
        if (p2 > 0) s += 0.5 * p2 * log2(p2 / m);
    }
    return s;
}

double agent_fda_jsd(const agent_fda_dist *a, const agent_fda_dist *b)
{
    /* every name of a (with its match in b), then names only in b */
    double d = fda_terms(a, b, 1, 0) + fda_terms(b, a, 0, 1);
    if (d < 0) d = 0;
    if (d > 1) d = 1;
    return d;
}

void agent_fda_init(agent_fda *s, double freq, double min, double max,
                    double theta, double lambda)
{
    memset(s, 0, sizeof *s);
    s->freq = freq; s->min = min; s->max = max;
    s->theta = theta; s->lambda = lambda;
}

double agent_fda_step(agent_fda *s, const agent_fda_dist *cur)
{
    if (cur->n == 0) return s->freq;           /* nothing sampled: no signal */
    if (!s->have_prev) {
        s->prev = *cur;
        s->have_prev = 1;
        s->last_d = 0;
        return s->freq;
    }
    double d = agent_fda_jsd(&s->prev, cur);
    s->last_d = d;
    s->prev = *cur;
    if (d > s->theta) {
        s->steady = 0;
        s->freq = fmin(s->freq / s->lambda, s->max);
    } else if (++s->steady >= AGENT_FDA_STEADY) {
        s->steady = 0;
        s->freq = fmax(s->freq * s->lambda, s->min);
    }
    return s->freq;
}
