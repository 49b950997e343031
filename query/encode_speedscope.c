/* encode_speedscope.c — profiles as a speedscope file
 * (https://www.speedscope.app/file-format-schema.json), which the
 * speedscope viewer opens directly.
 *
 * The caller hands over stacks of function ids, root first, with weights;
 * each becomes one entry of a "sampled" profile's "samples" and "weights".
 * Frames are shared by all profiles of the file: a small open-addressing
 * hash from function id to frame index gives each distinct function one
 * frame, numbered in order of first appearance, and the "shared.frames"
 * list is written once every profile has been seen.  Merged trees give
 * their stacks in path order (query_stacks_sort), so frames are numbered
 * by the data alone, not by the reader's ids. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "stats.h"

#define SS_SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define SS_EMPTY UINT32_MAX

/* Function id -> frame index.  slots hold frame indices (SS_EMPTY when
 * free); ids[frame] is the function of each frame. */
typedef struct {
    uint32_t *slots;
    size_t cap;        /* power of two */
    uint32_t *ids;
    size_t n, ids_cap;
} ss_frames;

static size_t slot_of(const ss_frames *f, uint32_t fn)
{
    uint32_t h = fn * 0x9E3779B1u;
    return (size_t)(h ^ (h >> 16)) & (f->cap - 1);
}

/* Doubles the slot table and re-inserts every frame. */
static int frames_grow(ss_frames *f)
{
    size_t cap = f->cap ? f->cap * 2 : 64;
    uint32_t *slots = malloc(cap * sizeof *slots);
    if (!slots) return -1;
    memset(slots, 0xff, cap * sizeof *slots);
    free(f->slots);
    f->slots = slots;
    f->cap = cap;
    for (size_t i = 0; i < f->n; i++) {
        size_t s = slot_of(f, f->ids[i]);
        while (slots[s] != SS_EMPTY) s = (s + 1) & (cap - 1);
        slots[s] = (uint32_t)i;
    }
    return 0;
}

/* Appends fn as a new frame at slot s; answers its index or -1. */
static int64_t frames_add(ss_frames *f, size_t s, uint32_t fn)
{
    if (f->n == f->ids_cap) {
        size_t cap = f->ids_cap ? f->ids_cap * 2 : 64;
        uint32_t *ids = realloc(f->ids, cap * sizeof *ids);
        if (!ids) return -1;
        f->ids = ids;
        f->ids_cap = cap;
    }
    f->ids[f->n] = fn;
    f->slots[s] = (uint32_t)f->n;
    return (int64_t)f->n++;
}

/* The frame index of fn, added when new; -1 when out of memory. */
static int64_t frames_index(ss_frames *f, uint32_t fn)
{
    if ((f->n + 1) * 2 > f->cap && frames_grow(f)) return -1;
    size_t s = slot_of(f, fn);
    for (; f->slots[s] != SS_EMPTY; s = (s + 1) & (f->cap - 1))
        if (f->ids[f->slots[s]] == fn) return f->slots[s];
    return frames_add(f, s, fn);
}

static void frames_free(ss_frames *f)
{
    free(f->slots);
    free(f->ids);
}

/* speedscope's units pass through; flamedb's others ("samples",
 * "objects", ...) have no speedscope equivalent and become "none". */
static const char *ss_unit(const char *unit)
{
    static const char *const known[] = {"nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"};
    for (size_t i = 0; unit && i < sizeof known / sizeof *known; i++)
        if (!strcmp(unit, known[i])) return known[i];
    return "none";
}

