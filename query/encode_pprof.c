/* encode_pprof.c — a merged tree as a gzip'd pprof profile.proto, the
 * format `go tool pprof` reads.
 *
 * One sample type: the query's type with the tree's unit ("samples" is
 * written as pprof's "count").  One Location (a single Line) per distinct
 * frame of the tree and one Function per distinct (name, file), so `go tool
 * pprof -top` ranks exactly the functions /api/v1/top ranks.  The merge
 * keeps lines (store_reader_lines): a frame stored with its location
 * (storage/frame.h) gives its Line.line, Function.filename and a Mapping
 * (file, build id), so `-lines` and `-list` show the lines of a profile
 * pushed in; frames without one are a function only, as before.  One Sample per call-tree node with
 * self > 0: its location ids leaf first (the node, then its ancestors), its
 * value the node's self.  pprof's flat(f) is then self(f), and its cum(f),
 * which counts a sample once however often f recurs in it, is total(f).
 * time_nanos is from and duration_nanos is until − from.
 *
 * Ids and orders are a function of the data alone, not of the reader's
 * node and string ids (those follow partitions, writer shards and push
 * order): locations are numbered by their frame text (bytes), functions
 * and mappings in the order their locations meet them, strings in the
 * order the messages meet them, and samples come in path order
 * (query_stacks_sort), so two servers holding the same profiles answer the
 * same bytes. */
#include <stdlib.h>
#include <string.h>

#include "../common/gzip.h"
#include "../storage/frame.h"
#include "profile.pb-c.h"
#include "query_internal.h"

typedef Perftools__Profiles__Profile pb_profile;

/* The protobuf-c messages of the answer, in a few flat arrays. */
/* Distinct strings (of the string table) or keys (of functions and
 * mappings) by content: open addressing over FNV-1a, ids from 1. */
typedef struct {
    char **key;          /* NUL-terminated copies, by id - 1 */
    uint32_t *slot;      /* id, 0 = empty */
    uint32_t n, cap;     /* ids used; slots (a power of two) */
} pp_set;

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static void set_free(pp_set *s)
{
    for (uint32_t i = 0; i < s->n; i++) free(s->key[i]);
    free(s->key);
    free(s->slot);
    memset(s, 0, sizeof *s);
}

/* The id of bytes s[0..n), added when new; 0 when memory ran out. */
static uint32_t set_id(pp_set *s, const char *k, size_t n)
{
    if (2 * (s->n + 1) > s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 256;
        uint32_t *slot = calloc(cap, sizeof *slot);
        char **key = realloc(s->key, (size_t)cap / 2 * sizeof *key);
        if (!slot || !key) {
            free(slot);
            if (key) s->key = key;
            return 0;
        }
        s->key = key;
        for (uint32_t i = 0; i < s->n; i++) {
            size_t h = fnv(key[i], strlen(key[i])) & (cap - 1);
            while (slot[h]) h = (h + 1) & (cap - 1);
            slot[h] = i + 1;
        }
        free(s->slot);
        s->slot = slot;
        s->cap = cap;
    }
    size_t h = fnv(k, n) & (s->cap - 1);
    for (; s->slot[h]; h = (h + 1) & (s->cap - 1)) {
        const char *e = s->key[s->slot[h] - 1];
        if (strlen(e) == n && memcmp(e, k, n) == 0) return s->slot[h];
    }
    char *c = malloc(n + 1);
    if (!c) return 0;
    memcpy(c, k, n);
    c[n] = '\0';
    s->key[s->n++] = c;
    s->slot[h] = s->n;
    return s->n;
}

typedef struct {
    pb_profile prof;
    Perftools__Profiles__ValueType vt, *vtp;
    Perftools__Profiles__ValueType period_type;
    pp_set strings;     /* the string table from index 1 ("" is index 0) */
    pp_set fkeys;       /* functions: "name US file" */
    pp_set mkeys;       /* mappings: "file US build id" */
    char **table;
    Perftools__Profiles__Function *fns, **fnp;
    Perftools__Profiles__Mapping *maps, **mapp;
    Perftools__Profiles__Location *locs, **locp;
    Perftools__Profiles__Line *lines, **linep;
    Perftools__Profiles__Sample *samples, **samplep;
    uint64_t *loc_ids;
    int64_t *values;
    uint32_t *fslot;    /* frame string id -> location index + 1 */
} pprof_out;

static void out_free(pprof_out *o)
{
    set_free(&o->strings);
    set_free(&o->fkeys);
    set_free(&o->mkeys);
    free(o->table);
    free(o->maps);
    free(o->mapp);
    free(o->fns);
    free(o->fnp);
    free(o->locs);
    free(o->locp);
    free(o->lines);
    free(o->linep);
    free(o->samples);
    free(o->samplep);
    free(o->loc_ids);
    free(o->values);
    free(o->fslot);
}

