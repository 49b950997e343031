/* test_store.c — storage/: the block codec, lossless round trips through
 * LMDB, reopening, group commit from many threads, rollback when the map
 * is full, retention, and store_check finding damage.  Stores live in
 * fresh temporary directories. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "../../storage/block.h"
#include "../../storage/env.h"
#include "../../storage/hash.h"
#include "../../storage/pdict.h"
#include "../../storage/prep.h"
#include "../../storage/rollup.h"
#include "../../storage/segment.h"
#include "../../storage/store_internal.h"

static char tmpdir[256];

static int make_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/flamedb-test-store-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmp(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd);
}

/* A store of n writers (0: TEST_STORE_WRITERS, else 1): the suite runs
 * again with several writers (Makefile), every answer the same but those
 * about one partition file. */
static store *open_store_n(uint64_t map_size, int64_t retention_ms, int n)
{
    store *st;
    char err[256];
    const char *w = getenv("TEST_STORE_WRITERS");
    store_options opt = { .dir = tmpdir, .map_size = map_size, .retention_ms = retention_ms,
                          .writers = n ? n : w ? atoi(w) : 1 };
    store_status ss = store_open(&st, &opt, err, sizeof err);
    if (ss) fail_msg("store_open: %s", err);
    return st;
}

static store *open_store(uint64_t map_size, int64_t retention_ms) { return open_store_n(map_size, retention_ms, 0); }

static const store_label api_labels[] = { { "instance", "i-1" }, { "service", "api" }, { "type", "cpu" } };

static store_status write_stacks(store *st, const store_label *labels, int n_labels, int64_t from,
                                 const char **frames, const uint64_t *counts, size_t n, double rate)
{
    static _Thread_local store_stack stacks[1024];
    assert_true(n <= 1024);
    for (size_t i = 0; i < n; i++) {
        stacks[i].frames = frames[i];
        stacks[i].len = (uint32_t)strlen(frames[i]);
        stacks[i].count = counts[i];
    }
    store_profile p = { labels, n_labels, from, from + 10000, rate, "samples", stacks, n, NULL, 0, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    char err[256];
    return store_write(st, &p, NULL, err, sizeof err);
}

/* One profile of api_labels' series at from, its stacks' hashes given. */
static store_status write_profile_hashed(store *st, int64_t from, const store_stack *stacks, const hash128 *hashes)
{
    store_profile p = { .labels = api_labels, .n_labels = 3, .from_ms = from, .until_ms = from + 10000,
                        .unit = "samples", .stacks = stacks, .n_stacks = 1, .hashes = hashes };
    char err[256];
    return store_write(st, &p, NULL, err, sizeof err);
}

/* Reads back every (stack text, summed count) of a series, as folded text
 * through the real reader API. */
typedef struct { store_reader *r; char out[8192]; size_t len; uint64_t samples; int profiles; } dump_ctx;

static void path_of(store_reader *r, uint32_t node, char *buf, size_t cap)
{
    uint32_t chain[256], d = 0;
    for (; node && d < 256; node = store_node_parent(r, node)) chain[d++] = node;
    size_t len = 0;
    buf[0] = '\0';
    while (d-- && len < cap) {
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", store_string(r, store_node_func(r, chain[d]), NULL),
                                d ? ";" : "");
    }
}

static int dump_block(const store_block *b, void *arg)
{
    dump_ctx *c = arg;
    const uint32_t *nodes;
    const uint64_t *counts;
    uint32_t n;
    assert_int_equal(store_block_pairs(c->r, b, &nodes, &counts, &n), STORE_OK);
    for (uint32_t i = 0; i < n; i++) {
        char path[1024];
        if (i) assert_true(nodes[i] > nodes[i - 1]);
        path_of(c->r, nodes[i], path, sizeof path);
        if (c->len >= sizeof c->out) continue;
        c->len += (size_t)snprintf(c->out + c->len, sizeof c->out - c->len, "%s %llu\n", path,
                                   (unsigned long long)counts[i]);
    }
    c->samples += b->samples;
    c->profiles++;
    return 0;
}

static void dump_series(store *st, uint32_t sid, dump_ctx *c)
{
    memset(c, 0, sizeof *c);
    assert_int_equal(store_reader_begin(st, &c->r), STORE_OK);
    store_blocks_scan(c->r, sid, INT64_MIN, INT64_MAX, dump_block, c);
    store_reader_end(c->r);
}

/* The one series the store holds.  Not always id 1: retention running in
 * the background while old profiles are written can drop their partition
 * and the series with it (when the partition of "now - 2 h" has ended
 * over an hour ago: between 01:00 and 02:00 UTC), and the next write
 * brings the series back with a new id (store.h). */
static uint32_t only_series(store *st)
{
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    uint32_t n = store_series_count(r), sid = store_series_next(r, 0);
    store_reader_end(r);
    assert_int_equal(n, 1);
    return sid;
}

static int count_profiles(const store_block *b, void *ctx)
{
    *(int *)ctx += (int)b->n_profiles;
    return 0;
}

/* Encodes n pairs and checks decode and accumulate give them back. */
static void block_case(const uint32_t *nodes, const uint64_t *counts, uint32_t n, int expect_compressed)
{
    block_header h = { .unit = 7, .n_pairs = n, .n_profiles = 3, .duration_ms = 10000, .rate = 99, .samples = 42 };
    void *val;
    size_t len;
    assert_int_equal(block_encode(&h, nodes, counts, NULL, &val, &len), STORE_OK);
    block_header g;
    const void *payload;
    size_t plen;
    int compressed;
    assert_int_equal(block_parse_header(val, len, &g, &payload, &plen, &compressed), 0);
    assert_int_equal(g.unit, 7);
    assert_int_equal(g.n_pairs, n);
    assert_int_equal(g.n_profiles, 3);
    assert_int_equal(g.duration_ms, 10000);
    assert_true(g.rate == 99.0);
    assert_int_equal(g.samples, 42);
    assert_int_equal(compressed, expect_compressed);
    uint32_t *dn = malloc(n * sizeof *dn);
    uint64_t *dc = malloc(n * sizeof *dc);
    char *scratch = malloc(g.raw_len + 1);
    assert_int_equal(block_decode(&g, payload, plen, compressed, NULL, scratch, dn, dc), 0);
    assert_memory_equal(dn, nodes, n * sizeof *dn);
    assert_memory_equal(dc, counts, n * sizeof *dc);

    /* One-pass accumulation: the same values, weighted, and the bits. */
    uint32_t n_nodes = nodes[n - 1] + 1;
    uint64_t *acc = calloc(n_nodes, sizeof *acc), *touched = calloc(n_nodes / 64 + 1, sizeof *touched), sum;
    assert_int_equal(block_accumulate(&g, payload, plen, compressed, NULL, scratch, n_nodes, 3, acc, touched, &sum), 0);
    uint64_t expect_sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(acc[nodes[i]], counts[i] * 3);
        assert_true((touched[nodes[i] >> 6] >> (nodes[i] & 63)) & 1);
        expect_sum += counts[i] * 3;
    }
    assert_int_equal(sum, expect_sum);
    /* A node beyond the reader's tree is refused, not written out of bounds. */
    assert_int_not_equal(block_accumulate(&g, payload, plen, compressed, NULL, scratch, n_nodes - 1, 1, acc, touched, &sum), 0);
    /* Truncated values are refused, never read past their end. */
    assert_int_not_equal(block_parse_header(val, 1, &g, &payload, &plen, &compressed), 0);
    assert_int_not_equal(block_decode(&g, payload, plen / 2, compressed, NULL, scratch, dn, dc), 0);
    free(acc);
    free(touched);
    free(dn);
    free(dc);
    free(scratch);
    free(val);
}

static void test_block_roundtrip(void **state)
{
    (void)state;
    enum { N = 5000 };
    static uint32_t nodes[N];
    static uint64_t counts[N];
    uint32_t node = 0;
    for (int i = 0; i < N; i++) {
        node += 1 + (uint32_t)(i * 7919 % 1000);
        nodes[i] = node;
        counts[i] = (uint64_t)(i % 5 + 1) + ((i % 97 == 0) ? (1ULL << 52) : 0);
    }
    block_case(nodes, counts, N, 1); /* a profile's worth: compressed */
    block_case(nodes, counts, 3, 0); /* too small to be worth compressing */
}

/* A raw block (store_prepare's, BLOCK_ZSTD_MIN_RAW) is compressed only
 * when its payload is too long to sit in a leaf page; other blocks from
 * BLOCK_ZSTD_MIN bytes on.  The pairs compress well either way. */
static void test_raw_blocks_compressed_past_a_leaf(void **state)
{
    (void)state;
    enum { N = 1500 };
    static uint32_t nodes[N];
    static uint64_t counts[N];
    for (uint32_t i = 0; i < N; i++) {
        nodes[i] = 1 + 3 * i;
        counts[i] = 1 + i % 3;
    }
    block_payload pl;
    uint32_t small = 700; /* 1,400 raw bytes: 1-byte deltas and counts */
    assert_int_equal(block_payload_encode(nodes, counts, small, NULL, BLOCK_ZSTD_MIN, &pl), STORE_OK);
    assert_int_equal(pl.raw_len, 2 * small);
    assert_int_equal(pl.compressed, 1);
    assert_true(pl.len < pl.raw_len / 2);
    free(pl.buf);
    assert_int_equal(block_payload_encode(nodes, counts, small, NULL, BLOCK_ZSTD_MIN_RAW, &pl), STORE_OK);
    assert_int_equal(pl.compressed, 0);
    assert_int_equal(pl.len, pl.raw_len);
    free(pl.buf);
    assert_int_equal(block_payload_encode(nodes, counts, N, NULL, BLOCK_ZSTD_MIN_RAW, &pl), STORE_OK);
    assert_true(pl.raw_len >= BLOCK_ZSTD_MIN_RAW);
    assert_int_equal(pl.compressed, 1);
    free(pl.buf);

    /* the block ingest makes for a profile (prep_build) is a raw block */
    static store_stack st[N];
    for (uint32_t i = 0; i < N; i++) st[i] = (store_stack){ "x", 1, counts[i] };
    store_prep *pr;
    assert_int_equal(prep_build(st, nodes, small, NULL, &pr), STORE_OK);
    assert_int_equal(pr->payload.raw_len, 2 * small);
    assert_int_equal(pr->payload.compressed, 0);
    store_prep_free(pr);
    assert_int_equal(prep_build(st, nodes, N, NULL, &pr), STORE_OK);
    assert_int_equal(pr->payload.compressed, 1);
    store_prep_free(pr);
}

static void test_block_keys_sort_by_series_then_time(void **state)
{
    (void)state;
    unsigned char a[BLOCK_KEY_LEN], b[BLOCK_KEY_LEN];
    block_key(a, 1, -5000, 0);
    block_key(b, 1, 3000, 0);
    assert_true(memcmp(a, b, BLOCK_KEY_LEN) < 0); /* negative times sort first */
    block_key(a, 1, INT64_MAX, 9);
    block_key(b, 2, INT64_MIN, 0);
    assert_true(memcmp(a, b, BLOCK_KEY_LEN) < 0);
    uint32_t sid, seq;
    int64_t t;
    block_key(a, 77, -123456789, 5);
    block_key_parse(a, &sid, &t, &seq);
    assert_int_equal(sid, 77);
    assert_int_equal(t, -123456789);
    assert_int_equal(seq, 5);
}

