/* profile.c — the ingest_profile's life: init, labels, final checks, free.
 *
 * A profile is filled in steps by the caller (labels from parameters or a
 * Pyroscope name, stacks from ingest_parse_stacks, window, rate and unit set
 * directly) and then sealed by ingest_profile_finish, which checks that the
 * whole is consistent and puts labels in name order so that equal label
 * sets compare equal byte for byte.
 *
 * Every step either succeeds or leaves the profile as it found it, so a
 * caller can reject a request at any point and only has to free.  Labels
 * are few (at most INGEST_MAX_LABELS), so they live in a fixed array and are
 * searched linearly. */
#include "ingest_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int valid_label_name(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
            return 0;
    return 1;
}

void ingest_profile_init(ingest_profile *p)
{
    memset(p, 0, sizeof *p);
}

void ingest_profile_free(ingest_profile *p)
{
    for (int i = 0; i < p->n_labels; i++) {
        free(p->labels[i].name);
        free(p->labels[i].value);
    }
    free(p->stacks);
    free(p->arena);
    free(p->hashes);
    pprof_later_free(p->later);
    ingest_profile_init(p);
}

const char *ingest_label_get(const ingest_profile *p, const char *name)
{
    for (int i = 0; i < p->n_labels; i++)
        if (strcmp(p->labels[i].name, name) == 0)
            return p->labels[i].value;
    return NULL;
}

ingest_status ingest_label_add(ingest_profile *p, const char *name, const char *value,
                               char *err, size_t errlen)
{
    size_t name_len = strlen(name), value_len = strlen(value);
    char q[80];

    if (name_len > INGEST_MAX_LABEL_NAME) {
        ingest_quote(q, sizeof q, name, name_len);
        snprintf(err, errlen, "label name '%s' is longer than %d bytes", q,
                 INGEST_MAX_LABEL_NAME);
        return INGEST_EINVAL;
    }
    if (!valid_label_name(name)) {
        ingest_quote(q, sizeof q, name, name_len);
        snprintf(err, errlen, "label name '%s' must match [a-zA-Z_][a-zA-Z0-9_.]*", q);
        return INGEST_EINVAL;
    }
    if (ingest_label_get(p, name)) {
        snprintf(err, errlen, "label '%s' given twice", name);
        return INGEST_EINVAL;
    }
    if (value_len == 0) {
        snprintf(err, errlen, "label '%s' has an empty value", name);
        return INGEST_EINVAL;
    }
    if (value_len > INGEST_MAX_LABEL_VALUE) {
        snprintf(err, errlen, "label '%s' value is longer than %d bytes", name,
                 INGEST_MAX_LABEL_VALUE);
        return INGEST_EINVAL;
    }
    if (!utf8_valid(value, value_len)) {
        snprintf(err, errlen, "label '%s' value is not valid UTF-8", name);
        return INGEST_EINVAL;
    }
    if (p->n_labels >= INGEST_MAX_LABELS) {
        snprintf(err, errlen, "more than %d labels", INGEST_MAX_LABELS);
        return INGEST_EINVAL;
    }
    char *n = malloc(name_len + 1), *v = malloc(value_len + 1);
    if (!n || !v) {
        free(n);
        free(v);
        snprintf(err, errlen, "out of memory adding label '%s'", name);
        return INGEST_ENOMEM;
    }
    memcpy(n, name, name_len + 1);
    memcpy(v, value, value_len + 1);
    p->labels[p->n_labels].name = n;
    p->labels[p->n_labels].value = v;
    p->n_labels++;
    return INGEST_OK;
}

/* Checks that no count, weighted by 1e9/rate nanoseconds per sample, goes
 * beyond what a JSON double holds exactly. */
