/* chspool.h — the front end's durable spool (issue 10, cluster mode).
 *
 * A request is answered 200 only once its rows are durable.  In cluster
 * mode that is here: each request's rows (one record, chencode.h) are
 * appended to the open spool file and fsync'd before chspool_append
 * returns; a flusher later sends whole files to ClickHouse and removes
 * each only once ClickHouse has acknowledged every row of it.  So an
 * acknowledged profile lives in the spool or in ClickHouse, never nowhere:
 * not on kill -9 of the front end, not while ClickHouse is down.
 *
 * Files: DIR/<seq, 16 hex digits>.spool, records back to back, each
 * `FDS1`, payload length (u32 LE), CRC-32 of the payload (u32 LE,
 * libdeflate's), the payload.  Appends go to the newest file; chspool_seal
 * closes it (by age) so that the flusher can take it, and an append closes
 * it once it holds 32 MiB, so a slow flush never meets a file bigger than
 * that (the flusher reads a file whole); at open every file found is
 * sealed (a restart flushes what the last run left).  A record is
 * acknowledged only after an fsync covering it, so a torn tail after a
 * crash holds nothing acknowledged: readers stop at the first record that
 * does not check (chspool_next).
 *
 * Group commit: appends of concurrent requests write under one mutex and
 * share fsyncs (whoever syncs covers every record written before it).  A
 * failed fsync truncates the file back to what was durable and fails every
 * request not yet covered: nothing is half-stored.
 *
 * The spool is bounded: an append that would pass max_bytes answers
 * CHSPOOL_EFULL (the server answers 503: ClickHouse has been unreachable
 * for a while and the spool is full). */
#ifndef FLAMEDB_CHSPOOL_H
#define FLAMEDB_CHSPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct chspool chspool;

typedef enum { CHSPOOL_OK = 0, CHSPOOL_EFULL, CHSPOOL_EIO, CHSPOOL_ENOMEM } chspool_status;

/* Opens (creating) the spool directory dir; every file already there is
 * sealed, waiting for the flusher. */
chspool_status chspool_open(chspool **out, const char *dir, uint64_t max_bytes, char *err, size_t errlen);
void chspool_close(chspool *s);

/* Appends one record durably (see above); thread-safe. */
chspool_status chspool_append(chspool *s, const void *rec, size_t len, char *err, size_t errlen);

/* Seals the open file when it holds records written at least min_age_ms
 * ago (its first one), or any records when min_age_ms is 0.  Answers 1
 * when a file was sealed. */
int chspool_seal(chspool *s, int64_t min_age_ms);

/* The oldest sealed file: 1 and its seq, or 0 when none. */
int chspool_oldest(chspool *s, uint64_t *seq);

/* Reads sealed file seq into a malloc'd buffer (*data, *len: its bytes up
 * to the first record that does not check; *torn: the bytes after). */
chspool_status chspool_read(chspool *s, uint64_t seq, char **data, size_t *len, size_t *torn, char *err,
                            size_t errlen);

/* Walks the records of chspool_read's bytes: 1 and the next payload, or 0
 * at the end. */
int chspool_next(const char *data, size_t len, size_t *off, const char **rec, size_t *rec_len);

/* Removes sealed file seq (flushed). */
chspool_status chspool_remove(chspool *s, uint64_t seq, char *err, size_t errlen);

typedef struct {
    uint64_t bytes, max_bytes;    /* held, and the limit */
    uint64_t files;               /* sealed and open */
    uint64_t appends, fsyncs;     /* since open: records, and the fsyncs that made them durable */
    int64_t oldest_ms;            /* when the oldest record still held was written (0: none; a
                                     file found at open counts from its mtime) */
} chspool_stats;

void chspool_stats_get(chspool *s, chspool_stats *out);

#endif
