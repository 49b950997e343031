/* folded.c — parsing stack bodies: folded ("a;b;c 12") and lines ("a;b;c").
 *
 * The parser is on the ingest hot path, so it never copies and never
 * allocates per line: each stack points into the body, and the stack array
 * grows geometrically.  A line is handled in a few passes over its bytes,
 * each a library scan (memchr/memrchr) or a word-at-a-time loop:
 *
 *   1. find the end of the line ('\n'), trim trailing spaces, tabs and '\r';
 *      an empty result is a blank line and is skipped;
 *   2. folded only: split the count off at the last space, parse it as
 *      decimal digits within [1, INGEST_MAX_VALUE], trim the frames part;
 *   3. one pass of 8 bytes a step (frames_fast) counts the ';' separators
 *      and looks for empty frames, NUL bytes and the location separator,
 *      then UTF-8 is checked when a byte is not ASCII (valid per frame
 *      exactly when valid as a whole, since ';' is ASCII); anything amiss,
 *      located frames, or a span longer than a frame may be, takes the
 *      closer walk that names the frame at fault;
 *   4. keep the INGEST_MAX_DEPTH leaf-most frames of deeper stacks.
 *
 * The slow work of naming which frame is bad happens only on error.  Any
 * error rolls the profile back to its state on entry and says "line N: ..."
 * with N counted from 1 over all lines, blank ones included. */
#include "ingest_internal.h"

#include "../storage/frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ingest_format_parse(const char *name, ingest_format *out, char *err, size_t errlen)
{
    char q[80];

    if (name && strcmp(name, "folded") == 0) {
        *out = INGEST_FORMAT_FOLDED;
        return 0;
    }
    if (name && strcmp(name, "lines") == 0) {
        *out = INGEST_FORMAT_LINES;
        return 0;
    }
    ingest_quote(q, sizeof q, name ? name : "", name ? strlen(name) : 0);
    snprintf(err, errlen, "unknown format '%s' (supported: folded, lines)", q);
    return -1;
}

static int is_trailing_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

enum count_result { COUNT_OK, COUNT_NOT_INTEGER, COUNT_ZERO, COUNT_TOO_BIG };

/* Parses a count: decimal digits only, in [1, INGEST_MAX_VALUE]. */
static enum count_result parse_count(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    int too_big = 0;

    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return COUNT_NOT_INTEGER;
        if (!too_big) {
            v = v * 10 + (uint64_t)(s[i] - '0'); /* v <= INGEST_MAX_VALUE here: cannot wrap */
            too_big = v > INGEST_MAX_VALUE;
        }
    }
    if (too_big)
        return COUNT_TOO_BIG;
    if (v == 0)
        return COUNT_ZERO;
    *out = v;
    return COUNT_OK;
}

static ingest_status count_error(enum count_result r, const char *s, size_t n, size_t line,
                                 char *err, size_t errlen)
{
    char q[80];

    if (r == COUNT_TOO_BIG) {
        snprintf(err, errlen, "line %zu: count exceeds %llu", line,
                 (unsigned long long)INGEST_MAX_VALUE);
    } else if (r == COUNT_ZERO) {
        snprintf(err, errlen, "line %zu: count must be at least 1", line);
    } else {
        ingest_quote(q, sizeof q, s, n);
        snprintf(err, errlen, "line %zu: count '%s' is not a positive integer", line, q);
    }
    return INGEST_EINVAL;
}

/* Answers the 1-based number of the frame holding byte f[at]. */
static size_t frame_at(const char *f, size_t at)
{
    size_t k = 1;
    for (const char *s = f, *end = f + at; (s = memchr(s, ';', (size_t)(end - s))); s++)
        k++;
    return k;
}

