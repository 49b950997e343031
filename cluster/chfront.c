/* chfront.c — a front end's store in ClickHouse; see chfront.h. */
#include "chfront.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "chclient.h"
#include "chencode.h"
#include "chrow.h"
#include "chselect.h"
#include "chspool.h"

#define MAX_URLS 16
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
#define KNOWN_STACKS_BITS 20   /* 1 M ids remembered (8 MiB), forgotten all at once when half full */
#define KNOWN_SERIES_BITS 16
#define RETENTION_EVERY_MS (10 * 60 * 1000)
#define DAY_MS 86400000LL

/* A bounded set of 64-bit ids: open addressing, cleared when half full
 * (forgetting only costs a row sent again). */
typedef struct {
    uint64_t *v;
    size_t mask, n;
} idset64;

static int known_init(idset64 *s, int bits)
{
    s->mask = ((size_t)1 << bits) - 1;
    s->n = 0;
    s->v = calloc(s->mask + 1, sizeof *s->v);
    return s->v ? 0 : -1;
}

static int known_has(const idset64 *s, uint64_t k)
{
    k = k ? k : 1;
    for (size_t i = (size_t)(k * 0x9E3779B97F4A7C15ULL) & s->mask;; i = (i + 1) & s->mask) {
        if (s->v[i] == k) return 1;
        if (!s->v[i]) return 0;
    }
}

static void known_add(idset64 *s, uint64_t k)
{
    k = k ? k : 1;
    if (s->n * 2 >= s->mask) {
        memset(s->v, 0, (s->mask + 1) * sizeof *s->v);
        s->n = 0;
    }
    for (size_t i = (size_t)(k * 0x9E3779B97F4A7C15ULL) & s->mask;; i = (i + 1) & s->mask) {
        if (s->v[i] == k) return;
        if (!s->v[i]) {
            s->v[i] = k;
            s->n++;
            return;
        }
    }
}

struct chfront {
    chschema_options schema;
    char *database, *cluster;
    char *urls[MAX_URLS];
    ch_client *clients[MAX_URLS];
    int n_urls;
    _Atomic int cur;           /* the endpoint in use: the flusher moves it, stats read it */
    chspool *spool;
    int64_t flush_ms, retention_ms, retention_next_ms;
    void (*log)(const char *line);
    int schema_ok;
    idset64 known_stacks, known_series;  /* ids sent: the flusher adds, appends read known_stacks */
    pthread_rwlock_t known_lock;
    uint64_t batch_base;       /* random at open: requests' batch ids are base + n */
    _Atomic uint64_t batch_n;

