/* test_timeexpr.c — time expressions and durations: tables of valid inputs
 * with their exact results, tables of malformed inputs with the fragment
 * their error must contain, and a sweep that checks RFC 3339 dates against
 * libc's timegm. */
#include <string.h>
#include <time.h>

#include "testutil.h"

#include "../../query/query.h"

#define NOW INT64_C(1795255200000) /* 2026-11-21T10:00:00Z */

typedef struct {
    const char *in;
    int64_t want_ms;
} time_ok;

static const time_ok valid_times[] = {
    /* unix seconds */
    {"0", 0},
    {"1763719200", INT64_C(1763719200000)},
    {"1763719200.5", INT64_C(1763719200500)},
    {"1763719200.123", INT64_C(1763719200123)},
    {"1763719200.1239", INT64_C(1763719200123)}, /* truncated to ms */
    {"1763719200.05", INT64_C(1763719200050)},
    {"0001763719200", INT64_C(1763719200000)},
    {"253402300799", INT64_C(253402300799000)}, /* 9999-12-31T23:59:59Z */
    {"253402300799.999", INT64_C(253402300799999)},
    /* RFC 3339 */
    {"2026-11-21T10:00:00Z", INT64_C(1795255200000)},
    {"2026-11-21t10:00:00z", INT64_C(1795255200000)},
    {"2026-11-21 10:00:00Z", INT64_C(1795255200000)},
    {"2025-11-21T10:00:00Z", INT64_C(1763719200000)},
    {"1970-01-01T00:00:00Z", 0},
    {"1970-01-01T00:00:00.001Z", 1},
    {"2026-11-21T10:00:00.123Z", INT64_C(1795255200123)},
    {"2026-11-21T10:00:00.5Z", INT64_C(1795255200500)},
    {"2026-11-21T10:00:00.123456789Z", INT64_C(1795255200123)},
    {"2026-11-21T12:00:00+02:00", INT64_C(1795255200000)},
    {"2026-11-21T04:30:00-05:30", INT64_C(1795255200000)},
    {"2026-11-21T10:00:00+00:00", INT64_C(1795255200000)},
    {"2026-11-21T10:00:00-00:00", INT64_C(1795255200000)},
    {"2026-11-22T00:30:00+14:30", INT64_C(1795255200000)},
    {"1970-01-01T01:00:00+01:00", 0},
    {"2024-02-29T00:00:00Z", INT64_C(1709164800000)},  /* leap year */
    {"2000-02-29T00:00:00Z", INT64_C(951782400000)},   /* divisible by 400 */
    {"2024-12-31T23:59:59Z", INT64_C(1735689599000)},
    {"2016-12-31T23:59:60Z", INT64_C(1483228800000)},  /* leap second: next minute */
    {"9999-12-31T23:59:59Z", INT64_C(253402300799000)},
    {"2026-03-01T00:00:00Z", INT64_C(1772323200000)},
    /* now */
    {"now", NOW},
    {"now-0s", NOW},
    {"now-1s", NOW - 1000},
    {"now-30m", NOW - 30 * 60 * 1000},
    {"now-1h", NOW - 3600 * 1000},
    {"now-7d", NOW - INT64_C(7) * 86400 * 1000},
    {"now-2w", NOW - INT64_C(14) * 86400 * 1000},
    {"now-90m", NOW - 90 * 60 * 1000},
};

typedef struct {
    const char *in;
    const char *frag;
} bad_case;

