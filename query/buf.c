/* buf.c — a growing byte buffer for the encoders that write their answer
 * as they walk (the nested JSON tree, the levels format, the Connect
 * answers), instead of building a jansson value per node.
 *
 * The buffer doubles when full; a failed allocation sets `failed` and every
 * later write is a no-op, so an encoder checks once at the end.  JSON text
 * that needs escaping (names, the envelope of an answer) goes through
 * jansson's own encoder (json_dumpb, JSON_COMPACT | JSON_ENCODE_ANY): the
 * one JSON escaping of the program, so a streamed answer has exactly the
 * bytes json_dumps would have written for the same values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"

int query_buf_reserve(query_buf *b, size_t n)
{
    if (b->failed) return -1;
    if (b->cap - b->len >= n) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2) {
            b->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *d = realloc(b->data, cap);
    if (!d) {
        b->failed = 1;
        return -1;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

void query_buf_put(query_buf *b, const void *s, size_t n)
{
    if (query_buf_reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

void query_buf_puts(query_buf *b, const char *s) { query_buf_put(b, s, strlen(s)); }

/* Two digits at a time: numbers are most of a levels answer. */
static const char digits2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";

void query_buf_u64(query_buf *b, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        tmp[sizeof tmp - ++n] = digits2[d + 1];
        tmp[sizeof tmp - ++n] = digits2[d];
    }
    if (v >= 10) {
        tmp[sizeof tmp - ++n] = digits2[v * 2 + 1];
        tmp[sizeof tmp - ++n] = digits2[v * 2];
    } else {
        tmp[sizeof tmp - ++n] = (char)('0' + v);
    }
    if (b->cap - b->len >= n && !b->failed) { /* the common case: room already */
        memcpy(b->data + b->len, tmp + sizeof tmp - n, n);
        b->len += n;
        return;
    }
    query_buf_put(b, tmp + sizeof tmp - n, n);
}

void query_buf_i64(query_buf *b, int64_t v)
{
    if (v < 0) {
        query_buf_put(b, "-", 1);
        query_buf_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        query_buf_u64(b, (uint64_t)v);
    }
}

void query_buf_json(query_buf *b, const json_t *v)
{
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
    if (!v) {
        b->failed = 1;
        return;
    }
    if (query_buf_reserve(b, 64)) return;
    size_t need = json_dumpb(v, b->data + b->len, b->cap - b->len, flags);
    if (need == 0) {
        b->failed = 1;
        return;
    }
    if (need > b->cap - b->len) {
        if (query_buf_reserve(b, need)) return;
        need = json_dumpb(v, b->data + b->len, b->cap - b->len, flags);
        if (need == 0 || need > b->cap - b->len) {
            b->failed = 1;
            return;
        }
    }
    b->len += need;
}

void query_buf_json_string(query_buf *b, const char *s, size_t n)
{
    /* Most names need no escaping: printable ASCII but '"' and '\\' is
     * what jansson writes as it is, so it goes in without a jansson
     * string (an allocation and a copy each). */
    size_t i = 0;
    while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f && s[i] != '"' && s[i] != '\\') i++;
    if (i == n) {
        if (query_buf_reserve(b, n + 2)) return;
        b->data[b->len++] = '"';
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len++] = '"';
        return;
    }
    /* stored names are valid UTF-8 (ingest checks); should one not be,
     * it is written as it is rather than dropped */
    json_t *j = json_stringn(s, n);
    if (!j) j = json_stringn_nocheck(s, n);
    query_buf_json(b, j);
    json_decref(j);
}

void query_buf_object_open(query_buf *b, const json_t *obj)
{
    size_t start = b->len;
    query_buf_json(b, obj);
    if (b->failed) return;
    if (b->len - start < 2 || b->data[b->len - 1] != '}') {
        b->failed = 1;
        return;
    }
    b->len--; /* the closing brace: the caller appends members and closes it */
    if (b->len - start == 1) b->failed = 1; /* "{": the caller's ",\"key\":" would not be JSON */
}

void query_buf_time(query_buf *b, int64_t ms)
{
    if (ms % 1000 == 0) {
        query_buf_i64(b, ms / 1000);
        return;
    }
    json_t *j = query_time_json(ms);
    query_buf_json(b, j);
    json_decref(j);
}

void query_buf_value(query_buf *b, const query_tree *t, uint64_t v)
{
    if (t->divisor > 1) {
        json_t *j = query_value_json(t, v);
        query_buf_json(b, j);
        json_decref(j);
    } else {
        query_buf_u64(b, v);
    }
}

char *query_buf_take(query_buf *b, size_t *len)
{
    if (b->failed || query_buf_reserve(b, 1)) {
        query_buf_free(b);
        *len = 0;
        return NULL;
    }
    b->data[b->len] = '\0';
    char *d = b->data;
    *len = b->len;
    memset(b, 0, sizeof *b);
    return d;
}

void query_buf_free(query_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
