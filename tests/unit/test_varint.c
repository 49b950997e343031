/* test_varint.c — common/varint.h: LEB128 round trips at every length,
 * the one- and two-byte fast paths at the end of a buffer, and the
 * inputs it refuses (cut short, longer than 10 bytes). */
#include <string.h>

#include "testutil.h"

#include "../../common/varint.h"

static void assert_round_trip(uint64_t v, size_t want_len)
{
    unsigned char buf[VARINT_MAX + 4];
    memset(buf, 0xee, sizeof buf);
    unsigned char *end = varint_put(buf, v);
    assert_int_equal((size_t)(end - buf), want_len);
    /* read with the buffer ending right after it, then with room after */
    for (int room = 0; room < 2; room++) {
        const unsigned char *p = buf;
        uint64_t got = ~v;
        assert_int_equal(varint_get(&p, end + room, &got), 0);
        assert_true(got == v);
        assert_ptr_equal(p, end);
    }
    /* every cut short is refused, and leaves *p where it was */
    for (size_t cut = 0; cut < want_len; cut++) {
        const unsigned char *p = buf;
        uint64_t got = 7;
        assert_int_equal(varint_get(&p, buf + cut, &got), -1);
        assert_ptr_equal(p, buf);
    }
}

static void test_varint_round_trips(void **state)
{
    (void)state;
    assert_round_trip(0, 1);
    assert_round_trip(1, 1);
    assert_round_trip(127, 1);
    assert_round_trip(128, 2);
    assert_round_trip(300, 2);
    assert_round_trip(16383, 2);
    assert_round_trip(16384, 3);
    for (unsigned bytes = 3; bytes <= 9; bytes++) {
        uint64_t lo = UINT64_C(1) << (7 * (bytes - 1)), hi = (UINT64_C(1) << (7 * bytes)) - 1;
        assert_round_trip(lo, bytes);
        assert_round_trip(hi, bytes);
        assert_round_trip(lo + (hi - lo) / 3, bytes);
    }
    assert_round_trip(UINT64_C(1) << 63, 10);
    assert_round_trip(UINT64_MAX, 10);
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t v = x >> (x % 64);
        size_t len = 1;
        for (uint64_t t = v; t >= 0x80; t >>= 7) len++;
        assert_round_trip(v, len);
    }
}

static void test_varint_refuses(void **state)
{
    (void)state;
    /* eleven bytes with the high bit set on ten: past 64 bits */
    const unsigned char eleven[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    const unsigned char *p = eleven;
    uint64_t v;
    assert_int_equal(varint_get(&p, eleven + sizeof eleven, &v), -1);
    /* a tenth byte's bits above 64 are dropped, as protobuf does */
    const unsigned char ten[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
    p = ten;
    assert_int_equal(varint_get(&p, ten + sizeof ten, &v), 0);
    assert_true(v == UINT64_MAX);
    assert_ptr_equal(p, ten + 10);
    /* nothing to read */
    p = ten;
    assert_int_equal(varint_get(&p, ten, &v), -1);
    /* a two-byte varint whose second byte continues, then ends: 3 bytes */
    const unsigned char three[] = { 0x80, 0x80, 0x01 };
    p = three;
    assert_int_equal(varint_get(&p, three + 3, &v), 0);
    assert_true(v == UINT64_C(1) << 14);
    assert_ptr_equal(p, three + 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_round_trips),
        cmocka_unit_test(test_varint_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
