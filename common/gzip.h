/* gzip.h — gzip compression (RFC 1952, zlib level 6), the one compressor
 * of flamedb: pprof answers (query/encode_pprof.c) and the pushes of the
 * agent and of `flamedb import` (client/push.c).  Decompressing request
 * bodies, bounded by size and ratio, is ingest/gunzip.c's. */
#ifndef FLAMEDB_GZIP_H
#define FLAMEDB_GZIP_H

#include <stddef.h>

/* in[0..len) gzip'd into a malloc'd *out of *out_len bytes; 0, or -1
 * when out of memory. */
int gzip_compress(const void *in, size_t len, unsigned char **out, size_t *out_len);

#endif
