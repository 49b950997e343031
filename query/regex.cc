// regex.cc — query_regex (regex.h) over RE2.  The only C++ of the project:
// a thin shell so the rest stays C11.  Exceptions never cross into C (RE2
// reports errors through ok()/error(); std::bad_alloc is caught).
#include "regex.h"

#include <cstdio>
#include <cstring>
#include <new>

#include <re2/re2.h>

struct query_regex {
    RE2 re;
    query_regex(const char *p, const RE2::Options &o) : re(p, o) {}
};

extern "C" query_regex *query_regex_compile(const char *pattern, char *err, size_t errlen)
{
    size_t n = strlen(pattern);
    if (n > QUERY_REGEX_MAX_LEN) {
        snprintf(err, errlen, "the pattern is %zu bytes, at most %d", n, QUERY_REGEX_MAX_LEN);
        return nullptr;
    }
    RE2::Options o;
    o.set_log_errors(false);
    o.set_max_mem(QUERY_REGEX_MAX_MEM);
    o.set_encoding(RE2::Options::EncodingUTF8);
    query_regex *q;
    try {
        q = new query_regex(pattern, o);
    } catch (const std::bad_alloc &) {
        snprintf(err, errlen, "out of memory");
        return nullptr;
    }
    if (!q->re.ok()) {
        if (q->re.error_code() == RE2::ErrorPatternTooLarge)
            snprintf(err, errlen, "the pattern is too large once compiled (repetitions nest too deep; "
                     "RE2's budget is %d MiB)", QUERY_REGEX_MAX_MEM >> 20);
        else
            snprintf(err, errlen, "%s", q->re.error().c_str());
        delete q;
        return nullptr;
    }
    return q;
}

extern "C" int query_regex_match(const query_regex *q, const char *s, size_t len)
{
    return q->re.Match(re2::StringPiece(s, len), 0, len, RE2::ANCHOR_BOTH, nullptr, 0) ? 1 : 0;
}

extern "C" void query_regex_free(query_regex *q)
{
    delete q;
}