    pthread_t thread;
    pthread_mutex_t mu;        /* stop, wake, stats */
    pthread_cond_t cond;
    int stop, wake, started;
    chfront_stats st;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void flog(chfront *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void flog(chfront *f, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (f->log) f->log(line);
    else fprintf(stderr, "flamedb: %s\n", line);
}

/* ---- writing ------------------------------------------------------------- */

/* A stack this front end has sent needs no stacks row in the spool: its
 * frames are in ClickHouse (~4x less spool for a fleet's repeated stacks). */
static int stack_sent(void *ctx, const uint8_t id[16])
{
    chfront *f = ctx;
    pthread_rwlock_rdlock(&f->known_lock);
    int sent = known_has(&f->known_stacks, XXH3_64bits(id, 16));
    pthread_rwlock_unlock(&f->known_lock);
    return sent;
}

chfront_status chfront_write(chfront *f, const char *tenant, const store_profile *const *p, size_t n, char *err,
                             size_t errlen)
{
    chencode_batch b;
    chencode_batch_init(&b);
    b.stack_sent = stack_sent;
    b.stack_sent_ctx = f;
    chrow_buf rec;
    chrow_buf_init(&rec);
    chfront_status rc = CHFRONT_OK;
    int64_t now = now_ms();
    /* the request's id: the same in its spool record however often the
     * record is sent, never the same as another request's (64 random bits
     * a front end's run, then counted) */
    uint64_t batch = f->batch_base + atomic_fetch_add(&f->batch_n, 1);
    for (size_t i = 0; i < n && !rc; i++) {
        if (p[i]->until_ms - p[i]->from_ms > (int64_t)UINT32_MAX) {
            snprintf(err, errlen, "a profile's window is %lld ms long: cluster mode stores windows up to %u ms "
                     "(49 days)", (long long)(p[i]->until_ms - p[i]->from_ms), UINT32_MAX);
            rc = CHFRONT_EINVAL;
        } else if (chencode_profile(&b, tenant ? tenant : "", p[i], now, batch) < 0) {
            snprintf(err, errlen, "out of memory");
            rc = CHFRONT_ENOMEM;
        }
    }
    if (!rc && chencode_record(&b, &rec) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = CHFRONT_ENOMEM;
    }
    if (!rc) {
        chspool_status ss = chspool_append(f->spool, rec.data, rec.len, err, errlen);
        rc = ss == CHSPOOL_OK ? CHFRONT_OK : ss == CHSPOOL_EFULL ? CHFRONT_EFULL
             : ss == CHSPOOL_ENOMEM ? CHFRONT_ENOMEM : CHFRONT_EIO;
    }
    chencode_batch_free(&b);
    chrow_buf_free(&rec);
    return rc;
}

/* ---- flushing ------------------------------------------------------------ */

/* Keeps the dimension rows (stacks, series, labels) whose ids this front
 * end has not sent yet; the ids kept go to *new_stacks / *new_series for
 * known_add once the insert succeeded.  -1 on a row that does not read. */
static int filter_dims(chfront *f, const uint8_t *in[CHT_N], const size_t in_len[CHT_N], chrow_buf out[CHT_N],
                       idset64 *new_stacks, idset64 *new_series)
{
    chrow_reader r;
    chrow_reader_init(&r, in[CHT_STACKS], in_len[CHT_STACKS]);
    while (chrow_more(&r)) {
        const uint8_t *id = chrow_get_fixed(&r, 16);
        const char *fr;
        size_t fl;
        if (!id || chrow_get_string(&r, &fr, &fl) < 0) return -1;
        uint64_t k = XXH3_64bits(id, 16);
        if (known_has(&f->known_stacks, k) || known_has(new_stacks, k)) continue;
        known_add(new_stacks, k);
        chrow_put_fixed(&out[CHT_STACKS], id, 16);
        chrow_put_string(&out[CHT_STACKS], fr, fl);
    }
    if (chrow_failed(&r)) return -1;
    /* series: tenant, series, names, values, first_seen */
    chrow_reader_init(&r, in[CHT_SERIES], in_len[CHT_SERIES]);
    while (chrow_more(&r)) {
        size_t start = chrow_offset(&r);
        const char *t;
        size_t tl;
        if (chrow_get_string(&r, &t, &tl) < 0) return -1;
        uint64_t sid = chrow_get_u64(&r);
        for (int a = 0; a < 2; a++) {
            uint64_t m = chrow_get_array_len(&r, 1);
            for (uint64_t j = 0; j < m; j++) {
                const char *s;
                size_t sl;
                if (chrow_get_string(&r, &s, &sl) < 0) return -1;
            }
        }
        chrow_get_i64(&r);
        if (chrow_failed(&r)) return -1;
        uint64_t k = XXH3_64bits_withSeed(t, tl, sid);
        if (known_has(&f->known_series, k) || known_has(new_series, k)) continue;
        known_add(new_series, k);
        chrow_put_fixed(&out[CHT_SERIES], in[CHT_SERIES] + start, chrow_offset(&r) - start);
    }
    /* labels: tenant, name, value, series; kept with their series */
    chrow_reader_init(&r, in[CHT_LABELS], in_len[CHT_LABELS]);
    while (chrow_more(&r)) {
        size_t start = chrow_offset(&r);
        const char *t, *s;
        size_t tl, sl;
        if (chrow_get_string(&r, &t, &tl) < 0 || chrow_get_string(&r, &s, &sl) < 0 ||
            chrow_get_string(&r, &s, &sl) < 0)
            return -1;
        uint64_t sid = chrow_get_u64(&r);
        if (chrow_failed(&r)) return -1;
        if (known_has(&f->known_series, XXH3_64bits_withSeed(t, tl, sid))) continue;
        chrow_put_fixed(&out[CHT_LABELS], in[CHT_LABELS] + start, chrow_offset(&r) - start);
    }
    return 0;
}

static void set_error(chfront *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(chfront *f, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&f->mu);
    va_start(ap, fmt);
    vsnprintf(f->st.last_error, sizeof f->st.last_error, fmt, ap);
    va_end(ap);
    f->st.reachable = 0;
    f->st.insert_errors++;
    pthread_mutex_unlock(&f->mu);
}

static int conn_failure(ch_status s)
{
    return s == CH_ECONNECT || s == CH_ETIMEOUT || s == CH_ENET;
}

/* The schema, once per reachable ClickHouse: 0 when there; -1 (logged). */
static int ensure_schema(chfront *f)
{
    if (f->schema_ok) return 0;
    char err[1024];
    ch_client *c = f->clients[f->cur];
    ch_status s = chschema_ensure(c, &f->schema, err, sizeof err);
    if (s != CH_OK) {
        set_error(f, "%s", err);
        if (conn_failure(s)) f->cur = (f->cur + 1) % f->n_urls;
        return -1;
    }
    f->schema_ok = 1;
    return 0;
}

/* Sends one sealed file: 0 when every table's insert succeeded. */
static int flush_file(chfront *f, uint64_t seq)
{
    char err[1024];
    char *data;
    size_t len, torn;
    if (chspool_read(f->spool, seq, &data, &len, &torn, err, sizeof err) != CHSPOOL_OK) {
        set_error(f, "%s", err);
        return -1;
    }
    if (torn) flog(f, "cluster: spool file %016llx: %zu bytes after its last whole record left out (a write "
                      "the crash cut short: never acknowledged)", (unsigned long long)seq, torn);
    chrow_buf all[CHT_N], dims[CHT_N];
    for (int t = 0; t < CHT_N; t++) {
        chrow_buf_init(&all[t]);
        chrow_buf_init(&dims[t]);
    }
    size_t off = 0;
    const char *rec;
    size_t rl;
    int rc = 0;
    while (chspool_next(data, len, &off, &rec, &rl)) {
        const uint8_t *part[CHT_N];
        size_t plen[CHT_N];
        if (chencode_record_tables(rec, rl, part, plen) < 0) {
            flog(f, "cluster: spool file %016llx: a record that does not split into tables, left out",
                 (unsigned long long)seq);
            continue;
        }
        for (int t = 0; t < CHT_N; t++) chrow_put_fixed(&all[t], part[t], plen[t]);
    }
    free(data);
    idset64 new_stacks = { 0 }, new_series = { 0 };
    const uint8_t *in[CHT_N];
    size_t in_len[CHT_N];
    for (int t = 0; t < CHT_N; t++) {
        in[t] = all[t].data;
        in_len[t] = all[t].len;
    }
    if (known_init(&new_stacks, 16) < 0 || known_init(&new_series, 12) < 0) {
        set_error(f, "out of memory");
        rc = -1;
    } else if (filter_dims(f, in, in_len, dims, &new_stacks, &new_series) < 0) {
        flog(f, "cluster: spool file %016llx: dimension rows that do not read; sending them all",
             (unsigned long long)seq);
        for (int t = CHT_STACKS; t <= CHT_LABELS; t++) {
            chrow_buf_reset(&dims[t]);
            chrow_put_fixed(&dims[t], all[t].data, all[t].len);
        }
    }
    for (int t = 0; t < CHT_N; t++)
        if (chrow_buf_failed(&all[t]) || chrow_buf_failed(&dims[t])) rc = -1;
    /* dimensions first, so that every stack and series a sample names is
     * there once its samples are */
    static const int order[] = { CHT_STACKS, CHT_SERIES, CHT_LABELS, CHT_SAMPLES, CHT_PROFILES };
    ch_setting sync = { "insert_distributed_sync", "1" };
    ch_query_opts qo = { NULL, f->cluster ? &sync : NULL, f->cluster ? 1 : 0 };
    uint64_t rows_bytes = 0;
    for (size_t i = 0; i < sizeof order / sizeof order[0] && !rc; i++) {
        int t = order[i];
        const chrow_buf *b = t == CHT_SAMPLES || t == CHT_PROFILES ? &all[t] : &dims[t];
        if (!b->len) continue;
        char target[256];
        chschema_table(&f->schema, chencode_table_names[t], target, sizeof target);
        ch_client *c = f->clients[f->cur];
        ch_status s = ch_insert(c, target, b->data, b->len, &qo);
        if (s != CH_OK) {
            set_error(f, "insert into %s: %s", target, ch_errmsg(c));
            if (conn_failure(s)) f->cur = (f->cur + 1) % f->n_urls;
            if (s == CH_ESERVER && (ch_server_code(c) == 60 || ch_server_code(c) == 81)) f->schema_ok = 0;
            rc = -1;
        }
        rows_bytes += b->len;
    }
    if (!rc) {
        pthread_rwlock_wrlock(&f->known_lock);
        for (size_t i = 0; i <= new_stacks.mask; i++)
            if (new_stacks.v[i]) known_add(&f->known_stacks, new_stacks.v[i]);
        for (size_t i = 0; i <= new_series.mask; i++)
            if (new_series.v[i]) known_add(&f->known_series, new_series.v[i]);
        pthread_rwlock_unlock(&f->known_lock);
        if (chspool_remove(f->spool, seq, err, sizeof err) != CHSPOOL_OK) {
            set_error(f, "%s", err);
            rc = -1;
        }
    }
    if (!rc) {
        /* count the profiles: one profiles row each (tenant, series, ...) */
        chrow_reader r;
        uint64_t np = 0, rows = 0;
        chrow_reader_init(&r, all[CHT_PROFILES].data, all[CHT_PROFILES].len);
        while (chrow_more(&r)) {
            const char *s;
            size_t sl;
            chrow_get_string(&r, &s, &sl);
            chrow_get_u64(&r);
            chrow_get_i64(&r);
            chrow_get_u32(&r);
            chrow_get_string(&r, &s, &sl);
            chrow_get_f64(&r);
            chrow_get_u8(&r);
            chrow_get_u64(&r);
            chrow_get_u8(&r);
            uint32_t stacks = chrow_get_u32(&r);
            chrow_get_u64(&r);
            chrow_get_u64(&r);   /* batch */
            if (!chrow_failed(&r)) {
                np++;
                rows += stacks;
            }
        }
        pthread_mutex_lock(&f->mu);
        f->st.flushed_files++;
        f->st.flushed_profiles += np;
        f->st.flushed_rows += rows;
        f->st.flushed_bytes += rows_bytes;
        f->st.last_flush_ms = now_ms();
        f->st.reachable = 1;
        f->st.last_error[0] = 0;
        pthread_mutex_unlock(&f->mu);
    }
    free(new_stacks.v);
    free(new_series.v);
    for (int t = 0; t < CHT_N; t++) {
        chrow_buf_free(&all[t]);
        chrow_buf_free(&dims[t]);
    }
    return rc;
}

/* Retention: the days wholly before now - retention_ms, dropped from every
 * data table (see chfront.h).  0, or -1 when ClickHouse did not take it
 * (tried again at the next round). */
static int retention_run(chfront *f, int64_t now)
{
    int64_t cutoff = now - f->retention_ms;
    int64_t keep_from = (cutoff >= 0 ? cutoff / DAY_MS : (cutoff - DAY_MS + 1) / DAY_MS) * DAY_MS;
    char sql[512], table[256];
    chschema_table(&f->schema, "profiles", table, sizeof table);
    /* the partition key's minmax index skips every day at or after keep_from */
    snprintf(sql, sizeof sql,
             "SELECT DISTINCT toUInt32(toYYYYMMDD(toDateTime(intDiv(window_start, 1000), 'UTC'))) AS day FROM %s "
             "WHERE window_start < %lld ORDER BY day FORMAT RowBinary", table, (long long)keep_from);
    ch_client *c = f->clients[f->cur];
    chrow_reader rows;
    if (ch_select(c, sql, NULL, &rows) != CH_OK) {
        set_error(f, "retention: %s", ch_errmsg(c));
        return -1;
    }
    uint32_t days[4096];
    size_t n = 0;
    while (chrow_more(&rows) && n < sizeof days / sizeof days[0]) days[n++] = chrow_get_u32(&rows);
    if (chrow_failed(&rows)) {
        set_error(f, "retention: the list of days does not read: %s", chrow_failed(&rows));
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t t = 0; t < chschema_n_data_tables; t++) {
            chschema_local(&f->schema, chschema_data_tables[t], table, sizeof table);
            snprintf(sql, sizeof sql, "ALTER TABLE %s%s%s DROP PARTITION %u", table, f->cluster ? " ON CLUSTER " : "",
                     f->cluster ? f->cluster : "", days[i]);
            if (ch_exec(c, sql, NULL) != CH_OK) {
                set_error(f, "retention: dropping day %u of %s: %s", days[i], table, ch_errmsg(c));
                return -1;
            }
        }
        pthread_mutex_lock(&f->mu);
        f->st.days_dropped++;
        pthread_mutex_unlock(&f->mu);
        flog(f, "cluster: retention dropped day %u (every profile of it started over %lld s ago)", days[i],
             (long long)(f->retention_ms / 1000));
    }
    return 0;
}

static void *flusher(void *arg)
{
    chfront *f = arg;
    int64_t backoff = 0;
    pthread_mutex_lock(&f->mu);
    while (!f->stop) {
        int64_t wait = backoff ? backoff : f->flush_ms / 4 < 50 ? 50 : f->flush_ms / 4;
        if (!f->wake) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += wait / 1000;
            ts.tv_nsec += (long)(wait % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&f->cond, &f->mu, &ts);
        }
        if (f->stop) break;
        int soon = f->wake;
        f->wake = 0;
        pthread_mutex_unlock(&f->mu);
        chspool_seal(f->spool, soon ? 0 : f->flush_ms);
        uint64_t seq;
        int failed = 0;
        while (!failed && chspool_oldest(f->spool, &seq)) {
            if (ensure_schema(f) < 0 || flush_file(f, seq) < 0) failed = 1;
            pthread_mutex_lock(&f->mu);
            int stop = f->stop;
            pthread_mutex_unlock(&f->mu);
            if (stop) break;
        }
        if (!failed && f->retention_ms > 0 && f->schema_ok && now_ms() >= f->retention_next_ms)
            f->retention_next_ms = now_ms() + (retention_run(f, now_ms()) ? BACKOFF_MAX_MS : RETENTION_EVERY_MS);
        if (failed) {
            backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
            if (backoff > BACKOFF_MAX_MS) backoff = BACKOFF_MAX_MS;
            char e[512];
            pthread_mutex_lock(&f->mu);
            snprintf(e, sizeof e, "%s", f->st.last_error);
            pthread_mutex_unlock(&f->mu);
            flog(f, "cluster: flush failed (%s); the spool keeps the profiles, next try in %lld s", e,
                 (long long)(backoff / 1000));
        } else if (backoff) {
            flog(f, "cluster: ClickHouse answers again at %s; the spool drains", ch_url(f->clients[f->cur]));
            backoff = 0;
        }
        pthread_mutex_lock(&f->mu);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* ---- opening ------------------------------------------------------------- */

chfront_status chfront_open(chfront **out, const chfront_options *o, char *err, size_t errlen)
{
    *out = NULL;
    chfront *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return CHFRONT_ENOMEM;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cond, NULL);
    pthread_rwlock_init(&f->known_lock, NULL);
    f->flush_ms = o->flush_ms > 0 ? o->flush_ms : 1000;
    if (getrandom(&f->batch_base, sizeof f->batch_base, 0) != (ssize_t)sizeof f->batch_base) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        f->batch_base = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
    }
    f->retention_ms = o->retention_ms;
    f->log = o->log;
    chfront_status rc = CHFRONT_OK;
    f->database = o->database ? strdup(o->database) : NULL;
    f->cluster = o->cluster ? strdup(o->cluster) : NULL;
    f->schema = (chschema_options){ f->database, f->cluster, o->replicated, 0, 0 };
    const char *p = o->urls ? o->urls : "";
    while (*p && !rc) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n > 200 || f->n_urls == MAX_URLS || (strncmp(p, "http://", 7) && strncmp(p, "https://", 8))) {
            snprintf(err, errlen, "--store clickhouse=URL[,URL...]: '%.*s' is not an http:// or https:// URL "
                     "(at most %d of them, 200 bytes each)", (int)(n > 200 ? 200 : n), p, MAX_URLS);
            rc = CHFRONT_EINVAL;
            break;
        }
        char *u = strndup(p, n);
        ch_options co = { .url = u, .timeout_ms = o->timeout_ms ? o->timeout_ms : 30000 };
        if (!u || ch_open(&f->clients[f->n_urls], &co, err, errlen) != CH_OK) {
            free(u);
            rc = u ? CHFRONT_EINVAL : CHFRONT_ENOMEM;
            break;
        }
        f->urls[f->n_urls++] = u;
        p += n;
        if (*p == ',') p++;
    }
    if (!rc && !f->n_urls) {
        snprintf(err, errlen, "--store clickhouse=URL[,URL...]: no URL given");
        rc = CHFRONT_EINVAL;
    }
    if (!rc && (known_init(&f->known_stacks, KNOWN_STACKS_BITS) < 0 ||
                known_init(&f->known_series, KNOWN_SERIES_BITS) < 0)) {
        snprintf(err, errlen, "out of memory");
        rc = CHFRONT_ENOMEM;
    }
    if (!rc) {
        chspool_status ss = chspool_open(&f->spool, o->spool_dir, o->spool_max, err, errlen);
        if (ss) rc = ss == CHSPOOL_ENOMEM ? CHFRONT_ENOMEM : CHFRONT_EIO;
    }
    if (!rc) {
        char e[1024];
        ch_status s = chschema_ensure(f->clients[0], &f->schema, e, sizeof e);
        if (s == CH_OK) {
            f->schema_ok = 1;
            f->st.reachable = 1;
        } else if (s == CH_EINVAL) {
            snprintf(err, errlen, "%s", e);
            rc = CHFRONT_EINVAL;
        } else {
            flog(f, "cluster: ClickHouse at %s: %s; accepting profiles into the spool and trying again", f->urls[0], e);
            snprintf(f->st.last_error, sizeof f->st.last_error, "%.500s", e);
            if (conn_failure(s)) f->cur = f->n_urls > 1 ? 1 : 0;
        }
    }
    if (!rc) {
        if (pthread_create(&f->thread, NULL, flusher, f)) {
            snprintf(err, errlen, "cannot start the flusher thread: %s", strerror(errno));
            rc = CHFRONT_ENOMEM;
        } else {
            f->started = 1;
        }
    }
    if (rc) {
        chfront_close(f);
        return rc;
    }
    *out = f;
    return CHFRONT_OK;
}