static ingest_status check_weights(const ingest_profile *p, const char *unit,
                                   char *err, size_t errlen)
{
    if (p->rate == 0)
        return INGEST_OK;
    if (!isfinite(p->rate) || p->rate < 0) {
        snprintf(err, errlen, "rate must be a positive number of Hz, not %g", p->rate);
        return INGEST_EINVAL;
    }
    if (p->rate > 1e9) {
        snprintf(err, errlen, "rate %g Hz is above 1e9 Hz (one sample per nanosecond)",
                 p->rate);
        return INGEST_EINVAL;
    }
    if (strcmp(unit, "samples") != 0)
        return INGEST_OK;
    uint64_t weight = (uint64_t)llround(1e9 / p->rate);
    uint64_t max_count = INGEST_MAX_VALUE / weight;
    for (size_t i = 0; i < p->n_stacks; i++) {
        if (p->stacks[i].count > max_count) {
            snprintf(err, errlen,
                     "a count of %llu at rate %g Hz exceeds the largest exact value "
                     "(%llu ns per sample, at most %llu ns)",
                     (unsigned long long)p->stacks[i].count, p->rate,
                     (unsigned long long)weight, (unsigned long long)INGEST_MAX_VALUE);
            return INGEST_EINVAL;
        }
    }
    return INGEST_OK;
}

static void sort_labels(ingest_profile *p)
{
    for (int i = 1; i < p->n_labels; i++) {
        ingest_label l = p->labels[i];
        int j = i;
        for (; j > 0 && strcmp(p->labels[j - 1].name, l.name) > 0; j--)
            p->labels[j] = p->labels[j - 1];
        p->labels[j] = l;
    }
}

int ingest_unit_counts_samples(const char *unit)
{
    static const char *const units[] = { "samples", "count", "objects", "goroutines", "goroutine", "lock_samples", NULL };
    for (int i = 0; units[i]; i++)
        if (strcmp(unit, units[i]) == 0) return 1;
    return 0;
}

int ingest_type_is_gauge(const char *type)
{
    static const char *const types[] = { "inuse_space", "inuse_objects", "goroutine", "goroutines", NULL };
    for (int i = 0; types[i]; i++)
        if (strcmp(type, types[i]) == 0) return 1;
    return 0;
}

int ingest_aggregation_parse(const char *name, ingest_aggregation *out)
{
    if (strcmp(name, "sum") == 0) *out = INGEST_AGG_SUM;
    else if (strcmp(name, "average") == 0) *out = INGEST_AGG_AVERAGE;
    else return -1;
    return 0;
}

ingest_status ingest_profile_finish(ingest_profile *p, char *err, size_t errlen)
{
    ingest_status st;

    if (!ingest_label_get(p, "service")) {
        snprintf(err, errlen, "missing label 'service' (the application's name)");
        return INGEST_EINVAL;
    }
    if (p->from_ms >= p->until_ms) {
        snprintf(err, errlen, "from must be before until (from %lld ms, until %lld ms)",
                 (long long)p->from_ms, (long long)p->until_ms);
        return INGEST_EINVAL;
    }
    if ((st = check_weights(p, p->unit[0] ? p->unit : "samples", err, errlen)) != INGEST_OK)
        return st;
    if (!ingest_label_get(p, "type") &&
        (st = ingest_label_add(p, "type", "cpu", err, errlen)) != INGEST_OK)
        return st;
    if (p->unit[0] == '\0')
        memcpy(p->unit, "samples", sizeof "samples");
    if (p->samples_how == INGEST_SAMPLES_FROM_UNIT) {
        p->samples_how = ingest_unit_counts_samples(p->unit) ? INGEST_SAMPLES_KNOWN : INGEST_SAMPLES_UNKNOWN;
        p->samples = p->samples_how == INGEST_SAMPLES_KNOWN ? p->total : 0;
    }
    if (p->aggregation == INGEST_AGG_FROM_TYPE)
        p->aggregation = ingest_type_is_gauge(ingest_label_get(p, "type")) ? INGEST_AGG_AVERAGE : INGEST_AGG_SUM;
    sort_labels(p);
    return INGEST_OK;
}
