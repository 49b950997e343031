/* pprof.c — pprof's profile.proto (gzip'd or raw) into ingest_profiles.
 *
 * A pprof profile holds several sample types (Go's CPU profile: samples/
 * count and cpu/nanoseconds); each becomes its own ingest_profile whose
 * `type` label is the sample type's name and whose unit is the type's unit,
 * the other labels (service, ...) copied from the base profile the caller
 * filled from the request.  Everything is decoded and validated before the
 * caller gets anything: on any error no profile is returned.
 *
 * Frames.  A Location with several Lines is an inlined call chain; pprof
 * lists line[0] as the innermost, so its frames are emitted last-line first
 * (caller first).  Each frame keeps where it is when the profile says:
 * Function.filename, Line.line and the Location's Mapping (file, build id),
 * in the located form of storage/frame.h.  A function's name comes from Function.name; without one,
 * the location is named "<mapping file basename>+0x<offset>" when the
 * mapping has a file name, else "0x<address>".  ';' becomes ':' and
 * newlines (and CR) become ' ' so a frame is a valid folded frame; names
 * longer than INGEST_MAX_FRAME are cut at a UTF-8 boundary.  A sample
 * without locations gets the single frame "[unknown]", so totals match
 * `go tool pprof`'s.
 *
 * Stacks.  Sample.location_id[0] is the leaf; stacks are written root
 * first into one arena, sized exactly in a first pass so it never moves
 * once stacks point into it.  Every profile's stacks point into the first
 * profile's arena: free them together with ingest_pprof_free.
 *
 * Deep stacks are cut before any text is built, so memory follows what is
 * kept, not the samples times their depth (issue 12: a 184-byte gzip'd
 * profile, one location of 20,000 lines naming a 4,096-byte function in 40
 * samples, took 3.4 GB).  A first pass walks each sample leaf first,
 * counting frames (a location's lines, or 1) without rendering them, up to
 * the INGEST_MAX_DEPTH leaf-most, and notes for every location how many of
 * its leaf-most frames some kept stack uses.  Only those are rendered (once
 * per location), so a location of 20,000 lines renders at most 1,024 and a
 * location no kept stack reaches renders nothing; a sample whose values are
 * all zero takes no room.  Lines that are never rendered still have their
 * function checked, not their name's UTF-8.  Cut stacks still repeat: 40
 * samples of that location keep 40 stacks of 1,024 frames of 4 KB, 168 MB
 * from 184 bytes.  So the stacks' text, measured before anything is
 * allocated for it, may not exceed max_out (the server's --max-body), the
 * limit the same stacks sent as folded text would meet: INGEST_ETOOBIG
 * beyond.
 *
 * Sample types must have distinct names: each becomes the `type` label of
 * its profile, and two of one name would be stored as one series mixing
 * both (docs/ARCHITECTURE.md, "Decisions where the issues were silent").
 * At most MAX_SAMPLE_TYPES of them: each costs a profile before anything
 * else is read.
 *
 * Values are taken as they are (no rate): a zero value leaves the stack out
 * of that type's profile, a negative one or one above INGEST_MAX_VALUE is
 * an error.
 *
 * Samples.  Each type's profile says how many samples are behind its
 * values (count_type, set_samples): a count type counts its own; a value
 * type takes its samples from the profile's samples/count type, else from
 * the count type listed just before it (Go lists alloc_objects before
 * alloc_space, contentions before delay), else divides its total by the
 * period when the period is of its type.  Otherwise the number is unknown
 * and answers carry no intervals.  Go scales heap counts up from the
 * sampled allocations, so their "samples" are an estimate on the high
 * side: the intervals of heap profiles are narrower than they should be.
 * Gauges (inuse_*, goroutine) are left to ingest_profile_finish's default
 * unless the base profile says.  Sample labels (pprof's per-sample key/value pairs) are not
 * stored: series are identified by the request's labels alone. */
#include "ingest_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../storage/frame.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;

typedef struct { uint64_t id; size_t idx; } id_slot;

static int slot_cmp(const void *a, const void *b)
{
    uint64_t x = ((const id_slot *)a)->id, y = ((const id_slot *)b)->id;
    return (x > y) - (x < y);
}

/* An id -> index table: sorted, searched by bsearch. */
typedef struct { id_slot *s; size_t n; } id_index;