void chfront_close(chfront *f)
{
    if (!f) return;
    if (f->started) {
        pthread_mutex_lock(&f->mu);
        f->stop = 1;
        pthread_cond_signal(&f->cond);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->thread, NULL);
    }
    chspool_close(f->spool);
    for (int i = 0; i < f->n_urls; i++) {
        ch_close(f->clients[i]);
        free(f->urls[i]);
    }
    free(f->known_stacks.v);
    free(f->known_series.v);
    free(f->database);
    free(f->cluster);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->mu);
    pthread_rwlock_destroy(&f->known_lock);
    free(f);
}

/* ---- deleting ------------------------------------------------------------ */

#define DELETE_BATCH 2000          /* (tenant, series) pairs a statement: under max_query_size */
#define TENANT_MAX 256             /* bytes of a tenant name kept (the server allows 64) */

typedef struct {
    char (*tenant)[TENANT_MAX];
    uint64_t *series;
    size_t n, cap;
} pair_list;

static int pairs_add(pair_list *p, const char *t, size_t tl, uint64_t s)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        char (*nt)[TENANT_MAX] = realloc(p->tenant, cap * sizeof *nt);
        if (!nt) return -1;
        p->tenant = nt;
        uint64_t *ns = realloc(p->series, cap * sizeof *ns);
        if (!ns) return -1;
        p->series = ns;
        p->cap = cap;
    }
    if (tl >= TENANT_MAX) tl = TENANT_MAX - 1;
    memcpy(p->tenant[p->n], t, tl);
    p->tenant[p->n][tl] = 0;
    p->series[p->n++] = s;
    return 0;
}

