/* test_selector.c — label selectors: a table of valid selectors with the
 * matchers they must produce, a table of malformed ones with the fragment
 * their error must contain, and matcher semantics (missing labels,
 * anchoring, escapes, negations). */
#include <string.h>

#include "testutil.h"

#include "../../query/query.h"
#include "../../query/regex.h"

typedef struct {
    const char *name;
    query_op op;
    const char *value;
} want_matcher;

typedef struct {
    const char *in;
    int n;
    want_matcher m[4];
} sel_ok;

static const sel_ok valid_selectors[] = {
    {"", 0, {{0}}},
    {"   ", 0, {{0}}},
    {"{}", 0, {{0}}},
    {" { } ", 0, {{0}}},
    {"{a=\"b\"}", 1, {{"a", QUERY_EQ, "b"}}},
    {"{a=\"b\",}", 1, {{"a", QUERY_EQ, "b"}}},
    {"{ a = \"b\" , }", 1, {{"a", QUERY_EQ, "b"}}},
    {"{a!=\"b\"}", 1, {{"a", QUERY_NE, "b"}}},
    {"{a=~\"b.*\"}", 1, {{"a", QUERY_RE, "b.*"}}},
    {"{a!~\"b.*\"}", 1, {{"a", QUERY_NRE, "b.*"}}},
    {"{a=\"\"}", 1, {{"a", QUERY_EQ, ""}}},
    {"{a=~\"\"}", 1, {{"a", QUERY_RE, ""}}},
    {"{a=\"1\", b!=\"2\", c=~\"3\", d!~\"4\"}", 4,
     {{"a", QUERY_EQ, "1"}, {"b", QUERY_NE, "2"}, {"c", QUERY_RE, "3"}, {"d", QUERY_NRE, "4"}}},
    {"\t{\n a=\"b\"\r\n}\n", 1, {{"a", QUERY_EQ, "b"}}},
    {"{_a.b_1=\"x\"}", 1, {{"_a.b_1", QUERY_EQ, "x"}}},
    {"{A=\"x\"}", 1, {{"A", QUERY_EQ, "x"}}},
    {"{a=\"x\",a=\"y\"}", 2, {{"a", QUERY_EQ, "x"}, {"a", QUERY_EQ, "y"}}},
    /* escapes */
    {"{a=\"q\\\"q\"}", 1, {{"a", QUERY_EQ, "q\"q"}}},
    {"{a=\"b\\\\s\"}", 1, {{"a", QUERY_EQ, "b\\s"}}},
    {"{a=\"l1\\nl2\\tx\"}", 1, {{"a", QUERY_EQ, "l1\nl2\tx"}}},
    {"{a=\"\\\\\"}", 1, {{"a", QUERY_EQ, "\\"}}},
    {"{a=\"}{,=\"}", 1, {{"a", QUERY_EQ, "}{,="}}},
    {"{a=\"h\xc3\xa9\"}", 1, {{"a", QUERY_EQ, "h\xc3\xa9"}}},
    /* service shorthand */
    {"api", 1, {{"service", QUERY_EQ, "api"}}},
    {"  api  ", 1, {{"service", QUERY_EQ, "api"}}},
    {"api{}", 1, {{"service", QUERY_EQ, "api"}}},
    {"api {}", 1, {{"service", QUERY_EQ, "api"}}},
    {"my-svc.v2:prod_1", 1, {{"service", QUERY_EQ, "my-svc.v2:prod_1"}}},
    {"9lives", 1, {{"service", QUERY_EQ, "9lives"}}},
    {"api{type=\"cpu\"}", 2, {{"service", QUERY_EQ, "api"}, {"type", QUERY_EQ, "cpu"}}},
    {"api{service=\"web\"}", 2, {{"service", QUERY_EQ, "api"}, {"service", QUERY_EQ, "web"}}},
    {"api{node=~\"n[0-9]+\", build!=\"dev\",}", 3,
     {{"service", QUERY_EQ, "api"}, {"node", QUERY_RE, "n[0-9]+"}, {"build", QUERY_NE, "dev"}}},
};

