/* gen.h — reproducible synthetic profiles for the benchmarks.
 *
 * Header-only (static functions) so that each bench_*.c stays one
 * translation unit, as the Makefile builds them.
 *
 * The model of a program.  A set of functions with realistic names, in two
 * shapes: GEN_DEEP names look like Go, C++, Java and Rust symbols of 20 to
 * 60 bytes ("github.com/acme/billing/ledger.(*Store).Append",
 * "std::vector<acme::Order>::push_back"); GEN_COMPACT names are short C
 * symbols of 4 to 14 bytes ("tcp_sendmsg", "ev_run").  Functions are grouped
 * in modules of 50 and a callee is usually in its caller's module, which
 * gives folded text the locality real code has.
 *
 * The stacks.  A pool of distinct stacks grown like a real call tree: each
 * new stack takes a random earlier stack, keeps a prefix of at least half of
 * it, and appends new frames up to a depth drawn uniformly from
 * [depth_min, depth_max].  So stacks share long prefixes (thread entry, event
 * loop, request handler) and diverge near the leaves.
 *
 * The samples.  Zipf(s) over ranks 1..n, drawn with Vose's alias method in
 * O(1); rank r maps to pool stack perm[r], a fixed random permutation, so the
 * hot stacks are scattered over the tree rather than the oldest ones.
 *
 * Everything derives from one 64-bit seed: the same seed gives the same
 * bytes on every machine. */
#ifndef FLAMEDB_BENCH_GEN_H
#define FLAMEDB_BENCH_GEN_H

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ----------------------------------------------------- */

static inline double gen_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void *gen_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static inline void *gen_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "bench: out of memory (%zu x %zu bytes)\n", n, size);
        exit(1);
    }
    return p;
}

static inline void *gen_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return q;
}

static inline int gen_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Removes a directory tree (the benchmarks' temporary data directories). */
static inline void gen_rm_rf(const char *dir)
{
    nftw(dir, gen_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Bytes of a file as allocated on disk (st_blocks * 512), and its size. */
static inline int gen_file_bytes(const char *path, uint64_t *allocated, uint64_t *size)
{
    struct stat sb;
    if (stat(path, &sb)) return -1;
    if (allocated) *allocated = (uint64_t)sb.st_blocks * 512;
    if (size) *size = (uint64_t)sb.st_size;
    return 0;
}

/* A fresh temporary directory under $TMPDIR (default /tmp). */
static inline char *gen_tempdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/flamedb-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(path)) {
        fprintf(stderr, "bench: cannot create a temporary directory %s: %s\n", path, strerror(errno));
        exit(1);
    }
    char *s = strdup(path);
    if (!s) exit(1);
    return s;
}

/* ---- random numbers: xoshiro256** seeded by splitmix64 ----------------- */

typedef struct { uint64_t s[4]; } gen_rng;

static inline uint64_t gen_splitmix(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline void gen_rng_seed(gen_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = gen_splitmix(&seed);
}

static inline uint64_t gen_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t gen_next(gen_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = gen_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = gen_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n). */
static inline uint64_t gen_below(gen_rng *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)gen_next(r) * n) >> 64);
}

