/* test_store_expire.c — series expire with their last partition (issue 9):
 * once retention has dropped every partition holding a series' profiles,
 * the series leaves the catalog with its postings and the label strings no
 * other series uses; a series still in a partition stays; a series pushed
 * again comes back with a new id (ids are never reused, across a reopen
 * too); the catalog comes back to within 10 % of a store that only ever
 * held the live series, in memory and on disk; `flamedb check` passes.
 * Every case runs with one writer and with three (TEST_STORE_WRITERS adds
 * its own number).  Data lives in 2030, ahead of the wall clock, so the
 * store's own background retention never touches it: the tests run
 * retention with their own `now`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#include "testutil.h"
#include "../../storage/store.h"

#define HOUR INT64_C(3600000)
#define T0 INT64_C(1893456000000) /* 2030-01-01T00:00:00Z */

static char tmpdir[256], freshdir[300];

static int make_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/flamedb-test-expire-XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    snprintf(freshdir, sizeof freshdir, "%s/fresh", tmpdir);
    return 0;
}

static int remove_tmp(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd);
}

static store *open_at(const char *dir, int writers)
{
    store *st;
    char err[256];
    store_options opt = { .dir = dir, .retention_ms = 2 * HOUR, .partition_ms = HOUR, .writers = writers };
    if (store_open(&st, &opt, err, sizeof err)) fail_msg("store_open %s: %s", dir, err);
    return st;
}

/* The writer counts every case runs with. */
static int writer_counts(int *out)
{
    const char *w = getenv("TEST_STORE_WRITERS");
    int n = 0;
    out[n++] = 1;
    out[n++] = 3;
    if (w && atoi(w) > 0 && atoi(w) != 1 && atoi(w) != 3) out[n++] = atoi(w);
    return n;
}

/* Writes one small profile of a series given as "name=value,..." (sorted
 * by name); answers its id. */
static uint32_t push(store *st, const char *spec, int64_t from)
{
    char buf[512], *save = NULL;
    store_label labels[16];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *tok = strtok_r(buf, ",", &save); tok && n < 16; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = '\0';
        labels[n++] = (store_label){ tok, eq + 1 };
    }
    store_stack stacks[2] = { { "main;work", 9, 3 }, { "main;idle", 9, 1 } };
    store_profile p = { .labels = labels, .n_labels = n, .from_ms = from, .until_ms = from + 10000, .rate = 100,
                        .unit = "samples", .stacks = stacks, .n_stacks = 2 };
    char err[256];
    uint32_t sid = 0;
    if (store_write(st, &p, &sid, err, sizeof err)) fail_msg("store_write %s: %s", spec, err);
    assert_true(sid > 0);
    return sid;
}

static store_stats stats_of(store *st)
{
    store_stats s;
    store_get_stats(st, &s);
    return s;
}

/* The ids carrying name=value, as "1,5" ("" when none). */
static void postings(store *st, const char *name, const char *value, char *out, size_t cap)
{
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    uint32_t *ids;
    size_t n;
    assert_int_equal(store_postings(r, name, value, &ids, &n), STORE_OK);
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) len += (size_t)snprintf(out + len, cap - len, "%s%u", i ? "," : "", ids[i]);
    free(ids);
    store_reader_end(r);
}

/* Every series the reader walks (store_series_next), with its labels:
 * "id:name=value,...;" */
static void listing(store *st, char *out, size_t cap)
{
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    size_t len = 0;
    out[0] = '\0';
    uint32_t count = 0;
    for (uint32_t sid = store_series_next(r, 0); sid; sid = store_series_next(r, sid)) {
        store_label l[16];
        int nl = store_series_labels(r, sid, l, 16);
        assert_true(nl > 0);
        len += (size_t)snprintf(out + len, cap - len, "%u:", sid);
        for (int i = 0; i < nl; i++)
            len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", i ? "," : "", l[i].name, l[i].value);
        len += (size_t)snprintf(out + len, cap - len, ";");
        count++;
        assert_true(sid <= store_series_max(r));
    }
    assert_int_equal(count, store_series_count(r));
    store_reader_end(r);
}

static uint64_t file_size(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    return stat(path, &sb) ? 0 : (uint64_t)sb.st_size;
}

static void check_sound(const char *dir, uint64_t want_series)
{
    store_check_counts n;
    char err[256] = "";
    assert_int_equal(store_check(dir, NULL, NULL, &n, err, sizeof err), STORE_OK);
    assert_int_equal(n.problems, 0);
    assert_int_equal(n.series, want_series);
}

