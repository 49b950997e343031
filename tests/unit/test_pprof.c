/* test_pprof.c — unit tests of ingest/'s interop parsers: pprof
 * profile.proto (pprof.c), multipart/form-data (multipart.c) and perf
 * script text (perfscript.c).
 *
 * The pprof bodies are written by a tiny protobuf encoder below, not by
 * protobuf-c, so the decoder is checked against the wire format itself
 * (field numbers of pprof's profile.proto). */
#include <string.h>
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "../../ingest/ingest.h"

/* ---- a minimal protobuf writer ------------------------------------------ */

typedef struct { uint8_t b[65536]; size_t n; } pb;

static void pb_varint(pb *p, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        p->b[p->n++] = c | (v ? 0x80 : 0);
    } while (v);
}
static void pb_int(pb *p, int field, uint64_t v) { pb_varint(p, (uint64_t)field << 3); pb_varint(p, v); }
static void pb_bytes(pb *p, int field, const void *d, size_t n)
{
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void pb_str(pb *p, int field, const char *s) { pb_bytes(p, field, s, strlen(s)); }
static void pb_msg(pb *p, int field, const pb *m) { pb_bytes(p, field, m->b, m->n); }

/* Profile field numbers (pprof's profile.proto). */
enum { P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4, P_FUNCTION = 5, P_STRING = 6,
       P_TIME = 9, P_DURATION = 10, P_PERIOD_TYPE = 11, P_PERIOD = 12 };

static void add_strings(pb *p, const char *const *s, size_t n)
{
    for (size_t i = 0; i < n; i++) pb_str(p, P_STRING, s[i]);
}
static void add_type(pb *p, int type, int unit)
{
    pb m = { .n = 0 };
    pb_int(&m, 1, (uint64_t)type);
    pb_int(&m, 2, (uint64_t)unit);
    pb_msg(p, P_SAMPLE_TYPE, &m);
}
static void add_function(pb *p, int id, int name)
{
    pb m = { .n = 0 };
    pb_int(&m, 1, (uint64_t)id);
    pb_int(&m, 2, (uint64_t)name);
    pb_msg(p, P_FUNCTION, &m);
}
/* A location with lines fns[0..n) (fns[0] innermost). */
static void add_location(pb *p, int id, int mapping, uint64_t address, const int *fns, size_t n)
{
    pb m = { .n = 0 };
    pb_int(&m, 1, (uint64_t)id);
    if (mapping) pb_int(&m, 2, (uint64_t)mapping);
    if (address) pb_int(&m, 3, address);
    for (size_t i = 0; i < n; i++) {
        pb l = { .n = 0 };
        pb_int(&l, 1, (uint64_t)fns[i]);
        pb_msg(&m, 4, &l);
    }
    pb_msg(p, P_LOCATION, &m);
}
/* Functions 1..n named by strings first_name.., function i the one line
 * of location i (address 0x10 * i). */
static void add_one_line_locations(pb *p, int first_name, int n)
{
    for (int i = 1; i <= n; i++) {
        int fn[] = { i };
        add_function(p, i, first_name + i - 1);
        add_location(p, i, 0, 0x10 * (uint64_t)i, fn, 1);
    }
}
/* A sample (packed repeated fields, as Go writes them). */
static void add_sample(pb *p, const uint64_t *locs, size_t nl, const int64_t *vals, size_t nv)
{
    pb m = { .n = 0 }, packed = { .n = 0 };
    for (size_t i = 0; i < nl; i++) pb_varint(&packed, locs[i]);
    pb_msg(&m, 1, &packed);
    packed.n = 0;
    for (size_t i = 0; i < nv; i++) pb_varint(&packed, (uint64_t)vals[i]);
    pb_msg(&m, 2, &packed);
    pb_msg(p, P_SAMPLE, &m);
}

static void base_init(ingest_profile *base)
{
    char err[256];
    ingest_profile_init(base);
    assert_int_equal(ingest_label_add(base, "service", "app", err, sizeof err), 0);
    assert_int_equal(ingest_label_add(base, "type", "wall", err, sizeof err), 0);
    base->from_ms = 1000;
    base->until_ms = 2000;
}

static void assert_stack(const ingest_profile *p, size_t i, const char *frames, uint64_t count)
{
    assert_true(i < p->n_stacks);
    if (p->stacks[i].len != strlen(frames) || memcmp(p->stacks[i].frames, frames, p->stacks[i].len) != 0)
        fail_msg("stack %zu is \"%.*s\", expected \"%s\"", i, (int)p->stacks[i].len, p->stacks[i].frames, frames);
    assert_int_equal(p->stacks[i].count, count);
}

/* p parsed with base's window (base_init), which must succeed; its one
 * profile's stacks checked against frames[0..n) (each count `count`), then
 * freed. */
static void assert_one_profile(const pb *p, const char *const *frames, size_t n_frames, uint64_t count)
{
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    ingest_status st = ingest_pprof_parse(p->b, p->n, 1 << 20, &base, 1, &out, &n, err, sizeof err);
    if (st) fail_msg("parse: %s", err);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].n_stacks, n_frames);
    for (size_t i = 0; i < n_frames; i++) assert_stack(&out[0], i, frames[i], count);
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
}

/* Two sample types, an inlined location, a zero value. */
static void build_two_types(pb *p)
{
    static const char *const s[] = { "", "samples", "count", "cpu", "nanoseconds", "main", "work", "outer", "inner" };
    p->n = 0;
    add_strings(p, s, 9);
    add_type(p, 1, 2);
    add_type(p, 3, 4);
    add_function(p, 1, 5);
    add_function(p, 2, 6);
    add_function(p, 3, 8); /* inner */
    add_function(p, 4, 7); /* outer */
    int f1[] = { 1 }, f2[] = { 3, 4 }, f3[] = { 2 };
    add_location(p, 1, 0, 0x10, f1, 1);
    add_location(p, 2, 0, 0x20, f2, 2);
    add_location(p, 3, 0, 0x30, f3, 1);
    uint64_t la[] = { 3, 2, 1 }, lb[] = { 1 };
    int64_t va[] = { 2, 20000000 }, vb[] = { 0, 5 };
    add_sample(p, la, 3, va, 2);
    add_sample(p, lb, 1, vb, 2);
    pb_int(p, P_TIME, 1700000000123000000ULL);
}

static void test_pprof_sample_types_and_inlining(void **state)
{
    (void)state;
    static pb p;
    build_two_types(&p);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    ingest_status s = ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 0, &out, &n, err, sizeof err);
    if (s) fail_msg("parse: %s", err);
    assert_int_equal(n, 2);
    assert_string_equal(ingest_label_get(&out[0], "type"), "samples");
    assert_string_equal(ingest_label_get(&out[0], "service"), "app");
    assert_string_equal(out[0].unit, "count");
    assert_int_equal(out[0].n_stacks, 1);
    assert_stack(&out[0], 0, "main;outer;inner;work", 2);
    assert_string_equal(ingest_label_get(&out[1], "type"), "cpu");
    assert_string_equal(out[1].unit, "nanoseconds");
    assert_int_equal(out[1].n_stacks, 2);
    assert_stack(&out[1], 0, "main;outer;inner;work", 20000000);
    assert_stack(&out[1], 1, "main", 5);
    assert_int_equal(out[1].total, 20000005);
    /* each stack's hash, taken while its text was written, is storage's */
    for (size_t t = 0; t < n; t++) {
        assert_non_null(out[t].hashes);
        for (size_t i = 0; i < out[t].n_stacks; i++) {
            hash128 h = hash_bytes128(out[t].stacks[i].frames, out[t].stacks[i].len);
            assert_true(h.lo == out[t].hashes[i].lo && h.hi == out[t].hashes[i].hi);
        }
    }
    /* samples are not nanoseconds: cpu's come from samples/count, over the
     * samples where cpu has a value and the count is known (2, not 20000005) */
    assert_int_equal(out[1].samples_how, INGEST_SAMPLES_KNOWN);
    assert_int_equal(out[1].samples, 2);
    assert_int_equal(out[0].samples_how, INGEST_SAMPLES_KNOWN);
    assert_int_equal(out[0].samples, 2);
    assert_int_equal(out[1].aggregation, INGEST_AGG_SUM);
    assert_true(out[1].rate == 0);
    /* window from time_nanos, 10 s when the duration is 0 */
    assert_int_equal(out[0].from_ms, 1700000000123LL);
    assert_int_equal(out[0].until_ms, 1700000010123LL);
    ingest_pprof_free(out, n);
    /* from/until given: the base's window */
    s = ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err);
    assert_int_equal(s, INGEST_OK);
    assert_int_equal(out[1].from_ms, 1000);
    assert_int_equal(out[1].until_ms, 2000);
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
}

