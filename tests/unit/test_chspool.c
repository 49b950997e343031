/* test_chspool.c — the cluster front end's spool (cluster/chspool.c) and
 * its rows (cluster/chencode.c), without ClickHouse: records come back as
 * written, in order, across seals and a reopen; a torn tail (a crash
 * during a write that was never acknowledged) is left out and the records
 * before it kept; the limit answers CHSPOOL_EFULL; concurrent appends all
 * come back once; a profile's rows split back into its five tables and
 * read as the schema's columns. */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "../../cluster/chencode.h"
#include "../../cluster/chspool.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/flamedb-test-chspool.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return test_run("rm -rf '%s'", dir);
}

/* Every record of every sealed file, oldest first, joined by '|' (only
 * the oldest file unless remove); answers the bytes left out as torn. */
static size_t read_all(chspool *s, char *out, size_t cap, int remove)
{
    size_t torn_all = 0;
    out[0] = 0;
    uint64_t seq, last = 0;
    char err[256];
    int first = 1;
    while (chspool_oldest(s, &seq)) {
        assert_true(first || seq > last);
        char *data;
        size_t len, torn, off = 0, rl;
        const char *rec;
        assert_int_equal(chspool_read(s, seq, &data, &len, &torn, err, sizeof err), CHSPOOL_OK);
        torn_all += torn;
        while (chspool_next(data, len, &off, &rec, &rl)) {
            size_t n = strlen(out);
            snprintf(out + n, cap - n, "%s%.*s", first ? "" : "|", (int)rl, rec);
            first = 0;
        }
        free(data);
        last = seq;
        if (!remove) break;
        assert_int_equal(chspool_remove(s, seq, err, sizeof err), CHSPOOL_OK);
    }
    return torn_all;
}

static void records_in_order_across_seals_and_reopen(void **state)
{
    (void)state;
    chspool *s;
    char err[256], got[4096];
    assert_int_equal(chspool_open(&s, dir, 0, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, "one", 3, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, "two", 3, err, sizeof err), CHSPOOL_OK);
    uint64_t seq;
    assert_int_equal(chspool_oldest(s, &seq), 0);           /* nothing sealed yet */
    assert_int_equal(chspool_seal(s, 3600000), 0);          /* too young */
    assert_int_equal(chspool_seal(s, 0), 1);
    assert_int_equal(chspool_seal(s, 0), 0);                /* nothing open */
    assert_int_equal(chspool_append(s, "three", 5, err, sizeof err), CHSPOOL_OK);
    chspool_stats st;
    chspool_stats_get(s, &st);
    assert_int_equal(st.files, 2);
    assert_int_equal(st.appends, 3);
    assert_int_equal(st.bytes, 3 * 12 + 11);
    assert_true(st.fsyncs >= 1 && st.fsyncs <= 4);
    chspool_close(s);                                       /* "three" stays, unsealed */
    assert_int_equal(chspool_open(&s, dir, 0, err, sizeof err), CHSPOOL_OK);
    chspool_stats_get(s, &st);
    assert_int_equal(st.files, 2);                          /* both sealed now */
    assert_int_equal(st.bytes, 3 * 12 + 11);
    assert_int_equal(read_all(s, got, sizeof got, 1), 0);
    assert_string_equal(got, "one|two|three");
    chspool_stats_get(s, &st);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(st.files, 0);
    chspool_close(s);
    assert_int_equal(test_run("[ -z \"$(ls '%s')\" ]", dir), 0);
}