static void test_lossless_roundtrip_and_reopen(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    const char *frames[] = { "main;a;b", "main;a", "main;a;b", "main;x y z;c", "other" };
    const uint64_t counts[] = { 3, 5, 4, (1ULL << 53) - 1, 1 };
    uint32_t sid;
    store_stack stacks[5];
    for (int i = 0; i < 5; i++) stacks[i] = (store_stack){ frames[i], (uint32_t)strlen(frames[i]), counts[i] };
    store_profile p = { api_labels, 3, 1000, 11000, 0, "samples", stacks, 5, NULL, 0, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    char err[256];
    assert_int_equal(store_write(st, &p, &sid, err, sizeof err), STORE_OK);
    const char *expect = "main;a 5\nmain;a;b 7\nmain;x y z;c 9007199254740991\nother 1\n";
    dump_ctx c;
    dump_series(st, sid, &c);
    assert_string_equal(c.out, expect); /* duplicates summed, nodes ascending = creation order */
    assert_int_equal(c.profiles, 1);
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, NULL), STORE_OK); /* no compaction at reopen */
    store_close(st);

    st = open_store(0, 0);
    dump_series(st, sid, &c);
    assert_string_equal(c.out, expect);
    /* The same stacks again reuse the same nodes and series: the
     * partition's dictionaries load from its file, and nothing is added. */
    store_stats s1, s2;
    store_get_stats(st, &s1);
    assert_int_equal(s1.nodes, 0); /* not loaded until a write needs them */
    uint32_t sid2;
    assert_int_equal(store_write(st, &p, &sid2, err, sizeof err), STORE_OK);
    store_get_stats(st, &s2);
    assert_int_equal(sid2, sid);
    assert_int_equal(s1.series, 1);
    assert_int_equal(s2.nodes, 6); /* main, a, b, "x y z", c, other */
    store_close(st);
}

static void test_same_start_is_kept_apart(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    const char *f[] = { "a;b" };
    for (uint64_t i = 1; i <= 3; i++) assert_int_equal(write_stacks(st, api_labels, 3, 5000, f, &i, 1, 0), STORE_OK);
    dump_ctx c;
    dump_series(st, 1, &c);
    assert_int_equal(c.profiles, 3);
    assert_string_equal(c.out, "a;b 1\na;b 2\na;b 3\n");
    store_close(st);
}

static void test_labels_and_postings(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    const store_label other[] = { { "instance", "i-2" }, { "service", "api" }, { "type", "cpu" } };
    const char *f[] = { "a" };
    uint64_t one = 1;
    assert_int_equal(write_stacks(st, api_labels, 3, 0, f, &one, 1, 0), STORE_OK);
    assert_int_equal(write_stacks(st, other, 3, 0, f, &one, 1, 0), STORE_OK);
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    assert_int_equal(store_series_max(r), 2);
    uint32_t *ids;
    size_t n;
    assert_int_equal(store_postings(r, "service", "api", &ids, &n), STORE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    free(ids);
    assert_int_equal(store_postings(r, "instance", "i-2", &ids, &n), STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 2);
    free(ids);
    assert_int_equal(store_postings(r, "instance", "nope", &ids, &n), STORE_OK);
    assert_int_equal(n, 0);
    assert_string_equal(store_series_label(r, 2, "instance"), "i-2");
    assert_null(store_series_label(r, 2, "missing"));
    store_label labels[8];
    assert_int_equal(store_series_labels(r, 1, labels, 8), 3);
    assert_string_equal(labels[0].name, "instance");
    assert_string_equal(labels[2].value, "cpu");
    assert_int_equal(store_series_has_blocks(r, 1, 0, 1), 1);
    assert_int_equal(store_series_has_blocks(r, 1, 1, 100), 0);
    store_reader_end(r);
    store_close(st);
}

/* store_series_last / store_series_first: the newest and oldest window of
 * a series across hour partitions, from keys and headers; partitions that
 * lack the series (holding lower or higher ids only) are walked past, and
 * the bounds stop the walk. */
static void test_series_last_and_first(void **state)
{
    (void)state;
    const int64_t H = 3600000;
    store *st;
    char err[256];
    store_options opt = { .dir = tmpdir, .partition_ms = H };
    assert_int_equal(store_open(&st, &opt, err, sizeof err), STORE_OK);
    const store_label s2[] = { { "service", "db" } }, s3[] = { { "service", "web" } };
    const char *f[] = { "a;b" };
    uint64_t one = 1;
    /* series 1: hours 0, 2 (twice) and 5; series 2: hour 1; series 3: hour 5 */
    assert_int_equal(write_stacks(st, api_labels, 3, 5000, f, &one, 1, 0), STORE_OK);
    assert_int_equal(write_stacks(st, s2, 1, H + 1000, f, &one, 1, 0), STORE_OK);
    assert_int_equal(write_stacks(st, api_labels, 3, 2 * H + 10000, f, &one, 1, 0), STORE_OK);
    assert_int_equal(write_stacks(st, api_labels, 3, 2 * H + 20000, f, &one, 1, 0), STORE_OK);
    assert_int_equal(write_stacks(st, api_labels, 3, 5 * H, f, &one, 1, 0), STORE_OK);
    assert_int_equal(write_stacks(st, s3, 1, 5 * H + 7000, f, &one, 1, 0), STORE_OK);
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    assert_int_equal(store_series_max(r), 3);
    int64_t from = -1, until = -1;
    assert_int_equal(store_series_last(r, 1, INT64_MIN, &from, &until), 1);
    assert_int_equal(from, 5 * H);
    assert_int_equal(until, 5 * H + 10000);
    assert_int_equal(store_series_last(r, 1, 5 * H, &from, &until), 1);
    assert_int_equal(store_series_last(r, 1, 5 * H + 1, &from, &until), 0);
    /* hour 5 holds series 1 and 3 around it, hour 2 only series 1 */
    assert_int_equal(store_series_last(r, 2, INT64_MIN, &from, &until), 1);
    assert_int_equal(from, H + 1000);
    assert_int_equal(until, H + 11000);
    assert_int_equal(store_series_last(r, 2, H + 1001, &from, &until), 0);
    assert_int_equal(store_series_last(r, 2, 2 * H, &from, &until), 0);
    assert_int_equal(store_series_last(r, 3, INT64_MIN, &from, &until), 1);
    assert_int_equal(from, 5 * H + 7000);
    assert_int_equal(store_series_last(r, 4, INT64_MIN, &from, &until), 0);

    assert_int_equal(store_series_first(r, 1, INT64_MAX, &from, &until), 1);
    assert_int_equal(from, 5000);
    assert_int_equal(until, 15000);
    assert_int_equal(store_series_first(r, 1, 5001, &from, &until), 1);
    assert_int_equal(store_series_first(r, 1, 5000, &from, &until), 0);
    /* hour 0 holds only series 1, below series 2's ids */
    assert_int_equal(store_series_first(r, 2, INT64_MAX, &from, &until), 1);
    assert_int_equal(from, H + 1000);
    assert_int_equal(store_series_first(r, 2, H, &from, &until), 0);
    assert_int_equal(store_series_first(r, 3, INT64_MAX, &from, &until), 1);
    assert_int_equal(from, 5 * H + 7000);
    assert_int_equal(store_series_first(r, 4, INT64_MAX, &from, &until), 0);
    store_reader_end(r);

    /* a deleted series has no window left */
    uint32_t ids[] = { 1 };
    uint64_t deleted;
    assert_int_equal(store_delete_series(st, ids, 1, &deleted), STORE_OK);
    assert_int_equal(deleted, 4);
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    assert_int_equal(store_series_last(r, 1, INT64_MIN, &from, &until), 0);
    assert_int_equal(store_series_first(r, 1, INT64_MAX, &from, &until), 0);
    assert_int_equal(store_series_last(r, 3, INT64_MIN, &from, &until), 1);
    store_reader_end(r);
    store_close(st);
}

/* Appends n random printable characters (never ';') to s at len: frame
 * names that zstd cannot shrink much, for tests that fill a map (string
 * chunks are compressed, storage/pdict.h). */
static size_t random_chars(char *s, size_t len, int n, uint64_t *x)
{
    for (int j = 0; j < n; j++) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        char ch = (char)('!' + *x % 90);
        s[len++] = ch == ';' ? 'z' : ch;
    }
    return len;
}

/* A full map fails the one write, rolls back its new dictionary entries,
 * and leaves the store consistent and usable. */
static void test_map_full_rolls_back(void **state)
{
    (void)state;
    store *st = open_store(1 << 20, 0);
    const char *f[] = { "keep;me" };
    uint64_t one = 1;
    assert_int_equal(write_stacks(st, api_labels, 3, 0, f, &one, 1, 0), STORE_OK);
    store_stats before;
    store_get_stats(st, &before);
    /* Profiles of ever new, long frames until the 1 MiB map is full. */
    char *big = malloc(60000);
    uint64_t x = 88172645463325252u;
    int failed = 0;
    for (int round = 0; round < 200 && !failed; round++) {
        size_t len = 0;
        for (int i = 0; i < 30; i++) {
            len += (size_t)snprintf(big + len, 60000 - len, "%sframe_%d_%d_", i ? ";" : "", round, i);
            len = random_chars(big, len, 900, &x);
        }
        const char *fr[] = { big };
        store_status ss = write_stacks(st, api_labels, 3, 1000 + round, fr, &one, 1, 0);
        if (ss) {
            assert_int_equal(ss, STORE_EFULL);
            failed = 1;
        }
    }
    assert_true(failed);
    free(big);
    /* Old data intact, a write of known stacks still works, and nothing of
     * the failed profile is visible. */
    assert_int_equal(write_stacks(st, api_labels, 3, 0, f, &one, 1, 0), STORE_OK);
    store_close(st);
    st = open_store(1 << 20, 0);
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    uint32_t max = store_node_max(r);
    for (uint32_t id = 1; id <= max; id++) assert_true(store_node_parent(r, id) < id);
    store_reader_end(r);
    dump_ctx c;
    dump_series(st, 1, &c);
    assert_non_null(strstr(c.out, "keep;me 1\n"));
    assert_true(c.profiles >= 2);
    store_close(st);
}

typedef struct { store *st; int thread; } writer_arg;

static void *writer_thread(void *arg)
{
    writer_arg *a = arg;
    char inst[16];
    snprintf(inst, sizeof inst, "t%d", a->thread);
    store_label labels[] = { { "instance", inst }, { "service", "api" }, { "type", "cpu" } };
    for (int i = 0; i < 50; i++) {
        char frame[64];
        snprintf(frame, sizeof frame, "main;shared;own_%d_%d", a->thread, i % 5);
        const char *f[] = { frame, "main;shared" };
        uint64_t counts[] = { 2, 1 };
        if (write_stacks(a->st, labels, 3, i * 10000, f, counts, 2, 0)) return (void *)1;
    }
    return NULL;
}

