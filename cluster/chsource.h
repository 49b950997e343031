/* chsource.h — a front end's reads from ClickHouse (issue 10): readers
 * (storage/remote.h) whose catalog and profiles come from the tables the
 * front ends write (chencode.h), so that every analysis answers as on a
 * single node.
 *
 * The catalog: every series of the series table (label sets; a tenant
 * other than the default becomes the tenant label, as a single node
 * stores it), sorted by (tenant, series id), with reader ids 1..n.  It is
 * read again only when the series table's row count changed (one small
 * statement at the start of each reader), and shared by the readers that
 * began with it.  A series is visible once a front end's flusher has sent
 * it: answers lag ingest by at most a front end's --flush-every plus its
 * flush (docs/cluster.md, "Freshness").
 *
 * A load (store_rsource.load) asks for the series it names over a range in
 * three statements: the frames of the stacks used, the profiles, their
 * samples (chread_load); each profile becomes a block of the reader's
 * loaded partition.  A reader keeps what it loaded until it ends; stacks'
 * leaves are remembered across its loads.
 *
 * Failures: a statement that fails stops the reader with ClickHouse's
 * message (a shard that cannot be reached is code 279, whose text names
 * the replicas tried): the server answers 503 with it.  With partial set,
 * such a failure is retried with skip_unavailable_shards=1 and the
 * reader's *partial_out is set, so the answer can say it is partial;
 * without a failure nothing is skipped.
 *
 * Clients: one ClickHouse client per reader at a time, taken from a pool
 * (kept alive between queries); a client whose statement failed is closed.
 * The endpoints are tried in turn when one does not answer. */
#ifndef FLAMEDB_CHSOURCE_H
#define FLAMEDB_CHSOURCE_H

#include <stddef.h>

#include "../storage/remote.h"
#include "../storage/store.h"
#include "chschema.h"

typedef struct chsource chsource;

typedef struct {
    const char *urls;            /* "http://h1:8123,http://h2:8123" */
    chschema_options schema;     /* database (NULL: flamedb), cluster */
    int timeout_ms;              /* per statement; 0: 30,000 */
    const char *tenant_label;    /* the label a non-default tenant becomes ("__tenant__") */
} chsource_options;

int chsource_open(chsource **out, const chsource_options *o, char *err, size_t errlen);
void chsource_close(chsource *s);

/* A reader over the data ClickHouse holds now.  partial: shards that do
 * not answer are left out instead of failing, and *partial_out (which must
 * outlive the reader) becomes 1 when some were.  Thread-safe.  0, or -1
 * with err (ClickHouse did not answer: the server's 503). */
int chsource_reader_begin(chsource *s, int partial, int *partial_out, store_reader **out, char *err,
                          size_t errlen);

typedef struct {
    uint64_t series;             /* in the catalog */
    uint64_t catalog_bytes;
    uint64_t catalog_loads;      /* times the series table was read */
    uint64_t loads, load_errors; /* a reader's loads (errors: of any statement) */
    uint64_t merges;             /* merges summed in ClickHouse */
    uint64_t profiles_loaded;
} chsource_stats;
void chsource_stats_get(chsource *s, chsource_stats *out);

#endif
