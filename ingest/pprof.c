/* pprof.c — pprof's profile.proto (gzip'd or raw) into ingest_profiles.
 *
 * A pprof profile holds several sample types (Go's CPU profile: samples/
 * count and cpu/nanoseconds); each becomes its own ingest_profile whose
 * `type` label is the sample type's name and whose unit is the type's unit,
 * the other labels (service, ...) copied from the base profile the caller
 * filled from the request.  Everything is decoded and validated before the
 * caller gets anything: on any error no profile is returned.
 *
 * Frames.  A Location with several Lines is an inlined call chain; pprof
 * lists line[0] as the innermost, so its frames are emitted last-line first
 * (caller first).  Each frame keeps where it is when the profile says:
 * Function.filename, Line.line and the Location's Mapping (file, build id),
 * in the located form of storage/frame.h.  A function's name comes from Function.name; without one,
 * the location is named "<mapping file basename>+0x<offset>" when the
 * mapping has a file name, else "0x<address>".  ';' becomes ':' and
 * newlines (and CR) become ' ' so a frame is a valid folded frame; names
 * longer than INGEST_MAX_FRAME are cut at a UTF-8 boundary.  A sample
 * without locations gets the single frame "[unknown]", so totals match
 * `go tool pprof`'s.
 *
 * Decoding.  A body is read by pprof_wire.c straight into flat arrays
 * (pprof_flat.h): no struct per Sample, Location or Line, strings copied
 * once into one block.  (protobuf-c's unpack allocated all of those, and
 * ids were found by bsearch six times a frame: 36 ms for a 2,000-stack
 * profile, 12 times the same stacks as folded text; now 3 ms, issue 11
 * point 6, bench/bench_pprof_ingest.c.)  OTLP hands
 * protobuf-c structs it built (ingest_pprof_decode): they are copied into
 * the same flat form.  Ids are found through a direct table (ids 1..n, as
 * every producer numbers them) or, when sparse, a sorted one; each is
 * looked up once: a sample's locations, a line's function and a
 * location's mapping are resolved to indices while they are checked.  Of
 * two messages with one id, the first counts.  The strings a frame's
 * location part takes (a function's file, a mapping's file and build id)
 * are measured and UTF-8-checked once per function or mapping, not per
 * frame in each of the two passes over the locations (5 % of the decode).
 *
 * Stacks.  Sample.location_id[0] is the leaf; stacks are written root
 * first into one arena, sized exactly in a first pass so it never moves
 * once stacks point into it.  Every profile's stacks point into the first
 * profile's arena: free them together with ingest_pprof_free.  Each
 * stack's 128-bit hash (storage's, hash_bytes128) is taken as soon as its
 * text is written, while in cache, into the profiles' hashes: the store
 * then resolves stacks by them (store_resolve_hashed) instead of reading
 * 5.6 MB of text back from memory for a gen_pprof.py profile (parse
 * thread 4.4-4.6 -> 4.1 ms a profile, bench_pprof_ingest).  The passes
 * over functions, locations and stacks (measured, keyed, written) run in
 * ranges on the threads an ingest_par lends (ingest_pprof_parse_par;
 * "the passes in ranges" below).
 *
 * Text later (base->text_later: the server's local store).  Writing and
 * hashing that text was a third of a decode, and the store needs the text
 * only of stacks it does not know: after a service's first profiles,
 * almost none.  So each stack gets a key instead ("keys" below: over its
 * locations' keys, each taken once a location from its functions' and
 * mapping's strings), every length is still measured (the stacks point at
 * their final places in an arena nothing is written to yet, so the limits
 * and errors are the same), and ingest_pprof_write_text writes the
 * locations and stacks the caller asks for, later.  The decoder's state
 * and the flat form stay with the first profile (struct pprof_later) until
 * it is freed.  bench_pprof_ingest, in process: 3.4 -> 2.5 ms a profile
 * (bench/README.md, "pprof text later").
 *
 * Deep stacks are cut before any text is built, so memory follows what is
 * kept, not the samples times their depth (issue 12: a 184-byte gzip'd
 * profile, one location of 20,000 lines naming a 4,096-byte function in 40
 * samples, took 3.4 GB).  A first pass walks each sample leaf first,
 * counting frames (a location's lines, or 1) without rendering them, up to
 * the INGEST_MAX_DEPTH leaf-most, and notes for every location how many of
 * its leaf-most frames some kept stack uses.  Only those are rendered (once
 * per location), so a location of 20,000 lines renders at most 1,024 and a
 * location no kept stack reaches renders nothing; a sample whose values are
 * all zero takes no room.  Lines that are never rendered still have their
 * function checked, not their name's UTF-8.  Cut stacks still repeat: 40
 * samples of that location keep 40 stacks of 1,024 frames of 4 KB, 168 MB
 * from 184 bytes.  So the stacks' text, measured before anything is
 * allocated for it, may not exceed max_out (the server's --max-body), the
 * limit the same stacks sent as folded text would meet: INGEST_ETOOBIG
 * beyond.
 *
 * Sample types must have distinct names: each becomes the `type` label of
 * its profile, and two of one name would be stored as one series mixing
 * both (docs/ARCHITECTURE.md, "Decisions where the issues were silent").
 * At most MAX_SAMPLE_TYPES of them: each costs a profile before anything
 * else is read.
 *
 * Values are taken as they are (no rate): a zero value leaves the stack out
 * of that type's profile, a negative one or one above INGEST_MAX_VALUE is
 * an error.
 *
 * Samples.  Each type's profile says how many samples are behind its
 * values (count_type, set_samples): a count type counts its own; a value
 * type takes its samples from the profile's samples/count type, else from
 * the count type listed just before it (Go lists alloc_objects before
 * alloc_space, contentions before delay), else divides its total by the
 * period when the period is of its type.  Otherwise the number is unknown
 * and answers carry no intervals.  Go scales heap counts up from the
 * sampled allocations, so their "samples" are an estimate on the high
 * side: the intervals of heap profiles are narrower than they should be.
 * Gauges (inuse_*, goroutine) are left to ingest_profile_finish's default
 * unless the base profile says.
 *
 * Sample labels (issue 11, point 5).  With base->sample_labels, a sample's
 * string labels become pseudo-frames at the root of its stack, in key
 * order: STORE_SAMPLE_MARK key '=' value ';' before its first frame
 * (storage/store.h), so a stack is one per (labels, frames) and a reader
 * skips them unless asked.  Series stay the request's labels: a span id
 * per sample costs what the sample costs, never a series.  A key must be a
 * label name ([a-zA-Z_][a-zA-Z0-9_.]*, 128 bytes, not starting with "__":
 * reserved) and the value non-empty
 * UTF-8 (cut at 1024 bytes, ';' written ':', line breaks ' '); numeric
 * labels and the others are left out and counted (sample_labels_dropped),
 * as are keys past INGEST_MAX_SAMPLE_LABELS a sample (the first in key
 * order stay; of a key given twice, the first).  A key keeps at most
 * INGEST_MAX_SAMPLE_VALUES distinct values a request; later new ones are
 * written "other" (sample_values_other).  The text counts against
 * max_out like the frames. */
#include "ingest_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../storage/frame.h"
#include "pprof_flat.h"
#include "profile.pb-c.h"

typedef struct { uint64_t id; size_t idx; } id_slot;

