/* chschema.c — creates and checks flamedb's ClickHouse tables (see
 * chschema.h; the why of each table in docs/cluster.md).
 *
 * The tables are data: one spec each (columns, engine family, partition,
 * order, sharding key), turned into SQL for one server or ON CLUSTER, and
 * used again to check the columns ClickHouse reports.  Times are Int64
 * milliseconds like the rest of flamedb; days are UTC (toYYYYMMDD with an
 * explicit 'UTC', whatever the server's time zone), so retention drops the
 * same partitions on every server. */
#include "chschema.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name, *type;
} col;

typedef struct {
    const char *name;
    const col *cols;
    const char *engine;     /* MergeTree family, without Replicated */
    const char *partition;  /* NULL: none */
    const char *order;
    const char *shard_key;  /* the Distributed table's sharding expression */
    int rollup;             /* filled by a materialized view: see dedup below */
} table_spec;

#define DAY_OF(ms) "toYYYYMMDD(toDateTime(intDiv(" ms ", 1000), 'UTC'))"

static const col samples_cols[] = {
    {"tenant", "String"}, {"series", "UInt64"}, {"window_start", "Int64"}, {"window_ms", "UInt32"},
    {"unit", "String"},   {"rate", "Float64"},  {"gauge", "UInt8"},       {"stack", "FixedString(16)"},
    {"value", "UInt64"},  {"batch", "UInt64"},  {NULL, NULL}};
static const col profiles_cols[] = {
    {"tenant", "String"},  {"series", "UInt64"},       {"window_start", "Int64"}, {"window_ms", "UInt32"},
    {"unit", "String"},    {"rate", "Float64"},        {"gauge", "UInt8"},        {"samples", "UInt64"},
    {"samples_known", "UInt8"}, {"stacks", "UInt32"}, {"total", "UInt64"},        {"batch", "UInt64"},
    {NULL, NULL}};
static const col stacks_cols[] = {{"stack", "FixedString(16)"}, {"frames", "String"}, {NULL, NULL}};
static const col series_cols[] = {{"tenant", "String"},
                                  {"series", "UInt64"},
                                  {"label_names", "Array(String)"},
                                  {"label_values", "Array(String)"},
                                  {"first_seen", "Int64"},
                                  {NULL, NULL}};
static const col labels_cols[] = {
    {"tenant", "String"}, {"name", "String"}, {"value", "String"}, {"series", "UInt64"}, {NULL, NULL}};
static const col samples_rollup_cols[] = {
    {"tenant", "String"}, {"series", "UInt64"}, {"bucket", "Int64"},           {"unit", "String"},
    {"rate", "Float64"},  {"gauge", "UInt8"},   {"stack", "FixedString(16)"}, {"value", "UInt64"},
    {NULL, NULL}};
static const col profiles_rollup_cols[] = {
    {"tenant", "String"},  {"series", "UInt64"},  {"bucket", "Int64"},          {"unit", "String"},
    {"rate", "Float64"},   {"gauge", "UInt8"},    {"profiles", "UInt64"},       {"samples", "UInt64"},
    {"samples_unknown", "UInt64"}, {"total", "UInt64"}, {NULL, NULL}};
static const col meta_cols[] = {{"name", "String"}, {"value", "String"}, {NULL, NULL}};

static const table_spec tables[] = {
    {"meta", meta_cols, "MergeTree", NULL, "name", "rand()", 0},
    {"samples", samples_cols, "MergeTree", DAY_OF("window_start"), "(tenant, series, window_start, stack)", "series", 0},
    {"profiles", profiles_cols, "MergeTree", DAY_OF("window_start"), "(tenant, series, window_start, unit)", "series", 0},
    {"stacks", stacks_cols, "ReplacingMergeTree", NULL, "stack", "sipHash64(stack)", 0},
    {"series", series_cols, "ReplacingMergeTree", NULL, "(tenant, series)", "series", 0},
    {"labels", labels_cols, "ReplacingMergeTree", NULL, "(tenant, name, value, series)", "series", 0},
    {"samples_10m", samples_rollup_cols, "SummingMergeTree", DAY_OF("bucket"),
     "(tenant, series, bucket, unit, rate, gauge, stack)", "series", 1},
    {"samples_1h", samples_rollup_cols, "SummingMergeTree", DAY_OF("bucket"),
     "(tenant, series, bucket, unit, rate, gauge, stack)", "series", 1},
    {"profiles_10m", profiles_rollup_cols, "SummingMergeTree", DAY_OF("bucket"),
     "(tenant, series, bucket, unit, rate, gauge)", "series", 1},
    {"profiles_1h", profiles_rollup_cols, "SummingMergeTree", DAY_OF("bucket"),
     "(tenant, series, bucket, unit, rate, gauge)", "series", 1},
};
#define N_TABLES (sizeof tables / sizeof tables[0])