static void torn_tail_left_out(void **state)
{
    (void)state;
    chspool *s;
    char err[256], got[4096];
    assert_int_equal(chspool_open(&s, dir, 0, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, "kept-1", 6, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, "kept-2", 6, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, "torn-3", 6, err, sizeof err), CHSPOOL_OK);
    chspool_close(s);
    /* the last record cut in the middle, as by a crash during its write */
    assert_int_equal(test_run("f=$(ls '%s'/*.spool); truncate -s -3 \"$f\"", dir), 0);
    assert_int_equal(chspool_open(&s, dir, 0, err, sizeof err), CHSPOOL_OK);
    uint64_t seq;
    assert_int_equal(chspool_oldest(s, &seq), 1);
    char *data;
    size_t len, torn, off = 0, rl;
    const char *rec;
    assert_int_equal(chspool_read(s, seq, &data, &len, &torn, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(torn, 12 + 6 - 3);
    int n = 0;
    while (chspool_next(data, len, &off, &rec, &rl)) n++;
    assert_int_equal(n, 2);
    free(data);
    /* a flipped byte fails its checksum the same way */
    assert_int_equal(chspool_remove(s, seq, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, "good", 4, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, "flip", 4, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_seal(s, 0), 1);
    chspool_close(s);
    assert_int_equal(test_run("f=$(ls '%s'/*.spool); printf X | dd of=\"$f\" bs=1 seek=30 conv=notrunc 2>/dev/null", dir), 0);
    assert_int_equal(chspool_open(&s, dir, 0, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(read_all(s, got, sizeof got, 0), 12 + 4);   /* "flip" and what follows */
    assert_string_equal(got, "good");
    chspool_close(s);
}

static void files_sealed_at_32_mib(void **state)
{
    (void)state;
    chspool *s;
    char err[256];
    size_t mib = 1u << 20;
    char *rec = malloc(mib);
    assert_non_null(rec);
    memset(rec, 'y', mib);
    assert_int_equal(chspool_open(&s, dir, 0, err, sizeof err), CHSPOOL_OK);
    for (int i = 0; i < 70; i++) assert_int_equal(chspool_append(s, rec, mib, err, sizeof err), CHSPOOL_OK);
    /* never chspool_seal'd: the appends closed a file at each 32 MiB */
    chspool_stats st;
    chspool_stats_get(s, &st);
    assert_int_equal(st.files, 3);
    uint64_t seq;
    int sealed = 0;
    while (chspool_oldest(s, &seq)) {
        char *data;
        size_t len, torn, off = 0, rl;
        const char *r;
        assert_int_equal(chspool_read(s, seq, &data, &len, &torn, err, sizeof err), CHSPOOL_OK);
        assert_true(len >= (32u << 20) && len < (34u << 20));
        while (chspool_next(data, len, &off, &r, &rl)) {}
        free(data);
        assert_int_equal(chspool_remove(s, seq, err, sizeof err), CHSPOOL_OK);
        sealed++;
    }
    assert_int_equal(sealed, 2);
    chspool_close(s);
    free(rec);
}

static void limit_answers_full(void **state)
{
    (void)state;
    chspool *s;
    char err[256], rec[100];
    memset(rec, 'x', sizeof rec);
    assert_int_equal(chspool_open(&s, dir, 3 * (12 + 100), err, sizeof err), CHSPOOL_OK);
    for (int i = 0; i < 3; i++) assert_int_equal(chspool_append(s, rec, sizeof rec, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, rec, sizeof rec, err, sizeof err), CHSPOOL_EFULL);
    assert_err_contains(err, "--spool-max");
    /* what is flushed makes room again */
    uint64_t seq;
    assert_int_equal(chspool_seal(s, 0), 1);
    assert_int_equal(chspool_oldest(s, &seq), 1);
    assert_int_equal(chspool_remove(s, seq, err, sizeof err), CHSPOOL_OK);
    assert_int_equal(chspool_append(s, rec, sizeof rec, err, sizeof err), CHSPOOL_OK);
    chspool_close(s);
}

typedef struct {
    chspool *s;
    int id;
} writer_arg;

static void *writer(void *arg)
{
    writer_arg *w = arg;
    char rec[32], err[256];
    for (int i = 0; i < 200; i++) {
        int n = snprintf(rec, sizeof rec, "w%d-%03d", w->id, i);
        if (chspool_append(w->s, rec, (size_t)n, err, sizeof err) != CHSPOOL_OK) return (void *)1;
        if (i % 50 == 49) chspool_seal(w->s, 0);
    }
    return NULL;
}

static void concurrent_appends_each_once(void **state)
{
    (void)state;
    chspool *s;
    char err[256];
    assert_int_equal(chspool_open(&s, dir, 0, err, sizeof err), CHSPOOL_OK);
    pthread_t t[4];
    writer_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (writer_arg){ s, i };
        assert_int_equal(pthread_create(&t[i], NULL, writer, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        assert_null(rc);
    }
    chspool_seal(s, 0);
    chspool_stats st;
    chspool_stats_get(s, &st);
    assert_int_equal(st.appends, 800);
    /* at most one fsync an append (fewer when one covers others' records),
     * plus one a seal that found records: 4 writers x 4 seals, then ours.
     * A slow run (the sanitizers) groups nothing and reaches the bound. */
    assert_true(st.fsyncs <= 800 + 4 * 4 + 1);
    /* every record once, each writer's in its own order */
    int seen[4][200] = { { 0 } }, next[4] = { 0 };
    uint64_t seq;
    while (chspool_oldest(s, &seq)) {
        char *data;
        size_t len, torn, off = 0, rl;
        const char *rec;
        assert_int_equal(chspool_read(s, seq, &data, &len, &torn, err, sizeof err), CHSPOOL_OK);
        while (chspool_next(data, len, &off, &rec, &rl)) {
            int w, i;
            assert_int_equal(sscanf(rec, "w%d-%3d", &w, &i), 2);
            assert_int_equal(i, next[w]);
            next[w]++;
            seen[w][i]++;
        }
        free(data);
        assert_int_equal(chspool_remove(s, seq, err, sizeof err), CHSPOOL_OK);
    }
    for (int w = 0; w < 4; w++)
        for (int i = 0; i < 200; i++) assert_int_equal(seen[w][i], 1);
    chspool_close(s);
}

static void profile_rows_split_into_tables(void **state)
{
    (void)state;
    store_label labels[] = { { "service", "api" }, { "type", "cpu" } };
    store_stack stacks[] = { { "main;a", 6, 5 }, { "main;b", 6, 7 } };
    store_profile p = { .labels = labels, .n_labels = 2, .from_ms = 1000, .until_ms = 11000, .rate = 100,
                        .unit = "samples", .stacks = stacks, .n_stacks = 2,
                        .samples_kind = STORE_SAMPLES_COUNTS };
    chencode_batch b;
    chencode_batch_init(&b);
    assert_int_equal(chencode_profile(&b, "t1", &p, 42, 77), 0);
    chrow_buf rec;
    chrow_buf_init(&rec);
    assert_int_equal(chencode_record(&b, &rec), 0);
    const uint8_t *part[CHT_N];
    size_t plen[CHT_N];
    assert_int_equal(chencode_record_tables(rec.data, rec.len, part, plen), 0);
    assert_int_equal(chencode_record_tables(rec.data, rec.len - 1, part, plen), -1);
    /* samples: tenant, series, window_start, window_ms, unit, rate, gauge, stack, value */
    chrow_reader r;
    chrow_reader_init(&r, part[CHT_SAMPLES], plen[CHT_SAMPLES]);
    uint64_t total = 0, series = chencode_series_id(labels, 2);
    for (int i = 0; i < 2; i++) {
        const char *s;
        size_t n;
        assert_int_equal(chrow_get_string(&r, &s, &n), 0);
        assert_int_equal(n, 2);
        assert_memory_equal(s, "t1", 2);
        assert_true(chrow_get_u64(&r) == series);
        assert_int_equal(chrow_get_i64(&r), 1000);
        assert_int_equal(chrow_get_u32(&r), 10000);
        assert_int_equal(chrow_get_string(&r, &s, &n), 0);
        assert_memory_equal(s, "samples", 7);
        assert_true(chrow_get_f64(&r) == 100);
        assert_int_equal(chrow_get_u8(&r), 0);
        uint8_t id[16];
        chencode_stack_id(stacks[i].frames, stacks[i].len, id);
        assert_memory_equal(chrow_get_fixed(&r, 16), id, 16);
        total += chrow_get_u64(&r);
        assert_int_equal(chrow_get_u64(&r), 77);   /* the batch */
    }
    assert_false(chrow_more(&r));
    assert_int_equal(total, 12);
    /* profiles: ..., samples 12 (the counts), known, 2 stacks, total 12 */
    chrow_reader_init(&r, part[CHT_PROFILES], plen[CHT_PROFILES]);
    const char *s;
    size_t n;
    chrow_get_string(&r, &s, &n);
    chrow_get_u64(&r);
    chrow_get_i64(&r);
    chrow_get_u32(&r);
    chrow_get_string(&r, &s, &n);
    chrow_get_f64(&r);
    chrow_get_u8(&r);
    assert_int_equal(chrow_get_u64(&r), 12);
    assert_int_equal(chrow_get_u8(&r), 1);
    assert_int_equal(chrow_get_u32(&r), 2);
    assert_int_equal(chrow_get_u64(&r), 12);
    assert_int_equal(chrow_get_u64(&r), 77);
    assert_false(chrow_more(&r));
    assert_null(chrow_failed(&r));
    /* one series row, one labels row a label, one stacks row a stack */
    chrow_reader_init(&r, part[CHT_LABELS], plen[CHT_LABELS]);
    int labels_rows = 0;
    while (chrow_more(&r)) {
        for (int k = 0; k < 3; k++) chrow_get_string(&r, &s, &n);
        assert_true(chrow_get_u64(&r) == series);
        labels_rows++;
    }
    assert_int_equal(labels_rows, 2);
    /* ids: stable content hashes; another label set, another series */
    store_label other[] = { { "service", "api" }, { "type", "alloc" } };
    assert_true(chencode_series_id(other, 2) != series);
    assert_true(chencode_series_id(labels, 2) == series);
    chrow_buf_free(&rec);
    chencode_batch_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(records_in_order_across_seals_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(torn_tail_left_out, setup, teardown),
        cmocka_unit_test_setup_teardown(files_sealed_at_32_mib, setup, teardown),
        cmocka_unit_test_setup_teardown(limit_answers_full, setup, teardown),
        cmocka_unit_test_setup_teardown(concurrent_appends_each_once, setup, teardown),
        cmocka_unit_test(profile_rows_split_into_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