/* A string's index in the table (0 for ""), or -1 when memory ran out. */
static int64_t str_index(pprof_out *o, const char *s, size_t n)
{
    if (!n) return 0;
    uint32_t id = set_id(&o->strings, s, n);
    return id ? (int64_t)id : -1;
}

/* The id of key a US b in set, 0 when memory ran out. */
static uint32_t pair_id(pp_set *set, const char *a, size_t an, const char *b, size_t bn)
{
    char buf[2 * 4096 + 2];
    if (an > 4096) an = 4096;
    if (bn > 4096) bn = 4096;
    memcpy(buf, a, an);
    buf[an] = FRAME_SEP;
    memcpy(buf + an + 1, b, bn);
    return set_id(set, buf, an + 1 + bn);
}

static int frame_cmp(const void *a, const void *b, void *arg)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t lx, ly;
    const char *sx = store_string(arg, x, &lx), *sy = store_string(arg, y, &ly);
    int c = memcmp(sx, sy, lx < ly ? lx : ly);
    return c ? c : lx != ly ? (lx < ly ? -1 : 1) : (x > y) - (x < y);
}

static int build_locations(store_reader *r, pprof_out *o, const uint32_t *frames, size_t nl, const char *type,
                           const char *unit);

/* Locations (one per distinct frame, with one Line), functions (one per
 * distinct name and file) and mappings (one per file and build id). */
static int build_functions(store_reader *r, const query_tree *t, pprof_out *o, size_t n_strings, const char *type,
                           const char *unit)
{
    size_t nl = 0;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (!id) continue;
        uint32_t f = store_node_func(r, id);
        if (f < n_strings && !o->fslot[f]) o->fslot[f] = (uint32_t)++nl;
    })
    size_t n = nl ? nl : 1;
    /* the frames by text: location i + 1 is the i-th */
    uint32_t *frames = malloc(n * sizeof *frames);
    if (!frames) return -1;
    for (uint32_t f = 0, k = 0; f < n_strings; f++)
        if (o->fslot[f]) frames[k++] = f;
    qsort_r(frames, nl, sizeof *frames, frame_cmp, r);
    for (size_t k = 0; k < nl; k++) o->fslot[frames[k]] = (uint32_t)k + 1;
    o->fns = malloc(n * sizeof *o->fns);
    o->fnp = malloc(n * sizeof *o->fnp);
    o->maps = malloc(n * sizeof *o->maps);
    o->mapp = malloc(n * sizeof *o->mapp);
    o->locs = malloc(n * sizeof *o->locs);
    o->locp = malloc(n * sizeof *o->locp);
    o->lines = malloc(n * sizeof *o->lines);
    o->linep = malloc(n * sizeof *o->linep);
    if (!o->fns || !o->fnp || !o->maps || !o->mapp || !o->locs || !o->locp || !o->lines || !o->linep) {
        free(frames);
        return -1;
    }
    int rc = build_locations(r, o, frames, nl, type, unit);
    free(frames);
    return rc;
}

static int build_locations(store_reader *r, pprof_out *o, const uint32_t *frames, size_t nl, const char *type,
                           const char *unit)
{
    Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    vt.type = str_index(o, type, strlen(type));
    vt.unit = str_index(o, unit, strlen(unit));
    if (vt.type < 0 || vt.unit < 0) return -1;
    o->vt = o->period_type = vt;
    for (size_t i = 0; i < nl; i++) {
        uint32_t f = frames[i];
        uint32_t len;
        const char *s = store_string(r, f, &len);
        frame_parts fp;
        frame_parse(s, len, &fp);
        uint32_t fid = pair_id(&o->fkeys, fp.name, fp.name_len, fp.file, fp.file_len);
        int64_t name = str_index(o, fp.name, fp.name_len), file = str_index(o, fp.file, fp.file_len);
        if (!fid || name < 0 || file < 0) return -1;
        if (fid > o->prof.n_function) { /* a new function */
            Perftools__Profiles__Function fn = PERFTOOLS__PROFILES__FUNCTION__INIT;
            fn.id = fid;
            fn.name = fn.system_name = name;
            fn.filename = file;
            o->fns[fid - 1] = fn;
            o->fnp[fid - 1] = &o->fns[fid - 1];
            o->prof.n_function = fid;
        }
        uint64_t mid = 0;
        if (fp.mapping_len || fp.build_id_len) {
            mid = pair_id(&o->mkeys, fp.mapping, fp.mapping_len, fp.build_id, fp.build_id_len);
            int64_t mfile = str_index(o, fp.mapping, fp.mapping_len), bid = str_index(o, fp.build_id, fp.build_id_len);
            if (!mid || mfile < 0 || bid < 0) return -1;
            if (mid > o->prof.n_mapping) {
                Perftools__Profiles__Mapping m = PERFTOOLS__PROFILES__MAPPING__INIT;
                m.id = mid;
                m.filename = mfile;
                m.build_id = bid;
                m.has_functions = 1;
                m.has_filenames = fp.file_len > 0;
                m.has_line_numbers = fp.line > 0;
                o->maps[mid - 1] = m;
                o->mapp[mid - 1] = &o->maps[mid - 1];
                o->prof.n_mapping = mid;
            }
        }
        Perftools__Profiles__Line ln = PERFTOOLS__PROFILES__LINE__INIT;
        ln.function_id = fid;
        ln.line = fp.line;
        o->lines[i] = ln;
        o->linep[i] = &o->lines[i];
        Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT;
        loc.id = i + 1;
        loc.mapping_id = mid;
        loc.n_line = 1;
        loc.line = &o->linep[i];
        o->locs[i] = loc;
        o->locp[i] = &o->locs[i];
    }
    o->prof.function = o->fnp;
    o->prof.mapping = o->mapp;
    o->prof.n_location = nl;
    o->prof.location = o->locp;
    /* the string table: "" then the set's strings in id order */
    o->table = malloc(((size_t)o->strings.n + 1) * sizeof *o->table);
    if (!o->table) return -1;
    o->table[0] = "";
    for (uint32_t k = 0; k < o->strings.n; k++) o->table[k + 1] = o->strings.key[k];
    o->prof.n_string_table = (size_t)o->strings.n + 1;
    o->prof.string_table = o->table;
    return 0;
}