typedef struct {
    const char *in;
    const char *frag;
} bad_case;

static const bad_case invalid_selectors[] = {
    {"{", "at column 2: expected a label name or '}', found end of input"},
    {"{a", "at column 3: expected '=', '!=', '=~' or '!~' after label name 'a'"},
    {"{foo \"b\"}", "at column 6: expected '=', '!=', '=~' or '!~' after label name 'foo'"},
    {"{foo==\"b\"}", "at column 6: expected a double-quoted value for label 'foo', found '='"},
    {"{foo~\"b\"}", "at column 5: expected '=', '!=', '=~' or '!~'"},
    {"{foo!\"b\"}", "at column 5: expected '=', '!=', '=~' or '!~'"},
    {"{a=b}", "at column 4: expected a double-quoted value for label 'a', found 'b'"},
    {"{a='b'}", "at column 4: expected a double-quoted value"},
    {"{a=}", "at column 4: expected a double-quoted value"},
    {"{a= ~\"b\"}", "at column 5: expected a double-quoted value"},
    {"{a=\"b}", "at column 4: unterminated string"},
    {"{a=\"b\\\"}", "at column 4: unterminated string"},
    {"{a=\"b\\", "at column 4: unterminated string"},
    {"{a=\"b\"", "at column 7: expected ',' or '}'"},
    {"{a=\"b\" b=\"c\"}", "at column 8: expected ',' or '}'"},
    {"{a=\"b\";b=\"c\"}", "at column 7: expected ',' or '}' after a matcher, found ';'"},
    {"{a=\"b\",", "at column 8: expected a label name or '}', found end of input"},
    {"{a=\"b\",,}", "at column 8: expected a label name or '}', found ','"},
    {"{,}", "at column 2: expected a label name or '}', found ','"},
    {"{1a=\"b\"}", "at column 2: expected a label name or '}', found '1'"},
    {"{-a=\"b\"}", "at column 2: expected a label name"},
    {"{a-b=\"c\"}", "at column 3: expected '=', '!=', '=~' or '!~' after label name 'a'"},
    {"{\"a\"=\"b\"}", "at column 2: expected a label name"},
    {"{\xc3\xa9=\"b\"}", "found byte 0xc3"},
    {"{a=\"b\\x\"}", "at column 6: invalid escape '\\x' in string"},
    {"{a=\"bc\\u00e9\"}", "at column 7: invalid escape '\\u'"},
    {"{}x", "unexpected text after '}' at column 3"},
    {"{} {}", "unexpected text after '}' at column 4"},
    {"{a=\"b\"}}", "unexpected text after '}' at column 8"},
    {"api{}x", "unexpected text after '}' at column 6"},
    {"api x", "at column 5: expected '{' or the end after service name 'api'"},
    {"service=\"api\"", "at column 8: expected '{' or the end after service name 'service'"},
    {"api/x", "at column 4: expected '{' or the end after service name 'api'"},
    {"}", "at column 1: expected a service name or '{', found '}'"},
    {"\"api\"", "at column 1: expected a service name or '{', found '\"'"},
    {"  =", "at column 3: expected a service name or '{'"},
    /* regular expressions */
    {"{x=~\"a(\"}", "at column 5: invalid regular expression 'a(' for label 'x': "},
    {"svc{name=~\"a(\"}", "at column 11: invalid regular expression 'a(' for label 'name'"},
    {"{x!~\"[a\"}", "invalid regular expression '[a' for label 'x'"},
    {"{x=~\"*a\"}", "invalid regular expression '*a'"},
    {"{x=~\"a{2,1}\"}", "invalid regular expression 'a{2,1}'"},
    {"{x=~\"a\\\\\"}", "invalid regular expression 'a\\'"},
    {"{x=~\"a)|.*\"}", "unexpected )"},
    {"{x=~\")\"}", "unexpected )"},
    {"{x=~\"(a))(\"}", "invalid regular expression"},
    {"{x=~\"(a)\\\\1\"}", "invalid escape sequence: \\1"},
    {"{x=~\"(a)(b)\\\\2\"}", "invalid escape sequence: \\2"},
    /* what glibc's regcomp let through and paid for (issue 12): RE2
     * refuses repetitions beyond 1000 and runs the rest in linear time */
    {"{x=~\"a+++++++++++++++++++++\"}", "bad repetition operator"},
    {"{x=~\"((x{1,100}){1,100}){1,100}\"}", "invalid repetition size"},
    {"{x=~\".{1,16000}\"}", "invalid repetition size"},
};

