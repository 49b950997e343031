/* utf8.h — strict UTF-8 validation (utf8.c): RFC 3629 and Unicode's table
 * 3-7, no overlongs, no surrogates, nothing above U+10FFFF. */
#ifndef FLAMEDB_UTF8_H
#define FLAMEDB_UTF8_H

#include <stddef.h>

/* 1 when s[0..len) is valid UTF-8 (U+0000 included), else 0. */
int utf8_valid(const char *s, size_t len);

#endif