/* Names the first frame that is not valid UTF-8 (the span as a whole is not). */
static size_t first_bad_utf8_frame(const char *f, size_t n)
{
    size_t k = 1;
    const char *s = f, *end = f + n;

    for (;;) {
        const char *semi = memchr(s, ';', (size_t)(end - s));
        const char *fe = semi ? semi : end;
        if (!utf8_valid(s, (size_t)(fe - s)) || !semi)
            return k;
        s = semi + 1;
        k++;
    }
}

/* Checks a frame in the located form (storage/frame.h): a name, then at
 * most four fields (file, line, mapping, build id), the line decimal. */
static ingest_status check_located(const char *s, const char *fe, size_t line, size_t k, char *err, size_t errlen)
{
    const char *sep = memchr(s, FRAME_SEP, (size_t)(fe - s));
    if (!sep) return INGEST_OK;
    if (sep == s) {
        snprintf(err, errlen, "line %zu: frame %zu has a location but no name", line, k);
        return INGEST_EINVAL;
    }
    int field = 0;
    for (const char *p = sep; p < fe; p++) {
        if (*p == FRAME_SEP) {
            if (++field > 4) {
                snprintf(err, errlen, "line %zu: frame %zu has more than 4 location fields "
                         "(file, line, mapping, build id)", line, k);
                return INGEST_EINVAL;
            }
        } else if (field == 2 && (*p < '0' || *p > '9')) {
            snprintf(err, errlen, "line %zu: frame %zu: the line of its location is not a number", line, k);
            return INGEST_EINVAL;
        }
    }
    return INGEST_OK;
}

/* The common case in one pass: a stack whose frames are all well formed
 * (no empty frame, no NUL, no location separator, valid UTF-8), short
 * enough that no frame can be too long.  Answers 1 and the depth, or 0
 * when the frames need check_frames' closer look (any error is named
 * there).  A pass of memchr per frame cost 5.6 % of the server's CPU under
 * bench_fleet (20 calls a line for frames of 12 bytes), a pass of 8 bytes
 * a step in a word 12.8 % (1.6 GB/s); with SSE2 (every x86-64) it goes 16
 * bytes a step in vector compares, else 8 in a word.  The tail is padded
 * with 'a', which no check looks for. */
#if defined(__SSE2__)
#include <emmintrin.h>

static int frames_fast(const char *f, size_t n, size_t *depth)
{
    if (n == 0 || n > INGEST_MAX_FRAME || f[0] == ';' || f[n - 1] == ';') return 0;
    const __m128i semi = _mm_set1_epi8(';'), nul = _mm_setzero_si128(), sep = _mm_set1_epi8(FRAME_SEP);
    __m128i semis = _mm_setzero_si128(); /* two 64-bit sums of ';' bytes */
    uint32_t bad = 0, high = 0, carry = 0;
    char tail[16];
    for (size_t i = 0; i < n; i += 16) {
        const char *at = f + i;
        if (n - i < 16) {
            memset(tail, 'a', sizeof tail);
            memcpy(tail, at, n - i);
            at = tail;
        }
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)at);
        __m128i eq = _mm_cmpeq_epi8(w, semi);
        uint32_t sc = (uint32_t)_mm_movemask_epi8(eq);
        bad |= sc & ((sc << 1) | carry); /* ";;": this byte and the one before */
        carry = sc >> 15;
        /* eq is 0xff at each ';': 0 - eq is 1 there, summed by psadbw */
        semis = _mm_add_epi64(semis, _mm_sad_epu8(_mm_sub_epi8(nul, eq), nul));
        bad |= (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(w, nul), _mm_cmpeq_epi8(w, sep)));
        high |= (uint32_t)_mm_movemask_epi8(w);
    }
    if (bad) return 0;
    if (high && !utf8_valid(f, n)) return 0;
    *depth = (size_t)_mm_cvtsi128_si64(semis) + (size_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(semis, semis)) + 1;
    return 1;
}
#else
/* The high bit of each byte of w that equals c (exact per byte: no borrow
 * runs between bytes). */
