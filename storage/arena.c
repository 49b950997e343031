/* arena.c — bytes that live as long as the store: interned strings and
 * series label arrays.  Allocations are carved from 1 MiB blocks (larger
 * requests get a block of their own) and freed all at once at close. */
#include <stdlib.h>

#include "arena.h"

#define ARENA_BLOCK (1u << 20)

struct arena_block {
    arena_block *next;
    size_t used, cap;
    _Alignas(16) char data[];
};

void *arena_alloc(arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

void arena_free(arena *a)
{
    while (a->head) {
        arena_block *n = a->head->next;
        free(a->head);
        a->head = n;
    }
}