static void test_concurrent_writers(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    pthread_t t[8];
    writer_arg args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = (writer_arg){ st, i };
        pthread_create(&t[i], NULL, writer_thread, &args[i]);
    }
    for (int i = 0; i < 8; i++) {
        void *rv;
        pthread_join(t[i], &rv);
        assert_null(rv);
    }
    store_stats s;
    store_get_stats(st, &s);
    assert_int_equal(s.series, 8);
    /* main and shared in each shard's file, 40 own leaves: no duplicates */
    assert_int_equal(s.nodes, 2 * s.partition_files + 8 * 5);
    assert_true(s.commits >= 1 && s.commits <= 400);
    for (uint32_t sid = 1; sid <= 8; sid++) {
        dump_ctx c;
        dump_series(st, sid, &c);
        assert_int_equal(c.profiles, 50);
        assert_int_equal(c.samples, 150);
    }
    store_close(st);
}

/* Group commit for pushes that arrive apart (commit_wait_ms): a steady
 * stream of asynchronous writes, 2 ms apart, shares commits; a client that
 * waits for each answer before sending again is held only while the
 * writer learns it is a closed loop. */
typedef struct { pthread_mutex_t mu; int done, failed; } stream_ctx;

static void stream_done(void *ctx, store_status ss, uint32_t series, const char *err)
{
    (void)series;
    (void)err;
    stream_ctx *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->done++;
    c->failed += ss != STORE_OK;
    pthread_mutex_unlock(&c->mu);
}

/* Waits until n writes of c have been answered. */
static void stream_wait(stream_ctx *c, int n)
{
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int done = c->done;
        pthread_mutex_unlock(&c->mu);
        if (done >= n) return;
        usleep(1000);
    }
}

static void test_commit_wait_groups_a_stream(void **state)
{
    (void)state;
    store *st;
    char err[256];
    store_options opt = { .dir = tmpdir, .commit_wait_ms = 40 };
    assert_int_equal(store_open(&st, &opt, err, sizeof err), STORE_OK);
    enum { N = 120 };
    static store_stack stacks[N];
    static store_profile prof[N];
    static char inst[N][16];
    static store_label labels[N][3];
    stream_ctx c = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };
    for (int i = 0; i < N; i++) {
        snprintf(inst[i], sizeof inst[i], "i-%d", i % 7);
        labels[i][0] = (store_label){ "instance", inst[i] };
        labels[i][1] = (store_label){ "service", "api" };
        labels[i][2] = (store_label){ "type", "cpu" };
        stacks[i] = (store_stack){ "main;work", 9, 3 };
        prof[i] = (store_profile){ .labels = labels[i], .n_labels = 3, .from_ms = (int64_t)i * 10000,
                                   .until_ms = (int64_t)i * 10000 + 10000, .unit = "samples", .stacks = &stacks[i],
                                   .n_stacks = 1, .samples_kind = STORE_SAMPLES_COUNTS,
                                   .origin = (uint64_t)(i % 7) + 1 /* a connection per instance */ };
        assert_int_equal(store_write_async(st, &prof[i], stream_done, &c), STORE_OK);
        usleep(2000);
    }
    stream_wait(&c, N);
    assert_int_equal(c.failed, 0);
    store_stats s;
    store_get_stats(st, &s);
    assert_true(s.gather_waits >= 1);
    /* 2 ms apart, a commit each without the wait; held 40 ms, several a commit */
    assert_true(s.commits * 2 < N);
    uint64_t samples = 0;
    for (uint32_t sid = 1; sid <= 7; sid++) {
        dump_ctx d;
        dump_series(st, sid, &d);
        samples += d.samples;
    }
    assert_int_equal(samples, 3 * N);
    store_close(st);
}

static void test_commit_wait_spares_a_closed_loop(void **state)
{
    (void)state;
    store *st;
    char err[256];
    store_options opt = { .dir = tmpdir, .commit_wait_ms = 40 };
    assert_int_equal(store_open(&st, &opt, err, sizeof err), STORE_OK);
    const char *f[] = { "main;work" };
    uint64_t one = 1;
    for (int i = 0; i < 300; i++) assert_int_equal(write_stacks(st, api_labels, 3, i * 10000, f, &one, 1, 0), STORE_OK);
    store_stats s;
    store_get_stats(st, &s);
    /* every hold gathers nothing, and an empty hold quadruples the batches
     * that skip holding: holds at batches 1, 6, 23, 88 at most (doubling,
     * as a hold that gathered only a burst does, held 8 times) */
    assert_true(s.gather_waits <= 4);
    assert_int_equal(s.commits, 300);
    store_close(st);
}

/* A closed loop that names its origin (the server's connection) is never
 * held: each of its writes finds the recent origins all in the batch.  The
 * same loop without an origin is held while the writer learns (above). */
static void test_commit_wait_never_holds_one_origin(void **state)
{
    (void)state;
    store *st;
    char err[256];
    store_options opt = { .dir = tmpdir, .commit_wait_ms = 40 };
    assert_int_equal(store_open(&st, &opt, err, sizeof err), STORE_OK);
    store_stack stack = { "main;work", 9, 1 };
    for (int i = 0; i < 300; i++) {
        store_profile p = { .labels = api_labels, .n_labels = 3, .from_ms = (int64_t)i * 10000,
                            .until_ms = (int64_t)i * 10000 + 10000, .unit = "samples", .stacks = &stack,
                            .n_stacks = 1, .origin = 42 };
        assert_int_equal(store_write(st, &p, NULL, err, sizeof err), STORE_OK);
    }
    store_stats s;
    store_get_stats(st, &s);
    assert_int_equal(s.gather_waits, 0);
    assert_int_equal(s.commits, 300);
    dump_ctx d;
    dump_series(st, 1, &d);
    assert_int_equal(d.samples, 300);
    store_close(st);
}

/* store_write_async_all: the sample types of one pprof file are stored all
 * or none.  A group whose second profile cannot fit (a 1 MiB map) leaves
 * no trace of its first; a group that fits is stored whole; members in
 * different partitions are refused. */