/* Uniform in [0, 1). */
static inline double gen_unit(gen_rng *r)
{
    return (double)(gen_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- a hash set of 64-bit hashes (for uniqueness checks) --------------- */

typedef struct { uint64_t *slot; size_t cap, len; } gen_set;

static inline uint64_t gen_hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * UINT64_C(0x100000001b3);
    return h ? h : 1;
}

/* Answers 1 when h was added, 0 when it was there already. */
static inline int gen_set_add(gen_set *set, uint64_t h)
{
    if ((set->len + 1) * 2 > set->cap) {
        size_t ncap = set->cap ? set->cap * 2 : 1024;
        uint64_t *ns = gen_xcalloc(ncap, sizeof *ns);
        for (size_t i = 0; i < set->cap; i++) {
            if (!set->slot[i]) continue;
            size_t j = set->slot[i] & (ncap - 1);
            while (ns[j]) j = (j + 1) & (ncap - 1);
            ns[j] = set->slot[i];
        }
        free(set->slot);
        set->slot = ns;
        set->cap = ncap;
    }
    size_t j = h & (set->cap - 1);
    for (; set->slot[j]; j = (j + 1) & (set->cap - 1))
        if (set->slot[j] == h) return 0;
    set->slot[j] = h;
    set->len++;
    return 1;
}

static inline void gen_set_free(gen_set *set)
{
    free(set->slot);
    memset(set, 0, sizeof *set);
}

/* ---- function names ----------------------------------------------------- */

typedef enum { GEN_COMPACT, GEN_DEEP } gen_shape;

static const char *const gen_verbs[] = {
    "get", "put", "read", "write", "parse", "encode", "decode", "handle", "serve", "flush",
    "append", "lookup", "insert", "remove", "resolve", "merge", "compact", "scan", "sort",
    "hash", "commit", "render", "load", "store", "send", "recv", "poll", "wait", "apply",
    "update", "build", "visit", "match", "split", "join", "open", "close", "alloc", "free",
    "copy", "check", "validate", "process", "dispatch", "schedule", "run", "emit", "fetch",
};
static const char *const gen_nouns[] = {
    "Request", "Response", "Header", "Body", "Buffer", "Block", "Page", "Index", "Table",
    "Row", "Column", "Key", "Value", "Entry", "Node", "Tree", "Map", "List", "Queue",
    "Stream", "Frame", "Packet", "Socket", "Conn", "Session", "Token", "Record", "Batch",
    "Chunk", "Segment", "Ledger", "Order", "Account", "Invoice", "Message", "Event", "Task",
    "Job", "Worker", "Pool", "Cache", "Config", "Schema", "Query", "Plan", "Cursor", "Span",
};
static const char *const gen_orgs[] = { "acme", "globex", "initech", "umbrella", "hooli", "vandelay" };
static const char *const gen_pkgs[] = {
    "billing", "ledger", "storage", "rpc", "http", "auth", "search", "index", "ingest",
    "query", "cache", "queue", "sched", "proto", "codec", "metrics", "trace", "config",
};
static const char *const gen_cpp_ns[] = { "std", "absl", "folly", "boost", "acme", "grpc", "rocksdb" };
static const char *const gen_cpp_tmpl[] = { "vector", "unordered_map", "shared_ptr", "basic_string", "deque", "optional" };
static const char *const gen_c_prefix[] = {
    "tcp", "ev", "io", "mm", "vfs", "sk", "ext4", "blk", "sys", "do", "lz4", "zlib", "mdb",
    "json", "http", "ssl", "pthread", "page", "net", "buf",
};
static const char *const gen_c_words[] = {
    "send", "recv", "poll", "run", "read", "write", "alloc", "free", "copy", "lock", "unlock",
    "wait", "wake", "parse", "hdr", "msg", "page", "fault", "flush", "sync", "hash", "insert",
    "find", "put", "get", "loop", "init", "open", "close", "map",
};

#define GEN_NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define GEN_PICK(r, a) ((a)[gen_below((r), GEN_NELEM(a))])

static inline void gen_lower_first(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s);
    if (dst[0] >= 'A' && dst[0] <= 'Z') dst[0] = (char)(dst[0] - 'A' + 'a');
}

