/* selector.c — label selectors, Prometheus style, and how a matcher judges
 * a label value.
 *
 *   selector := [service] [ '{' [matcher (',' matcher)* [',']] '}' ]
 *   matcher  := name ('=' | '!=' | '=~' | '!~') "value"
 *   service  := [a-zA-Z0-9_.:-]+           means service="..." (first matcher)
 *   name     := [a-zA-Z_][a-zA-Z0-9_.]*
 *   value    := double-quoted; escapes \" \\ \n \t
 * Whitespace may surround every token; "" and "{}" select everything.
 *
 * How it works: a recursive-descent parser over a cursor that knows its byte
 * position, so every error says "at column N" (1-based).  Matchers are
 * appended to a growing array only once complete (regex compiled), so
 * cleanup on error is just query_selector_free.
 *
 * Regexes are RE2's (regex.h: linear time, bounded memory, PromQL's
 * dialect), matched against the whole value.
 *
 * A missing label matches like the empty string, as in Prometheus. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "regex.h"

typedef struct {
    const char *s;
    size_t pos;
    char *err;
    size_t errlen;
    query_selector sel;
    int cap;
} sel_parser;

static int column(const sel_parser *p)
{
    return (int)p->pos + 1;
}

static char peek(const sel_parser *p)
{
    return p->s[p->pos];
}

static void skip_ws(sel_parser *p)
{
    while (peek(p) == ' ' || peek(p) == '\t' || peek(p) == '\n' || peek(p) == '\r')
        p->pos++;
}

/* Describes the character at the cursor for "found ..." in messages. */
static void describe_here(const sel_parser *p, char *buf, size_t len)
{
    unsigned char c = (unsigned char)peek(p);
    if (c == '\0')
        snprintf(buf, len, "end of input");
    else if (c >= 0x20 && c < 0x7f)
        snprintf(buf, len, "'%c'", c);
    else
        snprintf(buf, len, "byte 0x%02x", c);
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_service_char(char c)
{
    return is_alpha(c) || is_digit(c) || c == '.' || c == ':' || c == '-';
}

static char *copy_range(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

static void matcher_free(query_matcher *m)
{
    free(m->name);
    free(m->value);
    if (m->op == QUERY_RE || m->op == QUERY_NRE)
        query_regex_free(m->re);
}

/* Takes ownership of name and value; on failure frees them. */
static int add_matcher(sel_parser *p, char *name, char *value, query_op op, query_regex *re)
{
    if (p->sel.n_matchers == p->cap) {
        int cap = p->cap ? p->cap * 2 : 4;
        query_matcher *m = realloc(p->sel.matchers, (size_t)cap * sizeof *m);
        if (!m) {
            query_matcher tmp = {name, value, op, re};
            matcher_free(&tmp);
            query_set_err(p->err, p->errlen, "out of memory parsing selector");
            return -1;
        }
        p->sel.matchers = m;
        p->cap = cap;
    }
    query_matcher *m = &p->sel.matchers[p->sel.n_matchers++];
    memset(m, 0, sizeof *m);
    m->name = name;
    m->value = value;
    m->op = op;
    m->re = re;
    return 0;
}

/* ---- regular expressions ----------------------------------------------- */

static int compile_regex(sel_parser *p, int col, const char *name, const char *value, query_regex **out)
{
    char msg[256];
    *out = query_regex_compile(value, msg, sizeof msg);
    if (!*out) {
        size_t n = strlen(value);
        query_set_err(p->err, p->errlen, "at column %d: invalid regular expression '%.*s%s' for label '%s': %s", col,
                      n > 60 ? 60 : (int)n, value, n > 60 ? "..." : "", name, msg);
        return -1;
    }
    return 0;
}

/* ---- tokens ------------------------------------------------------------ */

/* Reads a label name; returns it malloc'd or NULL with err set. */
static char *parse_label_name(sel_parser *p, const char *expected)
{
    size_t start = p->pos;
    if (!is_alpha(peek(p))) {
        char found[32];
        describe_here(p, found, sizeof found);
        query_set_err(p->err, p->errlen, "at column %d: expected %s, found %s", column(p), expected, found);
        return NULL;
    }
    while (is_alpha(peek(p)) || is_digit(peek(p)) || peek(p) == '.')
        p->pos++;
    char *name = copy_range(p->s + start, p->pos - start);
    if (!name)
        query_set_err(p->err, p->errlen, "out of memory parsing selector");
    return name;
}

static int parse_op(sel_parser *p, const char *name, query_op *op)
{
    const char *s = p->s + p->pos;
    if (s[0] == '=' && s[1] == '~') {
        *op = QUERY_RE;
        p->pos += 2;
    } else if (s[0] == '!' && s[1] == '~') {
        *op = QUERY_NRE;
        p->pos += 2;
    } else if (s[0] == '!' && s[1] == '=') {
        *op = QUERY_NE;
        p->pos += 2;
    } else if (s[0] == '=') {
        *op = QUERY_EQ;
        p->pos += 1;
    } else {
        query_set_err(p->err, p->errlen, "at column %d: expected '=', '!=', '=~' or '!~' after label name '%s'",
                column(p), name);
        return -1;
    }
    return 0;
}

/* Reads a double-quoted string; returns it unescaped and malloc'd, or NULL
 * with err set. */
static char *parse_string(sel_parser *p, const char *name)
{
    if (peek(p) != '"') {
        char found[32];
        describe_here(p, found, sizeof found);
        query_set_err(p->err, p->errlen, "at column %d: expected a double-quoted value for label '%s', found %s",
                column(p), name, found);
        return NULL;
    }
    int open_col = column(p);
    p->pos++;
    size_t start = p->pos;
    while (peek(p) && peek(p) != '"')
        p->pos += (peek(p) == '\\' && p->s[p->pos + 1]) ? 2 : 1;
    if (!peek(p)) {
        query_set_err(p->err, p->errlen, "at column %d: unterminated string (missing closing '\"')", open_col);
        return NULL;
    }
    size_t end = p->pos;
    p->pos++; /* the closing quote */

    char *out = malloc(end - start + 1);
    if (!out) {
        query_set_err(p->err, p->errlen, "out of memory parsing selector");
        return NULL;
    }
    size_t n = 0;
    for (size_t i = start; i < end; i++) {
        char c = p->s[i];
        if (c == '\\') {
            char e = p->s[++i];
            if (e == '"' || e == '\\')
                c = e;
            else if (e == 'n')
                c = '\n';
            else if (e == 't')
                c = '\t';
            else {
                /* the backslash is at index i - 1, so column i */
                query_set_err(p->err, p->errlen,
                        "at column %d: invalid escape '\\%c' in string (allowed: \\\", \\\\, \\n, \\t)", (int)i,
                        e);
                free(out);
                return NULL;
            }
        }
        out[n++] = c;
    }
    out[n] = '\0';
    return out;
}

/* ---- grammar ----------------------------------------------------------- */

static int parse_matcher(sel_parser *p, const char *expected)
{
    char *name = parse_label_name(p, expected);
    if (!name)
        return -1;
    skip_ws(p);
    query_op op;
    if (parse_op(p, name, &op) < 0) {
        free(name);
        return -1;
    }
    skip_ws(p);
    int value_col = column(p);
    char *value = parse_string(p, name);
    if (!value) {
        free(name);
        return -1;
    }
    query_regex *re = NULL;
    int is_re = op == QUERY_RE || op == QUERY_NRE;
    if (is_re && compile_regex(p, value_col, name, value, &re) < 0) {
        free(name);
        free(value);
        return -1;
    }
    return add_matcher(p, name, value, op, re);
}

/* Parses "{ ... }" with the cursor on '{'. */
static int parse_braces(sel_parser *p)
{
    p->pos++;
    skip_ws(p);
    const char *expected = "a label name or '}'";
    while (peek(p) != '}') {
        if (parse_matcher(p, expected) < 0)
            return -1;
        skip_ws(p);
        if (peek(p) == ',') {
            p->pos++;
            skip_ws(p);
            continue;
        }
        if (peek(p) != '}') {
            char found[32];
            describe_here(p, found, sizeof found);
            query_set_err(p->err, p->errlen, "at column %d: expected ',' or '}' after a matcher, found %s", column(p),
                    found);
            return -1;
        }
    }
    p->pos++;
    return 0;
}

static int parse_service(sel_parser *p)
{
    size_t start = p->pos;
    while (is_service_char(peek(p)))
        p->pos++;
    char *name = copy_range("service", 7);
    char *value = copy_range(p->s + start, p->pos - start);
    if (!name || !value) {
        free(name);
        free(value);
        query_set_err(p->err, p->errlen, "out of memory parsing selector");
        return -1;
    }
    return add_matcher(p, name, value, QUERY_EQ, NULL);
}

static int parse_selector(sel_parser *p)
{
    skip_ws(p);
    if (is_service_char(peek(p))) {
        if (parse_service(p) < 0)
            return -1;
        skip_ws(p);
        if (peek(p) != '{' && peek(p) != '\0') {
            query_set_err(p->err, p->errlen,
                    "at column %d: expected '{' or the end after service name '%s' (matchers go in "
                    "braces, like svc{name=\"value\"})",
                    column(p), p->sel.matchers[0].value);
            return -1;
        }
    }
    if (peek(p) == '{') {
        if (parse_braces(p) < 0)
            return -1;
        skip_ws(p);
        if (peek(p) != '\0') {
            query_set_err(p->err, p->errlen, "unexpected text after '}' at column %d", column(p));
            return -1;
        }
    }
    if (peek(p) != '\0') {
        char found[32];
        describe_here(p, found, sizeof found);
        query_set_err(p->err, p->errlen, "at column %d: expected a service name or '{', found %s", column(p), found);
        return -1;
    }
    return 0;
}

/* ---- public API -------------------------------------------------------- */

int query_selector_parse(const char *s, query_selector *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!s)
        s = "";
    sel_parser p = {s, 0, err, errlen, {NULL, 0}, 0};
    if (parse_selector(&p) < 0) {
        query_selector_free(&p.sel);
        return -1;
    }
    *out = p.sel;
    return 0;
}

void query_selector_free(query_selector *sel)
{
    if (!sel)
        return;
    for (int i = 0; i < sel->n_matchers; i++)
        matcher_free(&sel->matchers[i]);
    free(sel->matchers);
    memset(sel, 0, sizeof *sel);
}

int query_matcher_match(const query_matcher *m, const char *value)
{
    if (!value)
        value = "";
    switch (m->op) {
    case QUERY_EQ:
        return strcmp(m->value, value) == 0;
    case QUERY_NE:
        return strcmp(m->value, value) != 0;
    case QUERY_RE:
        return query_regex_match(m->re, value, strlen(value));
    case QUERY_NRE:
        return !query_regex_match(m->re, value, strlen(value));
    }
    return 0;
}

const char *query_selector_eq(const query_selector *sel, const char *name)
{
    if (!sel)
        return NULL;
    for (int i = 0; i < sel->n_matchers; i++) {
        const query_matcher *m = &sel->matchers[i];
        if (m->op == QUERY_EQ && strcmp(m->name, name) == 0)
            return m->value;
    }
    return NULL;
}
