/* chrow.c — RowBinary writer and reader (see chrow.h).  Byte by byte with
 * shifts, so the encoding is little-endian whatever the host's order. */
#include "chrow.h"

#include "../common/varint.h"

#include <stdlib.h>
#include <string.h>

void chrow_buf_init(chrow_buf *b)
{
    memset(b, 0, sizeof *b);
}

void chrow_buf_free(chrow_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void chrow_buf_reset(chrow_buf *b)
{
    b->len = 0;
    if (b->failed) {
        free(b->data);
        memset(b, 0, sizeof *b);
    }
}

int chrow_buf_failed(const chrow_buf *b)
{
    return b->failed;
}

/* Room for n more bytes: a pointer to them, or NULL (and failed). */
static uint8_t *grow(chrow_buf *b, size_t n)
{
    if (b->failed) return NULL;
    if (n > SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return NULL;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (!d) {
            b->failed = 1;
            return NULL;
        }
        b->data = d;
        b->cap = cap;
    }
    uint8_t *p = b->data + b->len;
    b->len += n;
    return p;
}

static void put_le(chrow_buf *b, uint64_t v, int bytes)
{
    uint8_t *p = grow(b, (size_t)bytes);
    if (!p) return;
    for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void chrow_put_u8(chrow_buf *b, uint8_t v) { put_le(b, v, 1); }
void chrow_put_u16(chrow_buf *b, uint16_t v) { put_le(b, v, 2); }
void chrow_put_u32(chrow_buf *b, uint32_t v) { put_le(b, v, 4); }
void chrow_put_u64(chrow_buf *b, uint64_t v) { put_le(b, v, 8); }
void chrow_put_i64(chrow_buf *b, int64_t v) { put_le(b, (uint64_t)v, 8); }

void chrow_put_f64(chrow_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put_le(b, u, 8);
}

void chrow_put_varint(chrow_buf *b, uint64_t v)
{
    unsigned char tmp[VARINT_MAX];
    size_t n = (size_t)(varint_put(tmp, v) - tmp);
    uint8_t *p = grow(b, n);
    if (p) memcpy(p, tmp, n);
}

void chrow_put_string(chrow_buf *b, const void *s, size_t n)
{
    chrow_put_varint(b, n);
    chrow_put_fixed(b, s, n);
}

void chrow_put_fixed(chrow_buf *b, const void *s, size_t n)
{
    uint8_t *p = grow(b, n);
    if (p && n) memcpy(p, s, n);
}

void chrow_put_array_len(chrow_buf *b, uint64_t n)
{
    chrow_put_varint(b, n);
}

/* ---- reader -------------------------------------------------------------- */

void chrow_reader_init(chrow_reader *r, const void *data, size_t len)
{
    r->start = r->p = data;
    r->end = r->p + len;
    r->failed = NULL;
    if (!data) r->start = r->p = r->end = NULL;
}

int chrow_more(const chrow_reader *r)
{
    return !r->failed && r->p < r->end;
}

const char *chrow_failed(const chrow_reader *r)
{
    return r->failed;
}

size_t chrow_offset(const chrow_reader *r)
{
    return (size_t)(r->p - r->start);
}

/* n bytes, or NULL (and failed with what). */
static const uint8_t *take(chrow_reader *r, size_t n, const char *what)
{
    if (r->failed) return NULL;
    if ((size_t)(r->end - r->p) < n) {
        r->failed = what;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

static uint64_t get_le(chrow_reader *r, int bytes, const char *what)
{
    const uint8_t *p = take(r, (size_t)bytes, what);
    uint64_t v = 0;
    if (!p) return 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint8_t chrow_get_u8(chrow_reader *r) { return (uint8_t)get_le(r, 1, "truncated UInt8"); }
uint16_t chrow_get_u16(chrow_reader *r) { return (uint16_t)get_le(r, 2, "truncated UInt16"); }
uint32_t chrow_get_u32(chrow_reader *r) { return (uint32_t)get_le(r, 4, "truncated UInt32"); }
uint64_t chrow_get_u64(chrow_reader *r) { return get_le(r, 8, "truncated UInt64"); }
int64_t chrow_get_i64(chrow_reader *r) { return (int64_t)get_le(r, 8, "truncated Int64"); }

double chrow_get_f64(chrow_reader *r)
{
    uint64_t u = get_le(r, 8, "truncated Float64");
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

uint64_t chrow_get_varint(chrow_reader *r)
{
    if (r->failed) return 0;
    const unsigned char *p = r->p;
    uint64_t v;
    if (varint_get(&p, r->end, &v) < 0) {
        r->failed = p < r->end && (size_t)(r->end - r->p) >= VARINT_MAX ? "length (varint) longer than 10 bytes"
                                                                        : "truncated length (varint)";
        return 0;
    }
    /* the 10th byte may carry only the top bit of a 64-bit value */
    if (p - r->p == VARINT_MAX && (p[-1] & 0x7e)) {
        r->failed = "length (varint) above 64 bits";
        return 0;
    }
    r->p = p;
    return v;
}

int chrow_get_string(chrow_reader *r, const char **s, size_t *n)
{
    *s = NULL;
    *n = 0;
    uint64_t len = chrow_get_varint(r);
    if (r->failed) return -1;
    if (len > (uint64_t)(r->end - r->p)) {
        r->failed = "truncated String (its length runs past the data)";
        return -1;
    }
    *s = (const char *)take(r, (size_t)len, "truncated String");
    *n = (size_t)len;
    return 0;
}

const uint8_t *chrow_get_fixed(chrow_reader *r, size_t n)
{
    return take(r, n, "truncated FixedString");
}

uint64_t chrow_get_array_len(chrow_reader *r, size_t min_elem_size)
{
    uint64_t n = chrow_get_varint(r);
    if (r->failed) return 0;
    if (min_elem_size && n > (uint64_t)(r->end - r->p) / min_elem_size) {
        r->failed = "truncated Array (its count runs past the data)";
        return 0;
    }
    return n;
}
