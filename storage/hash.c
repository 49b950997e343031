/* hash.c — a fast 64-bit hash of byte strings for the in-memory maps.
 *
 * Eight bytes at a time, each word mixed in with a multiply and rotate, then
 * a final avalanche.  Not cryptographic: the maps always confirm a hit by
 * comparing the real bytes, so a collision costs time, never correctness. */
#include <string.h>

#include "store_internal.h"

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t store_hash_bytes(const void *p, size_t len, uint64_t seed)
{
    const unsigned char *s = p;
    const uint64_t k1 = UINT64_C(0x9e3779b97f4a7c15), k2 = UINT64_C(0xbf58476d1ce4e5b9);
    uint64_t h = seed ^ (len * k1);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = rotl(h ^ (w * k2), 31) * k1;
        s += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, s, len);
    h = rotl(h ^ (tail * k2), 31) * k1;
    return store_hash_u64(h);
}
