/* pprof_wire.c — pprof's profile.proto read straight from its bytes into
 * the flat form of pprof_flat.h, in one pass, without a message per
 * Sample, Location, Line or Function.
 *
 * The messages of each kind land side by side in one growing array (their
 * repeated scalars and lines in shared arrays, by offset); strings are
 * noted as (start, length) in the body while reading and copied, NUL-
 * terminated, into one block at the end.  Comments and the other fields
 * flamedb does not read are checked and skipped.
 *
 * What is accepted is what protobuf-c 1.4's protobuf_c_message_unpack
 * accepts for profile.proto, the decoder this file replaces for pprof
 * bodies (tests/unit/test_pprof_wire.c and tests/fuzz/fuzz_pprof_wire.c
 * compare the two on the same bytes):
 *   - a tag is a varint of at most 5 bytes whose first byte has tag bits;
 *     wire types 0 (varint, at most 10 bytes, bits past 64 dropped), 1 and
 *     5 (8 and 4 bytes), 2 (a length of at most 5 bytes, <= INT_MAX, inside
 *     the message); groups (3, 4) and 6, 7 are errors;
 *   - unknown fields are skipped, whatever their (valid) wire type;
 *   - a known integer field must be a varint; a repeated one may also be
 *     packed (wire type 2, varints each ending inside it); strings and
 *     messages must be length-delimited; a bool may have any wire type;
 *   - a singular field given twice keeps the last (for period_type, the
 *     last message whole: protobuf-c merges proto3 scalars that way);
 *   - a string keeps its bytes up to its first NUL, as protobuf-c's
 *     NUL-terminated copy reads with strlen; UTF-8 is not checked here.
 * A field with a one-byte key and a varint or a length of one or two bytes
 * (nearly all of a profile's) is read inline by next_field; any other,
 * and every error, by next_field_any. */
#include "pprof_flat.h"

#include "../common/varint.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing array. */
typedef struct { void *p; size_t n, cap; } vec;

/* Room for `extra` more elements of size el: a pointer to the first, or
 * NULL when out of memory. */
static void *vec_room(vec *v, size_t el, size_t extra)
{
    if (v->cap - v->n < extra) {
        size_t cap = v->cap ? v->cap : 16;
        while (cap - v->n < extra) {
            if (cap > SIZE_MAX / 2 / el) return NULL;
            cap *= 2;
        }
        void *p = realloc(v->p, cap * el);
        if (!p) return NULL;
        v->p = p;
        v->cap = cap;
    }
    return (char *)v->p + v->n * el;
}

typedef struct { const unsigned char *p; size_t len; } str_ref;

/* Everything a decode needs while it runs. */
typedef struct {
    const unsigned char *body;  /* for byte offsets in errors */
    vec sample_type, sample, location_ids, values, mapping, location, lines, function, strings, labels;
    size_t string_bytes;
    char *err;                  /* left empty when an allocation failed */
    size_t errlen;
} wire;

/* Where in the profile a message is, for errors: "profile", "sample 3",
 * "location 7, line 2" (indices in the order of the body, from 0). */
typedef struct { const char *msg; size_t i; const char *sub; size_t j; } where;

enum { WT_VARINT = 0, WT_64BIT = 1, WT_LEN = 2, WT_32BIT = 5 };

typedef struct {
    uint32_t tag;
    int wt;
    uint64_t v;                 /* WT_VARINT: the value */
    const unsigned char *data;  /* WT_LEN: the payload */
    size_t len;
    const unsigned char *at;    /* where the field starts */
} field;

