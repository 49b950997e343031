/* ingest_internal.h — private to ingest/: helpers its files share. */
#ifndef FLAMEDB_INGEST_INTERNAL_H
#define FLAMEDB_INGEST_INTERNAL_H

#include <protobuf-c/protobuf-c.h>

#include "ingest.h"

/* Writes a printable rendering of user bytes for an error message: at most
 * 64 bytes, control bytes (and all non-ASCII when not valid UTF-8) as '?',
 * "..." when cut.  dst always ends up NUL-terminated. */
void ingest_quote(char *dst, size_t cap, const char *s, size_t len);

/* pprof.c's core, for the formats that describe a pprof profile (OTLP):
 * decodes pb (its messages need not come from an unpack) into one
 * finished profile per sample type, out[0..n_sample_type), zeroed by the
 * caller; the stacks' text, at most max_out bytes, in out[0]'s arena.  On
 * error the caller frees what out holds (ingest_profile_free). */
struct Perftools__Profiles__Profile;
ingest_status ingest_pprof_decode(const struct Perftools__Profiles__Profile *pb, size_t max_out,
                                  const ingest_profile *base, int window_given, ingest_profile *out, char *err,
                                  size_t errlen);

/* Frees what writes a pprof decode's text later (pprof.c; NULL: nothing):
 * ingest_profile_free of the profile that owns it. */
struct pprof_later;
void pprof_later_free(struct pprof_later *later);

/* protojson.c: a message of descriptor d read from JSON text (protobuf's
 * JSON mapping; unknown keys ignored), or NULL with an error naming the
 * path of the value at fault.  Free with protobuf_c_message_free_unpacked. */
ProtobufCMessage *ingest_protojson_parse(const ProtobufCMessageDescriptor *d, const char *text, size_t len,
                                         char *err, size_t errlen);

#endif
