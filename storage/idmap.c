/* idmap.c — an open-addressing hash map from a 64-bit key to u32 ids.
 *
 * Linear probing over a power-of-two array, grown at 50% load.  Id 0 marks
 * an empty slot.  Keys may repeat (a key is often a hash of the real key), so
 * idmap_find asks the caller's eq() to confirm each candidate.  There is no
 * delete: the store rebuilds a map from its table when it rolls back. */
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "hash.h"

int idmap_init(idmap *m, size_t cap)
{
    size_t c = 16;
    while (c < cap) c <<= 1;
    m->slots = calloc(c, sizeof *m->slots);
    m->cap = m->slots ? c : 0;
    m->len = 0;
    return m->slots ? 0 : -1;
}

void idmap_free(idmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

void idmap_clear(idmap *m)
{
    memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->len = 0;
}

static void put_slot(idmap_slot *slots, size_t cap, uint64_t key, uint32_t id)
{
    size_t i = hash_u64(key) & (cap - 1);
    while (slots[i].id) i = (i + 1) & (cap - 1);
    slots[i].key = key;
    slots[i].id = id;
}

int idmap_put(idmap *m, uint64_t key, uint32_t id)
{
    if ((m->len + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 16;
        idmap_slot *ns = calloc(ncap, sizeof *ns);
        if (!ns) return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].id) put_slot(ns, ncap, m->slots[i].key, m->slots[i].id);
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    put_slot(m->slots, m->cap, key, id);
    m->len++;
    return 0;
}

uint32_t idmap_find(const idmap *m, uint64_t key, int (*eq)(void *ctx, uint32_t id), void *ctx)
{
    if (!m->cap) return 0;
    size_t i = hash_u64(key) & (m->cap - 1);
    for (; m->slots[i].id; i = (i + 1) & (m->cap - 1))
        if (m->slots[i].key == key && (!eq || eq(ctx, m->slots[i].id))) return m->slots[i].id;
    return 0;
}

size_t idmap_bytes(const idmap *m)
{
    return m->cap * sizeof *m->slots;
}
