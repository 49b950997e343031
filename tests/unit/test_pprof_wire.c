/* test_pprof_wire.c — ingest/pprof_wire.c, the single-pass pprof reader,
 * against protobuf-c's unpack of the same bytes (tests/fuzz/pprof_diff.h):
 * the same bodies accepted, the same profiles stored, the same refusals.
 *
 * Inputs: the pprof corpus and crash inputs of tests/fuzz (a real Go CPU
 * profile among them), every truncation and a few thousand byte changes of
 * the Go profile, hand-made bodies at the edges of the wire format (each
 * with the answer it must get), and, when FLAMEDB_PPROF_DIR names what
 * ../shared/bench/gen_pprof.py wrote, its first FLAMEDB_PPROF_N (10)
 * profiles. */
#include <string.h>
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "../fuzz/pprof_diff.h"

static void base_init(ingest_profile *base)
{
    char err[256];
    ingest_profile_init(base);
    assert_int_equal(ingest_label_add(base, "service", "app", err, sizeof err), 0);
    base->from_ms = 1000;
    base->until_ms = 2000;
    base->sample_labels = 1; /* labels as pseudo-frames: both decoders' are compared */
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    unsigned char *b = malloc(cap);
    assert_non_null(b);
    while ((got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            b = realloc(b, cap *= 2);
            assert_non_null(b);
        }
    }
    fclose(f);
    *len = n;
    return b;
}

/* Both ways must agree; answers the status. */
static ingest_status both_ways(const void *body, size_t len, const char *what)
{
    ingest_profile base;
    ingest_status s;
    base_init(&base);
    const char *d = pprof_diff(body, len, (size_t)64 << 20, &base, &s);
    if (d) fail_msg("%s: the decoders differ: %s", what, d);
    ingest_profile_free(&base);
    return s;
}

/* Every file of a directory both ways; answers how many decoded. */
static int dir_both_ways(const char *dir, int max, int *files)
{
    DIR *dp = opendir(dir);
    if (!dp) return -1;
    struct dirent *e;
    int ok = 0;
    while ((e = readdir(dp)) && *files < max) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        unsigned char *b = slurp(path, &len);
        if (!b) continue;
        ok += both_ways(b, len, path) == INGEST_OK;
        (*files)++;
        free(b);
    }
    closedir(dp);
    return ok;
}

static void test_corpus_both_ways(void **state)
{
    (void)state;
    int files = 0, ok = dir_both_ways("tests/fuzz/corpus/pprof", 1 << 20, &files);
    assert_true(ok >= 3); /* go_cpu.pb, go_cpu.pb.gz and seeds decode: not a test of refusals only */
    assert_true(dir_both_ways("tests/fuzz/crashes/pprof", 1 << 20, &files) >= 0);
    const char *dir = getenv("FLAMEDB_PPROF_DIR");
    if (dir && *dir) {
        char sub[4096];
        const char *n = getenv("FLAMEDB_PPROF_N");
        int before = files, max = n && atoi(n) > 0 ? atoi(n) : 10;
        snprintf(sub, sizeof sub, "%s/pprof", dir);
        int good = dir_both_ways(sub, files + max, &files);
        print_message("%s: %d of %d profiles decoded the same both ways\n", sub, good, files - before);
        assert_int_equal(good, files - before);
    }
}

/* Every truncation of the Go profile, and byte changes at random places. */
static void test_mutations_both_ways(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = slurp("tests/fuzz/corpus/pprof/go_cpu.pb", &len);
    assert_non_null(b);
    assert_int_equal(both_ways(b, len, "go_cpu.pb"), INGEST_OK);
    int ok = 0, refused = 0;
    for (size_t cut = 0; cut < len; cut += 1 + cut / 64) {
        if (both_ways(b, cut, "a truncation") == INGEST_OK) ok++;
        else refused++;
    }
    unsigned char *m = malloc(len);
    assert_non_null(m);
    uint64_t x = 0x70726f66;
    for (int i = 0; i < 3000; i++) {
        memcpy(m, b, len);
        for (int k = 0; k < 1 + i % 4; k++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t at = (size_t)(x >> 33) % len;
            static const unsigned char pick[] = { 0x00, 0x01, 0x02, 0x03, 0x05, 0x07, 0x7f, 0x80, 0xff, 0x0a, 0x12 };
            m[at] = (x >> 20) & 1 ? pick[(x >> 8) % sizeof pick] : (unsigned char)(x >> 12);
        }
        if (both_ways(m, len, "a changed byte") == INGEST_OK) ok++;
        else refused++;
    }
    print_message("mutations: %d decoded, %d refused, the same both ways\n", ok, refused);
    assert_true(ok > 100 && refused > 100);
    free(m);
    free(b);
}