static inline uint64_t bytes_eq(uint64_t w, unsigned char c)
{
    const uint64_t low7 = UINT64_C(0x7f7f7f7f7f7f7f7f);
    uint64_t v = w ^ (UINT64_C(0x0101010101010101) * c);
    return ~(((v & low7) + low7) | v | low7);
}

static int frames_fast(const char *f, size_t n, size_t *depth)
{
    if (n == 0 || n > INGEST_MAX_FRAME || f[0] == ';' || f[n - 1] == ';') return 0;
    uint64_t bad = 0, any = 0, carry = 0;
    size_t semis = 0;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = UINT64_C(0x6161616161616161); /* the tail padded with 'a' */
        memcpy(&w, f + i, n - i < 8 ? n - i : 8);
        uint64_t sc = bytes_eq(w, ';');
        bad |= sc & ((sc << 8) | carry); /* ";;": this byte and the one before */
        carry = sc >> 56;
        /* sc has a bit only at each byte's top: summing the bytes of
         * sc >> 7 by one multiply counts them (__builtin_popcountll is a
         * call to libgcc's __popcountdi2 without -mpopcnt). */
        semis += (size_t)(((sc >> 7) * UINT64_C(0x0101010101010101)) >> 56);
        bad |= bytes_eq(w, 0) | bytes_eq(w, (unsigned char)FRAME_SEP);
        any |= w;
    }
    if (bad) return 0;
    if ((any & UINT64_C(0x8080808080808080)) && !utf8_valid(f, n)) return 0;
    *depth = semis + 1;
    return 1;
}
#endif

/* Validates the frames of one stack and answers their number in *depth. */
static ingest_status check_frames(const char *f, size_t n, size_t line, int located, size_t *depth,
                                  char *err, size_t errlen)
{
    if (!located && frames_fast(f, n, depth)) return INGEST_OK;
    const char *s = f, *end = f + n, *nul;
    size_t k = 1;

    for (;;) {
        const char *semi = memchr(s, ';', (size_t)(end - s));
        const char *fe = semi ? semi : end;
        if (fe == s) {
            snprintf(err, errlen, "line %zu: empty frame %zu", line, k);
            return INGEST_EINVAL;
        }
        if (located && check_located(s, fe, line, k, err, errlen)) return INGEST_EINVAL;
        if (fe - s > INGEST_MAX_FRAME + (located ? 2 * 1024 + 160 : 0)) {
            snprintf(err, errlen, "line %zu: frame %zu is longer than %d bytes", line, k,
                     INGEST_MAX_FRAME);
            return INGEST_EINVAL;
        }
        if (!semi)
            break;
        s = semi + 1;
        k++;
    }
    if ((nul = memchr(f, '\0', n))) {
        snprintf(err, errlen, "line %zu: frame %zu contains a NUL byte", line,
                 frame_at(f, (size_t)(nul - f)));
        return INGEST_EINVAL;
    }
    /* the separator of a frame's location (storage/frame.h): only with
     * locations=1, checked above */
    if (!located && (nul = memchr(f, FRAME_SEP, n))) {
        snprintf(err, errlen, "line %zu: frame %zu contains the control character U+001F "
                 "(a frame's location separator: send locations=1 for frames with locations)", line,
                 frame_at(f, (size_t)(nul - f)));
        return INGEST_EINVAL;
    }
    if (!utf8_valid(f, n)) {
        snprintf(err, errlen, "line %zu: frame %zu is not valid UTF-8", line,
                 first_bad_utf8_frame(f, n));
        return INGEST_EINVAL;
    }
    *depth = k;
    return INGEST_OK;
}