static int index_build(id_index *ix, size_t n, uint64_t (*id_of)(const pb_profile *, size_t), const pb_profile *pb)
{
    ix->n = n;
    ix->s = malloc((n ? n : 1) * sizeof *ix->s);
    if (!ix->s) return -1;
    for (size_t i = 0; i < n; i++) ix->s[i] = (id_slot){ id_of(pb, i), i };
    qsort(ix->s, n, sizeof *ix->s, slot_cmp);
    return 0;
}

/* Answers the index of id, or -1. */
static long index_find(const id_index *ix, uint64_t id)
{
    id_slot key = { id, 0 };
    const id_slot *s = bsearch(&key, ix->s, ix->n, sizeof *ix->s, slot_cmp);
    return s ? (long)s->idx : -1;
}

static uint64_t loc_id(const pb_profile *pb, size_t i) { return pb->location[i]->id; }
static uint64_t fn_id(const pb_profile *pb, size_t i) { return pb->function[i]->id; }
static uint64_t map_id(const pb_profile *pb, size_t i) { return pb->mapping[i]->id; }

/* Everything decoding needs while it runs. */
typedef struct {
    const pb_profile *pb;
    id_index locs, fns, maps;
    char *loc_text;     /* per location: its needed frames, caller first, joined by ';' */
    size_t *loc_off;    /* n_location + 1 offsets into loc_text */
    uint32_t *loc_need; /* per location: how many of its leaf-most frames a kept stack uses */
    size_t max_text;    /* the most bytes of stack text (max_out): INGEST_ETOOBIG beyond */
    char *err;
    size_t errlen;
} decoder;

#define MAX_SAMPLE_TYPES 256

static const char *str_at(const decoder *d, int64_t i)
{
    return i >= 0 && (uint64_t)i < d->pb->n_string_table ? d->pb->string_table[i] : NULL;
}

/* Appends a sanitized frame or field of at most max bytes; buf NULL only
 * measures.  Answers its length. */
static size_t field_put(char *buf, const char *name, size_t n, size_t max)
{
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)name[n] & 0xC0) == 0x80) n--;
    }
    if (buf) {
        for (size_t i = 0; i < n; i++) {
            char c = name[i];
            buf[i] = c == ';' ? ':' : (c == '\n' || c == '\r' || c == FRAME_SEP) ? ' ' : c;
        }
    }
    return n;
}

static size_t frame_put(char *buf, const char *name, size_t n) { return field_put(buf, name, n, INGEST_MAX_FRAME); }

#define MAX_FILE 1024    /* bytes of a file or mapping name kept with a frame */
#define MAX_BUILD_ID 128

/* A string of the table for a location field: NULL when absent, empty or
 * not UTF-8 (the field is then left empty rather than the profile refused). */
static const char *field_at(const decoder *d, int64_t i)
{
    const char *s = str_at(d, i);
    return s && *s && ingest_utf8_valid(s, strlen(s)) ? s : NULL;
}

/* Appends (buf non-NULL) or measures the location part of a frame (see
 * storage/frame.h): US file US line US mapping US build_id, or nothing when
 * the profile knows neither file nor line.  The mapping alone is not kept:
 * it would repeat the binary's path in every distinct frame (+0.2 bytes a
 * stored pair in bench_storage's pprof case) for nothing a line view can
 * use; a frame without a name is already named after it. */
static size_t location_put(const decoder *d, const Perftools__Profiles__Location *loc, long fi, int64_t line, char *buf)
{
    const char *file = fi >= 0 ? field_at(d, d->pb->function[fi]->filename) : NULL, *map = NULL, *bid = NULL;
    if (!file && line <= 0) return 0;
    long m = loc->mapping_id ? index_find(&d->maps, loc->mapping_id) : -1;
    if (m >= 0) {
        map = field_at(d, d->pb->mapping[m]->filename);
        bid = field_at(d, d->pb->mapping[m]->build_id);
    }
    char num[24] = "";
    if (line > 0) snprintf(num, sizeof num, "%" PRId64, line);
    const char *f[4] = { file, num, map, bid };
    const size_t max[4] = { MAX_FILE, sizeof num, MAX_FILE, MAX_BUILD_ID };
    size_t pos = 0;
    for (int k = 0; k < 4; k++) {
        if (buf) buf[pos] = FRAME_SEP;
        pos++;
        if (f[k]) pos += field_put(buf ? buf + pos : NULL, f[k], strlen(f[k]), max[k]);
    }
    return pos;
}

