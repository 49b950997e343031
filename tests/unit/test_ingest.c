/* test_ingest.c — unit tests of ingest/: stack bodies, labels, final
 * checks, Pyroscope names, gunzip and UTF-8 validation.
 *
 * Malformed inputs come in tables, each row with the fragment its error
 * message must contain, so that every message a user can see is checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zlib.h>

#include "testutil.h"
#include "../../ingest/ingest.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Asserts that stack i of p is `frames` with `count`. */
static void assert_stack(const ingest_profile *p, size_t i, const char *frames, uint64_t count)
{
    assert_true(i < p->n_stacks);
    if (p->stacks[i].len != strlen(frames) ||
        memcmp(p->stacks[i].frames, frames, p->stacks[i].len) != 0)
        fail_msg("stack %zu is \"%.*s\", expected \"%s\"", i, (int)p->stacks[i].len,
                 p->stacks[i].frames, frames);
    assert_int_equal(p->stacks[i].count, count);
}

/* ---- formats ---------------------------------------------------------- */

static void test_format_parse(void **state)
{
    (void)state;
    ingest_format f = INGEST_FORMAT_LINES;
    char err[256] = "";

    assert_int_equal(ingest_format_parse("folded", &f, err, sizeof err), 0);
    assert_int_equal(f, INGEST_FORMAT_FOLDED);
    assert_int_equal(ingest_format_parse("lines", &f, err, sizeof err), 0);
    assert_int_equal(f, INGEST_FORMAT_LINES);
    assert_int_equal(ingest_format_parse("collapsed", &f, err, sizeof err), -1);
    assert_string_equal(err, "unknown format 'collapsed' (supported: folded, lines)");
    assert_int_equal(ingest_format_parse("", &f, err, sizeof err), -1);
    assert_err_contains(err, "unknown format ''");
    assert_int_equal(ingest_format_parse("Folded", &f, err, sizeof err), -1);
    assert_int_equal(ingest_format_parse("bad\x01name", &f, err, sizeof err), -1);
    assert_err_contains(err, "unknown format 'bad?name'");
}

/* ---- folded: valid ---------------------------------------------------- */

static void test_folded_valid(void **state)
{
    (void)state;
    static const char body[] =
        "main;run;work 12\n"
        "main;std::vector<int> foo() 3\r\n"
        "\n"
        "   \t \r\n"
        "main;idle 007\n"
        "main;a b;c   5  \t\n"
        "\xc3\xa9t\xc3\xa9;\xe2\x82\xac 9007199254740000\n"
        "last;line 1";
    ingest_profile p;
    char err[256] = "";

    ingest_profile_init(&p);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, body, strlen(body),
                                         err, sizeof err), INGEST_OK);
    assert_int_equal(p.n_stacks, 6);
    assert_stack(&p, 0, "main;run;work", 12);
    assert_stack(&p, 1, "main;std::vector<int> foo()", 3);
    assert_stack(&p, 2, "main;idle", 7);
    assert_stack(&p, 3, "main;a b;c", 5);
    assert_stack(&p, 4, "\xc3\xa9t\xc3\xa9;\xe2\x82\xac", UINT64_C(9007199254740000));
    assert_stack(&p, 5, "last;line", 1);
    /* zero copy: frames point into the body */
    assert_ptr_equal(p.stacks[0].frames, body);
    assert_ptr_equal(p.stacks[1].frames, body + strlen("main;run;work 12\n"));
    assert_ptr_equal(p.stacks[5].frames, body + strlen(body) - strlen("last;line 1"));
    assert_int_equal(p.total, 12 + 3 + 7 + 5 + UINT64_C(9007199254740000) + 1);
    assert_int_equal(p.truncated_stacks, 0);
    ingest_profile_free(&p);

    /* the largest count is accepted */
    ingest_profile_init(&p);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, "a 9007199254740991", 18,
                                         err, sizeof err), INGEST_OK);
    assert_stack(&p, 0, "a", INGEST_MAX_VALUE);
    assert_int_equal(p.total, INGEST_MAX_VALUE);
    ingest_profile_free(&p);
    assert_null(p.stacks);
    assert_int_equal(p.n_stacks, 0);
}

static void test_folded_empty_bodies(void **state)
{
    (void)state;
    static const char *const bodies[] = { "", "\n", "\r\n\r\n", "  \n\t\n \r" };
    ingest_profile p;
    char err[256] = "";

    ingest_profile_init(&p);
    for (size_t i = 0; i < ARRAY_LEN(bodies); i++) {
        assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, bodies[i],
                                             strlen(bodies[i]), err, sizeof err), INGEST_OK);
        assert_int_equal(p.n_stacks, 0);
    }
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, NULL, 0, err, sizeof err),
                     INGEST_OK);
    ingest_profile_free(&p);
}

static void test_folded_appends_and_grows(void **state)
{
    (void)state;
    enum { N = 5000 };
    char *body = malloc(N * 32);
    size_t len = 0;
    ingest_profile p;
    char err[256] = "";

    assert_non_null(body);
    for (int i = 0; i < N; i++)
        len += (size_t)sprintf(body + len, "root;f%d %d\n", i, i + 1);
    ingest_profile_init(&p);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, body, len, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, "x;y 2", 5, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(p.n_stacks, N + 1);
    assert_true(p.cap_stacks >= p.n_stacks);
    assert_stack(&p, 0, "root;f0", 1);
    assert_stack(&p, N - 1, "root;f4999", N);
    assert_stack(&p, N, "x;y", 2);
    assert_int_equal(p.total, (uint64_t)N * (N + 1) / 2 + 2);
    ingest_profile_free(&p);
    free(body);
}

static void test_frame_length_limit(void **state)
{
    (void)state;
    char *body = malloc(2 * INGEST_MAX_FRAME + 64);
    ingest_profile p;
    char err[256] = "";
    size_t len;

    assert_non_null(body);
    ingest_profile_init(&p);
    /* exactly INGEST_MAX_FRAME bytes: accepted */
    memcpy(body, "a;", 2);
    memset(body + 2, 'x', INGEST_MAX_FRAME);
    len = 2 + INGEST_MAX_FRAME;
    len += (size_t)sprintf(body + len, " 4");
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, body, len, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(p.n_stacks, 1);
    assert_int_equal(p.stacks[0].len, 2 + INGEST_MAX_FRAME);
    /* one byte more: refused */
    memcpy(body, "a;", 2);
    memset(body + 2, 'x', INGEST_MAX_FRAME + 1);
    len = 2 + INGEST_MAX_FRAME + 1;
    len += (size_t)sprintf(body + len, " 4");
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, body, len, err, sizeof err),
                     INGEST_EINVAL);
    assert_string_equal(err, "line 1: frame 2 is longer than 4096 bytes");
    assert_int_equal(p.n_stacks, 1);
    ingest_profile_free(&p);
    free(body);
}

/* ---- folded: malformed ------------------------------------------------ */

struct bad_body {
    const char *body;
    size_t len; /* 0: strlen(body) */
    const char *frag;
};