static void test_write_all_or_none(void **state)
{
    (void)state;
    store *st = open_store(1 << 20, 0);
    const char *f[] = { "keep;me" };
    uint64_t one = 1;
    assert_int_equal(write_stacks(st, api_labels, 3, 0, f, &one, 1, 0), STORE_OK);
    static const store_label a_labels[] = { { "instance", "i-1" }, { "service", "api" }, { "type", "alloc" } };
    store_stack small = { "main;alloc", 10, 7 };
    char *big = malloc(2u << 20);
    size_t len = 0;
    uint64_t x = 88172645463325252u;
    for (int i = 0; i < 1500; i++) {
        len += (size_t)snprintf(big + len, (2u << 20) - len, "%sframe_%d_", i ? ";" : "", i);
        len = random_chars(big, len, 900, &x);
    }
    store_stack huge = { big, (uint32_t)len, 1 };
    store_profile pa = { a_labels, 3, 20000, 30000, 0, "samples", &small, 1, NULL, 0, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    store_profile pb = { api_labels, 3, 20000, 30000, 0, "samples", &huge, 1, NULL, 0, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    const store_profile *group[] = { &pa, &pb };
    stream_ctx c = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };
    void *ctx[] = { &c, &c };
    assert_int_equal(store_write_async_all(st, group, 2, stream_done, ctx), STORE_OK);
    stream_wait(&c, 2);
    assert_int_equal(c.failed, 2); /* both answered as failed */
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    uint32_t *ids;
    size_t n;
    assert_int_equal(store_postings(r, "type", "alloc", &ids, &n), STORE_OK);
    int profiles = 0;
    for (size_t i = 0; i < n; i++) store_blocks_scan(r, ids[i], INT64_MIN, INT64_MAX, count_profiles, &profiles);
    free(ids);
    store_reader_end(r);
    assert_int_equal(profiles, 0); /* the first, small one left no trace */
    /* two that fit: both stored */
    store_profile pc = { api_labels, 3, 40000, 50000, 0, "samples", &small, 1, NULL, 0, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    store_profile pd = { a_labels, 3, 40000, 50000, 0, "samples", &small, 1, NULL, 0, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    const store_profile *fit[] = { &pc, &pd };
    c.done = c.failed = 0;
    assert_int_equal(store_write_async_all(st, fit, 2, stream_done, ctx), STORE_OK);
    stream_wait(&c, 2);
    assert_int_equal(c.failed, 0);
    dump_ctx d;
    dump_series(st, 1, &d);
    assert_int_equal(d.profiles, 2);
    /* members in two partitions (a day apart) cannot share a transaction */
    store_profile pe = { api_labels, 3, 86400000 + 40000, 86400000 + 50000, 0, "samples", &small, 1, NULL, 0, NULL,
                         STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    const store_profile *apart[] = { &pc, &pe };
    assert_int_equal(store_write_async_all(st, apart, 2, stream_done, ctx), STORE_EINVAL);
    free(big);
    store_close(st);
}

static void test_retention_deletes_old_profiles(void **state)
{
    (void)state;
    store *st = open_store(0, 3600 * 1000);
    const char *f[] = { "a" };
    uint64_t one = 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000;
    for (int i = 0; i < 10; i++) assert_int_equal(write_stacks(st, api_labels, 3, now - 7200 * 1000 + i * 1000, f, &one, 1, 0), STORE_OK);
    assert_int_equal(write_stacks(st, api_labels, 3, now - 60 * 1000, f, &one, 1, 0), STORE_OK);
    /* The background pass may have taken some already: together, all 10. */
    uint64_t deleted = 0;
    assert_int_equal(store_retention_run(st, now, &deleted), STORE_OK);
    store_stats s;
    store_get_stats(st, &s);
    assert_int_equal(s.retention_deleted, 10);
    dump_ctx c;
    dump_series(st, only_series(st), &c);
    assert_int_equal(c.profiles, 1);
    assert_int_equal(store_retention_run(st, now, &deleted), STORE_OK);
    assert_int_equal(deleted, 0);
    store_close(st);
}

static void test_invalid_profiles_refused(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    store_stack s = { "a", 1, 0 };
    store_profile p = { api_labels, 3, 0, 10, 0, "samples", &s, 1, NULL, 0, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    char err[256];
    assert_int_equal(store_write(st, &p, NULL, err, sizeof err), STORE_EINVAL); /* zero count */
    s.count = 1;
    p.until_ms = 0;
    assert_int_equal(store_write(st, &p, NULL, err, sizeof err), STORE_EINVAL); /* empty window */
    store_stats stats;
    store_get_stats(st, &stats);
    assert_int_equal(stats.series, 0);
    store_close(st);
}

/* Dictionaries are written in chunks that close at about 8 KB: many
 * batches of new stacks (long frames, so chunks close often) must come
 * back identical after a reopen, ids dense, tree intact. */
static void test_dictionary_chunks_survive_reopen(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    enum { BATCHES = 12, STACKS = 40 };
    static char frames[BATCHES][STACKS][200];
    uint64_t counts[STACKS];
    for (int b = 0; b < BATCHES; b++) {
        const char *f[STACKS];
        for (int i = 0; i < STACKS; i++) {
            snprintf(frames[b][i], sizeof frames[b][i], "root;mid_%d_%0100d;leaf_%d_%d", i % 7, b, b, i);
            f[i] = frames[b][i];
            counts[i] = (uint64_t)(b * STACKS + i + 1);
        }
        assert_int_equal(write_stacks(st, api_labels, 3, b * 10000, f, counts, STACKS, 0), STORE_OK);
    }
    store_stats before;
    store_get_stats(st, &before);
    dump_ctx d1, d2;
    dump_series(st, 1, &d1);
    /* rollups built now: compaction after the reopen would load the maps */
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, NULL), STORE_OK);
    store_close(st);

    st = open_store(0, 0);
    store_stats after;
    store_get_stats(st, &after);
    assert_int_equal(after.nodes, 0); /* nothing loaded until a write needs it */
    dump_series(st, 1, &d2);
    assert_string_equal(d1.out, d2.out);
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    for (uint32_t id = 1; id <= store_node_max(r); id++) assert_true(store_node_parent(r, id) < id);
    store_reader_end(r);
    /* The stacks are known after the reopen: writing them again loads the
     * partition's dictionaries and creates no node, and then (the
     * writer's cache warm) they resolve. */
    for (int b = 0; b < BATCHES; b++) {
        const char *f[STACKS];
        for (int i = 0; i < STACKS; i++) f[i] = frames[b][i];
        assert_int_equal(write_stacks(st, api_labels, 3, 500000 + b, f, counts, STACKS, 0), STORE_OK);
    }
    store_get_stats(st, &after);
    assert_int_equal(after.nodes, before.nodes);
    for (int b = 0; b < BATCHES; b++) {
        store_stack k[STACKS];
        uint32_t leaves[STACKS];
        for (int i = 0; i < STACKS; i++) k[i] = (store_stack){ frames[b][i], (uint32_t)strlen(frames[b][i]), 1 };
        store_resolve(st, api_labels, 3, 500000, k, STACKS, leaves);
        for (int i = 0; i < STACKS; i++) assert_int_not_equal(leaves[i], 0);
    }
    /* New entries after the reopen extend the open chunk correctly. */
    const char *more[] = { "root;after_reopen" };
    uint64_t one = 1;
    assert_int_equal(write_stacks(st, api_labels, 3, 999999, more, &one, 1, 0), STORE_OK);
    store_close(st);
    st = open_store(0, 0);
    assert_int_equal(write_stacks(st, api_labels, 3, 999999, more, &one, 1, 0), STORE_OK);
    store_get_stats(st, &after);
    assert_int_equal(after.nodes, before.nodes + 1); /* known after the second reopen too */
    store_close(st);
}

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int calls;
    store_status ss;
    uint32_t series;
} async_result;

static void async_done(void *ctx, store_status ss, uint32_t series, const char *err)
{
    (void)err;
    async_result *a = ctx;
    pthread_mutex_lock(&a->lock);
    a->calls++;
    a->ss = ss;
    a->series = series;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
}

/* store_resolve finds committed stacks only; a write that passes its
 * answer stores exactly what a plain write stores; async writes call back
 * once, after the commit. */
static void test_resolve_and_async_write(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    const char *f[] = { "main;a;b", "main;c" };
    uint64_t counts[] = { 1, 2 };
    assert_int_equal(write_stacks(st, api_labels, 3, 0, f, counts, 2, 0), STORE_OK);

    store_stack stacks[3] = { { "main;c", 6, 5 }, { "main;new;leaf", 13, 7 }, { "main;a;b", 8, 11 } };
    uint32_t leaves[3];
    uint64_t token = store_resolve(st, api_labels, 3, 20000, stacks, 3, leaves);
    assert_int_not_equal(token, 0);
    assert_int_not_equal(leaves[0], 0);
    assert_int_equal(leaves[1], 0); /* never stored */
    assert_int_not_equal(leaves[2], 0);
    assert_int_not_equal(leaves[0], leaves[2]);
    store_stack wrong = { "main;a", 6, 1 }; /* a prefix is a different stack */
    uint32_t wl;
    store_resolve(st, api_labels, 3, 20000, &wrong, 1, &wl);
    assert_int_not_equal(wl, leaves[2]);
    /* with the hashes given (a decoder's), the same answer */
    hash128 hs[3];
    uint32_t hl[3];
    for (int i = 0; i < 3; i++) hs[i] = hash_bytes128(stacks[i].frames, stacks[i].len);
    assert_int_equal(store_resolve_hashed(st, api_labels, 3, 20000, hs, 3, hl), token);
    for (int i = 0; i < 3; i++) assert_int_equal(hl[i], leaves[i]);

    async_result a = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, STORE_EIO, 0 };
    /* the hashes go with the profile: the writer interns the new stack
     * (index 1) under hs[1], its own */
    store_profile p = { api_labels, 3, 20000, 30000, 0, "samples", stacks, 3, leaves, token, NULL, STORE_SAMPLES_COUNTS, 0, 0, hs, NULL, NULL, 0 };
    assert_int_equal(store_write_async(st, &p, async_done, &a), STORE_OK);
    pthread_mutex_lock(&a.lock);
    while (!a.calls) pthread_cond_wait(&a.cond, &a.lock);
    pthread_mutex_unlock(&a.lock);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.ss, STORE_OK);
    assert_int_equal(a.series, 1);

    dump_ctx c;
    dump_series(st, 1, &c);
    assert_string_equal(c.out, "main;a;b 1\nmain;c 2\nmain;a;b 11\nmain;c 5\nmain;new;leaf 7\n");
    uint32_t nl;
    store_resolve(st, api_labels, 3, 20000, &stacks[1], 1, &nl);
    assert_int_not_equal(nl, 0);
    assert_int_not_equal(nl, leaves[0]);
    assert_int_not_equal(nl, leaves[2]);
    /* and it takes the hash it is given, without hashing the text again:
     * a stack written with another hash is found by that one only */
    store_stack odd = { "main;odd", 8, 1 };
    hash128 other = hash_bytes128("not main;odd", 12);
    uint32_t ol;
    assert_int_equal(write_profile_hashed(st, 40000, &odd, &other), STORE_OK);
    store_resolve_hashed(st, api_labels, 3, 40000, &other, 1, &ol);
    assert_int_not_equal(ol, 0);
    store_resolve(st, api_labels, 3, 40000, &odd, 1, &ol);
    assert_int_equal(ol, 0);
    store_close(st);
}

/* Stacks given with their hashes and leaves but no text yet (ingest's
 * text later): when the leaves are of another partition object than the
 * one written, the writer has the text written (store_profile.write_text)
 * and interns every stack by it. */
typedef struct { char *text; int calls; } text_later_ctx;

static void text_later_write(void *arg)
{
    text_later_ctx *c = arg;
    memcpy(c->text, "main;a;bmain;c", 14);
    c->calls++;
}

