/* block.h — the encoded form of one stored profile's (node, count) pairs,
 * and block keys.  Pure codec: no store, no LMDB. */
#ifndef FLAMEDB_BLOCK_H
#define FLAMEDB_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct {
    uint32_t unit;        /* string id in the block's partition */
    uint32_t n_pairs, n_profiles, raw_len, nodes_bytes;
    int64_t duration_ms;
    double rate;
    uint64_t samples;     /* samples behind the block (0 when unknown) */
    uint64_t count_sum;   /* sum of the counts as stored (weighted, in rollups) */
    int samples_unknown;  /* some profile in it did not say how many samples */
    int gauge;            /* snapshots, averaged over time by merges */
    int version;          /* 1: written before samples and gauges were kept */
} block_header;

/* Whether the block's samples field is the number of samples behind it;
 * unit is its unit string.  A version-1 block's (always the sum of its raw
 * counts) is, only in a unit that counts samples. */
int block_samples_known(const block_header *h, const char *unit);

/* The encoded pairs of a block, apart from its header: made where the
 * pairs are (a request thread), framed where the header's ids are known
 * (the writer). */
typedef struct {
    void *buf;            /* malloc'd */
    size_t len;
    uint32_t raw_len, nodes_bytes;
    int compressed;
    uint64_t count_sum;
} block_payload;

/* Payloads shorter than this many raw bytes are never compressed. */
#define BLOCK_ZSTD_MIN 64
/* A raw block (one profile, written at ingest) whose payload is shorter
 * than this fits in a B-tree leaf page uncompressed: see block.c. */
#define BLOCK_ZSTD_MIN_RAW 1920

/* Encodes pairs (nodes ascending, unique); zcctx is a reusable ZSTD_CCtx
 * (or NULL); a payload of at least zstd_min raw bytes is compressed when
 * that makes it smaller. */
store_status block_payload_encode(const uint32_t *nodes, const uint64_t *counts, uint32_t n, void *zcctx,
                                  size_t zstd_min, block_payload *out);
/* The value: h's fields (n_pairs, unit, ...) then the payload. */
store_status block_encode_with(const block_header *h, const block_payload *pl, void **out, size_t *out_len);

/* Both at once, into a malloc'd value. */
store_status block_encode(const block_header *h, const uint32_t *nodes, const uint64_t *counts,
                          void *zcctx, void **out, size_t *out_len);
/* Checks a value's checksum: 0 when it matches, 1 for a version-1 value
 * (it has none), -1 when the bytes were changed or are not a block. */
int block_verify(const void *val, size_t len);
/* Parses a value's header; *payload points at the encoded pairs. */
int block_parse_header(const void *val, size_t len, block_header *h,
                       const void **payload, size_t *payload_len, int *compressed);
/* Decodes payload into nodes/counts (capacity h->n_pairs); scratch holds
 * at least h->raw_len bytes when compressed; zctx a reusable ZSTD_DCtx
 * (or NULL). */
int block_decode(const block_header *h, const void *payload, size_t payload_len, int compressed,
                 void *zctx, char *scratch, uint32_t *nodes, uint64_t *counts);
/* Adds count x weight of every pair into acc[node] and sets the node's bit
 * in touched, in one pass; *sum receives the block's sum x weight.  Node
 * ids must be below n_nodes. */
int block_accumulate(const block_header *h, const void *payload, size_t payload_len, int compressed,
                     void *zctx, char *scratch, uint32_t n_nodes, uint64_t weight,
                     uint64_t *acc, uint64_t *touched, uint64_t *sum);

/* Block keys: series (big-endian u32), window start (big-endian, sign bit
 * flipped so negatives sort first), sequence number for equal starts. */
#define BLOCK_KEY_LEN 16
void block_key(unsigned char key[BLOCK_KEY_LEN], uint32_t sid, int64_t from_ms, uint32_t seq);
void block_key_parse(const unsigned char *key, uint32_t *sid, int64_t *from_ms, uint32_t *seq);

#endif