static const struct bad_body bad_folded[] = {
    { "a;b 1\n\na;b\n", 0, "line 3: missing count (expected '<frames> <count>')" },
    { "a;b\t12", 0, "line 1: missing count" },
    { "a;b abc", 0, "line 1: count 'abc' is not a positive integer" },
    { "a;b -3", 0, "line 1: count '-3' is not a positive integer" },
    { "a;b +3", 0, "line 1: count '+3' is not a positive integer" },
    { "a;b 1.5", 0, "line 1: count '1.5' is not a positive integer" },
    { "a;b 12x", 0, "line 1: count '12x' is not a positive integer" },
    { "a;b 0x10", 0, "line 1: count '0x10' is not a positive integer" },
    { "a;b 1\xff", 0, "line 1: count '1?' is not a positive integer" },
    { "x 1\ny 2\na;b 0\n", 0, "line 3: count must be at least 1" },
    { "a;b 0000", 0, "line 1: count must be at least 1" },
    { "a;b 9007199254740992", 0, "line 1: count exceeds 9007199254740991" },
    { "a;b 99999999999999999999999999", 0, "line 1: count exceeds 9007199254740991" },
    { "a;b 9007199254740991\nc 1\n", 0, "line 2: total of all counts exceeds 9007199254740991" },
    { "a;;b 1", 0, "line 1: empty frame 2" },
    { ";a 1", 0, "line 1: empty frame 1" },
    { "a; 1", 0, "line 1: empty frame 2" },
    { "a;b;c;; 1", 0, "line 1: empty frame 4" },
    { ";", 0, "line 1: missing count" },
    { " 5", 0, "line 1: empty stack" },
    { "x 1\n   5\n", 0, "line 2: empty stack" },
    { "a;\xff 1", 0, "line 1: frame 2 is not valid UTF-8" },
    { "\xc0\xaf;b 1", 0, "line 1: frame 1 is not valid UTF-8" },
    { "a;b;\xed\xa0\x80 1", 0, "line 1: frame 3 is not valid UTF-8" },
    { "a;b;\xe2\x82 1", 0, "line 1: frame 3 is not valid UTF-8" },
    { "a\0b;c 1", 7, "line 1: frame 1 contains a NUL byte" },
    { "ok 1\r\na;b;c\0 1", 14, "line 2: frame 3 contains a NUL byte" },
};

static void test_folded_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(bad_folded); i++) {
        const struct bad_body *b = &bad_folded[i];
        size_t len = b->len ? b->len : strlen(b->body);
        ingest_profile p;
        char err[256] = "";

        ingest_profile_init(&p);
        ingest_status st = ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, b->body, len,
                                               err, sizeof err);
        if (st != INGEST_EINVAL)
            fail_msg("row %zu: status %d, expected EINVAL (%s)", i, (int)st, b->frag);
        assert_err_contains(err, b->frag);
        assert_int_equal(p.n_stacks, 0);
        assert_int_equal(p.total, 0);
        ingest_profile_free(&p);
    }
}

/* The 8-bytes-a-step check (folded.c: frames_fast) against every position
 * a defect can take in and across its words: ";;", a NUL, the location
 * separator and a bad UTF-8 byte at each offset of a 40-byte stack are
 * each found and named as the frame-by-frame walk names them; good stacks
 * of every length keep their depth, also past INGEST_MAX_DEPTH in a span
 * shorter than a frame may be (cut to the leaf-most frames). */
static void test_frames_every_offset(void **state)
{
    (void)state;
    char err[256];
    for (size_t len = 1; len <= 40; len++) {
        char b[64];
        size_t frames = 1;
        for (size_t i = 0; i < len; i++) {
            b[i] = i % 3 == 2 && i + 1 < len ? ';' : 'a';
            frames += b[i] == ';';
        }
        memcpy(b + len, " 2", 3);
        ingest_profile p;
        ingest_profile_init(&p);
        assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, b, len + 2, err, sizeof err), INGEST_OK);
        assert_int_equal(p.stacks[0].len, len);
        assert_int_equal(p.stacks[0].count, 2);
        ingest_profile_free(&p);
        (void)frames;
    }
    static const struct { char c; const char *frag; } defects[] = {
        { ';', "empty frame" }, { '\0', "contains a NUL byte" }, { '\x1f', "U+001F" }, { '\xff', "not valid UTF-8" },
    };
    for (size_t d = 0; d < ARRAY_LEN(defects); d++) {
        for (size_t at = 1; at < 39; at++) {
            char b[64];
            for (size_t i = 0; i < 40; i++) b[i] = i % 4 == 3 && i < 39 ? ';' : 'x';
            if (defects[d].c == ';') { b[at] = ';'; b[at - 1] = ';'; }
            else b[at] = defects[d].c;
            memcpy(b + 40, " 1", 2);
            ingest_profile p;
            ingest_profile_init(&p);
            err[0] = '\0';
            if (ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, b, 42, err, sizeof err) != INGEST_EINVAL)
                fail_msg("defect %zu at %zu accepted", d, at);
            assert_err_contains(err, defects[d].frag);
            /* the frame named is the one holding the defect (for ";;", the
             * first empty frame) */
            size_t k = 1;
            if (defects[d].c == ';') {
                for (size_t i = 0, start = 0; i < 40; i++) {
                    if (b[i] != ';') continue;
                    if (i == start) break;
                    k++;
                    start = i + 1;
                }
            } else {
                for (size_t i = 0; i < at; i++) k += b[i] == ';';
            }
            char want[64];
            snprintf(want, sizeof want, "frame %zu", k);
            assert_err_contains(err, want);
            ingest_profile_free(&p);
        }
    }
    /* a valid 4-byte UTF-8 character at every offset (across the 16-byte
     * steps of the fast pass) is accepted, the same cut short refused */
    for (size_t at = 0; at + 4 <= 40; at++) {
        for (int cut = 0; cut < 2; cut++) {
            char b[64];
            memset(b, 'x', 40);
            memcpy(b + at, "\xf0\x9f\x94\xa5", 4);
            if (cut) b[at + 3] = 'x';
            memcpy(b + 40, " 1", 2);
            ingest_profile p;
            ingest_profile_init(&p);
            assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, b, 42, err, sizeof err),
                             cut ? INGEST_EINVAL : INGEST_OK);
            ingest_profile_free(&p);
        }
    }
    /* exactly INGEST_MAX_DEPTH one-letter frames (2,047 bytes, within the
     * fast pass) are kept whole; one more loses its root */
    for (int extra = 0; extra < 2; extra++) {
        char b[2100];
        size_t m = 0;
        for (int i = 0; i < INGEST_MAX_DEPTH + extra; i++) { if (i) b[m++] = ';'; b[m++] = i ? 'b' : 'r'; }
        memcpy(b + m, " 1", 2);
        ingest_profile p;
        ingest_profile_init(&p);
        assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, b, m + 2, err, sizeof err), INGEST_OK);
        assert_int_equal(p.truncated_stacks, extra);
        assert_int_equal(p.stacks[0].len, 2 * INGEST_MAX_DEPTH - 1);
        assert_int_equal(p.stacks[0].frames[0], extra ? 'b' : 'r');
        ingest_profile_free(&p);
    }
    /* 1,200 one-letter frames: 2,399 bytes, deeper than kept */
    char deep[2500];
    size_t n = 0;
    for (int i = 0; i < 1200; i++) { if (i) deep[n++] = ';'; deep[n++] = i % 2 ? 'b' : 'a'; }
    memcpy(deep + n, " 5", 2);
    ingest_profile p;
    ingest_profile_init(&p);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, deep, n + 2, err, sizeof err), INGEST_OK);
    assert_int_equal(p.truncated_stacks, 1);
    assert_int_equal(p.stacks[0].len, 2 * INGEST_MAX_DEPTH - 1);
    assert_ptr_equal(p.stacks[0].frames, deep + n - (2 * INGEST_MAX_DEPTH - 1));
    ingest_profile_free(&p);
}

/* ---- depth ------------------------------------------------------------ */

/* Builds "f0;f1;...;f<n-1> 3" into a new buffer. */
static char *deep_stack(int n, size_t *len)
{
    char *b = malloc((size_t)n * 8 + 16);
    size_t o = 0;

    assert_non_null(b);
    for (int i = 0; i < n; i++)
        o += (size_t)sprintf(b + o, i ? ";f%d" : "f%d", i);
    o += (size_t)sprintf(b + o, " 3\n");
    *len = o;
    return b;
}

