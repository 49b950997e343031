/* fuzz.h — shared by the fuzz harnesses (tests/fuzz/fuzz_*.c).
 *
 * Each harness defines LLVMFuzzerTestOneInput: it hands the input to one
 * real parser or decoder, checks what must hold of any answer, and frees
 * everything.  Built two ways (Makefile): with clang's libFuzzer for
 * `make fuzz`, and with replay.c's main for `make fuzz-replay`, which runs
 * the seed corpus and every saved crash input once under ASan/UBSan. */
#ifndef FLAMEDB_FUZZ_H
#define FLAMEDB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a crash the fuzzer reports, like a sanitizer's. */
#define FUZZ_CHECK(cond)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);  \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* The input as a NUL-terminated string (parsers of query parameters and
 * header values get C strings): malloc'd, exactly size + 1 bytes so ASan
 * sees any read past the end.  NULL on out of memory. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return NULL;
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