/* One sample per stack (node with self > 0), locations leaf first. */
static int build_samples(store_reader *r, const query_tree *t, pprof_out *o)
{
    query_stacks q;
    if (query_stacks_build(r, t, &q)) return -1;
    if (query_stacks_sort(r, &q)) {
        query_stacks_free(&q);
        return -1;
    }
    size_t depth = q.n ? q.start[q.n - 1] + q.depth[q.n - 1] : 0;
    o->samples = malloc((q.n ? q.n : 1) * sizeof *o->samples);
    o->samplep = malloc((q.n ? q.n : 1) * sizeof *o->samplep);
    o->loc_ids = malloc((depth ? depth : 1) * sizeof *o->loc_ids);
    o->values = malloc((q.n ? q.n : 1) * sizeof *o->values);
    if (!o->samples || !o->samplep || !o->loc_ids || !o->values) {
        query_stacks_free(&q);
        return -1;
    }
    for (size_t k = 0; k < q.n; k++) {
        Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT;
        s.location_id = o->loc_ids + q.start[k];
        for (uint32_t d = 0; d < q.depth[k]; d++) /* root-first ids, reversed */
            s.location_id[d] = o->fslot[q.fns[q.start[k] + q.depth[k] - 1 - d]];
        s.n_location_id = q.depth[k];
        o->values[k] = (int64_t)query_value_rounded(t, t->self[q.node[k]]);
        s.n_value = 1;
        s.value = &o->values[k];
        o->samples[k] = s;
        o->samplep[k] = &o->samples[k];
    }
    o->prof.n_sample = q.n;
    o->prof.sample = o->samplep;
    query_stacks_free(&q);
    return 0;
}

char *query_tree_pprof(store_reader *r, const query_tree *t, const char *type, int64_t from_ms, int64_t until_ms,
                       size_t *len)
{
    pprof_out o;
    memset(&o, 0, sizeof o);
    pb_profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
    o.prof = prof;
    size_t n_strings = (size_t)store_string_max(r) + 1;
    char *packed = NULL, *gz = NULL;
    o.fslot = calloc(n_strings, sizeof *o.fslot);
    const char *unit = strcmp(t->unit, "samples") == 0 || !t->unit[0] ? "count" : t->unit;
    if (!o.fslot || build_functions(r, t, &o, n_strings, type && *type ? type : "samples", unit) ||
        build_samples(r, t, &o))
        goto done;
    o.vtp = &o.vt;
    o.prof.n_sample_type = 1;
    o.prof.sample_type = &o.vtp;
    o.prof.period_type = &o.period_type;
    o.prof.period = 1;
    o.prof.time_nanos = from_ms * 1000000;
    o.prof.duration_nanos = (until_ms - from_ms) * 1000000;
    size_t n = perftools__profiles__profile__get_packed_size(&o.prof);
    packed = malloc(n ? n : 1);
    if (!packed) goto done;
    perftools__profiles__profile__pack(&o.prof, (uint8_t *)packed);
    if (gzip_compress(packed, n, (unsigned char **)&gz, len)) gz = NULL;
done:
    free(packed);
    out_free(&o);
    return gz;
}