static void test_depth_truncation(void **state)
{
    (void)state;
    ingest_profile p;
    char err[256] = "";
    size_t len;
    char *b;

    ingest_profile_init(&p);

    b = deep_stack(INGEST_MAX_DEPTH, &len); /* exactly the limit: kept whole */
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, b, len, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(p.n_stacks, 1);
    assert_ptr_equal(p.stacks[0].frames, b);
    assert_int_equal(p.stacks[0].len, len - strlen(" 3\n"));
    assert_int_equal(p.truncated_stacks, 0);
    ingest_profile_free(&p);
    free(b);

    b = deep_stack(INGEST_MAX_DEPTH + 1, &len); /* one more: the root goes */
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, b, len, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(p.n_stacks, 1);
    assert_ptr_equal(p.stacks[0].frames, b + strlen("f0;"));
    assert_int_equal(p.stacks[0].len, len - strlen("f0;") - strlen(" 3\n"));
    assert_memory_equal(p.stacks[0].frames, "f1;f2;", 6);
    assert_memory_equal(p.stacks[0].frames + p.stacks[0].len - 6, ";f1024", 6);
    assert_int_equal(p.stacks[0].count, 3);
    assert_int_equal(p.truncated_stacks, 1);
    ingest_profile_free(&p);
    free(b);

    b = deep_stack(3000, &len); /* much deeper: the 1024 leaf-most frames stay */
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, b, len, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_LINES, "a;b", 3, err, sizeof err),
                     INGEST_OK);
    const char *kept = strstr(b, ";f1976;") + 1;
    assert_ptr_equal(p.stacks[0].frames, kept);
    assert_int_equal(p.stacks[0].len, (size_t)(b + len - strlen(" 3\n") - kept));
    size_t semis = 0;
    for (uint32_t i = 0; i < p.stacks[0].len; i++)
        semis += p.stacks[0].frames[i] == ';';
    assert_int_equal(semis, INGEST_MAX_DEPTH - 1);
    assert_int_equal(p.truncated_stacks, 1);
    assert_int_equal(p.total, 4);
    ingest_profile_free(&p);
    free(b);
}

/* ---- lines ------------------------------------------------------------ */

static void test_lines_format(void **state)
{
    (void)state;
    static const char body[] = "a;b\nc d;e 12\r\n\n \t\n a\t\r\nx;y;z";
    ingest_profile p;
    char err[256] = "";

    ingest_profile_init(&p);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_LINES, body, strlen(body),
                                         err, sizeof err), INGEST_OK);
    assert_int_equal(p.n_stacks, 4);
    assert_stack(&p, 0, "a;b", 1);
    assert_stack(&p, 1, "c d;e 12", 1);
    assert_stack(&p, 2, " a", 1);
    assert_stack(&p, 3, "x;y;z", 1);
    assert_ptr_equal(p.stacks[3].frames, body + strlen(body) - 5);
    assert_int_equal(p.total, 4);

    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_LINES, "a\n\nb;;c\n", 8,
                                         err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "line 3: empty frame 2");
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_LINES, "a;\x80", 3,
                                         err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "line 1: frame 2 is not valid UTF-8");
    assert_int_equal(p.n_stacks, 4);
    ingest_profile_free(&p);
}

/* ---- rollback --------------------------------------------------------- */

static void test_error_rolls_back(void **state)
{
    (void)state;
    static const char good[] = "a;b 2\nc 3\n";
    size_t deep_len;
    char *deep = deep_stack(INGEST_MAX_DEPTH + 5, &deep_len);
    char *bad = malloc(deep_len + 64);
    ingest_profile p;
    char err[256] = "";

    assert_non_null(bad);
    /* a valid truncated stack and many good lines, then an error */
    memcpy(bad, deep, deep_len);
    size_t bad_len = deep_len + (size_t)sprintf(bad + deep_len, "x 1\ny 1\nz;;w 1\n");

    ingest_profile_init(&p);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, good, strlen(good),
                                         err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, bad, bad_len,
                                         err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "line 4: empty frame 2");
    assert_int_equal(p.n_stacks, 2);
    assert_int_equal(p.total, 5);
    assert_int_equal(p.truncated_stacks, 0);
    assert_stack(&p, 0, "a;b", 2);
    assert_stack(&p, 1, "c", 3);
    /* still usable afterwards */
    assert_int_equal(ingest_parse_stacks(&p, INGEST_FORMAT_FOLDED, "d 1", 3, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(p.n_stacks, 3);
    assert_stack(&p, 2, "d", 1);
    assert_int_equal(p.total, 6);
    ingest_profile_free(&p);
    free(bad);
    free(deep);
}

/* ---- labels ----------------------------------------------------------- */

static void test_labels_valid(void **state)
{
    (void)state;
    ingest_profile p;
    char err[256] = "";
    char name[INGEST_MAX_LABEL_NAME + 1], value[INGEST_MAX_LABEL_VALUE + 1];

    memset(name, 'n', INGEST_MAX_LABEL_NAME);
    name[INGEST_MAX_LABEL_NAME] = '\0';
    memset(value, 'v', INGEST_MAX_LABEL_VALUE);
    value[INGEST_MAX_LABEL_VALUE] = '\0';

    ingest_profile_init(&p);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_label_add(&p, "_x.y_9", "h\xc3\xa9llo w\xc3\xb6rld", err, sizeof err),
                     INGEST_OK);
    assert_int_equal(ingest_label_add(&p, "Z", "1", err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_label_add(&p, name, value, err, sizeof err), INGEST_OK);
    assert_int_equal(p.n_labels, 4);
    assert_string_equal(ingest_label_get(&p, "service"), "shop");
    assert_string_equal(ingest_label_get(&p, "_x.y_9"), "h\xc3\xa9llo w\xc3\xb6rld");
    assert_string_equal(ingest_label_get(&p, name), value);
    assert_null(ingest_label_get(&p, "Service"));
    assert_null(ingest_label_get(&p, "serv"));
    ingest_profile_free(&p);
    assert_int_equal(p.n_labels, 0);
}

static void test_labels_copied(void **state)
{
    (void)state;
    ingest_profile p;
    char err[256] = "", name[8] = "env", value[8] = "prod";

    ingest_profile_init(&p);
    assert_int_equal(ingest_label_add(&p, name, value, err, sizeof err), INGEST_OK);
    strcpy(name, "xxx");
    strcpy(value, "yyy");
    assert_string_equal(ingest_label_get(&p, "env"), "prod");
    ingest_profile_free(&p);
}

struct bad_label {
    const char *name, *value, *frag;
};

static void test_labels_invalid(void **state)
{
    (void)state;
    char long_name[INGEST_MAX_LABEL_NAME + 2], long_value[INGEST_MAX_LABEL_VALUE + 2];
    memset(long_name, 'n', INGEST_MAX_LABEL_NAME + 1);
    long_name[INGEST_MAX_LABEL_NAME + 1] = '\0';
    memset(long_value, 'v', INGEST_MAX_LABEL_VALUE + 1);
    long_value[INGEST_MAX_LABEL_VALUE + 1] = '\0';

    const struct bad_label rows[] = {
        { "x-y", "1", "label name 'x-y' must match [a-zA-Z_][a-zA-Z0-9_.]*" },
        { "", "1", "label name '' must match" },
        { "9lives", "1", "label name '9lives' must match" },
        { ".a", "1", "label name '.a' must match" },
        { "a b", "1", "label name 'a b' must match" },
        { "caf\xc3\xa9", "1", "label name 'caf\xc3\xa9' must match" },
        { "a\x01", "1", "label name 'a?' must match" },
        { long_name, "1", "is longer than 128 bytes" },
        { "env", "", "label 'env' has an empty value" },
        { "env", "\xff", "label 'env' value is not valid UTF-8" },
        { "env", "a\xed\xbf\xbf", "label 'env' value is not valid UTF-8" },
        { "env", long_value, "label 'env' value is longer than 1024 bytes" },
        { "service", "other", "label 'service' given twice" },
    };
    ingest_profile p;
    char err[256] = "";

    ingest_profile_init(&p);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
        err[0] = '\0';
        ingest_status st = ingest_label_add(&p, rows[i].name, rows[i].value, err, sizeof err);
        if (st != INGEST_EINVAL)
            fail_msg("row %zu: status %d, expected EINVAL (%s)", i, (int)st, rows[i].frag);
        assert_err_contains(err, rows[i].frag);
        assert_int_equal(p.n_labels, 1);
    }
    assert_string_equal(ingest_label_get(&p, "service"), "shop");
    /* the long name is cut in the message */
    ingest_label_add(&p, long_name, "1", err, sizeof err);
    assert_err_contains(err, "...' is longer");
    ingest_profile_free(&p);
}

