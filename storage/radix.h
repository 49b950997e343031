/* radix.h — one LSD radix sort for arrays of structs keyed by a u32
 * field, distinct or not, stable: 11 bits a pass (three passes), a pass
 * skipped when every key has the same digit there (small ids need one or
 * two).  RADIX_SORT_U32(name, type, field) defines
 *     static type *name(type *a, type *tmp, size_t n)
 * which sorts the n elements at a using tmp (n elements) and answers
 * where the sorted ones are (a or tmp); RADIX_SORT_U32_BY(name, type, )
 * sorts plain u32s (the key is the element followed by its third
 * argument: `.field`, or nothing).  A macro, not a function over
 * void * and a size, so that each element moves as its own type (the
 * block preparation's pairs, prep.c; a rollup build's sums, rollup.c; a
 * segment's node ids, segment.c). */
#ifndef FLAMEDB_RADIX_H
#define FLAMEDB_RADIX_H

#include <stddef.h>

#define RADIX_SORT_U32_BY(name, type, member)                                                   \
    static type *name(type *a, type *tmp, size_t n)                                         \
    {                                                                                       \
        for (int shift = 0; shift < 32; shift += 11) {                                      \
            size_t count[2048] = { 0 };                                                     \
            for (size_t i = 0; i < n; i++) count[(a[i] member >> shift) & 2047]++;           \
            if (n && count[(a[0] member >> shift) & 2047] == n) continue;                    \
            size_t sum = 0;                                                                 \
            for (int d = 0; d < 2048; d++) {                                                \
                size_t c = count[d];                                                        \
                count[d] = sum;                                                             \
                sum += c;                                                                   \
            }                                                                               \
            for (size_t i = 0; i < n; i++) tmp[count[(a[i] member >> shift) & 2047]++] = a[i]; \
            type *x = a;                                                                    \
            a = tmp;                                                                        \
            tmp = x;                                                                        \
        }                                                                                   \
        return a;                                                                           \
    }

/* Sorted by a field: RADIX_SORT_U32(sort_pairs, pair, node). */
#define RADIX_SORT_U32(name, type, field) RADIX_SORT_U32_BY(name, type, .field)

#endif
