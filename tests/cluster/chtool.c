/* chtool.c — the cluster tests' driver for cluster/ (issue 10): each
 * subcommand runs one piece of the client or the schema against a real
 * ClickHouse and prints what the shell tests check.  A test tool, not a
 * flamedb command.
 *
 *   chtool schema URL [-d DB] [-c CLUSTER] [-r auto|yes|no] [-v VERSION]
 *       chschema_ensure; prints "schema ok" or the refusal (exit 1)
 *   chtool roundtrip URL DB
 *       every RowBinary type flamedb uses, inserted and selected back
 *       through the client, compared field by field
 *   chtool samples URL TABLE SEED ROWS [QUERY_ID|-] [NAME=VALUE...]
 *       inserts one deterministic block of ROWS rows into a samples table
 *       (the schema's columns), with settings; prints the sum of values
 *   chtool u64 URL SQL
 *       a SELECT of one UInt64 column (FORMAT RowBinary added); prints
 *       each value on its own line
 *   chtool exec URL SQL [NAME=VALUE...]
 *       a statement with settings; prints its answer
 *   chtool where SELECTOR
 *       the SQL condition chselect_where makes of a flamedb selector
 *       (tenant label __tenant__); prints it (no server needed)
 *   chtool merge URL SELECTOR FROM_MS UNTIL_MS [-c CLUSTER]
 *       chread_merge + chread_frames: the selected series' stacks summed
 *       over the range, as folded lines "frames value", sorted; and
 *       "pieces: ..." (chread_plan) on stderr
 * Errors: "error: <status name>: code <N>: <message>" on stderr, exit 3.
 * CHTOOL_TIMEOUT_MS in the environment sets the request timeout
 * (default 120 s). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cluster/chclient.h"
#include "../../cluster/chschema.h"
#include "../../cluster/chread.h"
#include "../../cluster/chselect.h"

static ch_client *open_or_die(const char *url)
{
    const char *t = getenv("CHTOOL_TIMEOUT_MS");  /* the request timeout, for test_timeout_named */
    ch_options o = {.url = url, .connect_timeout_ms = 2000, .timeout_ms = t ? atoi(t) : 120000};
    ch_client *c;
    char err[512];
    if (ch_open(&c, &o, err, sizeof err) != CH_OK) {
        fprintf(stderr, "error: %s\n", err);
        exit(3);
    }
    return c;
}

static void die_ch(ch_client *c, ch_status st)
{
    fprintf(stderr, "error: %s: code %d: %s\n", ch_status_name(st), ch_server_code(c), ch_errmsg(c));
    exit(3);
}