/* Writes one random function name of the shape into buf. */
static inline void gen_one_name(gen_rng *r, gen_shape shape, char *buf, size_t cap)
{
    char m[64];
    if (shape == GEN_COMPACT) {
        switch (gen_below(r, 3)) {
        case 0: snprintf(buf, cap, "%s_%s", GEN_PICK(r, gen_c_prefix), GEN_PICK(r, gen_c_words)); break;
        case 1: snprintf(buf, cap, "%s_%s_%s", GEN_PICK(r, gen_c_prefix), GEN_PICK(r, gen_c_words),
                         GEN_PICK(r, gen_c_words)); break;
        default: snprintf(buf, cap, "%s%s", GEN_PICK(r, gen_c_words), GEN_PICK(r, gen_c_words)); break;
        }
        return;
    }
    const char *verb = GEN_PICK(r, gen_verbs), *noun = GEN_PICK(r, gen_nouns), *noun2 = GEN_PICK(r, gen_nouns);
    switch (gen_below(r, 6)) {
    case 0: /* Go method */
        snprintf(buf, cap, "github.com/%s/%s/%s.(*%s).%c%s%s", GEN_PICK(r, gen_orgs), GEN_PICK(r, gen_pkgs),
                 GEN_PICK(r, gen_pkgs), noun, verb[0] - 'a' + 'A', verb + 1, noun2);
        break;
    case 1: /* Go function */
        snprintf(buf, cap, "%s/%s.%c%s%s", GEN_PICK(r, gen_pkgs), GEN_PICK(r, gen_pkgs),
                 verb[0] - 'a' + 'A', verb + 1, noun);
        break;
    case 2: /* C++ method */
        snprintf(buf, cap, "%s::%s%s::%s%s", GEN_PICK(r, gen_cpp_ns), noun, noun2, verb, noun);
        break;
    case 3: /* C++ template */
        gen_lower_first(m, sizeof m, noun);
        snprintf(buf, cap, "std::%s<%s::%s>::%s_%s", GEN_PICK(r, gen_cpp_tmpl), GEN_PICK(r, gen_orgs), noun,
                 verb, m);
        break;
    case 4: /* Java */
        snprintf(buf, cap, "com.%s.%s.%s%s.%s%s", GEN_PICK(r, gen_orgs), GEN_PICK(r, gen_pkgs), noun, noun2,
                 verb, noun);
        break;
    default: /* Rust */
        gen_lower_first(m, sizeof m, noun2);
        snprintf(buf, cap, "%s::%s::%s::%s_%s", GEN_PICK(r, gen_pkgs), GEN_PICK(r, gen_pkgs), noun, verb, m);
        break;
    }
}

typedef struct {
    char **name;
    uint32_t *len;
    uint32_t n;
} gen_funcs;

/* n distinct names; deep ones are kept to 20..60 bytes. */
static inline void gen_funcs_make(gen_funcs *f, gen_rng *r, gen_shape shape, uint32_t n)
{
    gen_set seen = { 0 };
    f->name = gen_xmalloc(n * sizeof *f->name);
    f->len = gen_xmalloc(n * sizeof *f->len);
    f->n = 0;
    char buf[256];
    for (uint64_t tries = 0; f->n < n; tries++) {
        gen_one_name(r, shape, buf, sizeof buf);
        size_t len = strlen(buf);
        if (shape == GEN_DEEP && (len < 20 || len > 60)) continue;
        if (!gen_set_add(&seen, gen_hash_bytes(buf, len))) {
            if (tries > (uint64_t)n * 1000) {
                fprintf(stderr, "bench: cannot make %u distinct names\n", n);
                exit(1);
            }
            continue;
        }
        f->name[f->n] = strdup(buf);
        f->len[f->n] = (uint32_t)len;
        f->n++;
    }
    gen_set_free(&seen);
}

static inline void gen_funcs_free(gen_funcs *f)
{
    for (uint32_t i = 0; i < f->n; i++) free(f->name[i]);
    free(f->name);
    free(f->len);
}

/* ---- the stack pool ----------------------------------------------------- */

#define GEN_MODULE 50

typedef struct {
    gen_funcs funcs;
    uint32_t n;          /* stacks */
    uint32_t *frames;    /* function ids, stack i at frames[foff[i] .. foff[i+1]) */
    uint64_t *foff;
    char *text;          /* "f1;f2;...;fn" of stack i at text[toff[i] .. toff[i+1]) */
    uint64_t *toff;
    uint32_t *perm;      /* Zipf rank (0-based) -> stack */
} gen_pool;

static inline const char *gen_stack_text(const gen_pool *p, uint32_t i, uint32_t *len)
{
    *len = (uint32_t)(p->toff[i + 1] - p->toff[i]);
    return p->text + p->toff[i];
}

static inline uint32_t gen_stack_depth(const gen_pool *p, uint32_t i)
{
    return (uint32_t)(p->foff[i + 1] - p->foff[i]);
}

/* A callee of function f: usually in f's module. */
static inline uint32_t gen_callee(gen_rng *r, uint32_t n_funcs, uint32_t f)
{
    if (gen_unit(r) < 0.6) {
        uint32_t base = f / GEN_MODULE * GEN_MODULE, span = n_funcs - base < GEN_MODULE ? n_funcs - base : GEN_MODULE;
        return base + (uint32_t)gen_below(r, span);
    }
    return (uint32_t)gen_below(r, n_funcs);
}

