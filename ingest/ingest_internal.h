/* ingest_internal.h — private to ingest/: helpers its files share. */
#ifndef FLAMEDB_INGEST_INTERNAL_H
#define FLAMEDB_INGEST_INTERNAL_H

#include "ingest.h"

/* Writes a printable rendering of user bytes for an error message: at most
 * 64 bytes, control bytes (and all non-ASCII when not valid UTF-8) as '?',
 * "..." when cut.  dst always ends up NUL-terminated. */
void ingest_quote(char *dst, size_t cap, const char *s, size_t len);

#endif
