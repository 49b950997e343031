/* gunzip.c — inflating Content-Encoding: gzip bodies, bombs included.
 *
 * The DEFLATE data is decoded by libdeflate (Debian's libdeflate-dev), a
 * whole-buffer decoder with a much faster CRC-32 than zlib's: a fleet
 * agent's body (23 KB gzip'd, 119 KB of folded text) takes 56 us of CPU
 * instead of zlib's 226 us, and gunzip was most of the server's
 * in-process parse floor (issue 9; bench/README.md).  libdeflate wants the
 * whole output buffer up front, so the work goes member by member:
 *
 * - A gzip file may hold several members back to back (what `cat a.gz b.gz`
 *   makes), and, as zlib's auto-detection did before, a zlib-wrapped member
 *   is accepted too.  Each member's header is read here (so errors can say
 *   what is wrong, in zlib's words), its DEFLATE data is decoded by
 *   libdeflate_deflate_decompress_ex, which says how many bytes it used, and
 *   its trailer is checked here (CRC-32 and ISIZE for gzip, Adler-32 for
 *   zlib, with libdeflate's checksums).  Decoding goes on while input
 *   remains, so anything after a member that is not another member is an
 *   error.
 * - The output buffer's first size is a guess: the ISIZE of the gzip
 *   trailer at the end of the input (the last member's size mod 2^32,
 *   untrusted), capped by max_out and by DEFLATE's largest ratio (1032:1)
 *   of the input; without one, four times the input.  When a member does
 *   not fit (LIBDEFLATE_INSUFFICIENT_SPACE) the buffer doubles, never past
 *   max_out bytes (plus one for a terminating NUL, which callers may rely
 *   on but need not), and that member is decoded again.  A member that
 *   does not fit in max_out bytes is a refused bomb: it cost at most
 *   max_out + 1 bytes of memory, and about twice max_out of decoding.
 * - libdeflate cannot tell a truncated DEFLATE stream from a corrupt one;
 *   both are "corrupt or truncated deflate data".  A header or trailer cut
 *   short is "unexpected end of data (truncated?)", as zlib said.  It reads
 *   up to 8 missing bytes as zeros before it gives up, and what they
 *   decode to (at most ~16 KB) counts against max_out: a body cut short
 *   within that much of the limit is refused as too big, not as invalid.
 *
 * Each thread keeps one decompressor (~11 KB; freed when the thread
 * exits): allocated per call it cost 0.06 us in a loop, but 1 % of the
 * server's CPU under bench_fleet, where the malloc of 11 KB and its memset
 * meet arenas and caches that the rest of a request has churned. */
#include "ingest.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CAP ((size_t)64 * 1024) /* the least first size without ISIZE, the least growth */
#define MAX_RATIO 1032              /* DEFLATE's largest output per input byte */
#define NOMEM "out of memory decompressing the body"
#define TRUNCATED "unexpected end of data (truncated?)"