/* A sample with labels: (key, str) string indices, and numeric ones. */
static void add_labeled_sample(pb *p, const uint64_t *locs, size_t nl, const int64_t *vals, size_t nv,
                               const int (*labels)[3], size_t nlab)
{
    pb m = { .n = 0 }, packed = { .n = 0 };
    for (size_t i = 0; i < nl; i++) pb_varint(&packed, locs[i]);
    pb_msg(&m, 1, &packed);
    packed.n = 0;
    for (size_t i = 0; i < nv; i++) pb_varint(&packed, (uint64_t)vals[i]);
    pb_msg(&m, 2, &packed);
    for (size_t i = 0; i < nlab; i++) {
        pb l = { .n = 0 };
        pb_int(&l, 1, (uint64_t)labels[i][0]);
        if (labels[i][1]) pb_int(&l, 2, (uint64_t)labels[i][1]);
        if (labels[i][2]) pb_int(&l, 3, (uint64_t)labels[i][2]);
        pb_msg(&m, 3, &l);
    }
    pb_msg(p, P_SAMPLE, &m);
}

/* Sample labels become pseudo-frames (storage/frame.h FRAME_LABEL) at the
 * root of the stack, in key order, only when the base asks; numeric
 * labels, keys that are no label names (or reserved: "__") and repeated
 * keys are left out and counted; ';' and line breaks in values are replaced. */
static void test_pprof_sample_labels(void **state)
{
    (void)state;
    static pb p;
    static const char *const s[] = { "", "samples", "count", "main", "work", "span_id", "ab12", "endpoint",
                                     "/api;v1\n", "bytes", "bad key", "x", "cd34", "__tenant__" };
    p.n = 0;
    add_strings(&p, s, 14);
    add_type(&p, 1, 2);
    add_function(&p, 1, 3);
    add_function(&p, 2, 4);
    int f1[] = { 1 }, f2[] = { 2 };
    add_location(&p, 1, 0, 0, f1, 1);
    add_location(&p, 2, 0, 0, f2, 1);
    uint64_t locs[] = { 2, 1 };
    int64_t v1[] = { 3 }, v2[] = { 4 }, v3[] = { 5 };
    /* span_id after endpoint in the message: written in key order */
    const int l1[][3] = { { 5, 6, 0 }, { 7, 8, 0 }, { 9, 0, 512 }, { 10, 11, 0 }, { 5, 12, 0 }, { 13, 11, 0 } };
    add_labeled_sample(&p, locs, 2, v1, 1, l1, 6);
    add_labeled_sample(&p, locs, 2, v2, 1, NULL, 0);
    const int l3[][3] = { { 5, 12, 0 } };
    add_labeled_sample(&p, locs, 1, v3, 1, l3, 1);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    /* not asked: the stacks of old */
    if (ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err)) fail_msg("parse: %s", err);
    assert_int_equal(out[0].n_stacks, 3);
    assert_stack(&out[0], 0, "main;work", 3);
    assert_stack(&out[0], 2, "work", 5);
    assert_int_equal(out[0].sample_labels_kept, 0);
    ingest_pprof_free(out, n);
    base.sample_labels = 1;
    if (ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err)) fail_msg("parse: %s", err);
    assert_int_equal(out[0].n_stacks, 3);
    assert_stack(&out[0], 0, "\x1f" "endpoint=/api:v1 ;\x1f" "span_id=ab12;main;work", 3);
    assert_stack(&out[0], 1, "main;work", 4);
    assert_stack(&out[0], 2, "\x1f" "span_id=cd34;work", 5);
    assert_int_equal(out[0].total, 12);
    assert_int_equal(out[0].sample_labels_kept, 3);
    assert_int_equal(out[0].sample_labels_dropped, 4); /* numeric, "bad key", the second span_id, __tenant__ */
    assert_int_equal(out[0].sample_values_other, 0);
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
}

/* At most INGEST_MAX_SAMPLE_LABELS keys a sample (the first in key order)
 * and INGEST_MAX_SAMPLE_VALUES distinct values of a key a request. */
static void test_pprof_sample_label_limits(void **state)
{
    (void)state;
    static char names[1100][16];
    const char *s[1100];
    size_t ns = 0;
    s[ns++] = "";
    s[ns++] = "samples";
    s[ns++] = "count";
    s[ns++] = "main"; /* 3 */
    s[ns++] = "v";    /* 4 */
    size_t k0 = ns;   /* keys k00..k16 */
    for (int i = 0; i <= INGEST_MAX_SAMPLE_LABELS; i++) {
        snprintf(names[ns], sizeof names[ns], "k%02d", i);
        s[ns] = names[ns];
        ns++;
    }
    size_t req = ns;  /* "req", then its values */
    s[ns++] = "req";
    size_t v0 = ns;
    for (int i = 0; i <= INGEST_MAX_SAMPLE_VALUES; i++) {
        snprintf(names[ns], sizeof names[ns], "r%04d", i);
        s[ns] = names[ns];
        ns++;
    }
    static pb big;
    big.n = 0;
    add_strings(&big, s, ns);
    add_type(&big, 1, 2);
    add_function(&big, 1, 3);
    int f1[] = { 1 };
    add_location(&big, 1, 0, 0, f1, 1);
    uint64_t locs[] = { 1 };
    int64_t one[] = { 1 };
    int many[INGEST_MAX_SAMPLE_LABELS + 1][3];
    for (int i = 0; i <= INGEST_MAX_SAMPLE_LABELS; i++) { /* given last key first */
        many[i][0] = (int)(k0 + INGEST_MAX_SAMPLE_LABELS - (size_t)i);
        many[i][1] = 4;
        many[i][2] = 0;
    }
    add_labeled_sample(&big, locs, 1, one, 1, (const int (*)[3])many, INGEST_MAX_SAMPLE_LABELS + 1);
    for (int i = 0; i <= INGEST_MAX_SAMPLE_VALUES; i++) {
        const int l[][3] = { { (int)req, (int)(v0 + (size_t)i), 0 } };
        add_labeled_sample(&big, locs, 1, one, 1, l, 1);
    }
    assert_true(big.n < sizeof big.b);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    base.sample_labels = 1;
    if (ingest_pprof_parse(big.b, big.n, 1 << 20, &base, 1, &out, &n, err, sizeof err)) fail_msg("parse: %s", err);
    assert_int_equal(out[0].n_stacks, INGEST_MAX_SAMPLE_VALUES + 2);
    /* the 16 first keys in key order, k16 left out */
    char want[1024] = "";
    for (int i = 0; i < INGEST_MAX_SAMPLE_LABELS; i++) {
        char one_label[32];
        snprintf(one_label, sizeof one_label, "\x1fk%02d=v;", i);
        strcat(want, one_label);
    }
    strcat(want, "main");
    assert_stack(&out[0], 0, want, 1);
    assert_stack(&out[0], INGEST_MAX_SAMPLE_VALUES, "\x1freq=r0999;main", 1);
    assert_stack(&out[0], INGEST_MAX_SAMPLE_VALUES + 1, "\x1freq=other;main", 1);
    assert_int_equal(out[0].sample_labels_dropped, 1);
    assert_int_equal(out[0].sample_values_other, 1);
    assert_int_equal(out[0].sample_labels_kept, INGEST_MAX_SAMPLE_LABELS + INGEST_MAX_SAMPLE_VALUES + 1);
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
}

