/* test_pdict.c — the writer's dictionary containers (storage/idset.c and
 * the maps of storage/pdict.c): lookups across growth, probing past the
 * end of the array, the fragment filter, the stack table's growth and
 * resolution, and the memory an entry costs.  Partitions live in fresh
 * temporary LMDB files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "../../storage/env.h"
#include "../../storage/idset.h"
#include "../../storage/nodetab.h"
#include "../../storage/pdict.h"
#include "../../common/varint.h"

/* ---- idset ---- */

typedef struct {
    uint64_t *key;   /* by id */
    uint64_t *hash;  /* by id */
    uint64_t probe;  /* the key sought */
    int eq_calls;
} keys;

static int key_eq(const void *ctx, uint32_t id)
{
    keys *k = (keys *)ctx;
    k->eq_calls++;
    return k->key[id] == k->probe;
}

static uint64_t key_hash(const void *ctx, uint32_t id) { return ((const keys *)ctx)->hash[id]; }

static uint32_t find(keys *k, idset *s, uint64_t key, uint64_t h)
{
    k->probe = key;
    return idset_find(s, h, key_eq, k);
}

/* Every id is found after each growth, absent keys are not, and the set
 * stays between 1/2 and 3/4 full once grown (growth by half, not
 * doubling), at 4 bytes a slot.  Sets past 1 MiB are mapped, so their
 * growths also give the old array's pages back as they go: a page given
 * back too early would lose ids. */
static void test_idset_growth_and_lookups(void **state)
{
    (void)state;
    enum { N = 200000 };
    keys k = { calloc(N + 1, 8), calloc(N + 1, 8), 0, 0 };
    idset s;
    assert_int_equal(idset_init(&s, 16), 0);
    uint32_t cap = s.cap, growths = 0;
    for (uint32_t id = 1; id <= N; id++) {
        k.key[id] = (uint64_t)id * 7919 + 13;
        k.hash[id] = hash_u64(k.key[id]);
        assert_int_equal(find(&k, &s, k.key[id], k.hash[id]), 0);
        assert_int_equal(idset_put(&s, k.hash[id], id, key_hash, &k), 0);
        assert_true((uint64_t)s.len * 4 <= (uint64_t)s.cap * 3);
        if (s.cap != cap) {
            growths++;
            assert_true((uint64_t)s.cap * 2 <= (uint64_t)cap * 3); /* by half */
            assert_true((uint64_t)s.len * 2 + 2 >= s.cap);         /* half full after growing */
            cap = s.cap;
            for (uint32_t j = 1; j <= id; j++) assert_int_equal(find(&k, &s, k.key[j], k.hash[j]), j);
        }
    }
    assert_true(growths >= 20);
    assert_int_equal(s.len, N);
    assert_int_equal(s.width, 4); /* ids below 2^24 */
    assert_int_equal(idset_bytes(&s), (size_t)s.cap * 4);
    assert_true(idset_bytes(&s) <= (size_t)N * 8);
    for (uint32_t id = 1; id <= N; id++) assert_int_equal(find(&k, &s, k.key[id], k.hash[id]), id);
    for (uint64_t x = 1; x <= 1000; x++) assert_int_equal(find(&k, &s, x * 7919 + 14, hash_u64(x * 7919 + 14)), 0);
    idset_free(&s);
    free(k.key);
    free(k.hash);
}

/* Keys computed from their id (ids far apart need no arrays). */
static int far_eq(const void *ctx, uint32_t id) { return (uint64_t)id * 7919 + 13 == *(const uint64_t *)ctx; }
static uint64_t far_hash(const void *ctx, uint32_t id)
{
    (void)ctx;
    return hash_u64((uint64_t)id * 7919 + 13);
}

/* The first id past 2^24 widens the slots from 4 bytes to 5, once, with
 * or without a growth at the same time; every id is found before and
 * after, in both widths. */
static void test_idset_widens_past_24_bits(void **state)
{
    (void)state;
    for (int grow_too = 0; grow_too < 2; grow_too++) {
        idset s;
        assert_int_equal(idset_init(&s, 16), 0);
        /* 11: the set (16 slots) is full at 12 ids, so the second id past
         * 2^24 is also the one that grows it */
        uint32_t n_low = grow_too ? 11 : 5, low[16], high[300];
        for (uint32_t i = 0; i < n_low; i++) {
            low[i] = 1000 + i;
            assert_int_equal(idset_put(&s, far_hash(NULL, low[i]), low[i], far_hash, NULL), 0);
        }
        assert_int_equal(s.width, 4);
        assert_int_equal(s.cap, 16);
        for (uint32_t i = 0; i < 300; i++) {
            high[i] = IDSET_NARROW_IDS - 1 + i * 977;
            assert_int_equal(idset_put(&s, far_hash(NULL, high[i]), high[i], far_hash, NULL), 0);
            assert_int_equal(s.width, i == 0 ? 4 : 5); /* 2^24 - 1 still fits */
            if (i == 0) assert_int_equal(s.cap, 16);
            if (i == 1 && grow_too) assert_true(s.cap > 16);  /* widened while growing */
            if (i == 1 && !grow_too) assert_int_equal(s.cap, 16); /* widened in place */
        }
        assert_int_equal(idset_bytes(&s), (size_t)s.cap * 5);
        for (uint32_t i = 0; i < n_low; i++) {
            uint64_t key = (uint64_t)low[i] * 7919 + 13;
            assert_int_equal(idset_find(&s, far_hash(NULL, low[i]), far_eq, &key), low[i]);
        }
        for (uint32_t i = 0; i < 300; i++) {
            uint64_t key = (uint64_t)high[i] * 7919 + 13;
            assert_int_equal(idset_find(&s, far_hash(NULL, high[i]), far_eq, &key), high[i]);
        }
        uint64_t absent = (uint64_t)(IDSET_NARROW_IDS + 1) * 7919 + 13;
        assert_int_equal(idset_find(&s, hash_u64(absent), far_eq, &absent), 0);
        idset_free(&s);
    }
}