static void test_write_text_when_leaves_are_stale(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    const char *f[] = { "main;a;b", "main;c" };
    uint64_t counts[] = { 1, 2 };
    assert_int_equal(write_stacks(st, api_labels, 3, 0, f, counts, 2, 0), STORE_OK);
    char text[15];
    memset(text, '?', sizeof text);
    store_stack stacks[2] = { { text, 8, 3 }, { text + 8, 6, 4 } };
    hash128 keys[2] = { hash_bytes128_seeded("k1", 2, 7), hash_bytes128_seeded("k2", 2, 7) };
    uint32_t leaves[2];
    uint64_t token = store_resolve_hashed(st, api_labels, 3, 20000, keys, 2, leaves);
    assert_int_not_equal(token, 0);
    assert_int_equal(leaves[0], 0); /* keys the table has never met */
    leaves[0] = 1;
    leaves[1] = 2;
    text_later_ctx c = { text, 0 };
    store_profile p = { api_labels, 3, 20000, 30000, 0, "samples", stacks, 2, leaves, token + 1000003, NULL,
                        STORE_SAMPLES_COUNTS, 0, 0, keys, text_later_write, &c, 0 };
    assert_int_equal(store_write(st, &p, NULL, NULL, 0), STORE_OK);
    assert_int_equal(c.calls, 1);
    dump_ctx d;
    dump_series(st, 1, &d);
    assert_string_equal(d.out, "main;a;b 1\nmain;c 2\nmain;a;b 3\nmain;c 4\n");
    /* with leaves of the partition written, no text is asked for */
    uint32_t known[2];
    token = store_resolve_hashed(st, api_labels, 3, 40000, keys, 2, known);
    assert_int_not_equal(known[0], 0); /* the writer put the keys in the table */
    memset(text, '?', sizeof text - 1);
    c.calls = 0;
    p = (store_profile){ .labels = api_labels, .n_labels = 3, .from_ms = 40000, .until_ms = 50000, .unit = "samples",
                         .stacks = stacks, .n_stacks = 2, .leaves = known, .part_token = token, .hashes = keys,
                         .write_text = text_later_write, .write_text_ctx = &c };
    assert_int_equal(store_write(st, &p, NULL, NULL, 0), STORE_OK);
    assert_int_equal(c.calls, 0);
    dump_series(st, 1, &d);
    assert_string_equal(d.out, "main;a;b 1\nmain;c 2\nmain;a;b 3\nmain;c 4\nmain;a;b 3\nmain;c 4\n");
    store_close(st);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A profile whose stacks are all known is made ready off the writer
 * (store_prepare) and stored exactly as a plain write would; leaves and a
 * block resolved against a partition that retention dropped meanwhile are
 * not trusted in the partition made anew for the same time. */
static void test_prepared_blocks_and_stale_leaves(void **state)
{
    (void)state;
    store *st = open_store(0, 24 * 3600 * 1000LL);
    int64_t t0 = wall_ms() - 3600 * 1000; /* young: background retention keeps it */
    const char *f[] = { "main;a;b", "main;c" };
    uint64_t counts[] = { 1, 2 };
    assert_int_equal(write_stacks(st, api_labels, 3, t0, f, counts, 2, 0), STORE_OK);

    store_stack known[3] = { { "main;c", 6, 5 }, { "main;a;b", 8, 11 }, { "main;c", 6, 1 } };
    uint32_t leaves[3];
    uint64_t token = store_resolve(st, api_labels, 3, t0, known, 3, leaves);
    assert_int_not_equal(token, 0);
    store_profile p = { api_labels, 3, t0 + 10000, t0 + 20000, 0, "samples", known, 3, leaves, token, NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    store_prep *prep = store_prepare(&p);
    assert_non_null(prep);
    p.prep = prep;
    char err[256];
    uint32_t sid;
    assert_int_equal(store_write(st, &p, &sid, err, sizeof err), STORE_OK);
    dump_ctx c;
    dump_series(st, sid, &c);
    assert_string_equal(c.out, "main;a;b 1\nmain;c 2\nmain;a;b 11\nmain;c 6\n");

    store_stack partly[2] = { { "main;c", 6, 1 }, { "main;new", 8, 1 } };
    uint32_t pl[2];
    store_profile q = { api_labels, 3, t0, t0 + 1, 0, "samples", partly, 2, pl, store_resolve(st, api_labels, 3, t0, partly, 2, pl), NULL, STORE_SAMPLES_COUNTS, 0, 0, NULL, NULL, NULL, 0 };
    assert_null(store_prepare(&q)); /* a new stack: the writer makes the block */

    /* Retention drops the partition; the same hour is written anew with
     * other stacks, so the stale leaves would name other nodes. */
    uint64_t deleted = 0;
    assert_int_equal(store_retention_run(st, t0 + 3 * 24 * 3600 * 1000LL, &deleted), STORE_OK);
    assert_int_equal(deleted, 2);
    const char *g[] = { "x;y;z", "x;w", "x;y;v", "u" };
    uint64_t gc[] = { 1, 1, 1, 1 };
    assert_int_equal(write_stacks(st, api_labels, 3, t0, g, gc, 4, 0), STORE_OK);
    assert_int_equal(store_write(st, &p, &sid, err, sizeof err), STORE_OK);
    dump_series(st, sid, &c);
    /* a profile's new stacks are interned in the order of their text */
    assert_string_equal(c.out, "u 1\nx;w 1\nx;y;v 1\nx;y;z 1\nmain;a;b 11\nmain;c 6\n");
    store_prep_free(prep);
    store_close(st);
}

/* ---- store_check (check.c) ---- */

/* The checksum of a version-2 block finds any changed byte after the
 * flags; a version-1 block has none to verify. */
static void test_block_verify(void **state)
{
    (void)state;
    uint32_t nodes[3] = { 1, 5, 9 };
    uint64_t counts[3] = { 3, 1, 4 };
    block_header h = { .unit = 2, .n_pairs = 3, .n_profiles = 1, .duration_ms = 10000, .rate = 100, .samples = 8 };
    void *val;
    size_t len;
    assert_int_equal(block_encode(&h, nodes, counts, NULL, &val, &len), STORE_OK);
    unsigned char *b = val;
    assert_int_equal(block_verify(val, len), 0);
    for (size_t i = 1; i < len; i++) { /* flags (gauge 16, samples unknown 8), checksum, header, payload */
        b[i] ^= 0x10;
        assert_int_equal(block_verify(val, len), -1);
        b[i] ^= 0x08;
        assert_int_equal(block_verify(val, len), -1);
        b[i] ^= 0x18;
    }
    assert_int_equal(block_verify(val, len - 1), -1); /* cut short */
    assert_int_equal(block_verify(val, len), 0);
    b[0] = 1; /* version 1 (flamedb-5): nothing to verify */
    assert_int_equal(block_verify(val, len), 1);
    b[0] = 3; /* not a version this flamedb writes */
    assert_int_equal(block_verify(val, len), -1);
    assert_int_equal(block_verify(val, 1), -1);
    free(val);
}

typedef struct { char line[32][600]; int n; } findings;

static void collect(void *ctx, store_check_kind kind, const char *file, const char *what)
{
    findings *f = ctx;
    if (f->n < 32)
        snprintf(f->line[f->n++], sizeof f->line[0], "%s %s: %s", kind == STORE_CHECK_NOTE ? "note" : "problem",
                 file, what);
}

/* store_check of the test directory: prints what it found, asserts no
 * problem, answers how many findings (notes included). */
static int check_no_problems(store_check_counts *n)
{
    findings fd = { .n = 0 };
    char err[256];
    assert_int_equal(store_check(tmpdir, collect, &fd, n, err, sizeof err), STORE_OK);
    for (int i = 0; i < fd.n; i++) print_message("  finding: %s\n", fd.line[i]);
    assert_int_equal(n->problems, 0);
    return fd.n;
}

/* Asserts one finding holds both fragments. */
static void assert_found(const findings *f, const char *a, const char *b)
{
    for (int i = 0; i < f->n; i++)
        if (strstr(f->line[i], a) && strstr(f->line[i], b)) return;
    for (int i = 0; i < f->n; i++) print_message("  finding: %s\n", f->line[i]);
    fail_msg("no finding holds \"%s\" and \"%s\"", a, b);
}

static MDB_val get_first(MDB_txn *txn, MDB_dbi dbi, MDB_val *key)
{
    MDB_cursor *c;
    MDB_val v;
    assert_int_equal(mdb_cursor_open(txn, dbi, &c), 0);
    assert_int_equal(mdb_cursor_get(c, key, &v, MDB_FIRST), 0);
    mdb_cursor_close(c);
    return v;
}

/* A sound store checks clean; each kind of damage, made through LMDB in a
 * closed store, is found and named by file and key, with no other finding. */
static void test_check_finds_damage(void **state)
{
    (void)state;
    store *st = open_store_n(0, 0, 1); /* one file to damage */
    const char *f[] = { "main;work;leaf", "main;idle" };
    uint64_t counts[] = { 7, 3 };
    const int64_t t0 = INT64_C(1793570400000); /* 2026-11-01T22:00:00Z */
    for (int i = 0; i < 4; i++) assert_int_equal(write_stacks(st, api_labels, 3, t0 + i * 60000, f, counts, 2, 100), STORE_OK);
    static const store_label db_labels[] = { { "service", "db" } };
    assert_int_equal(write_stacks(st, db_labels, 1, t0, f, counts, 2, 0), STORE_OK);
    uint64_t built = 0;
    assert_int_equal(store_compact_run(st, t0 + 2 * 86400000, &built), STORE_OK);
    assert_true(built >= 2);
    store_close(st);

    store_check_counts n;
    assert_int_equal(check_no_problems(&n), 0);
    findings fd = { .n = 0 };
    char err[256];
    assert_string_equal(n.format, "flamedb-7");
    assert_int_equal(n.needs_upgrade, 0);
    assert_int_equal(n.partition_ms, 86400000);
    assert_int_equal(n.series, 2);
    assert_int_equal(n.label_strings, 7); /* instance i-1 service api type cpu db */
    assert_int_equal(n.partitions, 1);
    assert_int_equal(n.blocks, 5);      /* all packed into the two series' segments */
    assert_int_equal(n.rollups, 2);     /* two series' 10 min; their hours lie in it (elided) */
    assert_int_equal(n.pending, 0);
    assert_int_equal(n.unchecked, 0);
    assert_int_equal(n.strings, 7);     /* "", main, work, leaf, idle, samples, nanoseconds */
    assert_true(n.nodes >= 5);

    /* Damage, through LMDB, one of each kind. */
    char name[64], path[600];
    part_file_name(name, sizeof name, t0 - 22 * 3600000, 0);
    snprintf(path, sizeof path, "%s/parts/%s", tmpdir, name);
    MDB_env *env;
    assert_int_equal(env_open(&env, path, UINT64_C(1) << 30, 1, 0, NULL, err, sizeof err), STORE_OK);
    MDB_txn *txn;
    MDB_dbi strings, nodes, blocks, rollups, pending, segments;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "strings", MDB_INTEGERKEY, &strings), 0);
    assert_int_equal(mdb_dbi_open(txn, "nodes", MDB_INTEGERKEY, &nodes), 0);
    assert_int_equal(mdb_dbi_open(txn, "blocks", 0, &blocks), 0);
    assert_int_equal(mdb_dbi_open(txn, "rollups", 0, &rollups), 0);
    assert_int_equal(mdb_dbi_open(txn, "pending", 0, &pending), 0);
    assert_int_equal(mdb_dbi_open(txn, "segments", 0, &segments), 0);
    unsigned char buf[4096], key[ROLLUP_KEY_LEN];
    MDB_val k, v;
    /* raw blocks (everything else is packed): a sound one, with a flipped
     * bit, for series 1 at t0 */
    uint32_t bnodes[] = { 1, 2 };
    uint64_t bcounts[] = { 7, 3 };
    block_header bh = { .unit = 5, .n_pairs = 2, .n_profiles = 1, .duration_ms = 10000, .samples = 10 };
    void *bval;
    size_t blen;
    assert_int_equal(block_encode(&bh, bnodes, bcounts, NULL, &bval, &blen), STORE_OK);
    memcpy(buf, bval, blen);
    buf[blen - 1] ^= 0x01;
    block_key(key, 1, t0, 0);
    k = (MDB_val){ BLOCK_KEY_LEN, key };
    v = (MDB_val){ blen, buf };
    assert_int_equal(mdb_put(txn, blocks, &k, &v, 0), 0);
    /* a sound block naming a series the catalog lacks */
    block_key(key, 99, t0 + 5000, 0);
    v = (MDB_val){ blen, bval };
    assert_int_equal(mdb_put(txn, blocks, &k, &v, 0), 0);
    free(bval);
    /* string chunk 0 (format 2, storage/pdict.h: a checksum, then format
     * 1's layout, maybe compressed): string 1 ends where it starts, sealed
     * again with a right checksum, so the layout's check finds it */
    v = get_first(txn, strings, &k);
    unsigned char *owned, *sealed;
    size_t slen;
    char why[200];
    const unsigned char *layout = pdict_str_chunk_open(2, 0, &v, NULL, &slen, &owned, why, sizeof why);
    assert_non_null(layout);
    assert_true(slen < sizeof buf);
    memcpy(buf, layout, slen);
    free(owned);
    memcpy(buf + 12, buf + 8, 4);
    assert_int_equal(pdict_chunk_seal('S', 0, buf, slen, 0, &sealed, &slen), 0);
    v = (MDB_val){ slen, sealed };
    assert_int_equal(mdb_put(txn, strings, &k, &v, 0), 0);
    free(sealed);
    /* node chunk 0: a flipped bit in its last node, which its checksum
     * catches */
    v = get_first(txn, nodes, &k);
    memcpy(buf, v.mv_data, v.mv_size);
    buf[v.mv_size - 1] ^= 0x02;
    v.mv_data = buf;
    assert_int_equal(mdb_put(txn, nodes, &k, &v, 0), 0);
    /* series 1's sound 10-minute rollup at t0 under a bucket not aligned */
    get_first(txn, rollups, &k);
    int level;
    uint32_t sid, unit;
    int64_t bucket;
    rollup_key_parse(k.mv_data, &level, &sid, &bucket, &unit);
    assert_int_equal(sid, 1);
    rollup_key(key, 1, sid, t0, unit);
    k = (MDB_val){ ROLLUP_KEY_LEN, key };
    assert_int_equal(mdb_get(txn, rollups, &k, &v), 0);
    memcpy(buf, v.mv_data, v.mv_size);
    v.mv_data = buf;
    rollup_key(key, 1, sid, t0 + 1000, unit);
    k = (MDB_val){ ROLLUP_KEY_LEN, key };
    assert_int_equal(mdb_put(txn, rollups, &k, &v, 0), 0);
    /* a flipped bit in series 2's segment */
    block_key(key, 2, t0, 0);
    k = (MDB_val){ BLOCK_KEY_LEN, key };
    assert_int_equal(mdb_get(txn, segments, &k, &v), 0);
    assert_true(v.mv_size < sizeof buf);
    memcpy(buf, v.mv_data, v.mv_size);
    buf[v.mv_size / 2] ^= 0x04;
    v.mv_data = buf;
    assert_int_equal(mdb_put(txn, segments, &k, &v, 0), 0);
    /* a pending mark of 12 bytes */
    k = (MDB_val){ 12, key };
    v = (MDB_val){ 0, "" };
    assert_int_equal(mdb_put(txn, pending, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    fd.n = 0;
    assert_int_equal(store_check(tmpdir, collect, &fd, &n, err, sizeof err), STORE_OK);
    char file[80];
    snprintf(file, sizeof file, "problem parts/%s: ", name);
    assert_found(&fd, file, "block series 1 at 2026-11-01T22:00:00Z seq 0: checksum mismatch");
    assert_found(&fd, "block series 99 at 2026-11-01T22:00:05Z seq 0", "series 99 is not in the catalog");
    assert_found(&fd, "string chunk 0 (ids 0..6)", "offsets not ascending at string 1");
    assert_found(&fd, "node chunk 0 (ids 0..", "checksum mismatch");
    assert_found(&fd, "rollup 10min series 1 bucket 2026-11-01T22:00:01Z", "not aligned");
    assert_found(&fd, "pending: a key of 12 bytes", file);
    assert_found(&fd, "segment series 2 bucket 2026-11-01T22:00:00Z", "checksum mismatch");
    for (int i = 0; i < fd.n; i++) assert_non_null(strstr(fd.line[i], file));
    assert_int_equal(n.problems, 7);
    assert_int_equal(fd.n, 7);
    assert_int_equal(n.blocks, 2 + 4); /* raw, and series 1's segment (series 2's is unreadable) */
    assert_int_equal(n.rollups, 3);
}

/* Retention over segments: a packed bucket wholly expired goes whole; the
 * one straddling the cutoff is packed again with only its young profiles;
 * the count of deleted profiles and what stays are as for raw blocks, and
 * the store checks sound after. */
static void test_retention_over_segments(void **state)
{
    (void)state;
    store *st = open_store(0, 3600 * 1000);
    const char *f[] = { "a", "b;c" };
    uint64_t counts[] = { 1, 2 };
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000, cutoff = now - 3600 * 1000;
    int64_t b = cutoff / 600000 * 600000; /* the 10-minute bucket holding the cutoff */
    int expire = 10;                       /* the whole bucket before it */
    for (int i = 0; i < 10; i++) {
        assert_int_equal(write_stacks(st, api_labels, 3, b - 600000 + i * 60000, f, counts, 2, 0), STORE_OK);
        assert_int_equal(write_stacks(st, api_labels, 3, b + i * 60000, f, counts, 2, 0), STORE_OK);
        expire += b + i * 60000 < cutoff;
    }
    assert_int_equal(write_stacks(st, api_labels, 3, now - 60 * 1000, f, counts, 2, 0), STORE_OK);
    uint64_t built = 0;
    assert_int_equal(store_compact_run(st, now, &built), STORE_OK);
    uint64_t deleted = 0;
    assert_int_equal(store_retention_run(st, now, &deleted), STORE_OK);
    store_stats s;
    store_get_stats(st, &s);
    assert_int_equal(s.retention_deleted, (uint64_t)expire); /* the background pass's and this one's */
    dump_ctx c;
    dump_series(st, only_series(st), &c);
    assert_int_equal(c.profiles, 21 - expire);
    assert_int_equal(store_retention_run(st, now, &deleted), STORE_OK);
    assert_int_equal(deleted, 0);
    store_close(st);
    store_check_counts n;
    check_no_problems(&n);
    assert_int_equal(n.blocks, (uint64_t)(21 - expire));
}

/* Late data waits for its burst to end: a profile for a bucket closed
 * long ago leaves a mark with its time that background compaction leaves
 * alone for ROLLUP_LATE_QUIET_MS (it built it right after the batch
 * before), `flamedb check` takes the timed mark, and an explicit
 * compaction builds it at once, answers unchanged. */
static void test_late_data_waits(void **state)
{
    (void)state;
    unsigned char t[8];
    MDB_val v = { sizeof t, t };
    int64_t at = INT64_C(1796170000000);
    for (int i = 0; i < 8; i++) t[i] = (unsigned char)((uint64_t)at >> (56 - 8 * i));
    assert_true(rollup_pending_waits(&v, at, ROLLUP_LATE_QUIET_MS));
    assert_true(rollup_pending_waits(&v, at + ROLLUP_LATE_QUIET_MS - 1, ROLLUP_LATE_QUIET_MS));
    assert_false(rollup_pending_waits(&v, at + ROLLUP_LATE_QUIET_MS, ROLLUP_LATE_QUIET_MS));
    assert_false(rollup_pending_waits(&v, at, 0)); /* an explicit compaction */
    MDB_val none = { 0, "" };
    assert_false(rollup_pending_waits(&none, at, ROLLUP_LATE_QUIET_MS)); /* data in time */

    store *st = open_store_n(0, 0, 1);
    const char *f[] = { "a;b", "a;c" };
    uint64_t counts[] = { 3, 4 };
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000, old = (now - 3 * 3600 * 1000) / 600000 * 600000;
    for (int i = 0; i < 3; i++)
        assert_int_equal(write_stacks(st, api_labels, 3, old + i * 10000, f, counts, 2, 0), STORE_OK);
    usleep(1500 * 1000); /* a background step runs after each batch that leaves closed buckets */
    store_stats s;
    store_get_stats(st, &s);
    assert_int_equal(s.rollups_built, 0);
    dump_ctx c;
    dump_series(st, 1, &c);
    assert_int_equal(c.profiles, 3);
    uint64_t built = 0;
    assert_int_equal(store_compact_run(st, now, &built), STORE_OK);
    assert_true(built >= 2); /* its 10-minute bucket and its hour's, now */
    dump_series(st, 1, &c);
    assert_int_equal(c.profiles, 3);
    store_close(st);
    /* again, the marks left on disk this time: check takes them */
    st = open_store_n(0, 0, 1);
    clock_gettime(CLOCK_REALTIME, &ts);
    now = (int64_t)ts.tv_sec * 1000;
    assert_int_equal(write_stacks(st, api_labels, 3, old - 600000, f, counts, 2, 0), STORE_OK);
    store_close(st);
    store_check_counts n;
    check_no_problems(&n);
    assert_true(n.pending >= 2);
}

/* A digest of every profile of series 1..n_series (window, pairs by
 * path), read through r, which may have begun before a seal. */
typedef struct { store_reader *r; uint64_t digest, pairs; int profiles; } digest_ctx;

static int digest_block(const store_block *b, void *arg)
{
    digest_ctx *c = arg;
    const uint32_t *nodes;
    const uint64_t *counts;
    uint32_t n;
    assert_int_equal(store_block_pairs(c->r, b, &nodes, &counts, &n), STORE_OK);
    char line[1200];
    int len = snprintf(line, sizeof line, "%u %lld %lld %u", b->series, (long long)b->from_ms, (long long)b->until_ms, n);
    c->digest = hash_bytes(line, (size_t)len, c->digest);
    for (uint32_t i = 0; i < n; i++) {
        char path[1024];
        path_of(c->r, nodes[i], path, sizeof path);
        len = snprintf(line, sizeof line, "%s %llu", path, (unsigned long long)counts[i]);
        c->digest = hash_bytes(line, (size_t)len, c->digest);
    }
    c->pairs += n;
    c->profiles++;
    return 0;
}

static void dump_reader(store_reader *r, uint32_t n_series, digest_ctx *c)
{
    *c = (digest_ctx){ .r = r };
    for (uint32_t sid = 1; sid <= n_series; sid++) store_blocks_scan(r, sid, INT64_MIN, INT64_MAX, digest_block, c);
}

static uint64_t file_blocks(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (uint64_t)sb.st_blocks * 512;
}

/* Sealing (compact.c): a closed partition whose file is mostly free pages
 * (all its raw blocks packed at once, as after a backfill) is rewritten
 * without them.  The file shrinks; new readers, and a reader that began
 * before, read the same profiles; late data goes into the sealed file; the
 * store checks sound and reads the same after a reopen. */
/* The open node chunk is encoded as nodes come (pdict.c): many commits
 * each adding nodes, across the 8,192-node chunk boundary, read back the
 * same after a reopen, and a node chunk completed mid-commit is whole. */
static void test_node_chunks_grow_across_commits(void **state)
{
    (void)state;
    store *st = open_store_n(0, 0, 1);
    enum { BATCHES = 30, STACKS = 100 };
    static char frames[BATCHES][STACKS][64];
    uint64_t counts[STACKS];
    for (int b = 0; b < BATCHES; b++) {
        const char *f[STACKS];
        for (int i = 0; i < STACKS; i++) {
            /* four new nodes a stack: 400 a commit, 12,000 in all */
            snprintf(frames[b][i], sizeof frames[b][i], "r;a%d_%d;b%d_%d;c%d;d%d", b, i, b, i, i % 5, i);
            f[i] = frames[b][i];
            counts[i] = (uint64_t)(b * STACKS + i + 1);
        }
        assert_int_equal(write_stacks(st, api_labels, 3, b * 10000, f, counts, STACKS, 0), STORE_OK);
    }
    store_stats before;
    store_get_stats(st, &before);
    assert_true(before.nodes > 8192 + 400);
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    digest_ctx d1 = { .r = r };
    store_blocks_scan(r, 1, INT64_MIN, INT64_MAX, digest_block, &d1);
    store_reader_end(r);
    store_close(st);
    st = open_store_n(0, 0, 1);
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    digest_ctx d2 = { .r = r };
    store_blocks_scan(r, 1, INT64_MIN, INT64_MAX, digest_block, &d2);
    assert_true(d1.digest == d2.digest);
    assert_int_equal(d2.profiles, BATCHES);
    assert_int_equal(d2.pairs, (uint64_t)BATCHES * STACKS);
    for (uint32_t id = 1; id <= store_node_max(r); id++) assert_true(store_node_parent(r, id) < id);
    store_reader_end(r);
    store_close(st);
    store_check_counts n;
    check_no_problems(&n);
}

static double rss_file_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssFile: %lf", &v) == 1) break;
    if (f) fclose(f);
    return v / 1024;
}

/* The bytes of the files directly in dir. */
static uint64_t dir_bytes(const char *dir)
{
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (e->d_name[0] != '.' && !stat(path, &sb) && S_ISREG(sb.st_mode)) sum += (uint64_t)sb.st_size;
    }
    if (d) closedir(d);
    return sum;
}

