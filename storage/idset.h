/* idset.h — an open-addressing set of non-zero u32 ids whose keys live
 * elsewhere (in the caller's arrays indexed by id).
 *
 * A slot is the id and 32 bits of its key's hash: a probe compares the
 * fragment first and asks the caller (eq) only when it matches, so most
 * probes touch no other memory.  8 bytes a slot, grown at 3/4 load: 11 to
 * 21 bytes an id, against 32 to 64 for idmap, which keeps whole keys in
 * slots grown at half load.  No delete. */
#ifndef FLAMEDB_IDSET_H
#define FLAMEDB_IDSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint32_t id, frag; } idset_slot;
typedef struct { idset_slot *slots; uint32_t cap, len; } idset;

int idset_init(idset *s, uint32_t cap);
void idset_free(idset *s);
/* The id whose key hashes to h and for which eq(ctx, id) holds, or 0. */
uint32_t idset_find(const idset *s, uint64_t h, int (*eq)(const void *ctx, uint32_t id), const void *ctx);
/* Adds id (not present) with hash h; growing rehashes every id with
 * hash_of(ctx, id). */
int idset_put(idset *s, uint64_t h, uint32_t id, uint64_t (*hash_of)(const void *ctx, uint32_t id), const void *ctx);
size_t idset_bytes(const idset *s);

#endif
