/* ingest.h — the public face of ingest/: turning request bytes into
 * validated profiles.
 *
 * ingest/ knows nothing of HTTP or LMDB.  The server hands it the body and
 * the request's parameters; it answers either a complete, validated
 * ingest_profile or an error code plus a message naming the line, parameter
 * or label at fault.  Nothing is ever half-parsed: on error the profile is
 * left empty, so a rejected request stores nothing.
 *
 * Stacks are zero-copy where possible: an ingest_stack points at its frames
 * (root first, joined by ';') inside the body buffer, which therefore must
 * outlive the profile.  Frames never contain ';' or '\n', are non-empty,
 * valid UTF-8 and their names at most INGEST_MAX_FRAME bytes; a frame may
 * carry its location (file, line, mapping) after its name in the form of
 * storage/frame.h (pprof input), and folded text may not contain the
 * form's separator.  Stacks deeper than
 * INGEST_MAX_DEPTH keep their INGEST_MAX_DEPTH leaf-most frames (self time
 * stays with the right function) and are counted in truncated_stacks. */
#ifndef FLAMEDB_INGEST_H
#define FLAMEDB_INGEST_H

#include "../common/utf8.h"
#include "../storage/hash.h"
#include <stddef.h>
#include <stdint.h>

#define INGEST_MAX_LABELS 32
#define INGEST_MAX_LABEL_NAME 128
#define INGEST_MAX_LABEL_VALUE 1024
#define INGEST_MAX_FRAME 4096
#define INGEST_MAX_DEPTH 1024
#define INGEST_MAX_UNIT 64
/* Sample labels (pprof Sample.label, OTLP sample attributes and links)
 * kept as pseudo-frames (storage/store.h): at most this many keys a sample
 * (the first in key order), and this many distinct values of one key in
 * one request (later new values become "other"). */
#define INGEST_MAX_SAMPLE_LABELS 16
#define INGEST_MAX_SAMPLE_VALUES 1000
/* Counts (and counts weighted by 1e9/rate) stay exact in a JSON double. */
#define INGEST_MAX_VALUE ((UINT64_C(1) << 53) - 1)

typedef enum {
    INGEST_OK = 0,
    INGEST_EINVAL,   /* malformed input: answer 400 */
    INGEST_ETOOBIG,  /* over a size limit (decompressed body): answer 413 */
    INGEST_ENOMEM    /* out of memory: answer 500 */
} ingest_status;

typedef struct {
    char *name;   /* owned, NUL-terminated */
    char *value;  /* owned, NUL-terminated */
} ingest_label;

typedef struct {
    const char *frames; /* root-first frames joined by ';', not NUL-terminated */
    uint32_t len;       /* bytes in frames */
    uint64_t count;     /* > 0 */
} ingest_stack;

/* What a profile says of the samples behind its values.  Statistics need
 * the number of samples: a Go CPU profile of 395 samples holds 3.95e9
 * nanoseconds.  By default ingest_profile_finish decides from the unit:
 * counts in a unit that counts samples (ingest_unit_counts_samples) are
 * samples; in any other unit (bytes, nanoseconds) nobody knows. */
typedef enum {
    INGEST_SAMPLES_FROM_UNIT = 0,
    INGEST_SAMPLES_KNOWN,      /* samples is set */
    INGEST_SAMPLES_UNKNOWN
} ingest_samples;

/* How a type merges over time: counters (CPU, allocations) add up;
 * gauges (in-use memory, goroutines: snapshots) average.  By default
 * finish decides from the type (ingest_type_is_gauge). */
typedef enum {
    INGEST_AGG_FROM_TYPE = 0,
    INGEST_AGG_SUM,
    INGEST_AGG_AVERAGE
} ingest_aggregation;

typedef struct {
    ingest_label labels[INGEST_MAX_LABELS]; /* sorted by name after finish */
    int n_labels;
    int64_t from_ms, until_ms;  /* the window [from, until) */
    double rate;                /* sampling frequency in Hz; 0 = none */
    char unit[INGEST_MAX_UNIT]; /* "samples" unless said otherwise */
    ingest_stack *stacks;       /* owned array */
    size_t n_stacks, cap_stacks;
    uint64_t total;             /* sum of all counts, in the unit */
    ingest_samples samples_how; /* after finish: INGEST_SAMPLES_KNOWN or _UNKNOWN */
    uint64_t samples;           /* with INGEST_SAMPLES_KNOWN: the samples behind the values */
    ingest_aggregation aggregation; /* after finish: SUM or AVERAGE */
    uint64_t truncated_stacks;  /* stacks cut to INGEST_MAX_DEPTH frames */
    int located_frames;         /* set by the caller: folded frames may carry their location
                                   (storage/frame.h), as an agent that knows lines sends them */
    int sample_labels;          /* set by the caller (pprof, OTLP base): keep sample labels as
                                   pseudo-frames at the root of each stack (storage/store.h) */
    uint64_t sample_labels_kept;    /* labels written (a label of a sample counts once) */
    uint64_t sample_labels_dropped; /* left out: numeric, a key that is no label name, not UTF-8,
                                       past INGEST_MAX_SAMPLE_LABELS keys */
    uint64_t sample_values_other;   /* values written as "other": past INGEST_MAX_SAMPLE_VALUES */
    char *arena;                /* owned bytes that stacks may point into */
    size_t arena_len, arena_cap;
    hash128 *hashes;            /* owned, optional (pprof, OTLP): hashes[i] identifies stacks[i]'s
                                   frames: storage's hash of them (hash_bytes128), taken while the
                                   text was written, or with text_later a key over what the text
                                   is made of (equal keys, equal text); NULL when not taken.
                                   Whatever changes the stacks frees and clears it */
    int text_later;             /* set by the caller (pprof base): leave the stacks' text unwritten
                                   (see ingest_pprof_write_text) */
    struct pprof_later *later;  /* owned (pprof with text_later, the first profile): what writes
                                   the text later */
} ingest_profile;