static int slot_cmp(const void *a, const void *b)
{
    const id_slot *x = a, *y = b;
    if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* An id -> index table: direct (dense[id] = index + 1, 0 when absent)
 * when the ids are at most a few times their number, else sorted by id
 * then index and searched.  The first of equal ids wins in both. */
typedef struct {
    uint32_t *dense;
    uint64_t dense_n;
    id_slot *s;
    size_t n;
} id_index;

static int index_build(id_index *ix, size_t n, const void *items, size_t stride)
{
    const char *it = items;
    uint64_t max = 0;
    memset(ix, 0, sizeof *ix);
    for (size_t i = 0; i < n; i++) {
        uint64_t id = *(const uint64_t *)(const void *)(it + i * stride);
        if (id > max) max = id;
    }
    if (n < UINT32_MAX && max < 4 * (uint64_t)n + 1024) {
        ix->dense_n = max + 1;
        ix->dense = calloc((size_t)ix->dense_n, sizeof *ix->dense);
        if (!ix->dense) return -1;
        for (size_t i = n; i-- > 0;) ix->dense[*(const uint64_t *)(const void *)(it + i * stride)] = (uint32_t)i + 1;
        return 0;
    }
    ix->n = n;
    ix->s = malloc((n ? n : 1) * sizeof *ix->s);
    if (!ix->s) return -1;
    for (size_t i = 0; i < n; i++) ix->s[i] = (id_slot){ *(const uint64_t *)(const void *)(it + i * stride), i };
    qsort(ix->s, n, sizeof *ix->s, slot_cmp);
    return 0;
}

/* Answers the index of id, or -1. */
static long index_find(const id_index *ix, uint64_t id)
{
    if (ix->dense) return id < ix->dense_n ? (long)ix->dense[id] - 1 : -1;
    size_t lo = 0, hi = ix->n; /* the first slot whose id >= id */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->s[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < ix->n && ix->s[lo].id == id ? (long)ix->s[lo].idx : -1;
}

static void index_free(id_index *ix)
{
    free(ix->dense);
    free(ix->s);
}

/* Everything decoding needs while it runs. */
typedef struct {
    const pprof_flat *pb;
    id_index locs, fns, maps;
    size_t *sample_loc; /* per location id of a sample (as pb->location_ids): its location's index */
    long *line_fn;      /* per line: its function's index, -1 without one */
    long *loc_map;      /* per location: its mapping's index, -1 without one */
    size_t *fn_len;     /* per function: its name's length if it is non-empty UTF-8, else SIZE_MAX */
    size_t *fn_file;    /* per function: its file field's length (FIELD_NONE: left empty) */
    size_t *map_file, *map_bid; /* per mapping: its file and build id fields' lengths, or FIELD_NONE */
    size_t *keep;       /* per used sample: its kept locations (sample_keep's *m) */
    uint32_t *take;     /* per used sample: the frames its root-most kept location gives */
    size_t *skip;       /* per used sample: the bytes of that location's text it leaves out (root_skip) */
    unsigned char *cut; /* per used sample: whether frames were cut */
    char *loc_text;     /* per location: its needed frames, caller first, joined by ';' */
    size_t *loc_off;    /* n_location + 1 offsets into loc_text */
    uint32_t *loc_need; /* per location: how many of its leaf-most frames a kept stack uses */
    char *lab_text;     /* per sample: its sample labels as pseudo-frames, each followed by ';' */
    size_t *lab_off;    /* n_sample + 1 offsets into lab_text; NULL without sample labels */
    uint64_t lab_kept, lab_dropped, lab_other;
    size_t max_text;    /* the most bytes of stack text (max_out): INGEST_ETOOBIG beyond */
    const ingest_par *par; /* threads for the passes in ranges; NULL: this one */
    size_t *text_off;   /* n_sample + 1 offsets of the stacks' text in the arena (unused samples: none) */
    hash128 *text_hash; /* per used sample: its stack's hash, or with text later its key */
    char *arena;
    char *err;
    size_t errlen;
    /* text later (ingest_pprof_write_text): keys instead of text */
    struct pprof_later *later; /* NULL: the text is written now */
    hash128 *fn_key;    /* per function: the key of its name and file (a name fn_len measured) */
    hash128 *map_key;   /* per mapping: the key of its file and build id */
    hash128 *loc_key;   /* per location: the key of its needed frames */
    unsigned char *loc_done, *text_done; /* per location, per sample: text written */
    unsigned char *loc_want, *want;      /* per location, per sample: to write (ingest_pprof_write_text) */
} decoder;

/* What writes a decode's text later: the flat form and the decoder it
 * left, and which sample each profile's stacks came from. */
struct pprof_later {
    pprof_flat f;
    decoder d;
    uint32_t **sample_of; /* per profile (sample type): the sample of each of its stacks */
    size_t n_types;
    char err[64];         /* the decoder's; the writing passes never fail */
};

#define MAX_SAMPLE_TYPES 256

static const char *str_at(const decoder *d, int64_t i)
{
    return i >= 0 && (uint64_t)i < d->pb->n_string_table ? d->pb->string_table[i] : NULL;
}

#define ONES UINT64_C(0x0101010101010101)

/* Whether the 8 bytes of w hold one that a frame may not keep: ';', '\n',
 * '\r' or FRAME_SEP (a zero byte of w ^ c for one of them). */
static int word_special(uint64_t w)
{
    const uint64_t c[4] = { ONES * ';', ONES * '\n', ONES * '\r', ONES * (unsigned char)FRAME_SEP };
    uint64_t any = 0;
    for (int k = 0; k < 4; k++) {
        uint64_t v = w ^ c[k];
        any |= (v - ONES) & ~v & (ONES << 7);
    }
    return any != 0;
}

static char sanitized(char c) { return c == ';' ? ':' : (c == '\n' || c == '\r' || c == FRAME_SEP) ? ' ' : c; }

/* Appends a sanitized frame or field of at most max bytes; buf NULL only
 * measures.  Answers its length.  Names almost never hold a byte to
 * replace, so it copies eight bytes at a time and looks at single bytes
 * only in a word that holds one (the byte loop was most of rendering a
 * location, bench_pprof_ingest). */
static size_t field_put(char *buf, const char *name, size_t n, size_t max)
{
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)name[n] & 0xC0) == 0x80) n--;
    }
    if (!buf) return n;
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, name + i, 8);
        if (word_special(w)) {
            for (size_t k = i; k < i + 8; k++) buf[k] = sanitized(name[k]);
        } else {
            memcpy(buf + i, &w, 8);
        }
    }
    for (; i < n; i++) buf[i] = sanitized(name[i]);
    return n;
}

static size_t frame_put(char *buf, const char *name, size_t n) { return field_put(buf, name, n, INGEST_MAX_FRAME); }

#define MAX_FILE 1024    /* bytes of a file or mapping name kept with a frame */
#define MAX_BUILD_ID 128

#define FIELD_NONE SIZE_MAX

/* The length of a string of the table for a location field: FIELD_NONE
 * when absent, empty or not UTF-8 (the field is then left empty rather
 * than the profile refused).  Measured and checked once per function or
 * mapping (fn_file: functions_measure; map_file, map_bid), not per frame
 * and pass. */
static size_t field_len(const decoder *d, int64_t i)
{
    const char *s = str_at(d, i);
    size_t n = s ? strlen(s) : 0;
    return n && utf8_valid(s, n) ? n : FIELD_NONE;
}

/* Appends (buf non-NULL) or measures the location part of a frame (see
 * storage/frame.h): US file US line US mapping US build_id, or nothing when
 * the profile knows neither file nor line.  The mapping alone is not kept:
 * it would repeat the binary's path in every distinct frame (+0.2 bytes a
 * stored pair in bench_storage's pprof case) for nothing a line view can
 * use; a frame without a name is already named after it. */
static size_t location_put(const decoder *d, size_t li, long fi, int64_t line, char *buf)
{
    size_t file_len = fi >= 0 ? d->fn_file[fi] : FIELD_NONE, map_len = FIELD_NONE, bid_len = FIELD_NONE;
    if (file_len == FIELD_NONE && line <= 0) return 0;
    long m = d->loc_map[li];
    if (m >= 0) {
        map_len = d->map_file[m];
        bid_len = d->map_bid[m];
    }
    const char *file = file_len != FIELD_NONE ? str_at(d, d->pb->function[fi].filename) : NULL;
    const char *map = map_len != FIELD_NONE ? str_at(d, d->pb->mapping[m].filename) : NULL;
    const char *bid = bid_len != FIELD_NONE ? str_at(d, d->pb->mapping[m].build_id) : NULL;
    char num[24] = "", digits[24];
    if (line > 0) { /* in decimal, without snprintf's cost (one call a frame) */
        size_t n = 0;
        for (uint64_t v = (uint64_t)line; v; v /= 10) digits[n++] = (char)('0' + v % 10);
        for (size_t i = 0; i < n; i++) num[i] = digits[n - 1 - i];
        num[n] = '\0';
    }
    const char *f[4] = { file, num, map, bid };
    const size_t len[4] = { file_len, strlen(num), map_len, bid_len };
    const size_t max[4] = { MAX_FILE, sizeof num, MAX_FILE, MAX_BUILD_ID };
    size_t pos = 0;
    for (int k = 0; k < 4; k++) {
        if (buf) buf[pos] = FRAME_SEP;
        pos++;
        if (f[k]) pos += field_put(buf ? buf + pos : NULL, f[k], len[k], max[k]);
    }
    return pos;
}

/* The name of a location without a function name. */
static void fallback_name(const decoder *d, size_t li, char *out, size_t cap)
{
    const pprof_location *loc = &d->pb->location[li];
    long m = d->loc_map[li];
    const char *file = m >= 0 ? str_at(d, d->pb->mapping[m].filename) : NULL;
    if (file && *file) {
        const pprof_mapping *mp = &d->pb->mapping[m];
        const char *base = strrchr(file, '/');
        uint64_t off = loc->address - mp->memory_start + mp->file_offset;
        snprintf(out, cap, "%s+0x%" PRIx64, base && base[1] ? base + 1 : file, off);
    } else {
        snprintf(out, cap, "0x%" PRIx64, loc->address);
    }
}

