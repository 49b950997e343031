/* regex.h — the regular expressions of selectors (=~, !~): RE2, through a
 * C interface (regex.cc is the project's one C++ file).
 *
 * Why RE2 (issue 12): glibc's regcomp has no limits; `a+++...` doubled the
 * server's memory with each '+', `((x{1,100}){1,100}){1,100}` took 12.7 s
 * and `(.*){1,600}` 25.9 s of CPU, from any client of any read endpoint.
 * RE2 matches in time linear in the input and bounds its memory (a compiled
 * program over the budget is an error, not a slow query), and its dialect
 * is the one users write in PromQL and Pyroscope (both use Go's RE2
 * syntax).  PCRE2 with match limits would bound the damage but answer
 * "too costly" for patterns RE2 runs fine, and accepts backreferences and
 * lookaround that no other tool of the stack does. */
#ifndef FLAMEDB_QUERY_REGEX_H
#define FLAMEDB_QUERY_REGEX_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QUERY_REGEX_MAX_LEN 1024            /* bytes of a pattern */
#define QUERY_REGEX_MAX_MEM (8 << 20)       /* bytes RE2 may use for one pattern */

typedef struct query_regex query_regex;

/* Compiles pattern (RE2 syntax, UTF-8) to match whole values.  NULL with a
 * message (too long, too big when compiled, invalid: RE2's own words) in
 * err, or on out of memory. */
query_regex *query_regex_compile(const char *pattern, char *err, size_t errlen);

/* 1 when s[0..len) matches as a whole. */
int query_regex_match(const query_regex *re, const char *s, size_t len);

void query_regex_free(query_regex *re);

#ifdef __cplusplus
}
#endif

#endif
