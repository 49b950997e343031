/* test_chrow.c — RowBinary writer and reader (cluster/chrow.c) and the
 * reading of ClickHouse's exception texts (cluster/chclient.c), without a
 * server.  The byte strings are what ClickHouse 18.16 answered to
 * `SELECT toUInt8(1), toUInt16(2), toUInt32(3), toUInt64(4), toInt64(-1),
 * toFloat64(1.5), 'ab', toFixedString('xy', 4), [toUInt64(7), 8],
 * ['a', 'bc'] FORMAT RowBinary` and to queries that failed. */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "../../cluster/chclient.h"
#include "../../cluster/chrow.h"

static const uint8_t from_18_16[] = {
    0x01,                                            /* UInt8 1 */
    0x02, 0x00,                                      /* UInt16 2 */
    0x03, 0x00, 0x00, 0x00,                          /* UInt32 3 */
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* UInt64 4 */
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  /* Int64 -1 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f,  /* Float64 1.5 */
    0x02, 'a',  'b',                                 /* String "ab" */
    'x',  'y',  0x00, 0x00,                          /* FixedString(4) "xy" */
    0x02, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* Array(UInt64) [7, 8] */
    0x02, 0x01, 'a',  0x02, 'b',  'c',               /* Array(String) ['a', 'bc'] */
};

static void write_row(chrow_buf *b)
{
    chrow_put_u8(b, 1);
    chrow_put_u16(b, 2);
    chrow_put_u32(b, 3);
    chrow_put_u64(b, 4);
    chrow_put_i64(b, -1);
    chrow_put_f64(b, 1.5);
    chrow_put_string(b, "ab", 2);
    chrow_put_fixed(b, "xy\0\0", 4);
    chrow_put_array_len(b, 2);
    chrow_put_u64(b, 7);
    chrow_put_u64(b, 8);
    chrow_put_array_len(b, 2);
    chrow_put_string(b, "a", 1);
    chrow_put_string(b, "bc", 2);
}

/* Reads the row above; answers 0 when every field is as written. */
static int read_row(chrow_reader *r)
{
    const char *s;
    size_t n;
    int bad = 0;
    bad |= chrow_get_u8(r) != 1;
    bad |= chrow_get_u16(r) != 2;
    bad |= chrow_get_u32(r) != 3;
    bad |= chrow_get_u64(r) != 4;
    bad |= chrow_get_i64(r) != -1;
    bad |= chrow_get_f64(r) != 1.5;
    bad |= chrow_get_string(r, &s, &n) != 0 || n != 2 || memcmp(s, "ab", 2) != 0;
    const uint8_t *f = chrow_get_fixed(r, 4);
    bad |= !f || memcmp(f, "xy\0\0", 4) != 0;
    bad |= chrow_get_array_len(r, 8) != 2;
    bad |= chrow_get_u64(r) != 7;
    bad |= chrow_get_u64(r) != 8;
    bad |= chrow_get_array_len(r, 1) != 2;
    bad |= chrow_get_string(r, &s, &n) != 0 || n != 1 || memcmp(s, "a", 1) != 0;
    bad |= chrow_get_string(r, &s, &n) != 0 || n != 2 || memcmp(s, "bc", 2) != 0;
    return bad || chrow_failed(r) != NULL;
}

/* The writer makes exactly the bytes 18.16 sends. */
static void test_writer_matches_server_bytes(void **state)
{
    (void)state;
    chrow_buf b;
    chrow_buf_init(&b);
    write_row(&b);
    assert_false(chrow_buf_failed(&b));
    assert_int_equal(b.len, sizeof from_18_16);
    assert_memory_equal(b.data, from_18_16, sizeof from_18_16);
    chrow_buf_free(&b);
}

/* The reader reads 18.16's bytes, and thousands of rows in a row. */
static void test_reader_reads_server_bytes(void **state)
{
    (void)state;
    chrow_reader r;
    chrow_reader_init(&r, from_18_16, sizeof from_18_16);
    assert_int_equal(read_row(&r), 0);
    assert_false(chrow_more(&r));
    assert_int_equal(chrow_offset(&r), sizeof from_18_16);

    chrow_buf b;
    chrow_buf_init(&b);
    for (int i = 0; i < 5000; i++) write_row(&b);
    assert_false(chrow_buf_failed(&b));
    chrow_reader_init(&r, b.data, b.len);
    int rows = 0;
    while (chrow_more(&r)) {
        assert_int_equal(read_row(&r), 0);
        rows++;
    }
    assert_int_equal(rows, 5000);
    assert_null(chrow_failed(&r));
    chrow_buf_free(&b);
}