/* Writes "<where> at byte N: <why>" to err; answers -1. */
static int fail(wire *w, const where *at, const unsigned char *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(wire *w, const where *at, const unsigned char *pos, const char *fmt, ...)
{
    char why[256], ctx[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (!at->msg) snprintf(ctx, sizeof ctx, "profile");
    else if (!at->sub) snprintf(ctx, sizeof ctx, "%s %zu", at->msg, at->i);
    else snprintf(ctx, sizeof ctx, "%s %zu, %s %zu", at->msg, at->i, at->sub, at->j);
    snprintf(w->err, w->errlen, "%s at byte %zu: %s", ctx, (size_t)(pos - w->body), why);
    return -1;
}

/* A varint of at most 10 bytes ending before end (common/varint.h, bits
 * above 64 dropped as protobuf does): its length, 0 if none. */
static inline size_t varint(const unsigned char *p, const unsigned char *end, uint64_t *v)
{
    const unsigned char *q = p;
    return varint_get(&q, end, v) < 0 ? 0 : (size_t)(q - p);
}

/* next_field's general case: any key, value and length, and the errors. */
static int next_field_any(wire *w, const where *at, const unsigned char **pp, const unsigned char *end, field *f)
{
    const unsigned char *p = *pp;
    size_t rem = (size_t)(end - p), used = 0;
    f->at = p;
    if ((p[0] & 0xf8) == 0) return fail(w, at, p, "field number 0 (byte %#x)", p[0]);
    f->wt = p[0] & 7;
    f->tag = (uint32_t)(p[0] & 0x7f) >> 3;
    if (!(p[0] & 0x80)) {
        used = 1;
    } else {
        unsigned shift = 4;
        size_t max = rem > 5 ? 5 : rem;
        for (size_t i = 1; i < max; i++) {
            if (p[i] & 0x80) {
                f->tag |= (uint32_t)(p[i] & 0x7f) << shift;
                shift += 7;
            } else {
                f->tag |= (uint32_t)p[i] << shift;
                used = i + 1;
                break;
            }
        }
        if (!used) return fail(w, at, p, "a field key longer than 5 bytes, or cut (byte %#x)", p[0]);
    }
    p += used;
    rem -= used;
    switch (f->wt) {
    case WT_VARINT:
        if (!(used = varint(p, end, &f->v)))
            return fail(w, at, p, "field %" PRIu32 ": a varint longer than 10 bytes, or cut", f->tag);
        break;
    case WT_64BIT:
        if (rem < 8) return fail(w, at, p, "field %" PRIu32 ": cut inside its 8 bytes", f->tag);
        used = 8;
        break;
    case WT_32BIT:
        if (rem < 4) return fail(w, at, p, "field %" PRIu32 ": cut inside its 4 bytes", f->tag);
        used = 4;
        break;
    case WT_LEN: {
        size_t max = rem < 5 ? rem : 5, val = 0, i;
        for (i = 0; i < max; i++) {
            val |= (size_t)(p[i] & 0x7f) << (7 * i);
            if (!(p[i] & 0x80)) break;
        }
        if (i == max) return fail(w, at, p, "field %" PRIu32 ": a length longer than 5 bytes, or cut", f->tag);
        if (val > INT_MAX || i + 1 + val > rem)
            return fail(w, at, p, "field %" PRIu32 ": its length runs past the end of its message", f->tag);
        f->data = p + i + 1;
        f->len = val;
        used = i + 1 + val;
        break;
    }
    default:
        return fail(w, at, p, "field %" PRIu32 ": unsupported wire type %d (a group, or not protobuf)", f->tag, f->wt);
    }
    *pp = p + used;
    return 0;
}

/* Reads the field at *p (before end) and moves *p past it.  Most fields
 * of a profile have a one-byte key and a varint, or a length of one or two
 * bytes: those are read here, inline; the rest (and every error) by
 * next_field_any, with the same outcome (the call per field was a fifth of
 * the decode, bench_pprof_ingest). */
static inline int next_field(wire *w, const where *at, const unsigned char **pp, const unsigned char *end, field *f)
{
    const unsigned char *p = *pp;
    if (p < end && p[0] < 0x80 && (p[0] & 0xf8)) {
        const unsigned char *q = p + 1;
        int wt = p[0] & 7;
        if (wt == WT_VARINT && varint_get(&q, end, &f->v) == 0) {
            f->at = p;
            f->wt = wt;
            f->tag = (uint32_t)p[0] >> 3;
            *pp = q;
            return 0;
        }
        uint64_t len;
        if (wt == WT_LEN && varint_get(&q, end, &len) == 0 && q - p <= 3 &&
            len <= (uint64_t)(end - q)) {
            f->at = p;
            f->wt = wt;
            f->tag = (uint32_t)p[0] >> 3;
            f->data = q;
            f->len = (size_t)len;
            *pp = q + len;
            return 0;
        }
    }
    return next_field_any(w, at, pp, end, f);
}

static int want(wire *w, const where *at, const field *f, int wt, const char *name)
{
    if (f->wt == wt) return 0;
    return fail(w, at, f->at, "field %s (%" PRIu32 ") is not %s", name, f->tag,
                wt == WT_VARINT ? "a varint" : "length-delimited");
}

/* A repeated integer field: one varint, or packed varints; appended to out
 * (NULL: only checked). */
static int repeated_int(wire *w, const where *at, const field *f, const char *name, vec *out)
{
    if (f->wt == WT_VARINT) {
        uint64_t *slot = out ? vec_room(out, sizeof *slot, 1) : NULL;
        if (out && !slot) return -1;
        if (slot) {
            *slot = f->v;
            out->n++;
        }
        return 0;
    }
    if (f->wt != WT_LEN) return fail(w, at, f->at, "field %s (%" PRIu32 ") is neither a varint nor packed varints", name, f->tag);
    if (!f->len) return 0;
    const unsigned char *p = f->data, *end = f->data + f->len;
    uint64_t *slot = out ? vec_room(out, sizeof *slot, f->len) : NULL, v;
    if (out && !slot) return -1;
    size_t n = 0, used;
    while (p < end) {
        if (!(used = varint(p, end, &v)))
            return fail(w, at, p, "packed field %s (%" PRIu32 "): a varint longer than 10 bytes, or cut", name, f->tag);
        if (slot) slot[n] = v;
        n++;
        p += used;
    }
    if (out) out->n += n;
    return 0;
}

/* A message of fields that are all singular integers (1..n_int) or bools
 * (the fields after them, of any wire type, as protobuf-c takes a bool):
 * checked; the integers land in v[0..n_int) (v NULL: only checked), the
 * last of each winning. */
static int scalars(wire *w, const where *at, const unsigned char *p, const unsigned char *end, int64_t *v,
                   uint32_t n_int, const char *const *names)
{
    field f;
    while (p < end) {
        if (next_field(w, at, &p, end, &f)) return -1;
        if (f.tag >= 1 && f.tag <= n_int) {
            if (want(w, at, &f, WT_VARINT, names[f.tag - 1])) return -1;
            if (v) v[f.tag - 1] = (int64_t)f.v;
        }
    }
    return 0;
}

static const char *const value_type_names[] = { "type", "unit" };
static const char *const label_names[] = { "key", "str", "num", "num_unit" };
static const char *const mapping_names[] = { "id", "memory_start", "memory_limit", "file_offset", "filename", "build_id" };
static const char *const line_names[] = { "function_id", "line", "column" };
static const char *const function_names[] = { "id", "name", "system_name", "filename", "start_line" };

static int value_type(wire *w, const where *at, const field *f, pprof_value_type *out)
{
    int64_t v[2] = { 0, 0 };
    if (scalars(w, at, f->data, f->data + f->len, v, 2, value_type_names)) return -1;
    out->type = v[0];
    out->unit = v[1];
    return 0;
}

static int sample(wire *w, const where *at, const field *m)
{
    pprof_sample *s = vec_room(&w->sample, sizeof *s, 1);
    if (!s) return -1;
    *s = (pprof_sample){ .loc0 = w->location_ids.n, .val0 = w->values.n, .lab0 = w->labels.n };
    const unsigned char *p = m->data, *end = m->data + m->len;
    size_t labels = 0;
    field f;
    while (p < end) {
        if (next_field(w, at, &p, end, &f)) return -1;
        if (f.tag == 1) {
            if (repeated_int(w, at, &f, "location_id", &w->location_ids)) return -1;
        } else if (f.tag == 2) {
            if (repeated_int(w, at, &f, "value", &w->values)) return -1;
        } else if (f.tag == 3) {
            where lat = { at->msg, at->i, "label", labels++ };
            int64_t v[4] = { 0, 0, 0, 0 };
            pprof_label *l = vec_room(&w->labels, sizeof *l, 1);
            if (!l || want(w, at, &f, WT_LEN, "label") ||
                scalars(w, &lat, f.data, f.data + f.len, v, 4, label_names)) return -1;
            *l = (pprof_label){ v[0], v[1], v[2] };
            w->labels.n++;
        }
    }
    s->n_loc = w->location_ids.n - s->loc0;
    s->n_val = w->values.n - s->val0;
    s->n_lab = w->labels.n - s->lab0;
    w->sample.n++;
    return 0;
}

static int mapping(wire *w, const where *at, const field *m)
{
    pprof_mapping *mp = vec_room(&w->mapping, sizeof *mp, 1);
    if (!mp) return -1;
    int64_t v[6] = { 0 };
    if (scalars(w, at, m->data, m->data + m->len, v, 6, mapping_names)) return -1;
    *mp = (pprof_mapping){ .id = (uint64_t)v[0], .memory_start = (uint64_t)v[1], .file_offset = (uint64_t)v[3],
                           .filename = v[4], .build_id = v[5] };
    w->mapping.n++;
    return 0;
}

static int location(wire *w, const where *at, const field *m)
{
    pprof_location *l = vec_room(&w->location, sizeof *l, 1);
    if (!l) return -1;
    pprof_location loc = { .line0 = w->lines.n };
    const unsigned char *p = m->data, *end = m->data + m->len;
    field f;
    while (p < end) {
        if (next_field(w, at, &p, end, &f)) return -1;
        if (f.tag >= 1 && f.tag <= 3) {
            static const char *const names[] = { "id", "mapping_id", "address" };
            if (want(w, at, &f, WT_VARINT, names[f.tag - 1])) return -1;
            if (f.tag == 1) loc.id = f.v;
            else if (f.tag == 2) loc.mapping_id = f.v;
            else loc.address = f.v;
        } else if (f.tag == 4) {
            where lat = { at->msg, at->i, "line", w->lines.n - loc.line0 };
            int64_t v[3] = { 0, 0, 0 };
            pprof_line *ln = vec_room(&w->lines, sizeof *ln, 1);
            if (!ln) return -1;
            if (want(w, at, &f, WT_LEN, "line") || scalars(w, &lat, f.data, f.data + f.len, v, 3, line_names))
                return -1;
            *ln = (pprof_line){ .function_id = v[0], .line = v[1] };
            w->lines.n++;
        }
        /* 5, is_folded: a bool, any wire type */
    }
    loc.n_line = w->lines.n - loc.line0;
    *l = loc;
    w->location.n++;
    return 0;
}

static int function(wire *w, const where *at, const field *m)
{
    pprof_function *fn = vec_room(&w->function, sizeof *fn, 1);
    if (!fn) return -1;
    int64_t v[5] = { 0 };
    if (scalars(w, at, m->data, m->data + m->len, v, 5, function_names)) return -1;
    *fn = (pprof_function){ .id = (uint64_t)v[0], .name = v[1], .filename = v[3] };
    w->function.n++;
    return 0;
}

static int profile(wire *w, pprof_flat *out, const unsigned char *p, const unsigned char *end)
{
    static const where top = { NULL, 0, NULL, 0 };
    field f;
    while (p < end) {
        if (next_field(w, &top, &p, end, &f)) return -1;
        switch (f.tag) {
        case 1: {
            where at = { "sample_type", w->sample_type.n, NULL, 0 };
            pprof_value_type *vt = vec_room(&w->sample_type, sizeof *vt, 1);
            if (!vt || want(w, &top, &f, WT_LEN, "sample_type") || value_type(w, &at, &f, vt)) return -1;
            w->sample_type.n++;
            break;
        }
        case 2: {
            where at = { "sample", w->sample.n, NULL, 0 };
            if (want(w, &top, &f, WT_LEN, "sample") || sample(w, &at, &f)) return -1;
            break;
        }
        case 3: {
            where at = { "mapping", w->mapping.n, NULL, 0 };
            if (want(w, &top, &f, WT_LEN, "mapping") || mapping(w, &at, &f)) return -1;
            break;
        }
        case 4: {
            where at = { "location", w->location.n, NULL, 0 };
            if (want(w, &top, &f, WT_LEN, "location") || location(w, &at, &f)) return -1;
            break;
        }
        case 5: {
            where at = { "function", w->function.n, NULL, 0 };
            if (want(w, &top, &f, WT_LEN, "function") || function(w, &at, &f)) return -1;
            break;
        }
        case 6: {
            str_ref *s = vec_room(&w->strings, sizeof *s, 1);
            if (!s || want(w, &top, &f, WT_LEN, "string_table")) return -1;
            const unsigned char *nul = memchr(f.data, 0, f.len);
            *s = (str_ref){ f.data, nul ? (size_t)(nul - f.data) : f.len };
            w->string_bytes += s->len + 1;
            w->strings.n++;
            break;
        }
        case 7: case 8: case 14:
            if (want(w, &top, &f, WT_VARINT, f.tag == 7 ? "drop_frames" : f.tag == 8 ? "keep_frames"
                                                                                  : "default_sample_type"))
                return -1;
            break;
        case 9: case 10: case 12:
            if (want(w, &top, &f, WT_VARINT, f.tag == 9 ? "time_nanos" : f.tag == 10 ? "duration_nanos" : "period"))
                return -1;
            *(f.tag == 9 ? &out->time_nanos : f.tag == 10 ? &out->duration_nanos : &out->period) = (int64_t)f.v;
            break;
        case 11: {
            where at = { "period_type", 0, NULL, 0 };
            pprof_value_type vt;
            if (want(w, &top, &f, WT_LEN, "period_type") || value_type(w, &at, &f, &vt)) return -1;
            out->period_type = vt;
            out->has_period_type = 1;
            break;
        }
        case 13:
            if (repeated_int(w, &top, &f, "comment", NULL)) return -1;
            break;
        default:
            break; /* unknown: skipped */
        }
    }
    return 0;
}

ingest_status pprof_wire_decode(const unsigned char *buf, size_t len, pprof_flat *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    wire w = { .body = buf, .err = err, .errlen = errlen };
    if (errlen) err[0] = '\0';
    int rc = profile(&w, f, buf, buf + len);
    /* arrays are never NULL, even empty (the decoder adds offsets to them) */
    vec *all[] = { &w.sample_type, &w.sample, &w.location_ids, &w.values, &w.mapping, &w.location, &w.lines, &w.function,
                   &w.labels };
    static const size_t size[] = { sizeof(pprof_value_type), sizeof(pprof_sample), sizeof(uint64_t), sizeof(int64_t),
                                   sizeof(pprof_mapping), sizeof(pprof_location), sizeof(pprof_line), sizeof(pprof_function),
                                   sizeof(pprof_label) };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!all[i]->p && !(all[i]->p = calloc(1, size[i]))) {
            rc = -1;
            if (errlen) err[0] = '\0'; /* out of memory */
        }
    f->sample_type = w.sample_type.p;
    f->n_sample_type = w.sample_type.n;
    f->sample = w.sample.p;
    f->n_sample = w.sample.n;
    f->location_ids = w.location_ids.p;
    f->n_location_ids = w.location_ids.n;
    f->values = w.values.p;
    f->mapping = w.mapping.p;
    f->n_mapping = w.mapping.n;
    f->location = w.location.p;
    f->n_location = w.location.n;
    f->lines = w.lines.p;
    f->n_lines = w.lines.n;
    f->function = w.function.p;
    f->n_function = w.function.n;
    f->labels = w.labels.p;
    f->n_labels = w.labels.n;
    if (rc) {
        free(w.strings.p);
        /* an error message was written, unless an allocation failed */
        return errlen && err[0] ? INGEST_EINVAL : INGEST_ENOMEM;
    }
    size_t n = w.strings.n;
    const str_ref *refs = w.strings.p;
    f->string_table = malloc((n ? n : 1) * sizeof *f->string_table);
    f->strings = malloc(w.string_bytes ? w.string_bytes : 1);
    if (!f->string_table || !f->strings) {
        free(w.strings.p);
        return INGEST_ENOMEM;
    }
    char *at = f->strings;
    for (size_t i = 0; i < n; i++) {
        memcpy(at, refs[i].p, refs[i].len);
        at[refs[i].len] = '\0';
        f->string_table[i] = at;
        at += refs[i].len + 1;
    }
    f->n_string_table = n;
    free(w.strings.p);
    return INGEST_OK;
}

void pprof_flat_free(pprof_flat *f)
{
    free(f->sample_type);
    free(f->sample);
    free(f->location_ids);
    free(f->values);
    free(f->mapping);
    free(f->location);
    free(f->lines);
    free(f->function);
    free(f->labels);
    free(f->string_table);
    free(f->strings);
    memset(f, 0, sizeof *f);
}