/* ---- hand-made bodies ----------------------------------------------------- */

typedef struct { unsigned char b[4096]; size_t n; } pb;

static void raw(pb *p, const void *d, size_t n)
{
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void varint(pb *p, uint64_t v)
{
    do {
        unsigned char c = v & 0x7f;
        v >>= 7;
        p->b[p->n++] = c | (v ? 0x80 : 0);
    } while (v);
}
static void key(pb *p, int field, int wt) { varint(p, (uint64_t)field << 3 | (uint64_t)wt); }
static void vint(pb *p, int field, uint64_t v) { key(p, field, 0); varint(p, v); }
static void bytes(pb *p, int field, const void *d, size_t n)
{
    key(p, field, 2);
    varint(p, n);
    raw(p, d, n);
}
static void msg(pb *p, int field, const pb *m) { bytes(p, field, m->b, m->n); }

/* A CPU profile: strings, one type, function 1 "main" at location 1,
 * without samples (add them). */
static void head(pb *p, const char *type, const char *unit)
{
    const char *s[] = { "", type, unit, "main", "work" };
    p->n = 0;
    for (int i = 0; i < 5; i++) bytes(p, 6, s[i], strlen(s[i]));
    pb m = { .n = 0 };
    vint(&m, 1, 1);
    vint(&m, 2, 2);
    msg(p, 1, &m);
    for (int f = 1; f <= 2; f++) {
        m.n = 0;
        vint(&m, 1, (uint64_t)f);
        vint(&m, 2, (uint64_t)f + 2);
        msg(p, 5, &m);
        pb l = { .n = 0 }, ln = { .n = 0 };
        vint(&ln, 1, (uint64_t)f);
        vint(&l, 1, (uint64_t)f);
        msg(&l, 4, &ln);
        msg(p, 4, &l);
    }
}

static ingest_status decode(const pb *p, ingest_profile **out, size_t *n, char *err, size_t errlen)
{
    ingest_profile base;
    base_init(&base);
    ingest_status s = ingest_pprof_parse(p->b, p->n, 1 << 20, &base, 1, out, n, err, errlen);
    ingest_profile_free(&base);
    assert_int_equal(both_ways(p->b, p->n, "a hand-made body"), s);
    return s;
}

static void expect_stack(const pb *p, const char *frames, uint64_t count)
{
    ingest_profile *out;
    size_t n;
    char err[512] = "";
    if (decode(p, &out, &n, err, sizeof err) != INGEST_OK) fail_msg("refused: %s", err);
    assert_int_equal(out[0].n_stacks, 1);
    const ingest_stack *st = &out[0].stacks[0];
    if (st->len != strlen(frames) || memcmp(st->frames, frames, st->len))
        fail_msg("stack \"%.*s\", expected \"%s\"", (int)st->len, st->frames, frames);
    assert_int_equal(st->count, count);
    ingest_pprof_free(out, n);
}

static void expect_refused(const pb *p, const char *frag)
{
    ingest_profile *out;
    size_t n;
    char err[512] = "";
    assert_int_equal(decode(p, &out, &n, err, sizeof err), INGEST_EINVAL);
    assert_null(out);
    assert_err_contains(err, frag);
}

static void test_wire_repeated_fields(void **state)
{
    (void)state;
    pb p, s;
    /* unpacked location ids and value, leaf first */
    head(&p, "cpu", "nanoseconds");
    s.n = 0;
    vint(&s, 1, 2);
    vint(&s, 1, 1);
    vint(&s, 2, 7);
    msg(&p, 2, &s);
    expect_stack(&p, "main;work", 7);
    /* packed and unpacked mixed, in two pieces */
    head(&p, "cpu", "nanoseconds");
    s.n = 0;
    unsigned char two[] = { 2 };
    bytes(&s, 1, two, 1);
    vint(&s, 1, 1);
    unsigned char val[] = { 9 };
    bytes(&s, 2, val, 1);
    bytes(&s, 1, "", 0); /* an empty packed run */
    msg(&p, 2, &s);
    expect_stack(&p, "main;work", 9);
    /* a packed varint cut at the end of its field */
    head(&p, "cpu", "nanoseconds");
    s.n = 0;
    unsigned char cut[] = { 1, 0x80 };
    bytes(&s, 1, cut, 2);
    vint(&s, 2, 1);
    msg(&p, 2, &s);
    expect_refused(&p, "sample 0 at byte");
    /* no value in the whole profile (found by fuzz_pprof_wire: an empty
       array of values must still be an array) */
    head(&p, "cpu", "nanoseconds");
    s.n = 0;
    vint(&s, 1, 1);
    msg(&p, 2, &s);
    expect_refused(&p, "sample 0 has 0 values for 1 sample types");
    /* a value given as 10 bytes (-1): read, then refused as negative */
    head(&p, "cpu", "nanoseconds");
    s.n = 0;
    vint(&s, 1, 1);
    vint(&s, 2, UINT64_MAX);
    msg(&p, 2, &s);
    expect_refused(&p, "value -1 is negative");
    /* 11 bytes: not a varint */
    head(&p, "cpu", "nanoseconds");
    s.n = 0;
    vint(&s, 1, 1);
    key(&s, 2, 0);
    raw(&s, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
    msg(&p, 2, &s);
    expect_refused(&p, "longer than 10 bytes");
}

static void test_wire_types(void **state)
{
    (void)state;
    pb p, s, m;
    /* unknown fields of every valid wire type, at the top and inside messages */
    head(&p, "cpu", "nanoseconds");
    vint(&p, 99, 5);
    key(&p, 98, 1);
    raw(&p, "12345678", 8);
    key(&p, 97, 5);
    raw(&p, "1234", 4);
    bytes(&p, 96, "xyz", 3);
    s.n = 0;
    vint(&s, 1, 1);
    vint(&s, 2, 3);
    bytes(&s, 15, "?", 1);
    msg(&p, 2, &s);
    expect_stack(&p, "main", 3);
    /* a group (wire type 3) is refused, named by where it is */
    head(&p, "cpu", "nanoseconds");
    key(&p, 95, 3);
    expect_refused(&p, "profile at byte");
    /* a known integer as bytes: refused, the field named */
    head(&p, "cpu", "nanoseconds");
    m.n = 0;
    bytes(&m, 1, "\x03", 1);
    msg(&p, 5, &m);
    expect_refused(&p, "function 2 at byte");
    head(&p, "cpu", "nanoseconds");
    m.n = 0;
    bytes(&m, 1, "\x03", 1);
    msg(&p, 5, &m);
    expect_refused(&p, "field id (1) is not a varint");
    /* a string as a varint */
    head(&p, "cpu", "nanoseconds");
    vint(&p, 6, 1);
    expect_refused(&p, "string_table");
    /* a message as a varint */
    head(&p, "cpu", "nanoseconds");
    vint(&p, 2, 1);
    expect_refused(&p, "field sample (2) is not length-delimited");
    /* bools take any wire type (Location.is_folded, Mapping.has_functions) */
    head(&p, "cpu", "nanoseconds");
    m.n = 0;
    vint(&m, 1, 3);
    bytes(&m, 5, "yes", 3);
    msg(&p, 4, &m);
    m.n = 0;
    vint(&m, 1, 1);
    key(&m, 7, 1);
    raw(&m, "\1\0\0\0\0\0\0\0", 8);
    msg(&p, 3, &m);
    s.n = 0;
    vint(&s, 1, 3);
    vint(&s, 2, 4);
    msg(&p, 2, &s);
    expect_stack(&p, "0x0", 4);
    /* a label of a sample is read and checked (test_pprof.c: what is kept) */
    head(&p, "cpu", "nanoseconds");
    s.n = 0;
    vint(&s, 1, 1);
    vint(&s, 2, 2);
    m.n = 0;
    bytes(&m, 1, "k", 1);
    msg(&s, 3, &m);
    msg(&p, 2, &s);
    expect_refused(&p, "sample 0, label 0 at byte");
}

static void test_wire_keys_and_lengths(void **state)
{
    (void)state;
    pb p, s;
    /* a key of 5 bytes (field 2, padded) is a key */
    head(&p, "cpu", "nanoseconds");
    s.n = 0;
    vint(&s, 1, 1);
    vint(&s, 2, 6);
    raw(&p, "\x92\x80\x80\x80\x00", 5);
    varint(&p, s.n);
    raw(&p, s.b, s.n);
    expect_stack(&p, "main", 6);
    /* 6 bytes is not */
    head(&p, "cpu", "nanoseconds");
    raw(&p, "\x92\x80\x80\x80\x80\x00", 6);
    expect_refused(&p, "a field key longer than 5 bytes");
    /* field number 0 */
    head(&p, "cpu", "nanoseconds");
    raw(&p, "\x02\x00", 2);
    expect_refused(&p, "field number 0");
    /* a length past the end, and a length of 6 bytes */
    head(&p, "cpu", "nanoseconds");
    key(&p, 2, 2);
    varint(&p, 100);
    expect_refused(&p, "runs past the end");
    head(&p, "cpu", "nanoseconds");
    key(&p, 2, 2);
    raw(&p, "\x80\x80\x80\x80\x80\x00", 6);
    expect_refused(&p, "a length longer than 5 bytes");
}

static void test_wire_strings_and_repeats(void **state)
{
    (void)state;
    pb p, s, m;
    /* a string holding a NUL ends there, as protobuf-c's copy read by strlen */
    const char *str[] = { "", "cpu", "nanoseconds" };
    p.n = 0;
    for (int i = 0; i < 3; i++) bytes(&p, 6, str[i], strlen(str[i]));
    bytes(&p, 6, "ma\0in", 5);
    m.n = 0;
    vint(&m, 1, 1);
    vint(&m, 2, 2);
    msg(&p, 1, &m);
    m.n = 0;
    vint(&m, 1, 1);
    vint(&m, 2, 3);
    msg(&p, 5, &m);
    pb l = { .n = 0 }, ln = { .n = 0 };
    vint(&ln, 1, 1);
    vint(&l, 1, 1);
    msg(&l, 4, &ln);
    msg(&p, 4, &l);
    s.n = 0;
    vint(&s, 1, 1);
    vint(&s, 2, 5);
    msg(&p, 2, &s);
    expect_stack(&p, "ma", 5);
    /* a second period_type replaces the first whole (its unit unset: no match) */
    ingest_profile *out;
    size_t n;
    char err[512];
    for (int twice = 0; twice < 2; twice++) {
        head(&p, "cpu", "nanoseconds");
        m.n = 0;
        vint(&m, 1, 1);
        vint(&m, 2, 2);
        msg(&p, 11, &m);
        if (twice) {
            m.n = 0;
            vint(&m, 1, 1);
            msg(&p, 11, &m);
        }
        vint(&p, 12, 10);
        s.n = 0;
        vint(&s, 1, 1);
        vint(&s, 2, 100);
        msg(&p, 2, &s);
        assert_int_equal(decode(&p, &out, &n, err, sizeof err), INGEST_OK);
        assert_int_equal(out[0].samples_how, twice ? INGEST_SAMPLES_UNKNOWN : INGEST_SAMPLES_KNOWN);
        if (!twice) assert_int_equal(out[0].samples, 10);
        ingest_pprof_free(out, n);
    }
    /* two functions of one id: the first counts */
    head(&p, "cpu", "nanoseconds");
    m.n = 0;
    vint(&m, 1, 1);
    vint(&m, 2, 4);
    msg(&p, 5, &m);
    s.n = 0;
    vint(&s, 1, 1);
    vint(&s, 2, 1);
    msg(&p, 2, &s);
    expect_stack(&p, "main", 1);
    /* sparse ids (a sorted table, not a direct one) */
    p.n = 0;
    for (int i = 0; i < 5; i++) bytes(&p, 6, (const char *[]){ "", "cpu", "nanoseconds", "main", "work" }[i],
                                      strlen((const char *[]){ "", "cpu", "nanoseconds", "main", "work" }[i]));
    m.n = 0;
    vint(&m, 1, 1);
    vint(&m, 2, 2);
    msg(&p, 1, &m);
    uint64_t ids[] = { UINT64_C(1) << 40, UINT64_MAX, 7 };
    for (int i = 0; i < 3; i++) {
        m.n = 0;
        vint(&m, 1, ids[i]);
        vint(&m, 2, i == 1 ? 4 : 3);
        msg(&p, 5, &m);
        l.n = 0;
        ln.n = 0;
        vint(&ln, 1, ids[i]);
        vint(&l, 1, ids[2 - i]);
        msg(&l, 4, &ln);
        msg(&p, 4, &l);
    }
    s.n = 0;
    vint(&s, 1, UINT64_C(1) << 40); /* the location of id 2^40 is function 7's */
    vint(&s, 1, 7);                 /* function 2^40's */
    vint(&s, 1, UINT64_MAX);        /* function UINT64_MAX's: work */
    vint(&s, 2, 2);
    msg(&p, 2, &s);
    expect_stack(&p, "work;main;main", 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_both_ways),
        cmocka_unit_test(test_mutations_both_ways),
        cmocka_unit_test(test_wire_repeated_fields),
        cmocka_unit_test(test_wire_types),
        cmocka_unit_test(test_wire_keys_and_lengths),
        cmocka_unit_test(test_wire_strings_and_repeats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