/* Input formats of a stack body. */
typedef enum {
    INGEST_FORMAT_FOLDED,  /* "a;b;c 12" per line */
    INGEST_FORMAT_LINES    /* "a;b;c" per line, each occurrence counts 1 */
} ingest_format;

void ingest_profile_init(ingest_profile *p);
void ingest_profile_free(ingest_profile *p);

/* Parses a format name ("folded", "lines"); answers -1 when unknown and
 * writes an error listing the supported names. */
int ingest_format_parse(const char *name, ingest_format *out, char *err, size_t errlen);

/* Adds a label after validating it: name matches [a-zA-Z_][a-zA-Z0-9_.]* and
 * is at most 128 bytes, value is non-empty UTF-8 of at most 1024 bytes, at
 * most 32 labels, no duplicate name.  Errors name the label. */
ingest_status ingest_label_add(ingest_profile *p, const char *name, const char *value,
                               char *err, size_t errlen);

/* Returns the value of label `name`, or NULL. */
const char *ingest_label_get(const ingest_profile *p, const char *name);

/* Parses a stack body in the given format and appends its stacks to p.
 * Blank lines are skipped, CRLF is accepted.  Errors say "line N: ...". */
ingest_status ingest_parse_stacks(ingest_profile *p, ingest_format fmt,
                                  const char *body, size_t len,
                                  char *err, size_t errlen);

/* Checks the profile is complete (service present, type defaulted to cpu,
 * counts times the rate weight within INGEST_MAX_VALUE), sorts labels and
 * decides samples_how and aggregation where the caller left them to the
 * defaults.  Call after labels and stacks are set. */
ingest_status ingest_profile_finish(ingest_profile *p, char *err, size_t errlen);

/* Returns 1 when counts in this unit are samples: samples, count, and
 * Pyroscope's objects, goroutines, lock_samples. */
int ingest_unit_counts_samples(const char *unit);

/* Returns 1 when a profile type is a snapshot (a gauge) unless the client
 * says otherwise: inuse_space, inuse_objects, goroutine, goroutines. */
int ingest_type_is_gauge(const char *type);

/* Parses an aggregation name ("sum", "average"); answers -1 when unknown. */
int ingest_aggregation_parse(const char *name, ingest_aggregation *out);

/* Pyroscope's application name: "service[.type]{k=v,...}".  Adds the labels
 * service, type and each k=v to p.  Errors name what is wrong. */
ingest_status ingest_pyroscope_name(ingest_profile *p, const char *name,
                                    char *err, size_t errlen);

/* Returns 1 when s is one of Pyroscope's profile type suffixes. */
int ingest_pyroscope_is_type(const char *s, size_t len);

/* Gunzips in into a new malloc'd buffer (*out, *out_len, caller frees).
 * Answers INGEST_ETOOBIG when the output would exceed max_out bytes (a gzip
 * bomb never allocates more than max_out), INGEST_EINVAL when in is not
 * valid gzip. */
ingest_status ingest_gunzip(const void *in, size_t in_len, size_t max_out,
                            char **out, size_t *out_len, char *err, size_t errlen);

/* protojson.c: a message of descriptor d read from JSON text (protobuf's
 * JSON mapping; unknown keys ignored), or NULL with an error naming the
 * path of the value at fault.  Free with protobuf_c_message_free_unpacked.
 * (Also Connect's application/json: server/connect.c.) */
struct ProtobufCMessageDescriptor;
struct ProtobufCMessage;
struct ProtobufCMessage *ingest_protojson_parse(const struct ProtobufCMessageDescriptor *d, const char *text,
                                                size_t len, char *err, size_t errlen);

/* ---- pprof (pprof.c, multipart.c) ------------------------------------ */

/* Decodes a pprof profile.proto, gzip'd (gunzipped to at most max_out
 * bytes: INGEST_ETOOBIG beyond) or raw, into one finished profile per
 * sample type (*out, *n_out): labels copied from base except `type`, which
 * is the sample type's name; unit the sample type's unit; window from
 * time_nanos/duration_nanos (duration 0: 10 s) unless window_given, else
 * base's.  Stacks root first, inlined lines caller first; their text
 * (deep stacks cut first) at most max_out bytes too.  On error nothing
 * is returned.  The profiles share one arena: free them together with
 * ingest_pprof_free. */
