/* idset.c — see idset.h.  Linear probing over an array of any size: the
 * low 32 bits of the hash pick the home slot by multiply-shift (no modulo,
 * no power of two), the top 8 bits are the fragment; slots of 4 bytes
 * (24-bit ids) until an id needs 5. */
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

/* A slot of `width` bytes: the id in its first width - 1 (little endian
 * for 3), the fragment last. */
static inline uint32_t slot_id(const unsigned char *p, unsigned width)
{
    if (width == 4) return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
    uint32_t id;
    memcpy(&id, p, 4);
    return id;
}

static inline void slot_set(unsigned char *p, unsigned width, uint32_t id, unsigned char f)
{
    if (width == 4) {
        p[0] = (unsigned char)id;
        p[1] = (unsigned char)(id >> 8);
        p[2] = (unsigned char)(id >> 16);
    } else memcpy(p, &id, 4);
    p[width - 1] = f;
}

int idset_init(idset *s, uint32_t cap)
{
    if (cap < 16) cap = 16;
    s->width = 4;
    s->slots = idset_zalloc((size_t)cap * s->width);
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

size_t idset_bytes(const idset *s) { return (size_t)s->cap * s->width; }

uint32_t idset_find(const idset *s, uint64_t h, int (*eq)(const void *ctx, uint32_t id), const void *ctx)
{
    if (!s->cap) return 0;
    unsigned char f = frag(h);
    unsigned width = s->width;
    for (uint32_t i = home(h, s->cap);;) {
        const unsigned char *p = s->slots + (size_t)i * width;
        uint32_t id = slot_id(p, width);
        if (!id) return 0;
        if (p[width - 1] == f && eq(ctx, id)) return id;
        if (++i == s->cap) i = 0;
    }
}

static void place(unsigned char *slots, uint32_t cap, unsigned width, uint64_t h, uint32_t id)
{
    uint32_t i = home(h, cap);
    while (slot_id(slots + (size_t)i * width, width))
        if (++i == cap) i = 0;
    slot_set(slots + (size_t)i * width, width, id, frag(h));
}

/* Moves every id into a new array of ncap slots of nwidth bytes. */
static int rehash(idset *s, uint32_t ncap, unsigned nwidth, uint64_t (*hash_of)(const void *ctx, uint32_t id),
                  const void *ctx)
{
    unsigned char *ns = idset_zalloc((size_t)ncap * nwidth);
    if (!ns) return -1;
    /* The home slot, (low 32 bits x cap) >> 32, keeps the hashes' order at
     * any cap: the old array read from its start fills the new one from its
     * start too, so what is behind the read can go */
    size_t released = 0;
    for (uint32_t i = 0; i < s->cap; i++) {
        uint32_t old = slot_id(s->slots + (size_t)i * s->width, s->width);
        if (old) place(ns, ncap, nwidth, hash_of(ctx, old), old);
        idset_zdrop(s->slots, idset_bytes(s), &released, (size_t)(i + 1) * s->width);
    }
    idset_zfree(s->slots, idset_bytes(s));
    s->slots = ns;
    s->cap = ncap;
    s->width = nwidth;
    return 0;
}

int idset_put(idset *s, uint64_t h, uint32_t id, uint64_t (*hash_of)(const void *ctx, uint32_t id), const void *ctx)
{
    unsigned width = s->width == 4 && id >= IDSET_NARROW_IDS ? 5 : s->width;
    if (((uint64_t)s->len + 1) * 4 > (uint64_t)s->cap * 3) {
        uint64_t ncap = s->cap < 16 ? 16 : (uint64_t)s->cap + s->cap / 2;
        if (ncap > UINT32_MAX) ncap = UINT32_MAX;
        if (((uint64_t)s->len + 1) * 4 > ncap * 3) return -1;
        if (rehash(s, (uint32_t)ncap, width, hash_of, ctx)) return -1;
    } else if (width != s->width && rehash(s, s->cap, width, hash_of, ctx))
        return -1;
    place(s->slots, s->cap, s->width, h, id);
    s->len++;
    return 0;
}