/* The name of a location without a function name. */
static void fallback_name(const decoder *d, const Perftools__Profiles__Location *loc, char *out, size_t cap)
{
    long m = loc->mapping_id ? index_find(&d->maps, loc->mapping_id) : -1;
    const char *file = m >= 0 ? str_at(d, d->pb->mapping[m]->filename) : NULL;
    if (file && *file) {
        const Perftools__Profiles__Mapping *mp = d->pb->mapping[m];
        const char *base = strrchr(file, '/');
        uint64_t off = loc->address - mp->memory_start + mp->file_offset;
        snprintf(out, cap, "%s+0x%" PRIx64, base && base[1] ? base + 1 : file, off);
    } else {
        snprintf(out, cap, "0x%" PRIx64, loc->address);
    }
}

/* The frames of a location: its lines, or 1 when it has none. */
static uint64_t loc_frames(const decoder *d, size_t li)
{
    size_t n = d->pb->location[li]->n_line;
    return n ? n : 1;
}

/* Checks that every line of every location names a function of the
 * profile whose name is in the string table. */
static ingest_status check_locations(decoder *d)
{
    for (size_t li = 0; li < d->pb->n_location; li++) {
        const Perftools__Profiles__Location *loc = d->pb->location[li];
        for (size_t k = 0; k < loc->n_line; k++) {
            const Perftools__Profiles__Line *ln = loc->line[k];
            if (!ln->function_id) continue;
            long fi = index_find(&d->fns, (uint64_t)ln->function_id);
            if (fi < 0) {
                snprintf(d->err, d->errlen, "location %" PRIu64 ": line %zu names function %" PRId64 ", which is not in the profile",
                         loc->id, k, ln->function_id);
                return INGEST_EINVAL;
            }
            if (!str_at(d, d->pb->function[fi]->name)) {
                snprintf(d->err, d->errlen, "function %" PRIu64 ": name index %" PRId64 " is outside the string table (%zu strings)",
                         d->pb->function[fi]->id, d->pb->function[fi]->name, d->pb->n_string_table);
                return INGEST_EINVAL;
            }
        }
    }
    return INGEST_OK;
}

/* Writes (buf non-NULL) or measures the `need` leaf-most frames of a
 * location (need <= its frames), caller first. */
static ingest_status location_frames(decoder *d, size_t li, uint32_t need, char *buf, size_t *len)
{
    const Perftools__Profiles__Location *loc = d->pb->location[li];
    size_t pos = 0;
    uint32_t n = 0;
    char fb[300];
    for (size_t k = need < loc->n_line ? need : loc->n_line; k-- > 0;) {
        const Perftools__Profiles__Line *ln = loc->line[k];
        long fi = ln->function_id ? index_find(&d->fns, (uint64_t)ln->function_id) : -1; /* found: check_locations */
        const char *name = fi >= 0 ? str_at(d, d->pb->function[fi]->name) : NULL;
        if (!name || !*name) {
            fallback_name(d, loc, fb, sizeof fb);
            name = fb;
        }
        size_t nl = strlen(name);
        if (!ingest_utf8_valid(name, nl)) {
            snprintf(d->err, d->errlen, "location %" PRIu64 ": function name is not valid UTF-8", loc->id);
            return INGEST_EINVAL;
        }
        if (n) {
            if (buf) buf[pos] = ';';
            pos++;
        }
        pos += frame_put(buf ? buf + pos : NULL, name, nl);
        pos += location_put(d, loc, fi, ln->line, buf ? buf + pos : NULL);
        n++;
    }
    if (!n && need) {
        fallback_name(d, loc, fb, sizeof fb);
        pos = frame_put(buf, fb, strlen(fb));
    }
    *len = pos;
    return INGEST_OK;
}

static ingest_status too_much_text(decoder *d)
{
    snprintf(d->err, d->errlen, "pprof body: its stacks as text would take more than %zu bytes, the most a body "
             "may have (--max-body)", d->max_text);
    return INGEST_ETOOBIG;
}

/* Renders, once, the frames of each location that kept stacks use
 * (loc_need, set by sample_check). */