ingest_status ingest_pprof_parse(const void *body, size_t len, size_t max_out, const ingest_profile *base,
                                 int window_given, ingest_profile **out, size_t *n_out, char *err, size_t errlen);

/* Other threads a decode may use: run(ctx, n, task, arg) calls task(arg,
 * i) once for every i in [0, n), in any order and on any threads (the
 * caller's among them), and returns when all have returned; width is how
 * many threads may run them at once.  The server's parse pool lends its
 * idle threads (server/workpool.c). */
typedef struct {
    void (*run)(void *ctx, size_t n, void (*task)(void *arg, size_t i), void *arg);
    void *ctx;
    unsigned width;
} ingest_par;

/* ingest_pprof_parse, writing the locations' and the stacks' text (and
 * hashing the stacks) on par's threads; par NULL: on the caller's alone.
 * The same profiles either way. */
ingest_status ingest_pprof_parse_par(const void *body, size_t len, size_t max_out, const ingest_profile *base,
                                     int window_given, const ingest_par *par, ingest_profile **out, size_t *n_out,
                                     char *err, size_t errlen);
void ingest_pprof_free(ingest_profile *profiles, size_t n);

/* Text later (base->text_later; issue 11, point 6).  A store that already
 * knows a stack needs only its key, and most stacks of a service's next
 * profile are known: so the decode computes each stack's key from what its
 * text is made of (the key of each location, from its functions' and
 * mapping's strings and its lines, once a location; a stack's key over its
 * locations' keys) without writing any text, and the stacks point at
 * their final places in the arena, which holds no text until
 * ingest_pprof_write_text writes it.  Everything is checked as without
 * text_later: errors are the same, and only the writing is left.
 *
 * Writes the text of the stacks of profiles[0..n) (as ingest_pprof_parse
 * returned them with base->text_later) that need it: stack i of profile t
 * when leaves[t][i] is 0, every stack when leaves is NULL; par as in
 * ingest_pprof_parse_par (NULL: on the caller's thread).  Text already
 * written is not written again; without text_later it does nothing.
 * Cannot fail. */
void ingest_pprof_write_text(ingest_profile *profiles, size_t n, const uint32_t *const *leaves,
                             const ingest_par *par);

/* ---- OpenTelemetry profiles (otlp.c) ------------------------------------ */

#define INGEST_OTLP_MAX_PROFILES 4096

/* What an OTLP request holds for the store: finished profiles, each with
 * its own arena (free with ingest_otlp_free), and the profiles left out
 * because they hold no sample with a value (OTLP's partial success). */
typedef struct {
    ingest_profile *profiles;
    size_t n;
    size_t rejected;
    char rejected_why[160]; /* the first one left out, and why */
} ingest_otlp;

/* Decodes an ExportProfilesServiceRequest (binary protobuf, or its JSON
 * mapping when json) into profiles: labels from base and the resources'
 * attributes, type and unit from each profile's sample type (a sampled
 * count becomes its period's type, e.g. cpu in nanoseconds), window from
 * its time and duration unless window_given.  Everything or nothing: on
 * error *out is empty and err names the profile and field.  The stacks'
 * text is at most max_out bytes in all. */
ingest_status ingest_otlp_parse(const void *body, size_t len, int json, size_t max_out, const ingest_profile *base,
                                int window_given, ingest_otlp *out, char *err, size_t errlen);
void ingest_otlp_free(ingest_otlp *o);

/* Returns 1 when a Content-Type is multipart/form-data. */
int ingest_multipart_is(const char *content_type);

/* Finds field `name` of a buffered multipart/form-data body (boundary from
 * content_type): *out points into body, NULL when the field is absent.
 * INGEST_EINVAL when the body or Content-Type is malformed. */
ingest_status ingest_multipart_field(const char *content_type, const char *body, size_t len, const char *name,
                                     const char **out, size_t *out_len, char *err, size_t errlen);

/* ---- perf script (perfscript.c) --------------------------------------- */

/* One sample of `perf script` text: its time in nanoseconds since boot
 * (-1 when the text has no time field) and its stack, root first: comm,
 * then the frames ("sym" without +0xoff; "[unknown]" symbols named by the
 * dso's basename), joined by ';'.  stack is malloc'd. */
typedef struct {
    int64_t time_ns;
    char *stack;
    size_t len;
} ingest_perf_sample;

/* Returns 1 when text looks like `perf script` output (indented frame lines
 * under sample headers) rather than folded stacks. */
int ingest_perf_detect(const char *text, size_t len);

/* Parses `perf script` text (default fields, or -F comm,pid,tid,time,ip,
 * sym,dso and subsets) into samples (*out, *n; free with
 * ingest_perf_free).  Errors say "line N: ...". */
ingest_status ingest_perf_parse(const char *text, size_t len, ingest_perf_sample **out, size_t *n,
                                char *err, size_t errlen);
void ingest_perf_free(ingest_perf_sample *s, size_t n);

#endif
