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
#include "../../storage/pdict.h"

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
 * doubling), at 5 bytes a slot. */
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
    assert_int_equal(idset_bytes(&s), (size_t)s.cap * IDSET_SLOT);
    assert_true(idset_bytes(&s) <= (size_t)N * 10);
    for (uint32_t id = 1; id <= N; id++) assert_int_equal(find(&k, &s, k.key[id], k.hash[id]), id);
    for (uint64_t x = 1; x <= 1000; x++) assert_int_equal(find(&k, &s, x * 7919 + 14, hash_u64(x * 7919 + 14)), 0);
    idset_free(&s);
    free(k.key);
    free(k.hash);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idset_growth_and_lookups),
        cmocka_unit_test(test_idset_collisions_wrap_around),
        cmocka_unit_test_setup_teardown(test_stack_table_growth_and_resolve, open_env, close_env),
        cmocka_unit_test_setup_teardown(test_node_set_growth_reload_and_memory, open_env, close_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