/* A writer's commits leave at most STORE_MAPPED_SLACK of file pages
 * mapped beyond what was mapped after its last release (writer.c:
 * release_due): a partition file of 12 MB written by 300 commits, each
 * of which descends its B-trees. */
static void test_writer_mapped_pages_bounded(void **state)
{
    (void)state;
    store *st = open_store(UINT64_C(1) << 30, 0);
    enum { STACKS = 1000 };
    static char text[STACKS][160];
    static const char *frames[STACKS];
    static uint64_t counts[STACKS];
    int64_t t0 = wall_ms() - 3600 * 1000;
    double warm = 0, most = 0;
    for (int r = 0; r < 300; r++) {
        for (int i = 0; i < STACKS; i++) { /* a new leaf function a stack: ~100 bytes of strings */
            uint64_t x = (uint64_t)(r * STACKS + i) * 0x9E3779B97F4A7C15u, y = x * 0xD6E8FEB86659FD93u;
            snprintf(text[i], sizeof text[i], "main;f%d;g%d;leaf_%016llx%016llx%016llx", i % 50, (r * 7 + i) % 500,
                     (unsigned long long)x, (unsigned long long)y, (unsigned long long)(x ^ (y >> 7)));
            frames[i] = text[i];
            counts[i] = 1 + (uint64_t)(i % 7);
        }
        assert_int_equal(write_stacks(st, api_labels, 3, t0 + r * 1000LL, frames, counts, STACKS, 0), STORE_OK);
        double mapped = env_mapped_file_bytes() / 1048576.0;
        if (r == 20) warm = mapped; /* the code paths and the first maps in */
        if (r > 20 && mapped > most) most = mapped;
    }
    char path[300];
    snprintf(path, sizeof path, "%s/parts", tmpdir);
    assert_true(dir_bytes(path) > (UINT64_C(8) << 20)); /* a file several times the slack */
    /* without releases the maps grew by 9.4 MiB here (12.6 MB of file) */
    assert_true(most - warm < STORE_MAPPED_SLACK / 1048576.0 + 1.5);
    store_close(st);
}

