/* idset.h — an open-addressing set of non-zero u32 ids whose keys live
 * elsewhere (in the caller's arrays indexed by id).
 *
 * A slot is the id and 8 bits of its key's hash (the fragment): 4 bytes
 * while every id is below 2^24 (a 24-bit id), 5 from the first id past
 * that on (the set is rebuilt wider once).  A probe compares the fragment
 * first and asks the caller (eq) only when it matches, so most probes
 * touch no other memory: a slot that is not the one sought passes the
 * fragment test once in 256.  The capacity is any number, not a power of
 * two: a hash's home slot is (low 32 bits x cap) >> 32, and the set grows
 * by half when 3/4 full, so it is 1/2 to 3/4 full and an id costs 5.3 to
 * 8 bytes (6.7 to 10 past 2^24 ids), against 11 to 21 for 8-byte slots in
 * power-of-two arrays, and 32 to 64 for idmap, which keeps whole keys in
 * slots grown at half load.  Growing rehashes every id (hash_of) into the
 * new array, giving back the old one's pages as it goes (idset_zdrop).
 * No delete. */
#ifndef FLAMEDB_IDSET_H
#define FLAMEDB_IDSET_H

#include <stddef.h>
#include <stdint.h>

#define IDSET_NARROW_IDS (UINT32_C(1) << 24) /* ids below this fit 4-byte slots */

typedef struct { unsigned char *slots; uint32_t cap, len; unsigned width; } idset;

/* Starts with cap slots (at least 16). */
int idset_init(idset *s, uint32_t cap);
void idset_free(idset *s);
/* The id whose key hashes to h and for which eq(ctx, id) holds, or 0. */
uint32_t idset_find(const idset *s, uint64_t h, int (*eq)(const void *ctx, uint32_t id), const void *ctx);
/* Adds id (not present) with hash h; growing rehashes every id with
 * hash_of(ctx, id). */
int idset_put(idset *s, uint64_t h, uint32_t id, uint64_t (*hash_of)(const void *ctx, uint32_t id), const void *ctx);
size_t idset_bytes(const idset *s);

/* Zeroed memory for big arrays: the slots here, the writer's stack table
 * (pdict.c).  From 1 MiB up it is mapped from the system directly and
 * unmapped when freed, so an array replaced by a bigger one goes back at
 * once.  Through malloc it might not: glibc raises its mmap threshold to
 * the size of every mapped block freed (up to 32 MiB), puts the next
 * arrays below that in its heaps, and an array freed there stays resident
 * as a hole until something fits in it.  idset_zfree takes the size given
 * to idset_zalloc. */
void *idset_zalloc(size_t bytes);
void idset_zfree(void *p, size_t bytes);
/* While an array of `bytes` from idset_zalloc is read from the start for
 * the last time (rehashed into its bigger successor), gives back its pages
 * below `done` bytes, from *released on (updated): a growth then holds
 * about the new array, not the old and the new together (2.5 times the
 * old).  Reading below *released afterwards finds zeros.  Nothing for an
 * array through malloc. */
void idset_zdrop(void *p, size_t bytes, size_t *released, size_t done);

#endif
