/* fuzz_timeexpr.c — time expressions and durations as users type them
 * (query_time_parse, query_duration_parse, query_time_json).  A time
 * accepted is within [1970, 9999] as timeexpr.c promises, a duration is
 * not negative. */
#include "fuzz.h"

#include "../../query/query.h"

#define NOW_MS INT64_C(1763719200000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    if (!s) return 0;
    char err[512] = "";
    int64_t ms = 0;
    if (query_time_parse(s, NOW_MS, &ms, err, sizeof err) == 0) {
        FUZZ_CHECK(ms >= 0 && ms <= INT64_C(253402300799999));
        json_t *j = query_time_json(ms);
        json_decref(j);
    } else {
        FUZZ_CHECK(err[0]);
    }
    err[0] = '\0';
    if (query_duration_parse(s, &ms, err, sizeof err) == 0) FUZZ_CHECK(ms >= 0);
    else FUZZ_CHECK(err[0]);
    free(s);
    return 0;
}