/* env_map_find finds an open environment's map once; env_map_release
 * drops the pages a read mapped (RssFile falls back) and leaves every
 * byte readable, through pointers taken before it too. */
static void test_env_map_release(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/map.mdb", tmpdir);
    MDB_env *env;
    char err[256];
    assert_int_equal(env_open(&env, path, UINT64_C(1) << 30, 1, 1, NULL, err, sizeof err), STORE_OK);
    MDB_txn *txn;
    MDB_dbi dbi;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
    enum { N = 512, LEN = 16384 }; /* 8 MiB of overflow values, written in long runs */
    unsigned char *val = malloc(LEN);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t key = __builtin_bswap32(i);
        for (int j = 0; j < LEN; j++) val[j] = (unsigned char)(i * 31 + j);
        MDB_val k = { sizeof key, &key }, v = { LEN, val };
        assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
    }
    assert_int_equal(mdb_txn_commit(txn), 0);
    env_map m;
    env_map_find(env, &m);
    assert_non_null(m.addr);
    MDB_envinfo info;
    assert_int_equal(mdb_env_info(env, &info), 0);
    assert_true(m.len >= info.me_mapsize);
    env_map_release(&m);
    double before = rss_file_mib();
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    const unsigned char *first = NULL;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < N; i++) {
        uint32_t key = __builtin_bswap32(i);
        MDB_val k = { sizeof key, &key }, v;
        assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
        const unsigned char *p = v.mv_data;
        assert_true(p >= (const unsigned char *)m.addr && p < (const unsigned char *)m.addr + m.len);
        for (size_t j = 0; j < v.mv_size; j += 512) sum += p[j];
        if (!i) first = p;
    }
    double touched = rss_file_mib();
    assert_true(touched - before >= 6); /* the 8 MiB read are mapped */
    assert_true(fabs(env_mapped_file_bytes() / 1048576.0 - touched) < 1); /* statm says what status says */
    env_map_release(&m);
    assert_true(rss_file_mib() - before < 2);
    assert_true(env_mapped_file_bytes() / 1048576.0 - before < 2);
    /* the same bytes, through the pointer taken before the release */
    for (int j = 0; j < LEN; j++) assert_int_equal(first[j], (unsigned char)j);
    uint64_t again = 0;
    for (uint32_t i = 0; i < N; i++) {
        uint32_t key = __builtin_bswap32(i);
        MDB_val k = { sizeof key, &key }, v;
        assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
        for (size_t j = 0; j < v.mv_size; j += 512) again += ((const unsigned char *)v.mv_data)[j];
    }
    assert_true(again == sum);
    mdb_txn_abort(txn);
    free(val);
    mdb_env_close(env);
}

static void test_sealing_keeps_answers(void **state)
{
    (void)state;
    store *st = open_store_n(0, 0, 1); /* one file to seal */
    const int64_t base = INT64_C(4102444800000); /* 2100-01-01: never closed by the wall clock */
    static char frames[640][64];
    static const char *f[640];
    static uint64_t counts[640];
    for (int i = 0; i < 640; i++) {
        snprintf(frames[i], sizeof frames[i], "main;svc::handler_%d;work_%d", i % 7, i);
        f[i] = frames[i];
        counts[i] = 1 + (uint64_t)(i % 5);
    }
    static const store_label labels[3][1] = { { { "instance", "s-1" } }, { { "instance", "s-2" } },
                                              { { "instance", "s-3" } } };
    unsigned seed = 99; /* counts that do not compress to nothing */
    for (int w = 0; w < 120; w++)
        for (int s = 0; s < 3; s++) {
            for (int i = 0; i < 640; i++) {
                seed = seed * 1103515245 + 12345;
                counts[i] = 1 + (seed >> 16) % 200;
            }
            assert_int_equal(write_stacks(st, labels[s], 1, base + w * 10000, f + (w + s) % 40, counts, 600, 0), STORE_OK);
        }
    char name[64], path[600], lock[640], seal[640];
    part_file_name(name, sizeof name, base, 0);
    snprintf(path, sizeof path, "%s/parts/%s", tmpdir, name);
    snprintf(lock, sizeof lock, "%s-lock", path);
    snprintf(seal, sizeof seal, "%s.seal", path);
    uint64_t raw_size = file_blocks(path);
    store_reader *early;
    assert_int_equal(store_reader_begin(st, &early), STORE_OK);
    digest_ctx before, after, old;
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    dump_reader(r, 3, &before);
    store_reader_end(r);
    assert_int_equal(before.profiles, 360);
    assert_int_equal(before.pairs, 360 * 600);
    uint64_t built = 0;
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
    assert_true(built > 0);
    /* packing alone leaves the file larger than the raw blocks were (LMDB
     * keeps their pages, free); sealed, it is smaller */
    assert_true(file_blocks(path) < raw_size);
    assert_int_equal(access(seal, F_OK), -1);
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    dump_reader(r, 3, &after);
    store_reader_end(r);
    assert_int_equal(after.profiles, 360);
    assert_int_equal(before.digest, after.digest);
    dump_reader(early, 3, &old); /* its snapshot starts now, on the old file */
    assert_int_equal(old.profiles, 360);
    assert_int_equal(before.digest, old.digest);
    store_reader_end(early);
    assert_int_equal(access(lock, F_OK), 0); /* the new environment's own lock file */
    /* late data lands in the sealed file and is packed there */
    assert_int_equal(write_stacks(st, labels[0], 1, base, f, counts, 3, 0), STORE_OK);
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    dump_reader(r, 3, &after);
    store_reader_end(r);
    assert_int_equal(after.profiles, 361);
    store_close(st);
    store_check_counts n;
    check_no_problems(&n);
    assert_int_equal(n.blocks, 361);
    st = open_store(0, 0);
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    dump_reader(r, 3, &old);
    store_reader_end(r);
    assert_int_equal(old.profiles, 361);
    assert_int_equal(old.digest, after.digest);
    store_close(st);
    /* what kill -9 can leave of a seal: a copy not renamed yet (a partial
     * .seal beside the whole file), and the lock file unlinked before the
     * rename; the next open removes the copy and reads the same */
    FILE *half = fopen(seal, "w");
    assert_non_null(half);
    fputs("a copy cut short", half);
    fclose(half);
    assert_int_equal(unlink(lock), 0);
    st = open_store(0, 0);
    assert_int_equal(access(seal, F_OK), -1);
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    dump_reader(r, 3, &old);
    store_reader_end(r);
    assert_int_equal(old.profiles, 361);
    assert_int_equal(old.digest, after.digest);
    store_close(st);
}

/* Not a flamedb directory: STORE_EINVAL, saying why; a flamedb-4 one is
 * not damage, only a note that it needs migration. */
static void test_check_other_directories(void **state)
{
    (void)state;
    findings fd = { .n = 0 };
    store_check_counts n;
    char err[256] = "", path[600];
    snprintf(path, sizeof path, "%s/missing", tmpdir);
    assert_int_equal(store_check(path, collect, &fd, &n, err, sizeof err), STORE_EINVAL);
    assert_err_contains(err, "is not a directory");
    assert_int_equal(store_check(tmpdir, collect, &fd, &n, err, sizeof err), STORE_EINVAL);
    assert_err_contains(err, "not a flamedb data directory");
    snprintf(path, sizeof path, "%s/data.mdb", tmpdir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(store_check(tmpdir, collect, &fd, &n, err, sizeof err), STORE_OK);
    assert_string_equal(n.format, "flamedb-4");
    assert_int_equal(n.needs_upgrade, 1);
    assert_int_equal(n.problems, 0);
    assert_found(&fd, "note data.mdb: ", "needs migration");
}

/* A reader's limits (issue 12, point 6): a pairs budget spent by scans,
 * a client that went away, a deadline; store_reader_stopped says which. */
static int say_gone(void *ctx)
{
    (*(int *)ctx)++;
    return 1;
}

static void test_reader_limits(void **state)
{
    (void)state;
    store *st = open_store(0, 0);
    const char *f[] = { "main;a", "main;b", "main;c" };
    uint64_t counts[] = { 1, 2, 3 };
    assert_int_equal(write_stacks(st, api_labels, 3, 10000, f, counts, 3, 0), STORE_OK);
    assert_int_equal(write_stacks(st, api_labels, 3, 20000, f, counts, 3, 0), STORE_OK);
    store_reader *r;
    int profiles = 0;
    /* no limits: six pairs handed out, never expired */
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    store_blocks_scan(r, 1, INT64_MIN, INT64_MAX, count_profiles, &profiles);
    assert_int_equal(profiles, 2);
    assert_int_equal(store_reader_pairs(r), 6);
    assert_false(store_reader_expired(r));
    assert_int_equal(store_reader_stopped(r), STORE_STOP_NONE);
    store_reader_end(r);
    /* a budget of 5: the scan hands every block out (scans never stop by
     * themselves), and the reader says the budget is spent */
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    store_reader_set_max_pairs(r, 5);
    assert_false(store_reader_expired(r));
    profiles = 0;
    store_blocks_scan(r, 1, INT64_MIN, 15000, count_profiles, &profiles);
    assert_false(store_reader_expired(r)); /* 3 of 5 */
    store_blocks_scan(r, 1, 15000, INT64_MAX, count_profiles, &profiles);
    assert_int_equal(profiles, 2);
    assert_true(store_reader_expired(r));
    assert_int_equal(store_reader_stopped(r), STORE_STOP_PAIRS);
    assert_int_equal(store_reader_max_pairs(r), 5);
    store_reader_end(r);
    /* a client gone: asked on the first check, and the reason sticks */
    int asked = 0;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    store_reader_set_cancel(r, say_gone, &asked);
    assert_true(store_reader_expired(r));
    assert_int_equal(asked, 1);
    assert_int_equal(store_reader_stopped(r), STORE_STOP_GONE);
    assert_true(store_reader_expired(r));
    assert_int_equal(asked, 1); /* stopped: not asked again */
    store_reader_end(r);
    /* a deadline already past wins over a client that is there */
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    store_reader_set_deadline(r, store_mono_ms() - 1);
    assert_true(store_reader_expired(r));
    assert_int_equal(store_reader_stopped(r), STORE_STOP_DEADLINE);
    store_reader_end(r);
    store_close(st);
}

/* ---- segment versions (storage/segment.c) ---- */

typedef struct { store_reader *r; uint64_t *acc, *touched, sum; uint32_t n; } merge_ctx;

static int merge_block(const store_block *b, void *arg)
{
    merge_ctx *m = arg;
    if (!m->acc) {
        m->n = store_part_nodes(m->r, b->part);
        m->acc = calloc(m->n, sizeof *m->acc);
        m->touched = calloc(m->n / 64 + 1, sizeof *m->touched);
    }
    uint64_t sum;
    assert_int_equal(store_block_accumulate(m->r, b, 1, m->acc, m->touched, &sum), STORE_OK);
    m->sum += sum;
    return 0;
}

/* A series' merge: counts by node id (one partition) and their total. */
static void merge_series(store *st, uint32_t sid, merge_ctx *m)
{
    memset(m, 0, sizeof *m);
    assert_int_equal(store_reader_begin(st, &m->r), STORE_OK);
    store_blocks_scan(m->r, sid, INT64_MIN, INT64_MAX, merge_block, m);
    store_reader_end(m->r);
    assert_non_null(m->acc);
}

static store *open_dir(const char *dir)
{
    store *st;
    char err[256];
    store_options opt = { .dir = dir, .writers = 1 };
    if (store_open(&st, &opt, err, sizeof err)) fail_msg("store_open: %s", err);
    return st;
}

/* The segment of series sid at bucket in dir's partition of t: copied
 * into *val (malloc'd); answers its length. */
static size_t read_segment(const char *dir, int64_t t, uint32_t sid, int64_t bucket, unsigned char **val)
{
    char name[64], path[600], err[256];
    part_file_name(name, sizeof name, t - t % 86400000, 0);
    snprintf(path, sizeof path, "%s/parts/%s", dir, name);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi segs;
    assert_int_equal(env_open(&env, path, UINT64_C(1) << 30, 1, 0, NULL, err, sizeof err), STORE_OK);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "segments", 0, &segs), 0);
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, bucket, 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, v;
    assert_int_equal(mdb_get(txn, segs, &k, &v), 0);
    *val = malloc(v.mv_size);
    memcpy(*val, v.mv_data, v.mv_size);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return v.mv_size;
}

