/* chread.c — reading flamedb's data back from ClickHouse; see chread.h. */
#include "chread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chclient.h"
#include "chrow.h"
#include "chselect.h"

#define HOUR_MS 3600000LL
#define TEN_MIN_MS 600000LL
#define SQL_MAX (4u << 20)      /* a statement with 100,000 stack ids is ~3.5 MB */

struct chread {
    ch_client *c;
    chschema_options schema;
    char db[128];
    char err[1024];
    int skip;        /* skip_unavailable_shards */
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

int chread_code(const chread *c)
{
    return ch_server_code(c->c);
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

static ch_query_opts load_opts(const chread *c, ch_setting set[2]);

static int fail(chread *c, const char *what)
{
    snprintf(c->err, sizeof c->err, "%s: %s", what, ch_errmsg(c->c));
    return -1;
}

/* step 0, or the range or more: one window, the whole range */
static int64_t window_step(const chread_windows *w)
{
    return w->step > 0 && w->step < w->until - w->from ? w->step : w->until - w->from;
}

int chread_window(const chread_windows *w, uint64_t i, int64_t *from_ms, int64_t *until_ms)
{
    int64_t step = window_step(w);
    if (w->from >= w->until || i >= (uint64_t)((w->until - w->from + step - 1) / step)) return -1;
    *from_ms = w->from + (int64_t)i * step;
    *until_ms = *from_ms + step < w->until ? *from_ms + step : w->until;
    return 0;
}

/* One table's share of a merge's pieces: its time ranges in time order,
 * adjacent ones joined. */
typedef struct {
    chread_piece *r;
    size_t n;
} table_ranges;

static void ranges_add(table_ranges *t, const chread_piece *p)
{
    if (t->n && t->r[t->n - 1].until == p->from) t->r[t->n - 1].until = p->until;
    else t->r[t->n++] = *p;
}

/* "SELECT head FROM (<pieces>) tail": the pieces of every window of w as
 * chread_plan cuts it, one "SELECT <cols>, <window> AS w FROM <table>
 * WHERE (<time> in its ranges) AND cond" a table, UNION ALL'd; raw_cols
 * for the raw table (`kind`), rollup_cols for its 1 h and 10 min rollups
 * (`kind`_1h, `kind`_10m).  A piece lies in one window, and a profile in
 * the window its start falls in, so the window number w is
 * intDiv(<time> - from, step) wherever the row comes from.  A malloc'd
 * statement, or NULL (out of memory, or an empty range: *empty). */
static char *pieces_sql(const chread *c, const char *head, const char *kind, const char *raw_cols,
                        const char *rollup_cols, const char *cond, const chread_windows *w, const char *tail,
                        int *empty)
{
    static const char *const tables[3] = { "samples", "samples_10m", "samples_1h" };
    *empty = w->from >= w->until;
    if (*empty) return NULL;
    int64_t step = window_step(w);
    size_t nw = (size_t)((w->until - w->from + step - 1) / step);
    table_ranges t[3] = { 0 };
    char *sql = NULL;
    for (int k = 0; k < 3; k++)
        if (!(t[k].r = malloc((2 * nw + 1) * sizeof *t[k].r))) goto done;
    int64_t ws, we;
    for (size_t i = 0; !chread_window(w, i, &ws, &we); i++) {
        chread_piece p[5];
        size_t np = chread_plan(ws, we, p);
        for (size_t j = 0; j < np; j++)
            for (int k = 0; k < 3; k++)
                if (!strcmp(p[j].table, tables[k])) ranges_add(&t[k], &p[j]);
    }
    size_t cap = strlen(head) + strlen(tail) + 64;
    for (int k = 0; k < 3; k++)
        if (t[k].n) cap += strlen(cond) + strlen(raw_cols) + strlen(rollup_cols) + 512 + t[k].n * 80;
    if (!(sql = malloc(cap))) goto done;
    size_t len = (size_t)snprintf(sql, cap, "SELECT %s FROM (", head);
    int first = 1;
    for (int k = 0; k < 3; k++) {
        if (!t[k].n) continue;
        char name[64], tn[256];
        const char *suffix = strchr(tables[k], '_');   /* samples_1h -> _1h; samples -> none */
        const char *col = suffix ? "bucket" : "window_start";
        snprintf(name, sizeof name, "%s%s", kind, suffix ? suffix : "");
        chschema_table(&c->schema, name, tn, sizeof tn);
        len += (size_t)snprintf(sql + len, cap - len, "%sSELECT %s, toUInt32(intDiv(%s - %lld, %lld)) AS w FROM %s WHERE (",
                                first ? "" : " UNION ALL ", suffix ? rollup_cols : raw_cols, col,
                                (long long)w->from, (long long)step, tn);
        for (size_t i = 0; i < t[k].n; i++)
            len += (size_t)snprintf(sql + len, cap - len, "%s%s >= %lld AND %s < %lld", i ? " OR " : "", col,
                                    (long long)t[k].r[i].from, col, (long long)t[k].r[i].until);
        len += (size_t)snprintf(sql + len, cap - len, ") AND %s", cond);
        first = 0;
    }
    snprintf(sql + len, cap - len, ")%s", tail);
done:
    for (int k = 0; k < 3; k++) free(t[k].r);
    return sql;
}

int chread_merge(chread *c, const char *cond, const chread_windows *w, void (*fn)(void *ctx, const chread_sum *row),
                 void *ctx)
{
    int empty;
    const char *cols = "tenant, series, unit, rate, gauge, stack, value AS v";
    char *sql = pieces_sql(c, "w, tenant, series, unit, rate, gauge, stack, sum(v)", "samples", cols, cols, cond, w,
                           " GROUP BY w, tenant, series, unit, rate, gauge, stack FORMAT RowBinary", &empty);
    if (!sql) {
        if (empty) return 0;
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    chrow_reader rows;
    ch_setting set[2];
    ch_query_opts qo = load_opts(c, set);
    ch_status s = ch_select(c->c, sql, &qo, &rows);
    free(sql);
    if (s != CH_OK) return fail(c, "merging");
    while (chrow_more(&rows)) {
        chread_sum row;
        row.window = chrow_get_u32(&rows);
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
    const size_t batch = 10000;   /* ~360 KB of SQL; ClickHouse counts ~3 AST elements an id, 50,000 at most */
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
        ch_setting set[2];
        ch_query_opts qo = load_opts(c, set);
        if (ch_select(c->c, sql, &qo, &rows) != CH_OK) {
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

/* ---- what a front end's reader loads ---- */

void chread_set_skip_unavailable(chread *c, int skip)
{
    c->skip = skip;
}

/* Every read's settings: a statement may name thousands of series. */
static ch_query_opts load_opts(const chread *c, ch_setting set[2])
{
    set[0] = (ch_setting){ "max_query_size", "67108864" };
    set[1] = (ch_setting){ "skip_unavailable_shards", "1" };
    return (ch_query_opts){ .settings = set, .n_settings = c->skip ? 2 : 1 };
}

static int select_rows(chread *c, const char *sql, const char *what, chrow_reader *rows)
{
    ch_setting set[2];
    ch_query_opts qo = load_opts(c, set);
    if (ch_select(c->c, sql, &qo, rows) != CH_OK) return fail(c, what);
    return 0;
}

static int unreadable(chread *c, const char *what, const chrow_reader *rows)
{
    snprintf(c->err, sizeof c->err, "%s: an answer that does not read (%s at byte %zu)", what, chrow_failed(rows),
             chrow_offset(rows));
    return -1;
}

int chread_series_version(chread *c, uint64_t *version)
{
    char t[256], sql[512];
    chschema_table(&c->schema, "series", t, sizeof t);
    snprintf(sql, sizeof sql, "SELECT count() FROM %s FORMAT RowBinary", t);
    chrow_reader rows;
    if (select_rows(c, sql, "reading the series table", &rows)) return -1;
    *version = chrow_get_u64(&rows);
    if (chrow_failed(&rows)) return unreadable(c, "reading the series table", &rows);
    return 0;
}

int chread_series_all(chread *c, int (*fn)(void *ctx, const chread_series_row *row), void *ctx)
{
    char t[256], sql[768];
    chschema_table(&c->schema, "series", t, sizeof t);
    snprintf(sql, sizeof sql,
             "SELECT tenant, series, any(label_names), any(label_values) FROM %s GROUP BY tenant, series "
             "ORDER BY tenant, series FORMAT RowBinary", t);
    chrow_reader rows;
    if (select_rows(c, sql, "reading the series", &rows)) return -1;
    const char **names = NULL, **values = NULL;
    size_t *nl = NULL, *vl = NULL, cap = 0;
    int rc = 0;
    while (!rc && chrow_more(&rows)) {
        chread_series_row row;
        if (chrow_get_string(&rows, &row.tenant, &row.tenant_len) < 0) break;
        row.series = chrow_get_u64(&rows);
        uint64_t n = chrow_get_array_len(&rows, 1);
        if (n > cap) {
            cap = n;
            names = realloc(names, cap * sizeof *names);
            values = realloc(values, cap * sizeof *values);
            nl = realloc(nl, cap * sizeof *nl);
            vl = realloc(vl, cap * sizeof *vl);
            if (!names || !values || !nl || !vl) {
                snprintf(c->err, sizeof c->err, "out of memory reading the series");
                rc = -1;
                break;
            }
        }
        for (uint64_t i = 0; i < n; i++) chrow_get_string(&rows, &names[i], &nl[i]);
        uint64_t nv = chrow_get_array_len(&rows, 1);
        for (uint64_t i = 0; i < nv && i < n; i++) chrow_get_string(&rows, &values[i], &vl[i]);
        if (chrow_failed(&rows)) break;
        if (nv != n) {
            snprintf(c->err, sizeof c->err, "series %llu has %llu label names and %llu values",
                     (unsigned long long)row.series, (unsigned long long)n, (unsigned long long)nv);
            rc = -1;
            break;
        }
        row.n_labels = n;
        row.names = names;
        row.values = values;
        row.name_lens = nl;
        row.value_lens = vl;
        rc = fn(ctx, &row);
    }
    free(names);
    free(values);
    free(nl);
    free(vl);
    if (!rc && chrow_failed(&rows)) return unreadable(c, "reading the series", &rows);
    return rc;
}

static int get_key(chrow_reader *rows, chread_key *k)
{
    if (chrow_get_string(rows, &k->tenant, &k->tenant_len) < 0) return -1;
    k->series = chrow_get_u64(rows);
    k->window_start = chrow_get_i64(rows);
    k->batch = chrow_get_u64(rows);
    if (chrow_get_string(rows, &k->unit, &k->unit_len) < 0) return -1;
    return chrow_failed(rows) ? -1 : 0;
}

int chread_load(chread *c, const char *cond, int64_t from_ms, int64_t until_ms,
                int (*frames_fn)(void *ctx, const uint8_t *stack, const char *frames, size_t len),
                int (*profile_fn)(void *ctx, const chread_profile_row *row),
                int (*sample_fn)(void *ctx, const chread_sample_row *row), void *ctx)
{
    char ts[256], tp[256], tk[256];
    chschema_table(&c->schema, "samples", ts, sizeof ts);
    chschema_table(&c->schema, "profiles", tp, sizeof tp);
    chschema_table(&c->schema, "stacks", tk, sizeof tk);
    size_t cap = strlen(cond) + 2048;
    char *sql = malloc(cap);
    if (!sql) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    const char *key = "tenant, series, window_start, batch, unit";
    chrow_reader rows;
    int rc = 0;
    /* 1. the frames of the stacks the range uses */
    snprintf(sql, cap,
             "SELECT stack, any(frames) FROM %s WHERE stack GLOBAL IN (SELECT stack FROM %s WHERE window_start >= "
             "%lld AND window_start < %lld AND %s) GROUP BY stack FORMAT RowBinary",
             tk, ts, (long long)from_ms, (long long)until_ms, cond);
    if ((rc = select_rows(c, sql, "reading the stacks' frames", &rows))) goto out;
    while (!rc && chrow_more(&rows)) {
        const uint8_t *id = chrow_get_fixed(&rows, 16);
        const char *f;
        size_t fl;
        if (!id || chrow_get_string(&rows, &f, &fl) < 0) break;
        rc = frames_fn(ctx, id, f, fl);
    }
    if (!rc && chrow_failed(&rows)) rc = unreadable(c, "reading the stacks' frames", &rows);
    if (rc) goto out;
    /* 2. the profiles */
    snprintf(sql, cap,
             "SELECT %s, window_ms, rate, gauge, samples, samples_known FROM %s WHERE window_start >= %lld AND "
             "window_start < %lld AND %s ORDER BY %s FORMAT RowBinary",
             key, tp, (long long)from_ms, (long long)until_ms, cond, key);
    if ((rc = select_rows(c, sql, "reading the profiles", &rows))) goto out;
    while (!rc && chrow_more(&rows)) {
        chread_profile_row p;
        if (get_key(&rows, &p.key)) break;
        p.window_ms = chrow_get_u32(&rows);
        p.rate = chrow_get_f64(&rows);
        p.gauge = chrow_get_u8(&rows);
        p.samples = chrow_get_u64(&rows);
        p.samples_known = chrow_get_u8(&rows);
        if (chrow_failed(&rows)) break;
        rc = profile_fn(ctx, &p);
    }
    if (!rc && chrow_failed(&rows)) rc = unreadable(c, "reading the profiles", &rows);
    if (rc) goto out;
    /* 3. their samples, a profile's together */
    snprintf(sql, cap,
             "SELECT %s, stack, value FROM %s WHERE window_start >= %lld AND window_start < %lld AND %s ORDER BY %s "
             "FORMAT RowBinary",
             key, ts, (long long)from_ms, (long long)until_ms, cond, key);
    if ((rc = select_rows(c, sql, "reading the samples", &rows))) goto out;
    while (!rc && chrow_more(&rows)) {
        chread_sample_row sr;
        if (get_key(&rows, &sr.key)) break;
        sr.stack = chrow_get_fixed(&rows, 16);
        sr.value = chrow_get_u64(&rows);
        if (chrow_failed(&rows)) break;
        rc = sample_fn(ctx, &sr);
    }
    if (!rc && chrow_failed(&rows)) rc = unreadable(c, "reading the samples", &rows);
out:
    free(sql);
    return rc;
}

int chread_extents(chread *c, const char *cond, int (*fn)(void *ctx, const chread_extent_row *row), void *ctx)
{
    char tp[256];
    chschema_table(&c->schema, "profiles", tp, sizeof tp);
    size_t cap = strlen(cond) + 1024;
    char *sql = malloc(cap);
    if (!sql) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    /* of equal starts, any one's window (a single node answers the first
     * or last stored) */
    snprintf(sql, cap,
             "SELECT tenant, series, min(window_start), max(window_start), "
             "argMin(window_ms, window_start), argMax(window_ms, window_start) "
             "FROM %s WHERE %s GROUP BY tenant, series FORMAT RowBinary", tp, cond);
    chrow_reader rows;
    int rc = select_rows(c, sql, "reading the series' extents", &rows);
    free(sql);
    while (!rc && chrow_more(&rows)) {
        chread_extent_row e;
        if (chrow_get_string(&rows, &e.tenant, &e.tenant_len) < 0) break;
        e.series = chrow_get_u64(&rows);
        e.first_from = chrow_get_i64(&rows);
        e.last_from = chrow_get_i64(&rows);
        e.first_until = e.first_from + chrow_get_u32(&rows);
        e.last_until = e.last_from + chrow_get_u32(&rows);
        if (chrow_failed(&rows)) break;
        rc = fn(ctx, &e);
    }
    if (!rc && chrow_failed(&rows)) rc = unreadable(c, "reading the series' extents", &rows);
    return rc;
}

int chread_down_shards(chread *c, char *out, size_t cap)
{
    out[0] = '\0';
    if (!c->schema.cluster || !c->schema.cluster[0]) return 0;
    char sql[1024], q[300] = "";
    if (chselect_quote(c->schema.cluster, q, sizeof q) < 0) return 0;
    snprintf(sql, sizeof sql,
             "SELECT shard_num, host_name, port FROM system.clusters WHERE cluster = %s ORDER BY shard_num, "
             "replica_num FORMAT RowBinary", q);
    chrow_reader rows;
    ch_setting set[2];
    ch_query_opts qo = load_opts(c, set);
    qo.n_settings = 1;
    if (ch_select(c->c, sql, &qo, &rows) != CH_OK) return 0;
    /* copied: each probe below reuses the client's answer buffer */
    struct { uint32_t shard; char host[128]; uint16_t port; } rep[64];
    int n = 0;
    while (n < 64 && chrow_more(&rows)) {
        const char *h;
        size_t hl;
        rep[n].shard = chrow_get_u32(&rows);
        if (chrow_get_string(&rows, &h, &hl) < 0 || hl >= sizeof rep[n].host) break;
        memcpy(rep[n].host, h, hl);
        rep[n].host[hl] = '\0';
        rep[n].port = chrow_get_u16(&rows);
        if (chrow_failed(&rows)) break;
        n++;
    }
    int down = 0;
    size_t len = 0;
    for (int a = 0, b; a < n; a = b) {
        int alive = 0;
        char where[512] = "";
        size_t wl = 0;
        for (b = a; b < n && rep[b].shard == rep[a].shard; b++) {
            char hp[160], probe[512];
            snprintf(hp, sizeof hp, "%s:%u", rep[b].host, (unsigned)rep[b].port);
            if (!alive) {
                char qhp[200] = "";
                if (chselect_quote(hp, qhp, sizeof qhp) < 0) continue;
                snprintf(probe, sizeof probe, "SELECT 1 FROM remote(%s, system.one) FORMAT RowBinary", qhp);
                chrow_reader one;
                if (ch_select(c->c, probe, NULL, &one) == CH_OK) alive = 1;
            }
            wl += (size_t)snprintf(where + wl, wl < sizeof where ? sizeof where - wl : 0, "%s%s", b > a ? ", " : "", hp);
        }
        if (alive) continue;
        down++;
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len, "%sshard %u (%s)", len ? ", " : "", (unsigned)rep[a].shard,
                                    where);
    }
    return down;
}

int chread_presence(chread *c, const char *cond, int64_t from_ms, int64_t until_ms,
                    int (*fn)(void *ctx, const char *tenant, size_t tenant_len, uint64_t series), void *ctx)
{
    char tp[256];
    chschema_table(&c->schema, "profiles", tp, sizeof tp);
    size_t cap = strlen(cond) + 512;
    char *sql = malloc(cap);
    if (!sql) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    snprintf(sql, cap,
             "SELECT DISTINCT tenant, series FROM %s WHERE window_start >= %lld AND window_start < %lld AND %s "
             "FORMAT RowBinary", tp, (long long)from_ms, (long long)until_ms, cond);
    chrow_reader rows;
    int rc = select_rows(c, sql, "finding the series with data", &rows);
    free(sql);
    while (!rc && chrow_more(&rows)) {
        const char *t;
        size_t tl;
        if (chrow_get_string(&rows, &t, &tl) < 0) break;
        uint64_t series = chrow_get_u64(&rows);
        if (chrow_failed(&rows)) break;
        rc = fn(ctx, t, tl, series);
    }
    if (!rc && chrow_failed(&rows)) rc = unreadable(c, "finding the series with data", &rows);
    return rc;
}

int chread_merge_profiles(chread *c, const char *cond, const chread_windows *w,
                          int (*fn)(void *ctx, const chread_profile_sum *row), void *ctx)
{
    int empty;
    char *sql = pieces_sql(c, "w, tenant, series, unit, rate, gauge, sum(p), sum(s), sum(u)", "profiles",
                           "tenant, series, unit, rate, gauge, toUInt64(1) AS p, samples AS s, "
                           "toUInt64(1 - samples_known) AS u",
                           "tenant, series, unit, rate, gauge, profiles AS p, samples AS s, samples_unknown AS u", cond,
                           w, " GROUP BY w, tenant, series, unit, rate, gauge FORMAT RowBinary", &empty);
    if (!sql) {
        if (empty) return 0;
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    chrow_reader rows;
    int rc = select_rows(c, sql, "merging the profiles' counts", &rows);
    free(sql);
    while (!rc && chrow_more(&rows)) {
        chread_profile_sum r;
        r.window = chrow_get_u32(&rows);
        if (chrow_get_string(&rows, &r.tenant, &r.tenant_len) < 0) break;
        r.series = chrow_get_u64(&rows);
        if (chrow_get_string(&rows, &r.unit, &r.unit_len) < 0) break;
        r.rate = chrow_get_f64(&rows);
        r.gauge = chrow_get_u8(&rows);
        r.profiles = chrow_get_u64(&rows);
        r.samples = chrow_get_u64(&rows);
        r.unknown = chrow_get_u64(&rows);
        if (chrow_failed(&rows)) break;
        rc = fn(ctx, &r);
    }
    if (!rc && chrow_failed(&rows)) rc = unreadable(c, "merging the profiles' counts", &rows);
    return rc;
}

int chread_merge_frames(chread *c, const char *cond, const chread_windows *w,
                        void (*fn)(void *ctx, const uint8_t *stack, const char *frames, size_t len), void *ctx)
{
    /* the stacks used, found where the data is (a GLOBAL IN ships the set
     * to the stacks table's shards once) */
    char tk[256], head[512];
    chschema_table(&c->schema, "stacks", tk, sizeof tk);
    snprintf(head, sizeof head, "stack, any(frames) FROM %s WHERE stack GLOBAL IN (SELECT stack", tk);
    int empty;
    char *sql = pieces_sql(c, head, "samples", "stack", "stack", cond, w, ") GROUP BY stack FORMAT RowBinary", &empty);
    if (!sql) {
        if (empty) return 0;
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    chrow_reader rows;
    int rc = select_rows(c, sql, "reading the stacks' frames", &rows);
    free(sql);
    while (!rc && chrow_more(&rows)) {
        const uint8_t *id = chrow_get_fixed(&rows, 16);
        const char *f;
        size_t fl;
        if (!id || chrow_get_string(&rows, &f, &fl) < 0) break;
        fn(ctx, id, f, fl);
    }
    if (!rc && chrow_failed(&rows)) rc = unreadable(c, "reading the stacks' frames", &rows);
    return rc;
}