/* gzip header flags (RFC 1952) */
#define FHCRC 0x02
#define FEXTRA 0x04
#define FNAME 0x08
#define FCOMMENT 0x10
#define FRESERVED 0xe0

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads a gzip (1f 8b) or zlib member's header at in[*pos]; on success
 * *pos is where its DEFLATE data starts and *is_gzip says which.  Answers
 * NULL, or why the header is not valid (zlib's words). */
static const char *read_header(const unsigned char *in, size_t len, size_t *pos, int *is_gzip)
{
    size_t p = *pos;
    if (len - p < 2)
        return TRUNCATED;
    if (in[p] == 0x1f && in[p + 1] == 0x8b) {
        size_t start = p;
        if (len - p < 10)
            return TRUNCATED;
        if (in[p + 2] != 8)
            return "unknown compression method";
        unsigned flags = in[p + 3];
        if (flags & FRESERVED)
            return "unknown header flags set";
        p += 10; /* ID1 ID2 CM FLG MTIME(4) XFL OS */
        if (flags & FEXTRA) {
            if (len - p < 2)
                return TRUNCATED;
            size_t xlen = (size_t)in[p] | (size_t)in[p + 1] << 8;
            p += 2;
            if (len - p < xlen)
                return TRUNCATED;
            p += xlen;
        }
        for (unsigned f = FNAME; f <= FCOMMENT; f <<= 1) { /* zero-terminated */
            if (!(flags & f))
                continue;
            const unsigned char *nul = memchr(in + p, 0, len - p);
            if (!nul)
                return TRUNCATED;
            p = (size_t)(nul - in) + 1;
        }
        if (flags & FHCRC) {
            if (len - p < 2)
                return TRUNCATED;
            uint32_t crc = libdeflate_crc32(0, in + start, p - start);
            if ((crc & 0xffff) != ((unsigned)in[p] | (unsigned)in[p + 1] << 8))
                return "header crc mismatch";
            p += 2;
        }
        *is_gzip = 1;
    } else {
        unsigned cmf = in[p], flg = in[p + 1];
        if ((cmf << 8 | flg) % 31 != 0)
            return "incorrect header check";
        if ((cmf & 0x0f) != 8)
            return "unknown compression method";
        if ((cmf >> 4) > 7)
            return "invalid window size";
        if (flg & 0x20)
            return "a preset dictionary is needed";
        p += 2;
        *is_gzip = 0;
    }
    *pos = p;
    return NULL;
}

/* The output buffer's first size: see the top of the file. */
static size_t first_guess(const unsigned char *in, size_t len, size_t max_out)
{
    size_t guess;
    if (len >= 18 && in[0] == 0x1f && in[1] == 0x8b) /* 18: the smallest gzip member */
        guess = le32(in + len - 4);
    else
        guess = len < MIN_CAP / 4 ? MIN_CAP : min_size(len, SIZE_MAX / 4) * 4;
    if (len <= SIZE_MAX / MAX_RATIO)
        guess = min_size(guess, len * MAX_RATIO);
    return min_size(guess, max_out);
}

/* ---- the thread's decompressor ---- */

static pthread_key_t dec_key;
static pthread_once_t dec_once = PTHREAD_ONCE_INIT;

static void dec_free(void *d) { libdeflate_free_decompressor(d); }
static void dec_init(void) { pthread_key_create(&dec_key, dec_free); }

/* The calling thread's decompressor (NULL without memory).  libdeflate's
 * decompressor keeps no state from one call to the next. */
static struct libdeflate_decompressor *thread_decompressor(void)
{
    pthread_once(&dec_once, dec_init);
    struct libdeflate_decompressor *d = pthread_getspecific(dec_key);
    if (!d && (d = libdeflate_alloc_decompressor()) && pthread_setspecific(dec_key, d)) {
        libdeflate_free_decompressor(d);
        d = NULL;
    }
    return d;
}

/* Ends a failed call: says why and frees what was made. */
static ingest_status fail(char *buf, ingest_status st, char *err, size_t errlen, const char *why)
{
    if (st == INGEST_EINVAL)
        snprintf(err, errlen, "body is not valid gzip: %s", why);
    else
        snprintf(err, errlen, "%s", why);
    free(buf);
    return st;
}

ingest_status ingest_gunzip(const void *in, size_t in_len, size_t max_out,
                            char **out, size_t *out_len, char *err, size_t errlen)
{
    const unsigned char *src = in;
    size_t pos = 0, len = 0;
    if (max_out > SIZE_MAX - 1)
        max_out = SIZE_MAX - 1; /* room for the NUL */

    *out = NULL;
    *out_len = 0;
    if (in_len == 0) {
        snprintf(err, errlen, "body is not valid gzip: the body is empty");
        return INGEST_EINVAL;
    }
    struct libdeflate_decompressor *d = thread_decompressor();
    if (!d) {
        snprintf(err, errlen, "out of memory starting to decompress the body");
        return INGEST_ENOMEM;
    }
    size_t room = first_guess(src, in_len, max_out); /* output bytes; cap is room + 1 */
    char *buf = malloc(room + 1);
    if (!buf)
        return fail(NULL, INGEST_ENOMEM, err, errlen, NOMEM);
    while (pos < in_len) {
        int is_gzip;
        const char *why = read_header(src, in_len, &pos, &is_gzip);
        if (why)
            return fail(buf, INGEST_EINVAL, err, errlen, why);
        size_t used, made;
        enum libdeflate_result r;
        while ((r = libdeflate_deflate_decompress_ex(d, src + pos, in_len - pos, buf + len, room - len, &used,
                                                     &made)) == LIBDEFLATE_INSUFFICIENT_SPACE) {
            if (room >= max_out) {
                char too[64];
                snprintf(too, sizeof too, "decompressed body exceeds %zu bytes", max_out);
                return fail(buf, INGEST_ETOOBIG, err, errlen, too);
            }
            size_t want = room < max_out / 2 ? room * 2 : max_out;
            if (want < MIN_CAP)
                want = min_size(MIN_CAP, max_out);
            char *b = realloc(buf, want + 1);
            if (!b)
                return fail(buf, INGEST_ENOMEM, err, errlen, NOMEM);
            buf = b;
            room = want;
        }
        if (r != LIBDEFLATE_SUCCESS)
            return fail(buf, INGEST_EINVAL, err, errlen, "corrupt or truncated deflate data");
        pos += used;
        size_t trailer = is_gzip ? 8 : 4;
        if (in_len - pos < trailer)
            return fail(buf, INGEST_EINVAL, err, errlen, TRUNCATED);
        if (is_gzip ? le32(src + pos) != libdeflate_crc32(0, buf + len, made)
                    : be32(src + pos) != libdeflate_adler32(1, buf + len, made))
            return fail(buf, INGEST_EINVAL, err, errlen, "incorrect data check");
        if (is_gzip && le32(src + pos + 4) != (uint32_t)made)
            return fail(buf, INGEST_EINVAL, err, errlen, "incorrect length check");
        pos += trailer;
        len += made;
    }
    if (room > 2 * len && room - len > MIN_CAP) { /* a guess far too big: give it back */
        char *b = realloc(buf, len + 1);
        if (b)
            buf = b;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return INGEST_OK;
}