/* Go's heap profile: alloc_space counts its samples with alloc_objects,
 * inuse_space with inuse_objects; inuse_* are gauges unless the base says. */
static void test_pprof_heap_samples_and_gauges(void **state)
{
    (void)state;
    static pb p;
    static const char *const s[] = { "", "alloc_objects", "count", "alloc_space", "bytes", "inuse_objects",
                                     "inuse_space", "main", "grow" };
    p.n = 0;
    add_strings(&p, s, 9);
    add_type(&p, 1, 2);
    add_type(&p, 3, 4);
    add_type(&p, 5, 2);
    add_type(&p, 6, 4);
    add_one_line_locations(&p, 7, 2);
    uint64_t la[] = { 2, 1 }, lb[] = { 1 };
    int64_t va[] = { 7, 7000, 3, 3000 }, vb[] = { 5, 900, 0, 0 };
    add_sample(&p, la, 2, va, 4);
    add_sample(&p, lb, 1, vb, 4);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    if (ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err)) fail_msg("parse: %s", err);
    assert_int_equal(n, 4);
    assert_string_equal(ingest_label_get(&out[1], "type"), "alloc_space");
    assert_int_equal(out[1].total, 7900);
    assert_int_equal(out[1].samples, 12);
    assert_int_equal(out[1].aggregation, INGEST_AGG_SUM);
    assert_string_equal(ingest_label_get(&out[3], "type"), "inuse_space");
    assert_int_equal(out[3].total, 3000);
    assert_int_equal(out[3].samples, 3);
    assert_int_equal(out[3].aggregation, INGEST_AGG_AVERAGE);
    assert_int_equal(out[2].aggregation, INGEST_AGG_AVERAGE);
    ingest_pprof_free(out, n);
    /* the client's word wins over the type's default */
    base.aggregation = INGEST_AGG_SUM;
    if (ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err)) fail_msg("parse: %s", err);
    assert_int_equal(out[3].aggregation, INGEST_AGG_SUM);
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
}

/* Frames keep where they are (storage/frame.h): function file, line and
 * the location's mapping and build id; a name with the separator in it
 * gets a space instead. */
static void test_pprof_frames_with_lines(void **state)
{
    (void)state;
    static pb p;
    static const char *const s[] = { "", "samples", "count", "main", "work", "main.go", "/bin/app", "abc123", "we\x1fird" };
    p.n = 0;
    add_strings(&p, s, 9);
    add_type(&p, 1, 2);
    pb m = { .n = 0 };
    pb_int(&m, 1, 1);      /* mapping id */
    pb_int(&m, 5, 6);      /* filename */
    pb_int(&m, 6, 7);      /* build id */
    pb_msg(&p, P_MAPPING, &m);
    for (int f = 1; f <= 3; f++) {
        pb fn = { .n = 0 };
        pb_int(&fn, 1, (uint64_t)f);
        pb_int(&fn, 2, (uint64_t)(f == 3 ? 8 : f + 2));
        if (f < 3) pb_int(&fn, 4, 5); /* filename main.go */
        pb_msg(&p, P_FUNCTION, &fn);
    }
    const int lines[] = { 0, 10, 42, 0 };
    for (int l = 1; l <= 3; l++) {
        pb loc = { .n = 0 }, ln = { .n = 0 };
        pb_int(&loc, 1, (uint64_t)l);
        if (l < 3) pb_int(&loc, 2, 1); /* mapping 1 */
        pb_int(&ln, 1, (uint64_t)l);
        if (lines[l]) pb_int(&ln, 2, (uint64_t)lines[l]);
        pb_msg(&loc, 4, &ln);
        pb_msg(&p, P_LOCATION, &loc);
    }
    uint64_t la[] = { 2, 1 }, lb[] = { 3 };
    int64_t va[] = { 5 }, vb[] = { 1 };
    add_sample(&p, la, 2, va, 1);
    add_sample(&p, lb, 1, vb, 1);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    if (ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err)) fail_msg("parse: %s", err);
    assert_int_equal(n, 1);
#define US "\x1f"
    assert_stack(&out[0], 0, "main" US "main.go" US "10" US "/bin/app" US "abc123;work" US "main.go" US "42" US "/bin/app" US "abc123", 5);
#undef US
    assert_stack(&out[0], 1, "we ird", 1); /* nothing known: the name alone */
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
}

/* Without a count type: value / period when the period is of the type;
 * otherwise the samples are unknown. */
static void test_pprof_samples_from_period(void **state)
{
    (void)state;
    static pb p;
    static const char *const s[] = { "", "cpu", "nanoseconds", "main", "space", "bytes" };
    for (int with_period = 0; with_period < 2; with_period++) {
        p.n = 0;
        add_strings(&p, s, 6);
        add_type(&p, 1, 2);
        add_type(&p, 4, 5);
        add_one_line_locations(&p, 3, 1);
        uint64_t la[] = { 1 };
        int64_t va[] = { 30000000, 64 };
        add_sample(&p, la, 1, va, 2);
        if (with_period) {
            pb m = { .n = 0 };
            pb_int(&m, 1, 1);
            pb_int(&m, 2, 2);
            pb_msg(&p, P_PERIOD_TYPE, &m);
            pb_int(&p, P_PERIOD, 10000000);
        }
        ingest_profile base, *out;
        size_t n;
        char err[512] = "";
        base_init(&base);
        if (ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err)) fail_msg("parse: %s", err);
        assert_int_equal(n, 2);
        assert_int_equal(out[0].samples_how, with_period ? INGEST_SAMPLES_KNOWN : INGEST_SAMPLES_UNKNOWN);
        assert_int_equal(out[0].samples, with_period ? 3 : 0);
        assert_int_equal(out[1].samples_how, INGEST_SAMPLES_UNKNOWN); /* bytes, period of another type */
        ingest_pprof_free(out, n);
        ingest_profile_free(&base);
    }
}

static void test_pprof_missing_names(void **state)
{
    (void)state;
    static pb p;
    static const char *const s[] = { "", "cpu", "nanoseconds", "/usr/lib/libc.so.6", "a;b\nc", "" };
    p.n = 0;
    add_strings(&p, s, 6);
    add_type(&p, 1, 2);
    pb m = { .n = 0 };
    pb_int(&m, 1, 7);          /* mapping id */
    pb_int(&m, 2, 0x1000);     /* memory_start */
    pb_int(&m, 3, 0x9000);     /* memory_limit */
    pb_int(&m, 4, 0x200);      /* file_offset */
    pb_int(&m, 5, 3);          /* filename */
    pb_msg(&p, P_MAPPING, &m);
    add_function(&p, 1, 4);    /* a name with ';' and '\n' */
    add_function(&p, 2, 0);    /* no name */
    int fa[] = { 1 }, fb[] = { 2 };
    add_location(&p, 1, 0, 0xabc, NULL, 0);   /* no lines, no mapping */
    add_location(&p, 2, 7, 0x1500, NULL, 0);  /* no lines, mapped */
    add_location(&p, 3, 0, 0x40, fa, 1);
    add_location(&p, 4, 0, 0xdef, fb, 1);     /* function without a name */
    uint64_t l1[] = { 1, 2, 3, 4 };
    int64_t v[] = { 3 };
    add_sample(&p, l1, 4, v, 1);
    add_sample(&p, NULL, 0, v, 1);            /* no locations */
    static const char *const want[] = { "0xdef;a:b c;libc.so.6+0x700;0xabc", "[unknown]" };
    assert_one_profile(&p, want, 2, 3);
}