/* Keys whose hashes share the home slot: the last slot of the array, so
 * probing goes on at slot 0.  With equal fragments the caller decides;
 * with different ones it is asked once, for the key that matches. */
static void test_idset_collisions_wrap_around(void **state)
{
    (void)state;
    enum { N = 12 };
    keys k = { calloc(N + 1, 8), calloc(N + 1, 8), 0, 0 };
    idset s;
    assert_int_equal(idset_init(&s, 64), 0);
    /* low 32 bits all ones: home = ((2^32 - 1) * cap) >> 32 = cap - 1 */
    for (uint32_t id = 1; id <= N; id++) {
        k.key[id] = 1000 + id;
        k.hash[id] = (id <= N / 2 ? UINT64_C(0xab) : (uint64_t)id) << 56 | 0xffffffffu;
        assert_int_equal(idset_put(&s, k.hash[id], id, key_hash, &k), 0);
    }
    assert_int_equal(s.cap, 64); /* no growth: the probes wrapped */
    for (uint32_t id = 1; id <= N; id++) {
        k.eq_calls = 0;
        assert_int_equal(find(&k, &s, k.key[id], k.hash[id]), id);
        if (id > N / 2) assert_int_equal(k.eq_calls, 1); /* only the matching fragment */
        else assert_int_equal(k.eq_calls, (int)id);       /* same fragment: each earlier one asked */
    }
    assert_int_equal(find(&k, &s, 999, k.hash[1]), 0);
    assert_int_equal(find(&k, &s, 999, UINT64_C(0xcd) << 56 | 0xffffffffu), 0);
    idset_free(&s);
    free(k.key);
    free(k.hash);
}

/* ---- nodetab ---- */

/* Every node's parent and function read back, for chains (children of
 * the node before), branches from anywhere before, and groups of 64
 * that are all one or all the other, across chunk boundaries of every
 * table; the bytes follow the exceptions: 4 a node, 4 an exception and
 * 12 a group of 64, in chunks of 65,536 entries (at most one partly used
 * in each of the three tables). */
static void test_nodetab_round_trip_and_size(void **state)
{
    (void)state;
    enum { N = 1000000 };
    uint32_t *par = malloc(N * sizeof *par), *fn = malloc(N * sizeof *fn);
    nodetab *t = nodetab_new();
    assert_non_null(t);
    uint64_t rng = 12345, exceptions = 0;
    for (uint32_t id = 0; id < N; id++) {
        rng = rng * 6364136223846793005u + 1442695040888963407u;
        uint32_t r = (uint32_t)(rng >> 33);
        /* ids 64k..64k+127: chains only; 128k..128k+63: branches only */
        int chain = id >= 65536 && id < 65536 + 128 ? 1 : id >= 131072 && id < 131072 + 64 ? 0 : r % 8 != 0;
        par[id] = id == 0 ? 0 : chain ? id - 1 : r % id;
        fn[id] = r ^ 0x9e3779b9u;
        if (id && par[id] != id - 1) exceptions++;
        if (id == 0) exceptions++; /* the root's parent 0 is not "id - 1" */
        assert_int_equal(nodetab_push(t, par[id], fn[id]), 0);
    }
    assert_int_equal(nodetab_len(t), N);
    for (uint32_t id = 0; id < N; id++) {
        uint32_t p, f;
        nodetab_get(t, id, &p, &f);
        assert_int_equal(p, par[id]);
        assert_int_equal(f, fn[id]);
    }
    uint64_t bytes = nodetab_bytes(t);
    assert_true(bytes >= (uint64_t)N * 4 + exceptions * 4);
    assert_true(bytes <= (uint64_t)N * 4 + exceptions * 4 + (N / 64 + 1) * 12 + UINT64_C(3) * 65536 * 12);
    assert_true(bytes < (uint64_t)N * 6); /* (parent, function) in 8 bytes a node was the table before */
    nodetab_free(t);
    free(par);
    free(fn);
}

/* ---- the writer's maps ---- */

static char dir[64];
static MDB_env *env;
static MDB_dbi meta, strings, nodes;

static int open_env(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/flamedb-test-pdict-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/p.mdb", dir);
    if (env_open(&env, path, UINT64_C(1) << 30, 1, 1, NULL, err, sizeof err)) return -1;
    MDB_txn *txn;
    if (mdb_txn_begin(env, NULL, 0, &txn)) return -1;
    int rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &meta);
    if (!rc) rc = mdb_dbi_open(txn, "strings", MDB_CREATE | MDB_INTEGERKEY, &strings);
    if (!rc) rc = mdb_dbi_open(txn, "nodes", MDB_CREATE | MDB_INTEGERKEY, &nodes);
    if (!rc) rc = pdict_init_meta(txn, meta, 0, 86400000);
    return rc ? (mdb_txn_abort(txn), -1) : mdb_txn_commit(txn);
}