static const bad_case invalid_times[] = {
    {"", "empty time"},
    {"abc", "invalid time 'abc' (expected unix seconds, RFC 3339 like 2026-11-21T10:00:00Z, now or now-1h)"},
    {" 1763719200", "invalid time ' 1763719200'"},
    {"1763719200 ", "invalid time '1763719200 '"},
    {"1763719200.", "invalid time '1763719200.'"},
    {"1763719200.5.5", "invalid time"},
    {".5", "invalid time '.5'"},
    {"+1763719200", "invalid time"},
    {"-1", "negative unix time is not allowed"},
    {"-1763719200", "negative"},
    {"1763719200000", "beyond year 9999"},
    {"253402300800", "beyond year 9999"},
    {"99999999999999999999999", "beyond year 9999"},
    {"1e9", "invalid time '1e9'"},
    {"Now", "invalid time 'Now'"},
    {"now ", "invalid time 'now '"},
    {"nowx", "invalid time 'nowx'"},
    {"now-", "now-<N><unit>"},
    {"now-h", "now-<N><unit>"},
    {"now--1h", "now-<N><unit>"},
    {"now-1.5h", "now-<N><unit>"},
    {"now-5", "missing unit in 'now-5'"},
    {"now-5x", "invalid unit 'x' in 'now-5x' (expected s, m, h, d or w)"},
    {"now-5ms", "invalid unit 'ms' in 'now-5ms'"},
    {"now-5hours", "invalid unit 'hours'"},
    {"now-1h ", "invalid unit 'h '"},
    {"now+1h", "only past offsets"},
    {"now-100000w", "before 1970"},
    {"now-99999999999999999999d", "before 1970"},
    {"2026-13-01T00:00:00Z", "month 13 is out of range (1-12)"},
    {"2026-00-01T00:00:00Z", "month 0 is out of range"},
    {"2026-11-00T00:00:00Z", "day 0 is out of range"},
    {"2026-11-31T00:00:00Z", "day 31 is out of range (2026-11 has 30 days)"},
    {"2026-01-32T00:00:00Z", "day 32 is out of range (2026-01 has 31 days)"},
    {"2023-02-29T00:00:00Z", "day 29 is out of range (2023-02 has 28 days)"},
    {"2100-02-29T00:00:00Z", "day 29 is out of range (2100-02 has 28 days)"},
    {"2024-02-30T00:00:00Z", "day 30 is out of range (2024-02 has 29 days)"},
    {"2026-11-21T24:00:00Z", "hour 24 is out of range (0-23)"},
    {"2026-11-21T10:60:00Z", "minute 60 is out of range (0-59)"},
    {"2026-11-21T10:00:61Z", "second 61 is out of range (0-60)"},
    {"2026-11-21T10:00:00+24:00", "offset 24:00 is out of range"},
    {"2026-11-21T10:00:00+02:60", "offset 02:60 is out of range"},
    {"2026-11-21T10:00:00", "expected a time zone: 'Z' for UTC or an offset like +02:00 at column 20"},
    {"2026-11-21T10:00:00 02:00", "in a URL, write '+' as %2B"},
    {"2026-11-21T10:00:00X", "expected 'Z' or an offset like +02:00 at column 20"},
    {"2026-11-21T10:00:00+0200", "expected ':' in the offset at column 23"},
    {"2026-11-21T10:00:00+2:00", "expected offset hours (two digits) at column 21"},
    {"2026-11-21T10:00:00.Z", "expected digits after '.'"},
    {"2026-11-21T10:00:00ZZ", "expected the end of the time at column 21"},
    {"2026-11-21", "expected 'T' between date and time at column 11"},
    {"2026-11-21X10:00:00Z", "expected 'T' between date and time at column 11"},
    {"2026-1-21T10:00:00Z", "expected a two-digit month at column 6"},
    {"2026-11-21T10:00Z", "expected ':' after the minutes at column 17"},
    {"2026-11-21T1:00:00Z", "expected two-digit hours at column 12"},
    {"2026/11/21T10:00:00Z", "invalid time '2026/11/21T10:00:00Z'"},
    {"1969-12-31T23:59:59Z", "before 1970-01-01T00:00:00Z"},
    {"1970-01-01T00:00:00+00:01", "before 1970"},
    {"9999-12-31T23:59:59-00:01", "beyond year 9999"},
};

