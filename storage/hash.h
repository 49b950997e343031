/* hash.h — hashing for storage/'s in-memory maps.
 *
 * 64-bit hashes key maps that confirm a hit by comparing the real content
 * (a collision costs time, never correctness).  128-bit hashes (XXH3-128,
 * from Debian's libxxhash) identify content the maps do not keep: stacks
 * and partition strings are looked up by their 128-bit hash alone and the
 * hash is trusted.  With n distinct items the chance that any two collide
 * is about n^2 / 2^129: 10^-20 for a billion stacks, far below the rate of
 * undetected memory errors. */
#ifndef FLAMEDB_HASH_H
#define FLAMEDB_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t lo, hi; } hash128;

uint64_t hash_bytes(const void *p, size_t len, uint64_t seed);
hash128 hash_bytes128(const void *p, size_t len);
/* XXH3-128 with a seed: keys of one kind kept apart from hash_bytes128's
 * of text (ingest/pprof.c's stack keys). */
hash128 hash_bytes128_seeded(const void *p, size_t len, uint64_t seed);

static inline uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33; x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33; x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

#endif
