/* chencode.h — profiles as ClickHouse rows (issue 10, cluster mode).
 *
 * A profile the server has parsed and validated (storage's store_profile,
 * the contract of every ingest format) becomes rows of five tables of the
 * schema (chschema.h), in RowBinary:
 *
 *   samples   one row per stack: tenant, series, window, unit, rate, gauge,
 *             the stack's hash, its count
 *   profiles  one row: the sample count (and whether it is known), the
 *             number of stacks, the total of the counts
 *   stacks    one row per stack: hash -> frames (root first, ';'-joined)
 *   series    one row: the series id -> its labels (sorted by name)
 *   labels    one row per label: the postings
 *
 * Ids are content hashes, the same in every front end and every version
 * (so no front end holds a global dictionary): a stack is XXH3-128 of its
 * frames text; a series is the low 64 bits of XXH3-128 of its labels as
 * `name \0 value \0` pairs in name order.  The tenant is a column of its
 * own, never a label.  A request's rows carry its batch, an id unique to
 * the request (chfront.c draws it): ClickHouse deduplicates a block it
 * has seen, which is right for a retried insert of the same spool file
 * (same batch) and wrong for two requests that happen to hold the same
 * profile (two batches: both count).
 *
 * A batch holds the rows of many profiles, one buffer per table; a record
 * is one batch's bytes in one piece (the spool's unit: what a request
 * stored), and records concatenate per table again on the way to
 * ClickHouse (chencode_record_tables). */
#ifndef FLAMEDB_CHENCODE_H
#define FLAMEDB_CHENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "../storage/store.h"
#include "chrow.h"

typedef enum { CHT_SAMPLES = 0, CHT_PROFILES, CHT_STACKS, CHT_SERIES, CHT_LABELS, CHT_N } chencode_table;

/* The schema's table of each (chschema.h names). */
extern const char *const chencode_table_names[CHT_N];

typedef struct {
    chrow_buf t[CHT_N];
    uint64_t profiles, samples_rows;
    /* optional: 1 when a stack's frames are in ClickHouse already (the
     * front end sent them): its stacks row is left out */
    int (*stack_sent)(void *ctx, const uint8_t id[16]);
    void *stack_sent_ctx;
} chencode_batch;

void chencode_batch_init(chencode_batch *b);
void chencode_batch_reset(chencode_batch *b);
void chencode_batch_free(chencode_batch *b);

/* Adds one profile's rows; now_ms is the series' first_seen, batch the
 * request's id (above).  -1 when memory ran out (the batch is then
 * unusable until reset). */
int chencode_profile(chencode_batch *b, const char *tenant, const store_profile *p, int64_t now_ms, uint64_t batch);

/* The ids (see above). */
uint64_t chencode_series_id(const store_label *labels, int n);
void chencode_stack_id(const char *frames, size_t len, uint8_t out[16]);

/* The batch as one record: per table, its length (u64 little-endian) and
 * its bytes.  -1 when out of memory. */
int chencode_record(const chencode_batch *b, chrow_buf *out);
/* A record's table slices (pointing into rec); -1 when rec is not one. */
int chencode_record_tables(const void *rec, size_t len, const uint8_t *part[CHT_N], size_t part_len[CHT_N]);

#endif