static ingest_status render_locations(decoder *d)
{
    size_t n = d->pb->n_location, total = 0, len;
    d->loc_off = malloc((n + 1) * sizeof *d->loc_off);
    if (!d->loc_off) return INGEST_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        ingest_status s = location_frames(d, i, d->loc_need[i], NULL, &len);
        if (s) return s;
        d->loc_off[i] = total;
        total += len;
        if (total > d->max_text) return too_much_text(d); /* the stacks would be longer still */
    }
    d->loc_off[n] = total;
    d->loc_text = malloc(total ? total : 1);
    if (!d->loc_text) return INGEST_ENOMEM;
    for (size_t i = 0; i < n; i++) location_frames(d, i, d->loc_need[i], d->loc_text + d->loc_off[i], &len);
    return INGEST_OK;
}

static const char unknown_frame[] = "[unknown]";

/* Whether a sample has a value in some type (else it is in no profile). */
static int sample_used(const Perftools__Profiles__Sample *s)
{
    for (size_t v = 0; v < s->n_value; v++)
        if (s->value[v]) return 1;
    return 0;
}

/* The part of a sample that its stack keeps, walking leaf first up to
 * INGEST_MAX_DEPTH frames without rendering any: its *m leaf-most
 * locations, the last (root-most) of which gives its *take leaf-most
 * frames.  Answers 1 when frames were cut.  Locations were checked. */
static int sample_keep(const decoder *d, const Perftools__Profiles__Sample *s, size_t *m, uint32_t *take)
{
    uint64_t left = INGEST_MAX_DEPTH;
    size_t k = 0;
    *take = 0;
    for (; k < s->n_location_id && left; k++) {
        uint64_t n = loc_frames(d, (size_t)index_find(&d->locs, s->location_id[k]));
        *take = (uint32_t)(n < left ? n : left);
        left -= *take;
        if (n > *take) {
            *m = k + 1;
            return 1;
        }
    }
    *m = k;
    return k < s->n_location_id;
}

/* Where the `take` leaf-most frames of location li start in its text. */
static size_t loc_suffix(const decoder *d, size_t li, uint32_t take)
{
    const char *t = d->loc_text + d->loc_off[li];
    size_t i = d->loc_off[li + 1] - d->loc_off[li];
    if (take >= d->loc_need[li]) return 0;
    for (; i > 0; i--)
        if (t[i - 1] == ';' && --take == 0) break;
    return i;
}

/* Checks a sample's values and locations, and notes in loc_need the
 * frames of each location that its kept stack uses. */
static ingest_status sample_check(decoder *d, size_t si)
{
    const Perftools__Profiles__Sample *s = d->pb->sample[si];
    if (s->n_value != d->pb->n_sample_type) {
        snprintf(d->err, d->errlen, "sample %zu has %zu values for %zu sample types", si, s->n_value,
                 d->pb->n_sample_type);
        return INGEST_EINVAL;
    }
    for (size_t v = 0; v < s->n_value; v++) {
        if (s->value[v] < 0 || (uint64_t)s->value[v] > INGEST_MAX_VALUE) {
            snprintf(d->err, d->errlen, "sample %zu: value %" PRId64 " is negative or above %" PRIu64, si, s->value[v],
                     (uint64_t)INGEST_MAX_VALUE);
            return INGEST_EINVAL;
        }
    }
    for (size_t k = 0; k < s->n_location_id; k++) {
        if (index_find(&d->locs, s->location_id[k]) < 0) {
            snprintf(d->err, d->errlen, "sample %zu: location %" PRIu64 " is not in the profile", si, s->location_id[k]);
            return INGEST_EINVAL;
        }
    }
    if (!sample_used(s)) return INGEST_OK;
    size_t m;
    uint32_t take;
    sample_keep(d, s, &m, &take);
    for (size_t k = 0; k < m; k++) {
        size_t li = (size_t)index_find(&d->locs, s->location_id[k]);
        uint32_t need = k + 1 < m ? (uint32_t)loc_frames(d, li) : take;
        if (need > d->loc_need[li]) d->loc_need[li] = need;
    }
    return INGEST_OK;
}

/* Writes (buf non-NULL) or measures a used sample's kept stack, root
 * first; *truncated says whether frames were cut. */