static void expire_case(int writers)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s/data %s", tmpdir, freshdir);
    assert_int_equal(system(cmd), 0);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/data", tmpdir);
    store *st = open_at(dir, writers);
    /* hour 0: every series; hour 1: e only; hour 3: c and s (live) */
    uint32_t s = push(st, "instance=i-1,service=shop,type=cpu", T0);
    uint32_t c = push(st, "pid=3,service=shop,type=cpu", T0 + 60000);
    uint32_t a = push(st, "pid=1,service=shop,type=cpu", T0 + 120000);
    uint32_t b = push(st, "pid=2,service=shop,type=cpu", T0 + 600000);
    assert_true(b > a);
    uint32_t e = push(st, "pid=5,service=shop,type=cpu", T0 + HOUR + 600000);
    uint32_t d = push(st, "build=old-build,pid=4,service=shop,type=cpu", T0 + 900000);
    assert_int_equal(push(st, "pid=3,service=shop,type=cpu", T0 + 3 * HOUR), c);
    assert_int_equal(push(st, "instance=i-1,service=shop,type=cpu", T0 + 3 * HOUR + 5000), s);
    store_stats before = stats_of(st);
    assert_int_equal(before.series, 6);
    char got[1024], want[1024];
    postings(st, "pid", "1", got, sizeof got);
    snprintf(want, sizeof want, "%u", a);
    assert_string_equal(got, want);

    /* now = hour 3:30, cutoff 1:30: hour 0 goes whole; hour 1 straddles
     * (e's profile goes, its partition stays: e stays) */
    uint64_t deleted = 0;
    assert_int_equal(store_retention_run(st, T0 + 3 * HOUR + 1800000, &deleted), STORE_OK);
    store_stats after = stats_of(st);
    assert_int_equal(after.series, 3);
    assert_int_equal(after.series_expired, 3);
    assert_true(after.catalog_memory < before.catalog_memory);
    listing(st, got, sizeof got);
    snprintf(want, sizeof want, "%u:instance=i-1,service=shop,type=cpu;%u:pid=3,service=shop,type=cpu;"
             "%u:pid=5,service=shop,type=cpu;", s, c, e);
    assert_string_equal(got, want);
    postings(st, "pid", "1", got, sizeof got);
    assert_string_equal(got, "");
    postings(st, "build", "old-build", got, sizeof got);
    assert_string_equal(got, "");
    postings(st, "service", "shop", got, sizeof got);
    snprintf(want, sizeof want, "%u,%u,%u", s, c, e);
    assert_string_equal(got, want);
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    store_label l[8];
    assert_int_equal(store_series_labels(r, a, l, 8), 0);
    assert_null(store_series_label(r, d, "build"));
    assert_string_equal(store_series_label(r, c, "pid"), "3");
    store_reader_end(r);

    /* hour 1 goes too (now 4:30): e expires; the hour-3 series stay */
    assert_int_equal(store_retention_run(st, T0 + 4 * HOUR + 1800000, &deleted), STORE_OK);
    assert_int_equal(stats_of(st).series, 2);
    assert_int_equal(stats_of(st).series_expired, 4);

    /* Within 10 % of a store that only ever held the live series. */
    store *fresh = open_at(freshdir, writers);
    push(fresh, "pid=3,service=shop,type=cpu", T0 + 3 * HOUR);
    push(fresh, "instance=i-1,service=shop,type=cpu", T0 + 3 * HOUR + 5000);
    uint64_t fresh_mem = stats_of(fresh).catalog_memory, mem = stats_of(st).catalog_memory;
    assert_true(mem * 100 <= fresh_mem * 110);
    store_close(fresh);

    /* A series pushed again comes back as new; ids are never reused. */
    uint32_t a2 = push(st, "pid=1,service=shop,type=cpu", T0 + 3 * HOUR + 10000);
    assert_true(a2 > d && a2 > e);
    postings(st, "pid", "1", got, sizeof got);
    snprintf(want, sizeof want, "%u", a2);
    assert_string_equal(got, want);
    assert_int_equal(stats_of(st).series, 3);

    /* a reader that began before an expiry keeps what it saw */
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    assert_int_equal(store_retention_run(st, T0 + 7 * HOUR, &deleted), STORE_OK); /* everything goes */
    assert_int_equal(stats_of(st).series, 0);
    assert_string_equal(store_series_label(r, a2, "pid"), "1");
    assert_int_equal(store_series_count(r), 3);
    store_reader_end(r);

    /* across a reopen: the highest id expired, the next is still above it */
    uint32_t f = push(st, "pid=6,service=shop,type=cpu", T0 + 7 * HOUR);
    store_close(st);
    check_sound(dir, 1);
    st = open_at(dir, writers);
    assert_int_equal(stats_of(st).series, 1);
    uint32_t g = push(st, "pid=7,service=shop,type=cpu", T0 + 7 * HOUR + 1000);
    assert_true(g > f);
    assert_int_equal(push(st, "pid=6,service=shop,type=cpu", T0 + 7 * HOUR + 2000), f);
    store_close(st);
    check_sound(dir, 2);
}

static void test_series_expire_with_their_partitions(void **state)
{
    (void)state;
    int w[3], n = writer_counts(w);
    for (int i = 0; i < n; i++) expire_case(w[i]);
}

