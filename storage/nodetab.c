/* nodetab.c — see nodetab.h.  Three append-only tables: the functions by
 * id, a group word and base per 64 ids, and the parents that are not the
 * node before ("exceptions") in id order. */
#include <stdlib.h>

#include "nodetab.h"
#include "table.h"

typedef struct {
    uint32_t prev[2];   /* bit b (word b / 32): node 64g + b is a child of the node before it */
    uint32_t base;      /* index in parents of the group's first exception */
} group;
_Static_assert(sizeof(group) == 12, "a group is 12 bytes");

struct nodetab {
    table *funcs;       /* u32 by id */
    table *groups;      /* group by id / 64 */
    table *parents;     /* u32: the exceptions */
    uint32_t len, n_parents;
};

/* Ones in x, without a call: __builtin_popcountll is libgcc's
 * __popcountdi2 where the target has no popcnt instruction. */
static inline uint32_t ones(uint64_t x)
{
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (uint32_t)((x * UINT64_C(0x0101010101010101)) >> 56);
}

static inline uint64_t group_bits(const group *g) { return (uint64_t)g->prev[1] << 32 | g->prev[0]; }

nodetab *nodetab_new(void)
{
    nodetab *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->funcs = table_new(sizeof(uint32_t));
    t->groups = table_new(sizeof(group));
    t->parents = table_new(sizeof(uint32_t));
    if (!t->funcs || !t->groups || !t->parents) {
        nodetab_free(t);
        return NULL;
    }
    return t;
}

void nodetab_free(nodetab *t)
{
    if (!t) return;
    table_free(t->funcs);
    table_free(t->groups);
    table_free(t->parents);
    free(t);
}

int nodetab_push(nodetab *t, uint32_t parent, uint32_t func)
{
    uint32_t id = t->len;
    if (id == UINT32_MAX) return -1;
    int chained = id > 0 && parent == id - 1;
    /* every slot first, so that a failure leaves the table as it was */
    uint32_t *f = table_slot(t->funcs, id);
    group *g = f ? table_slot(t->groups, id >> 6) : NULL;
    uint32_t *p = g && !chained ? table_slot(t->parents, t->n_parents) : NULL;
    if (!g || (!chained && !p)) return -1;
    uint32_t b = id & 63;
    if (b == 0) *g = (group){ { 0, 0 }, t->n_parents };
    if (chained) g->prev[b >> 5] |= UINT32_C(1) << (b & 31);
    else {
        *p = parent;
        t->n_parents++;
    }
    *f = func;
    t->len++;
    return 0;
}

void nodetab_get(const nodetab *t, uint32_t id, uint32_t *parent, uint32_t *func)
{
    const group *g = table_at(t->groups, id >> 6);
    uint64_t bits = group_bits(g), below = (UINT64_C(1) << (id & 63)) - 1;
    if (bits >> (id & 63) & 1) *parent = id - 1;
    else *parent = *(const uint32_t *)table_at(t->parents, g->base + ones(~bits & below));
    *func = *(const uint32_t *)table_at(t->funcs, id);
}

uint32_t nodetab_len(const nodetab *t) { return t->len; }

uint64_t nodetab_bytes(const nodetab *t)
{
    return table_chunk_bytes(t->len, sizeof(uint32_t)) + table_chunk_bytes(((uint64_t)t->len + 63) / 64, sizeof(group)) +
           table_chunk_bytes(t->n_parents, sizeof(uint32_t));
}