/* ---- keys (text later) ----
 *
 * A key stands for a text without it: it is a hash of exactly what the
 * text is made of, so equal keys mean equal text (two keys for one text
 * are possible, rarely: stacks cut at another depth, a name cut at 4,096
 * bytes; the store then interns the text once under each).  A function's
 * key covers its name and its file field; a mapping's its file and build
 * id; a location's its needed frames (each its function's key, or its
 * fallback name's, and its line) and its mapping; a stack's its sample
 * labels' text, its number of kept locations, the frames the root-most
 * gives, and the keys of its locations, root first.  Each is XXH3-128 of
 * fixed-size records with a seed of its own kind, apart from storage's
 * hash of text. */
#define SEED_NAME UINT64_C(0x666c616d65646231)
#define SEED_FILE UINT64_C(0x666c616d65646232)
#define SEED_FUNC UINT64_C(0x666c616d65646233)
#define SEED_MAP UINT64_C(0x666c616d65646234)
#define SEED_LOC UINT64_C(0x666c616d65646235)
#define SEED_LABELS UINT64_C(0x666c616d65646236)
#define SEED_STACK UINT64_C(0x666c616d65646237)

typedef struct { hash128 name, file; uint64_t has_file; } name_rec;
typedef struct { hash128 map; uint64_t n; } loc_rec;      /* a location's: then n frame_recs */
typedef struct { hash128 name; int64_t line; } frame_rec;
_Static_assert(sizeof(name_rec) == 40 && sizeof(loc_rec) == 24 && sizeof(frame_rec) == 24, "key records have no padding");

static hash128 zero_hash(void) { return (hash128){ 0, 0 }; }

/* The key of a frame's name and file field (file_len FIELD_NONE: none). */
static hash128 name_key(const char *name, size_t nl, const char *file, size_t file_len)
{
    name_rec r = { hash_bytes128_seeded(name, nl, SEED_NAME), zero_hash(), 0 };
    if (file_len != FIELD_NONE) {
        r.file = hash_bytes128_seeded(file, file_len, SEED_FILE);
        r.has_file = 1;
    }
    return hash_bytes128_seeded(&r, sizeof r, SEED_FUNC);
}

/* The tables keys need; the mappings' keys. */
static int later_tables(decoder *d)
{
    const pprof_flat *pb = d->pb;
    d->fn_key = malloc((pb->n_function ? pb->n_function : 1) * sizeof *d->fn_key);
    d->map_key = malloc((pb->n_mapping ? pb->n_mapping : 1) * sizeof *d->map_key);
    d->loc_key = malloc((pb->n_location ? pb->n_location : 1) * sizeof *d->loc_key);
    if (!d->fn_key || !d->map_key || !d->loc_key) return -1;
    for (size_t i = 0; i < pb->n_mapping; i++) {
        struct { hash128 file, bid; uint64_t has; } r = { zero_hash(), zero_hash(), 0 };
        if (d->map_file[i] != FIELD_NONE) {
            r.file = hash_bytes128_seeded(str_at(d, pb->mapping[i].filename), d->map_file[i], SEED_FILE);
            r.has |= 1;
        }
        if (d->map_bid[i] != FIELD_NONE) {
            r.bid = hash_bytes128_seeded(str_at(d, pb->mapping[i].build_id), d->map_bid[i], SEED_FILE);
            r.has |= 2;
        }
        d->map_key[i] = hash_bytes128_seeded(&r, sizeof r, SEED_MAP);
    }
    return 0;
}

/* A location's key material: its loc_rec, then a frame_rec for each of
 * its needed frames (at most INGEST_MAX_DEPTH: sample_keep). */
#define KEY_BUF (sizeof(loc_rec) + INGEST_MAX_DEPTH * sizeof(frame_rec))

/* The key of the `need` leaf-most frames of location li, right after
 * location_frames measured them (every length it uses is known); buf
 * holds KEY_BUF bytes.  Reads the decoder only. */
static hash128 location_key(const decoder *d, size_t li, uint32_t need, unsigned char *buf)
{
    const pprof_location *loc = &d->pb->location[li];
    loc_rec h = { zero_hash(), 0 };
    frame_rec *fr = (frame_rec *)(buf + sizeof h);
    long m = d->loc_map[li];
    char fb[300];
    if (m >= 0) h.map = d->map_key[m];
    for (size_t k = need < loc->n_line ? need : loc->n_line; k-- > 0;) {
        long fi = d->line_fn[loc->line0 + k];
        const char *name = fi >= 0 ? str_at(d, d->pb->function[fi].name) : NULL;
        hash128 nk;
        if (name && *name) {
            nk = d->fn_key[fi];
        } else {
            fallback_name(d, li, fb, sizeof fb);
            nk = name_key(fb, strlen(fb), fi >= 0 ? str_at(d, d->pb->function[fi].filename) : NULL,
                          fi >= 0 ? d->fn_file[fi] : FIELD_NONE);
        }
        fr[h.n++] = (frame_rec){ nk, d->pb->lines[loc->line0 + k].line };
    }
    size_t n = h.n;
    if (!n && need) { /* no lines: the fallback name alone (h.n stays 0) */
        fallback_name(d, li, fb, sizeof fb);
        fr[0] = (frame_rec){ name_key(fb, strlen(fb), NULL, FIELD_NONE), 0 };
        n = 1;
    }
    memcpy(buf, &h, sizeof h);
    return hash_bytes128_seeded(buf, sizeof h + n * sizeof *fr, SEED_LOC);
}

/* The frames of a location: its lines, or 1 when it has none. */
static uint64_t loc_frames(const decoder *d, size_t li)
{
    size_t n = d->pb->location[li].n_line;
    return n ? n : 1;
}

/* Checks that every line of every location names a function of the
 * profile whose name is in the string table; notes each line's function
 * and each location's mapping. */
static ingest_status check_locations(decoder *d)
{
    const pprof_flat *pb = d->pb;
    d->line_fn = malloc((pb->n_lines ? pb->n_lines : 1) * sizeof *d->line_fn);
    d->loc_map = malloc((pb->n_location ? pb->n_location : 1) * sizeof *d->loc_map);
    d->fn_len = malloc((pb->n_function ? pb->n_function : 1) * sizeof *d->fn_len);
    d->fn_file = malloc((pb->n_function ? pb->n_function : 1) * sizeof *d->fn_file);
    d->map_file = malloc((pb->n_mapping ? pb->n_mapping : 1) * sizeof *d->map_file);
    d->map_bid = malloc((pb->n_mapping ? pb->n_mapping : 1) * sizeof *d->map_bid);
    if (!d->line_fn || !d->loc_map || !d->fn_len || !d->fn_file || !d->map_file || !d->map_bid) return INGEST_ENOMEM;
    for (size_t i = 0; i < pb->n_mapping; i++) {
        d->map_file[i] = field_len(d, pb->mapping[i].filename);
        d->map_bid[i] = field_len(d, pb->mapping[i].build_id);
    }
    if (d->later && later_tables(d)) return INGEST_ENOMEM;
    for (size_t li = 0; li < pb->n_location; li++) {
        const pprof_location *loc = &pb->location[li];
        d->loc_map[li] = loc->mapping_id ? index_find(&d->maps, loc->mapping_id) : -1;
        for (size_t k = 0; k < loc->n_line; k++) {
            const pprof_line *ln = &pb->lines[loc->line0 + k];
            d->line_fn[loc->line0 + k] = -1;
            if (!ln->function_id) continue;
            long fi = index_find(&d->fns, (uint64_t)ln->function_id);
            if (fi < 0) {
                snprintf(d->err, d->errlen, "location %" PRIu64 ": line %zu names function %" PRId64 ", which is not in the profile",
                         loc->id, k, ln->function_id);
                return INGEST_EINVAL;
            }
            if (!str_at(d, pb->function[fi].name)) {
                snprintf(d->err, d->errlen, "function %" PRIu64 ": name index %" PRId64 " is outside the string table (%zu strings)",
                         pb->function[fi].id, pb->function[fi].name, pb->n_string_table);
                return INGEST_EINVAL;
            }
            d->line_fn[loc->line0 + k] = fi;
        }
    }
    return INGEST_OK;
}

/* Writes (buf non-NULL) or measures the `need` leaf-most frames of a
 * location (need <= its frames), caller first, once functions_measure
 * has run.  Reads the decoder only; INGEST_EINVAL, without a message,
 * when a function name it needs is not UTF-8 (render_locations says). */
