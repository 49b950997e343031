/* arena.h — bytes that live until the arena is freed: many small
 * allocations, one free. */
#ifndef FLAMEDB_ARENA_H
#define FLAMEDB_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct { arena_block *head; } arena;
void *arena_alloc(arena *a, size_t n);
void arena_free(arena *a);

#endif
