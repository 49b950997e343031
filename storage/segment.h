/* segment.h — a series' profiles of one closed 10-minute bucket packed
 * into one value (segment.c says why and how), and the walk that reads a
 * series' profiles from segments and raw blocks together. */
#ifndef FLAMEDB_SEGMENT_H
#define FLAMEDB_SEGMENT_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "pdict.h"
#include "store.h"

/* The span of a segment: the rollups' 10-minute level. */
#define SEG_SPAN_MS (INT64_C(600) * 1000)
/* Segment keys are block keys (block_key) of (series, bucket start, 0). */
#define SEG_KEY_LEN BLOCK_KEY_LEN

/* Decoding state, one per thread: a zstd context, scratch, and the union
 * of the last segment met (decoded once for all its profiles). */
typedef struct seg_dec {
    void *zctx;               /* ZSTD_DCtx, made on first need */
    char *scratch;
    size_t scratch_cap;
    const void *useg;         /* the segment whose union is in uids */
    uint32_t *uids;
    uint32_t nu;
    size_t ucap;
    /* for seg_value_decode, made on first need: the union ascending (id in
     * the high half, its place in uids in the low) and counts by place */
    const void *sseg;
    uint64_t *sorted, *slot;
    size_t scap;
    /* version 2: the payload areas of the last two segments met,
     * decompressed once for all their profiles (two: a scan that merges
     * two shards' segments by time alternates between them) */
    struct seg_area {
        const void *seg;
        unsigned char *b;
        size_t len, cap;
    } area[2];
    unsigned area_next;       /* the slot to fill next */
} seg_dec;
void seg_dec_free(seg_dec *d);
/* Forgets the cached union and areas (when the bytes they came from may
 * change). */
void seg_dec_reset(seg_dec *d);

/* A stored profile's value: a block value (block.c) or a profile inside a
 * segment, told apart by the first byte.  Both parse into a block_header;
 * accumulate and decode take either. */
int seg_value_header(const void *val, size_t len, block_header *h);
int seg_value_accumulate(seg_dec *d, const void *val, size_t len, uint32_t n_nodes, uint64_t weight, uint64_t *acc,
                         uint64_t *touched, uint64_t *sum);
/* Pairs into nodes/counts (room for h.n_pairs), node ids ascending (as a
 * block decodes: readers translate them in that order). */
int seg_value_decode(seg_dec *d, const void *val, size_t len, uint32_t *nodes, uint64_t *counts);
/* 1 when val is a profile inside a segment. */
int seg_value_in_segment(const void *val, size_t len);

/* A segment value: checksum (0 good, -1 bad), and its profile count. */
int seg_verify(const void *val, size_t len);
int seg_count(const void *val, size_t len, uint32_t *n);
/* For checks: each profile's payload where the version puts it (version
 * 2: in the area, one after another from its start, covering it all); 0,
 * or -1 with why. */
int seg_payloads_check(const void *val, size_t len, char *why, size_t whylen);
/* The union of a segment's node ids (all its profiles'), for checks:
 * decoded into d->uids / d->nu; 0 or -1 when damaged. */
int seg_union(seg_dec *d, const void *val, size_t len);

/* One profile of a series, as seg_iter walks them. */
typedef struct {
    int64_t from_ms;
    uint32_t seq;             /* raw: the key's; in a segment: its place */
    int in_segment;
    const void *data;         /* the value: a block, or a profile in a segment */
    size_t data_len;
    const void *seg;          /* in_segment: the segment's value and key's bucket */
    size_t seg_len;
    int64_t bucket;
} seg_item;

/* The profiles of one segment value (for checks): seg_walk_next answers
 * 1 with *out set, 0 at its end, -1 when the rest is damaged (an entry
 * that does not parse or points back wrongly, bytes left over). */
typedef struct {
    const void *seg;
    size_t len;
    const unsigned char *p, *end;
    uint64_t left;
    int64_t bucket;
    uint32_t idx;
} seg_walk;
int seg_walk_begin(seg_walk *w, const void *val, size_t len, int64_t bucket);
int seg_walk_next(seg_walk *w, seg_item *out);

/* Walks series sid's profiles starting in [from, until) in time order,
 * raw blocks and segments merged; of equal starts, a segment's come first
 * (raw ones there arrived after it was packed).  The cursors are the
 * caller's (blocks and segments of one transaction) and move.  A segment
 * whose header cannot be read is stepped over, as are its profiles. */
typedef struct {
    MDB_cursor *bc, *sc;
    uint32_t sid;
    int64_t from, until;
    int raw_ok, seg_ok;       /* a current item on each side */
    seg_item raw, cur;
    /* the segment being walked */
    const unsigned char *sv, *sp, *send;
    size_t slen;
    int64_t sbucket;
    uint32_t sleft, sidx;
    int err;                  /* an LMDB error met (not MDB_NOTFOUND) */
} seg_iter;
void seg_iter_begin(seg_iter *it, MDB_cursor *blocks, MDB_cursor *segs, uint32_t sid, int64_t from, int64_t until);
/* 1 with *out set, 0 at the end (it->err says whether LMDB failed). */
int seg_iter_next(seg_iter *it, seg_item *out);

/* The newest (last) or oldest profile of series sid in the segments at
 * cursor sc, among those starting in [lo, hi): 1 with its window. */
int seg_edge(MDB_cursor *sc, uint32_t sid, int last, int64_t lo, int64_t hi, int64_t *from, int64_t *until);

/* The version seg_pack writes, for the whole process: SEG_VERSION (2) by
 * default; 1, the previous format, for tests and benchmarks that show it
 * is still read and compare the two. */
void seg_set_write_version(int version);

/* Packs series sid's profiles of the bucket starting at bucket (raw blocks
 * and any segment there) into one segment, replacing that segment and
 * deleting the raw blocks, in txn; profiles starting before keep_from are
 * dropped (retention), *dropped counting them (may be NULL); *written
 * (may be NULL) grows by the new segment's bytes.  r reads the partition's
 * strings (units); zcctx a ZSTD_CCtx or NULL. */
store_status seg_pack(MDB_txn *txn, MDB_dbi blocks, MDB_dbi segs, pdict_r *r, void *zcctx, seg_dec *d, uint32_t sid,
                      int64_t bucket, int64_t keep_from, uint64_t *dropped, size_t *written);

#endif