static ingest_status location_frames(const decoder *d, size_t li, uint32_t need, char *buf, size_t *len)
{
    const pprof_location *loc = &d->pb->location[li];
    size_t pos = 0;
    uint32_t n = 0;
    char fb[300];
    for (size_t k = need < loc->n_line ? need : loc->n_line; k-- > 0;) {
        const pprof_line *ln = &d->pb->lines[loc->line0 + k];
        long fi = d->line_fn[loc->line0 + k];
        const char *name = fi >= 0 ? str_at(d, d->pb->function[fi].name) : NULL;
        size_t nl;
        if (name && *name) {
            nl = d->fn_len[fi]; /* measured and checked before */
            if (nl == SIZE_MAX) return INGEST_EINVAL;
        } else {
            fallback_name(d, li, fb, sizeof fb);
            name = fb;
            nl = strlen(name);
            if (!utf8_valid(name, nl)) return INGEST_EINVAL;
        }
        if (n) {
            if (buf) buf[pos] = ';';
            pos++;
        }
        pos += frame_put(buf ? buf + pos : NULL, name, nl);
        pos += location_put(d, li, fi, ln->line, buf ? buf + pos : NULL);
        n++;
    }
    if (!n && need) {
        fallback_name(d, li, fb, sizeof fb);
        pos = frame_put(buf, fb, strlen(fb));
    }
    *len = pos;
    return INGEST_OK;
}

/* ---- the passes in ranges, on several threads ----
 *
 * After gunzip and the wire reader, most of a decode is in passes over
 * items that each write their own slots and read only what earlier passes
 * left: the functions measured (and keyed), then the locations, then the
 * stacks (measured, then keyed or written at the offsets the measures
 * fixed).  So ranges of them go to the threads par lends.  One client's
 * request is serial (decode, store, answer): on a machine whose other
 * cores wait, its decode is what they can take.  A measuring range stops
 * at its first failure and marks it; the caller then sums the lengths in
 * item order, so the error (a name that is not UTF-8, a text over
 * max_text) is the one a single pass would meet first.  The samples'
 * check stays on the caller's thread: in ranges it went no faster (the
 * loc_need pass after it read back what another core wrote). */

#define PAR_MIN_ITEMS 64 /* locations or samples a range takes at least */

typedef struct {
    decoder *d;
    void (*fn)(decoder *d, size_t lo, size_t hi);
    size_t n, parts;
} par_span;

static void span_task(void *arg, size_t i)
{
    const par_span *s = arg;
    s->fn(s->d, s->n * i / s->parts, s->n * (i + 1) / s->parts);
}

/* fn over [0, n) in ranges, on d->par's threads when there are enough
 * items for several (four ranges a thread: one that starts late leaves
 * its share to the others). */
static void par_ranges(decoder *d, size_t n, void (*fn)(decoder *d, size_t lo, size_t hi))
{
    size_t parts = d->par && d->par->run && d->par->width > 1 ? (size_t)d->par->width * 4 : 1;
    if (parts > n / PAR_MIN_ITEMS) parts = n / PAR_MIN_ITEMS;
    if (parts <= 1) {
        fn(d, 0, n);
        return;
    }
    par_span s = { d, fn, n, parts };
    d->par->run(d->par->ctx, parts, span_task, &s);
}

static ingest_status too_much_text(decoder *d)
{
    snprintf(d->err, d->errlen, "pprof body: its stacks as text would take more than %zu bytes, the most a body "
             "may have (--max-body)", d->max_text);
    return INGEST_ETOOBIG;
}

/* Writes the text of locations [lo, hi), measured before: every length
 * (fn_len, fn_file) is known, nothing shared is written, nothing fails. */
static void locations_write(decoder *d, size_t lo, size_t hi)
{
    size_t len;
    for (size_t i = lo; i < hi; i++) location_frames(d, i, d->loc_need[i], d->loc_text + d->loc_off[i], &len);
}

/* Measures functions [lo, hi), each once for every frame that names it:
 * its name's length when the name is non-empty UTF-8 (fn_len, else
 * SIZE_MAX: a location that needs it reports it), its file field's
 * (fn_file) and, with text later, its key.  Every function is measured,
 * needed or not (a name no kept frame uses is never an error: nothing here
 * fails); each is one range's alone. */
static void functions_measure(decoder *d, size_t lo, size_t hi)
{
    for (size_t fi = lo; fi < hi; fi++) {
        const pprof_function *f = &d->pb->function[fi];
        const char *name = str_at(d, f->name);
        size_t nl = name ? strlen(name) : 0;
        d->fn_file[fi] = field_len(d, f->filename);
        d->fn_len[fi] = nl && utf8_valid(name, nl) ? nl : SIZE_MAX;
        if (d->later && d->fn_len[fi] != SIZE_MAX)
            d->fn_key[fi] = name_key(name, nl, str_at(d, f->filename), d->fn_file[fi]);
    }
}

#define LOC_FAILED SIZE_MAX /* in loc_off while measuring: a name that is not UTF-8 */

/* Measures (and with text later keys) locations [lo, hi): each one's
 * length into loc_off[i], up to the first that fails, marked LOC_FAILED
 * (render_locations sums them in order, stopping at the first failure or
 * excess, so the error is the one a single pass would find). */
static void locations_measure(decoder *d, size_t lo, size_t hi)
{
    unsigned char buf[KEY_BUF];
    for (size_t i = lo; i < hi; i++) {
        size_t len;
        if (location_frames(d, i, d->loc_need[i], NULL, &len)) {
            d->loc_off[i] = LOC_FAILED;
            return;
        }
        if (d->later) d->loc_key[i] = location_key(d, i, d->loc_need[i], buf);
        d->loc_off[i] = len;
    }
}

/* Renders, once, the frames of each location that kept stacks use
 * (loc_need, set by sample_check): the functions measured, then the
 * locations, both in ranges on par's threads. */
static ingest_status render_locations(decoder *d)
{
    size_t n = d->pb->n_location, total = 0;
    d->loc_off = malloc((n + 1) * sizeof *d->loc_off);
    if (!d->loc_off) return INGEST_ENOMEM;
    par_ranges(d, d->pb->n_function, functions_measure);
    par_ranges(d, n, locations_measure);
    for (size_t i = 0; i < n; i++) {
        size_t len = d->loc_off[i];
        if (len == LOC_FAILED) {
            snprintf(d->err, d->errlen, "location %" PRIu64 ": function name is not valid UTF-8", d->pb->location[i].id);
            return INGEST_EINVAL;
        }
        d->loc_off[i] = total;
        total += len;
        if (total > d->max_text) return too_much_text(d); /* the stacks would be longer still */
    }
    d->loc_off[n] = total;
    d->loc_text = malloc(total ? total : 1);
    if (!d->loc_text) return INGEST_ENOMEM;
    if (d->later) { /* written with the first stack that needs them */
        d->loc_done = calloc(n ? n : 1, 1);
        d->loc_want = malloc(n ? n : 1);
        return d->loc_done && d->loc_want ? INGEST_OK : INGEST_ENOMEM;
    }
    par_ranges(d, n, locations_write);
    return INGEST_OK;
}

static const char unknown_frame[] = "[unknown]";

/* Whether a sample has a value in some type (else it is in no profile). */
static int sample_used(const decoder *d, const pprof_sample *s)
{
    const int64_t *value = d->pb->values + s->val0;
    for (size_t v = 0; v < s->n_val; v++)
        if (value[v]) return 1;
    return 0;
}

/* The part of a sample that its stack keeps, walking leaf first up to
 * INGEST_MAX_DEPTH frames without rendering any: its *m leaf-most
 * locations, the last (root-most) of which gives its *take leaf-most
 * frames.  Answers 1 when frames were cut.  Locations were checked. */
static int sample_keep(const decoder *d, const pprof_sample *s, size_t *m, uint32_t *take)
{
    const size_t *locs = d->sample_loc + s->loc0;
    uint64_t left = INGEST_MAX_DEPTH;
    size_t k = 0;
    *take = 0;
    for (; k < s->n_loc && left; k++) {
        uint64_t n = loc_frames(d, locs[k]);
        *take = (uint32_t)(n < left ? n : left);
        left -= *take;
        if (n > *take) {
            *m = k + 1;
            return 1;
        }
    }
    *m = k;
    return k < s->n_loc;
}

/* Where in its root-most kept location's text a used sample's stack
 * starts: past the frames it cuts, measured without the text (which,
 * with text later, is not written yet): the `take` leaf-most frames of a
 * location are its text's last ones, rendered alone. */
static size_t root_skip(const decoder *d, size_t si)
{
    size_t m = d->keep[si], len;
    if (!d->cut[si] || !m) return 0;
    size_t li = d->sample_loc[d->pb->sample[si].loc0 + m - 1];
    if (d->take[si] >= d->loc_need[li]) return 0;
    location_frames(d, li, d->take[si], NULL, &len); /* measured before: cannot fail */
    return d->loc_off[li + 1] - d->loc_off[li] - len;
}

/* Checks a sample's values and locations (resolved into sample_loc),
 * notes what its stack keeps (keep, take, cut) and in loc_need the frames
 * of each location that its kept stack uses. */
