/* timeexpr.c — time expressions and durations, as users type them into
 * query parameters.
 *
 * A time is one of:
 *   unix seconds   "1763719200", "1763719200.5"   (fraction kept to the ms)
 *   RFC 3339       "2026-11-21T10:00:00Z", "2026-11-21 10:00:00.123+02:00"
 *   now            "now", "now-<N><unit>" with unit s, m, h, d or w
 * and the result is unix milliseconds in [1970-01-01, 9999-12-31].
 *
 * A duration is "<N><unit>" with unit ms, s, m, h, d or w; a bare number is
 * seconds.  N is a whole, non-negative number.
 *
 * How it works: a small hand-written scanner per form, no libc time
 * functions (RFC 3339 dates become days since the epoch with Howard
 * Hinnant's days-from-civil), so everything is pure and thread-safe.  Every
 * failure writes a message naming the input and what was expected. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "query_internal.h"

#define TIME_HINT "expected unix seconds, RFC 3339 like 2026-11-21T10:00:00Z, now or now-1h"
#define RFC_HINT "RFC 3339 looks like 2026-11-21T10:00:00Z or 2026-11-21T10:00:00+02:00"
#define DURATION_HINT "expected a whole number and a unit like 30s, 5m, 1h or 7d; units ms, s, m, h, d or w"

/* 9999-12-31T23:59:59Z: the last second we accept (its fraction too). */
#define MAX_SECONDS INT64_C(253402300799)

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads a run of decimal digits at *p into *n.  Returns the number of
 * digits read (0 when *p is not a digit), or -1 if the number overflows
 * int64.  *p is advanced past the digits either way. */
static int read_uint(const char **p, int64_t *n)
{
    int64_t v = 0;
    int count = 0, overflow = 0;
    while (is_digit(**p)) {
        int d = **p - '0';
        if (v > (INT64_MAX - d) / 10)
            overflow = 1;
        else
            v = v * 10 + d;
        (*p)++;
        count++;
    }
    *n = v;
    return overflow ? -1 : count;
}

/* Milliseconds in one unit, or 0 for an unknown unit. */
static int64_t unit_ms(const char *u, int allow_ms)
{
    if (allow_ms && strcmp(u, "ms") == 0)
        return 1;
    if (strcmp(u, "s") == 0)
        return 1000;
    if (strcmp(u, "m") == 0)
        return 60 * 1000;
    if (strcmp(u, "h") == 0)
        return 3600 * 1000;
    if (strcmp(u, "d") == 0)
        return INT64_C(86400) * 1000;
    if (strcmp(u, "w") == 0)
        return INT64_C(7) * 86400 * 1000;
    return 0;
}

/* ---- durations -------------------------------------------------------- */

int query_duration_parse(const char *s, int64_t *out_ms, char *err, size_t errlen)
{
    if (!s || !*s) {
        query_set_err(err, errlen, "empty duration (%s)", DURATION_HINT);
        return -1;
    }
    if (s[0] == '-') {
        query_set_err(err, errlen, "negative duration '%s' is not allowed (%s)", s, DURATION_HINT);
        return -1;
    }
    const char *p = s;
    int64_t n;
    int digits = read_uint(&p, &n);
    if (digits == 0 || *p == '.') {
        query_set_err(err, errlen, "invalid duration '%s' (%s)", s, DURATION_HINT);
        return -1;
    }
    int64_t unit = *p ? unit_ms(p, 1) : 1000;
    if (unit == 0) {
        query_set_err(err, errlen, "invalid unit '%s' in '%s' (expected ms, s, m, h, d or w)", p, s);
        return -1;
    }
    if (digits < 0 || n > INT64_MAX / unit) {
        query_set_err(err, errlen, "duration '%s' is too large", s);
        return -1;
    }
    *out_ms = n * unit;
    return 0;
}

/* ---- now and now-<N><unit> -------------------------------------------- */

