/* fuzz_selector.c — label selectors (query_selector_parse), RE2 regexes
 * included, then each matcher against a few values.  A pattern RE2 finds
 * too costly must be an error, never the server's memory or CPU. */
#include "fuzz.h"

#include "../../query/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    if (!s) return 0;
    query_selector sel;
    char err[512] = "";
    if (query_selector_parse(s, &sel, err, sizeof err) == 0) {
        static const char *const values[] = { "", "api", "a.b-c", "\xe2\x82\xac", NULL };
        for (int i = 0; i < sel.n_matchers; i++) {
            FUZZ_CHECK(sel.matchers[i].name && sel.matchers[i].value);
            for (size_t v = 0; v < sizeof values / sizeof *values; v++) query_matcher_match(&sel.matchers[i], values[v]);
            query_matcher_match(&sel.matchers[i], sel.matchers[i].value);
        }
        query_selector_eq(&sel, "service");
        query_selector_free(&sel);
    } else {
        FUZZ_CHECK(err[0]);
    }
    free(s);
    return 0;
}