static int close_env(void **state)
{
    (void)state;
    mdb_env_close(env);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static pdict_w *load(MDB_txn **txn)
{
    assert_int_equal(mdb_txn_begin(env, NULL, 0, txn), 0);
    pdict_w *w;
    assert_int_equal(pdict_w_load(&w, *txn, meta, strings, nodes), STORE_OK);
    return w;
}

static void commit(pdict_w *w, MDB_txn *txn)
{
    assert_int_equal(pdict_w_flush(w, txn, meta, strings, nodes), STORE_OK);
    assert_int_equal(mdb_txn_commit(txn), 0);
    pdict_w_publish(w);
}

/* Stacks the table takes before pdict_w_stacks_full says it must grow. */
static size_t room(const pdict_w *w)
{
    size_t lo = 0, hi = (size_t)1 << 31;
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (pdict_w_stacks_full(w, mid)) hi = mid - 1;
        else lo = mid;
    }
    return lo;
}

/* One stack's committed leaf, or 0. */
static uint32_t resolve1(const pdict_w *w, hash128 h)
{
    uint32_t leaf;
    pdict_w_resolve(w, &h, 1, &leaf);
    return leaf;
}

/* Stacks whose hashes share their home slot (the last one, so probing
 * wraps) or differ only in the high half stay apart; every stack resolves
 * to its leaf after each growth of the table, only once committed; growth
 * is by half and leaves the table between 1/2 and 3/4 full. */
static void test_stack_table_growth_and_resolve(void **state)
{
    (void)state;
    enum { N = 60000 };
    MDB_txn *txn;
    pdict_w *w = load(&txn);
    static hash128 h[N];
    static uint32_t leaf[N];
    static char text[N][32];
    size_t growths = 0;
    uint32_t committed = 0;
    for (uint32_t i = 0; i < N; i++) {
        snprintf(text[i], sizeof text[i], "main;s%u;leaf%u", i % 97, i);
        /* a third share the low half of their hash: 0xffffffff, the last
         * slot; a pair in every 1,000 differ only in the high half */
        h[i] = hash_bytes128(text[i], (uint32_t)strlen(text[i]));
        if (i % 3 == 0) h[i].lo |= 0xffffffffu;
        if (i % 1000 == 1) h[i] = (hash128){ h[i - 1].lo, h[i - 1].hi ^ 1 };
        if (pdict_w_stacks_full(w, 1)) {
            assert_int_equal(room(w), 0); /* i stacks fill 3/4 of the table */
            assert_int_equal(pdict_w_stacks_grow(w, 1), STORE_OK);
            assert_false(pdict_w_stacks_full(w, 1));
            size_t usable = room(w) + i; /* 3/4 of the new capacity: 1.5 times i */
            assert_true(usable * 2 <= (size_t)i * 3 + 3);
            assert_true(usable * 2 + 3 >= (size_t)i * 3);
            growths++;
            for (uint32_t j = 0; j < i; j++) assert_int_equal(resolve1(w, h[j]), j < committed ? leaf[j] : 0);
        }
        assert_int_equal(pdict_w_stack(w, text[i], (uint32_t)strlen(text[i]), h[i], &leaf[i]), STORE_OK);
        assert_int_not_equal(leaf[i], 0);
        assert_int_equal(resolve1(w, h[i]), 0); /* not committed yet */
        if (i % 20000 == 19999) {
            commit(w, txn);
            committed = i + 1;
            assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
        }
    }
    assert_true(growths >= 4);
    commit(w, txn);
    for (uint32_t i = 0; i < N; i++) assert_int_equal(resolve1(w, h[i]), leaf[i]);
    hash128 absent = { h[0].lo, h[0].hi + 2 };
    assert_int_equal(resolve1(w, absent), 0);
    /* Growth for many stacks at once, as the store asks before a profile. */
    assert_true(pdict_w_stacks_full(w, 3 * N));
    assert_int_equal(pdict_w_stacks_grow(w, 3 * N), STORE_OK);
    assert_false(pdict_w_stacks_full(w, 3 * N));
    for (uint32_t i = 0; i < N; i++) assert_int_equal(resolve1(w, h[i]), leaf[i]);
    /* All at once, as store_resolve asks (lookups ahead prefetched). */
    uint32_t *many = malloc(N * sizeof *many);
    assert_non_null(many);
    pdict_w_resolve(w, h, N, many);
    assert_memory_equal(many, leaf, N * sizeof *many);
    free(many);
    pdict_w_free(w);
}

/* Many nodes across the node set's growths: interning every stack again
 * (by its frames, the stack table missing) finds every node, in the maps
 * built while writing and in maps loaded from the file; and the maps cost
 * under 20 bytes a node (8 for the node, 5 a slot in a set 1/2 to 3/4
 * full), where 8-byte slots grown by doubling and arrays grown by doubling
 * took up to 37. */