static int parse_now(const char *s, int64_t now_ms, int64_t *out_ms, char *err, size_t errlen)
{
    const char *p = s + 3; /* past "now" */
    if (*p == '\0') {
        *out_ms = now_ms;
        return 0;
    }
    if (*p == '+') {
        query_set_err(err, errlen, "invalid time '%s' (only past offsets are supported: now-<N><unit> like now-1h)", s);
        return -1;
    }
    if (*p != '-') {
        query_set_err(err, errlen, "invalid time '%s' (%s)", s, TIME_HINT);
        return -1;
    }
    p++;
    int64_t n;
    int digits = read_uint(&p, &n);
    if (digits == 0 || *p == '.') {
        query_set_err(err, errlen, "invalid time '%s' (expected now-<N><unit> with a whole number N, like now-1h or now-30m)", s);
        return -1;
    }
    if (*p == '\0') {
        query_set_err(err, errlen, "missing unit in '%s' (expected s, m, h, d or w, like now-1h)", s);
        return -1;
    }
    int64_t unit = unit_ms(p, 0);
    if (unit == 0) {
        query_set_err(err, errlen, "invalid unit '%s' in '%s' (expected s, m, h, d or w)", p, s);
        return -1;
    }
    if (digits < 0 || n > INT64_MAX / unit || now_ms - n * unit < 0) {
        query_set_err(err, errlen, "time '%s' is before 1970-01-01T00:00:00Z", s);
        return -1;
    }
    *out_ms = now_ms - n * unit;
    return 0;
}

/* ---- unix seconds ------------------------------------------------------ */

/* Reads ".ddd..." at *p as milliseconds (digits past the third are
 * dropped).  Returns -1 when the '.' has no digit after it. */
static int read_fraction_ms(const char **p, int64_t *ms)
{
    *ms = 0;
    if (**p != '.')
        return 0;
    (*p)++;
    if (!is_digit(**p))
        return -1;
    int64_t scale = 100;
    while (is_digit(**p)) {
        *ms += (**p - '0') * scale;
        scale /= 10;
        (*p)++;
    }
    return 0;
}

static int parse_unix(const char *s, int64_t *out_ms, char *err, size_t errlen)
{
    const char *p = s;
    int64_t sec, frac;
    int digits = read_uint(&p, &sec);
    if (read_fraction_ms(&p, &frac) < 0 || *p != '\0') {
        query_set_err(err, errlen, "invalid time '%s' (%s)", s, TIME_HINT);
        return -1;
    }
    if (digits < 0 || sec > MAX_SECONDS) {
        query_set_err(err, errlen, "time '%s' is beyond year 9999 (unix seconds are expected, not milliseconds)", s);
        return -1;
    }
    *out_ms = sec * 1000 + frac;
    return 0;
}

/* ---- RFC 3339 ---------------------------------------------------------- */

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int64_t m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* A cursor over an RFC 3339 string; on the first syntax error it writes the
 * message and every later step is a no-op. */
typedef struct {
    const char *s;
    const char *p;
    int failed;
    char *err;
    size_t errlen;
} rfc_cursor;

static void rfc_fail(rfc_cursor *c, const char *what)
{
    if (c->failed)
        return;
    c->failed = 1;
    query_set_err(c->err, c->errlen, "invalid time '%s': expected %s at column %d (%s)", c->s, what,
            (int)(c->p - c->s) + 1, RFC_HINT);
}

/* Reads exactly `width` digits; an error points at the field's start. */
static int64_t rfc_digits(rfc_cursor *c, int width, const char *what)
{
    const char *start = c->p;
    int64_t v = 0;
    for (int i = 0; i < width && !c->failed; i++) {
        if (!is_digit(*c->p)) {
            c->p = start;
            rfc_fail(c, what);
            return 0;
        }
        v = v * 10 + (*c->p - '0');
        c->p++;
    }
    return v;
}

static void rfc_char(rfc_cursor *c, const char *accepted, const char *what)
{
    if (c->failed)
        return;
    if (*c->p == '\0' || !strchr(accepted, *c->p)) {
        rfc_fail(c, what);
        return;
    }
    c->p++;
}

/* Reads the zone: Z, z or [+-]HH:MM.  Returns the offset east of UTC in
 * seconds; *oh and *om get the parts for range checks. */
static int64_t rfc_zone(rfc_cursor *c, int64_t *oh, int64_t *om)
{
    *oh = *om = 0;
    if (c->failed)
        return 0;
    char z = *c->p;
    if (z == 'Z' || z == 'z') {
        c->p++;
        return 0;
    }
    if (z == ' ' && is_digit(c->p[1])) {
        rfc_fail(c, "'Z' or an offset like +02:00 (in a URL, write '+' as %2B)");
        return 0;
    }
    if (z == '\0') {
        rfc_fail(c, "a time zone: 'Z' for UTC or an offset like +02:00");
        return 0;
    }
    if (z != '+' && z != '-') {
        rfc_fail(c, "'Z' or an offset like +02:00");
        return 0;
    }
    c->p++;
    *oh = rfc_digits(c, 2, "offset hours (two digits)");
    rfc_char(c, ":", "':' in the offset");
    *om = rfc_digits(c, 2, "offset minutes (two digits)");
    int64_t off = *oh * 3600 + *om * 60;
    return z == '-' ? -off : off;
}