static int cmd_schema(int argc, char **argv)
{
    chschema_options o = {0};
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-d")) o.database = argv[i + 1];
        else if (!strcmp(argv[i], "-c")) o.cluster = argv[i + 1];
        else if (!strcmp(argv[i], "-v")) o.version = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            o.replicated = !strcmp(argv[i + 1], "yes") ? CHSCHEMA_REPL_YES
                         : !strcmp(argv[i + 1], "no")  ? CHSCHEMA_REPL_NO
                                                       : CHSCHEMA_REPL_AUTO;
        else {
            fprintf(stderr, "chtool schema: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    ch_client *c = open_or_die(argv[2]);
    char err[1024];
    ch_status st = chschema_ensure(c, &o, err, sizeof err);
    if (st != CH_OK) {
        fprintf(stderr, "error: %s: code %d: %s\n", ch_status_name(st), ch_server_code(c), err);
        ch_close(c);
        return st == CH_EINVAL ? 1 : 3;
    }
    printf("schema ok\n");
    ch_close(c);
    return 0;
}

/* ---- roundtrip ----------------------------------------------------------- */

#define RT_ROWS 1000

typedef struct {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    int64_t i64;
    double f64;
    char str[400];
    size_t str_len;
    uint8_t fixed[16];
    uint64_t arr[5];
    size_t n_arr;
    char sarr[3][32];
    size_t n_sarr;
} rt_row;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rt_make(rt_row *r, uint32_t i)
{
    uint64_t s = i * 7919u + 1;
    memset(r, 0, sizeof *r);
    /* the first rows are the edges, the rest random */
    switch (i) {
    case 0: break;  /* all zero, empty strings and arrays */
    case 1:
        r->u8 = UINT8_MAX, r->u16 = UINT16_MAX, r->u32 = UINT32_MAX, r->u64 = UINT64_MAX;
        r->i64 = INT64_MIN, r->f64 = -INFINITY;
        break;
    case 2:
        r->i64 = INT64_MAX, r->f64 = 1e308, r->u64 = 1ULL << 63;
        break;
    default:
        r->u8 = (uint8_t)rng_next(&s), r->u16 = (uint16_t)rng_next(&s), r->u32 = (uint32_t)rng_next(&s);
        r->u64 = rng_next(&s), r->i64 = (int64_t)rng_next(&s);
        r->f64 = ((double)(int64_t)rng_next(&s)) / 3.0;
    }
    /* strings: with NUL, high bytes, ';', and lengths across the 1-to-2
     * byte varint edge (127, 128) and beyond */
    if (i > 0) {
        r->str_len = i == 1 ? 127 : i == 2 ? 128 : i == 3 ? 399 : rng_next(&s) % 200;
        for (size_t k = 0; k < r->str_len; k++) r->str[k] = (char)(i == 3 ? (k % 256) : 'a' + (rng_next(&s) % 27));
        for (int k = 0; k < 16; k++) r->fixed[k] = (uint8_t)rng_next(&s);
        r->n_arr = i % 6;
        for (size_t k = 0; k < r->n_arr; k++) r->arr[k] = rng_next(&s) >> (k * 9);
        r->n_sarr = i % 4;
        for (size_t k = 0; k < r->n_sarr; k++) snprintf(r->sarr[k], sizeof r->sarr[k], "s%u_%zu", i % 100, k);
    }
}

static int cmd_roundtrip(int argc, char **argv)
{
    if (argc != 4) return 2;
    ch_client *c = open_or_die(argv[2]);
    const char *db = argv[3];
    char sql[1024];
    ch_status st;
    snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS %s", db);
    if ((st = ch_exec(c, sql, NULL)) != CH_OK) die_ch(c, st);
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s.rt", db);
    if ((st = ch_exec(c, sql, NULL)) != CH_OK) die_ch(c, st);
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s.rt (id UInt32, u8 UInt8, u16 UInt16, u32 UInt32, u64 UInt64, i64 Int64, f64 Float64, "
             "str String, fixed FixedString(16), arr Array(UInt64), sarr Array(String)) ENGINE = MergeTree() ORDER BY id",
             db);
    if ((st = ch_exec(c, sql, NULL)) != CH_OK) die_ch(c, st);

    chrow_buf b;
    chrow_buf_init(&b);
    for (uint32_t i = 0; i < RT_ROWS; i++) {
        rt_row r;
        rt_make(&r, i);
        chrow_put_u32(&b, i);
        chrow_put_u8(&b, r.u8);
        chrow_put_u16(&b, r.u16);
        chrow_put_u32(&b, r.u32);
        chrow_put_u64(&b, r.u64);
        chrow_put_i64(&b, r.i64);
        chrow_put_f64(&b, r.f64);
        chrow_put_string(&b, r.str, r.str_len);
        chrow_put_fixed(&b, r.fixed, 16);
        chrow_put_array_len(&b, r.n_arr);
        for (size_t k = 0; k < r.n_arr; k++) chrow_put_u64(&b, r.arr[k]);
        chrow_put_array_len(&b, r.n_sarr);
        for (size_t k = 0; k < r.n_sarr; k++) chrow_put_string(&b, r.sarr[k], strlen(r.sarr[k]));
    }
    if (chrow_buf_failed(&b)) {
        fprintf(stderr, "error: out of memory\n");
        return 3;
    }
    snprintf(sql, sizeof sql, "%s.rt", db);
    if ((st = ch_insert(c, sql, b.data, b.len, NULL)) != CH_OK) die_ch(c, st);
    chrow_buf_free(&b);

    snprintf(sql, sizeof sql, "SELECT id, u8, u16, u32, u64, i64, f64, str, fixed, arr, sarr FROM %s.rt ORDER BY id FORMAT RowBinary", db);
    chrow_reader rd;
    if ((st = ch_select(c, sql, NULL, &rd)) != CH_OK) die_ch(c, st);
    uint32_t n = 0;
    int bad = 0;
    while (chrow_more(&rd) && !bad) {
        uint32_t id = chrow_get_u32(&rd);
        rt_row w;
        rt_make(&w, id);
        const char *s;
        size_t sl;
        uint8_t u8 = chrow_get_u8(&rd);
        uint16_t u16 = chrow_get_u16(&rd);
        uint32_t u32 = chrow_get_u32(&rd);
        uint64_t u64 = chrow_get_u64(&rd);
        int64_t i64 = chrow_get_i64(&rd);
        double f64 = chrow_get_f64(&rd);
        chrow_get_string(&rd, &s, &sl);
        const uint8_t *fx = chrow_get_fixed(&rd, 16);
        if (id != n) bad = printf("row %u: id %u out of order\n", n, id);
        if (u8 != w.u8 || u16 != w.u16 || u32 != w.u32 || u64 != w.u64 || i64 != w.i64 ||
            memcmp(&f64, &w.f64, sizeof f64) != 0)
            bad = printf("row %u: numbers differ (u64 %llu want %llu, i64 %lld want %lld, f64 %.17g want %.17g)\n",
                         id, (unsigned long long)u64, (unsigned long long)w.u64, (long long)i64, (long long)w.i64, f64,
                         w.f64);
        if (sl != w.str_len || (sl && memcmp(s, w.str, sl) != 0))
            bad = printf("row %u: String differs (length %zu want %zu)\n", id, sl, w.str_len);
        if (!fx || memcmp(fx, w.fixed, 16) != 0) bad = printf("row %u: FixedString(16) differs\n", id);
        uint64_t na = chrow_get_array_len(&rd, 8);
        if (na != w.n_arr) bad = printf("row %u: Array(UInt64) of %llu, want %zu\n", id, (unsigned long long)na, w.n_arr);
        for (uint64_t k = 0; k < na && !bad; k++)
            if (chrow_get_u64(&rd) != w.arr[k]) bad = printf("row %u: Array(UInt64)[%llu] differs\n", id, (unsigned long long)k);
        uint64_t ns = chrow_get_array_len(&rd, 1);
        if (ns != w.n_sarr) bad = printf("row %u: Array(String) of %llu, want %zu\n", id, (unsigned long long)ns, w.n_sarr);
        for (uint64_t k = 0; k < ns && !bad; k++) {
            chrow_get_string(&rd, &s, &sl);
            if (sl != strlen(w.sarr[k]) || memcmp(s, w.sarr[k], sl) != 0)
                bad = printf("row %u: Array(String)[%llu] differs\n", id, (unsigned long long)k);
        }
        n++;
    }
    if (chrow_failed(&rd)) {
        printf("unreadable answer at byte %zu: %s\n", chrow_offset(&rd), chrow_failed(&rd));
        bad = 1;
    }
    if (!bad && n != RT_ROWS) bad = printf("%u rows came back, %u went in\n", n, RT_ROWS);
    ch_close(c);
    if (bad) return 1;
    printf("roundtrip: %u rows ok\n", n);
    return 0;
}

/* ---- samples ------------------------------------------------------------- */

static int cmd_samples(int argc, char **argv)
{
    if (argc < 6) return 2;
    ch_client *c = open_or_die(argv[2]);
    uint64_t seed = strtoull(argv[4], NULL, 10), s = seed * 1000003u + 17;
    long rows = atol(argv[5]);
    chrow_buf b;
    chrow_buf_init(&b);
    uint64_t sum = 0;
    const int64_t t0 = 1767225600000;  /* 2026-01-01 UTC */
    for (long i = 0; i < rows; i++) {
        uint64_t series = 1 + rng_next(&s) % 64, v = 1 + rng_next(&s) % 1000;
        int64_t ws = t0 + (int64_t)(rng_next(&s) % (3 * 24 * 360)) * 10000;  /* 3 days of 10 s windows */
        uint8_t stack[16];
        uint64_t h1 = rng_next(&s) % 50, h2 = h1 * 31;
        memcpy(stack, &h1, 8);
        memcpy(stack + 8, &h2, 8);
        chrow_put_string(&b, "t1", 2);
        chrow_put_u64(&b, series);
        chrow_put_i64(&b, ws);
        chrow_put_u32(&b, 10000);
        chrow_put_string(&b, "samples", 7);
        chrow_put_f64(&b, 100.0);
        chrow_put_u8(&b, 0);
        chrow_put_fixed(&b, stack, 16);
        chrow_put_u64(&b, v);
        chrow_put_u64(&b, seed);   /* batch: one a block, as a front end's request */
        sum += v;
    }
    ch_setting set[8];
    size_t n_set = 0;
    for (int i = 7; i < argc && n_set < 8; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) return 2;
        *eq = '\0';
        set[n_set].name = argv[i];
        set[n_set++].value = eq + 1;
    }
    ch_query_opts qo = {argc > 6 && strcmp(argv[6], "-") ? argv[6] : NULL, set, n_set};
    ch_status st = ch_insert(c, argv[3], b.data, b.len, &qo);
    chrow_buf_free(&b);
    if (st != CH_OK) die_ch(c, st);
    printf("%llu\n", (unsigned long long)sum);
    ch_close(c);
    return 0;
}

static int cmd_u64(int argc, char **argv)
{
    if (argc != 4) return 2;
    ch_client *c = open_or_die(argv[2]);
    char *sql = malloc(strlen(argv[3]) + 32);
    if (!sql) return 3;
    sprintf(sql, "%s FORMAT RowBinary", argv[3]);
    chrow_reader rd;
    ch_status st = ch_select(c, sql, NULL, &rd);
    free(sql);
    if (st != CH_OK) die_ch(c, st);
    while (chrow_more(&rd)) {
        uint64_t v = chrow_get_u64(&rd);
        if (chrow_failed(&rd)) break;
        printf("%llu\n", (unsigned long long)v);
    }
    if (chrow_failed(&rd)) {
        fprintf(stderr, "error: unreadable answer at byte %zu: %s\n", chrow_offset(&rd), chrow_failed(&rd));
        return 3;
    }
    ch_close(c);
    return 0;
}

static int cmd_exec(int argc, char **argv)
{
    if (argc < 4) return 2;
    ch_client *c = open_or_die(argv[2]);
    ch_setting set[16];
    size_t n = 0;
    char *kv[16];
    for (int i = 4; i < argc && n < 16; i++) {
        kv[n] = strdup(argv[i]);
        char *eq = kv[n] ? strchr(kv[n], '=') : NULL;
        if (!eq) return 2;
        *eq = '\0';
        set[n].name = kv[n];
        set[n].value = eq + 1;
        n++;
    }
    ch_query_opts qo = {NULL, set, n};
    ch_status st = ch_exec(c, argv[3], &qo);
    if (st != CH_OK) die_ch(c, st);
    size_t len;
    const char *body = ch_body(c, &len);
    fwrite(body, 1, len, stdout);
    for (size_t i = 0; i < n; i++) free(kv[i]);
    ch_close(c);
    return 0;
}

static int cmd_where(int argc, char **argv)
{
    if (argc != 3) return 2;
    query_selector sel;
    char err[512], where[65536];
    if (query_selector_parse(argv[2], &sel, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        return 3;
    }
    int rc = chselect_where(&sel, "__tenant__", where, sizeof where);
    query_selector_free(&sel);
    if (rc) {
        fprintf(stderr, "error: the condition is over 64 KiB\n");
        return 3;
    }
    printf("%s\n", where);
    return 0;
}

typedef struct {
    uint8_t (*ids)[16];
    uint64_t *values;
    size_t n, cap;
    char **lines;
    size_t n_lines;
} merged;

static void on_sum(void *ctx, const chread_sum *row)
{
    merged *m = ctx;
    for (size_t i = 0; i < m->n; i++)
        if (!memcmp(m->ids[i], row->stack, 16)) {
            m->values[i] += row->value;
            return;
        }
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->ids = realloc(m->ids, m->cap * sizeof *m->ids);
        m->values = realloc(m->values, m->cap * sizeof *m->values);
        if (!m->ids || !m->values) exit(4);
    }
    memcpy(m->ids[m->n], row->stack, 16);
    m->values[m->n++] = row->value;
}

static void on_frames(void *ctx, const uint8_t *stack, const char *frames, size_t len)
{
    merged *m = ctx;
    for (size_t i = 0; i < m->n; i++)
        if (!memcmp(m->ids[i], stack, 16)) {
            char *line;
            if (asprintf(&line, "%.*s %llu", (int)len, frames, (unsigned long long)m->values[i]) < 0) exit(4);
            m->lines[m->n_lines++] = line;
            return;
        }
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmd_merge(int argc, char **argv)
{
    if (argc != 6 && argc != 8) return 2;
    chschema_options so = { .cluster = argc == 8 && !strcmp(argv[6], "-c") ? argv[7] : NULL };
    query_selector sel;
    char err[512], where[65536], cond[70000];
    if (query_selector_parse(argv[3], &sel, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        return 3;
    }
    chread *c = chread_open(argv[2], &so, 120000, err, sizeof err);
    if (!c || chselect_where(&sel, "__tenant__", where, sizeof where) || chread_series_in(c, where, cond, sizeof cond)) {
        fprintf(stderr, "error: %s\n", c ? "selector too long" : err);
        return 3;
    }
    query_selector_free(&sel);
    int64_t from = atoll(argv[4]), until = atoll(argv[5]);
    chread_piece p[5];
    size_t np = chread_plan(from, until, p);
    fprintf(stderr, "pieces:");
    for (size_t i = 0; i < np; i++) fprintf(stderr, " %s[%lld,%lld)", p[i].table, (long long)p[i].from, (long long)p[i].until);
    fprintf(stderr, "\n");
    merged m = { 0 };
    if (chread_merge(c, cond, &(chread_windows){ from, until, 0 }, on_sum, &m)) {
        fprintf(stderr, "error: %s\n", chread_error(c));
        return 3;
    }
    m.lines = calloc(m.n ? m.n : 1, sizeof *m.lines);
    if (!m.lines || chread_frames(c, (const uint8_t(*)[16])m.ids, m.n, on_frames, &m)) {
        fprintf(stderr, "error: %s\n", m.lines ? chread_error(c) : "out of memory");
        return 3;
    }
    qsort(m.lines, m.n_lines, sizeof *m.lines, cmp_line);
    for (size_t i = 0; i < m.n_lines; i++) {
        printf("%s\n", m.lines[i]);
        free(m.lines[i]);
    }
    if (m.n_lines != m.n) fprintf(stderr, "error: %zu stacks without frames\n", m.n - m.n_lines);
    free(m.lines);
    free(m.ids);
    free(m.values);
    chread_close(c);
    return m.n_lines == m.n ? 0 : 3;
}

int main(int argc, char **argv)
{
    int rc = 2;
    if (argc >= 3) {
        if (!strcmp(argv[1], "schema")) rc = cmd_schema(argc, argv);
        else if (!strcmp(argv[1], "roundtrip")) rc = cmd_roundtrip(argc, argv);
        else if (!strcmp(argv[1], "samples")) rc = cmd_samples(argc, argv);
        else if (!strcmp(argv[1], "u64")) rc = cmd_u64(argc, argv);
        else if (!strcmp(argv[1], "exec")) rc = cmd_exec(argc, argv);
        else if (!strcmp(argv[1], "where")) rc = cmd_where(argc, argv);
        else if (!strcmp(argv[1], "merge")) rc = cmd_merge(argc, argv);
    }
    if (rc == 2) fprintf(stderr, "usage: chtool schema|roundtrip|samples|u64|exec|where|merge ... (see tests/cluster/chtool.c)\n");
    return rc;
}
