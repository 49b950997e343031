/* pprof_diff.h — pprof bodies decoded two ways, for test_pprof_wire.c and
 * fuzz_pprof_wire.c: by ingest_pprof_parse (pprof_wire.c's single-pass
 * reader), and by protobuf-c's unpack handed to ingest_pprof_decode (the
 * path every pprof body took before, and OTLP's still).  Both must accept
 * the same bodies and give the same profiles, or refuse with the same
 * status (the same message when the refusal is not about the wire format).
 *
 * Header-only (static functions), like fuzz.h. */
#ifndef FLAMEDB_PPROF_DIFF_H
#define FLAMEDB_PPROF_DIFF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ingest/ingest_internal.h"
#include "profile.pb-c.h"

/* The protobuf-c path: ingest_pprof_parse as it was.  *unpacked says
 * whether protobuf-c accepted the bytes (when they were reached). */
static ingest_status pprof_diff_old(const void *body, size_t len, size_t max_out, const ingest_profile *base,
                                    int window_given, ingest_profile **out, size_t *n_out, int *unpacked, char *err,
                                    size_t errlen)
{
    const unsigned char *b = body;
    char *plain = NULL;
    size_t plain_len = len;
    *out = NULL;
    *n_out = 0;
    *unpacked = 0;
    if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
        ingest_status s = ingest_gunzip(body, len, max_out, &plain, &plain_len, err, errlen);
        if (s) return s;
        b = (const unsigned char *)plain;
    }
    Perftools__Profiles__Profile *pb = perftools__profiles__profile__unpack(NULL, plain_len, b);
    int gzipped = plain != NULL;
    free(plain);
    if (!pb) { /* a part of the new path's message */
        snprintf(err, errlen, gzipped ? "not a valid profile.proto" : "nor a valid raw profile.proto");
        return INGEST_EINVAL;
    }
    *unpacked = 1;
    size_t nt = pb->n_sample_type;
    ingest_status s;
    ingest_profile *ps = NULL;
    if (nt == 0 || nt > 256) {
        snprintf(err, errlen, nt ? "sample types, more than the 256" : "no sample types");
        s = INGEST_EINVAL;
    } else if (!(ps = calloc(nt, sizeof *ps))) {
        s = INGEST_ENOMEM;
    } else {
        s = ingest_pprof_decode(pb, max_out, base, window_given, ps, err, errlen);
    }
    perftools__profiles__profile__free_unpacked(pb, NULL);
    if (s) {
        if (ps) ingest_pprof_free(ps, nt);
        return s;
    }
    *out = ps;
    *n_out = nt;
    return INGEST_OK;
}

/* NULL when the two sets of profiles are the same, else what differs. */
static const char *pprof_diff_profiles(const ingest_profile *a, size_t na, const ingest_profile *b, size_t nb)
{
    static char why[256];
    if (na != nb) return "number of profiles";
    for (size_t t = 0; t < na; t++) {
        const ingest_profile *p = &a[t], *q = &b[t];
        if (p->n_labels != q->n_labels) return "number of labels";
        for (int i = 0; i < p->n_labels; i++)
            if (strcmp(p->labels[i].name, q->labels[i].name) || strcmp(p->labels[i].value, q->labels[i].value))
                return "a label";
        if (p->from_ms != q->from_ms || p->until_ms != q->until_ms) return "window";
        if (p->rate != q->rate || strcmp(p->unit, q->unit)) return "rate or unit";
        if (p->total != q->total || p->samples_how != q->samples_how || p->samples != q->samples) return "totals";
        if (p->aggregation != q->aggregation || p->truncated_stacks != q->truncated_stacks) return "aggregation";
        if (p->n_stacks != q->n_stacks) return "number of stacks";
        for (size_t i = 0; i < p->n_stacks; i++) {
            const ingest_stack *x = &p->stacks[i], *y = &q->stacks[i];
            if (x->count != y->count || x->len != y->len || memcmp(x->frames, y->frames, x->len)) {
                snprintf(why, sizeof why, "profile %zu, stack %zu: \"%.60s\" x%llu vs \"%.60s\" x%llu", t, i,
                         x->frames, (unsigned long long)x->count, y->frames, (unsigned long long)y->count);
                return why;
            }
        }
    }
    return NULL;
}

/* Decodes body both ways: NULL when they agree, else what differs.
 * *status is the new path's. */
static const char *pprof_diff(const void *body, size_t len, size_t max_out, const ingest_profile *base,
                              ingest_status *status)
{
    static char why[1400];
    ingest_profile *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    char ea[512] = "", eb[512] = "";
    int unpacked; /* (whether protobuf-c accepted the bytes: the message then says why the core refused) */
    ingest_status sa = ingest_pprof_parse(body, len, max_out, base, 0, &a, &na, ea, sizeof ea);
    ingest_status sb = pprof_diff_old(body, len, max_out, base, 0, &b, &nb, &unpacked, eb, sizeof eb);
    const char *d = NULL;
    *status = sa;
    if (sa != sb) {
        snprintf(why, sizeof why, "status %d (%s) vs protobuf-c's %d (%s)", sa, ea, sb, eb);
        d = why;
    } else if (sa == INGEST_OK) {
        d = pprof_diff_profiles(a, na, b, nb);
    } else if (!strstr(ea, eb)) {
        snprintf(why, sizeof why, "message \"%s\" vs \"%s\"", ea, eb);
        d = why;
    }
    if (a) ingest_pprof_free(a, na);
    if (b) ingest_pprof_free(b, nb);
    return d;
}

#endif