static ingest_status sample_check(decoder *d, size_t si)
{
    const pprof_sample *s = &d->pb->sample[si];
    const int64_t *value = d->pb->values + s->val0;
    const uint64_t *loc_id = d->pb->location_ids + s->loc0;
    if (s->n_val != d->pb->n_sample_type) {
        snprintf(d->err, d->errlen, "sample %zu has %zu values for %zu sample types", si, s->n_val,
                 d->pb->n_sample_type);
        return INGEST_EINVAL;
    }
    for (size_t v = 0; v < s->n_val; v++) {
        if (value[v] < 0 || (uint64_t)value[v] > INGEST_MAX_VALUE) {
            snprintf(d->err, d->errlen, "sample %zu: value %" PRId64 " is negative or above %" PRIu64, si, value[v],
                     (uint64_t)INGEST_MAX_VALUE);
            return INGEST_EINVAL;
        }
    }
    for (size_t k = 0; k < s->n_loc; k++) {
        long li = index_find(&d->locs, loc_id[k]);
        if (li < 0) {
            snprintf(d->err, d->errlen, "sample %zu: location %" PRIu64 " is not in the profile", si, loc_id[k]);
            return INGEST_EINVAL;
        }
        d->sample_loc[s->loc0 + k] = (size_t)li;
    }
    if (!sample_used(d, s)) return INGEST_OK;
    size_t m;
    uint32_t take;
    d->cut[si] = (unsigned char)sample_keep(d, s, &m, &take);
    d->keep[si] = m;
    d->take[si] = take;
    for (size_t k = 0; k < m; k++) {
        size_t li = d->sample_loc[s->loc0 + k];
        uint32_t need = k + 1 < m ? (uint32_t)loc_frames(d, li) : take;
        if (need > d->loc_need[li]) d->loc_need[li] = need;
    }
    return INGEST_OK;
}

/* Writes (buf non-NULL) or measures a used sample's kept stack, root
 * first; *truncated says whether frames were cut. */
static size_t sample_write(const decoder *d, size_t si, char *buf, int *truncated)
{
    const pprof_sample *s = &d->pb->sample[si];
    size_t m = d->keep[si], pos = 0, first;
    *truncated = d->cut[si];
    if (d->lab_off) { /* sample labels first, each ending with ';' */
        pos = d->lab_off[si + 1] - d->lab_off[si];
        if (buf && pos) memcpy(buf, d->lab_text + d->lab_off[si], pos);
    }
    first = pos;
    if (!m) {
        if (buf) memcpy(buf + pos, unknown_frame, sizeof unknown_frame - 1);
        return pos + sizeof unknown_frame - 1;
    }
    for (size_t k = m; k-- > 0;) {
        size_t li = d->sample_loc[s->loc0 + k];
        size_t from = k + 1 == m ? d->skip[si] : 0, n = d->loc_off[li + 1] - d->loc_off[li] - from;
        if (pos > first) {
            if (buf) buf[pos] = ';';
            pos++;
        }
        if (buf) memcpy(buf + pos, d->loc_text + d->loc_off[li] + from, n);
        pos += n;
    }
    return pos;
}

/* ---- sample labels ---- */

#define MAX_LABEL_KEYS 256 /* distinct keys a request keeps; later ones are dropped */

