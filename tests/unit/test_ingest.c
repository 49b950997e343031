/* test_ingest.c — unit tests of ingest/: stack bodies, labels, final
 * checks, Pyroscope names, gunzip and UTF-8 validation.
 *
 * Malformed inputs come in tables, each row with the fragment its error
 * message must contain, so that every message a user can see is checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    assert_err_contains(err, "body is not valid gzip");

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
        if (ingest_utf8_valid(c->s, len) != c->valid)
            fail_msg("case %zu: expected %s", i, c->valid ? "valid" : "invalid");
    }
    /* a bad byte is found at every position around the word boundaries */
    char buf[40];
    for (size_t pos = 0; pos < sizeof buf; pos++) {
        memset(buf, 'a', sizeof buf);
        assert_true(ingest_utf8_valid(buf, sizeof buf));
        buf[pos] = (char)0x80;
        if (ingest_utf8_valid(buf, sizeof buf))
            fail_msg("0x80 at %zu not caught", pos);
        /* the length is respected: bytes past it are not read */
        assert_true(ingest_utf8_valid(buf, pos));
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
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