static void test_node_set_growth_reload_and_memory(void **state)
{
    (void)state;
    enum { STACKS = 2000, DEPTH = 300 };
    MDB_txn *txn;
    pdict_w *w = load(&txn);
    static uint32_t leaf[STACKS];
    size_t cap = 64 * DEPTH;
    char *text = malloc(cap);
    /* stack s: "t<s>" then frames f0..f49, cycling: distinct nodes, few strings */
    for (int pass = 0; pass < 3; pass++) {
        uint32_t nodes_before = pdict_w_nodes(w);
        for (uint32_t s = 0; s < STACKS; s++) {
            int len = snprintf(text, cap, "t%u", s);
            for (int d = 1; d < DEPTH; d++) len += snprintf(text + len, cap - (size_t)len, ";f%d", (d * 7 + s) % 50);
            /* each pass its own stack hashes: the table misses, the node
             * set answers */
            hash128 h = hash_bytes128(text, (uint32_t)len);
            h.hi += (uint64_t)pass;
            uint32_t l;
            assert_int_equal(pdict_w_stack(w, text, (uint32_t)len, h, &l), STORE_OK);
            if (pass == 0) leaf[s] = l;
            else assert_int_equal(l, leaf[s]);
        }
        if (pass == 0) {
            assert_int_equal(pdict_w_nodes(w), 1 + STACKS * DEPTH);
            uint64_t mem = pdict_w_memory(w);
            assert_true(mem <= (uint64_t)20 * pdict_w_nodes(w) + (UINT64_C(2) << 20));
            commit(w, txn);
            pdict_w_free(w);
            assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
            pdict_r *r;
            assert_int_equal(pdict_r_open(&r, txn, meta, strings, nodes), STORE_OK);
            assert_int_equal(pdict_r_nodes(r), 1 + STACKS * DEPTH);
            pdict_r_free(r);
            mdb_txn_abort(txn);
            w = load(&txn); /* the maps again, from the file */
            assert_true(pdict_w_memory(w) <= (uint64_t)20 * pdict_w_nodes(w) + (UINT64_C(2) << 20));
        } else {
            assert_int_equal(pdict_w_nodes(w), nodes_before);
        }
    }
    mdb_txn_abort(txn);
    pdict_w_free(w);
    free(text);
}


/* ---- the chunk formats (pdict.h) ---- */

/* Writes n stacks, each a fresh path of depth frames under one of a few
 * shared prefixes (so most parents are the node before, some are not),
 * with names from a pool of `names` strings; flushes every `every`
 * stacks; commits at the end. */
static void write_tree(pdict_w *w, MDB_txn *txn, uint32_t n, uint32_t depth, uint32_t names, uint32_t every,
                       uint32_t seed)
{
    char text[4096];
    for (uint32_t s = 0; s < n; s++) {
        int len = snprintf(text, sizeof text, "root%u", (s + seed) % 7);
        for (uint32_t d = 1; d < depth; d++)
            len += snprintf(text + len, sizeof text - (size_t)len, ";fn_%u_%s", (s * 31 + d * 17 + seed) % names,
                            d % 3 ? "github.com/acme/platform/store.(*Table).Get" : "x");
        uint32_t leaf;
        assert_int_equal(pdict_w_stack(w, text, (uint32_t)len, hash_bytes128(text, (uint32_t)len), &leaf), STORE_OK);
        if (every && s % every == every - 1) assert_int_equal(pdict_w_flush(w, txn, meta, strings, nodes), STORE_OK);
    }
}

/* Every node and string the writer's maps hold, as a reader of the file
 * sees them: the same. */
static void assert_reads_back(uint32_t want_nodes, uint32_t want_strings)
{
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    pdict_r *r;
    assert_int_equal(pdict_r_open(&r, txn, meta, strings, nodes), STORE_OK);
    assert_int_equal(pdict_r_nodes(r), want_nodes);
    assert_int_equal(pdict_r_strings(r), want_strings);
    /* the writer's maps, loaded from the file, find every node again */
    MDB_txn *wtxn;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &wtxn), 0);
    pdict_w *w;
    assert_int_equal(pdict_w_load(&w, wtxn, meta, strings, nodes), STORE_OK);
    assert_int_equal(pdict_w_nodes(w), want_nodes);
    assert_int_equal(pdict_w_strings(w), want_strings);
    for (uint32_t id = 1; id < want_nodes; id++) {
        uint32_t parent, func, len;
        assert_int_equal(pdict_r_node(r, id, &parent, &func), 0);
        assert_true(parent < id);
        assert_true(func < want_strings);
        assert_non_null(pdict_r_string(r, func, &len));
    }
    for (uint32_t id = 0; id < want_strings; id++) {
        uint32_t len, again;
        const char *sv = pdict_r_string(r, id, &len);
        assert_non_null(sv);
        assert_int_equal(strlen(sv), len);
        if (!id) continue; /* "", id 0, is not in the maps */
        assert_int_equal(pdict_w_string(w, sv, len, &again), STORE_OK);
        assert_int_equal(again, id); /* found, not added */
    }
    assert_int_equal(pdict_w_strings(w), want_strings);
    pdict_w_free(w);
    mdb_txn_abort(wtxn);
    pdict_r_free(r);
    mdb_txn_abort(txn);
}

/* A node path spelled from the reader's dictionaries, root first. */
static void spell(pdict_r *r, uint32_t leaf, char *out, size_t cap)
{
    uint32_t chain[512], n = 0;
    for (uint32_t x = leaf; x; ) {
        uint32_t parent, func;
        assert_int_equal(pdict_r_node(r, x, &parent, &func), 0);
        chain[n++] = func;
        x = parent;
    }
    size_t len = 0;
    out[0] = '\0';
    while (n--) {
        uint32_t sl;
        const char *sv = pdict_r_string(r, chain[n], &sl);
        assert_non_null(sv);
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ";" : "", sv);
    }
}