/* A JSON number for v: an integer while it fits json_int_t. */
static json_t *u64_json(uint64_t v)
{
    return v <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

/* A JSON string for a frame name; bytes that are not valid UTF-8 (names
 * from binaries may hold any) are replaced by '?' rather than lost. */
static json_t *name_json(const char *name)
{
    if (!name) name = "";
    json_t *s = json_string(name);
    if (s) return s;
    char *copy = strdup(name);
    if (!copy) return NULL;
    for (char *c = copy; *c; c++)
        if ((unsigned char)*c >= 0x80) *c = '?';
    s = json_string(copy);
    free(copy);
    return s;
}

/* [frame indices] of one stack. */
static json_t *stack_json(ss_frames *f, const query_ss_stack *st)
{
    json_t *a = json_array();
    for (uint32_t d = 0; a && d < st->depth; d++) {
        int64_t ix = frames_index(f, st->frames[d]);
        if (ix < 0 || json_array_append_new(a, json_integer(ix))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Fills a profile's "samples" and "weights" and answers the weight sum in
 * *total; -1 when out of memory. */
static int samples_json(ss_frames *f, const query_ss_profile *p, json_t *samples, json_t *weights,
                        uint64_t *total)
{
    *total = 0;
    for (size_t i = 0; i < p->n_stacks; i++) {
        const query_ss_stack *st = &p->stacks[i];
        if (json_array_append_new(samples, stack_json(f, st))) return -1;
        if (json_array_append_new(weights, u64_json(st->weight))) return -1;
        *total = *total + st->weight < *total ? UINT64_MAX : *total + st->weight;
    }
    return 0;
}

static json_t *profile_json(ss_frames *f, const query_ss_profile *p, const char *unit)
{
    json_t *o = json_object(), *samples = json_array(), *weights = json_array();
    uint64_t total;
    if (!o || !samples || !weights || samples_json(f, p, samples, weights, &total)) {
        json_decref(o);
        json_decref(samples);
        json_decref(weights);
        return NULL;
    }
    /* set_new releases its value even when it fails; the arrays are only
     * borrowed by set, so they are released here whatever happens. */
    int bad = json_object_set_new(o, "type", json_string("sampled")) ||
              json_object_set_new(o, "name", name_json(p->name)) ||
              json_object_set_new(o, "unit", json_string(unit)) ||
              json_object_set_new(o, "startValue", json_integer(0)) ||
              json_object_set_new(o, "endValue", u64_json(total)) ||
              json_object_set(o, "samples", samples) ||
              json_object_set(o, "weights", weights);
    json_decref(samples);
    json_decref(weights);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* {"frames": [{"name"}...]} in frame index order. */
static json_t *shared_json(const ss_frames *f, query_name_fn frame_name, void *ctx)
{
    json_t *shared = json_object(), *frames = json_array();
    if (!shared || !frames || json_object_set(shared, "frames", frames)) goto fail;
    for (size_t i = 0; i < f->n; i++) {
        json_t *fr = json_object();
        if (!fr || json_array_append_new(frames, fr)) goto fail;
        if (json_object_set_new(fr, "name", name_json(frame_name(ctx, f->ids[i])))) goto fail;
    }
    json_decref(frames);
    return shared;
fail:
    json_decref(shared);
    json_decref(frames);
    return NULL;
}

static json_t *profiles_json(ss_frames *f, const query_ss_profile *profiles, size_t n, const char *unit)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        if (json_array_append_new(a, profile_json(f, &profiles[i], profiles[i].unit ? ss_unit(profiles[i].unit) : unit))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *query_speedscope_json(const query_ss_profile *profiles, size_t n_profiles, const char *unit,
                              const char *name, query_name_fn frame_name, void *ctx)
{
    ss_frames f = {0};
    json_t *o = json_object();
    json_t *ps = profiles_json(&f, profiles, n_profiles, ss_unit(unit));
    json_t *shared = ps ? shared_json(&f, frame_name, ctx) : NULL;
    frames_free(&f);
    if (!o || !ps || !shared) {
        json_decref(o);
        json_decref(ps);
        json_decref(shared);
        return NULL;
    }
    int bad = json_object_set_new(o, "$schema", json_string(SS_SCHEMA)) ||
              json_object_set(o, "shared", shared) ||
              json_object_set(o, "profiles", ps) ||
              json_object_set_new(o, "name", name_json(name)) ||
              json_object_set_new(o, "activeProfileIndex", json_integer(0)) ||
              json_object_set_new(o, "exporter", json_string("flamedb"));
    json_decref(ps);
    json_decref(shared);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- merged trees to speedscope ---------------------------------------- */

/* A tree's stacks as speedscope samples, weighted by their self values. */
typedef struct {
    query_stacks q;
    query_ss_stack *stacks;
    size_t n;
} tree_stacks;

static int collect_stacks(store_reader *r, const query_tree *t, tree_stacks *out)
{
    memset(out, 0, sizeof *out);
    if (query_stacks_build(r, t, &out->q) || query_stacks_sort(r, &out->q)) return -1;
    out->stacks = malloc((out->q.n ? out->q.n : 1) * sizeof *out->stacks);
    if (!out->stacks) return -1;
    for (size_t i = 0; i < out->q.n; i++)
        out->stacks[i] = (query_ss_stack){ out->q.fns + out->q.start[i], out->q.depth[i], query_value_rounded(t, t->self[out->q.node[i]]) };
    out->n = out->q.n;
    return 0;
}

static const char *fn_name(void *ctx, uint32_t fn)
{
    return store_string(ctx, fn, NULL);
}

json_t *query_trees_speedscope(store_reader *r, const query_tree *const *trees, const char *const *names, size_t n,
                               const char *name)
{
    tree_stacks *ts = calloc(n ? n : 1, sizeof *ts);
    query_ss_profile *profiles = calloc(n ? n : 1, sizeof *profiles);
    json_t *out = NULL;
    if (!ts || !profiles) goto done;
    for (size_t i = 0; i < n; i++) {
        if (collect_stacks(r, trees[i], &ts[i])) goto done;
        profiles[i] = (query_ss_profile){ names[i], ts[i].stacks, ts[i].n, trees[i]->unit };
    }
    out = query_speedscope_json(profiles, n, n ? trees[0]->unit : "none", name, fn_name, r);
done:
    for (size_t i = 0; ts && i < n; i++) {
        free(ts[i].stacks);
        query_stacks_free(&ts[i].q);
    }
    free(ts);
    free(profiles);
    return out;
}
