/* idset.c — see idset.h.  Linear probing over a power-of-two array; the
 * low bits of the hash pick the slot, the high 32 bits are the fragment. */
#include <stdlib.h>

#include "idset.h"

int idset_init(idset *s, uint32_t cap)
{
    uint32_t c = 16;
    while (c < cap) c <<= 1;
    s->slots = calloc(c, sizeof *s->slots);
    s->cap = s->slots ? c : 0;
    s->len = 0;
    return s->slots ? 0 : -1;
}

void idset_free(idset *s)
{
    free(s->slots);
    s->slots = NULL;
    s->cap = s->len = 0;
}

size_t idset_bytes(const idset *s) { return (size_t)s->cap * sizeof *s->slots; }

uint32_t idset_find(const idset *s, uint64_t h, int (*eq)(const void *ctx, uint32_t id), const void *ctx)
{
    if (!s->cap) return 0;
    uint32_t mask = s->cap - 1, frag = (uint32_t)(h >> 32);
    for (uint32_t i = (uint32_t)h & mask; s->slots[i].id; i = (i + 1) & mask)
        if (s->slots[i].frag == frag && eq(ctx, s->slots[i].id)) return s->slots[i].id;
    return 0;
}

static void place(idset_slot *slots, uint32_t cap, uint64_t h, uint32_t id)
{
    uint32_t mask = cap - 1, i = (uint32_t)h & mask;
    while (slots[i].id) i = (i + 1) & mask;
    slots[i].id = id;
    slots[i].frag = (uint32_t)(h >> 32);
}

int idset_put(idset *s, uint64_t h, uint32_t id, uint64_t (*hash_of)(const void *ctx, uint32_t id), const void *ctx)
{
    if ((uint64_t)(s->len + 1) * 4 > (uint64_t)s->cap * 3) {
        uint64_t ncap = s->cap ? (uint64_t)s->cap * 2 : 16;
        if (ncap > (UINT64_C(1) << 32)) return -1;
        idset_slot *ns = calloc((size_t)ncap, sizeof *ns);
        if (!ns) return -1;
        for (uint32_t i = 0; i < s->cap; i++)
            if (s->slots[i].id) place(ns, (uint32_t)ncap, hash_of(ctx, s->slots[i].id), s->slots[i].id);
        free(s->slots);
        s->slots = ns;
        s->cap = (uint32_t)ncap;
    }
    place(s->slots, s->cap, h, id);
    s->len++;
    return 0;
}
