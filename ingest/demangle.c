/* demangle.c — C++ and Rust symbol names made readable (see demangle.h).
 *
 * libiberty (Debian's libiberty-dev: libiberty.a, demangle.h under
 * /usr/include/libiberty/) is the demangler binutils and gdb use.
 * cplus_demangle with DMGL_AUTO tries Rust first (rust_demangle: legacy
 * "_ZN...17h<hash>E" and v0 "_R..." since binutils 2.36; Debian 12's
 * 20230104 snapshot has both), then the Itanium C++ ABI
 * (cplus_demangle_v3); DMGL_PARAMS | DMGL_ANSI print parameter types and
 * cv-qualifiers, as c++filt does.  Without DMGL_NO_RECURSE_LIMIT libiberty
 * stops at 2048 levels of nesting, so hostile input cannot exhaust the
 * stack; input longer than DEMANGLE_MAX_IN is not tried at all.
 */
#include "demangle.h"

#include <libiberty/demangle.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DMGL_FLAGS (DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO)

int demangle_candidate(const char *name, size_t len)
{
    return len > 2 && len <= DEMANGLE_MAX_IN && name[0] == '_' &&
           (name[1] == 'Z' || name[1] == 'R') && !memchr(name, '\0', len);
}

char *demangle_name(const char *name, size_t len)
{
    if (!demangle_candidate(name, len)) return NULL;
    char tmp[256], *z = len < sizeof tmp ? tmp : malloc(len + 1);
    if (!z) return NULL;
    memcpy(z, name, len);
    z[len] = '\0';
    char *out = cplus_demangle(z, DMGL_FLAGS);
    if (z != tmp) free(z);
    if (out && !*out) { free(out); out = NULL; }
    return out;
}

/* ---- the cache: open addressing, FNV-1a, grown at 70% load ---- */

typedef struct {
    char *key;            /* the mangled name, NUL-terminated; NULL: free slot */
    size_t klen;
    char *val;            /* demangle_name's answer (NULL: keep the raw name) */
    uint64_t hash;
} dm_entry;

struct demangle_cache {
    dm_entry *v;
    size_t cap, n;        /* cap: a power of two */
};

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
    return h;
}

demangle_cache *demangle_cache_new(void)
{
    demangle_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = 256;
    c->v = calloc(c->cap, sizeof *c->v);
    if (!c->v) { free(c); return NULL; }
    return c;
}

void demangle_cache_free(demangle_cache *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->cap; i++) { free(c->v[i].key); free(c->v[i].val); }
    free(c->v);
    free(c);
}

static int cache_grow(demangle_cache *c)
{
    size_t cap = c->cap * 2;
    dm_entry *v = calloc(cap, sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->v[i].key) continue;
        size_t j = (size_t)c->v[i].hash & (cap - 1);
        while (v[j].key) j = (j + 1) & (cap - 1);
        v[j] = c->v[i];
    }
    free(c->v);
    c->v = v;
    c->cap = cap;
    return 0;
}

const char *demangle_cached(demangle_cache *c, const char *name, size_t len)
{
    if (!demangle_candidate(name, len)) return NULL;
    uint64_t h = fnv1a(name, len);
    size_t j = (size_t)h & (c->cap - 1);
    for (; c->v[j].key; j = (j + 1) & (c->cap - 1))
        if (c->v[j].hash == h && c->v[j].klen == len && memcmp(c->v[j].key, name, len) == 0)
            return c->v[j].val;
    char *out = demangle_name(name, len);
    if ((c->n + 1) * 10 > c->cap * 7) {
        if (cache_grow(c) < 0) { free(out); return NULL; }   /* not remembered: raw name */
        j = (size_t)h & (c->cap - 1);
        while (c->v[j].key) j = (j + 1) & (c->cap - 1);
    }
    char *key = malloc(len + 1);
    if (!key) { free(out); return NULL; }
    memcpy(key, name, len);
    key[len] = '\0';
    c->v[j] = (dm_entry){ key, len, out, h };
    c->n++;
    return out;
}