/* A new stack's walk starts below the frames it shares with the last one
 * walked (pdict_w_stack): only whole frames are shared.  Each stack spells
 * back to its own text, a stack that is a prefix of another is its
 * ancestor, and there are exactly as many nodes as distinct frame paths
 * (a prefix of text that is not a frame boundary, "a;b" of "a;bc", is not
 * shared). */
static void test_walk_reuses_shared_frames(void **state)
{
    (void)state;
    static const char *const text[] = {
        "a;b;c", "a;b;c;d", "a;b", "a;bc;d", "a;b;cx", "ab;c", "a", "a;b;c;d;e", ";a", "", ";a;b",
        "a;b;c;d", "x;y", "a;b;", "a;b;;c", "a;bc", "a;b;c",
    };
    enum { N = sizeof text / sizeof *text };
    MDB_txn *txn;
    pdict_w *w = load(&txn);
    uint32_t leaf[N];
    for (int i = 0; i < N; i++) {
        uint32_t len = (uint32_t)strlen(text[i]);
        hash128 h = hash_bytes128(text[i], len);
        h.hi ^= (uint64_t)i + 1; /* each one walked, not found in the stack table */
        assert_int_equal(pdict_w_stack(w, text[i], len, h, &leaf[i]), STORE_OK);
    }
    /* the distinct frame paths: every prefix ending at a ';' or the end */
    char paths[64][32];
    int n_paths = 0;
    for (int i = 0; i < N; i++)
        for (size_t e = 0, len = strlen(text[i]); e <= len; e++) {
            if (e < len && text[i][e] != ';') continue;
            int seen = 0;
            for (int j = 0; j < n_paths && !seen; j++)
                seen = strlen(paths[j]) == e && !memcmp(paths[j], text[i], e);
            if (!seen) {
                memcpy(paths[n_paths], text[i], e);
                paths[n_paths++][e] = '\0';
            }
        }
    assert_int_equal(pdict_w_nodes(w), 1 + n_paths); /* and the root */
    commit(w, txn);
    pdict_w_free(w);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    pdict_r *r;
    assert_int_equal(pdict_r_open(&r, txn, meta, strings, nodes), STORE_OK);
    char out[256];
    for (int i = 0; i < N; i++) {
        spell(r, leaf[i], out, sizeof out);
        /* spell joins frames with ';' and writes an empty first frame as
         * nothing: compare frame by frame through the parents instead when
         * the text starts with an empty frame */
        if (text[i][0] != ';' && text[i][0]) assert_string_equal(out, text[i]);
    }
    uint32_t parent, func;
    assert_int_equal(pdict_r_node(r, leaf[1], &parent, &func), 0); /* a;b;c;d */
    assert_int_equal(parent, leaf[0]);                              /* a;b;c */
    assert_int_equal(pdict_r_node(r, leaf[0], &parent, &func), 0);
    assert_int_equal(parent, leaf[2]);                              /* a;b */
    assert_int_equal(leaf[11], leaf[1]);                            /* a;b;c;d again */
    assert_int_equal(leaf[16], leaf[0]);                            /* a;b;c again */
    assert_int_equal(pdict_r_node(r, leaf[3], &parent, &func), 0);  /* a;bc;d */
    assert_int_equal(parent, leaf[15]);                             /* a;bc */
    assert_int_not_equal(leaf[15], leaf[2]);
    assert_int_equal(pdict_r_node(r, leaf[15], &parent, &func), 0);
    assert_int_equal(parent, leaf[6]);                              /* a */
    assert_int_equal(pdict_r_node(r, leaf[10], &parent, &func), 0); /* ;a;b */
    assert_int_equal(parent, leaf[8]);                              /* ;a */
    assert_int_equal(pdict_r_node(r, leaf[8], &parent, &func), 0);
    assert_int_equal(parent, leaf[9]);                              /* "" */
    assert_int_equal(pdict_r_node(r, leaf[14], &parent, &func), 0); /* a;b;;c */
    assert_int_equal(parent, leaf[13]);                             /* a;b; */
    assert_int_equal(pdict_r_node(r, leaf[13], &parent, &func), 0);
    assert_int_equal(parent, leaf[2]);
    pdict_r_free(r);
    mdb_txn_abort(txn);
}

static uint32_t chunk_count(MDB_dbi dbi)
{
    MDB_txn *txn;
    MDB_stat st;
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_stat(txn, dbi, &st), 0);
    mdb_txn_abort(txn);
    return (uint32_t)st.ms_entries;
}

/* Asserts the flags byte (1: zstd) of the last node and string chunks;
 * answers the node chunk's size. */
static size_t last_chunks_flags(uint32_t nn, uint32_t ns, int want)
{
    MDB_txn *txn;
    uint32_t cn = (nn - 1) / 8192, cs = (ns - 1) / 1024;
    MDB_val kn = { 4, &cn }, ks = { 4, &cs }, v;
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_get(txn, strings, &ks, &v), 0);
    assert_int_equal(((const unsigned char *)v.mv_data)[0], want);
    assert_int_equal(mdb_get(txn, nodes, &kn, &v), 0);
    assert_int_equal(((const unsigned char *)v.mv_data)[0], want);
    size_t len = v.mv_size;
    mdb_txn_abort(txn);
    return len;
}