const char *const chschema_data_tables[] = {"samples",     "profiles",   "samples_10m",
                                            "samples_1h",  "profiles_10m", "profiles_1h"};
const size_t chschema_n_data_tables = sizeof chschema_data_tables / sizeof chschema_data_tables[0];

/* The views: target, source, bucket length in ms, the SELECT list. */
typedef struct {
    const char *target, *source;
    long bucket_ms;
    const char *select;
} view_spec;

static const view_spec views[] = {
    {"samples_10m", "samples", 600000, "tenant, series, intDiv(window_start, %ld) * %ld AS bucket, unit, rate, gauge, stack, value"},
    {"samples_1h", "samples", 3600000, "tenant, series, intDiv(window_start, %ld) * %ld AS bucket, unit, rate, gauge, stack, value"},
    {"profiles_10m", "profiles", 600000,
     "tenant, series, intDiv(window_start, %ld) * %ld AS bucket, unit, rate, gauge, toUInt64(1) AS profiles, samples, "
     "toUInt64(1 - samples_known) AS samples_unknown, total"},
    {"profiles_1h", "profiles", 3600000,
     "tenant, series, intDiv(window_start, %ld) * %ld AS bucket, unit, rate, gauge, toUInt64(1) AS profiles, samples, "
     "toUInt64(1 - samples_known) AS samples_unknown, total"},
};
#define N_VIEWS (sizeof views / sizeof views[0])

/* ---- names --------------------------------------------------------------- */

static int ident_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 64) return 0;
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

static const char *db_of(const chschema_options *o)
{
    return o && o->database ? o->database : "flamedb";
}

const char *chschema_table(const chschema_options *o, const char *table, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%s", db_of(o), table);
    return buf;
}

const char *chschema_local(const chschema_options *o, const char *table, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%s%s", db_of(o), table, o && o->cluster ? "_local" : "");
    return buf;
}

/* ---- SQL ----------------------------------------------------------------- */

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap <= b->len + (size_t)n) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static void sb_cols(sbuf *b, const col *c)
{
    sb_printf(b, " (");
    for (int i = 0; c[i].name; i++) sb_printf(b, "%s%s %s", i ? ", " : "", c[i].name, c[i].type);
    sb_printf(b, ")");
}

static int replicated(const chschema_options *o)
{
    if (o->replicated == CHSCHEMA_REPL_YES) return 1;
    if (o->replicated == CHSCHEMA_REPL_NO) return 0;
    return o->cluster != NULL;
}

static void sb_on_cluster(sbuf *b, const chschema_options *o)
{
    if (o->cluster) sb_printf(b, " ON CLUSTER %s", o->cluster);
}

/* CREATE TABLE of the data-holding table (the _local one in a cluster). */
static void sql_table(sbuf *b, const chschema_options *o, const table_spec *t)
{
    const char *db = db_of(o), *sfx = o->cluster ? "_local" : "";
    sb_printf(b, "CREATE TABLE IF NOT EXISTS %s.%s%s", db, t->name, sfx);
    sb_on_cluster(b, o);
    sb_cols(b, t->cols);
    if (replicated(o))
        sb_printf(b, " ENGINE = Replicated%s('/clickhouse/tables/{shard}/%s/%s%s', '{replica}')", t->engine, db, t->name,
                  sfx);
    else
        sb_printf(b, " ENGINE = %s()", t->engine);
    if (t->partition) sb_printf(b, " PARTITION BY %s", t->partition);
    sb_printf(b, " ORDER BY %s", t->order);
    /* A rollup's blocks come from a view: two different inserts into the
     * source can make identical rollup blocks (same stacks and values in
     * two windows of one bucket), which block deduplication must not drop.
     * 18.16 does not deduplicate blocks written by views (measured); this
     * says so to every version.  A retried source block never reaches the
     * view: it is deduplicated first (tests/cluster/test_dedup.sh). */
    if (replicated(o) && t->rollup) sb_printf(b, " SETTINGS replicated_deduplication_window = 0");
}

