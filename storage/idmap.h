/* idmap.h — an open-addressing hash map from a 64-bit key to a non-zero
 * u32 id.  Several ids may share a key (a key may be a hash of the real
 * key): idmap_find asks the caller's eq() to confirm each candidate. */
#ifndef FLAMEDB_IDMAP_H
#define FLAMEDB_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t key; uint32_t id; } idmap_slot;
typedef struct { idmap_slot *slots; size_t cap, len; } idmap;

int idmap_init(idmap *m, size_t cap);
void idmap_free(idmap *m);
void idmap_clear(idmap *m);
int idmap_put(idmap *m, uint64_t key, uint32_t id);
/* Answers the first id with this key for which eq(ctx, id) is true (any
 * id when eq is NULL), or 0. */
uint32_t idmap_find(const idmap *m, uint64_t key, int (*eq)(void *ctx, uint32_t id), void *ctx);
/* Bytes the map holds. */
size_t idmap_bytes(const idmap *m);

#endif