static void test_time_valid(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof valid_times / sizeof valid_times[0]; i++) {
        char err[256] = "";
        int64_t got = -12345;
        int rc = query_time_parse(valid_times[i].in, NOW, &got, err, sizeof err);
        if (rc != 0)
            fail_msg("'%s' rejected: %s", valid_times[i].in, err);
        if (got != valid_times[i].want_ms)
            fail_msg("'%s': got %lld, want %lld", valid_times[i].in, (long long)got,
                     (long long)valid_times[i].want_ms);
    }
}

static void test_time_invalid(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof invalid_times / sizeof invalid_times[0]; i++) {
        char err[256] = "";
        int64_t got = -12345;
        int rc = query_time_parse(invalid_times[i].in, NOW, &got, err, sizeof err);
        if (rc != -1)
            fail_msg("'%s' accepted as %lld", invalid_times[i].in, (long long)got);
        assert_int_equal(got, -12345); /* output untouched on error */
        assert_err_contains(err, invalid_times[i].frag);
    }
}

static void test_time_null(void **state)
{
    (void)state;
    char err[128];
    int64_t got;
    assert_int_equal(query_time_parse(NULL, NOW, &got, err, sizeof err), -1);
    assert_err_contains(err, "empty time");
}

/* Small and zero-sized error buffers are always NUL-terminated / untouched. */
static void test_time_err_truncation(void **state)
{
    (void)state;
    char err[8];
    memset(err, 'x', sizeof err);
    int64_t got;
    assert_int_equal(query_time_parse("garbage", NOW, &got, err, sizeof err), -1);
    assert_int_equal(strlen(err), sizeof err - 1);
    char one = 'x';
    assert_int_equal(query_time_parse("garbage", NOW, &got, &one, 0), -1);
    assert_int_equal(one, 'x');
    assert_int_equal(query_time_parse("garbage", NOW, &got, NULL, 0), -1);
}

/* now is taken from the argument, never the clock. */
static void test_time_now_arithmetic(void **state)
{
    (void)state;
    int64_t got;
    char err[128];
    assert_int_equal(query_time_parse("now-1h", 7200000, &got, err, sizeof err), 0);
    assert_int_equal(got, 3600000);
    assert_int_equal(query_time_parse("now-2h", 7200000, &got, err, sizeof err), 0);
    assert_int_equal(got, 0);
    assert_int_equal(query_time_parse("now-3h", 7200000, &got, err, sizeof err), -1);
    assert_err_contains(err, "before 1970");
    assert_int_equal(query_time_parse("now", 42, &got, err, sizeof err), 0);
    assert_int_equal(got, 42);
}

/* Every 13th day from 1970 to 9999, at a varying time of day, against
 * timegm. */
static void test_time_rfc3339_sweep(void **state)
{
    (void)state;
    time_t end = (time_t)INT64_C(253402300799);
    for (time_t t = 0; t <= end; t += 13 * 86400 + 3917) {
        struct tm tm;
        assert_non_null(gmtime_r(&t, &tm));
        char buf[64];
        strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
        int64_t got;
        char err[256];
        if (query_time_parse(buf, 0, &got, err, sizeof err) != 0)
            fail_msg("'%s' rejected: %s", buf, err);
        if (got != (int64_t)t * 1000)
            fail_msg("'%s': got %lld, want %lld", buf, (long long)got, (long long)t * 1000);
    }
}

/* Every valid day of every month of a few years parses; the next day
 * after the month's end does not. */
