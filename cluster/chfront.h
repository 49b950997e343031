/* chfront.h — a flamedb front end's store in ClickHouse (issue 10).
 *
 * `flamedb serve --store clickhouse=URL[,URL...]` keeps no data of its own:
 * every profile a request brings becomes rows (chencode.h), appended durably
 * to the front end's spool (chspool.h) before the request is answered, and
 * a flusher thread sends the spool to ClickHouse, file by file, then
 * removes each file.
 *
 * The flusher, every flush period (1 s by default): seals the open spool
 * file once its first record is that old, makes sure the schema is there
 * (chschema_ensure: at start, and again after ClickHouse came back), then
 * sends each sealed file, oldest first, as one INSERT per table: stacks,
 * series and labels (the dimension tables: ReplacingMergeTree, so a row
 * sent twice is harmless; rows this front end already sent are left out,
 * by a bounded memory of their ids), then samples and profiles.  A file is
 * removed only once every insert of it succeeded.  A failed insert is
 * retried with the same bytes: ClickHouse splits them into the same
 * blocks, so with replicated tables (a cluster, or `replicated` forced on
 * one server) a block that did arrive before the failure is deduplicated
 * and nothing counts twice; with plain MergeTree a retry after an
 * ambiguous failure (a timeout after ClickHouse had the rows) may count
 * that file twice: docs/cluster.md.  Failures back off from 1 s to 30 s,
 * trying the next URL after a connection failure.
 *
 * While ClickHouse is down, requests are still answered 200 from the spool
 * until it reaches its limit; then chfront_write answers CHFRONT_EFULL and
 * the server 503.
 *
 * Retention (retention_ms > 0), by the same thread at start and every 10
 * minutes: every day (UTC, the tables' partitions) that lies wholly before
 * now - retention is dropped from every data table, raw and rollups
 * (ALTER TABLE ... DROP PARTITION, ON CLUSTER on a cluster).  A day partly
 * inside the retention stays until it is wholly outside: data lives up to a
 * day longer than the retention.  Any number of front ends may run it: a
 * partition already dropped is no error. */
#ifndef FLAMEDB_CHFRONT_H
#define FLAMEDB_CHFRONT_H

#include <stddef.h>
#include <stdint.h>

#include "../query/query.h"
#include "../storage/store.h"
#include "chschema.h"

typedef struct chfront chfront;

typedef enum {
    CHFRONT_OK = 0,
    CHFRONT_EINVAL,   /* the options, or ClickHouse holds another schema */
    CHFRONT_EFULL,    /* the spool is full */
    CHFRONT_EIO,      /* the spool could not be written */
    CHFRONT_ENOMEM
} chfront_status;

typedef struct {
    const char *urls;           /* "http://h1:8123,http://h2:8123" */
    const char *database;       /* NULL: flamedb */
    const char *cluster;        /* NULL: one server */
    chschema_repl replicated;
    const char *spool_dir;
    uint64_t spool_max;         /* bytes, 0: none */
    int64_t flush_ms;           /* 0: 1,000 */
    int timeout_ms;             /* per ClickHouse request, 0: 30,000 */
    int64_t retention_ms;       /* drop the days wholly older than this; 0: keep everything */
    void (*log)(const char *line);   /* NULL: stderr */
} chfront_options;

/* Parses the URLs, opens the spool and starts the flusher.  Tries the
 * schema at once: when ClickHouse answers and holds another schema, fails
 * with CHFRONT_EINVAL and the reason; when it does not answer, logs it and
 * starts (the flusher tries again). */
chfront_status chfront_open(chfront **out, const chfront_options *o, char *err, size_t errlen);
/* Stops the flusher (an insert under way finishes); the spool stays. */
void chfront_close(chfront *f);

/* Stores n profiles of tenant ("" the default) all or none: durable in
 * the spool when CHFRONT_OK is answered.  Thread-safe. */
chfront_status chfront_write(chfront *f, const char *tenant, const store_profile *const *p, size_t n, char *err,
                             size_t errlen);

/* DELETE /api/v1/series in cluster mode: waits (up to 30 s) until what
 * the spool held at the call reached ClickHouse, finds the (tenant, series)
 * pairs matching sel (tenant_label: the tenant matcher's name, see
 * chselect.h), counts their profiles, and submits a mutation deleting their
 * rows from every data table (raw and rollups; ON CLUSTER on a cluster).
 * ClickHouse applies mutations in the background: the rows go shortly
 * after.  The series and labels rows stay (like a single node's label
 * sets): a series pushed again is the same series, empty until then.
 * CHFRONT_EIO when ClickHouse or the spool did not answer in time (err
 * says which). */
chfront_status chfront_delete(chfront *f, const query_selector *sel, const char *tenant_label, uint64_t *series,
                              uint64_t *profiles, char *err, size_t errlen);

/* Wakes the flusher: seals the open file whatever its age and flushes. */
void chfront_flush_soon(chfront *f);

typedef struct {
    uint64_t spool_bytes, spool_max, spool_files;
    int64_t spool_oldest_ms;          /* the oldest unflushed record's time, 0 none */
    uint64_t appends, fsyncs;
    uint64_t flushed_files, flushed_profiles, flushed_rows, flushed_bytes;   /* rows: of samples */
    uint64_t insert_errors;
    uint64_t days_dropped;            /* by retention */
    int64_t last_flush_ms;            /* the last file flushed, 0 never */
    int reachable;                    /* the last exchange with ClickHouse succeeded */
    char url[256];                    /* the endpoint in use */
    char last_error[512];             /* "" none since the last success */
} chfront_stats;

void chfront_stats_get(chfront *f, chfront_stats *out);

#endif