/* A row cut at any byte fails (sticky), never reads past the end. */
static void test_truncated_fails_everywhere(void **state)
{
    (void)state;
    for (size_t cut = 0; cut < sizeof from_18_16; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        assert_non_null(copy);
        memcpy(copy, from_18_16, cut);
        chrow_reader r;
        chrow_reader_init(&r, copy, cut);
        assert_int_not_equal(read_row(&r), 0);
        assert_non_null(chrow_failed(&r));
        assert_false(chrow_more(&r));
        assert_true(chrow_offset(&r) <= cut);
        free(copy);
    }
}

/* Integer edges, NaN and infinities, bytes of every value in strings. */
static void test_edges(void **state)
{
    (void)state;
    chrow_buf b;
    chrow_buf_init(&b);
    char all[256];
    for (int i = 0; i < 256; i++) all[i] = (char)i;
    chrow_put_u64(&b, UINT64_MAX);
    chrow_put_i64(&b, INT64_MIN);
    chrow_put_i64(&b, INT64_MAX);
    chrow_put_u32(&b, UINT32_MAX);
    chrow_put_u16(&b, UINT16_MAX);
    chrow_put_f64(&b, NAN);
    chrow_put_f64(&b, -INFINITY);
    chrow_put_f64(&b, -0.0);
    chrow_put_string(&b, all, 256);
    chrow_put_string(&b, "", 0);
    chrow_put_array_len(&b, 0);
    chrow_reader r;
    chrow_reader_init(&r, b.data, b.len);
    assert_true(chrow_get_u64(&r) == UINT64_MAX);
    assert_true(chrow_get_i64(&r) == INT64_MIN);
    assert_true(chrow_get_i64(&r) == INT64_MAX);
    assert_true(chrow_get_u32(&r) == UINT32_MAX);
    assert_true(chrow_get_u16(&r) == UINT16_MAX);
    assert_true(isnan(chrow_get_f64(&r)));
    double ninf = chrow_get_f64(&r), nz = chrow_get_f64(&r);
    assert_true(isinf(ninf) && ninf < 0);
    assert_true(nz == 0.0 && signbit(nz));
    const char *s;
    size_t n;
    assert_int_equal(chrow_get_string(&r, &s, &n), 0);
    assert_int_equal(n, 256);
    assert_memory_equal(s, all, 256);
    assert_int_equal(chrow_get_string(&r, &s, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(chrow_get_array_len(&r, 8), 0);
    assert_false(chrow_more(&r));
    assert_null(chrow_failed(&r));
    /* a 256-byte string's length is 2 varint bytes: 0x80 0x02 */
    assert_int_equal(b.data[8 + 8 + 8 + 4 + 2 + 24], 0x80);
    assert_int_equal(b.data[8 + 8 + 8 + 4 + 2 + 24 + 1], 0x02);
    chrow_buf_free(&b);
}

/* Varints: one byte below 128, ten bytes for 2^64-1, and malformed ones
 * (too long, above 64 bits, a count larger than the data) fail. */
static void test_varint(void **state)
{
    (void)state;
    const uint64_t vals[] = {0, 1, 127, 128, 16383, 16384, (1ULL << 35) + 5, UINT64_MAX};
    const size_t lens[] = {1, 1, 1, 2, 2, 3, 6, 10};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        chrow_buf b;
        chrow_buf_init(&b);
        chrow_put_varint(&b, vals[i]);
        assert_int_equal(b.len, lens[i]);
        chrow_reader r;
        chrow_reader_init(&r, b.data, b.len);
        assert_true(chrow_get_varint(&r) == vals[i]);
        assert_null(chrow_failed(&r));
        chrow_buf_free(&b);
    }
    const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    chrow_reader r;
    chrow_reader_init(&r, eleven, sizeof eleven);
    chrow_get_varint(&r);
    assert_non_null(chrow_failed(&r));
    const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    chrow_reader_init(&r, over, sizeof over);
    chrow_get_varint(&r);
    assert_non_null(chrow_failed(&r));
    /* an array claiming a billion UInt64s in 10 bytes */
    const uint8_t big[] = {0x80, 0x94, 0xeb, 0xdc, 0x03, 0, 0, 0, 0, 0};
    chrow_reader_init(&r, big, sizeof big);
    assert_int_equal(chrow_get_array_len(&r, 8), 0);
    assert_non_null(chrow_failed(&r));
    /* a String claiming more bytes than there are */
    const uint8_t str[] = {0x05, 'a', 'b'};
    chrow_reader_init(&r, str, sizeof str);
    const char *s;
    size_t n;
    assert_int_not_equal(chrow_get_string(&r, &s, &n), 0);
    assert_null(s);
    assert_non_null(chrow_failed(&r));
}

/* After reset the buffer is empty and reusable. */
static void test_reset(void **state)
{
    (void)state;
    chrow_buf b;
    chrow_buf_init(&b);
    for (int i = 0; i < 10000; i++) chrow_put_u64(&b, (uint64_t)i);
    assert_int_equal(b.len, 80000);
    chrow_buf_reset(&b);
    assert_int_equal(b.len, 0);
    write_row(&b);
    assert_memory_equal(b.data, from_18_16, sizeof from_18_16);
    chrow_buf_free(&b);
}

/* ClickHouse's exception texts, old and new, and bodies that are not. */
static void test_parse_exception(void **state)
{
    (void)state;
    char msg[256];
    const char *old =
        "Code: 47, e.displayText() = DB::Exception: Unknown identifier: foo. Note that there is no tables "
        "(FROM clause) in your query, e.what() = DB::Exception\n";
    assert_int_equal(ch_parse_exception(old, strlen(old), msg, sizeof msg), 47);
    assert_string_equal(msg, "Unknown identifier: foo. Note that there is no tables (FROM clause) in your query");

    const char *c279 =
        "Code: 279, e.displayText() = DB::NetException: All connection tries failed. Log: \n\nCode: 210, "
        "e.displayText() = DB::NetException: Connection refused (127.0.0.1:9001)\n, e.what() = DB::NetException\n";
    assert_int_equal(ch_parse_exception(c279, strlen(c279), msg, sizeof msg), 279);
    assert_string_equal(msg, "All connection tries failed. Log: Code: 210, e.displayText() = DB::NetException: "
                             "Connection refused (127.0.0.1:9001)");

    const char *cur = "Code: 60. DB::Exception: Table default.nope does not exist. (UNKNOWN_TABLE) (version 23.8.2.7)\n";
    assert_int_equal(ch_parse_exception(cur, strlen(cur), msg, sizeof msg), 60);
    assert_string_equal(msg, "Table default.nope does not exist. (UNKNOWN_TABLE) (version 23.8.2.7)");

    /* cut short by msglen, still terminated */
    char small[8];
    assert_int_equal(ch_parse_exception(old, strlen(old), small, sizeof small), 47);
    assert_string_equal(small, "Unknown");

    const char *not1 = "Ok.\n", *not2 = "Code: x", *not3 = "<html>502 Bad Gateway</html>";
    assert_int_equal(ch_parse_exception(not1, strlen(not1), msg, sizeof msg), 0);
    assert_int_equal(ch_parse_exception(not2, strlen(not2), msg, sizeof msg), 0);
    assert_int_equal(ch_parse_exception(not3, strlen(not3), msg, sizeof msg), 0);
    assert_int_equal(ch_parse_exception(old, 10, msg, sizeof msg), 47);  /* "Code: 47, " */
}

/* Without a server: connection refused is CH_ECONNECT naming the URL. */
static void test_refused_names_url(void **state)
{
    (void)state;
    ch_options o = {.url = "http://127.0.0.1:1", .connect_timeout_ms = 2000, .timeout_ms = 5000};
    ch_client *c;
    char err[256];
    assert_int_equal(ch_open(&c, &o, err, sizeof err), CH_OK);
    assert_int_equal(ch_exec(c, "SELECT 1", NULL), CH_ECONNECT);
    assert_non_null(strstr(ch_errmsg(c), "http://127.0.0.1:1"));
    assert_int_equal(ch_server_code(c), 0);
    chrow_reader r;
    assert_int_equal(ch_select(c, "SELECT 1 FORMAT RowBinary", NULL, &r), CH_ECONNECT);
    assert_false(chrow_more(&r));
    ch_close(c);

    ch_options bad = {.url = "127.0.0.1:8123"};
    assert_int_equal(ch_open(&c, &bad, err, sizeof err), CH_EINVAL);
    assert_non_null(strstr(err, "http://host:8123"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_matches_server_bytes),
        cmocka_unit_test(test_reader_reads_server_bytes),
        cmocka_unit_test(test_truncated_fails_everywhere),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_varint),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_parse_exception),
        cmocka_unit_test(test_refused_names_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
