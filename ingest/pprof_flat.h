/* pprof_flat.h — private to ingest/: a pprof profile.proto as flat arrays,
 * what pprof.c decodes from.
 *
 * protobuf-c's unpack makes one malloc'd struct per message (every Sample,
 * Location, Line, Function) and a copy of every string (issue 11, point 6).
 * The flat form holds the same fields in a few arrays: the messages of each
 * kind side by side, their repeated scalars (a sample's location ids and
 * values, a location's lines) in one shared array each, addressed by
 * offset, and the string table as NUL-terminated copies in one block.
 * Only the fields flamedb reads are kept (sample labels' key, str and num,
 * not num_unit; no comments, drop/keep frames, system names).
 *
 * Two producers: pprof_wire_decode (pprof_wire.c) reads the wire format
 * straight from the (gunzipped) body, and pprof.c's ingest_pprof_decode
 * converts protobuf-c structs built by hand (OTLP's translation). */
#ifndef FLAMEDB_PPROF_FLAT_H
#define FLAMEDB_PPROF_FLAT_H

#include <stddef.h>
#include <stdint.h>

#include "ingest.h"

typedef struct { int64_t type, unit; } pprof_value_type;           /* string indices */
typedef struct { size_t loc0, n_loc, val0, n_val, lab0, n_lab; } pprof_sample; /* into location_ids, values, labels */
typedef struct { int64_t key, str, num; } pprof_label;               /* string indices, and num */
typedef struct { uint64_t id, memory_start, file_offset; int64_t filename, build_id; } pprof_mapping;
typedef struct { int64_t function_id, line; } pprof_line;
typedef struct { uint64_t id, mapping_id, address; size_t line0, n_line; } pprof_location; /* into lines */
typedef struct { uint64_t id; int64_t name, filename; } pprof_function;

/* The arrays are never NULL, even when empty. */
typedef struct {
    pprof_value_type *sample_type;
    size_t n_sample_type;
    pprof_sample *sample;
    size_t n_sample;
    uint64_t *location_ids;       /* every sample's, one after the other */
    size_t n_location_ids;
    int64_t *values;              /* every sample's */
    pprof_label *labels;          /* every sample's */
    size_t n_labels;
    pprof_mapping *mapping;
    size_t n_mapping;
    pprof_location *location;
    size_t n_location;
    pprof_line *lines;            /* every location's */
    size_t n_lines;
    pprof_function *function;
    size_t n_function;
    char **string_table;          /* NUL-terminated (cut at a NUL the string holds, as protobuf-c's are) */
    size_t n_string_table;
    int64_t time_nanos, duration_nanos, period;
    int has_period_type;
    pprof_value_type period_type;
    /* what the arrays above live in (pprof_flat_free frees them) */
    char *strings;                /* the string table's bytes */
} pprof_flat;

/* Reads a profile.proto message of len bytes into *f (zeroed first; free
 * with pprof_flat_free, also on error).  Accepts exactly what protobuf-c
 * 1.4's unpack of profile.proto accepts: unknown fields skipped, packed or
 * unpacked repeated scalars, the last of a repeated singular field (a
 * second period_type replaces the first), and rejects what it rejects (a
 * truncated field, a known field of the wrong wire type, groups).  On
 * INGEST_EINVAL err says which message and field, at which byte. */
ingest_status pprof_wire_decode(const unsigned char *buf, size_t len, pprof_flat *f, char *err, size_t errlen);
void pprof_flat_free(pprof_flat *f);

/* pprof.c's core over the flat form: one finished profile per sample
 * type into out[0..n_sample_type), zeroed by the caller (see
 * ingest_pprof_decode in ingest_internal.h). */
ingest_status pprof_flat_decode(const pprof_flat *f, size_t max_out, const ingest_profile *base, int window_given,
                                ingest_profile *out, char *err, size_t errlen);

#endif