/* The flags byte of chunk 0 of a dictionary (pdict.h, format 2). */
static int first_chunk_flags(const char *dir, int64_t t, const char *db)
{
    char name[64], path[600], err[256];
    part_file_name(name, sizeof name, t - t % 86400000, 0);
    snprintf(path, sizeof path, "%s/parts/%s", dir, name);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    assert_int_equal(env_open(&env, path, UINT64_C(1) << 30, 1, 0, NULL, err, sizeof err), STORE_OK);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, db, MDB_INTEGERKEY, &dbi), 0);
    uint32_t c = 0;
    MDB_val k = { 4, &c }, v;
    assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
    int flags = ((const unsigned char *)v.mv_data)[0];
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return flags;
}

static void write_segment(const char *dir, int64_t t, uint32_t sid, int64_t bucket, const unsigned char *val,
                          size_t len)
{
    char name[64], path[600], err[256];
    part_file_name(name, sizeof name, t - t % 86400000, 0);
    snprintf(path, sizeof path, "%s/parts/%s", dir, name);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi segs;
    assert_int_equal(env_open(&env, path, UINT64_C(1) << 30, 1, 0, NULL, err, sizeof err), STORE_OK);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "segments", 0, &segs), 0);
    unsigned char key[BLOCK_KEY_LEN];
    block_key(key, sid, bucket, 0);
    MDB_val k = { BLOCK_KEY_LEN, key }, v = { len, (void *)val };
    assert_int_equal(mdb_put(txn, segs, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

static void write_versions_profiles(store *st, int64_t t0, int first, int last)
{
    enum { STACKS = 300 };
    static char text[STACKS][64];
    const char *f[STACKS];
    uint64_t counts[STACKS];
    for (int i = 0; i < STACKS; i++) {
        snprintf(text[i], sizeof text[i], "main;mod%d;fn%d;leaf%d", i % 7, i % 31, i);
        f[i] = text[i];
    }
    for (int p = first; p < last; p++) {
        for (int i = 0; i < STACKS; i++) counts[i] = 1 + (uint64_t)((i * 7 + p) % 5);
        /* each profile its own subset: a shifting window of the stacks */
        assert_int_equal(write_stacks(st, api_labels, 3, t0 + p * 10000, f + p * 10, counts, STACKS - 20 * 10, 100),
                         STORE_OK);
    }
}

/* Segments of version 1 (each profile's payload compressed apart, the
 * previous format) are still read: the same profiles packed as version 1
 * and as version 2 answer the same through the reader (decode and
 * accumulate) and check finds both sound; late data packs a version-1
 * bucket again, as version 2, and the answers stay equal; in version 2 a
 * payload that does not start where the one before it ended, behind a
 * right checksum, is found by check. */
static void test_segment_versions(void **state)
{
    (void)state;
    const int64_t t0 = INT64_C(1793570400000); /* 2026-11-01T22:00:00Z, a bucket's start */
    char dir[2][300];
    dump_ctx d[2];
    merge_ctx m[2];
    for (int v = 0; v < 2; v++) {
        seg_set_write_version(v + 1);
        snprintf(dir[v], sizeof dir[v], "%s/v%d", tmpdir, v + 1);
        assert_int_equal(mkdir(dir[v], 0700), 0);
        store *st = open_dir(dir[v]);
        write_versions_profiles(st, t0, 0, 12);
        uint64_t built = 0;
        assert_int_equal(store_compact_run(st, t0 + 2 * 86400000, &built), STORE_OK);
        dump_series(st, 1, &d[v]);
        merge_series(st, 1, &m[v]);
        store_close(st);
        unsigned char *val;
        size_t len = read_segment(dir[v], t0, 1, t0, &val);
        assert_int_equal(val[0], v + 1); /* the version written */
        /* the partition's time is over: compaction compressed its open
         * dictionary chunks (pdict_finish) */
        assert_int_equal(first_chunk_flags(dir[v], t0, "nodes"), 1);
        assert_int_equal(first_chunk_flags(dir[v], t0, "strings"), 1);
        uint32_t n = 0;
        assert_int_equal(seg_count(val, len, &n), 0);
        assert_int_equal(n, 12);
        free(val);
        findings fd = { .n = 0 };
        store_check_counts cn;
        char err[256];
        assert_int_equal(store_check(dir[v], collect, &fd, &cn, err, sizeof err), STORE_OK);
        for (int i = 0; i < fd.n; i++) print_message("  finding: %s\n", fd.line[i]);
        assert_int_equal(cn.problems, 0);
        assert_int_equal(cn.blocks, 12);
    }
    seg_set_write_version(2);
    assert_int_equal(d[0].profiles, 12);
    assert_int_equal(d[0].profiles, d[1].profiles);
    assert_int_equal(d[0].samples, d[1].samples);
    assert_string_equal(d[0].out, d[1].out);
    assert_int_equal(m[0].n, m[1].n);
    assert_true(m[0].sum > 0);
    assert_int_equal(m[0].sum, m[1].sum);
    assert_memory_equal(m[0].acc, m[1].acc, m[0].n * sizeof *m[0].acc);
    for (int v = 0; v < 2; v++) free(m[v].acc), free(m[v].touched);

    /* late data in the bucket, into both: the version-1 one is packed again, as version 2 */
    for (int v = 0; v < 2; v++) {
        store *st = open_dir(dir[v]);
        write_versions_profiles(st, t0, 12, 14);
        uint64_t built = 0;
        assert_int_equal(store_compact_run(st, t0 + 2 * 86400000, &built), STORE_OK);
        dump_series(st, 1, &d[v]);
        merge_series(st, 1, &m[v]);
        store_close(st);
        unsigned char *val;
        read_segment(dir[v], t0, 1, t0, &val);
        assert_int_equal(val[0], 2);
        free(val);
    }
    assert_int_equal(d[0].profiles, 14);
    assert_string_equal(d[0].out, d[1].out);
    assert_int_equal(m[0].sum, m[1].sum);
    assert_memory_equal(m[0].acc, m[1].acc, m[0].n * sizeof *m[0].acc);
    for (int v = 0; v < 2; v++) free(m[v].acc), free(m[v].touched);

    /* the first profile's payload offset (its entry's last byte, 0) made
     * 1, the checksum made right again */
    unsigned char *val;
    size_t len = read_segment(dir[1], t0, 1, t0, &val);
    seg_walk w;
    seg_item it;
    assert_int_equal(seg_walk_begin(&w, val, len, t0), 0);
    assert_int_equal(seg_walk_next(&w, &it), 1);
    unsigned char *last = (unsigned char *)it.data + it.data_len - 1;
    assert_int_equal(*last, 0);
    *last = 1;
    uint32_t sum = (uint32_t)hash_bytes(val + 6, len - 6, ((uint64_t)val[0] << 8) | val[1] | UINT64_C(0x5e60000));
    for (int i = 0; i < 4; i++) val[2 + i] = (unsigned char)(sum >> (8 * i));
    assert_int_equal(seg_verify(val, len), 0);
    write_segment(dir[1], t0, 1, t0, val, len);
    free(val);
    findings fd = { .n = 0 };
    store_check_counts cn;
    char err[256];
    assert_int_equal(store_check(dir[1], collect, &fd, &cn, err, sizeof err), STORE_OK);
    for (int i = 0; i < fd.n; i++) print_message("  finding: %s\n", fd.line[i]);
    assert_found(&fd, "segment series 1 bucket 2026-11-01T22:00:00Z",
                 "profile 0: its payload starts at byte 1 of the area, not 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_roundtrip),
        cmocka_unit_test(test_raw_blocks_compressed_past_a_leaf),
        cmocka_unit_test(test_block_keys_sort_by_series_then_time),
        cmocka_unit_test_setup_teardown(test_lossless_roundtrip_and_reopen, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_same_start_is_kept_apart, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_labels_and_postings, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_series_last_and_first, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_map_full_rolls_back, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_retention_deletes_old_profiles, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_retention_over_segments, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_invalid_profiles_refused, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_resolve_and_async_write, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_write_text_when_leaves_are_stale, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_dictionary_chunks_survive_reopen, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_node_chunks_grow_across_commits, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_prepared_blocks_and_stale_leaves, make_tmp, remove_tmp),
        cmocka_unit_test(test_block_verify),
        cmocka_unit_test_setup_teardown(test_commit_wait_groups_a_stream, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_write_all_or_none, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_commit_wait_spares_a_closed_loop, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_commit_wait_never_holds_one_origin, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_check_finds_damage, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_sealing_keeps_answers, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_env_map_release, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_writer_mapped_pages_bounded, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_late_data_waits, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_check_other_directories, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_reader_limits, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_segment_versions, make_tmp, remove_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