static void test_time_days_per_month(void **state)
{
    (void)state;
    static const int years[] = {1970, 1972, 2000, 2023, 2024, 2100, 2400};
    for (size_t y = 0; y < sizeof years / sizeof years[0]; y++) {
        for (int m = 1; m <= 12; m++) {
            struct tm tm = {0};
            tm.tm_year = years[y] - 1900;
            tm.tm_mon = m; /* day 0 of the next month: last day of this one */
            tm.tm_mday = 0;
            time_t last = timegm(&tm);
            struct tm back;
            gmtime_r(&last, &back);
            int dim = back.tm_mday;
            for (int d = 1; d <= dim + 1; d++) {
                char buf[64], err[256];
                snprintf(buf, sizeof buf, "%04d-%02d-%02dT00:00:00Z", years[y], m, d);
                int64_t got;
                int rc = query_time_parse(buf, 0, &got, err, sizeof err);
                if (d <= dim && rc != 0)
                    fail_msg("'%s' rejected: %s", buf, err);
                if (d > dim && rc == 0)
                    fail_msg("'%s' accepted", buf);
            }
        }
    }
}

/* ---- durations ---------------------------------------------------------- */

static const time_ok valid_durations[] = {
    {"0", 0},
    {"0s", 0},
    {"1", 1000},
    {"90", 90000},
    {"250ms", 250},
    {"1s", 1000},
    {"30s", 30000},
    {"5m", 300000},
    {"1h", 3600000},
    {"30d", INT64_C(2592000000)},
    {"2w", INT64_C(1209600000)},
    {"007m", 420000},
    {"9223372036854775807ms", INT64_MAX},
    {"9223372036854775s", INT64_C(9223372036854775000)},
    {"15250284452w", INT64_C(15250284452) * 604800000},
};

static const bad_case invalid_durations[] = {
    {"", "empty duration"},
    {"-5m", "negative duration '-5m' is not allowed"},
    {"m", "invalid duration 'm'"},
    {"abc", "invalid duration 'abc' (expected a whole number and a unit"},
    {"1.5h", "invalid duration '1.5h'"},
    {" 5m", "invalid duration ' 5m'"},
    {"+5m", "invalid duration '+5m'"},
    {"5x", "invalid unit 'x' in '5x' (expected ms, s, m, h, d or w)"},
    {"5 m", "invalid unit ' m' in '5 m'"},
    {"5mm", "invalid unit 'mm'"},
    {"5M", "invalid unit 'M'"},
    {"5h30m", "invalid unit 'h30m'"},
    {"9223372036854775808ms", "too large"},
    {"9223372036854776s", "too large"},
    {"99999999999999999999w", "too large"},
    {"15250284453w", "too large"},
};

static void test_duration_valid(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof valid_durations / sizeof valid_durations[0]; i++) {
        char err[256] = "";
        int64_t got = -1;
        if (query_duration_parse(valid_durations[i].in, &got, err, sizeof err) != 0)
            fail_msg("'%s' rejected: %s", valid_durations[i].in, err);
        if (got != valid_durations[i].want_ms)
            fail_msg("'%s': got %lld, want %lld", valid_durations[i].in, (long long)got,
                     (long long)valid_durations[i].want_ms);
    }
}

static void test_duration_invalid(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof invalid_durations / sizeof invalid_durations[0]; i++) {
        char err[256] = "";
        int64_t got = -12345;
        if (query_duration_parse(invalid_durations[i].in, &got, err, sizeof err) != -1)
            fail_msg("'%s' accepted as %lld", invalid_durations[i].in, (long long)got);
        assert_int_equal(got, -12345);
        assert_err_contains(err, invalid_durations[i].frag);
    }
    char err[64];
    int64_t got;
    assert_int_equal(query_duration_parse(NULL, &got, err, sizeof err), -1);
    assert_err_contains(err, "empty duration");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_valid),
        cmocka_unit_test(test_time_invalid),
        cmocka_unit_test(test_time_null),
        cmocka_unit_test(test_time_err_truncation),
        cmocka_unit_test(test_time_now_arithmetic),
        cmocka_unit_test(test_time_rfc3339_sweep),
        cmocka_unit_test(test_time_days_per_month),
        cmocka_unit_test(test_duration_valid),
        cmocka_unit_test(test_duration_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
