/* encode_pprof.c — a merged tree as a gzip'd pprof profile.proto, the
 * format `go tool pprof` reads.
 *
 * One sample type: the query's type with the tree's unit ("samples" is
 * written as pprof's "count").  One Function and one Location (a single
 * Line) per distinct function name, so `go tool pprof -top` ranks exactly
 * the functions /api/v1/top ranks.  One Sample per call-tree node with
 * self > 0: its location ids leaf first (the node, then its ancestors), its
 * value the node's self.  pprof's flat(f) is then self(f), and its cum(f),
 * which counts a sample once however often f recurs in it, is total(f).
 * time_nanos is from and duration_nanos is until − from. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "query_internal.h"

int query_gzip(const void *in, size_t len, char **out, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    size_t cap = deflateBound(&z, (uLong)len) + 32;
    char *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)buf;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = n;
    return 0;
}

typedef Perftools__Profiles__Profile pb_profile;

/* The protobuf-c messages of the answer, in a few flat arrays. */
typedef struct {
    pb_profile prof;
    Perftools__Profiles__ValueType vt, *vtp;
    Perftools__Profiles__ValueType period_type;
    char **strings;
    Perftools__Profiles__Function *fns, **fnp;
    Perftools__Profiles__Location *locs, **locp;
    Perftools__Profiles__Line *lines, **linep;
    Perftools__Profiles__Sample *samples, **samplep;
    uint64_t *loc_ids;
    int64_t *values;
    uint32_t *fslot;    /* function string id -> function index + 1 */
} pprof_out;

static void out_free(pprof_out *o)
{
    free(o->strings);
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

/* Functions and locations: one per distinct function name. */
static int build_functions(store_reader *r, const query_tree *t, pprof_out *o, size_t n_strings)
{
    size_t nf = 0;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (!id) continue;
        uint32_t f = store_node_func(r, id);
        if (f < n_strings && !o->fslot[f]) o->fslot[f] = (uint32_t)++nf;
    })
    size_t n = nf ? nf : 1;
    o->strings = malloc((nf + 3) * sizeof *o->strings);
    o->fns = malloc(n * sizeof *o->fns);
    o->fnp = malloc(n * sizeof *o->fnp);
    o->locs = malloc(n * sizeof *o->locs);
    o->locp = malloc(n * sizeof *o->locp);
    o->lines = malloc(n * sizeof *o->lines);
    o->linep = malloc(n * sizeof *o->linep);
    if (!o->strings || !o->fns || !o->fnp || !o->locs || !o->locp || !o->lines || !o->linep) return -1;
    for (uint32_t f = 0; f < n_strings; f++) {
        if (!o->fslot[f]) continue;
        size_t i = o->fslot[f] - 1;
        o->strings[3 + i] = (char *)store_string(r, f, NULL);
        Perftools__Profiles__Function fn = PERFTOOLS__PROFILES__FUNCTION__INIT;
        fn.id = i + 1;
        fn.name = fn.system_name = (int64_t)(3 + i);
        o->fns[i] = fn;
        o->fnp[i] = &o->fns[i];
        Perftools__Profiles__Line ln = PERFTOOLS__PROFILES__LINE__INIT;
        ln.function_id = (int64_t)(i + 1);
        o->lines[i] = ln;
        o->linep[i] = &o->lines[i];
        Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT;
        loc.id = i + 1;
        loc.n_line = 1;
        loc.line = &o->linep[i];
        o->locs[i] = loc;
        o->locp[i] = &o->locs[i];
    }
    o->prof.n_function = o->prof.n_location = nf;
    o->prof.function = o->fnp;
    o->prof.location = o->locp;
    o->prof.n_string_table = nf + 3;
    o->prof.string_table = o->strings;
    return 0;
}

/* One sample per stack (node with self > 0), locations leaf first. */
static int build_samples(store_reader *r, const query_tree *t, pprof_out *o)
{
    query_stacks q;
    if (query_stacks_build(r, t, &q)) return -1;
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
    if (!o.fslot || build_functions(r, t, &o, n_strings) || build_samples(r, t, &o)) goto done;
    o.strings[0] = "";
    o.strings[1] = (char *)(type && *type ? type : "samples");
    o.strings[2] = (char *)(strcmp(t->unit, "samples") == 0 || !t->unit[0] ? "count" : t->unit);
    Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    vt.type = 1;
    vt.unit = 2;
    o.vt = vt;
    o.period_type = vt;
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
    if (query_gzip(packed, n, &gz, len)) gz = NULL;
done:
    free(packed);
    out_free(&o);
    return gz;
}