static size_t sample_write(const decoder *d, size_t si, char *buf, int *truncated)
{
    const Perftools__Profiles__Sample *s = d->pb->sample[si];
    size_t m, pos = 0;
    uint32_t take;
    *truncated = sample_keep(d, s, &m, &take);
    if (!m) {
        if (buf) memcpy(buf, unknown_frame, sizeof unknown_frame - 1);
        return sizeof unknown_frame - 1;
    }
    for (size_t k = m; k-- > 0;) {
        size_t li = (size_t)index_find(&d->locs, s->location_id[k]);
        size_t from = k + 1 == m ? loc_suffix(d, li, take) : 0, n = d->loc_off[li + 1] - d->loc_off[li] - from;
        if (pos) {
            if (buf) buf[pos] = ';';
            pos++;
        }
        if (buf) memcpy(buf + pos, d->loc_text + d->loc_off[li] + from, n);
        pos += n;
    }
    return pos;
}

/* Labels of the base, with type = the sample type's name. */
static ingest_status profile_labels(decoder *d, const ingest_profile *base, ingest_profile *p, const char *type)
{
    ingest_status s;
    for (int i = 0; i < base->n_labels; i++) {
        if (strcmp(base->labels[i].name, "type") == 0) continue;
        if ((s = ingest_label_add(p, base->labels[i].name, base->labels[i].value, d->err, d->errlen))) return s;
    }
    return ingest_label_add(p, "type", type, d->err, d->errlen);
}