static void check_matchers(const sel_ok *c, const query_selector *sel)
{
    if (sel->n_matchers != c->n)
        fail_msg("'%s': %d matchers, want %d", c->in, sel->n_matchers, c->n);
    for (int i = 0; i < c->n; i++) {
        const query_matcher *m = &sel->matchers[i];
        if (strcmp(m->name, c->m[i].name) != 0 || m->op != c->m[i].op ||
            strcmp(m->value, c->m[i].value) != 0)
            fail_msg("'%s' matcher %d: got %s op%d \"%s\", want %s op%d \"%s\"", c->in, i, m->name,
                     (int)m->op, m->value, c->m[i].name, (int)c->m[i].op, c->m[i].value);
    }
}

static void test_selector_valid(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof valid_selectors / sizeof valid_selectors[0]; i++) {
        query_selector sel;
        char err[256] = "";
        if (query_selector_parse(valid_selectors[i].in, &sel, err, sizeof err) != 0)
            fail_msg("'%s' rejected: %s", valid_selectors[i].in, err);
        check_matchers(&valid_selectors[i], &sel);
        query_selector_free(&sel);
        assert_null(sel.matchers);
        assert_int_equal(sel.n_matchers, 0);
    }
}

static void test_selector_invalid(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof invalid_selectors / sizeof invalid_selectors[0]; i++) {
        query_selector sel;
        memset(&sel, 0xab, sizeof sel); /* garbage in: must come out zeroed */
        char err[256] = "";
        if (query_selector_parse(invalid_selectors[i].in, &sel, err, sizeof err) != -1)
            fail_msg("'%s' accepted", invalid_selectors[i].in);
        assert_null(sel.matchers);
        assert_int_equal(sel.n_matchers, 0);
        assert_err_contains(err, invalid_selectors[i].frag);
        query_selector_free(&sel); /* harmless on the zeroed result */
    }
}

/* A pattern over QUERY_REGEX_MAX_LEN bytes is refused, naming the limit;
 * patterns that took glibc seconds compile and match at once. */
