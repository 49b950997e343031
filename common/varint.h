/* varint.h — LEB128 unsigned varints, the one varint codec of flamedb:
 * storage's blocks and dictionaries, protobuf's varints (ingest/pprof_wire.c)
 * and ClickHouse's RowBinary lengths (cluster/chrow.c, which also refuses
 * a 10th byte carrying bits above 64).
 *
 * Seven bits a byte, low bits first, the high bit set on every byte but the
 * last: small numbers (node-id deltas, sampled counts) take one byte.
 * varint_get refuses to run past `end` or past 64 bits; one- and two-byte
 * varints (a profile's ids and lengths, most node deltas) skip its loop:
 * 2 % of a pprof decode (bench_pprof_ingest's profiles). */
#ifndef FLAMEDB_VARINT_H
#define FLAMEDB_VARINT_H

#include <stdint.h>

#define VARINT_MAX 10 /* bytes of the largest u64 */

static inline unsigned char *varint_put(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/* Reads a varint from [*p, end) and advances *p; answers -1 when it runs
 * off the end or past 64 bits. */
static inline int varint_get(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    const unsigned char *s = *p;
    if (s < end && *s < 0x80) {
        *v = *s;
        *p = s + 1;
        return 0;
    }
    if (end - s >= 2 && s[1] < 0x80) { /* two bytes: most protobuf ids and lengths */
        *v = (uint64_t)(s[0] & 0x7f) | (uint64_t)s[1] << 7;
        *p = s + 2;
        return 0;
    }
    uint64_t r = 0;
    for (int shift = 0; s < end && shift < 64; shift += 7) {
        unsigned char b = *s++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *v = r;
            *p = s;
            return 0;
        }
    }
    return -1;
}

#endif