/* pdict_finish in its own transaction: whether it changed anything. */
static int finish(void)
{
    MDB_txn *txn;
    int changed = -1;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(pdict_finish(txn, meta, strings, nodes, &changed), STORE_OK);
    assert_int_equal(mdb_txn_commit(txn), 0);
    return changed;
}

/* Format 2: chunks of 8,192 nodes and 1,024 strings, complete ones
 * compressed, the open one rewritten plain at each flush; what the writer
 * interned reads back through the reader and a reloaded writer, which
 * goes on in the same format; stacks spell back to their text;
 * pdict_finish compresses the open chunks, once, and again after late
 * additions made them plain. */
static void test_format2_round_trip(void **state)
{
    (void)state;
    MDB_txn *txn;
    pdict_w *w = load(&txn);
    write_tree(w, txn, 700, 40, 3000, 97, 0);
    commit(w, txn);
    uint32_t nn = pdict_w_nodes(w), ns = pdict_w_strings(w);
    pdict_w_free(w);
    assert_true(nn > 3 * 8192);
    assert_true(ns > 2 * 1024);
    assert_int_equal(chunk_count(nodes), (nn + 8191) / 8192);
    assert_int_equal(chunk_count(strings), (ns + 1023) / 1024);
    assert_reads_back(nn, ns);
    /* complete chunks are compressed: node chunk 0 is well under the
     * 2 bytes a node of its plain varints */
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    uint32_t c0 = 0;
    MDB_val k = { 4, &c0 }, v;
    assert_int_equal(mdb_get(txn, nodes, &k, &v), 0);
    assert_int_equal(((const unsigned char *)v.mv_data)[0], 1); /* zstd */
    assert_true(v.mv_size < 8192 * 2);
    assert_int_equal(mdb_get(txn, strings, &k, &v), 0);
    assert_int_equal(((const unsigned char *)v.mv_data)[0], 1);
    /* a stack spells back */
    pdict_r *r;
    assert_int_equal(pdict_r_open(&r, txn, meta, strings, nodes), STORE_OK);
    char text[4096], want[4096];
    int len = snprintf(want, sizeof want, "root%u", 5u % 7);
    for (uint32_t d = 1; d < 40; d++)
        len += snprintf(want + len, sizeof want - (size_t)len, ";fn_%u_%s", (5 * 31 + d * 17) % 3000,
                        d % 3 ? "github.com/acme/platform/store.(*Table).Get" : "x");
    w = NULL;
    MDB_txn *wtxn;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &wtxn), 0);
    assert_int_equal(pdict_w_load(&w, wtxn, meta, strings, nodes), STORE_OK);
    uint32_t leaf;
    hash128 h = hash_bytes128(want, (uint32_t)len);
    h.hi ^= 1; /* not in the (empty) stack table: found by its frames */
    assert_int_equal(pdict_w_stack(w, want, (uint32_t)len, h, &leaf), STORE_OK);
    assert_int_equal(pdict_w_nodes(w), nn); /* nothing new */
    spell(r, leaf, text, sizeof text);
    assert_string_equal(text, want);
    pdict_r_free(r);
    mdb_txn_abort(txn);
    /* more, through the reloaded writer: the same format */
    write_tree(w, wtxn, 300, 40, 3000, 0, 1);
    commit(w, wtxn);
    nn = pdict_w_nodes(w);
    ns = pdict_w_strings(w);
    assert_int_equal(chunk_count(nodes), (nn + 8191) / 8192);
    assert_reads_back(nn, ns);
    /* the open chunks are plain until pdict_finish compresses them, once */
    size_t plain = last_chunks_flags(nn, ns, 0);
    assert_int_equal(finish(), 1);
    assert_true(last_chunks_flags(nn, ns, 1) < plain);
    assert_reads_back(nn, ns);
    assert_int_equal(finish(), 0); /* nothing left to do */
    /* a late stack makes them plain again; pdict_finish again */
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &wtxn), 0);
    write_tree(w, wtxn, 1, 40, 1000000, 0, 5000); /* new names too */
    commit(w, wtxn);
    nn = pdict_w_nodes(w);
    ns = pdict_w_strings(w);
    last_chunks_flags(nn, ns, 0);
    assert_int_equal(finish(), 1);
    last_chunks_flags(nn, ns, 1);
    assert_reads_back(nn, ns);
    pdict_w_free(w);
}

/* Format 1, as flamedb-6's first partitions hold it (no "dict" in meta;
 * chunks of 256 strings and 1,024 nodes, plain), written here by hand:
 * the reader reads it, check's decoder accepts it, and a writer that
 * loads it goes on writing format 1 (the partition never mixes). */