static void test_selector_regex_limits(void **state)
{
    (void)state;
    static char in[QUERY_REGEX_MAX_LEN + 64];
    char err[256] = "";
    query_selector sel;
    int n = snprintf(in, sizeof in, "{x=~\"");
    for (int i = 0; i <= QUERY_REGEX_MAX_LEN; i++) in[n++] = 'a';
    memcpy(in + n, "\"}", 3);
    assert_int_equal(query_selector_parse(in, &sel, err, sizeof err), -1);
    assert_err_contains(err, "at most 1024");
    assert_int_equal(query_selector_parse("{x=~\"(.*){1,600}\"}", &sel, err, sizeof err), 0);
    char value[20001];
    memset(value, 'b', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    assert_int_equal(query_matcher_match(&sel.matchers[0], value), 1);
    query_selector_free(&sel);
    /* RE2's dialect (PromQL's): \d, non-greedy, UTF-8 classes */
    assert_int_equal(query_selector_parse("{x=~\"i-\\\\d+|db.*?\"}", &sel, err, sizeof err), 0);
    assert_int_equal(query_matcher_match(&sel.matchers[0], "i-42"), 1);
    assert_int_equal(query_matcher_match(&sel.matchers[0], "i-4x"), 0);
    assert_int_equal(query_matcher_match(&sel.matchers[0], "db-1"), 1);
    query_selector_free(&sel);
}

/* An error after several matchers (some regexes) leaks nothing: ASan. */
static void test_selector_error_after_many(void **state)
{
    (void)state;
    query_selector sel;
    char err[256];
    const char *in = "api{a=~\"x.*\", b!~\"y\", c=\"z\", d=~\"1\", e=~\"2\", f=\"3\", g=~\"(\"}";
    assert_int_equal(query_selector_parse(in, &sel, err, sizeof err), -1);
    assert_err_contains(err, "for label 'g'");
    assert_null(sel.matchers);
    /* many matchers grow the array */
    char big[4096] = "{";
    for (int i = 0; i < 100; i++) {
        char one[32];
        snprintf(one, sizeof one, "l%d=~\"v%d|w\",", i, i);
        strcat(big, one);
    }
    strcat(big, "}");
    assert_int_equal(query_selector_parse(big, &sel, err, sizeof err), 0);
    assert_int_equal(sel.n_matchers, 100);
    assert_string_equal(sel.matchers[99].name, "l99");
    assert_true(query_matcher_match(&sel.matchers[99], "v99"));
    assert_true(query_matcher_match(&sel.matchers[99], "w"));
    assert_false(query_matcher_match(&sel.matchers[99], "v9"));
    query_selector_free(&sel);
}

static void test_selector_free_zeroed(void **state)
{
    (void)state;
    query_selector sel = {0};
    query_selector_free(&sel);
    query_selector_free(&sel);
    query_selector_free(NULL);
    char err[64];
    assert_int_equal(query_selector_parse(NULL, &sel, err, sizeof err), 0);
    assert_int_equal(sel.n_matchers, 0);
    query_selector_free(&sel);
}

static void test_selector_err_truncation(void **state)
{
    (void)state;
    query_selector sel;
    char err[10];
    memset(err, 'x', sizeof err);
    assert_int_equal(query_selector_parse("{a", &sel, err, sizeof err), -1);
    assert_int_equal(strlen(err), sizeof err - 1);
    assert_int_equal(query_selector_parse("{a", &sel, NULL, 0), -1);
}

/* Parses a one-matcher selector and returns whether it matches value. */
static int match1(const char *selector, const char *value)
{
    query_selector sel;
    char err[256];
    if (query_selector_parse(selector, &sel, err, sizeof err) != 0)
        fail_msg("'%s' rejected: %s", selector, err);
    assert_int_equal(sel.n_matchers, 1);
    int r = query_matcher_match(&sel.matchers[0], value);
    query_selector_free(&sel);
    return r;
}

typedef struct {
    const char *selector;
    const char *value; /* NULL: the series lacks the label */
    int want;
} match_case;

static const match_case match_cases[] = {
    /* equality */
    {"{a=\"b\"}", "b", 1},
    {"{a=\"b\"}", "bb", 0},
    {"{a=\"b\"}", "", 0},
    {"{a=\"b\"}", NULL, 0},
    {"{a!=\"b\"}", "b", 0},
    {"{a!=\"b\"}", "c", 1},
    {"{a!=\"b\"}", NULL, 1},
    /* a missing label is the empty string */
    {"{a=\"\"}", NULL, 1},
    {"{a=\"\"}", "", 1},
    {"{a=\"\"}", "x", 0},
    {"{a!=\"\"}", NULL, 0},
    {"{a!=\"\"}", "x", 1},
    {"{a=~\".*\"}", NULL, 1},
    {"{a=~\".*\"}", "anything", 1},
    {"{a=~\".+\"}", NULL, 0},
    {"{a=~\".+\"}", "x", 1},
    {"{a!~\".+\"}", NULL, 1},
    {"{a!~\".+\"}", "x", 0},
    {"{a=~\"\"}", NULL, 1},
    {"{a=~\"\"}", "x", 0},
    {"{a=~\"b\"}", NULL, 0},
    {"{a!~\"b\"}", NULL, 1},
    /* anchoring */
    {"{a=~\"a\"}", "a", 1},
    {"{a=~\"a\"}", "xab", 0},
    {"{a=~\"a\"}", "ab", 0},
    {"{a=~\"a\"}", "ba", 0},
    {"{a=~\"a.*\"}", "abc", 1},
    {"{a=~\"a.*\"}", "xabc", 0},
    {"{a=~\".*b\"}", "abc", 0},
    {"{a=~\"a|b\"}", "a", 1},
    {"{a=~\"a|b\"}", "b", 1},
    {"{a=~\"a|b\"}", "ab", 0},
    {"{a=~\"a|b\"}", "xb", 0},
    {"{a=~\"a|b\"}", "ax", 0},
    {"{a=~\"^a$\"}", "a", 1},
    {"{a!~\"a\"}", "xab", 1},
    {"{a!~\"a\"}", "a", 0},
    {"{a!~\"a|b\"}", "ab", 1},
    {"{a=~\"(a)|(b)\"}", "a", 1},
    {"{a=~\"(a)|(b)\"}", "ab", 0},
    {"{a=~\"n[0-9]+\"}", "n42", 1},
    {"{a=~\"n[0-9]+\"}", "n42x", 0},
    {"{a=~\"[)]\"}", ")", 1},
    {"{a=~\"[]a]\"}", "]", 1},
    {"{a=~\"[[:digit:])]+\"}", "1)2", 1},
    {"{a=~\"\\\\)\"}", ")", 1},
    {"{a=~\"\\\\(x\\\\)\"}", "(x)", 1},
    {"{a=~\"\\\\(x\\\\)\"}", "x", 0},
    {"{a=~\"a\\\\.b\"}", "a.b", 1},
    {"{a=~\"a\\\\.b\"}", "axb", 0},
    {"{a=~\"api-(eu|us)-[0-9]+\"}", "api-eu-12", 1},
    {"{a=~\"api-(eu|us)-[0-9]+\"}", "api-asia-12", 0},
    /* escapes reach the value */
    {"{a=\"q\\\"q\"}", "q\"q", 1},
    {"{a=\"b\\\\s\"}", "b\\s", 1},
    {"{a=\"l1\\nl2\"}", "l1\nl2", 1},
    {"{a=\"t\\tx\"}", "t\tx", 1},
    {"{a=~\"x\\ny\"}", "x\ny", 1},
};

static void test_matcher_semantics(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof match_cases / sizeof match_cases[0]; i++) {
        const match_case *c = &match_cases[i];
        int got = match1(c->selector, c->value);
        if (got != c->want)
            fail_msg("%s against %s%s%s: got %d, want %d", c->selector, c->value ? "\"" : "",
                     c->value ? c->value : "(missing)", c->value ? "\"" : "", got, c->want);
    }
}