static int parse_rfc3339(const char *s, int64_t *out_ms, char *err, size_t errlen)
{
    rfc_cursor c = {s, s, 0, err, errlen};
    int64_t y = rfc_digits(&c, 4, "a four-digit year");
    rfc_char(&c, "-", "'-' after the year");
    int64_t mo = rfc_digits(&c, 2, "a two-digit month");
    rfc_char(&c, "-", "'-' after the month");
    int64_t d = rfc_digits(&c, 2, "a two-digit day");
    rfc_char(&c, "Tt ", "'T' between date and time");
    int64_t h = rfc_digits(&c, 2, "two-digit hours");
    rfc_char(&c, ":", "':' after the hours");
    int64_t mi = rfc_digits(&c, 2, "two-digit minutes");
    rfc_char(&c, ":", "':' after the minutes");
    int64_t sec = rfc_digits(&c, 2, "two-digit seconds");
    int64_t frac = 0;
    if (!c.failed && read_fraction_ms(&c.p, &frac) < 0)
        rfc_fail(&c, "digits after '.'");
    int64_t oh, om;
    int64_t offset = rfc_zone(&c, &oh, &om);
    if (!c.failed && *c.p != '\0')
        rfc_fail(&c, "the end of the time");
    if (c.failed)
        return -1;

    if (mo < 1 || mo > 12) {
        query_set_err(err, errlen, "invalid time '%s': month %d is out of range (1-12)", s, (int)mo);
        return -1;
    }
    int dim = days_in_month(y, mo);
    if (d < 1 || d > dim) {
        query_set_err(err, errlen, "invalid time '%s': day %d is out of range (%04d-%02d has %d days)", s,
                (int)d, (int)y, (int)mo, dim);
        return -1;
    }
    if (h > 23 || mi > 59 || sec > 60) {
        const char *what = h > 23 ? "hour" : mi > 59 ? "minute" : "second";
        int64_t v = h > 23 ? h : mi > 59 ? mi : sec;
        const char *range = h > 23 ? "0-23" : mi > 59 ? "0-59" : "0-60";
        query_set_err(err, errlen, "invalid time '%s': %s %d is out of range (%s)", s, what, (int)v, range);
        return -1;
    }
    if (oh > 23 || om > 59) {
        query_set_err(err, errlen, "invalid time '%s': offset %02d:%02d is out of range (hours 0-23, minutes 0-59)", s,
                (int)oh, (int)om);
        return -1;
    }
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
    if (secs < 0) {
        query_set_err(err, errlen, "time '%s' is before 1970-01-01T00:00:00Z", s);
        return -1;
    }
    if (secs > MAX_SECONDS) {
        query_set_err(err, errlen, "time '%s' is beyond year 9999", s);
        return -1;
    }
    *out_ms = secs * 1000 + frac;
    return 0;
}

/* ---- dispatch ---------------------------------------------------------- */

int query_time_parse(const char *s, int64_t now_ms, int64_t *out_ms, char *err, size_t errlen)
{
    if (!s || !*s) {
        query_set_err(err, errlen, "empty time (%s)", TIME_HINT);
        return -1;
    }
    if (strncmp(s, "now", 3) == 0)
        return parse_now(s, now_ms, out_ms, err, errlen);
    if (s[0] == '-' && is_digit(s[1])) {
        query_set_err(err, errlen, "invalid time '%s': negative unix time is not allowed", s);
        return -1;
    }
    if (is_digit(s[0])) {
        int run = 0;
        while (is_digit(s[run]))
            run++;
        if (run == 4 && s[4] == '-')
            return parse_rfc3339(s, out_ms, err, errlen);
        return parse_unix(s, out_ms, err, errlen);
    }
    query_set_err(err, errlen, "invalid time '%s' (%s)", s, TIME_HINT);
    return -1;
}

json_t *query_time_json(int64_t ms)
{
    return ms % 1000 == 0 ? json_integer(ms / 1000) : json_real((double)ms / 1000.0);
}
