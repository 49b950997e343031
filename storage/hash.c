/* hash.c — byte-string hashes: XXH3 (libxxhash) in its 64- and 128-bit
 * forms.  XXH3 runs at memory speed on long inputs and is what the 128-bit
 * trusted stack identity needs (see hash.h). */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hash.h"

uint64_t hash_bytes(const void *p, size_t len, uint64_t seed)
{
    return XXH3_64bits_withSeed(p, len, seed);
}

hash128 hash_bytes128(const void *p, size_t len)
{
    XXH128_hash_t h = XXH3_128bits(p, len);
    return (hash128){ h.low64, h.high64 };
}

hash128 hash_bytes128_seeded(const void *p, size_t len, uint64_t seed)
{
    XXH128_hash_t h = XXH3_128bits_withSeed(p, len, seed);
    return (hash128){ h.low64, h.high64 };
}