static void sql_distributed(sbuf *b, const chschema_options *o, const table_spec *t)
{
    const char *db = db_of(o);
    sb_printf(b, "CREATE TABLE IF NOT EXISTS %s.%s", db, t->name);
    sb_on_cluster(b, o);
    sb_cols(b, t->cols);
    sb_printf(b, " ENGINE = Distributed(%s, %s, %s_local, %s)", o->cluster, db, t->name, t->shard_key);
}

static void sql_view(sbuf *b, const chschema_options *o, const view_spec *v)
{
    const char *db = db_of(o), *sfx = o->cluster ? "_local" : "";
    sb_printf(b, "CREATE MATERIALIZED VIEW IF NOT EXISTS %s.%s_mv", db, v->target);
    sb_on_cluster(b, o);
    sb_printf(b, " TO %s.%s%s AS SELECT ", db, v->target, sfx);
    sb_printf(b, v->select, v->bucket_ms, v->bucket_ms);
    sb_printf(b, " FROM %s.%s%s", db, v->source, sfx);
}

/* ---- running ------------------------------------------------------------- */

static ch_status run(ch_client *c, const chschema_options *o, sbuf *b, char *err, size_t errlen)
{
    if (b->oom) {
        snprintf(err, errlen, "out of memory");
        return CH_ENOMEM;
    }
    char tmo[16];
    snprintf(tmo, sizeof tmo, "%d", o->ddl_timeout_s > 0 ? o->ddl_timeout_s : 60);
    ch_setting s = {"distributed_ddl_task_timeout", tmo};
    ch_query_opts qo = {NULL, &s, o->cluster ? 1 : 0};
    ch_status st = ch_exec(c, b->s, &qo);
    if (st != CH_OK) snprintf(err, errlen, "creating flamedb's tables: %s", ch_errmsg(c));
    b->len = 0;
    if (b->s) b->s[0] = '\0';
    return st;
}

/* The schema versions in the meta table, or *n = 0 when it has none (or
 * does not exist).  Up to max, distinct. */
static ch_status read_versions(ch_client *c, const chschema_options *o, long *v, int max, int *n, char *err,
                               size_t errlen)
{
    *n = 0;
    sbuf b = {0};
    const char *db = db_of(o);
    sb_printf(&b, "SELECT count() FROM system.tables WHERE database = '%s' AND name = 'meta' FORMAT RowBinary", db);
    chrow_reader r;
    ch_status st = b.oom ? CH_ENOMEM : ch_select(c, b.s, NULL, &r);
    uint64_t exists = st == CH_OK ? chrow_get_u64(&r) : 0;
    if (st == CH_OK && chrow_failed(&r)) st = CH_EPROTO;
    if (st == CH_OK && exists) {
        b.len = 0;
        sb_printf(&b, "SELECT DISTINCT value FROM %s.meta WHERE name = 'schema_version' FORMAT RowBinary", db);
        st = b.oom ? CH_ENOMEM : ch_select(c, b.s, NULL, &r);
        while (st == CH_OK && chrow_more(&r)) {
            const char *s;
            size_t len;
            if (chrow_get_string(&r, &s, &len) != 0) break;
            char tmp[24];
            if (len >= sizeof tmp) len = sizeof tmp - 1;
            memcpy(tmp, s, len);
            tmp[len] = '\0';
            char *end;
            long x = strtol(tmp, &end, 10);
            if (*end || end == tmp) x = -1;  /* not a number: some other schema */
            if (*n < max) v[(*n)++] = x;
        }
        if (st == CH_OK && chrow_failed(&r)) st = CH_EPROTO;
    }
    free(b.s);
    if (st == CH_EPROTO)
        snprintf(err, errlen, "reading flamedb's schema version from ClickHouse at %s: unreadable answer", ch_url(c));
    else if (st != CH_OK)
        snprintf(err, errlen, "reading flamedb's schema version: %s", ch_errmsg(c));
    return st;
}