static void test_format1_still_read_and_written(void **state)
{
    (void)state;
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    MDB_val fk = { 4, "dict" };
    assert_int_equal(mdb_del(txn, meta, &fk, NULL), 0);
    /* strings "", "main", "f0".."f299"; nodes: root, main, then main;f0;f1;...;f299
     * (each the child of the one before) and main;fk for k < 300 (children of main) */
    enum { NS = 302, NN = 2 + 300 + 299 };
    static char sb[NS * 8];
    uint32_t off[NS + 1], sl = 0;
    for (uint32_t i = 0; i < NS; i++) {
        off[i] = sl;
        int n = i == 0 ? 0 : i == 1 ? snprintf(sb + sl, 8, "main") : snprintf(sb + sl, 8, "f%u", i - 2);
        sl += (uint32_t)n + 1;
        sb[sl - 1] = '\0';
    }
    off[NS] = sl;
    for (uint32_t c = 0; c * 256 < NS; c++) {
        uint32_t first = c * 256, n = NS - first < 256 ? NS - first : 256;
        unsigned char buf[8192], *q = buf;
        memcpy(q, &n, 4);
        q += 4;
        for (uint32_t i = 0; i <= n; i++) {
            uint32_t o = off[first + i] - off[first];
            memcpy(q, &o, 4);
            q += 4;
        }
        memcpy(q, sb + off[first], off[first + n] - off[first]);
        q += off[first + n] - off[first];
        MDB_val k = { 4, &c }, v = { (size_t)(q - buf), buf };
        assert_int_equal(mdb_put(txn, strings, &k, &v, 0), 0);
    }
    static uint32_t par[NN], fn[NN];
    par[1] = 0, fn[1] = 1;
    for (uint32_t i = 0; i < 300; i++) par[2 + i] = 1 + i, fn[2 + i] = 2 + i; /* the chain */
    for (uint32_t i = 1; i < 300; i++) par[301 + i] = 1, fn[301 + i] = 2 + i; /* main's other children */
    unsigned char nb[NN * 6], *q = nb;
    for (uint32_t id = 0; id < NN; id++) {
        q = varint_put(q, id - par[id]);
        q = varint_put(q, fn[id]);
    }
    uint32_t c0 = 0;
    MDB_val k = { 4, &c0 }, v = { (size_t)(q - nb), nb };
    assert_int_equal(mdb_put(txn, nodes, &k, &v, 0), 0);
    uint32_t counts[2] = { NS, NN };
    MDB_val ck = { 6, "counts" }, cv = { sizeof counts, counts };
    assert_int_equal(mdb_put(txn, meta, &ck, &cv, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);

    /* read as it was written */
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    int fmt;
    assert_int_equal(pdict_format(txn, meta, &fmt), 0);
    assert_int_equal(fmt, 1);
    pdict_r *r;
    assert_int_equal(pdict_r_open(&r, txn, meta, strings, nodes), STORE_OK);
    for (uint32_t id = 1; id < NN; id++) {
        uint32_t p, f;
        assert_int_equal(pdict_r_node(r, id, &p, &f), 0);
        assert_int_equal(p, par[id]);
        assert_int_equal(f, fn[id]);
    }
    char text[4096];
    spell(r, 301, text, sizeof text); /* the chain's end: main;f0;...;f299 */
    assert_int_equal(strncmp(text, "main;f0;f1;f2;", 14), 0);
    assert_non_null(strstr(text, ";f298;f299"));
    spell(r, 305, text, sizeof text);
    assert_string_equal(text, "main;f4");
    char why[200];
    uint32_t *pf = malloc(NN * 2 * sizeof *pf);
    assert_int_equal(mdb_get(txn, nodes, &k, &v), 0);
    assert_int_equal(pdict_node_chunk_decode(1, 0, &v, NN, NS, NULL, pf, why, sizeof why), 0);
    free(pf);
    pdict_r_free(r);
    mdb_txn_abort(txn);

    /* a writer of this partition appends in format 1 */
    pdict_w *w = load(&txn);
    write_tree(w, txn, 200, 20, 500, 0, 2);
    commit(w, txn);
    uint32_t nn = pdict_w_nodes(w), ns = pdict_w_strings(w);
    pdict_w_free(w);
    assert_int_equal(chunk_count(nodes), (nn + 1023) / 1024);
    assert_int_equal(chunk_count(strings), (ns + 255) / 256);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(pdict_format(txn, meta, &fmt), 0);
    assert_int_equal(fmt, 1);
    uint32_t c1 = 1;
    MDB_val k1 = { 4, &c1 };
    assert_int_equal(mdb_get(txn, nodes, &k1, &v), 0);
    uint64_t d = 0;
    const unsigned char *p = v.mv_data;
    assert_int_equal(varint_get(&p, p + v.mv_size, &d), 0); /* format 1: node 1024's parent delta first */
    assert_true(d >= 1 && d <= 1024);
    assert_int_equal(mdb_get(txn, strings, &k1, &v), 0);
    uint32_t n1;
    memcpy(&n1, v.mv_data, 4);
    assert_int_equal(n1, 256); /* format 1: a plain count of 256 strings */
    mdb_txn_abort(txn);
    assert_reads_back(nn, ns);
}

/* Damage to a format-2 chunk: any flipped bit, or a chunk under another
 * key, fails its checksum; a layout made wrong behind a right checksum is
 * found by the decoder, each with what is wrong; the reader answers -1 or
 * NULL for the ids of a damaged chunk. */
static void test_format2_damage_found(void **state)
{
    (void)state;
    MDB_txn *txn;
    pdict_w *w = load(&txn);
    write_tree(w, txn, 40, 30, 200, 0, 0);
    commit(w, txn);
    uint32_t nn = pdict_w_nodes(w), ns = pdict_w_strings(w);
    pdict_w_free(w);
    assert_true(nn < 8192);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    uint32_t c0 = 0;
    MDB_val k = { 4, &c0 }, v;
    assert_int_equal(mdb_get(txn, nodes, &k, &v), 0);
    unsigned char *val = malloc(v.mv_size);
    size_t vlen = v.mv_size;
    memcpy(val, v.mv_data, vlen);
    uint32_t *pf = malloc((size_t)nn * 2 * sizeof *pf);
    char why[200];
    MDB_val dv = { vlen, val };
    assert_int_equal(pdict_node_chunk_decode(2, 0, &dv, nn, ns, NULL, pf, why, sizeof why), 0);
    /* every single flipped bit: found */
    for (size_t i = 0; i < vlen; i++)
        for (int b = 0; b < 8; b++) {
            val[i] ^= (unsigned char)(1 << b);
            assert_int_equal(pdict_node_chunk_decode(2, 0, &dv, nn, ns, NULL, pf, why, sizeof why), -1);
            val[i] ^= (unsigned char)(1 << b);
        }
    /* the same bytes as chunk 1 */
    assert_int_equal(pdict_node_chunk_decode(2, 1, &dv, nn, ns, NULL, pf, why, sizeof why), -1);
    assert_string_equal(why, "checksum mismatch");
    /* layouts made wrong, sealed again (plain) */
    unsigned char raw[64], *q, *sealed;
    size_t slen;
    MDB_val sv;
    q = raw;
    q = varint_put(q, 0), q = varint_put(q, 0);          /* the root */
    q = varint_put(q, (1u << 1) | 1);                    /* node 1: child of the root, function 1 */
    q = varint_put(q, 1u << 1), q = varint_put(q, 3);    /* node 2: parent 3 back, below the root */
    assert_int_equal(pdict_chunk_seal('N', 0, raw, (size_t)(q - raw), 0, &sealed, &slen), 0);
    sv = (MDB_val){ slen, sealed };
    assert_int_equal(pdict_node_chunk_decode(2, 0, &sv, 3, ns, NULL, pf, why, sizeof why), -1);
    assert_string_equal(why, "node 2: its parent (3 back) is not a node below it");
    free(sealed);
    q = raw;
    q = varint_put(q, 0), q = varint_put(q, 0);
    q = varint_put(q, ((uint64_t)ns << 1) | 1);          /* a function beyond the strings */
    assert_int_equal(pdict_chunk_seal('N', 0, raw, (size_t)(q - raw), 0, &sealed, &slen), 0);
    sv = (MDB_val){ slen, sealed };
    assert_int_equal(pdict_node_chunk_decode(2, 0, &sv, 2, ns, NULL, pf, why, sizeof why), -1);
    assert_non_null(strstr(why, "node 1: its function is string"));
    /* the same, with one node fewer counted: bytes left over */
    assert_int_equal(pdict_node_chunk_decode(2, 0, &sv, 1, ns, NULL, pf, why, sizeof why), -1);
    assert_string_equal(why, ns < 64 ? "1 bytes after its 1 nodes" : "2 bytes after its 1 nodes");
    /* and one more counted: it ends inside node 2 */
    free(sealed);
    q = raw;
    q = varint_put(q, 0), q = varint_put(q, 0), q = varint_put(q, (1u << 1) | 1);
    assert_int_equal(pdict_chunk_seal('N', 0, raw, (size_t)(q - raw), 9, &sealed, &slen), 0);
    sv = (MDB_val){ slen, sealed };
    assert_int_equal(pdict_node_chunk_decode(2, 0, &sv, 3, ns, NULL, pf, why, sizeof why), -1);
    assert_string_equal(why, "the chunk ends inside node 2");
    free(sealed);
    /* the reader, over a damaged node chunk and string chunk */
    val[vlen - 1] ^= 0x10;
    assert_int_equal(mdb_put(txn, nodes, &k, &dv, 0), 0);
    assert_int_equal(mdb_get(txn, strings, &k, &v), 0);
    memcpy(raw, v.mv_data, 8);
    unsigned char *sval = malloc(v.mv_size);
    memcpy(sval, v.mv_data, v.mv_size);
    sval[v.mv_size / 2] ^= 0x01;
    sv = (MDB_val){ v.mv_size, sval };
    assert_int_equal(mdb_put(txn, strings, &k, &sv, 0), 0);
    unsigned char *owned;
    assert_null(pdict_str_chunk_open(2, 0, &sv, NULL, &slen, &owned, why, sizeof why));
    assert_string_equal(why, "checksum mismatch");
    assert_int_equal(mdb_txn_commit(txn), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    pdict_r *r;
    assert_int_equal(pdict_r_open(&r, txn, meta, strings, nodes), STORE_OK);
    uint32_t p, f, len;
    assert_int_equal(pdict_r_node(r, 1, &p, &f), -1);
    assert_null(pdict_r_string(r, 1, &len));
    pdict_r_free(r);
    mdb_txn_abort(txn);
    free(sval);
    free(val);
    free(pf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idset_growth_and_lookups),
        cmocka_unit_test(test_idset_collisions_wrap_around),
        cmocka_unit_test(test_idset_widens_past_24_bits),
        cmocka_unit_test(test_nodetab_round_trip_and_size),
        cmocka_unit_test_setup_teardown(test_stack_table_growth_and_resolve, open_env, close_env),
        cmocka_unit_test_setup_teardown(test_node_set_growth_reload_and_memory, open_env, close_env),
        cmocka_unit_test_setup_teardown(test_format2_round_trip, open_env, close_env),
        cmocka_unit_test_setup_teardown(test_walk_reuses_shared_frames, open_env, close_env),
        cmocka_unit_test_setup_teardown(test_format1_still_read_and_written, open_env, close_env),
        cmocka_unit_test_setup_teardown(test_format2_damage_found, open_env, close_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
