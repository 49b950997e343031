/* multipart.c — one field of a buffered multipart/form-data body.
 *
 * Pyroscope's SDKs push pprof as multipart/form-data with the fields
 * `profile`, optionally `prev_profile` and `sample_type_config`.  The body
 * is already buffered whole, so a field is found by scanning for the
 * boundary ("--" + boundary from the Content-Type header, at the start of
 * the body or after CRLF), reading the part's headers up to the blank line
 * and matching the name in Content-Disposition.  The answer points into the
 * body (zero-copy). */
#include "ingest_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The boundary parameter of a Content-Type, quoted or not. */
static int boundary_of(const char *ct, char *out, size_t cap)
{
    const char *p = ct;
    while ((p = strcasestr(p, "boundary="))) {
        if (p == ct || p[-1] == ';' || p[-1] == ' ' || p[-1] == '\t') break;
        p++;
    }
    if (!p) return -1;
    p += strlen("boundary=");
    size_t n;
    if (*p == '"') {
        const char *e = strchr(++p, '"');
        if (!e) return -1;
        n = (size_t)(e - p);
    } else {
        n = strcspn(p, "; \t");
    }
    if (n == 0 || n > 70 || n + 3 > cap) return -1;
    out[0] = out[1] = '-';
    memcpy(out + 2, p, n);
    out[n + 2] = '\0';
    return 0;
}

/* After a delimiter: "--" (the last) or optional blanks and a line end. */
static int delimiter_line(const char *p, const char *end)
{
    if (end - p >= 2 && p[0] == '-' && p[1] == '-') return 1;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p == end || *p == '\r' || *p == '\n';
}

/* The name="..." of a part's headers [h, e). */
static int part_name_is(const char *h, const char *e, const char *name)
{
    for (const char *p = h; p < e;) {
        const char *eol = memchr(p, '\n', (size_t)(e - p));
        if (!eol) eol = e;
        size_t ll = (size_t)(eol - p);
        if (ll > 20 && strncasecmp(p, "content-disposition:", 20) == 0) {
            for (const char *q = p; q + 6 < eol; q++) {
                if (strncmp(q, "name=\"", 6) || (q > p && q[-1] != ' ' && q[-1] != ';')) continue;
                q += 6;
                size_t nl = strlen(name);
                return (size_t)(eol - q) > nl && memcmp(q, name, nl) == 0 && q[nl] == '"';
            }
        }
        p = eol + 1;
    }
    return 0;
}

int ingest_multipart_is(const char *content_type)
{
    return content_type && strncasecmp(content_type, "multipart/form-data", 19) == 0;
}

ingest_status ingest_multipart_field(const char *content_type, const char *body, size_t len, const char *name,
                                     const char **out, size_t *out_len, char *err, size_t errlen)
{
    char delim[80];
    *out = NULL;
    *out_len = 0;
    if (!content_type || boundary_of(content_type, delim, sizeof delim)) {
        snprintf(err, errlen, "multipart/form-data without a valid boundary in Content-Type");
        return INGEST_EINVAL;
    }
    size_t dl = strlen(delim);
    const char *end = body + len;
    const char *p = memmem(body, len, delim, dl);
    if (!p) {
        snprintf(err, errlen, "multipart body: no part starts with the boundary");
        return INGEST_EINVAL;
    }
    for (;;) {
        p += dl;
        if (end - p >= 2 && p[0] == '-' && p[1] == '-') return INGEST_OK; /* closing delimiter */
        const char *h = memchr(p, '\n', (size_t)(end - p));
        if (!h) break;
        h++;
        const char *blank = memmem(h, (size_t)(end - h), "\r\n\r\n", 4);
        size_t skip = 4;
        if (end - h >= 2 && h[0] == '\r' && h[1] == '\n') blank = h - 2; /* no headers */
        if (!blank) break;
        const char *data = blank + skip;
        if (data > end) break;
        /* the part ends at CRLF + delimiter */
        const char *next = data;
        for (;;) {
            next = memmem(next, (size_t)(end - next), delim, dl);
            if (!next) break;
            if (next - data >= 2 && next[-2] == '\r' && next[-1] == '\n' && delimiter_line(next + dl, end)) break;
            next += 1;
        }
        if (!next) break;
        if (part_name_is(h, blank, name)) {
            *out = data;
            *out_len = (size_t)(next - 2 - data);
            return INGEST_OK;
        }
        p = next;
    }
    snprintf(err, errlen, "multipart body: truncated part (no closing boundary)");
    return INGEST_EINVAL;
}