/* "(tenant, series) IN ((...), ...)" of pairs [a, b) into sql (appended). */
static int pairs_in(const pair_list *p, size_t a, size_t b, char *sql, size_t cap)
{
    size_t len = strlen(sql);
    if (len + 32 > cap) return -1;
    strcat(sql, "(tenant, series) IN (");
    for (size_t i = a; i < b; i++) {
        char num[32];
        if (i > a && strlen(sql) + 2 < cap) strcat(sql, ", ");
        if (strlen(sql) + 2 >= cap) return -1;
        strcat(sql, "(");
        if (chselect_quote(p->tenant[i], sql, cap)) return -1;
        snprintf(num, sizeof num, ", %llu)", (unsigned long long)p->series[i]);
        if (strlen(sql) + strlen(num) + 2 >= cap) return -1;
        strcat(sql, num);
    }
    strcat(sql, ")");
    return 0;
}

chfront_status chfront_delete(chfront *f, const query_selector *sel, const char *tenant_label, uint64_t *series,
                              uint64_t *profiles, char *err, size_t errlen)
{
    *series = *profiles = 0;
    /* 1. what was acknowledged before this request reaches ClickHouse first */
    int64_t asked = now_ms();
    chfront_flush_soon(f);
    for (int tries = 0;; tries++) {
        chspool_stats ss;
        chspool_stats_get(f->spool, &ss);
        if (!ss.oldest_ms || ss.oldest_ms > asked) break;
        if (tries == 1500) {
            chfront_stats st;
            chfront_stats_get(f, &st);
            snprintf(err, errlen, "profiles acknowledged before the deletion have not reached ClickHouse in 30 s "
                     "(%.300s); nothing was deleted, retry later", st.last_error[0] ? st.last_error : "still flushing");
            return CHFRONT_EIO;
        }
        struct timespec ts = { 0, 20 * 1000000 };
        nanosleep(&ts, NULL);
    }
    /* 2. the pairs, on a client of this thread */
    ch_client *c;
    ch_options co = { .url = f->urls[f->cur], .timeout_ms = 30000 };
    if (ch_open(&c, &co, err, errlen) != CH_OK) return CHFRONT_ENOMEM;
    char *sql = malloc(1u << 20);
    pair_list pl = { 0 };
    chfront_status rc = CHFRONT_OK;
    char where[65536], table[256];
    if (!sql) {
        snprintf(err, errlen, "out of memory");
        rc = CHFRONT_ENOMEM;
        goto out;
    }
    if (chselect_where(sel, tenant_label, where, sizeof where)) {
        snprintf(err, errlen, "the selector is too long for ClickHouse (64 KiB of SQL)");
        rc = CHFRONT_EINVAL;
        goto out;
    }
    chschema_table(&f->schema, "series", table, sizeof table);
    snprintf(sql, 1u << 20, "SELECT DISTINCT tenant, series FROM %s WHERE %s FORMAT RowBinary", table, where);
    chrow_reader rows;
    if (ch_select(c, sql, NULL, &rows) != CH_OK) {
        snprintf(err, errlen, "finding the series: %s", ch_errmsg(c));
        rc = CHFRONT_EIO;
        goto out;
    }
    while (chrow_more(&rows)) {
        const char *t;
        size_t tl;
        chrow_get_string(&rows, &t, &tl);
        uint64_t sid = chrow_get_u64(&rows);
        if (chrow_failed(&rows)) break;
        if (pairs_add(&pl, t, tl, sid)) {
            snprintf(err, errlen, "out of memory");
            rc = CHFRONT_ENOMEM;
            goto out;
        }
    }
    if (chrow_failed(&rows)) {
        snprintf(err, errlen, "finding the series: an answer that does not read (%s)", chrow_failed(&rows));
        rc = CHFRONT_EIO;
        goto out;
    }
    /* 3. count, then delete, a batch of pairs at a time.  The series
     * counted are those holding a profile, as a single node counts them:
     * the series rows stay after a deletion, so a selector matching series
     * deleted before would count them again. */
    for (size_t a = 0; a < pl.n; a += DELETE_BATCH) {
        size_t b = a + DELETE_BATCH < pl.n ? a + DELETE_BATCH : pl.n;
        chschema_table(&f->schema, "profiles", table, sizeof table);
        snprintf(sql, 1u << 20, "SELECT count(), uniqExact(tenant, series) FROM %s WHERE ", table);
        if (pairs_in(&pl, a, b, sql, 1u << 20) || strlen(sql) + 32 > (1u << 20)) goto toolong;
        strcat(sql, " FORMAT RowBinary");
        if (ch_select(c, sql, NULL, &rows) != CH_OK) {
            snprintf(err, errlen, "counting the profiles: %s", ch_errmsg(c));
            rc = CHFRONT_EIO;
            goto out;
        }
        uint64_t n = chrow_get_u64(&rows), ns = chrow_get_u64(&rows);
        if (chrow_failed(&rows)) {
            snprintf(err, errlen, "counting the profiles: an answer that does not read (%s)", chrow_failed(&rows));
            rc = CHFRONT_EIO;
            goto out;
        }
        for (size_t t = 0; t < chschema_n_data_tables; t++) {
            chschema_local(&f->schema, chschema_data_tables[t], table, sizeof table);
            snprintf(sql, 1u << 20, "ALTER TABLE %s%s%s DELETE WHERE ", table, f->cluster ? " ON CLUSTER " : "",
                     f->cluster ? f->cluster : "");
            if (pairs_in(&pl, a, b, sql, 1u << 20)) goto toolong;
            if (ch_exec(c, sql, NULL) != CH_OK) {
                snprintf(err, errlen, "deleting from %s after %llu profiles: %s", table,
                         (unsigned long long)*profiles, ch_errmsg(c));
                rc = CHFRONT_EIO;
                goto out;
            }
        }
        *series += ns;
        *profiles += n;
    }
    goto out;
toolong:
    snprintf(err, errlen, "a deletion statement passed 1 MiB");
    rc = CHFRONT_EINVAL;
out:
    free(pl.tenant);
    free(pl.series);
    free(sql);
    ch_close(c);
    return rc;
}

void chfront_flush_soon(chfront *f)
{
    pthread_mutex_lock(&f->mu);
    f->wake = 1;
    pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->mu);
}

void chfront_stats_get(chfront *f, chfront_stats *out)
{
    chspool_stats ss;
    chspool_stats_get(f->spool, &ss);
    pthread_mutex_lock(&f->mu);
    *out = f->st;
    pthread_mutex_unlock(&f->mu);
    out->spool_bytes = ss.bytes;
    out->spool_max = ss.max_bytes;
    out->spool_files = ss.files;
    out->spool_oldest_ms = ss.oldest_ms;
    out->appends = ss.appends;
    out->fsyncs = ss.fsyncs;
    snprintf(out->url, sizeof out->url, "%s", f->urls[f->cur]);
}