static void test_labels_limit(void **state)
{
    (void)state;
    ingest_profile p;
    char err[256] = "", name[16];

    ingest_profile_init(&p);
    for (int i = 0; i < INGEST_MAX_LABELS; i++) {
        sprintf(name, "l%d", i);
        assert_int_equal(ingest_label_add(&p, name, "v", err, sizeof err), INGEST_OK);
    }
    assert_int_equal(ingest_label_add(&p, "one_more", "v", err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "more than 32 labels");
    assert_int_equal(p.n_labels, INGEST_MAX_LABELS);
    ingest_profile_free(&p);
}

/* ---- finish ----------------------------------------------------------- */

static void ready_profile(ingest_profile *p, const char *body)
{
    char err[256] = "";

    ingest_profile_init(p);
    p->from_ms = 1000;
    p->until_ms = 11000;
    assert_int_equal(ingest_parse_stacks(p, INGEST_FORMAT_FOLDED, body, strlen(body),
                                         err, sizeof err), INGEST_OK);
}

static void test_finish_defaults_and_sorts(void **state)
{
    (void)state;
    ingest_profile p;
    char err[256] = "";

    ready_profile(&p, "a;b 3\n");
    assert_int_equal(ingest_label_add(&p, "zone", "eu", err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_label_add(&p, "instance", "i-1", err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_OK);
    assert_string_equal(p.unit, "samples");
    assert_int_equal(p.n_labels, 4);
    assert_string_equal(p.labels[0].name, "instance");
    assert_string_equal(p.labels[1].name, "service");
    assert_string_equal(p.labels[2].name, "type");
    assert_string_equal(p.labels[2].value, "cpu");
    assert_string_equal(p.labels[3].name, "zone");
    ingest_profile_free(&p);

    /* a given type and unit are kept */
    ready_profile(&p, "a;b 3\n");
    strcpy(p.unit, "bytes");
    assert_int_equal(ingest_label_add(&p, "type", "alloc_space", err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_OK);
    assert_string_equal(p.unit, "bytes");
    assert_string_equal(ingest_label_get(&p, "type"), "alloc_space");
    assert_string_equal(p.labels[0].name, "service");
    assert_string_equal(p.labels[1].name, "type");
    ingest_profile_free(&p);
}

static void test_finish_errors(void **state)
{
    (void)state;
    ingest_profile p;
    char err[256] = "";

    ready_profile(&p, "a 1\n");
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "missing label 'service' (the application's name)");
    assert_int_equal(p.n_labels, 0);
    assert_string_equal(p.unit, "");
    ingest_profile_free(&p);

    ready_profile(&p, "a 1\n");
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    p.until_ms = p.from_ms;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "from must be before until");
    p.until_ms = p.from_ms - 1;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "from must be before until");
    assert_int_equal(p.n_labels, 1); /* no type added on failure */
    ingest_profile_free(&p);

    static const double bad_rates[] = { -1, 1e10 };
    for (size_t i = 0; i < ARRAY_LEN(bad_rates); i++) {
        ready_profile(&p, "a 1\n");
        assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
        p.rate = bad_rates[i];
        assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_EINVAL);
        assert_err_contains(err, "rate");
        ingest_profile_free(&p);
    }
    ready_profile(&p, "a 1\n");
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    p.rate = INFINITY;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "rate must be a positive number of Hz");
    p.rate = NAN;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "rate must be a positive number of Hz");
    ingest_profile_free(&p);
}

static void test_finish_weight_overflow(void **state)
{
    (void)state;
    ingest_profile p;
    char err[256] = "", body[160];
    /* at 100 Hz a sample weighs 1e7 ns: the largest count is MAX / 1e7 */
    uint64_t max_count = INGEST_MAX_VALUE / 10000000;

    sprintf(body, "a 1\nb %llu\n", (unsigned long long)max_count);
    ready_profile(&p, body);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    p.rate = 100;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_OK);
    assert_string_equal(p.unit, "samples"); /* not renamed */
    ingest_profile_free(&p);

    sprintf(body, "a 1\nb %llu\n", (unsigned long long)max_count + 1);
    ready_profile(&p, body);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    p.rate = 100;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_EINVAL);
    sprintf(body, "a count of %llu at rate 100 Hz exceeds the largest exact value",
            (unsigned long long)max_count + 1);
    assert_err_contains(err, body);
    assert_int_equal(p.n_labels, 1);
    /* without a rate, or with another unit, counts are not weighted */
    p.rate = 0;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_OK);
    ingest_profile_free(&p);

    sprintf(body, "b %llu\n", (unsigned long long)max_count + 1);
    ready_profile(&p, body);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    strcpy(p.unit, "bytes");
    p.rate = 100;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_OK);
    ingest_profile_free(&p);

    /* 97 Hz: 1e9/97 = 10309278.35 rounds to 10309278 ns per sample */
    uint64_t max97 = INGEST_MAX_VALUE / 10309278;
    sprintf(body, "b %llu\n", (unsigned long long)max97);
    ready_profile(&p, body);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    p.rate = 97;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_OK);
    ingest_profile_free(&p);
    sprintf(body, "b %llu\n", (unsigned long long)max97 + 1);
    ready_profile(&p, body);
    assert_int_equal(ingest_label_add(&p, "service", "shop", err, sizeof err), INGEST_OK);
    p.rate = 97;
    assert_int_equal(ingest_profile_finish(&p, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "at rate 97 Hz exceeds the largest exact value");
    ingest_profile_free(&p);
}

/* ---- Pyroscope names -------------------------------------------------- */

struct good_name {
    const char *name;
    const char *labels[8][2]; /* expected (name, value) pairs in order added */
};

static const struct good_name good_names[] = {
    { "myapp", { { "service", "myapp" }, { "type", "cpu" } } },
    { "myapp.cpu", { { "service", "myapp" }, { "type", "cpu" } } },
    { "my.app.wall", { { "service", "my.app" }, { "type", "wall" } } },
    { "my.app.v2{}", { { "service", "my.app.v2" }, { "type", "cpu" } } },
    { "svc.alloc_space{env=prod}",
      { { "service", "svc" }, { "type", "alloc_space" }, { "env", "prod" } } },
    { "svc.inuse_objects{ env = prod , region=eu-west-1 }",
      { { "service", "svc" }, { "type", "inuse_objects" }, { "env", "prod" },
        { "region", "eu-west-1" } } },
    { "svc{a=b,}", { { "service", "svc" }, { "type", "cpu" }, { "a", "b" } } },
    { "svc{,a=b,,c=x=y}",
      { { "service", "svc" }, { "type", "cpu" }, { "a", "b" }, { "c", "x=y" } } },
    { "svc.lock_duration{host=h\xc3\xa9}",
      { { "service", "svc" }, { "type", "lock_duration" }, { "host", "h\xc3\xa9" } } },
    { "svc.goroutines", { { "service", "svc" }, { "type", "goroutines" } } },
    { "svc.mutex_count", { { "service", "svc" }, { "type", "mutex_count" } } },
    { "svc.block_duration", { { "service", "svc" }, { "type", "block_duration" } } },
    { "svc.cpux", { { "service", "svc.cpux" }, { "type", "cpu" } } },
    { "svc.", { { "service", "svc." }, { "type", "cpu" } } },
};