/* Sets up profile t (labels, unit, window) for sample type t. */
static ingest_status profile_setup(decoder *d, const ingest_profile *base, int window_given, size_t t,
                                   ingest_profile *p)
{
    const Perftools__Profiles__ValueType *vt = d->pb->sample_type[t];
    const char *type = str_at(d, vt->type), *unit = str_at(d, vt->unit);
    if (!type || !unit) {
        snprintf(d->err, d->errlen, "sample type %zu: string index outside the string table (%zu strings)", t,
                 d->pb->n_string_table);
        return INGEST_EINVAL;
    }
    if (!*type) {
        snprintf(d->err, d->errlen, "sample type %zu has an empty name", t);
        return INGEST_EINVAL;
    }
    size_t ul = strlen(unit);
    if (ul >= INGEST_MAX_UNIT ||
        strspn(unit, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != ul) {
        snprintf(d->err, d->errlen, "sample type '%s': unit must be 1 to %d letters, digits or '_'", type,
                 INGEST_MAX_UNIT - 1);
        return INGEST_EINVAL;
    }
    ingest_status s = profile_labels(d, base, p, type);
    if (s) {
        char why[512];
        snprintf(why, sizeof why, "%s", d->err);
        snprintf(d->err, d->errlen, "sample type '%s': %s", type, why);
        return s;
    }
    snprintf(p->unit, sizeof p->unit, "%s", ul ? unit : "samples");
    p->rate = 0;
    p->from_ms = base->from_ms;
    p->until_ms = base->until_ms;
    if (!window_given && d->pb->time_nanos > 0) {
        int64_t dur = d->pb->duration_nanos > 0 ? d->pb->duration_nanos / 1000000 : 10000;
        p->from_ms = d->pb->time_nanos / 1000000;
        p->until_ms = p->from_ms + (dur > 0 ? dur : 1);
    }
    return INGEST_OK;
}

static int type_is(const decoder *d, size_t t, const char *type, const char *unit)
{
    const Perftools__Profiles__ValueType *vt = d->pb->sample_type[t];
    const char *ty = str_at(d, vt->type), *un = str_at(d, vt->unit);
    return ty && un && (!type || strcmp(ty, type) == 0) && strcmp(un, unit) == 0;
}

/* The sample type that counts the samples behind type t's values: t itself
 * when its unit is `count`; else a type samples/count (Go's CPU profile);
 * else the nearest count type before t (Go's alloc_objects before
 * alloc_space, contentions before delay); -1 when there is none. */
static long count_type(const decoder *d, size_t t)
{
    if (type_is(d, t, NULL, "count")) return (long)t;
    for (size_t i = 0; i < d->pb->n_sample_type; i++)
        if (type_is(d, i, "samples", "count")) return (long)i;
    for (size_t i = t; i-- > 0;)
        if (type_is(d, i, NULL, "count")) return (long)i;
    return -1;
}

/* Sets p's samples (type t): the values of its count type in the samples
 * where t has a value; else its total divided by the period when the
 * period is of t's type and unit; else unknown. */
static void set_samples(const decoder *d, size_t t, ingest_profile *p)
{
    const pb_profile *pb = d->pb;
    long c = count_type(d, t);
    uint64_t n = 0;
    if (c >= 0) {
        for (size_t i = 0; i < pb->n_sample; i++)
            if (pb->sample[i]->value[t] > 0 && pb->sample[i]->value[c] > 0) n += (uint64_t)pb->sample[i]->value[c];
    } else if (pb->period > 0 && pb->period_type) {
        const char *pt = str_at(d, pb->period_type->type), *pu = str_at(d, pb->period_type->unit);
        if (pt && pu && type_is(d, t, pt, pu)) n = (p->total + (uint64_t)pb->period / 2) / (uint64_t)pb->period;
    }
    p->samples_how = n ? INGEST_SAMPLES_KNOWN : INGEST_SAMPLES_UNKNOWN;
    p->samples = n;
}

/* Builds every profile: stacks into out[0]'s arena. */
static ingest_status build(decoder *d, const ingest_profile *base, int window_given, ingest_profile *out)
{
    const pb_profile *pb = d->pb;
    size_t nt = pb->n_sample_type, total = 0;
    ingest_status s;
    for (size_t t = 0; t < nt; t++)
        if ((s = profile_setup(d, base, window_given, t, &out[t]))) return s;
    d->loc_need = calloc(pb->n_location ? pb->n_location : 1, sizeof *d->loc_need);
    if (!d->loc_need) return INGEST_ENOMEM;
    for (size_t i = 0; i < pb->n_sample; i++)
        if ((s = sample_check(d, i))) return s;
    if ((s = render_locations(d))) return s;
    int trunc;
    for (size_t i = 0; i < pb->n_sample; i++) {
        if (sample_used(pb->sample[i])) total += sample_write(d, i, NULL, &trunc);
        if (total > d->max_text) return too_much_text(d);
    }
    for (size_t t = 0; t < nt; t++) {
        size_t n = 0;
        for (size_t i = 0; i < pb->n_sample; i++) n += pb->sample[i]->value[t] != 0;
        out[t].stacks = malloc((n ? n : 1) * sizeof *out[t].stacks);
        if (!out[t].stacks) return INGEST_ENOMEM;
        out[t].cap_stacks = n ? n : 1;
    }
    char *arena = malloc(total ? total : 1);
    if (!arena) return INGEST_ENOMEM;
    out[0].arena = arena;
    out[0].arena_cap = total ? total : 1;
    size_t pos = 0;
    for (size_t i = 0; i < pb->n_sample; i++) {
        if (!sample_used(pb->sample[i])) continue;
        size_t len = sample_write(d, i, arena + pos, &trunc);
        for (size_t t = 0; t < nt; t++) {
            uint64_t v = (uint64_t)pb->sample[i]->value[t];
            if (!v) continue;
            ingest_profile *p = &out[t];
            if (p->total + v > INGEST_MAX_VALUE) {
                snprintf(d->err, d->errlen, "sample type %zu: the sum of values exceeds %" PRIu64, t,
                         (uint64_t)INGEST_MAX_VALUE);
                return INGEST_EINVAL;
            }
            p->stacks[p->n_stacks++] = (ingest_stack){ arena + pos, (uint32_t)len, v };
            p->total += v;
            p->truncated_stacks += (uint64_t)trunc;
        }
        pos += len;
    }
    out[0].arena_len = pos;
    for (size_t t = 0; t < nt; t++) {
        set_samples(d, t, &out[t]);
        out[t].aggregation = base->aggregation;
        if ((s = ingest_profile_finish(&out[t], d->err, d->errlen))) return s;
    }
    return INGEST_OK;
}

/* Checks the string indices of functions and mappings that decoding uses,
 * that sample types have distinct names, and every location's lines. */
static ingest_status check_tables(decoder *d)
{
    const pb_profile *pb = d->pb;
    for (size_t i = 0; i < pb->n_mapping; i++) {
        if (!str_at(d, pb->mapping[i]->filename)) {
            snprintf(d->err, d->errlen, "mapping %" PRIu64 ": file name index outside the string table", pb->mapping[i]->id);
            return INGEST_EINVAL;
        }
    }
    if (pb->n_string_table && pb->string_table[0][0]) {
        snprintf(d->err, d->errlen, "string_table[0] must be the empty string");
        return INGEST_EINVAL;
    }
    for (size_t t = 1; t < pb->n_sample_type; t++) {
        const char *name = str_at(d, pb->sample_type[t]->type);
        for (size_t u = 0; name && u < t; u++) {
            const char *other = str_at(d, pb->sample_type[u]->type);
            if (other && strcmp(name, other) == 0) {
                snprintf(d->err, d->errlen, "sample types %zu and %zu are both named '%.200s': each becomes the "
                         "profile's type label, so their names must differ", u, t, name);
                return INGEST_EINVAL;
            }
        }
    }
    return check_locations(d);
}

static ingest_status decode(const pb_profile *pb, size_t max_out, const ingest_profile *base, int window_given,
                            ingest_profile *out, char *err, size_t errlen)
{
    decoder d = { .pb = pb, .max_text = max_out, .err = err, .errlen = errlen };
    ingest_status s = INGEST_ENOMEM;
    if (index_build(&d.locs, pb->n_location, loc_id, pb) || index_build(&d.fns, pb->n_function, fn_id, pb) ||
        index_build(&d.maps, pb->n_mapping, map_id, pb))
        goto done;
    if ((s = check_tables(&d))) goto done;
    s = build(&d, base, window_given, out);
done:
    if (s == INGEST_ENOMEM) snprintf(err, errlen, "out of memory decoding the pprof profile");
    free(d.locs.s);
    free(d.fns.s);
    free(d.maps.s);
    free(d.loc_text);
    free(d.loc_off);
    free(d.loc_need);
    return s;
}

ingest_status ingest_pprof_decode(const struct Perftools__Profiles__Profile *pb, size_t max_out,
                                  const ingest_profile *base, int window_given, ingest_profile *out, char *err,
                                  size_t errlen)
{
    if (pb->n_sample_type == 0 || pb->n_sample_type > MAX_SAMPLE_TYPES) {
        snprintf(err, errlen, "%zu sample types (1 to %d)", pb->n_sample_type, MAX_SAMPLE_TYPES);
        return INGEST_EINVAL;
    }
    return decode(pb, max_out, base, window_given, out, err, errlen);
}

void ingest_pprof_free(ingest_profile *profiles, size_t n)
{
    for (size_t i = 0; i < n; i++) ingest_profile_free(&profiles[i]);
    free(profiles);
}

ingest_status ingest_pprof_parse(const void *body, size_t len, size_t max_out, const ingest_profile *base,
                                 int window_given, ingest_profile **out, size_t *n_out, char *err, size_t errlen)
{
    const unsigned char *b = body;
    char *plain = NULL;
    size_t plain_len = len;
    *out = NULL;
    *n_out = 0;
    if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
        char why[512];
        ingest_status s = ingest_gunzip(body, len, max_out, &plain, &plain_len, why, sizeof why);
        if (s) {
            snprintf(err, errlen, "pprof body: %s", why);
            return s;
        }
        b = (const unsigned char *)plain;
    }
    pb_profile *pb = perftools__profiles__profile__unpack(NULL, plain_len, b);
    if (!pb) {
        snprintf(err, errlen, plain ? "pprof body: the gunzipped bytes are not a valid profile.proto (truncated or not pprof)"
                                    : "pprof body: neither gzip'd nor a valid raw profile.proto (truncated, or not pprof)");
        free(plain);
        return INGEST_EINVAL;
    }
    free(plain);
    ingest_status s;
    size_t nt = pb->n_sample_type;
    ingest_profile *ps = NULL;
    if (nt == 0) {
        snprintf(err, errlen, "pprof body: the profile has no sample types (empty or not a profile)");
        s = INGEST_EINVAL;
    } else if (nt > MAX_SAMPLE_TYPES) {
        snprintf(err, errlen, "pprof body: %zu sample types, more than the %d a profile may have", nt, MAX_SAMPLE_TYPES);
        s = INGEST_EINVAL;
    } else if (!(ps = calloc(nt, sizeof *ps))) {
        snprintf(err, errlen, "out of memory decoding the pprof profile");
        s = INGEST_ENOMEM;
    } else {
        s = decode(pb, max_out, base, window_given, ps, err, errlen);
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
