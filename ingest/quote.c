/* quote.c — quoting user bytes inside error messages, so a message names
 * the offending text without breaking the JSON it travels in. */
#include <string.h>

#include "ingest_internal.h"

/* Writes a printable rendering of user bytes for an error message: at most
 * 64 bytes, control bytes (and all non-ASCII when not valid UTF-8) as '?',
 * "..." when cut. */
void ingest_quote(char *dst, size_t cap, const char *s, size_t len)
{
    int utf8 = utf8_valid(s, len);
    size_t n = len > 64 ? 64 : len, o = 0;

    while (utf8 && n > 0 && n < len && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--; /* do not cut a character in half */
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        dst[o++] = (c < 0x20 || c == 0x7F || (c >= 0x80 && !utf8)) ? '?' : (char)c;
    }
    if (n < len && o + 4 <= cap) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = '\0';
}