static ch_status refuse_versions(const chschema_options *o, const long *v, int n, int want, char *err,
                                 size_t errlen)
{
    for (int i = 0; i < n; i++) {
        if (v[i] == want) continue;
        if (n > 1)
            snprintf(err, errlen,
                     "ClickHouse database %s holds several flamedb schema versions (%ld and %ld): front ends of "
                     "different versions started on it; stop them, keep one version (docs/cluster.md)",
                     db_of(o), v[0], v[1]);
        else if (v[i] > want)
            snprintf(err, errlen,
                     "ClickHouse database %s holds flamedb schema version %ld, newer than this flamedb's %d: "
                     "upgrade this flamedb (or use another --clickhouse database)",
                     db_of(o), v[i], want);
        else
            snprintf(err, errlen,
                     "ClickHouse database %s holds flamedb schema version %ld, older than this flamedb's %d: "
                     "migrate it first (docs/cluster.md) or use another database",
                     db_of(o), v[i], want);
        return CH_EINVAL;
    }
    return CH_OK;
}

/* The columns of every table as ClickHouse reports them (on the server
 * the client talks to), against the specs.  require_all: every table must
 * be there (after creating them); else only those present are checked
 * (before creating: a foreign table is refused before views are built on
 * it). */
static ch_status check_columns(ch_client *c, const chschema_options *o, int require_all, char *err, size_t errlen)
{
    sbuf b = {0};
    sb_printf(&b, "SELECT table, name, type FROM system.columns WHERE database = '%s' FORMAT RowBinary", db_of(o));
    chrow_reader r;
    ch_status st = b.oom ? CH_ENOMEM : ch_select(c, b.s, NULL, &r);
    free(b.s);
    if (st != CH_OK) {
        snprintf(err, errlen, "reading the columns of flamedb's tables: %s", ch_errmsg(c));
        return st;
    }
    /* per table kind (data table, and in a cluster its Distributed face),
     * how many expected columns were seen */
    int seen[N_TABLES][2] = {{0}};
    while (chrow_more(&r)) {
        const char *t, *n, *ty;
        size_t tl, nl, tyl;
        if (chrow_get_string(&r, &t, &tl) || chrow_get_string(&r, &n, &nl) || chrow_get_string(&r, &ty, &tyl)) break;
        for (size_t i = 0; i < N_TABLES; i++) {
            const table_spec *ts = &tables[i];
            size_t bl = strlen(ts->name);
            int face;
            if (tl == bl && memcmp(t, ts->name, bl) == 0) face = o->cluster ? 1 : 0;
            else if (o->cluster && tl == bl + 6 && memcmp(t, ts->name, bl) == 0 && memcmp(t + bl, "_local", 6) == 0)
                face = 0;
            else continue;
            int found = 0;
            for (int k = 0; ts->cols[k].name; k++) {
                if (strlen(ts->cols[k].name) != nl || memcmp(ts->cols[k].name, n, nl) != 0) continue;
                found = 1;
                if (strlen(ts->cols[k].type) != tyl || memcmp(ts->cols[k].type, ty, tyl) != 0) {
                    snprintf(err, errlen,
                             "ClickHouse table %s.%.*s has column %.*s of type %.*s, flamedb schema %d wants %s: "
                             "not flamedb's schema; use another database or migrate it (docs/cluster.md)",
                             db_of(o), (int)tl, t, (int)nl, n, (int)tyl, ty, CHSCHEMA_VERSION, ts->cols[k].type);
                    return CH_EINVAL;
                }
                seen[i][face]++;
            }
            if (!found) {
                snprintf(err, errlen,
                         "ClickHouse table %s.%.*s has a column %.*s that flamedb schema %d does not know: not "
                         "flamedb's schema; use another database or migrate it (docs/cluster.md)",
                         db_of(o), (int)tl, t, (int)nl, n, CHSCHEMA_VERSION);
                return CH_EINVAL;
            }
        }
    }
    if (chrow_failed(&r)) {
        snprintf(err, errlen, "reading the columns of flamedb's tables from %s: unreadable answer (%s)", ch_url(c),
                 chrow_failed(&r));
        return CH_EPROTO;
    }
    for (size_t i = 0; i < N_TABLES; i++) {
        int want = 0;
        while (tables[i].cols[want].name) want++;
        for (int face = 0; face < (o->cluster ? 2 : 1); face++) {
            if (seen[i][face] == want || (!require_all && seen[i][face] == 0)) continue;
            snprintf(err, errlen,
                     "ClickHouse table %s.%s%s lacks %d of its %d columns (flamedb schema %d): not flamedb's "
                     "schema, or it was not created on this server; use another database or migrate it",
                     db_of(o), tables[i].name, o->cluster && face == 0 ? "_local" : "", want - seen[i][face], want,
                     CHSCHEMA_VERSION);
            return CH_EINVAL;
        }
    }
    return CH_OK;
}

