/* chrow.h — ClickHouse's RowBinary format, written and read (issue 10).
 *
 * RowBinary is what flamedb sends to ClickHouse (`INSERT INTO t FORMAT
 * RowBinary`, the rows as the body) and asks back (`SELECT ... FORMAT
 * RowBinary`): rows one after the other, columns in the statement's order,
 * no names, no types, no framing.  Encodings, as ClickHouse 18.16 writes
 * them (checked against the server, see docs/cluster.md) and as current
 * versions still do:
 *   UInt8/16/32/64, Int64   fixed width, little-endian
 *   Float64                 IEEE 754 binary64, little-endian
 *   String                  length as unsigned LEB128, then the bytes
 *   FixedString(N)          exactly N bytes (the caller pads)
 *   Array(T)                element count as unsigned LEB128, then each T
 * The reader knows nothing of the types either: the caller asks for the
 * columns in order, exactly as the writer wrote them.
 *
 * Writer: a growable buffer (caller-owned struct, malloc'd bytes).  Out of
 * memory is sticky: every later put is a no-op and chrow_buf_failed says
 * so; check once at the end.
 * Reader: a cursor over the caller's bytes; truncated or malformed input
 * is sticky too (every later get answers 0 / NULL) and chrow_failed says
 * where.  Strings point into the caller's bytes, not NUL-terminated. */
#ifndef FLAMEDB_CHROW_H
#define FLAMEDB_CHROW_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *data;
    size_t len, cap;
    int failed;  /* out of memory: the buffer is unusable */
} chrow_buf;

void chrow_buf_init(chrow_buf *b);
void chrow_buf_free(chrow_buf *b);
/* Empties the buffer, keeping its memory (and clears a failure). */
void chrow_buf_reset(chrow_buf *b);
int chrow_buf_failed(const chrow_buf *b);

void chrow_put_u8(chrow_buf *b, uint8_t v);
void chrow_put_u16(chrow_buf *b, uint16_t v);
void chrow_put_u32(chrow_buf *b, uint32_t v);
void chrow_put_u64(chrow_buf *b, uint64_t v);
void chrow_put_i64(chrow_buf *b, int64_t v);
void chrow_put_f64(chrow_buf *b, double v);
/* String: any bytes, NUL included. */
void chrow_put_string(chrow_buf *b, const void *s, size_t n);
/* FixedString(n): exactly n bytes. */
void chrow_put_fixed(chrow_buf *b, const void *s, size_t n);
/* Array(T): the count, then the caller puts the n elements. */
void chrow_put_array_len(chrow_buf *b, uint64_t n);
/* The unsigned LEB128 varint under String and Array lengths. */
void chrow_put_varint(chrow_buf *b, uint64_t v);

typedef struct {
    const uint8_t *start, *p, *end;
    const char *failed;  /* NULL, or what could not be read */
} chrow_reader;

void chrow_reader_init(chrow_reader *r, const void *data, size_t len);
/* 1 while bytes are left (another row), 0 at the end or after a failure. */
int chrow_more(const chrow_reader *r);
/* NULL, or what went wrong ("truncated String", ...); see chrow_offset. */
const char *chrow_failed(const chrow_reader *r);
/* Bytes consumed so far: where a failure happened. */
size_t chrow_offset(const chrow_reader *r);

uint8_t chrow_get_u8(chrow_reader *r);
uint16_t chrow_get_u16(chrow_reader *r);
uint32_t chrow_get_u32(chrow_reader *r);
uint64_t chrow_get_u64(chrow_reader *r);
int64_t chrow_get_i64(chrow_reader *r);
double chrow_get_f64(chrow_reader *r);
/* String: *s points into the reader's bytes, *n its length; 0 on success. */
int chrow_get_string(chrow_reader *r, const char **s, size_t *n);
/* FixedString(n): a pointer to its n bytes, or NULL. */
const uint8_t *chrow_get_fixed(chrow_reader *r, size_t n);
/* Array(T): the element count, then the caller gets each element.
 * min_elem_size (1 for every type above but Array/String of Strings, which
 * take at least 1 byte too) bounds the count by the bytes left, so a
 * corrupt count fails here instead of driving a huge loop. */
uint64_t chrow_get_array_len(chrow_reader *r, size_t min_elem_size);
uint64_t chrow_get_varint(chrow_reader *r);

#endif