/* Builds n distinct stacks with depths in [dmin, dmax] over n_funcs names. */
static inline void gen_pool_make(gen_pool *p, uint64_t seed, gen_shape shape, uint32_t n_funcs, uint32_t n,
                          uint32_t dmin, uint32_t dmax)
{
    gen_rng r;
    gen_rng_seed(&r, seed);
    memset(p, 0, sizeof *p);
    gen_funcs_make(&p->funcs, &r, shape, n_funcs);
    p->n = n;
    p->foff = gen_xmalloc(((size_t)n + 1) * sizeof *p->foff);
    p->toff = gen_xmalloc(((size_t)n + 1) * sizeof *p->toff);
    size_t fcap = (size_t)n * (dmin + dmax) / 2 + dmax, tcap = 0;
    p->frames = gen_xmalloc(fcap * sizeof *p->frames);
    p->foff[0] = 0;
    gen_set seen = { 0 };
    uint32_t roots = 8, root_funcs[8];
    for (uint32_t i = 0; i < roots; i++) root_funcs[i] = (uint32_t)gen_below(&r, n_funcs);
    uint32_t cur[1024];
    for (uint32_t i = 0; i < n;) {
        uint32_t d = dmin + (uint32_t)gen_below(&r, dmax - dmin + 1), k = 0;
        if (i >= 16 && gen_unit(&r) >= 0.02) {
            uint32_t j = (uint32_t)gen_below(&r, i), lj = gen_stack_depth(p, j);
            uint32_t lim = (lj < d ? lj : d) - 1; /* keep at least one new frame */
            k = lim / 2 + (uint32_t)gen_below(&r, lim - lim / 2 + 1);
            if (k > lim) k = lim;
            memcpy(cur, p->frames + p->foff[j], k * sizeof *cur);
        }
        if (k == 0) cur[k++] = root_funcs[gen_below(&r, roots)];
        for (; k < d; k++) cur[k] = gen_callee(&r, n_funcs, cur[k - 1]);
        if (!gen_set_add(&seen, gen_hash_bytes(cur, d * sizeof *cur))) continue; /* not distinct */
        if (p->foff[i] + d > fcap) {
            fcap = fcap * 2 + d;
            p->frames = gen_xrealloc(p->frames, fcap * sizeof *p->frames);
        }
        memcpy(p->frames + p->foff[i], cur, d * sizeof *cur);
        p->foff[i + 1] = p->foff[i] + d;
        i++;
    }
    gen_set_free(&seen);
    for (uint32_t i = 0; i < n; i++)
        for (uint64_t f = p->foff[i]; f < p->foff[i + 1]; f++) tcap += p->funcs.len[p->frames[f]] + 1;
    p->text = gen_xmalloc(tcap);
    char *t = p->text;
    for (uint32_t i = 0; i < n; i++) {
        p->toff[i] = (uint64_t)(t - p->text);
        for (uint64_t f = p->foff[i]; f < p->foff[i + 1]; f++) {
            if (f > p->foff[i]) *t++ = ';';
            memcpy(t, p->funcs.name[p->frames[f]], p->funcs.len[p->frames[f]]);
            t += p->funcs.len[p->frames[f]];
        }
    }
    p->toff[n] = (uint64_t)(t - p->text);
    p->perm = gen_xmalloc(n * sizeof *p->perm);
    for (uint32_t i = 0; i < n; i++) p->perm[i] = i;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = (uint32_t)gen_below(&r, i), tmp = p->perm[i - 1];
        p->perm[i - 1] = p->perm[j];
        p->perm[j] = tmp;
    }
}

static inline void gen_pool_free(gen_pool *p)
{
    gen_funcs_free(&p->funcs);
    free(p->frames);
    free(p->foff);
    free(p->text);
    free(p->toff);
    free(p->perm);
    memset(p, 0, sizeof *p);
}

/* Mean bytes of a stack's text (without count and newline). */
static inline double gen_pool_mean_len(const gen_pool *p)
{
    return (double)p->toff[p->n] / p->n;
}

static inline double gen_pool_mean_depth(const gen_pool *p)
{
    return (double)p->foff[p->n] / p->n;
}

/* ---- Zipf ranks by Vose's alias method ---------------------------------- */

typedef struct {
    uint32_t n;
    double *prob;
    uint32_t *alias;
} gen_zipf;

