/* chschema.h — flamedb's tables in ClickHouse, created at start (issue 10).
 *
 * chschema_ensure makes the database and every table flamedb needs when
 * they are missing, then checks that what ClickHouse holds is this
 * flamedb's schema: the version row of the meta table, and the columns
 * (name and type) of every table.  It is idempotent, and safe when several
 * front ends run it at once: every statement is CREATE ... IF NOT EXISTS,
 * and the version row is the same row from every front end of a version.
 * It refuses, with a message saying what to do, when ClickHouse holds
 * another schema version (newer: upgrade this flamedb; older: migrate) or
 * a table whose columns differ.
 *
 * Single server (no cluster): plain MergeTree tables under their own names
 * (samples, profiles, stacks, series, labels, the rollups, meta).
 * Cluster: every table is created ON CLUSTER as <name>_local, with a
 * Distributed table <name> over the cluster's shards; the _local tables
 * are Replicated*MergeTree (ZooKeeper path /clickhouse/tables/{shard}/
 * <db>/<table>, replica {replica}: the servers' macros) unless replication
 * is turned off.  ON CLUSTER needs ZooKeeper in 18.16 even without
 * replicas (the distributed DDL queue lives there).
 *
 * Materialized views fill the 10-minute and 1-hour rollups from samples
 * and profiles on every shard as rows arrive.  docs/cluster.md has every
 * table, why each choice, and what ClickHouse 18.16 forced. */
#ifndef FLAMEDB_CHSCHEMA_H
#define FLAMEDB_CHSCHEMA_H

#include <stddef.h>

#include "chclient.h"

/* The schema this flamedb writes and reads.  Bump on any change of the
 * tables below; an older flamedb then refuses to start on the new one. */
#define CHSCHEMA_VERSION 2   /* 2: samples and profiles carry batch (chencode.h) */

typedef enum {
    CHSCHEMA_REPL_AUTO = 0,  /* replicated exactly when a cluster is named */
    CHSCHEMA_REPL_NO,        /* plain MergeTree (no deduplication of retried inserts) */
    CHSCHEMA_REPL_YES        /* Replicated*MergeTree, also on one replica (needs ZooKeeper) */
} chschema_repl;

typedef struct {
    const char *database;    /* NULL: "flamedb"; [A-Za-z_][A-Za-z0-9_]* */
    const char *cluster;     /* NULL: one server; else a remote_servers cluster name */
    chschema_repl replicated;
    int ddl_timeout_s;       /* ON CLUSTER: how long to wait for every host; 0: 60 */
    int version;             /* 0: CHSCHEMA_VERSION (others: tests, migrations) */
} chschema_options;

/* Creates what is missing and checks what is there (see above).  On
 * refusal answers CH_EINVAL with the reason in err; ClickHouse's own
 * errors as ch_exec answers them, ch_errmsg's text in err. */
ch_status chschema_ensure(ch_client *c, const chschema_options *o, char *err, size_t errlen);

/* The name a table is queried and inserted by ("samples": the Distributed
 * table in a cluster, the table itself on one server); and the _local
 * table in a cluster.  Both into buf. */
const char *chschema_table(const chschema_options *o, const char *table, char *buf, size_t len);
const char *chschema_local(const chschema_options *o, const char *table, char *buf, size_t len);

/* Every data table of the schema (not meta, not the views): for
 * retention, which drops a day (toYYYYMMDD, UTC) from each. */
extern const char *const chschema_data_tables[];
extern const size_t chschema_n_data_tables;

#endif
