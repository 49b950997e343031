/* idset.c — see idset.h.  Linear probing over an array of any size: the
 * low 32 bits of the hash pick the home slot by multiply-shift (no modulo,
 * no power of two), the top 8 bits are the fragment. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "idset.h"

#define ZALLOC_MAPPED (1u << 20)

void *idset_zalloc(size_t bytes)
{
    if (bytes < ZALLOC_MAPPED) return calloc(1, bytes);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void idset_zfree(void *p, size_t bytes)
{
    if (!p) return;
    if (bytes < ZALLOC_MAPPED) free(p);
    else munmap(p, bytes);
}

#define ZDROP_STEP (256u << 10)

void idset_zdrop(void *p, size_t bytes, size_t *released, size_t done)
{
    if (bytes < ZALLOC_MAPPED || done < *released + ZDROP_STEP) return;
    size_t page = 4096, end = done / page * page; /* mmap's blocks are page aligned */
    if (end <= *released) return;
    madvise((char *)p + *released, end - *released, MADV_DONTNEED);
    *released = end;
}

static inline uint32_t home(uint64_t h, uint32_t cap) { return (uint32_t)(((h & 0xffffffffu) * cap) >> 32); }
static inline unsigned char frag(uint64_t h) { return (unsigned char)(h >> 56); }

static inline uint32_t slot_id(const unsigned char *p)
{
    uint32_t id;
    memcpy(&id, p, 4);
    return id;
}

int idset_init(idset *s, uint32_t cap)
{
    if (cap < 16) cap = 16;
    s->slots = idset_zalloc((size_t)cap * IDSET_SLOT);
    s->cap = s->slots ? cap : 0;
    s->len = 0;
    return s->slots ? 0 : -1;
}

void idset_free(idset *s)
{
    idset_zfree(s->slots, idset_bytes(s));
    s->slots = NULL;
    s->cap = s->len = 0;
}

size_t idset_bytes(const idset *s) { return (size_t)s->cap * IDSET_SLOT; }

uint32_t idset_find(const idset *s, uint64_t h, int (*eq)(const void *ctx, uint32_t id), const void *ctx)
{
    if (!s->cap) return 0;
    unsigned char f = frag(h);
    for (uint32_t i = home(h, s->cap);;) {
        const unsigned char *p = s->slots + (size_t)i * IDSET_SLOT;
        uint32_t id = slot_id(p);
        if (!id) return 0;
        if (p[4] == f && eq(ctx, id)) return id;
        if (++i == s->cap) i = 0;
    }
}

static void place(unsigned char *slots, uint32_t cap, uint64_t h, uint32_t id)
{
    uint32_t i = home(h, cap);
    while (slot_id(slots + (size_t)i * IDSET_SLOT))
        if (++i == cap) i = 0;
    unsigned char *p = slots + (size_t)i * IDSET_SLOT;
    memcpy(p, &id, 4);
    p[4] = frag(h);
}

int idset_put(idset *s, uint64_t h, uint32_t id, uint64_t (*hash_of)(const void *ctx, uint32_t id), const void *ctx)
{
    if (((uint64_t)s->len + 1) * 4 > (uint64_t)s->cap * 3) {
        uint64_t ncap = s->cap < 16 ? 16 : (uint64_t)s->cap + s->cap / 2;
        if (ncap > UINT32_MAX) ncap = UINT32_MAX;
        if (((uint64_t)s->len + 1) * 4 > ncap * 3) return -1;
        unsigned char *ns = idset_zalloc((size_t)ncap * IDSET_SLOT);
        if (!ns) return -1;
        /* The home slot, (low 32 bits x cap) >> 32, keeps the hashes'
         * order at any cap: the old array read from its start fills the
         * new one from its start too, so what is behind the read can go */
        size_t released = 0;
        for (uint32_t i = 0; i < s->cap; i++) {
            uint32_t old = slot_id(s->slots + (size_t)i * IDSET_SLOT);
            if (old) place(ns, (uint32_t)ncap, hash_of(ctx, old), old);
            idset_zdrop(s->slots, idset_bytes(s), &released, (size_t)(i + 1) * IDSET_SLOT);
        }
        idset_zfree(s->slots, idset_bytes(s));
        s->slots = ns;
        s->cap = (uint32_t)ncap;
    }
    place(s->slots, s->cap, h, id);
    s->len++;
    return 0;
}