static void test_pyroscope_valid(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(good_names); i++) {
        const struct good_name *g = &good_names[i];
        ingest_profile p;
        char err[256] = "";
        int n = 0;

        ingest_profile_init(&p);
        ingest_status st = ingest_pyroscope_name(&p, g->name, err, sizeof err);
        if (st != INGEST_OK)
            fail_msg("'%s': status %d: %s", g->name, (int)st, err);
        while (n < 8 && g->labels[n][0])
            n++;
        assert_int_equal(p.n_labels, n);
        for (int k = 0; k < n; k++) {
            assert_string_equal(p.labels[k].name, g->labels[k][0]);
            assert_string_equal(p.labels[k].value, g->labels[k][1]);
        }
        ingest_profile_free(&p);
    }
}

struct bad_name {
    const char *name, *frag;
};

static const struct bad_name bad_names[] = {
    { "", "name '': empty application name" },
    { ".cpu", "name '.cpu': empty application name" },
    { "{env=prod}", "name '{env=prod}': empty application name" },
    { "  .wall{}", "empty application name" },
    { "svc{env=prod", "name 'svc{env=prod': missing '}'" },
    { "svc{a=b}x", "name 'svc{a=b}x': unexpected text after '}'" },
    { "svc}", "name 'svc}': '}' without '{'" },
    { "svc{foo}", "name 'svc{foo}': label 'foo' has no '='" },
    { "svc{a=b, foo ,c=d}", "label 'foo' has no '='" },
    { "svc{=b}", "label name '' must match" },
    { "svc{a-b=c}", "label name 'a-b' must match" },
    { "svc{env=}", "name 'svc{env=}': label 'env' has an empty value" },
    { "svc{env=a,env=b}", "label 'env' given twice" },
    { "svc{service=x}", "label 'service' given twice" },
    { "svc.cpu{type=wall}", "label 'type' given twice" },
    { "svc{v=\xff}", "label 'v' value is not valid UTF-8" },
    { "sv\xff", "label 'service' value is not valid UTF-8" },
};

static void test_pyroscope_invalid(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(bad_names); i++) {
        ingest_profile p;
        char err[256] = "";

        ingest_profile_init(&p);
        ingest_status st = ingest_pyroscope_name(&p, bad_names[i].name, err, sizeof err);
        if (st != INGEST_EINVAL)
            fail_msg("'%s': status %d, expected EINVAL", bad_names[i].name, (int)st);
        assert_err_contains(err, bad_names[i].frag);
        assert_int_equal(p.n_labels, 0); /* labels added before the error are gone */
        ingest_profile_free(&p);
    }
}