/* Names are copied eight bytes at a time: ';', line breaks and the
 * location separator are replaced wherever they fall in a word, at its
 * edges and in the bytes after the last whole word. */
static void test_pprof_long_names_sanitized(void **state)
{
    (void)state;
    static pb p;
    static const char *const s[] = { "", "cpu", "nanoseconds", "abcdefg;hijklmn\nopqrstu\rvwxyz01\x1f" "23;",
                                     "github.com/acme/platform/api/v1.(*Server).HandleRequest", ";\n\r\x1f;\n\r\x1f;" };
    p.n = 0;
    add_strings(&p, s, 6);
    add_type(&p, 1, 2);
    add_one_line_locations(&p, 3, 3);
    uint64_t l1[] = { 1, 2, 3 };
    int64_t v[] = { 4 };
    add_sample(&p, l1, 3, v, 1);
    static const char *const want[] = {
        ":   :   :;github.com/acme/platform/api/v1.(*Server).HandleRequest;abcdefg:hijklmn opqrstu vwxyz01 23:" };
    assert_one_profile(&p, want, 1, 4);
}

static void test_pprof_empty(void **state)
{
    (void)state;
    static pb p;
    static const char *const s[] = { "", "cpu", "nanoseconds" };
    p.n = 0;
    add_strings(&p, s, 3);
    add_type(&p, 1, 2);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    assert_int_equal(ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].n_stacks, 0);
    ingest_pprof_free(out, n);
    /* no bytes at all: a valid empty message, but no sample types */
    assert_int_equal(ingest_pprof_parse("", 0, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "no sample types");
    assert_null(out);
    ingest_profile_free(&base);
}

