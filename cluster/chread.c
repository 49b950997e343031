/* chread.c — reading flamedb's data back from ClickHouse; see chread.h. */
#include "chread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chclient.h"
#include "chrow.h"

#define HOUR_MS 3600000LL
#define TEN_MIN_MS 600000LL
#define SQL_MAX (4u << 20)      /* a statement with 100,000 stack ids is ~3.5 MB */

struct chread {
    ch_client *c;
    chschema_options schema;
    char db[128];
    char err[1024];
};

chread *chread_open(const char *url, const chschema_options *schema, int timeout_ms, char *err, size_t errlen)
{
    chread *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ch_options co = { .url = url, .timeout_ms = timeout_ms ? timeout_ms : 30000 };
    if (ch_open(&r->c, &co, err, errlen) != CH_OK) {
        free(r);
        return NULL;
    }
    r->schema = *schema;
    snprintf(r->db, sizeof r->db, "%s", schema->database ? schema->database : "flamedb");
    r->schema.database = r->db;
    return r;
}

void chread_close(chread *c)
{
    if (!c) return;
    ch_close(c->c);
    free(c);
}

const char *chread_error(const chread *c)
{
    return c->err;
}

static int64_t floor_to(int64_t t, int64_t size)
{
    return (t >= 0 ? t / size : (t - size + 1) / size) * size;
}

/* As storage's plan(): whole buckets of the coarsest level first, the
 * edges left to the finer ones, raw rows last. */
static size_t plan(int64_t from, int64_t until, int level, chread_piece *out, size_t n)
{
    static const struct { const char *table; int64_t size; } levels[] = {
        { "samples_1h", HOUR_MS }, { "samples_10m", TEN_MIN_MS } };
    if (from >= until) return n;
    if (level >= 2) {
        out[n++] = (chread_piece){ "samples", "window_start", from, until };
        return n;
    }
    int64_t size = levels[level].size, a = -floor_to(-from, size), b = floor_to(until, size);
    if (a >= b) return plan(from, until, level + 1, out, n);
    n = plan(from, a, level + 1, out, n);
    out[n++] = (chread_piece){ levels[level].table, "bucket", a, b };
    return plan(b, until, level + 1, out, n);
}

size_t chread_plan(int64_t from_ms, int64_t until_ms, chread_piece out[5])
{
    return plan(from_ms, until_ms, 0, out, 0);
}

int chread_series_in(const chread *c, const char *where, char *out, size_t cap)
{
    char t[256];
    chschema_table(&c->schema, "series", t, sizeof t);
    int n = snprintf(out, cap, "(tenant, series) GLOBAL IN (SELECT tenant, series FROM %s WHERE %s)", t, where);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int fail(chread *c, const char *what)
{
    snprintf(c->err, sizeof c->err, "%s: %s", what, ch_errmsg(c->c));
    return -1;
}

int chread_merge(chread *c, const char *cond, int64_t from_ms, int64_t until_ms,
                 void (*fn)(void *ctx, const chread_sum *row), void *ctx)
{
    chread_piece p[5];
    size_t np = chread_plan(from_ms, until_ms, p);
    if (!np) return 0;
    char *sql = malloc(SQL_MAX);
    if (!sql) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    size_t len = (size_t)snprintf(sql, SQL_MAX, "SELECT tenant, series, unit, rate, gauge, stack, sum(v) FROM (");
    for (size_t i = 0; i < np && len < SQL_MAX; i++) {
        char t[256];
        chschema_table(&c->schema, p[i].table, t, sizeof t);
        len += (size_t)snprintf(sql + len, SQL_MAX - len,
                                "%sSELECT tenant, series, unit, rate, gauge, stack, value AS v FROM %s "
                                "WHERE %s >= %lld AND %s < %lld AND %s",
                                i ? " UNION ALL " : "", t, p[i].column, (long long)p[i].from, p[i].column,
                                (long long)p[i].until, cond);
    }
    if (len < SQL_MAX)
        len += (size_t)snprintf(sql + len, SQL_MAX - len,
                                ") GROUP BY tenant, series, unit, rate, gauge, stack FORMAT RowBinary");
    if (len >= SQL_MAX) {
        free(sql);
        snprintf(c->err, sizeof c->err, "the statement passed %u bytes", SQL_MAX);
        return -1;
    }
    chrow_reader rows;
    ch_status s = ch_select(c->c, sql, NULL, &rows);
    free(sql);
    if (s != CH_OK) return fail(c, "merging");
    while (chrow_more(&rows)) {
        chread_sum row;
        if (chrow_get_string(&rows, &row.tenant, &row.tenant_len) < 0) break;
        row.series = chrow_get_u64(&rows);
        if (chrow_get_string(&rows, &row.unit, &row.unit_len) < 0) break;
        row.rate = chrow_get_f64(&rows);
        row.gauge = chrow_get_u8(&rows);
        row.stack = chrow_get_fixed(&rows, 16);
        row.value = chrow_get_u64(&rows);
        if (chrow_failed(&rows)) break;
        fn(ctx, &row);
    }
    if (chrow_failed(&rows)) {
        snprintf(c->err, sizeof c->err, "merging: an answer that does not read (%s)", chrow_failed(&rows));
        return -1;
    }
    return 0;
}

int chread_frames(chread *c, const uint8_t (*stacks)[16], size_t n,
                  void (*fn)(void *ctx, const uint8_t *stack, const char *frames, size_t len), void *ctx)
{
    static const char hex[] = "0123456789abcdef";
    const size_t batch = 50000;   /* ~1.8 MB of SQL */
    char *sql = malloc(SQL_MAX);
    if (!sql) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    char t[256];
    chschema_table(&c->schema, "stacks", t, sizeof t);
    for (size_t a = 0; a < n; a += batch) {
        size_t b = a + batch < n ? a + batch : n;
        size_t len = (size_t)snprintf(sql, SQL_MAX, "SELECT stack, any(frames) FROM %s WHERE stack IN (", t);
        for (size_t i = a; i < b; i++) {
            /* unhex('...'): a FixedString(16) compares with the 16 bytes */
            memcpy(sql + len, i > a ? ",unhex('" : "unhex('", i > a ? 8 : 7);
            len += i > a ? 8 : 7;
            for (int k = 0; k < 16; k++) {
                sql[len++] = hex[stacks[i][k] >> 4];
                sql[len++] = hex[stacks[i][k] & 15];
            }
            sql[len++] = '\'';
            sql[len++] = ')';
        }
        len += (size_t)snprintf(sql + len, SQL_MAX - len, ") GROUP BY stack FORMAT RowBinary");
        chrow_reader rows;
        if (ch_select(c->c, sql, NULL, &rows) != CH_OK) {
            free(sql);
            return fail(c, "reading the stacks' frames");
        }
        while (chrow_more(&rows)) {
            const uint8_t *id = chrow_get_fixed(&rows, 16);
            const char *f;
            size_t fl;
            if (!id || chrow_get_string(&rows, &f, &fl) < 0) break;
            fn(ctx, id, f, fl);
        }
        if (chrow_failed(&rows)) {
            free(sql);
            snprintf(c->err, sizeof c->err, "reading the stacks' frames: an answer that does not read (%s)",
                     chrow_failed(&rows));
            return -1;
        }
    }
    free(sql);
    return 0;
}
