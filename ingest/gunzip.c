/* gunzip.c — inflating Content-Encoding: gzip bodies, bombs included.
 *
 * zlib is opened with windowBits 15+32 so that it recognises both gzip and
 * zlib headers.  A gzip file may hold several members back to back (what
 * `cat a.gz b.gz` makes); after each member's end the stream is reset and
 * inflation goes on while input remains, so anything after a member that is
 * not another member is an error.
 *
 * The output buffer starts small and doubles, but never beyond max_out + 1
 * bytes: the extra byte is how an oversized body is noticed, so a gzip bomb
 * costs at most max_out + 2 bytes of memory (one more for a terminating
 * NUL, which callers may rely on but need not) before it is refused.
 * zlib counts in uInt, so input and output are fed in slices of at most
 * UINT_MAX bytes. */
#include "ingest.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define FIRST_CAP ((size_t)64 * 1024)
#define NOMEM "out of memory decompressing the body"

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Grows *buf so that it has room for more output; limit counts the NUL. */
static int grow(char **buf, size_t *cap, size_t limit)
{
    size_t want = *cap < limit / 2 ? *cap * 2 : limit;
    char *b = realloc(*buf, want);
    if (!b)
        return -1;
    *buf = b;
    *cap = want;
    return 0;
}

/* Ends a failed inflation: says why and frees what was made. */
static ingest_status fail(z_stream *z, char *buf, ingest_status st, char *err,
                          size_t errlen, const char *why)
{
    if (st == INGEST_EINVAL)
        snprintf(err, errlen, "body is not valid gzip: %s", why);
    else
        snprintf(err, errlen, "%s", why);
    inflateEnd(z);
    free(buf);
    return st;
}

ingest_status ingest_gunzip(const void *in, size_t in_len, size_t max_out,
                            char **out, size_t *out_len, char *err, size_t errlen)
{
    z_stream z;
    const unsigned char *src = in;
    size_t src_left = in_len, len = 0;
    /* Room for max_out bytes, one byte to detect more, and a NUL. */
    size_t limit = max_out <= SIZE_MAX - 2 ? max_out + 2 : SIZE_MAX;
    size_t cap = min_size(limit, in_len < FIRST_CAP / 4 ? FIRST_CAP
                                                        : min_size(in_len, SIZE_MAX / 4) * 4);
    char *buf;
    int ret = Z_OK;

    *out = NULL;
    *out_len = 0;
    if (in_len == 0) {
        snprintf(err, errlen, "body is not valid gzip: the body is empty");
        return INGEST_EINVAL;
    }
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) {
        snprintf(err, errlen, "out of memory starting to decompress the body");
        return INGEST_ENOMEM;
    }
    if (!(buf = malloc(cap)))
        return fail(&z, NULL, INGEST_ENOMEM, err, errlen, NOMEM);
    for (;;) {
        if (z.avail_in == 0 && src_left > 0) {
            z.next_in = (unsigned char *)src; /* zlib does not write through it */
            z.avail_in = (uInt)min_size(src_left, UINT_MAX);
            src += z.avail_in;
            src_left -= z.avail_in;
        }
        if (len + 1 >= cap) { /* keep one byte for the NUL */
            if (cap >= limit)
                break; /* max_out + 1 bytes: too big */
            if (grow(&buf, &cap, limit) != 0)
                return fail(&z, buf, INGEST_ENOMEM, err, errlen, NOMEM);
        }
        z.next_out = (unsigned char *)buf + len;
        z.avail_out = (uInt)min_size(cap - 1 - len, UINT_MAX);
        uInt before = z.avail_out;
        ret = inflate(&z, Z_NO_FLUSH);
        len += before - z.avail_out;
        if (ret == Z_STREAM_END) {
            if (z.avail_in == 0 && src_left == 0)
                break;
            if (inflateReset(&z) != Z_OK) /* another member follows */
                return fail(&z, buf, INGEST_EINVAL, err, errlen,
                            "cannot restart after a member");
            continue;
        }
        if (ret == Z_BUF_ERROR && z.avail_in == 0 && src_left == 0)
            return fail(&z, buf, INGEST_EINVAL, err, errlen,
                        "unexpected end of data (truncated?)");
        if (ret == Z_MEM_ERROR)
            return fail(&z, buf, INGEST_ENOMEM, err, errlen, NOMEM);
        if (ret != Z_OK && ret != Z_BUF_ERROR)
            return fail(&z, buf, INGEST_EINVAL, err, errlen, z.msg ? z.msg : "corrupt data");
    }
    if (len > max_out) {
        char why[64];
        snprintf(why, sizeof why, "decompressed body exceeds %zu bytes", max_out);
        return fail(&z, buf, INGEST_ETOOBIG, err, errlen, why);
    }
    inflateEnd(&z);
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return INGEST_OK;
}