static void test_pyroscope_keeps_earlier_labels(void **state)
{
    (void)state;
    ingest_profile p;
    char err[256] = "";

    ingest_profile_init(&p);
    assert_int_equal(ingest_label_add(&p, "node", "n1", err, sizeof err), INGEST_OK);
    assert_int_equal(ingest_pyroscope_name(&p, "svc{node=n2}", err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "label 'node' given twice");
    assert_int_equal(p.n_labels, 1);
    assert_string_equal(ingest_label_get(&p, "node"), "n1");
    assert_int_equal(ingest_pyroscope_name(&p, "svc.wall{zone=a}", err, sizeof err), INGEST_OK);
    assert_int_equal(p.n_labels, 4);
    assert_string_equal(ingest_label_get(&p, "type"), "wall");
    ingest_profile_free(&p);
}

static void test_pyroscope_long_name_quoted(void **state)
{
    (void)state;
    char name[300];
    ingest_profile p;
    char err[256] = "";

    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    name[0] = '{';
    ingest_profile_init(&p);
    assert_int_equal(ingest_pyroscope_name(&p, name, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "...': missing '}'");
    assert_true(strlen(err) < 120);
    ingest_profile_free(&p);
}

static void test_pyroscope_is_type(void **state)
{
    (void)state;
    static const char *const yes[] = {
        "cpu", "itimer", "wall", "alloc_objects", "alloc_space", "inuse_objects",
        "inuse_space", "goroutines", "mutex_count", "mutex_duration", "block_count",
        "block_duration", "lock_count", "lock_duration",
    };
    static const char *const no[] = { "", "CPU", "cp", "cpux", "heap", "wal" };

    for (size_t i = 0; i < ARRAY_LEN(yes); i++)
        assert_true(ingest_pyroscope_is_type(yes[i], strlen(yes[i])));
    for (size_t i = 0; i < ARRAY_LEN(no); i++)
        assert_false(ingest_pyroscope_is_type(no[i], strlen(no[i])));
    assert_true(ingest_pyroscope_is_type("cpu{x}", 3));
    assert_false(ingest_pyroscope_is_type("cpu", 2));
}

/* ---- gunzip ----------------------------------------------------------- */

/* Compresses data with zlib; windowBits 15+16 makes gzip, 15 makes zlib. */
static unsigned char *compress_with(const void *data, size_t len, int window_bits,
                                    size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, (uLong)len) + 64;
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

static unsigned char *gz(const void *data, size_t len, size_t *out_len)
{
    return compress_with(data, len, 15 + 16, out_len);
}

static void test_gunzip_round_trip(void **state)
{
    (void)state;
    static const char text[] = "main;run;work 12\nmain;idle 3\n";
    size_t zlen, out_len = 99;
    unsigned char *z = gz(text, strlen(text), &zlen);
    char *out = NULL, err[256] = "";

    assert_int_equal(ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(out_len, strlen(text));
    assert_memory_equal(out, text, out_len);
    free(out);
    /* exactly max_out bytes fit; one byte less does not */
    assert_int_equal(ingest_gunzip(z, zlen, strlen(text), &out, &out_len, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(out_len, strlen(text));
    free(out);
    assert_int_equal(ingest_gunzip(z, zlen, strlen(text) - 1, &out, &out_len, err, sizeof err),
                     INGEST_ETOOBIG);
    assert_null(out);
    assert_string_equal(err, "decompressed body exceeds 28 bytes");
    free(z);

    /* an empty member gives an empty body */
    z = gz("", 0, &zlen);
    assert_int_equal(ingest_gunzip(z, zlen, 0, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, 0);
    assert_non_null(out);
    free(out);
    free(z);

    /* zlib-wrapped deflate is recognised too */
    z = compress_with(text, strlen(text), 15, &zlen);
    assert_int_equal(ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_OK);
    assert_memory_equal(out, text, strlen(text));
    free(out);
    free(z);
}

static void test_gunzip_large(void **state)
{
    (void)state;
    size_t n = 3 << 20, zlen, out_len;
    char *data = malloc(n), *out = NULL, err[256] = "";

    assert_non_null(data);
    for (size_t i = 0; i < n; i++) { /* compressible but not trivial */
        data[i] = "abc;def \n0123"[(i * 7 + i / 11 + i / 1237) % 13];
    }
    unsigned char *z = gz(data, n, &zlen);
    assert_int_equal(ingest_gunzip(z, zlen, n, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, n);
    assert_memory_equal(out, data, n);
    free(out);
    free(z);
    free(data);
}

static void test_gunzip_concatenated(void **state)
{
    (void)state;
    size_t la, lb, out_len;
    unsigned char *a = gz("first;member 1\n", 15, &la);
    unsigned char *b = gz("second;member 2\n", 16, &lb);
    unsigned char *both = malloc(la + lb + la);
    char *out = NULL, err[256] = "";

    assert_non_null(both);
    memcpy(both, a, la);
    memcpy(both + la, b, lb);
    memcpy(both + la + lb, a, la);
    assert_int_equal(ingest_gunzip(both, la + lb + la, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_OK);
    assert_int_equal(out_len, 15 + 16 + 15);
    assert_memory_equal(out, "first;member 1\nsecond;member 2\nfirst;member 1\n", out_len);
    free(out);
    /* the limit counts all members together */
    assert_int_equal(ingest_gunzip(both, la + lb + la, 40, &out, &out_len, err, sizeof err),
                     INGEST_ETOOBIG);
    /* garbage after a member is refused */
    memcpy(both + la, "garbage!", 8);
    assert_int_equal(ingest_gunzip(both, la + 8, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_EINVAL);
    assert_err_contains(err, "body is not valid gzip: ");
    assert_null(out);
    free(both);
    free(a);
    free(b);
}

static void test_gunzip_invalid(void **state)
{
    (void)state;
    static const char text[] = "a;b;c 1\na;b 2\n";
    size_t zlen, out_len = 7;
    unsigned char *z = gz(text, strlen(text), &zlen);
    char *out = NULL, err[256] = "";

    assert_int_equal(ingest_gunzip("hello world, not gzip", 21, 1 << 20, &out, &out_len, err,
                                   sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: incorrect header check");
    assert_null(out);
    assert_int_equal(out_len, 0);

    assert_int_equal(ingest_gunzip("", 0, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: the body is empty");
    assert_null(out);
    assert_int_equal(ingest_gunzip(NULL, 0, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: the body is empty");

    /* truncated at every length: never accepted, never crashes */
    for (size_t cut = 1; cut < zlen; cut++) {
        err[0] = '\0';
        assert_int_equal(ingest_gunzip(z, cut, 1 << 20, &out, &out_len, err, sizeof err),
                         INGEST_EINVAL);
        assert_err_contains(err, "body is not valid gzip: ");
        assert_null(out);
    }
    assert_int_equal(ingest_gunzip(z, zlen - 4, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: unexpected end of data (truncated?)");

    /* a damaged CRC */
    z[zlen - 8] ^= 0xFF;
    assert_int_equal(ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: incorrect data check");
    free(z);
}

static void test_gunzip_bomb(void **state)
{
    (void)state;
    size_t n = 10 << 20, zlen, out_len = 5;
    char *zeros = calloc(1, n), *out = NULL, err[256] = "";

    assert_non_null(zeros);
    unsigned char *z = gz(zeros, n, &zlen);
    assert_true(zlen < 64 * 1024);
    assert_int_equal(ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err),
                     INGEST_ETOOBIG);
    assert_string_equal(err, "decompressed body exceeds 1048576 bytes");
    assert_null(out);
    assert_int_equal(out_len, 0);
    assert_int_equal(ingest_gunzip(z, zlen, n, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, n);
    assert_memory_equal(out, zeros, n);
    free(out);
    free(z);
    free(zeros);
}

/* The gzip header's optional fields, as zlib writes them: gz with name,
 * comment, extra field and header CRC. */
static unsigned char *gz_fields(const void *data, size_t len, size_t *out_len)
{
    z_stream z;
    gz_header h;
    static unsigned char extra[] = "\x41\x70\x04\x00xyzw"; /* subfield "Ap", 4 bytes */
    memset(&z, 0, sizeof z);
    memset(&h, 0, sizeof h);
    h.name = (Bytef *)"profile.folded";
    h.comment = (Bytef *)"a comment";
    h.extra = extra;
    h.extra_len = 8;
    h.hcrc = 1;
    h.os = 3;
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    assert_int_equal(deflateSetHeader(&z, &h), Z_OK);
    size_t cap = deflateBound(&z, (uLong)len) + 64;
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* Concatenates two buffers into a new one. */
static unsigned char *concat(const void *a, size_t la, const void *b, size_t lb)
{
    unsigned char *both = malloc(la + lb);
    assert_non_null(both);
    memcpy(both, a, la);
    memcpy(both + la, b, lb);
    return both;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Lowers this process's address-space limit to what it uses now plus
 * `extra` bytes, so that an allocation beyond that fails; answers 0, or -1
 * where that cannot be done (under AddressSanitizer, whose shadow memory
 * is most of the address space).  Undone by as_limit_restore. */
static struct rlimit as_saved;
static int as_limit(size_t extra)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)extra;
    return -1;
#else
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long kb = 0;
    assert_non_null(f);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %lu kB", &kb) == 1)
            break;
    fclose(f);
    assert_true(kb > 0);
    assert_int_equal(getrlimit(RLIMIT_AS, &as_saved), 0);
    struct rlimit rl = as_saved;
    rl.rlim_cur = (rlim_t)kb * 1024 + extra;
    if (as_saved.rlim_max != RLIM_INFINITY && rl.rlim_cur > as_saved.rlim_max)
        return -1;
    assert_int_equal(setrlimit(RLIMIT_AS, &rl), 0);
    return 0;
#endif
}

static void as_limit_restore(void)
{
    assert_int_equal(setrlimit(RLIMIT_AS, &as_saved), 0);
}

/* Optional header fields (name, comment, extra, header CRC) are skipped and
 * the header CRC checked; reserved flags and other methods are refused. */
static void test_gunzip_header_fields(void **state)
{
    (void)state;
    static const char text[] = "main;fields 7\n";
    size_t zlen, plen, out_len;
    unsigned char *z = gz_fields(text, strlen(text), &zlen);
    unsigned char *plain = gz(text, strlen(text), &plen);
    char *out = NULL, err[256] = "";

    assert_int_equal(z[3], 0x1e); /* FHCRC | FEXTRA | FNAME | FCOMMENT */
    assert_int_equal(ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, strlen(text));
    assert_memory_equal(out, text, out_len);
    free(out);

    /* a member with fields after one without, and the other way round */
    unsigned char *both = concat(plain, plen, z, zlen);
    assert_int_equal(ingest_gunzip(both, plen + zlen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, 2 * strlen(text));
    free(out);
    free(both);
    both = concat(z, zlen, plain, plen);
    assert_int_equal(ingest_gunzip(both, plen + zlen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, 2 * strlen(text));
    free(out);
    free(both);

    /* cut inside the name, the comment, the extra field, the header CRC */
    size_t hdr = 10 + 2 + 8 + sizeof "profile.folded" + sizeof "a comment" + 2;
    for (size_t cut = 1; cut < hdr; cut++) {
        assert_int_equal(ingest_gunzip(z, cut, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
        assert_string_equal(err, "body is not valid gzip: unexpected end of data (truncated?)");
        assert_null(out);
    }

    /* a damaged header CRC (the two bytes before the DEFLATE data) */
    z[hdr - 1] ^= 0x01;
    assert_int_equal(ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: header crc mismatch");
    z[hdr - 1] ^= 0x01;
    /* a damaged name is caught by the header CRC too */
    z[12 + 8] ^= 0x20;
    assert_int_equal(ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: header crc mismatch");
    z[12 + 8] ^= 0x20;

    /* reserved flags, and a method other than deflate */
    plain[3] |= 0x20;
    assert_int_equal(ingest_gunzip(plain, plen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: unknown header flags set");
    plain[3] &= (unsigned char)~0x20;
    plain[2] = 7;
    assert_int_equal(ingest_gunzip(plain, plen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: unknown compression method");
    assert_null(out);
    free(plain);
    free(z);
}

/* The trailer's ISIZE is only a first guess at the size: a member whose
 * ISIZE is wrong is refused whichever way it lies, and the guess never
 * makes an allocation beyond max_out, nor beyond what the input can hold;
 * several members, where ISIZE is only the last one's, come out whole. */
static void test_gunzip_isize(void **state)
{
    (void)state;
    static const char text[] = "main;isize;lies 3\nmain;isize 1\n";
    size_t tlen = strlen(text), zlen, out_len = 9;
    unsigned char *z = gz(text, tlen, &zlen);
    char *out = NULL, err[256] = "";
    const uint32_t lies[] = { 0, 1, (uint32_t)tlen - 1, (uint32_t)tlen + 1, 1u << 20, 0xFFFFFFFFu };

    assert_int_equal(z[zlen - 4], tlen); /* ISIZE, little-endian */
    for (size_t i = 0; i < ARRAY_LEN(lies); i++) {
        put_le32(z + zlen - 4, lies[i]);
        assert_int_equal(ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
        assert_string_equal(err, "body is not valid gzip: incorrect length check");
        assert_null(out);
        assert_int_equal(out_len, 0);
    }

    /* A 4 GiB ISIZE on a small body, with a limit far beyond the address
     * space left: the guess is held to what the input can inflate to. */
    put_le32(z + zlen - 4, 0xFFFFFFF0u);
    if (as_limit((size_t)256 << 20) == 0) {
        ingest_status s = ingest_gunzip(z, zlen, (size_t)1 << 40, &out, &out_len, err, sizeof err);
        as_limit_restore();
        assert_int_equal(s, INGEST_EINVAL);
        assert_string_equal(err, "body is not valid gzip: incorrect length check");
    }
    free(z);

    /* An incompressible 1 MiB body whose ISIZE says 4 GiB: 1032 times the
     * input is 1 GiB, so here it is max_out (2 MiB) that holds the guess. */
    size_t n = 1 << 20;
    unsigned char *noise = malloc(n);
    assert_non_null(noise);
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        noise[i] = (unsigned char)(x >> 56);
    }
    z = gz(noise, n, &zlen);
    assert_true(zlen > n);
    put_le32(z + zlen - 4, 0xFFFFFFF0u);
    if (as_limit((size_t)256 << 20) == 0) {
        ingest_status s = ingest_gunzip(z, zlen, (size_t)2 << 20, &out, &out_len, err, sizeof err);
        as_limit_restore();
        assert_int_equal(s, INGEST_EINVAL);
        assert_string_equal(err, "body is not valid gzip: incorrect length check");
    }
    put_le32(z + zlen - 4, (uint32_t)n); /* put right, it is accepted */
    assert_int_equal(ingest_gunzip(z, zlen, n, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, n);
    assert_memory_equal(out, noise, n);
    free(out);
    free(z);
    free(noise);

    /* 3 MiB then a 6-byte member: the guess (6 bytes) is far too small */
    size_t big = 3 << 20, lb, ls;
    char *data = malloc(big + 6);
    assert_non_null(data);
    for (size_t i = 0; i < big; i++)
        data[i] = "abc;def \n0123"[(i * 7 + i / 11 + i / 1237) % 13];
    memcpy(data + big, "x;y 1\n", 6);
    unsigned char *zb = gz(data, big, &lb), *zs = gz(data + big, 6, &ls);
    unsigned char *both = concat(zb, lb, zs, ls);
    assert_int_equal(ingest_gunzip(both, lb + ls, (size_t)64 << 20, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, big + 6);
    assert_memory_equal(out, data, big + 6);
    free(out);
    assert_int_equal(ingest_gunzip(both, lb + ls, big + 6, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, big + 6);
    free(out);
    assert_int_equal(ingest_gunzip(both, lb + ls, big + 5, &out, &out_len, err, sizeof err), INGEST_ETOOBIG);
    assert_null(out);
    free(both);

    /* the guess (6) one byte short of max_out (7), all of which is needed */
    size_t lo;
    unsigned char *one = gz(data + big + 1, 1, &lo);
    both = concat(one, lo, zs, ls);
    assert_int_equal(ingest_gunzip(both, lo + ls, 7, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, 7);
    assert_memory_equal(out, ";x;y 1\n", 7);
    free(out);
    assert_int_equal(ingest_gunzip(both, lo + ls, 6, &out, &out_len, err, sizeof err), INGEST_ETOOBIG);
    assert_null(out);
    free(both);
    free(one);

    /* the other way round: the guess (3 MiB) is far too big for the first */
    both = concat(zs, ls, zb, lb);
    assert_int_equal(ingest_gunzip(both, lb + ls, (size_t)64 << 20, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, big + 6);
    assert_memory_equal(out, data + big, 6);
    assert_memory_equal(out + 6, data, big);
    free(out);
    assert_int_equal(ingest_gunzip(both, lb + ls, big + 5, &out, &out_len, err, sizeof err), INGEST_ETOOBIG);
    assert_null(out);
    free(both);
    free(zb);
    free(zs);
    free(data);
}

/* Damage anywhere is an error that says the body is not valid gzip, in
 * zlib's words where a header or trailer shows it. */
static void test_gunzip_corrupt(void **state)
{
    (void)state;
    size_t n = 200000, zlen, out_len;
    char *data = malloc(n), *out = NULL, err[256] = "";
    assert_non_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = "main;a;b;c 1\nmain;d 22\n"[(i * 13 + i / 97) % 23];
    unsigned char *z = gz(data, n, &zlen);

    /* the DEFLATE data damaged in many places: never accepted */
    size_t refused = 0;
    for (size_t at = 10; at < zlen - 8; at += 37) {
        z[at] ^= 0x55;
        ingest_status s = ingest_gunzip(z, zlen, 1 << 20, &out, &out_len, err, sizeof err);
        z[at] ^= 0x55;
        assert_int_equal(s, INGEST_EINVAL);
        assert_err_contains(err, "body is not valid gzip: ");
        assert_null(out);
        refused++;
    }
    assert_true(refused > 10);

    /* a second member cut short, and one stray byte after a member */
    unsigned char *two = concat(z, zlen, z, zlen);
    for (size_t cut = zlen + 1; cut < 2 * zlen; cut += 101) {
        assert_int_equal(ingest_gunzip(two, cut, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
        assert_err_contains(err, "body is not valid gzip: ");
        assert_null(out);
    }
    assert_int_equal(ingest_gunzip(two, zlen + 1, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: unexpected end of data (truncated?)");
    assert_int_equal(ingest_gunzip(two, 2 * zlen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, 2 * n);
    free(out);
    /* the second member's CRC damaged */
    two[2 * zlen - 8] ^= 0x01;
    assert_int_equal(ingest_gunzip(two, 2 * zlen, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: incorrect data check");
    assert_null(out);
    free(two);

    /* zlib-wrapped: Adler-32 checked, a cut trailer said, and zlib after
     * gzip accepted as zlib's auto-detection did */
    size_t zz;
    unsigned char *zl = compress_with(data, n, 15, &zz);
    zl[zz - 1] ^= 0x01;
    assert_int_equal(ingest_gunzip(zl, zz, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: incorrect data check");
    zl[zz - 1] ^= 0x01;
    assert_int_equal(ingest_gunzip(zl, zz - 2, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_string_equal(err, "body is not valid gzip: unexpected end of data (truncated?)");
    two = concat(z, zlen, zl, zz);
    assert_int_equal(ingest_gunzip(two, zlen + zz, 1 << 20, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, 2 * n);
    assert_memory_equal(out + n, data, n);
    free(out);
    free(two);
    /* a zlib header that asks for a preset dictionary */
    unsigned flg = (zl[1] & 0xc0u) | 0x20u; /* FLEVEL kept, FDICT set, FCHECK made again */
    zl[1] = (unsigned char)(flg | (31 - (zl[0] << 8 | flg) % 31) % 31);
    assert_int_equal(ingest_gunzip(zl, zz, 1 << 20, &out, &out_len, err, sizeof err), INGEST_EINVAL);
    assert_err_contains(err, "body is not valid gzip: ");
    free(zl);
    free(z);
    free(data);
}

/* A bomb spread over many members (each 1 MiB of zeros, ~1 KB gzip'd) is
 * refused within max_out bytes of memory, whatever its ISIZEs say. */
static void test_gunzip_bomb_members(void **state)
{
    (void)state;
    size_t n = 1 << 20, zlen, out_len, members = 64;
    char *zeros = calloc(1, n), *out = NULL, err[256] = "";
    assert_non_null(zeros);
    unsigned char *z = gz(zeros, n, &zlen);
    unsigned char *bomb = malloc(zlen * members);
    assert_non_null(bomb);
    for (size_t i = 0; i < members; i++)
        memcpy(bomb + i * zlen, z, zlen);
    const uint32_t isizes[] = { (uint32_t)n, 0, 0xFFFFFFFFu };
    for (size_t i = 0; i < ARRAY_LEN(isizes); i++) {
        put_le32(bomb + zlen * members - 4, isizes[i]);
        int limited = as_limit((size_t)24 << 20) == 0; /* 64 MiB would not fit */
        ingest_status s = ingest_gunzip(bomb, zlen * members, (size_t)4 << 20, &out, &out_len, err, sizeof err);
        if (limited)
            as_limit_restore();
        assert_int_equal(s, INGEST_ETOOBIG);
        assert_string_equal(err, "decompressed body exceeds 4194304 bytes");
        assert_null(out);
    }
    put_le32(bomb + zlen * members - 4, (uint32_t)n);
    assert_int_equal(ingest_gunzip(bomb, zlen * members, n * members, &out, &out_len, err, sizeof err), INGEST_OK);
    assert_int_equal(out_len, n * members);
    free(out);
    free(bomb);
    free(z);
    free(zeros);
}

/* ---- UTF-8 ------------------------------------------------------------ */

struct utf8_case {
    const char *s;
    size_t len; /* 0: strlen(s) */
    int valid;
};

static const struct utf8_case utf8_cases[] = {
    { "", 0, 1 },
    { "plain ascii, longer than eight bytes for the fast path", 0, 1 },
    { "\0", 1, 1 },
    { "\x7f", 0, 1 },
    { "\xc2\x80", 0, 1 },                    /* U+0080 */
    { "\xdf\xbf", 0, 1 },                    /* U+07FF */
    { "\xe0\xa0\x80", 0, 1 },                /* U+0800 */
    { "\xed\x9f\xbf", 0, 1 },                /* U+D7FF */
    { "\xee\x80\x80", 0, 1 },                /* U+E000 */
    { "\xef\xbf\xbf", 0, 1 },                /* U+FFFF */
    { "\xf0\x90\x80\x80", 0, 1 },            /* U+10000 */
    { "\xf4\x8f\xbf\xbf", 0, 1 },            /* U+10FFFF */
    { "abcdefg\xc3\xa9hijklmnop\xe2\x82\xac", 0, 1 },
    { "\x80", 0, 0 },                        /* stray continuation */
    { "\xbf", 0, 0 },
    { "\xc0\x80", 0, 0 },                    /* overlong NUL */
    { "\xc1\xbf", 0, 0 },                    /* overlong */
    { "\xe0\x80\x80", 0, 0 },                /* overlong */
    { "\xe0\x9f\xbf", 0, 0 },                /* overlong */
    { "\xf0\x80\x80\x80", 0, 0 },            /* overlong */
    { "\xf0\x8f\xbf\xbf", 0, 0 },            /* overlong */
    { "\xed\xa0\x80", 0, 0 },                /* U+D800 surrogate */
    { "\xed\xbf\xbf", 0, 0 },                /* U+DFFF surrogate */
    { "\xf4\x90\x80\x80", 0, 0 },            /* U+110000 */
    { "\xf5\x80\x80\x80", 0, 0 },
    { "\xff", 0, 0 },
    { "\xfe", 0, 0 },
    { "\xc3", 0, 0 },                        /* truncated */
    { "\xe2\x82", 0, 0 },
    { "\xf0\x9f\x98", 0, 0 },
    { "\xc3\x28", 0, 0 },                    /* bad continuation */
    { "\xe2\x28\xac", 0, 0 },
    { "\xe2\x82\x28", 0, 0 },
    { "\xf0\x9f\x98\x28", 0, 0 },
    { "eight by\xff", 0, 0 },                /* after a fast-path word */
    { "abcdefghijklmnop\xc3", 0, 0 },
    { "\xc3\xa9" "abcdefghijklmn\x80", 0, 0 },
};

static void test_utf8(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(utf8_cases); i++) {
        const struct utf8_case *c = &utf8_cases[i];
        size_t len = c->len ? c->len : strlen(c->s);
        if (utf8_valid(c->s, len) != c->valid)
            fail_msg("case %zu: expected %s", i, c->valid ? "valid" : "invalid");
    }
    /* a bad byte is found at every position around the word boundaries */
    char buf[40];
    for (size_t pos = 0; pos < sizeof buf; pos++) {
        memset(buf, 'a', sizeof buf);
        assert_true(utf8_valid(buf, sizeof buf));
        buf[pos] = (char)0x80;
        if (utf8_valid(buf, sizeof buf))
            fail_msg("0x80 at %zu not caught", pos);
        /* the length is respected: bytes past it are not read */
        assert_true(utf8_valid(buf, pos));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_parse),
        cmocka_unit_test(test_folded_valid),
        cmocka_unit_test(test_folded_empty_bodies),
        cmocka_unit_test(test_folded_appends_and_grows),
        cmocka_unit_test(test_frame_length_limit),
        cmocka_unit_test(test_folded_malformed),
        cmocka_unit_test(test_frames_every_offset),
        cmocka_unit_test(test_depth_truncation),
        cmocka_unit_test(test_lines_format),
        cmocka_unit_test(test_error_rolls_back),
        cmocka_unit_test(test_labels_valid),
        cmocka_unit_test(test_labels_copied),
        cmocka_unit_test(test_labels_invalid),
        cmocka_unit_test(test_labels_limit),
        cmocka_unit_test(test_finish_defaults_and_sorts),
        cmocka_unit_test(test_finish_errors),
        cmocka_unit_test(test_finish_weight_overflow),
        cmocka_unit_test(test_pyroscope_valid),
        cmocka_unit_test(test_pyroscope_invalid),
        cmocka_unit_test(test_pyroscope_keeps_earlier_labels),
        cmocka_unit_test(test_pyroscope_long_name_quoted),
        cmocka_unit_test(test_pyroscope_is_type),
        cmocka_unit_test(test_gunzip_round_trip),
        cmocka_unit_test(test_gunzip_large),
        cmocka_unit_test(test_gunzip_concatenated),
        cmocka_unit_test(test_gunzip_invalid),
        cmocka_unit_test(test_gunzip_bomb),
        cmocka_unit_test(test_gunzip_header_fields),
        cmocka_unit_test(test_gunzip_isize),
        cmocka_unit_test(test_gunzip_corrupt),
        cmocka_unit_test(test_gunzip_bomb_members),
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