static inline void gen_zipf_make(gen_zipf *z, uint32_t n, double s)
{
    z->n = n;
    z->prob = gen_xmalloc(n * sizeof *z->prob);
    z->alias = gen_xmalloc(n * sizeof *z->alias);
    double *w = gen_xmalloc(n * sizeof *w), sum = 0;
    for (uint32_t i = 0; i < n; i++) sum += w[i] = pow((double)(i + 1), -s);
    uint32_t *small = gen_xmalloc(n * sizeof *small), *large = gen_xmalloc(n * sizeof *large), ns = 0, nl = 0;
    for (uint32_t i = 0; i < n; i++) {
        w[i] = w[i] * n / sum;
        if (w[i] < 1) small[ns++] = i;
        else large[nl++] = i;
    }
    while (ns && nl) {
        uint32_t a = small[--ns], b = large[--nl];
        z->prob[a] = w[a];
        z->alias[a] = b;
        w[b] -= 1 - w[a];
        if (w[b] < 1) small[ns++] = b;
        else large[nl++] = b;
    }
    while (nl) { uint32_t b = large[--nl]; z->prob[b] = 1; z->alias[b] = b; }
    while (ns) { uint32_t a = small[--ns]; z->prob[a] = 1; z->alias[a] = a; }
    free(w);
    free(small);
    free(large);
}

/* A 0-based rank. */
static inline uint32_t gen_zipf_draw(const gen_zipf *z, gen_rng *r)
{
    uint64_t x = gen_next(r);
    uint32_t i = (uint32_t)(((unsigned __int128)x * z->n) >> 64);
    double u = (double)(gen_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return u < z->prob[i] ? i : z->alias[i];
}

static inline void gen_zipf_free(gen_zipf *z)
{
    free(z->prob);
    free(z->alias);
}

/* ---- a profile: distinct stacks with counts ----------------------------- */

typedef struct {
    uint32_t *stack;   /* pool indices, distinct */
    uint64_t *count;
    uint32_t n, cap;
} gen_profile;

/* Draws Zipf samples until the profile has `distinct` distinct stacks.
 * stamp is a pool-sized scratch array of zeros (reused across calls with a
 * fresh tag each time: tag = a counter starting at 1); slot likewise. */
static inline void gen_profile_zipf(gen_profile *pr, const gen_pool *p, const gen_zipf *z, gen_rng *r,
                             uint32_t distinct, uint32_t rank_shift, uint32_t *stamp, uint32_t *slot,
                             uint32_t tag)
{
    if (distinct > p->n) distinct = p->n;
    if (pr->cap < distinct) {
        pr->cap = distinct;
        pr->stack = gen_xrealloc(pr->stack, distinct * sizeof *pr->stack);
        pr->count = gen_xrealloc(pr->count, distinct * sizeof *pr->count);
    }
    pr->n = 0;
    while (pr->n < distinct) {
        uint32_t rank = gen_zipf_draw(z, r);
        uint32_t s = p->perm[(rank + rank_shift) % p->n];
        if (stamp[s] == tag) {
            pr->count[slot[s]]++;
        } else {
            stamp[s] = tag;
            slot[s] = pr->n;
            pr->stack[pr->n] = s;
            pr->count[pr->n++] = 1;
        }
    }
}

static inline void gen_profile_free(gen_profile *pr)
{
    free(pr->stack);
    free(pr->count);
    memset(pr, 0, sizeof *pr);
}

/* Appends "frames count\n" lines of the profile to *buf (grown as needed). */
static inline size_t gen_profile_folded(const gen_profile *pr, const gen_pool *p, char **buf, size_t *cap)
{
    size_t need = 1; /* sprintf's final NUL */
    for (uint32_t i = 0; i < pr->n; i++) need += p->toff[pr->stack[i] + 1] - p->toff[pr->stack[i]] + 22;
    if (need > *cap) {
        *cap = need;
        *buf = gen_xrealloc(*buf, need);
    }
    char *o = *buf;
    for (uint32_t i = 0; i < pr->n; i++) {
        uint32_t len;
        const char *t = gen_stack_text(p, pr->stack[i], &len);
        memcpy(o, t, len);
        o += len;
        o += sprintf(o, " %llu\n", (unsigned long long)pr->count[i]);
    }
    return (size_t)(o - *buf);
}

#endif