static void test_pprof_malformed(void **state)
{
    (void)state;
    static pb p;
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    build_two_types(&p);
    /* truncated */
    for (size_t cut = 1; cut < p.n; cut += 7) {
        ingest_status s = ingest_pprof_parse(p.b, p.n - cut, 1 << 20, &base, 1, &out, &n, err, sizeof err);
        if (s == INGEST_OK) { /* cut on a field boundary: must still be consistent */
            ingest_pprof_free(out, n);
            continue;
        }
        assert_int_equal(s, INGEST_EINVAL);
        assert_null(out);
    }
    assert_int_equal(ingest_pprof_parse(p.b, p.n - 1, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "nor a valid raw profile.proto");
    /* garbage */
    assert_int_equal(ingest_pprof_parse("hello, world", 12, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "pprof body");
    /* broken gzip */
    static const unsigned char badgz[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3 };
    assert_int_equal(ingest_pprof_parse(badgz, sizeof badgz, 1 << 20, &base, 1, &out, &n, err, sizeof err),
                     INGEST_EINVAL);
    assert_err_contains(err, "pprof body");
    /* a value count that does not match the sample types */
    static const char *const s[] = { "", "cpu", "nanoseconds", "f" };
    p.n = 0;
    add_strings(&p, s, 4);
    add_type(&p, 1, 2);
    add_function(&p, 1, 3);
    int f[] = { 1 };
    add_location(&p, 1, 0, 0, f, 1);
    uint64_t l[] = { 1 }, bad[] = { 9 };
    int64_t v2[] = { 1, 2 }, neg[] = { -1 }, one[] = { 1 };
    static pb q;
    q = p;
    add_sample(&q, l, 1, v2, 2);
    assert_int_equal(ingest_pprof_parse(q.b, q.n, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "sample 0 has 2 values for 1 sample types");
    q = p;
    add_sample(&q, l, 1, neg, 1);
    assert_int_equal(ingest_pprof_parse(q.b, q.n, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "negative");
    q = p;
    add_sample(&q, bad, 1, one, 1);
    assert_int_equal(ingest_pprof_parse(q.b, q.n, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "location 9 is not in the profile");
    /* a missing service is reported by the final checks */
    ingest_profile nosvc;
    ingest_profile_init(&nosvc);
    nosvc.from_ms = 1;
    nosvc.until_ms = 2;
    q = p;
    add_sample(&q, l, 1, one, 1);
    assert_int_equal(ingest_pprof_parse(q.b, q.n, 1 << 20, &nosvc, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "service");
    ingest_profile_free(&base);
}

static size_t gzip_buf(const void *in, size_t n, unsigned char *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    return len;
}

static void test_pprof_gzip_and_bomb(void **state)
{
    (void)state;
    static pb p;
    static unsigned char gz[1 << 20];
    build_two_types(&p);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    size_t len = gzip_buf(p.b, p.n, gz, sizeof gz);
    assert_int_equal(ingest_pprof_parse(gz, len, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_OK);
    assert_int_equal(n, 2);
    ingest_pprof_free(out, n);
    /* 16 MiB of zeros gzip'd: refused past max_out, never inflated whole */
    size_t big = 16u << 20;
    char *zeros = calloc(1, big);
    assert_non_null(zeros);
    len = gzip_buf(zeros, big, gz, sizeof gz);
    free(zeros);
    assert_int_equal(ingest_pprof_parse(gz, len, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_ETOOBIG);
    assert_null(out);
    ingest_profile_free(&base);
}

/* Frames in a stack (';'-separated). */
static size_t stack_depth(const ingest_stack *st)
{
    size_t d = 1;
    for (uint32_t i = 0; i < st->len; i++) d += st->frames[i] == ';';
    return d;
}

/* A location of 3,000 inlined lines of a 100-byte function under a leaf
 * (issue 12: one location of 20,000 lines of a 4 KB function in 40 samples
 * took 3.4 GB): stacks keep their 1,024 leaf-most frames, and the arena
 * holds those and nothing more, the text of the cut frames never built. */
static void build_deep(pb *p, char *longname, int *lines)
{
    memset(longname, 'F', 100);
    longname[100] = '\0';
    const char *const s[] = { "", "cpu", "nanoseconds", longname, "leaf" };
    p->n = 0;
    add_strings(p, s, 5);
    add_type(p, 1, 2);
    add_function(p, 1, 3);
    add_function(p, 2, 4);
    for (int i = 0; i < 3000; i++) lines[i] = 1;
    add_location(p, 1, 0, 0x10, lines, 3000);
    int leaf[] = { 2 };
    add_location(p, 2, 0, 0x20, leaf, 1);
    uint64_t deep[] = { 2, 1 }, only_long[] = { 1 }, only_leaf[] = { 2 };
    int64_t one[] = { 1 }, zero[] = { 0 };
    for (int i = 0; i < 5; i++) add_sample(p, deep, 2, one, 1);
    add_sample(p, only_long, 1, one, 1);
    add_sample(p, only_leaf, 1, one, 1);
    add_sample(p, only_long, 1, zero, 1); /* in no profile: takes no room */
}

static void test_pprof_deep_stacks_cut_before_text(void **state)
{
    (void)state;
    static pb p;
    static char longname[101];
    static int lines[3000];
    build_deep(&p, longname, lines);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    if (ingest_pprof_parse(p.b, p.n, 16 << 20, &base, 1, &out, &n, err, sizeof err)) fail_msg("parse: %s", err);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].n_stacks, 7);
    assert_int_equal(out[0].truncated_stacks, 6);
    size_t kept = 0;
    for (size_t i = 0; i < 7; i++) {
        const ingest_stack *st = &out[0].stacks[i];
        kept += st->len;
        assert_int_equal(stack_depth(st), i == 6 ? 1 : INGEST_MAX_DEPTH);
        if (i < 5) assert_memory_equal(st->frames + st->len - 5, ";leaf", 5); /* the leaf stays */
        else if (i == 5) assert_int_equal(st->len, INGEST_MAX_DEPTH * 101 - 1);
        else assert_stack(&out[0], i, "leaf", 1);
        if (i < 6) assert_memory_equal(st->frames, longname, 100);
    }
    /* memory follows what is kept: 7 stacks, not 7 x 3,000 frames */
    assert_int_equal(out[0].arena_cap, kept);
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
}

/* Cut stacks still repeat: their text may not exceed max_out (--max-body),
 * measured before it is built. */
static void test_pprof_stack_text_bounded(void **state)
{
    (void)state;
    static pb p;
    static char longname[101];
    static int lines[3000];
    build_deep(&p, longname, lines);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    assert_int_equal(ingest_pprof_parse(p.b, p.n, 200000, &base, 1, &out, &n, err, sizeof err), INGEST_ETOOBIG);
    assert_err_contains(err, "stacks as text would take more than 200000 bytes");
    assert_err_contains(err, "--max-body");
    assert_null(out);
    /* just enough: 6 stacks of 103,423 bytes, "leaf" */
    assert_int_equal(ingest_pprof_parse(p.b, p.n, 6 * (INGEST_MAX_DEPTH * 101 - 1) + 4, &base, 1, &out, &n, err,
                                        sizeof err), INGEST_OK);
    ingest_pprof_free(out, n);
    ingest_profile_free(&base);
}

/* Two sample types of one name would be one series mixing both: refused,
 * naming both indices (docs/ARCHITECTURE.md, decisions). */
static void test_pprof_duplicate_sample_types(void **state)
{
    (void)state;
    static pb p;
    static const char *const s[] = { "", "cpu", "nanoseconds", "count", "main", "samples" };
    p.n = 0;
    add_strings(&p, s, 6);
    add_type(&p, 5, 3);
    add_type(&p, 1, 2);
    add_type(&p, 1, 3); /* cpu again, in another unit */
    add_one_line_locations(&p, 4, 1);
    uint64_t l[] = { 1 };
    int64_t v[] = { 1, 10000000, 1 };
    add_sample(&p, l, 1, v, 3);
    ingest_profile base, *out;
    size_t n;
    char err[512] = "";
    base_init(&base);
    assert_int_equal(ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "sample types 1 and 2 are both named 'cpu'");
    assert_null(out);
    /* and at most 256 sample types */
    p.n = 0;
    pb_str(&p, P_STRING, "");
    pb_str(&p, P_STRING, "count");
    char name[16];
    for (int t = 0; t < 257; t++) {
        snprintf(name, sizeof name, "t%d", t);
        pb_str(&p, P_STRING, name);
        add_type(&p, t + 2, 1);
    }
    assert_int_equal(ingest_pprof_parse(p.b, p.n, 1 << 20, &base, 1, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "257 sample types, more than the 256");
    ingest_profile_free(&base);
}

/* A copy of s whose last byte is the last of a readable page: reading one
 * byte past it faults, with or without ASan.  Free with guarded_free. */
static char *guarded_copy(const char *s, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    assert_true(n <= page);
    char *m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(mprotect(m + page, page, PROT_NONE), 0);
    memcpy(m + page - n, s, n);
    return m + page - n;
}

/* ---- the text passes on several threads (ingest_par) ---- */

#include <pthread.h>

/* A runner of ingest_par's tasks on three threads, each taking its share
 * from the last index down (an order unlike the serial one). */
typedef struct { size_t n; void (*task)(void *, size_t); void *arg; unsigned t; } par_thread;
static unsigned par_calls;

static void *par_thread_main(void *a)
{
    par_thread *pt = a;
    for (size_t i = pt->n; i-- > 0;)
        if (i % 3 == pt->t) pt->task(pt->arg, i);
    return NULL;
}

static void par_run_threads(void *ctx, size_t n, void (*task)(void *arg, size_t i), void *arg)
{
    (void)ctx;
    par_calls++;
    pthread_t th[3];
    par_thread pt[3];
    for (unsigned t = 0; t < 3; t++) {
        pt[t] = (par_thread){ n, task, arg, t };
        assert_int_equal(pthread_create(&th[t], NULL, par_thread_main, &pt[t]), 0);
    }
    for (unsigned t = 0; t < 3; t++) pthread_join(th[t], NULL);
}

/* The profile both tests below decode: 400 functions with files and
 * lines, 600 samples of 1-20 locations and two sample types.  defect
 * spoils it where a decode with ingest_par must answer what one without
 * does (the least failing item): 1 samples 450 and 200 name a location
 * the profile lacks, 2 sample 300 has a negative value, 3 the names of
 * functions 390 and 350 (each its own location's) are not UTF-8. */
enum { PAR_NF = 400, PAR_NS = 600 };

static void par_profile(pb *p, int defect)
{
    static char names[PAR_NF + 8][24];
    const char *strs[PAR_NF + 8];
    int ns = 0;
    strs[ns++] = "";
    strs[ns++] = "samples";
    strs[ns++] = "count";
    strs[ns++] = "cpu";
    strs[ns++] = "nanoseconds";
    strs[ns++] = "/src/app/main.go";
    for (int i = 0; i < PAR_NF; i++) {
        snprintf(names[i], sizeof names[i], "pkg.fn_%03d", i);
        if (defect == 3 && (i + 1 == 350 || i + 1 == 390)) names[i][3] = (char)0xC0; /* a lead byte cut short */
        strs[ns++] = names[i];
    }
    p->n = 0;
    add_strings(p, strs, (size_t)ns);
    add_type(p, 1, 2);
    add_type(p, 3, 4);
    for (int i = 1; i <= PAR_NF; i++) {
        pb m = { .n = 0 };
        pb_int(&m, 1, (uint64_t)i);
        pb_int(&m, 2, (uint64_t)(6 + i - 1));
        pb_int(&m, 4, 5); /* filename */
        pb_msg(p, P_FUNCTION, &m);
        pb l = { .n = 0 }, loc = { .n = 0 };
        pb_int(&l, 1, (uint64_t)i);
        pb_int(&l, 2, (uint64_t)(10 * i));
        pb_int(&loc, 1, (uint64_t)i);
        pb_int(&loc, 3, 0x10 * (uint64_t)i);
        pb_msg(&loc, 4, &l);
        pb_msg(p, P_LOCATION, &loc);
    }
    uint64_t rng = 12345;
    for (int i = 0; i < PAR_NS; i++) {
        uint64_t locs[20];
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t depth = 1 + (rng >> 33) % 20;
        for (size_t k = 0; k < depth; k++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            locs[k] = 1 + (rng >> 33) % PAR_NF;
        }
        if (defect == 1 && (i == 450 || i == 200)) locs[depth - 1] = 9000 + (uint64_t)i;
        if (defect == 3 && (i == 20 || i == 40)) locs[0] = i == 20 ? 390 : 350;
        int64_t vals[] = { 1 + i % 7, i % 5 ? 1000 * (i + 1) : 0 };
        if (defect == 2 && i == 300) vals[1] = -5;
        add_sample(p, locs, depth, vals, 2);
    }
    assert_true(p->n < sizeof p->b);
}

/* Decoded on one thread and with ingest_par, the profiles are the same,
 * text, hashes and totals (the passes run in ranges on several threads
 * only past PAR_MIN_ITEMS items a range). */
static void test_pprof_par_same_profiles(void **state)
{
    (void)state;
    static pb p;
    par_profile(&p, 0);
    ingest_profile base, *one, *many;
    size_t n1, n2;
    char err[512] = "";
    base_init(&base);
    if (ingest_pprof_parse(p.b, p.n, 1 << 24, &base, 1, &one, &n1, err, sizeof err)) fail_msg("parse: %s", err);
    ingest_par par = { par_run_threads, NULL, 3 };
    par_calls = 0;
    if (ingest_pprof_parse_par(p.b, p.n, 1 << 24, &base, 1, &par, &many, &n2, err, sizeof err))
        fail_msg("parse with threads: %s", err);
    /* in ranges: the functions and the locations measured, the
     * locations written, the stacks measured and written */
    assert_int_equal(par_calls, 5);
    assert_int_equal(n1, 2);
    assert_int_equal(n2, 2);
    for (size_t t = 0; t < 2; t++) {
        assert_int_equal(one[t].n_stacks, many[t].n_stacks);
        assert_int_equal(one[t].total, many[t].total);
        assert_true(one[t].n_stacks > 400);
        for (size_t i = 0; i < one[t].n_stacks; i++) {
            assert_int_equal(one[t].stacks[i].len, many[t].stacks[i].len);
            assert_memory_equal(one[t].stacks[i].frames, many[t].stacks[i].frames, one[t].stacks[i].len);
            assert_int_equal(one[t].stacks[i].count, many[t].stacks[i].count);
            assert_memory_equal(&one[t].hashes[i], &many[t].hashes[i], sizeof one[t].hashes[i]);
        }
    }
    /* and the frames are the ones written: a sample's leaf is its first location */
    assert_non_null(memmem(one[0].stacks[0].frames, one[0].stacks[0].len, "pkg.fn_", 7));
    ingest_pprof_free(one, n1);
    ingest_pprof_free(many, n2);
    ingest_profile_free(&base);
}

/* ---- text later (ingest.h: base->text_later) ---- */

static int same_text(const ingest_stack *a, const ingest_stack *b)
{
    return a->len == b->len && memcmp(a->frames, b->frames, a->len) == 0;
}

/* p decoded with its text now and with text later: the same stacks,
 * counts and totals; the keys are equal exactly where the text is; the
 * text written for the stacks said unknown is theirs, and once every
 * stack's is written, all are the same as without text later.  The
 * decode with text later runs its passes on par's threads. */
static void assert_text_later_same(const pb *p, int sample_labels)
{
    ingest_profile base, *now, *later;
    size_t n1, n2;
    char err[512] = "";
    base_init(&base);
    base.sample_labels = sample_labels;
    if (ingest_pprof_parse(p->b, p->n, 1 << 24, &base, 1, &now, &n1, err, sizeof err)) fail_msg("parse: %s", err);
    base.text_later = 1;
    ingest_par par = { par_run_threads, NULL, 3 };
    if (ingest_pprof_parse_par(p->b, p->n, 1 << 24, &base, 1, &par, &later, &n2, err, sizeof err))
        fail_msg("parse with text later: %s", err);
    assert_int_equal(n1, n2);
    assert_null(now[0].later);
    assert_non_null(later[0].later);
    for (size_t t = 0; t < n1; t++) {
        assert_int_equal(now[t].n_stacks, later[t].n_stacks);
        assert_int_equal(now[t].total, later[t].total);
        assert_int_equal(now[t].samples, later[t].samples);
        assert_int_equal(now[t].truncated_stacks, later[t].truncated_stacks);
        for (size_t i = 0; i < now[t].n_stacks; i++) {
            assert_int_equal(now[t].stacks[i].len, later[t].stacks[i].len);
            assert_int_equal(now[t].stacks[i].count, later[t].stacks[i].count);
            for (size_t j = 0; j < i; j++) {
                int text = same_text(&now[t].stacks[i], &now[t].stacks[j]);
                int key = memcmp(&later[t].hashes[i], &later[t].hashes[j], sizeof(hash128)) == 0;
                if (key && !text) fail_msg("type %zu: stacks %zu and %zu have one key and two texts", t, j, i);
            }
        }
    }
    /* the stacks of profile 0 with an odd index are unknown to the store */
    uint32_t **leaves = calloc(n2, sizeof *leaves);
    for (size_t t = 0; t < n2; t++) {
        leaves[t] = malloc((later[t].n_stacks + 1) * sizeof **leaves);
        for (size_t i = 0; i < later[t].n_stacks; i++) leaves[t][i] = t == 0 && i % 2 ? 0 : 7;
    }
    ingest_pprof_write_text(later, n2, (const uint32_t *const *)leaves, &par);
    for (size_t i = 1; i < later[0].n_stacks; i += 2)
        if (!same_text(&now[0].stacks[i], &later[0].stacks[i]))
            fail_msg("stack %zu, unknown, is \"%.*s\", expected \"%.*s\"", i, (int)later[0].stacks[i].len,
                     later[0].stacks[i].frames, (int)now[0].stacks[i].len, now[0].stacks[i].frames);
    ingest_pprof_write_text(later, n2, NULL, NULL);
    for (size_t t = 0; t < n1; t++) {
        for (size_t i = 0; i < now[t].n_stacks; i++)
            if (!same_text(&now[t].stacks[i], &later[t].stacks[i]))
                fail_msg("type %zu stack %zu is \"%.*s\", expected \"%.*s\"", t, i, (int)later[t].stacks[i].len,
                         later[t].stacks[i].frames, (int)now[t].stacks[i].len, now[t].stacks[i].frames);
        free(leaves[t]);
    }
    free(leaves);
    ingest_pprof_write_text(now, n1, NULL, NULL); /* text now: nothing to do */
    ingest_pprof_free(now, n1);
    ingest_pprof_free(later, n2);
    ingest_profile_free(&base);
}

static void test_pprof_text_later_same_text(void **state)
{
    (void)state;
    static pb p;
    static char longname[128];
    static int lines[3000];
    par_profile(&p, 0); /* files, lines, two types, 600 samples: the passes on threads */
    assert_text_later_same(&p, 0);
    assert_text_later_same(&p, 1); /* sample labels asked for, none given (no label text at all) */
    build_two_types(&p); /* an inlined location, a zero value */
    assert_text_later_same(&p, 0);
    build_deep(&p, longname, lines); /* stacks cut at 1,024 frames inside a location */
    assert_text_later_same(&p, 0);
}

/* Keys of one stack (profile, p): checked against its text. */
static hash128 key_of(const ingest_profile *p, const char *text)
{
    for (size_t i = 0; i < p->n_stacks; i++)
        if (p->stacks[i].len == strlen(text) && !memcmp(p->stacks[i].frames, text, p->stacks[i].len)) return p->hashes[i];
    fail_msg("no stack \"%s\"", text);
    return (hash128){ 0, 0 };
}

/* The key is of what a stack is, not of a profile's numbering: the same
 * stacks in two profiles whose ids and string tables differ have the same
 * keys, other stacks (another function, another line, another mapping,
 * another sample label) other keys. */
static void test_pprof_text_later_keys(void **state)
{
    (void)state;
    static pb a, b;
    static const char *const sa[] = { "", "samples", "count", "main", "f", "g", "/bin/app", "span_id", "s1", "s2" };
    a.n = 0;
    add_strings(&a, sa, 10);
    add_type(&a, 1, 2);
    add_function(&a, 1, 3);
    add_function(&a, 2, 4);
    add_function(&a, 3, 5);
    pb m = { .n = 0 };
    pb_int(&m, 1, 1);
    pb_int(&m, 5, 6); /* mapping 1: /bin/app */
    pb_msg(&a, P_MAPPING, &m);
    int f1[] = { 1 }, f2[] = { 2 }, f3[] = { 3 };
    add_location(&a, 1, 1, 0x100, f1, 1);
    add_location(&a, 2, 1, 0x200, f2, 1);
    add_location(&a, 3, 1, 0x300, f3, 1);
    add_location(&a, 4, 0, 0x400, NULL, 0); /* no lines: named after its address */
    uint64_t s1[] = { 3, 2, 1 }, s2[] = { 2, 1 }, s3[] = { 4, 1 };
    int64_t one[] = { 1 };
    const int lab1[][3] = { { 7, 8, 0 } }, lab2[][3] = { { 7, 9, 0 } };
    add_labeled_sample(&a, s1, 3, one, 1, lab1, 1);
    add_labeled_sample(&a, s1, 3, one, 1, lab2, 1);
    add_sample(&a, s2, 2, one, 1);
    add_sample(&a, s3, 2, one, 1);

    /* b: the same functions under other ids and string indices, and one
     * stack a does not have */
    static const char *const sb[] = { "", "samples", "count", "s1", "g", "span_id", "/bin/app", "f", "main", "h" };
    b.n = 0;
    add_strings(&b, sb, 10);
    add_type(&b, 1, 2);
    add_function(&b, 30, 4); /* g */
    add_function(&b, 10, 8); /* main */
    add_function(&b, 20, 7); /* f */
    add_function(&b, 40, 9); /* h */
    m.n = 0;
    pb_int(&m, 1, 5);
    pb_int(&m, 5, 6);
    pb_msg(&b, P_MAPPING, &m);
    int g1[] = { 30 }, g2[] = { 10 }, g3[] = { 20 }, g4[] = { 40 };
    add_location(&b, 93, 5, 0x300, g1, 1);
    add_location(&b, 91, 5, 0x100, g2, 1);
    add_location(&b, 92, 5, 0x200, g3, 1);
    add_location(&b, 94, 5, 0x500, g4, 1);
    add_location(&b, 95, 0, 0x400, NULL, 0);
    uint64_t t1[] = { 93, 92, 91 }, t2[] = { 92, 91 }, t3[] = { 94, 91 }, t4[] = { 95, 91 };
    const int labb[][3] = { { 5, 3, 0 } };
    add_labeled_sample(&b, t1, 3, one, 1, labb, 1);
    add_sample(&b, t2, 2, one, 1);
    add_sample(&b, t3, 2, one, 1);
    add_sample(&b, t4, 2, one, 1);

    ingest_profile base, *pa, *pbp;
    size_t na, nb;
    char err[512] = "";
    base_init(&base);
    base.sample_labels = 1;
    base.text_later = 1;
    if (ingest_pprof_parse(a.b, a.n, 1 << 20, &base, 1, &pa, &na, err, sizeof err)) fail_msg("parse a: %s", err);
    if (ingest_pprof_parse(b.b, b.n, 1 << 20, &base, 1, &pbp, &nb, err, sizeof err)) fail_msg("parse b: %s", err);
    ingest_pprof_write_text(pa, na, NULL, NULL);
    ingest_pprof_write_text(pbp, nb, NULL, NULL);
    assert_int_equal(pa[0].n_stacks, 4);
    assert_int_equal(pbp[0].n_stacks, 4);
    /* no file or line: the frames are the names (the mapping only in the keys) */
    const char *fg1 = "\x1fspan_id=s1;main;f;g", *fg2 = "\x1fspan_id=s2;main;f;g", *fmain = "main;f",
               *faddr = "main;0x400";
    hash128 ka[4] = { key_of(&pa[0], fg1), key_of(&pa[0], fg2), key_of(&pa[0], fmain), key_of(&pa[0], faddr) };
    hash128 k1 = key_of(&pbp[0], fg1), k3 = key_of(&pbp[0], fmain), k4 = key_of(&pbp[0], faddr);
    assert_memory_equal(&ka[0], &k1, sizeof k1);
    assert_memory_equal(&ka[2], &k3, sizeof k3);
    assert_memory_equal(&ka[3], &k4, sizeof k4);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++) assert_memory_not_equal(&ka[i], &ka[j], sizeof ka[i]);
    hash128 kh = key_of(&pbp[0], "main;h"); /* h's stack: a key of its own */
    for (int j = 0; j < 4; j++) assert_memory_not_equal(&kh, &ka[j], sizeof kh);
    /* keys are apart from storage's hash of the text */
    hash128 th = hash_bytes128(fmain, strlen(fmain));
    assert_memory_not_equal(&th, &ka[2], sizeof th);
    ingest_pprof_free(pa, na);
    ingest_pprof_free(pbp, nb);
    ingest_profile_free(&base);
}

/* A runner that takes every task in order on the caller's thread. */
static void par_run_in_order(void *ctx, size_t n, void (*task)(void *arg, size_t i), void *arg)
{
    (void)ctx;
    par_calls++;
    for (size_t i = 0; i < n; i++) task(arg, i);
}

/* The last range first: a later range's failure is found before an
 * earlier one's. */
static void par_run_reversed(void *ctx, size_t n, void (*task)(void *arg, size_t i), void *arg)
{
    (void)ctx;
    par_calls++;
    for (size_t i = n; i-- > 0;) task(arg, i);
}

/* A spoiled profile is refused with the same message on one thread and
 * with ingest_par, whatever order its runner takes the tasks in: the
 * least failing sample or location, and a text limit met before the bad
 * item wins, as in order: the passes that measure locations and stacks
 * run in ranges, each stopping at its first failure, and the caller goes
 * through the items in order (the samples' check stays on its thread: in
 * ranges, the serial pass that follows it read back what another core
 * wrote, and one client's pprof pushes went no faster). */
static void test_pprof_par_same_errors(void **state)
{
    (void)state;
    static pb p;
    const struct { int defect; size_t max; const char *want; } cases[] = {
        { 1, 1 << 24, "sample 200: location 9200 is not in the profile" },
        { 2, 1 << 24, "sample 300: value -5 is negative" },
        { 3, 1 << 24, "location 350: function name is not valid UTF-8" },
        { 0, 2000, "its stacks as text would take more than 2000 bytes" },  /* the locations' text */
        { 0, 60000, "its stacks as text would take more than 60000 bytes" }, /* the stacks' */
        { 3, 2000, "its stacks as text would take more than 2000 bytes" },  /* before location 350 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        par_profile(&p, cases[c].defect);
        ingest_profile base, *one = NULL, *many = NULL;
        size_t n1 = 9, n2 = 9;
        char err1[512] = "", err2[512] = "";
        base_init(&base);
        assert_int_not_equal(ingest_pprof_parse(p.b, p.n, cases[c].max, &base, 1, &one, &n1, err1, sizeof err1),
                             INGEST_OK);
        assert_err_contains(err1, cases[c].want);
        assert_null(one);
        assert_int_equal(n1, 0);
        for (int r = 0; r < 3; r++) {
            ingest_par par = { r == 0 ? par_run_threads : r == 1 ? par_run_in_order : par_run_reversed, NULL, 3 };
            par_calls = 0;
            err2[0] = '\0';
            assert_int_not_equal(ingest_pprof_parse_par(p.b, p.n, cases[c].max, &base, 1, &par, &many, &n2, err2,
                                                        sizeof err2),
                                 INGEST_OK);
            assert_string_equal(err1, err2);
            assert_null(many);
            assert_int_equal(n2, 0);
        }
        ingest_profile_free(&base);
    }
}

static void guarded_free(char *p, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    munmap(p + n - page, 2 * page);
}

/* A body that ends right after a delimiter line (issue 12: a 1-byte heap
 * over-read, multipart.c:99, found by fuzzing). */
static void test_multipart_ends_after_delimiter(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "--X\n",
        "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--XyZ  \r\n",
        "--X\r\n",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        size_t len = strlen(bodies[i]);
        char *body = guarded_copy(bodies[i], len);
        const char *f;
        size_t n;
        char err[256] = "";
        const char *ct = i == 1 ? "multipart/form-data; boundary=XyZ" : "multipart/form-data; boundary=X";
        assert_int_equal(ingest_multipart_field(ct, body, len, "profile", &f, &n, err, sizeof err), INGEST_EINVAL);
        assert_err_contains(err, "truncated");
        assert_null(f);
        guarded_free(body, len);
    }
}

static void test_multipart(void **state)
{
    (void)state;
    static const char body[] =
        "--XyZ\r\n"
        "Content-Disposition: form-data; name=\"sample_type_config\"; filename=\"c.json\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n"
        "{\"cpu\":{}}\r\n"
        "--XyZ\r\n"
        "Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n"
        "AB\r\n--XyZ-not-a-boundary\r\nCD\r\n"
        "--XyZ--\r\n";
    const char *f;
    size_t n;
    char err[256] = "";
    assert_true(ingest_multipart_is("multipart/form-data; boundary=XyZ"));
    assert_false(ingest_multipart_is("application/octet-stream"));
    assert_int_equal(ingest_multipart_field("multipart/form-data; boundary=XyZ", body, sizeof body - 1, "profile", &f,
                                            &n, err, sizeof err), INGEST_OK);
    assert_non_null(f);
    assert_int_equal(n, strlen("AB\r\n--XyZ-not-a-boundary\r\nCD"));
    assert_memory_equal(f, "AB\r\n--XyZ-not-a-boundary\r\nCD", n);
    assert_int_equal(ingest_multipart_field("multipart/form-data; boundary=\"XyZ\"", body, sizeof body - 1,
                                            "sample_type_config", &f, &n, err, sizeof err), INGEST_OK);
    assert_memory_equal(f, "{\"cpu\":{}}", n);
    assert_int_equal(ingest_multipart_field("multipart/form-data; boundary=XyZ", body, sizeof body - 1,
                                            "prev_profile", &f, &n, err, sizeof err), INGEST_OK);
    assert_null(f);
    assert_int_equal(ingest_multipart_field("multipart/form-data", body, sizeof body - 1, "profile", &f, &n, err,
                                            sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "boundary");
    assert_int_equal(ingest_multipart_field("multipart/form-data; boundary=XyZ", body, 120, "profile", &f, &n, err,
                                            sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "truncated");
}

static void test_perf_script(void **state)
{
    (void)state;
    static const char text[] =
        "Web Content 123/456 [002] 100.500000:     250000 cpu-clock:pppH: \n"
        "\t    7f00 leaf_fn+0x1a (/usr/lib/libfoo.so)\n"
        "\t    7e00 [unknown] (/usr/lib/x86_64/libc.so.6)\n"
        "\t    7d00 main+0x10 (/usr/bin/app)\n"
        "\n"
        "app  99/99   101.250000: \n"
        "\tffffffff8100 do_a;b+0x4 ([kernel.kallsyms])\n"
        "\t           0 [unknown] ([unknown])\n"
        "\n"
        "kworker 7 [000] 102.000001: 1 cpu-clock: \n";
    ingest_perf_sample *s;
    size_t n;
    char err[256] = "";
    assert_true(ingest_perf_detect(text, sizeof text - 1));
    assert_false(ingest_perf_detect("a;b 1\nc;d 2\n", 12));
    assert_int_equal(ingest_perf_parse(text, sizeof text - 1, &s, &n, err, sizeof err), INGEST_OK);
    assert_int_equal(n, 3);
    assert_string_equal(s[0].stack, "Web Content;main;libc.so.6;leaf_fn");
    assert_int_equal(s[0].time_ns, 100500000000LL);
    assert_string_equal(s[1].stack, "app;[unknown];do_a:b");
    assert_int_equal(s[1].time_ns, 101250000000LL);
    assert_string_equal(s[2].stack, "kworker");
    assert_int_equal(s[2].time_ns, 102000001000LL);
    ingest_perf_free(s, n);
    assert_int_equal(ingest_perf_parse("\tdeadbeef f (x)\n", 16, &s, &n, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "line 1: a frame line without a sample header");
}

/* NUL bytes and times past 63 bits of nanoseconds (issue 12, found by
 * fuzzing: a NUL was copied into stacks or left an empty frame; a 10-digit
 * time overflowed, perfscript.c:56 and :67). */
static void test_perf_script_nul_and_long_times(void **state)
{
    (void)state;
    static const struct { const char *text; size_t len; const char *frag; } bad[] = {
        { "a\0b 1/1 1.5:\n\tf\n", 15, "line 1: a NUL byte" },
        { "c 1/1 1.5:\n\t\0x\n", 15, "line 2: a NUL byte" },
        { "c 1/1 1.5:\n\t1 f\0g (/x)\n\n", 24, "line 2: a NUL byte" },
        { "c 1/1 9999999999.5:\n\tf\n", 0, "line 1: a time of more than 9223372035 seconds" },
        { "c 1/1 99999999999999999999.5:\n\tf\n", 0, "line 1: a time of more than" },
        { "ok 1/1 1.0:\n\tf\n\nc 1/1 9223372036.0:\n\tf\n", 0, "line 4: a time of more than" },
    };
    ingest_perf_sample *s;
    size_t n;
    char err[256];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
        if (ingest_perf_parse(bad[i].text, len, &s, &n, err, sizeof err) != INGEST_EINVAL)
            fail_msg("case %zu: accepted, expected '%s'", i, bad[i].frag);
        assert_err_contains(err, bad[i].frag);
        assert_null(s);
        assert_int_equal(n, 0);
    }
    /* the longest time that fits */
    static const char last[] = "c 1/1 9223372035.999999999:\n\tmain\n";
    assert_int_equal(ingest_perf_parse(last, sizeof last - 1, &s, &n, err, sizeof err), INGEST_OK);
    assert_int_equal(n, 1);
    assert_true(s[0].time_ns == INT64_C(9223372035999999999));
    assert_string_equal(s[0].stack, "c;main");
    ingest_perf_free(s, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pprof_sample_types_and_inlining),
        cmocka_unit_test(test_pprof_sample_labels),
        cmocka_unit_test(test_pprof_sample_label_limits),
        cmocka_unit_test(test_pprof_heap_samples_and_gauges),
        cmocka_unit_test(test_pprof_samples_from_period),
        cmocka_unit_test(test_pprof_frames_with_lines),
        cmocka_unit_test(test_pprof_missing_names),
        cmocka_unit_test(test_pprof_long_names_sanitized),
        cmocka_unit_test(test_pprof_empty),
        cmocka_unit_test(test_pprof_malformed),
        cmocka_unit_test(test_pprof_gzip_and_bomb),
        cmocka_unit_test(test_pprof_deep_stacks_cut_before_text),
        cmocka_unit_test(test_pprof_stack_text_bounded),
        cmocka_unit_test(test_pprof_duplicate_sample_types),
        cmocka_unit_test(test_pprof_par_same_profiles),
        cmocka_unit_test(test_pprof_par_same_errors),
        cmocka_unit_test(test_pprof_text_later_same_text),
        cmocka_unit_test(test_pprof_text_later_keys),
        cmocka_unit_test(test_multipart),
        cmocka_unit_test(test_multipart_ends_after_delimiter),
        cmocka_unit_test(test_perf_script),
        cmocka_unit_test(test_perf_script_nul_and_long_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
