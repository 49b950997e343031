/* utf8.c — strict UTF-8 validation, for frames and label values on the
 * server (ingest/) and frame texts in the agent.
 *
 * Strict means what RFC 3629 and Unicode's table 3-7 allow and nothing
 * more: no overlong forms (C0, C1, E0 80..9F, F0 80..8F), no UTF-16
 * surrogates (ED A0..BF), nothing above U+10FFFF (F4 90.., F5..FF) and no
 * stray or missing continuation bytes.  U+0000 is valid UTF-8; callers
 * that refuse NUL bytes check for them themselves.
 *
 * Frames are almost always ASCII, so the loop first skips ASCII eight bytes
 * at a time (one load and one mask test per word) and only decodes a
 * sequence byte by byte when a high bit shows up. */
#include "utf8.h"

#include <stdint.h>
#include <string.h>

#define HIGH_BITS UINT64_C(0x8080808080808080)

/* Answers the length of the valid multi-byte sequence at s[0..n), or 0. */
static size_t seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
    size_t len;

    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;      /* overlong */
        else if (c == 0xED) hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;      /* overlong */
        else if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0; /* continuation byte, C0, C1 or F5..FF */
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

int utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < len) {
        while (len - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & HIGH_BITS)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = seq_len(s + i, len - i);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}