/* Many short-lived series with long labels, a few live ones: memory and
 * catalog.mdb come back to within 10 % of a store of the live ones only
 * (the file is copied without its free pages). */
static void size_case(int writers)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s/data %s", tmpdir, freshdir);
    assert_int_equal(system(cmd), 0);
    char dir[300], spec[300];
    snprintf(dir, sizeof dir, "%s/data", tmpdir);
    store *st = open_at(dir, writers);
    char pad[121];
    memset(pad, 'x', 120);
    pad[120] = '\0';
    for (int i = 0; i < 3000; i++) {
        snprintf(spec, sizeof spec, "build=b-%s-%d,pid=%d,service=churn,type=cpu", pad, i / 10, 1000 + i);
        push(st, spec, T0 + (int64_t)(i % 300) * 10000);
    }
    for (int i = 0; i < 10; i++) {
        snprintf(spec, sizeof spec, "instance=i-%d,service=churn,type=cpu", i);
        push(st, spec, T0 + 3 * HOUR + i * 1000);
    }
    store_stats before = stats_of(st);
    uint64_t file_before = file_size(dir, "catalog.mdb");
    uint64_t deleted;
    assert_int_equal(store_retention_run(st, T0 + 3 * HOUR + 1800000, &deleted), STORE_OK);
    store_stats after = stats_of(st);
    assert_int_equal(before.series, 3010);
    assert_int_equal(after.series, 10);
    assert_int_equal(after.series_expired, 3000);
    uint64_t file_after = file_size(dir, "catalog.mdb");

    store *fresh = open_at(freshdir, writers);
    for (int i = 0; i < 10; i++) {
        snprintf(spec, sizeof spec, "instance=i-%d,service=churn,type=cpu", i);
        push(fresh, spec, T0 + 3 * HOUR + i * 1000);
    }
    uint64_t fresh_mem = stats_of(fresh).catalog_memory;
    store_close(fresh);
    uint64_t fresh_file = file_size(freshdir, "catalog.mdb");
    assert_true(after.catalog_memory * 4 < before.catalog_memory);
    assert_true(after.catalog_memory * 100 <= fresh_mem * 110);
    assert_true(file_after * 4 < file_before);
    assert_true(file_after * 100 <= fresh_file * 110);
    /* the copy is a working catalog: new series, a reopen, the check */
    push(st, "instance=i-99,service=churn,type=cpu", T0 + 3 * HOUR + 20000);
    store_close(st);
    check_sound(dir, 11);
    st = open_at(dir, writers);
    char got[2048];
    postings(st, "service", "churn", got, sizeof got);
    assert_int_equal(stats_of(st).series, 11);
    assert_int_equal((int)(strchr(got, ',') != NULL), 1);
    postings(st, "pid", "1000", got, sizeof got);
    assert_string_equal(got, "");
    store_close(st);
}

static void test_catalog_size_follows_live_series(void **state)
{
    (void)state;
    int w[3], n = writer_counts(w);
    for (int i = 0; i < n; i++) size_case(w[i]);
}

/* A catalog written before series expired has no "last": its series get
 * the newest partition's start at open, so they expire once every
 * partition present then has gone, not before. */
static void test_catalog_without_last(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/data", tmpdir);
    store *st = open_at(dir, 1);
    uint32_t old = push(st, "pid=1,service=shop,type=cpu", T0);
    push(st, "pid=2,service=shop,type=cpu", T0 + 2 * HOUR);
    store_close(st);
    /* forget "last", as an older flamedb wrote the catalog */
    char path[400];
    snprintf(path, sizeof path, "%s/catalog.mdb", dir);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
    assert_int_equal(mdb_env_open(env, path, MDB_NOSUBDIR, 0644), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "last", 0, &dbi), 0);
    assert_int_equal(mdb_drop(txn, dbi, 1), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    check_sound(dir, 2);

    st = open_at(dir, 1);
    uint64_t deleted;
    /* hour 0 goes (cutoff 1:00): pid=1 is taken to be in hour 2, stays */
    assert_int_equal(store_retention_run(st, T0 + 3 * HOUR, &deleted), STORE_OK);
    assert_int_equal(stats_of(st).series, 2);
    assert_int_equal(stats_of(st).series_expired, 0);
    char got[256], want[64];
    postings(st, "pid", "1", got, sizeof got);
    snprintf(want, sizeof want, "%u", old);
    assert_string_equal(got, want);
    /* hour 2 goes: both expire */
    assert_int_equal(store_retention_run(st, T0 + 5 * HOUR, &deleted), STORE_OK);
    assert_int_equal(stats_of(st).series, 0);
    store_close(st);
    check_sound(dir, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_series_expire_with_their_partitions, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_catalog_size_follows_live_series, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_catalog_without_last, make_tmp, remove_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