static void test_selector_eq(void **state)
{
    (void)state;
    query_selector sel;
    char err[256];
    assert_int_equal(
        query_selector_parse("api{type!=\"cpu\", type=~\"c.*\", type=\"cpu\", type=\"alloc\", node=\"n1\"}",
                             &sel, err, sizeof err),
        0);
    assert_string_equal(query_selector_eq(&sel, "service"), "api");
    assert_string_equal(query_selector_eq(&sel, "type"), "cpu");
    assert_string_equal(query_selector_eq(&sel, "node"), "n1");
    assert_null(query_selector_eq(&sel, "build"));
    assert_null(query_selector_eq(&sel, "nod"));
    query_selector_free(&sel);

    assert_int_equal(query_selector_parse("{type=~\"cpu\"}", &sel, err, sizeof err), 0);
    assert_null(query_selector_eq(&sel, "type"));
    query_selector_free(&sel);
    assert_null(query_selector_eq(&sel, "type"));
    assert_null(query_selector_eq(NULL, "type"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selector_valid),
        cmocka_unit_test(test_selector_invalid),
        cmocka_unit_test(test_selector_error_after_many),
        cmocka_unit_test(test_selector_regex_limits),
        cmocka_unit_test(test_selector_free_zeroed),
        cmocka_unit_test(test_selector_err_truncation),
        cmocka_unit_test(test_matcher_semantics),
        cmocka_unit_test(test_selector_eq),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