ch_status chschema_ensure(ch_client *c, const chschema_options *o, char *err, size_t errlen)
{
    chschema_options def = {0};
    if (!o) o = &def;
    if (!ident_ok(db_of(o))) {
        snprintf(err, errlen, "ClickHouse database name \"%s\" must be letters, digits and _ (not first a digit)",
                 db_of(o));
        return CH_EINVAL;
    }
    if (o->cluster && !ident_ok(o->cluster)) {
        snprintf(err, errlen, "ClickHouse cluster name \"%s\" must be letters, digits and _ (not first a digit)",
                 o->cluster);
        return CH_EINVAL;
    }
    int want = o->version ? o->version : CHSCHEMA_VERSION;

    /* 1. An existing schema of another version, or foreign tables under
     * our names: refuse before touching anything. */
    long v[4];
    int nv;
    ch_status st = read_versions(c, o, v, 4, &nv, err, errlen);
    if (st != CH_OK) return st;
    if ((st = refuse_versions(o, v, nv, want, err, errlen)) != CH_OK) return st;
    if ((st = check_columns(c, o, 0, err, errlen)) != CH_OK) return st;

    /* 2. Everything missing: database, tables, Distributed faces, views
     * (after their source and target). */
    sbuf b = {0};
    sb_printf(&b, "CREATE DATABASE IF NOT EXISTS %s", db_of(o));
    sb_on_cluster(&b, o);
    if ((st = run(c, o, &b, err, errlen)) != CH_OK) goto out;
    for (size_t i = 0; i < N_TABLES; i++) {
        sql_table(&b, o, &tables[i]);
        if ((st = run(c, o, &b, err, errlen)) != CH_OK) goto out;
        if (!o->cluster) continue;
        sql_distributed(&b, o, &tables[i]);
        if ((st = run(c, o, &b, err, errlen)) != CH_OK) goto out;
    }
    for (size_t i = 0; i < N_VIEWS; i++) {
        sql_view(&b, o, &views[i]);
        if ((st = run(c, o, &b, err, errlen)) != CH_OK) goto out;
    }

    /* 3. What is there is ours, column for column. */
    if ((st = check_columns(c, o, 1, err, errlen)) != CH_OK) goto out;

    /* 4. The version row, once; then every front end must agree. */
    if (nv == 0) {
        sb_printf(&b, "INSERT INTO %s.meta%s (name, value) VALUES ('schema_version', '%d')", db_of(o),
                  o->cluster ? "_local" : "", want);
        if (b.oom) {
            st = CH_ENOMEM;
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        st = ch_exec(c, b.s, NULL);
        b.len = 0;
        if (st != CH_OK) {
            snprintf(err, errlen, "writing flamedb's schema version: %s", ch_errmsg(c));
            goto out;
        }
        if ((st = read_versions(c, o, v, 4, &nv, err, errlen)) != CH_OK) goto out;
        st = refuse_versions(o, v, nv, want, err, errlen);
    }
out:
    free(b.s);
    return st;
}