static int label_name_ok(const char *k)
{
    size_t n = strlen(k);
    if (!n || n > INGEST_MAX_LABEL_NAME || !((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z') || k[0] == '_'))
        return 0;
    if (!strncmp(k, "__", 2)) return 0; /* reserved (__tenant__, __name__): never a sample label */
    return strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") == n;
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
    return h;
}

typedef struct { const char *key, *value; } lab_ref;

typedef struct {
    char *text;
    size_t len, cap;
    const char *keys[MAX_LABEL_KEYS];
    uint32_t values[MAX_LABEL_KEYS]; /* distinct values seen of each key */
    size_t n_keys;
    uint64_t *seen;                  /* hashes of (key slot, value), open addressing, 0 empty */
    size_t seen_cap, seen_n;
} lab_state;

static int lab_put(lab_state *st, const char *s, size_t n)
{
    if (st->len + n > st->cap) {
        size_t cap = (st->len + n) * 2 + 256;
        char *t = realloc(st->text, cap);
        if (!t) return -1;
        st->text = t;
        st->cap = cap;
    }
    memcpy(st->text + st->len, s, n);
    st->len += n;
    return 0;
}

/* Looks (key slot, value) up, remembering it when insert: answers 1 when
 * it was there, 0 when not, -1 out of memory. */
static int lab_seen(lab_state *st, size_t ks, const char *value, int insert)
{
    uint64_t h = fnv1a(value, UINT64_C(0xcbf29ce484222325) ^ ((uint64_t)(ks + 1) * UINT64_C(0x9e3779b97f4a7c15)));
    if (!h) h = 1;
    if (2 * (st->seen_n + 1) > st->seen_cap) {
        size_t cap = st->seen_cap ? st->seen_cap * 2 : 1024;
        uint64_t *t = calloc(cap, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < st->seen_cap; i++) {
            if (!st->seen[i]) continue;
            size_t j = st->seen[i] & (cap - 1);
            while (t[j]) j = (j + 1) & (cap - 1);
            t[j] = st->seen[i];
        }
        free(st->seen);
        st->seen = t;
        st->seen_cap = cap;
    }
    size_t j = h & (st->seen_cap - 1);
    while (st->seen[j]) {
        if (st->seen[j] == h) return 1;
        j = (j + 1) & (st->seen_cap - 1);
    }
    if (insert) {
        st->seen[j] = h;
        st->seen_n++;
    }
    return 0;
}

/* Renders every used sample's labels into lab_text (lab_off). */
static ingest_status render_sample_labels(decoder *d)
{
    const pprof_flat *pb = d->pb;
    lab_state st = { 0 };
    ingest_status rc = INGEST_ENOMEM;
    if (!(d->lab_off = calloc(pb->n_sample + 1, sizeof *d->lab_off))) return INGEST_ENOMEM;
    for (size_t i = 0; i < pb->n_sample; i++) {
        const pprof_sample *s = &pb->sample[i];
        d->lab_off[i] = st.len;
        if (!s->n_lab || !sample_used(d, s)) continue;
        lab_ref ref[INGEST_MAX_SAMPLE_LABELS + 1];
        size_t n = 0;
        for (size_t k = 0; k < s->n_lab; k++) {
            const pprof_label *l = &pb->labels[s->lab0 + k];
            const char *key = str_at(d, l->key), *value = l->str ? str_at(d, l->str) : NULL;
            if (!key || !value || !*value || !label_name_ok(key) || !utf8_valid(value, strlen(value))) {
                d->lab_dropped++;
                continue;
            }
            /* insert in key order; of a key given twice the first stays */
            size_t at = n;
            while (at > 0 && strcmp(ref[at - 1].key, key) > 0) at--;
            if (at > 0 && !strcmp(ref[at - 1].key, key)) {
                d->lab_dropped++;
                continue;
            }
            if (at == INGEST_MAX_SAMPLE_LABELS) { /* past the first keys */
                d->lab_dropped++;
                continue;
            }
            if (n == INGEST_MAX_SAMPLE_LABELS) d->lab_dropped++; /* the last one goes */
            memmove(&ref[at + 1], &ref[at], ((n < INGEST_MAX_SAMPLE_LABELS ? n : n - 1) - at) * sizeof *ref);
            ref[at] = (lab_ref){ key, value };
            if (n < INGEST_MAX_SAMPLE_LABELS) n++;
        }
        for (size_t k = 0; k < n; k++) {
            size_t ks = 0;
            while (ks < st.n_keys && strcmp(st.keys[ks], ref[k].key)) ks++;
            if (ks == st.n_keys) {
                if (ks == MAX_LABEL_KEYS) {
                    d->lab_dropped++;
                    continue;
                }
                st.keys[st.n_keys++] = ref[k].key;
            }
            const char *value = ref[k].value;
            int found = lab_seen(&st, ks, value, st.values[ks] < INGEST_MAX_SAMPLE_VALUES);
            if (found < 0) goto out;
            int other = !found && st.values[ks] >= INGEST_MAX_SAMPLE_VALUES;
            if (!found && !other) st.values[ks]++;
            char mark = FRAME_LABEL;
            if (lab_put(&st, &mark, 1) || lab_put(&st, ref[k].key, strlen(ref[k].key)) || lab_put(&st, "=", 1))
                goto out;
            if (other) {
                d->lab_other++;
                if (lab_put(&st, "other", 5)) goto out;
            } else {
                size_t at = st.len, vl = field_put(NULL, value, strlen(value), INGEST_MAX_LABEL_VALUE);
                if (lab_put(&st, value, vl)) goto out;
                field_put(st.text + at, value, vl, INGEST_MAX_LABEL_VALUE);
            }
            if (lab_put(&st, ";", 1)) goto out;
            d->lab_kept++;
        }
    }
    d->lab_off[pb->n_sample] = st.len;
    d->lab_text = st.text;
    st.text = NULL;
    rc = INGEST_OK;
out:
    free(st.text);
    free(st.seen);
    return rc;
}

/* Labels of the base, with type = the sample type's name. */
static ingest_status profile_labels(decoder *d, const ingest_profile *base, ingest_profile *p, const char *type)
{
    ingest_status s;
    for (int i = 0; i < base->n_labels; i++) {
        if (strcmp(base->labels[i].name, "type") == 0) continue;
        if ((s = ingest_label_add(p, base->labels[i].name, base->labels[i].value, d->err, d->errlen))) return s;
    }
    return ingest_label_add(p, "type", type, d->err, d->errlen);
}

/* Sets up profile t (labels, unit, window) for sample type t. */
static ingest_status profile_setup(decoder *d, const ingest_profile *base, int window_given, size_t t,
                                   ingest_profile *p)
{
    const pprof_value_type *vt = &d->pb->sample_type[t];
    const char *type = str_at(d, vt->type), *unit = str_at(d, vt->unit);
    if (!type || !unit) {
        snprintf(d->err, d->errlen, "sample type %zu: string index outside the string table (%zu strings)", t,
                 d->pb->n_string_table);
        return INGEST_EINVAL;
    }
    if (!*type) {
        snprintf(d->err, d->errlen, "sample type %zu has an empty name", t);
        return INGEST_EINVAL;
    }
    size_t ul = strlen(unit);
    if (ul >= INGEST_MAX_UNIT ||
        strspn(unit, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != ul) {
        snprintf(d->err, d->errlen, "sample type '%s': unit must be 1 to %d letters, digits or '_'", type,
                 INGEST_MAX_UNIT - 1);
        return INGEST_EINVAL;
    }
    ingest_status s = profile_labels(d, base, p, type);
    if (s) {
        char why[512];
        snprintf(why, sizeof why, "%s", d->err);
        snprintf(d->err, d->errlen, "sample type '%s': %s", type, why);
        return s;
    }
    snprintf(p->unit, sizeof p->unit, "%s", ul ? unit : "samples");
    p->rate = 0;
    p->from_ms = base->from_ms;
    p->until_ms = base->until_ms;
    if (!window_given && d->pb->time_nanos > 0) {
        int64_t dur = d->pb->duration_nanos > 0 ? d->pb->duration_nanos / 1000000 : 10000;
        p->from_ms = d->pb->time_nanos / 1000000;
        p->until_ms = p->from_ms + (dur > 0 ? dur : 1);
    }
    return INGEST_OK;
}

static int type_is(const decoder *d, size_t t, const char *type, const char *unit)
{
    const pprof_value_type *vt = &d->pb->sample_type[t];
    const char *ty = str_at(d, vt->type), *un = str_at(d, vt->unit);
    return ty && un && (!type || strcmp(ty, type) == 0) && strcmp(un, unit) == 0;
}

/* The sample type that counts the samples behind type t's values: t itself
 * when its unit is `count`; else a type samples/count (Go's CPU profile);
 * else the nearest count type before t (Go's alloc_objects before
 * alloc_space, contentions before delay); -1 when there is none. */
static long count_type(const decoder *d, size_t t)
{
    if (type_is(d, t, NULL, "count")) return (long)t;
    for (size_t i = 0; i < d->pb->n_sample_type; i++)
        if (type_is(d, i, "samples", "count")) return (long)i;
    for (size_t i = t; i-- > 0;)
        if (type_is(d, i, NULL, "count")) return (long)i;
    return -1;
}

/* Sets p's samples (type t): the values of its count type in the samples
 * where t has a value; else its total divided by the period when the
 * period is of t's type and unit; else unknown. */
static void set_samples(const decoder *d, size_t t, ingest_profile *p)
{
    const pprof_flat *pb = d->pb;
    long c = count_type(d, t);
    uint64_t n = 0;
    if (c >= 0) {
        for (size_t i = 0; i < pb->n_sample; i++) {
            const int64_t *value = pb->values + pb->sample[i].val0;
            if (value[t] > 0 && value[c] > 0) n += (uint64_t)value[c];
        }
    } else if (pb->period > 0 && pb->has_period_type) {
        const char *pt = str_at(d, pb->period_type.type), *pu = str_at(d, pb->period_type.unit);
        if (pt && pu && type_is(d, t, pt, pu)) n = (p->total + (uint64_t)pb->period / 2) / (uint64_t)pb->period;
    }
    p->samples_how = n ? INGEST_SAMPLES_KNOWN : INGEST_SAMPLES_UNKNOWN;
    p->samples = n;
}

/* Builds every profile: stacks into out[0]'s arena. */
/* Writes the stacks of samples [lo, hi) at their offsets and hashes each
 * while its text is in cache (the store, taking the hashes after the
 * arena was whole, read it back from memory). */
static void stacks_write(decoder *d, size_t lo, size_t hi)
{
    int trunc;
    for (size_t i = lo; i < hi; i++) {
        if (!sample_used(d, &d->pb->sample[i])) continue;
        size_t len = sample_write(d, i, d->arena + d->text_off[i], &trunc);
        d->text_hash[i] = hash_bytes128(d->arena + d->text_off[i], len);
    }
}

/* Text later: the keys of the stacks of samples [lo, hi) (see "keys"). */
static void stacks_key(decoder *d, size_t lo, size_t hi)
{
    hash128 rec[2 + INGEST_MAX_DEPTH]; /* labels; kept locations and take; the locations' keys */
    for (size_t i = lo; i < hi; i++) {
        const pprof_sample *s = &d->pb->sample[i];
        if (!sample_used(d, s)) continue;
        size_t m = d->keep[i];
        /* lab_text is NULL when no sample has a label kept */
        rec[0] = d->lab_off ? hash_bytes128_seeded(d->lab_text ? d->lab_text + d->lab_off[i] : "",
                                                   d->lab_off[i + 1] - d->lab_off[i], SEED_LABELS)
                            : zero_hash();
        rec[1] = (hash128){ m, (uint64_t)d->take[i] | (d->lab_off ? UINT64_C(1) << 32 : 0) };
        for (size_t k = 0; k < m; k++) rec[2 + k] = d->loc_key[d->sample_loc[s->loc0 + m - 1 - k]];
        d->text_hash[i] = hash_bytes128_seeded(rec, (2 + m) * sizeof *rec, SEED_STACK);
    }
}

/* Measures the stacks of samples [lo, hi): each one's length into
 * text_off[i] (0 when unused; build sums them into offsets) and where it
 * starts in its root-most location (skip); with text later, keys them. */
static void samples_measure(decoder *d, size_t lo, size_t hi)
{
    int trunc;
    for (size_t i = lo; i < hi; i++) {
        d->text_off[i] = 0;
        if (!sample_used(d, &d->pb->sample[i])) continue;
        d->skip[i] = root_skip(d, i);
        d->text_off[i] = sample_write(d, i, NULL, &trunc);
    }
    if (d->later) stacks_key(d, lo, hi);
}

static ingest_status build(decoder *d, const ingest_profile *base, int window_given, ingest_profile *out)
{
    const pprof_flat *pb = d->pb;
    size_t nt = pb->n_sample_type, total = 0;
    ingest_status s;
    for (size_t t = 0; t < nt; t++)
        if ((s = profile_setup(d, base, window_given, t, &out[t]))) return s;
    d->loc_need = calloc(pb->n_location ? pb->n_location : 1, sizeof *d->loc_need);
    d->sample_loc = malloc((pb->n_location_ids ? pb->n_location_ids : 1) * sizeof *d->sample_loc);
    d->keep = malloc((pb->n_sample ? pb->n_sample : 1) * sizeof *d->keep);
    d->take = malloc((pb->n_sample ? pb->n_sample : 1) * sizeof *d->take);
    d->cut = malloc(pb->n_sample ? pb->n_sample : 1);
    if (!d->loc_need || !d->sample_loc || !d->keep || !d->take || !d->cut) return INGEST_ENOMEM;
    for (size_t i = 0; i < pb->n_sample; i++)
        if ((s = sample_check(d, i))) return s;
    if ((s = render_locations(d))) return s;
    if (base->sample_labels && (s = render_sample_labels(d))) return s;
    int trunc;
    d->text_off = malloc((pb->n_sample + 1) * sizeof *d->text_off);
    d->text_hash = malloc((pb->n_sample ? pb->n_sample : 1) * sizeof *d->text_hash);
    d->skip = malloc((pb->n_sample ? pb->n_sample : 1) * sizeof *d->skip);
    if (!d->text_off || !d->text_hash || !d->skip) return INGEST_ENOMEM;
    par_ranges(d, pb->n_sample, samples_measure);
    for (size_t i = 0; i < pb->n_sample; i++) {
        size_t len = d->text_off[i];
        d->text_off[i] = total;
        total += len;
        if (total > d->max_text) return too_much_text(d);
    }
    d->text_off[pb->n_sample] = total;
    for (size_t t = 0; t < nt; t++) {
        size_t n = 0;
        for (size_t i = 0; i < pb->n_sample; i++) n += pb->values[pb->sample[i].val0 + t] != 0;
        out[t].stacks = malloc((n ? n : 1) * sizeof *out[t].stacks);
        out[t].hashes = malloc((n ? n : 1) * sizeof *out[t].hashes);
        if (!out[t].stacks || !out[t].hashes) return INGEST_ENOMEM;
        out[t].cap_stacks = n ? n : 1;
    }
    char *arena = malloc(total ? total : 1);
    if (!arena) return INGEST_ENOMEM;
    out[0].arena = arena;
    out[0].arena_cap = total ? total : 1;
    d->arena = arena;
    if (d->later) {
        struct pprof_later *L = d->later;
        d->text_done = calloc(pb->n_sample ? pb->n_sample : 1, 1);
        d->want = malloc(pb->n_sample ? pb->n_sample : 1);
        L->sample_of = calloc(nt, sizeof *L->sample_of);
        if (!d->text_done || !d->want || !L->sample_of) return INGEST_ENOMEM;
        L->n_types = nt;
        for (size_t t = 0; t < nt; t++)
            if (!(L->sample_of[t] = malloc(out[t].cap_stacks * sizeof *L->sample_of[t]))) return INGEST_ENOMEM;
    } else {
        par_ranges(d, pb->n_sample, stacks_write);
    }
    size_t pos = 0;
    for (size_t i = 0; i < pb->n_sample; i++) {
        if (!sample_used(d, &pb->sample[i])) continue;
        size_t len = d->text_off[i + 1] - d->text_off[i];
        hash128 h = d->text_hash[i];
        trunc = d->cut[i];
        for (size_t t = 0; t < nt; t++) {
            uint64_t v = (uint64_t)pb->values[pb->sample[i].val0 + t];
            if (!v) continue;
            ingest_profile *p = &out[t];
            if (p->total + v > INGEST_MAX_VALUE) {
                snprintf(d->err, d->errlen, "sample type %zu: the sum of values exceeds %" PRIu64, t,
                         (uint64_t)INGEST_MAX_VALUE);
                return INGEST_EINVAL;
            }
            if (d->later) d->later->sample_of[t][p->n_stacks] = (uint32_t)i;
            p->hashes[p->n_stacks] = h;
            p->stacks[p->n_stacks++] = (ingest_stack){ arena + pos, (uint32_t)len, v };
            p->total += v;
            p->truncated_stacks += (uint64_t)trunc;
        }
        pos += len;
    }
    out[0].arena_len = pos;
    for (size_t t = 0; t < nt; t++) {
        set_samples(d, t, &out[t]);
        out[t].aggregation = base->aggregation;
        out[t].sample_labels_kept = d->lab_kept;
        out[t].sample_labels_dropped = d->lab_dropped;
        out[t].sample_values_other = d->lab_other;
        if ((s = ingest_profile_finish(&out[t], d->err, d->errlen))) return s;
    }
    return INGEST_OK;
}

/* Checks the string indices of functions and mappings that decoding uses,
 * that sample types have distinct names, and every location's lines. */
static ingest_status check_tables(decoder *d)
{
    const pprof_flat *pb = d->pb;
    for (size_t i = 0; i < pb->n_mapping; i++) {
        if (!str_at(d, pb->mapping[i].filename)) {
            snprintf(d->err, d->errlen, "mapping %" PRIu64 ": file name index outside the string table", pb->mapping[i].id);
            return INGEST_EINVAL;
        }
    }
    if (pb->n_string_table && pb->string_table[0][0]) {
        snprintf(d->err, d->errlen, "string_table[0] must be the empty string");
        return INGEST_EINVAL;
    }
    for (size_t t = 1; t < pb->n_sample_type; t++) {
        const char *name = str_at(d, pb->sample_type[t].type);
        for (size_t u = 0; name && u < t; u++) {
            const char *other = str_at(d, pb->sample_type[u].type);
            if (other && strcmp(name, other) == 0) {
                snprintf(d->err, d->errlen, "sample types %zu and %zu are both named '%.200s': each becomes the "
                         "profile's type label, so their names must differ", u, t, name);
                return INGEST_EINVAL;
            }
        }
    }
    return check_locations(d);
}

static void decoder_free(decoder *d)
{
    index_free(&d->locs);
    index_free(&d->fns);
    index_free(&d->maps);
    free(d->sample_loc);
    free(d->line_fn);
    free(d->loc_map);
    free(d->fn_len);
    free(d->fn_file);
    free(d->map_file);
    free(d->map_bid);
    free(d->keep);
    free(d->take);
    free(d->skip);
    free(d->cut);
    free(d->loc_text);
    free(d->loc_off);
    free(d->loc_need);
    free(d->lab_text);
    free(d->lab_off);
    free(d->text_off);
    free(d->text_hash);
    free(d->fn_key);
    free(d->map_key);
    free(d->loc_key);
    free(d->loc_done);
    free(d->text_done);
    free(d->loc_want);
    free(d->want);
}

void pprof_later_free(struct pprof_later *L)
{
    if (!L) return;
    decoder_free(&L->d);
    for (size_t t = 0; L->sample_of && t < L->n_types; t++) free(L->sample_of[t]);
    free(L->sample_of);
    pprof_flat_free(&L->f);
    free(L);
}

/* later non-NULL: text later, L->f the profile; on success out[0] owns L
 * and the decoder stays in it for ingest_pprof_write_text. */
static ingest_status decode(const pprof_flat *pb, size_t max_out, const ingest_profile *base, int window_given,
                            const ingest_par *par, struct pprof_later *later, ingest_profile *out, char *err,
                            size_t errlen)
{
    decoder d = { .pb = pb, .max_text = max_out, .par = par, .err = err, .errlen = errlen, .later = later };
    ingest_status s = INGEST_ENOMEM;
    if (index_build(&d.locs, pb->n_location, pb->n_location ? &pb->location[0].id : NULL, sizeof *pb->location) ||
        index_build(&d.fns, pb->n_function, pb->n_function ? &pb->function[0].id : NULL, sizeof *pb->function) ||
        index_build(&d.maps, pb->n_mapping, pb->n_mapping ? &pb->mapping[0].id : NULL, sizeof *pb->mapping))
        goto done;
    if ((s = check_tables(&d))) goto done;
    s = build(&d, base, window_given, out);
done:
    if (s == INGEST_ENOMEM) snprintf(err, errlen, "out of memory decoding the pprof profile");
    if (!s && later) {
        d.par = NULL;
        d.err = later->err;
        d.errlen = sizeof later->err;
        later->d = d;
        out[0].later = later;
        return s;
    }
    decoder_free(&d);
    return s;
}

/* Writes the locations wanted and not written yet, of [lo, hi). */
static void later_locations(decoder *d, size_t lo, size_t hi)
{
    size_t len;
    for (size_t i = lo; i < hi; i++) {
        if (!d->loc_want[i] || d->loc_done[i]) continue;
        location_frames(d, i, d->loc_need[i], d->loc_text + d->loc_off[i], &len);
        d->loc_done[i] = 1;
    }
}

/* Writes the stacks of samples wanted and not written yet, of [lo, hi). */
static void later_stacks(decoder *d, size_t lo, size_t hi)
{
    int trunc;
    for (size_t i = lo; i < hi; i++) {
        if (!d->want[i] || d->text_done[i]) continue;
        sample_write(d, i, d->arena + d->text_off[i], &trunc);
        d->text_done[i] = 1;
    }
}

void ingest_pprof_write_text(ingest_profile *profiles, size_t n, const uint32_t *const *leaves,
                             const ingest_par *par)
{
    struct pprof_later *L = n ? profiles[0].later : NULL;
    if (!L) return;
    decoder *d = &L->d;
    const pprof_flat *pb = d->pb;
    size_t wanted = 0;
    memset(d->want, 0, pb->n_sample ? pb->n_sample : 1);
    memset(d->loc_want, 0, pb->n_location ? pb->n_location : 1);
    for (size_t t = 0; t < n && t < L->n_types; t++) {
        for (size_t i = 0; i < profiles[t].n_stacks; i++) {
            if (leaves && leaves[t] && leaves[t][i]) continue;
            uint32_t si = L->sample_of[t][i];
            if (d->text_done[si] || d->want[si]) continue;
            d->want[si] = 1;
            wanted++;
            const pprof_sample *s = &pb->sample[si];
            for (size_t k = 0; k < d->keep[si]; k++) d->loc_want[d->sample_loc[s->loc0 + k]] = 1;
        }
    }
    if (!wanted) return;
    d->par = wanted >= PAR_MIN_ITEMS ? par : NULL; /* a few new stacks: not worth waking threads */
    par_ranges(d, pb->n_location, later_locations);
    par_ranges(d, pb->n_sample, later_stacks);
    d->par = NULL;
}

ingest_status pprof_flat_decode(const pprof_flat *f, size_t max_out, const ingest_profile *base, int window_given,
                                ingest_profile *out, char *err, size_t errlen)
{
    if (f->n_sample_type == 0 || f->n_sample_type > MAX_SAMPLE_TYPES) {
        snprintf(err, errlen, "%zu sample types (1 to %d)", f->n_sample_type, MAX_SAMPLE_TYPES);
        return INGEST_EINVAL;
    }
    return decode(f, max_out, base, window_given, NULL, NULL, out, err, errlen);
}

/* protobuf-c structs (OTLP's, built by hand) in the flat form: the arrays
 * are new, the strings stay the caller's. */
static ingest_status flat_from_pb(const struct Perftools__Profiles__Profile *pb, pprof_flat *f)
{
    memset(f, 0, sizeof *f);
    size_t n_ids = 0, n_vals = 0, n_lines = 0, n_labs = 0;
    for (size_t i = 0; i < pb->n_sample; i++) {
        n_ids += pb->sample[i]->n_location_id;
        n_vals += pb->sample[i]->n_value;
        n_labs += pb->sample[i]->n_label;
    }
    for (size_t i = 0; i < pb->n_location; i++) n_lines += pb->location[i]->n_line;
#define ALLOC(field, n) (f->field = malloc(((n) ? (n) : 1) * sizeof *f->field)) == NULL
    if (ALLOC(sample_type, pb->n_sample_type) || ALLOC(sample, pb->n_sample) || ALLOC(location_ids, n_ids) ||
        ALLOC(values, n_vals) || ALLOC(mapping, pb->n_mapping) || ALLOC(location, pb->n_location) ||
        ALLOC(lines, n_lines) || ALLOC(function, pb->n_function) || ALLOC(labels, n_labs))
        return INGEST_ENOMEM;
#undef ALLOC
    for (size_t t = 0; t < pb->n_sample_type; t++)
        f->sample_type[t] = (pprof_value_type){ pb->sample_type[t]->type, pb->sample_type[t]->unit };
    f->n_sample_type = pb->n_sample_type;
    size_t vpos = 0;
    for (size_t i = 0; i < pb->n_sample; i++) {
        const Perftools__Profiles__Sample *s = pb->sample[i];
        f->sample[i] = (pprof_sample){ f->n_location_ids, s->n_location_id, vpos, s->n_value, f->n_labels, s->n_label };
        for (size_t k = 0; k < s->n_label; k++)
            f->labels[f->n_labels++] = (pprof_label){ s->label[k]->key, s->label[k]->str, s->label[k]->num };
        if (s->n_location_id)
            memcpy(f->location_ids + f->n_location_ids, s->location_id, s->n_location_id * sizeof *s->location_id);
        if (s->n_value) memcpy(f->values + vpos, s->value, s->n_value * sizeof *s->value);
        f->n_location_ids += s->n_location_id;
        vpos += s->n_value;
    }
    f->n_sample = pb->n_sample;
    for (size_t i = 0; i < pb->n_mapping; i++) {
        const Perftools__Profiles__Mapping *m = pb->mapping[i];
        f->mapping[i] = (pprof_mapping){ m->id, m->memory_start, m->file_offset, m->filename, m->build_id };
    }
    f->n_mapping = pb->n_mapping;
    for (size_t i = 0; i < pb->n_location; i++) {
        const Perftools__Profiles__Location *l = pb->location[i];
        f->location[i] = (pprof_location){ l->id, l->mapping_id, l->address, f->n_lines, l->n_line };
        for (size_t k = 0; k < l->n_line; k++)
            f->lines[f->n_lines++] = (pprof_line){ l->line[k]->function_id, l->line[k]->line };
    }
    f->n_location = pb->n_location;
    for (size_t i = 0; i < pb->n_function; i++) {
        const Perftools__Profiles__Function *fn = pb->function[i];
        f->function[i] = (pprof_function){ fn->id, fn->name, fn->filename };
    }
    f->n_function = pb->n_function;
    f->string_table = pb->string_table;
    f->n_string_table = pb->n_string_table;
    f->time_nanos = pb->time_nanos;
    f->duration_nanos = pb->duration_nanos;
    f->period = pb->period;
    if (pb->period_type) {
        f->has_period_type = 1;
        f->period_type = (pprof_value_type){ pb->period_type->type, pb->period_type->unit };
    }
    return INGEST_OK;
}

ingest_status ingest_pprof_decode(const struct Perftools__Profiles__Profile *pb, size_t max_out,
                                  const ingest_profile *base, int window_given, ingest_profile *out, char *err,
                                  size_t errlen)
{
    if (pb->n_sample_type == 0 || pb->n_sample_type > MAX_SAMPLE_TYPES) {
        snprintf(err, errlen, "%zu sample types (1 to %d)", pb->n_sample_type, MAX_SAMPLE_TYPES);
        return INGEST_EINVAL;
    }
    pprof_flat f;
    ingest_status s = flat_from_pb(pb, &f);
    if (s) snprintf(err, errlen, "out of memory decoding the pprof profile");
    else s = decode(&f, max_out, base, window_given, NULL, NULL, out, err, errlen);
    f.string_table = NULL; /* the caller's */
    pprof_flat_free(&f);
    return s;
}

void ingest_pprof_free(ingest_profile *profiles, size_t n)
{
    for (size_t i = 0; i < n; i++) ingest_profile_free(&profiles[i]);
    free(profiles);
}

ingest_status ingest_pprof_parse(const void *body, size_t len, size_t max_out, const ingest_profile *base,
                                 int window_given, ingest_profile **out, size_t *n_out, char *err, size_t errlen)
{
    return ingest_pprof_parse_par(body, len, max_out, base, window_given, NULL, out, n_out, err, errlen);
}

ingest_status ingest_pprof_parse_par(const void *body, size_t len, size_t max_out, const ingest_profile *base,
                                     int window_given, const ingest_par *par, ingest_profile **out, size_t *n_out,
                                     char *err, size_t errlen)
{
    const unsigned char *b = body;
    char *plain = NULL;
    size_t plain_len = len;
    *out = NULL;
    *n_out = 0;
    if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
        char why[512];
        ingest_status s = ingest_gunzip(body, len, max_out, &plain, &plain_len, why, sizeof why);
        if (s) {
            snprintf(err, errlen, "pprof body: %s", why);
            return s;
        }
        b = (const unsigned char *)plain;
    }
    pprof_flat f;
    char why[512];
    int gzipped = plain != NULL;
    ingest_status s = pprof_wire_decode(b, plain_len, &f, why, sizeof why);
    free(plain); /* the flat form keeps no pointer into it */
    if (s == INGEST_EINVAL) {
        snprintf(err, errlen, gzipped ? "pprof body: the gunzipped bytes are not a valid profile.proto (truncated or not pprof): %s"
                                    : "pprof body: neither gzip'd nor a valid raw profile.proto (truncated, or not pprof): %s", why);
        pprof_flat_free(&f);
        return s;
    }
    size_t nt = f.n_sample_type;
    ingest_profile *ps = NULL;
    if (s) {
        snprintf(err, errlen, "out of memory decoding the pprof profile");
    } else if (nt == 0) {
        snprintf(err, errlen, "pprof body: the profile has no sample types (empty or not a profile)");
        s = INGEST_EINVAL;
    } else if (nt > MAX_SAMPLE_TYPES) {
        snprintf(err, errlen, "pprof body: %zu sample types, more than the %d a profile may have", nt, MAX_SAMPLE_TYPES);
        s = INGEST_EINVAL;
    } else if (!(ps = calloc(nt, sizeof *ps))) {
        snprintf(err, errlen, "out of memory decoding the pprof profile");
        s = INGEST_ENOMEM;
    } else if (base->text_later) {
        /* the flat form and the decoder stay for ingest_pprof_write_text */
        struct pprof_later *L = calloc(1, sizeof *L);
        if (!L) {
            snprintf(err, errlen, "out of memory decoding the pprof profile");
            s = INGEST_ENOMEM;
        } else {
            L->f = f;
            memset(&f, 0, sizeof f);
            s = decode(&L->f, max_out, base, window_given, par, L, ps, err, errlen);
            if (s) pprof_later_free(L);
        }
    } else {
        s = decode(&f, max_out, base, window_given, par, NULL, ps, err, errlen);
    }
    pprof_flat_free(&f);
    if (s) {
        if (ps) ingest_pprof_free(ps, nt);
        return s;
    }
    *out = ps;
    *n_out = nt;
    return INGEST_OK;
}