static ingest_status push_stack(ingest_profile *p, const char *f, size_t n, uint64_t count,
                                size_t depth, size_t line, char *err, size_t errlen)
{
    if (count > INGEST_MAX_VALUE - p->total) {
        snprintf(err, errlen, "line %zu: total of all counts exceeds %llu", line,
                 (unsigned long long)INGEST_MAX_VALUE);
        return INGEST_EINVAL;
    }
    if (depth > INGEST_MAX_DEPTH) {
        /* Skip the root-most frames: the leaf keeps its self time. */
        for (size_t skip = depth - INGEST_MAX_DEPTH; skip > 0; skip--) {
            const char *semi = memchr(f, ';', n);
            n -= (size_t)(semi + 1 - f);
            f = semi + 1;
        }
        p->truncated_stacks++;
    }
    if (p->n_stacks == p->cap_stacks) {
        size_t cap = p->cap_stacks ? p->cap_stacks * 2 : 256;
        ingest_stack *st = cap <= SIZE_MAX / sizeof *st ? realloc(p->stacks, cap * sizeof *st)
                                                         : NULL;
        if (!st) {
            snprintf(err, errlen, "line %zu: out of memory for %zu stacks", line, cap);
            return INGEST_ENOMEM;
        }
        p->stacks = st;
        p->cap_stacks = cap;
    }
    if (p->hashes) { /* they would no longer match the stacks */
        free(p->hashes);
        p->hashes = NULL;
    }
    /* n fits: at most INGEST_MAX_DEPTH frames of INGEST_MAX_FRAME bytes. */
    p->stacks[p->n_stacks++] = (ingest_stack){ .frames = f, .len = (uint32_t)n, .count = count };
    p->total += count;
    return INGEST_OK;
}

/* Parses one non-blank line [s, e), already trimmed of trailing blanks. */
static ingest_status parse_line(ingest_profile *p, ingest_format fmt, const char *s,
                                const char *e, size_t line, char *err, size_t errlen)
{
    const char *fe = e;
    uint64_t count = 1;
    size_t depth;
    ingest_status st;

    if (fmt == INGEST_FORMAT_FOLDED) {
        const char *sp = memrchr(s, ' ', (size_t)(e - s));
        if (!sp) {
            snprintf(err, errlen, "line %zu: missing count (expected '<frames> <count>')",
                     line);
            return INGEST_EINVAL;
        }
        enum count_result r = parse_count(sp + 1, (size_t)(e - sp - 1), &count);
        if (r != COUNT_OK)
            return count_error(r, sp + 1, (size_t)(e - sp - 1), line, err, errlen);
        for (fe = sp; fe > s && (fe[-1] == ' ' || fe[-1] == '\t'); fe--)
            ;
        if (fe == s) {
            snprintf(err, errlen, "line %zu: empty stack", line);
            return INGEST_EINVAL;
        }
    }
    if ((st = check_frames(s, (size_t)(fe - s), line, p->located_frames, &depth, err, errlen)) != INGEST_OK)
        return st;
    return push_stack(p, s, (size_t)(fe - s), count, depth, line, err, errlen);
}

ingest_status ingest_parse_stacks(ingest_profile *p, ingest_format fmt,
                                  const char *body, size_t len,
                                  char *err, size_t errlen)
{
    size_t n_stacks = p->n_stacks, line = 0;
    uint64_t total = p->total, truncated = p->truncated_stacks;
    const char *pos = body, *end;

    if (fmt != INGEST_FORMAT_FOLDED && fmt != INGEST_FORMAT_LINES) {
        snprintf(err, errlen, "unknown format %d", (int)fmt);
        return INGEST_EINVAL;
    }
    if (len == 0)
        return INGEST_OK;
    end = body + len;
    while (pos < end) {
        const char *nl = memchr(pos, '\n', (size_t)(end - pos));
        const char *s = pos, *e = nl ? nl : end;
        pos = nl ? nl + 1 : end;
        line++;
        while (e > s && is_trailing_space(e[-1]))
            e--;
        if (e == s)
            continue;
        ingest_status st = parse_line(p, fmt, s, e, line, err, errlen);
        if (st != INGEST_OK) {
            p->n_stacks = n_stacks;
            p->total = total;
            p->truncated_stacks = truncated;
            return st;
        }
    }
    return INGEST_OK;
}
