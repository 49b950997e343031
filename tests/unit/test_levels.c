/* test_levels.c — the streamed encoders of a merged tree (query/buf.c,
 * encode_tree.c, encode_levels.c) over a real store:
 *   - the nested JSON written in one walk is byte for byte what the jansson
 *     tree it replaced dumped to (that encoder is kept here as the
 *     reference), for names with quotes, backslashes, control characters
 *     and UTF-8, for located frames (lines) and for averaged gauges;
 *   - the levels decode back (x offsets to positions, positions to
 *     parents) into the same tree as the nested JSON, node for node: names,
 *     totals and selfs, with and without max_nodes;
 *   - the levels of a small tree are the flamebearer tuples worked out by
 *     hand. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "../../query/query_internal.h"
#include "../../storage/frame.h"

static char tmpdir[256];
static store *st;

/* Stacks are given as they are stored ("a;b;c" root first): names may
 * hold anything but ';' and the frame separator. */
static void put(const char *service, int64_t from, const store_stack *stacks, size_t n, int gauge)
{
    store_label labels[2] = { { "service", service }, { "type", "cpu" } };
    store_profile p = { .labels = labels, .n_labels = 2, .from_ms = from, .until_ms = from + 10000,
                        .unit = gauge ? "bytes" : "samples", .stacks = stacks, .n_stacks = n, .gauge = gauge };
    char err[256];
    if (store_write(st, &p, NULL, err, sizeof err)) fail_msg("store_write: %s", err);
}

#define S(text, n) { text, (uint32_t)(sizeof text - 1), n }

static const store_stack awkward[] = {
    S("main;say \"hi\";quote\"d", 7),
    S("main;back\\slash;C:\\path\\x", 5),
    S("main;ctl\x01\x02\x1e\x7f;tab\tnl\nret\r", 3),
    S("main;caf\xc3\xa9;\xe2\x9c\x93 check;\xf0\x9f\x98\x80 face", 11),
    S("main;say \"hi\";back\\slash", 2),
    S("main;</script>;a/b", 1),
    S("other", 4),
};

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/flamedb-test-levels-XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    char err[256];
    store_options opt = { .dir = tmpdir };
    if (store_open(&st, &opt, err, sizeof err)) return -1;
    put("awk", 1000, awkward, sizeof awkward / sizeof awkward[0], 0);
    /* small: the tree of the hand-made levels below */
    store_stack small[] = { S("a;b", 3), S("a;c", 5), S("a", 1), S("d", 2) };
    put("small", 1000, small, 4, 0);
    /* small2: the other side of a diff with small (a;b, d shared; e new; c gone) */
    store_stack small2[] = { S("a;b", 1), S("a;e", 4), S("d", 7), S("f;g", 2) };
    put("small2", 1000, small2, 4, 0);
    /* a gauge over three snapshots: averages with fractions (divisor 3) */
    store_stack g1[] = { S("heap;alloc", 10), S("heap;grow", 1) };
    store_stack g2[] = { S("heap;alloc", 11) };
    store_stack g3[] = { S("heap;alloc", 11), S("heap;grow", 2) };
    put("gauge", 1000, g1, 2, 1);
    put("gauge", 2000, g2, 1, 1);
    put("gauge", 3000, g3, 2, 1);
    /* located frames: name US file US line US mapping US build_id */
    store_stack loc[] = { S("main\x1f/src/m.go\x1f" "10\x1f/bin/m\x1f" "abc;work\x1f/src/w.go\x1f" "42\x1f\x1f", 6),
                          S("main\x1f/src/m.go\x1f" "12\x1f/bin/m\x1f" "abc;work\x1f/src/w\"q.go\x1f" "7\x1f\x1f", 4) };
    put("loc", 1000, loc, 2, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd);
}

typedef struct {
    store_reader *r;
    query_selector sel;
    query_series_set set;
    query_tree t;
} answer;

static void ask(answer *a, const char *selector, int lines)
{
    char err[256];
    assert_int_equal(store_reader_begin(st, &a->r), STORE_OK);
    store_reader_lines(a->r, lines);
    if (query_selector_parse(selector, &a->sel, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(query_resolve(a->r, &a->sel, 0, 100000, &a->set, err, sizeof err), 0);
    assert_int_equal(query_merge(a->r, &a->set, 0, 100000, &a->t, err, sizeof err), 0);
}

static void done(answer *a)
{
    query_tree_free(&a->t);
    query_series_set_free(&a->set);
    query_selector_free(&a->sel);
    store_reader_end(a->r);
}

/* ---- the reference: the jansson encoder the streamed one replaced ------- */

static json_t *ref_node(store_reader *r, const query_tree *t, const query_view *v, uint32_t id)
{
    json_t *o = json_object(), *kids = json_array();
    if (id) {
        uint32_t len;
        const char *s = store_string(r, store_node_func(r, id), &len);
        frame_parts f;
        frame_parse(s, len, &f);
        json_object_set_new(o, "name", json_stringn(f.name, f.name_len));
        if (f.located) {
            if (f.file_len) json_object_set_new(o, "file", json_stringn(f.file, f.file_len));
            if (f.line) json_object_set_new(o, "line", json_integer(f.line));
            if (f.mapping_len) json_object_set_new(o, "mapping", json_stringn(f.mapping, f.mapping_len));
            if (f.build_id_len) json_object_set_new(o, "build_id", json_stringn(f.build_id, f.build_id_len));
        }
    } else {
        json_object_set_new(o, "name", json_string("root"));
    }
    json_object_set_new(o, "self", query_value_json(t, id ? t->self[id] : 0));
    json_object_set_new(o, "total", query_value_json(t, t->total[id]));
    uint32_t first, n = query_view_children(v, id, &first);
    for (uint32_t i = 0; i < n; i++) json_array_append_new(kids, ref_node(r, t, v, v->edges[first + i].id));
    json_object_set_new(o, "children", kids);
    return o;
}

static char *ref_text(store_reader *r, const query_tree *t, size_t max_nodes)
{
    query_view v;
    assert_int_equal(query_view_build(r, t, max_nodes, &v), 0);
    json_t *root = ref_node(r, t, &v, 0);
    query_view_free(&v);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

static void assert_same_as_reference(const char *selector, int lines, size_t max_nodes)
{
    answer a;
    ask(&a, selector, lines);
    query_buf b = { 0 };
    uint64_t tn, tt;
    assert_int_equal(query_tree_json_write(&b, a.r, &a.t, max_nodes, &tn, &tt), 0);
    size_t len;
    char *got = query_buf_take(&b, &len);
    char *want = ref_text(a.r, &a.t, max_nodes);
    assert_non_null(got);
    assert_int_equal(len, strlen(got));
    if (strcmp(got, want)) fail_msg("%s (lines %d, max_nodes %zu):\n got  %s\n want %s", selector, lines, max_nodes, got, want);
    free(got);
    free(want);
    done(&a);
}

static void test_stream_is_byte_identical(void **state)
{
    (void)state;
    assert_same_as_reference("awk{}", 0, 0);
    assert_same_as_reference("awk{}", 0, 3);
    assert_same_as_reference("small{}", 0, 0);
    assert_same_as_reference("gauge{}", 0, 0); /* reals: 32/3, 1 */
    assert_same_as_reference("loc{}", 1, 0);   /* file, line, mapping, build_id */
    assert_same_as_reference("loc{}", 0, 0);
    assert_same_as_reference("nothing{}", 0, 0);
}

/* The awkward names come back as they were stored (escaping undone by a
 * JSON reader gives the very bytes). */
static void test_stream_names_round_trip(void **state)
{
    (void)state;
    answer a;
    ask(&a, "awk{}", 0);
    uint64_t tn, tt;
    json_t *root = query_tree_json(a.r, &a.t, 0, &tn, &tt);
    assert_non_null(root);
    json_t *main_ = json_array_get(json_object_get(root, "children"), 0);
    assert_string_equal(json_string_value(json_object_get(main_, "name")), "main");
    const char *want[] = { "caf\xc3\xa9", "say \"hi\"", "back\\slash", "ctl\x01\x02\x1e\x7f", "</script>" };
    json_t *kids = json_object_get(main_, "children");
    assert_int_equal(json_array_size(kids), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(kids, i), "name")), want[i]);
    json_t *ctl = json_array_get(kids, 3);
    json_t *tab = json_array_get(json_object_get(ctl, "children"), 0);
    assert_string_equal(json_string_value(json_object_get(tab, "name")), "tab\tnl\nret\r");
    json_decref(root);
    done(&a);
}

/* ---- levels decoded back into a tree ----------------------------------- */

typedef struct dnode {
    const char *name;
    uint32_t name_len;
    int64_t x, total, self;
    size_t *kids, n_kids;
} dnode;

typedef struct {
    dnode *nodes;
    size_t n;
    size_t *level_first; /* index of a level's first node; level d is nodes[level_first[d] .. level_first[d+1]) */
} dtree;

static void decode(const query_levels *l, dtree *out)
{
    size_t n = 0;
    for (size_t d = 0; d < l->n_levels; d++) {
        assert_int_equal(l->levels[d].n % 4, 0);
        n += l->levels[d].n / 4;
    }
    out->nodes = calloc(n, sizeof *out->nodes);
    out->level_first = calloc(l->n_levels + 1, sizeof *out->level_first);
    out->n = 0;
    for (size_t d = 0; d < l->n_levels; d++) {
        out->level_first[d] = out->n;
        int64_t end = 0;
        size_t parent = d ? out->level_first[d - 1] : 0;
        for (size_t i = 0; i < l->levels[d].n; i += 4) {
            const int64_t *v = &l->levels[d].v[i];
            assert_true(v[0] >= 0);
            assert_true(v[3] >= 0 && (size_t)v[3] < l->n_names);
            dnode *nd = &out->nodes[out->n];
            nd->x = end + v[0];
            nd->total = v[1];
            nd->self = v[2];
            nd->name = l->names[v[3]];
            nd->name_len = l->name_lens[v[3]];
            end = nd->x + nd->total;
            if (d) { /* the parent: the node of the level above whose span holds x */
                while (parent < out->level_first[d] &&
                       !(out->nodes[parent].x <= nd->x && nd->x + nd->total <= out->nodes[parent].x + out->nodes[parent].total))
                    parent++;
                assert_true(parent < out->level_first[d]);
                dnode *p = &out->nodes[parent];
                p->kids = realloc(p->kids, (p->n_kids + 1) * sizeof *p->kids);
                p->kids[p->n_kids++] = out->n;
            }
            out->n++;
        }
    }
    out->level_first[l->n_levels] = out->n;
}

static void dtree_free(dtree *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->nodes[i].kids);
    free(t->nodes);
    free(t->level_first);
}

static size_t compare(const dtree *d, size_t at, json_t *j, int root)
{
    const dnode *nd = &d->nodes[at];
    const char *name = json_string_value(json_object_get(j, "name"));
    if (root) assert_true(nd->name_len == 5 && !memcmp(nd->name, "total", 5));
    else if (strlen(name) != nd->name_len || memcmp(name, nd->name, nd->name_len))
        fail_msg("name %.*s, nested JSON has %s", (int)nd->name_len, nd->name, name);
    /* averaged gauges: the JSON's values with fractions, the levels' rounded */
    assert_int_equal(nd->total, llround(json_number_value(json_object_get(j, "total"))));
    assert_int_equal(nd->self, llround(json_number_value(json_object_get(j, "self"))));
    json_t *kids = json_object_get(j, "children");
    assert_int_equal(nd->n_kids, json_array_size(kids));
    size_t count = 1;
    for (size_t i = 0; i < nd->n_kids; i++) count += compare(d, nd->kids[i], json_array_get(kids, i), 0);
    return count;
}

static void assert_levels_match_tree(const char *selector, size_t max_nodes)
{
    answer a;
    ask(&a, selector, 0);
    query_levels l;
    assert_int_equal(query_levels_build(a.r, &a.t, max_nodes, &l), 0);
    uint64_t tn, tt;
    json_t *root = query_tree_json(a.r, &a.t, max_nodes, &tn, &tt);
    assert_int_equal(l.trunc_nodes, tn);
    assert_int_equal(l.trunc_total, tt);
    assert_int_equal(l.total, (int64_t)query_value_rounded(&a.t, a.t.grand_total));
    dtree d;
    decode(&l, &d);
    assert_int_equal(compare(&d, 0, root, 1), d.n); /* every node of the levels met once */
    int64_t max_self = 0;
    for (size_t i = 0; i < d.n; i++)
        if (d.nodes[i].self > max_self) max_self = d.nodes[i].self;
    assert_int_equal(l.max_self, max_self);
    /* names are distinct: one entry per function */
    for (size_t i = 0; i < l.n_names; i++)
        for (size_t k = i + 1; k < l.n_names; k++)
            assert_false(l.name_lens[i] == l.name_lens[k] && !memcmp(l.names[i], l.names[k], l.name_lens[i]));
    dtree_free(&d);
    json_decref(root);
    query_levels_free(&l);
    done(&a);
}

static void test_levels_decode_to_the_tree(void **state)
{
    (void)state;
    assert_levels_match_tree("awk{}", 0);
    assert_levels_match_tree("awk{}", 4);
    assert_levels_match_tree("small{}", 0);
    assert_levels_match_tree("small{}", 2);
    assert_levels_match_tree("{}", 0);     /* every service under one root */
    assert_levels_match_tree("nothing{}", 0);
}

/* a;b 3, a;c 5, a 1, d 2: root 11; a (9, self 1) then d (2); under a, c
 * (5) then b (3).  Names by first sight: total, a, c, b, d. */
static void test_levels_by_hand(void **state)
{
    (void)state;
    answer a;
    ask(&a, "small{}", 0);
    query_levels l;
    assert_int_equal(query_levels_build(a.r, &a.t, 0, &l), 0);
    assert_int_equal(l.n_levels, 3);
    assert_int_equal(l.n_names, 5);
    const char *names[] = { "total", "a", "c", "b", "d" };
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(l.name_lens[i], strlen(names[i]));
        assert_memory_equal(l.names[i], names[i], l.name_lens[i]);
    }
    int64_t l0[] = { 0, 11, 0, 0 };
    int64_t l1[] = { 0, 9, 1, 1, 0, 2, 2, 4 };
    int64_t l2[] = { 0, 5, 5, 2, 0, 3, 3, 3 };
    assert_int_equal(l.levels[0].n, 4);
    assert_memory_equal(l.levels[0].v, l0, sizeof l0);
    assert_int_equal(l.levels[1].n, 8);
    assert_memory_equal(l.levels[1].v, l1, sizeof l1);
    assert_int_equal(l.levels[2].n, 8);
    assert_memory_equal(l.levels[2].v, l2, sizeof l2);
    assert_int_equal(l.max_self, 5);
    assert_int_equal(l.total, 11);

    query_buf b = { 0 };
    query_buf_put(&b, "{", 1);
    query_levels_json_write(&b, &l);
    query_buf_put(&b, "}", 1);
    size_t len;
    char *text = query_buf_take(&b, &len);
    assert_string_equal(text, "{\"names\":[\"total\",\"a\",\"c\",\"b\",\"d\"],\"levels\":[[0,11,0,0],[0,9,1,1,0,2,2,4],"
                              "[0,5,5,2,0,3,3,3]]}");
    free(text);
    query_levels_free(&l);

    /* max_nodes 2 keeps a (9) and c (5): the gap b leaves shows as c's
     * end before a's; d is gone, the root's total stays 11 */
    assert_int_equal(query_levels_build(a.r, &a.t, 2, &l), 0);
    int64_t t1[] = { 0, 9, 1, 1 };
    int64_t t2[] = { 0, 5, 5, 2 };
    assert_int_equal(l.levels[1].n, 4);
    assert_memory_equal(l.levels[1].v, t1, sizeof t1);
    assert_memory_equal(l.levels[2].v, t2, sizeof t2);
    assert_int_equal(l.trunc_nodes, 2);
    assert_int_equal(l.trunc_total, 5);
    query_levels_free(&l);
    done(&a);
}

/* Gauges: the average of three snapshots, 32/3 and 1 under heap: each
 * value rounded, offsets never negative. */
static void test_levels_gauge_rounded(void **state)
{
    (void)state;
    answer a;
    ask(&a, "gauge{}", 0);
    assert_int_equal(a.t.divisor, 3);
    query_levels l;
    assert_int_equal(query_levels_build(a.r, &a.t, 0, &l), 0);
    int64_t l2[] = { 0, 11, 11, 2, 0, 1, 1, 3 }; /* alloc 10.67 -> 11, grow 1 */
    assert_int_equal(l.levels[2].n, 8);
    assert_memory_equal(l.levels[2].v, l2, sizeof l2);
    assert_int_equal(l.levels[1].v[1], 12); /* heap 35/3 + ... = 11.67 -> 12 */
    query_levels_free(&l);
    done(&a);
}

/* ---- the diff's JSON: streamed, against the jansson encoder it replaced --- */

static json_t *ref_diff_node(store_reader *r, const query_tree *a, const query_tree *b, const query_view *v,
                             uint32_t id)
{
    json_t *kids = json_array();
    uint32_t first, n = query_view_children(v, id, &first);
    for (uint32_t i = 0; i < n; i++) json_array_append_new(kids, ref_diff_node(r, a, b, v, v->edges[first + i].id));
    return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "name", id ? store_string(r, store_node_func(r, id), NULL) : "root",
                     "left_self", query_value_json(a, id ? diff_self_at(a, id) : 0), "left_total",
                     query_value_json(a, diff_total_at(a, id)), "right_self",
                     query_value_json(b, id ? diff_self_at(b, id) : 0), "right_total",
                     query_value_json(b, diff_total_at(b, id)), "children", kids);
}

static char *ref_diff_text(store_reader *r, const query_tree *a, const query_tree *b, const char *lt, const char *rt)
{
    query_view v;
    assert_int_equal(query_diff_view(r, a, b, 0, &v), 0);
    json_t *o = json_pack("{s:o,s:o,s:s,s:s,s:o,s:o,s:o}", "left_total", query_value_json(a, a->grand_total),
                          "right_total", query_value_json(b, b->grand_total), "left_unit", a->unit, "right_unit",
                          b->unit, "tree", ref_diff_node(r, a, b, &v, 0), "left_type",
                          lt ? json_string(lt) : json_null(), "right_type", rt ? json_string(rt) : json_null());
    query_view_free(&v);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* The diff's answer as written (NUL-terminated). */
static char *diff_text(store_reader *r, const query_tree *a, const query_tree *b, const char *lt, const char *rt)
{
    query_buf buf = { 0 };
    size_t len;
    assert_int_equal(query_diff_json_write(&buf, r, a, b, lt, rt), 0);
    char *text = query_buf_take(&buf, &len);
    assert_non_null(text);
    assert_int_equal(len, strlen(text));
    return text;
}

static void assert_diff_same_as_reference(const char *left, const char *right, const char *lt, const char *rt)
{
    answer a, b;
    ask(&a, left, 0);
    /* the right side in the same reader: node ids agree */
    char err[256];
    if (query_selector_parse(right, &b.sel, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(query_resolve(a.r, &b.sel, 0, 100000, &b.set, err, sizeof err), 0);
    assert_int_equal(query_merge(a.r, &b.set, 0, 100000, &b.t, err, sizeof err), 0);
    char *got = diff_text(a.r, &a.t, &b.t, lt, rt), *want = ref_diff_text(a.r, &a.t, &b.t, lt, rt);
    if (strcmp(got, want)) fail_msg("%s against %s:\n got  %s\n want %s", left, right, got, want);
    free(got);
    free(want);
    query_tree_free(&b.t);
    query_series_set_free(&b.set);
    query_selector_free(&b.sel);
    done(&a);
}

static void test_diff_stream_is_byte_identical(void **state)
{
    (void)state;
    assert_diff_same_as_reference("small{}", "small2{}", "cpu", "cpu");
    assert_diff_same_as_reference("awk{}", "small{}", "cpu", NULL);      /* escaped names; a type null */
    assert_diff_same_as_reference("gauge{}", "small{}", NULL, "cpu");    /* reals on one side */
    assert_diff_same_as_reference("loc{}", "loc{}", "cpu", "cpu");       /* frame text as stored */
    assert_diff_same_as_reference("nothing{}", "small{}", "cpu", "cpu"); /* one side empty */
    assert_diff_same_as_reference("nothing{}", "nothing{}", NULL, NULL);
}

/* ---- diff levels against the diff's JSON ------------------------------- */

typedef struct ddnode {
    const char *name;
    uint32_t name_len;
    int64_t x[2], total[2], self[2];
    size_t *kids, n_kids;
} ddnode;

/* Decodes 7-value levels: each side's x from its offsets; a node's parent
 * found on a side where it has width (a side where it is 0 wide says
 * nothing about where it hangs). */
static ddnode *decode_diff(const query_levels *l, size_t *n_out)
{
    size_t n = 0;
    for (size_t d = 0; d < l->n_levels; d++) {
        assert_int_equal(l->levels[d].n % 7, 0);
        n += l->levels[d].n / 7;
    }
    ddnode *nodes = calloc(n, sizeof *nodes);
    size_t at = 0, prev_first = 0, first = 0;
    for (size_t d = 0; d < l->n_levels; d++) {
        int64_t end[2] = { 0, 0 };
        first = at;
        for (size_t i = 0; i < l->levels[d].n; i += 7) {
            const int64_t *v = &l->levels[d].v[i];
            ddnode *nd = &nodes[at];
            for (int sd = 0; sd < 2; sd++) {
                assert_true(v[3 * sd] >= 0);
                nd->x[sd] = end[sd] + v[3 * sd];
                nd->total[sd] = v[3 * sd + 1];
                nd->self[sd] = v[3 * sd + 2];
                end[sd] = nd->x[sd] + nd->total[sd];
            }
            nd->name = l->names[v[6]];
            nd->name_len = l->name_lens[v[6]];
            if (d) {
                int sd = nd->total[0] > 0 ? 0 : 1;
                assert_true(nd->total[sd] > 0);
                size_t p = prev_first;
                while (p < first && !(nodes[p].x[sd] <= nd->x[sd] && nd->x[sd] < nodes[p].x[sd] + nodes[p].total[sd] &&
                                      nd->x[sd] + nd->total[sd] <= nodes[p].x[sd] + nodes[p].total[sd]))
                    p++;
                assert_true(p < first);
                nodes[p].kids = realloc(nodes[p].kids, (nodes[p].n_kids + 1) * sizeof *nodes[p].kids);
                nodes[p].kids[nodes[p].n_kids++] = at;
            }
            at++;
        }
        prev_first = first;
    }
    *n_out = n;
    return nodes;
}

static size_t compare_diff(const ddnode *nodes, size_t at, json_t *j, int root)
{
    const ddnode *nd = &nodes[at];
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!root && (strlen(name) != nd->name_len || memcmp(name, nd->name, nd->name_len)))
        fail_msg("name %.*s, diff JSON has %s", (int)nd->name_len, nd->name, name);
    assert_int_equal(nd->total[0], json_integer_value(json_object_get(j, "left_total")));
    assert_int_equal(nd->self[0], json_integer_value(json_object_get(j, "left_self")));
    assert_int_equal(nd->total[1], json_integer_value(json_object_get(j, "right_total")));
    assert_int_equal(nd->self[1], json_integer_value(json_object_get(j, "right_self")));
    json_t *kids = json_object_get(j, "children");
    assert_int_equal(nd->n_kids, json_array_size(kids));
    size_t count = 1;
    for (size_t i = 0; i < nd->n_kids; i++) count += compare_diff(nodes, nd->kids[i], json_array_get(kids, i), 0);
    return count;
}

static void merge_in(store_reader *r, const char *selector, query_series_set *set, query_tree *t)
{
    char err[256];
    query_selector sel;
    if (query_selector_parse(selector, &sel, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(query_resolve(r, &sel, 0, 100000, set, err, sizeof err), 0);
    assert_int_equal(query_merge(r, set, 0, 100000, t, err, sizeof err), 0);
    query_selector_free(&sel);
}

static void test_diff_levels_match_diff_json(void **state)
{
    (void)state;
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    query_series_set sa, sb;
    query_tree a, b;
    merge_in(r, "small{}", &sa, &a);
    merge_in(r, "small2{}", &sb, &b);
    query_levels l;
    assert_int_equal(query_levels_diff_build(r, &a, &b, 0, &l), 0);
    assert_int_equal(l.width, 7);
    assert_int_equal(l.left_total, 11);
    assert_int_equal(l.right_total, 14);
    assert_int_equal(l.total, 25);
    assert_int_equal(l.max_self, 7);
    size_t n;
    ddnode *nodes = decode_diff(&l, &n);
    char *text = diff_text(r, &a, &b, "cpu", "cpu");
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    assert_int_equal(json_integer_value(json_object_get(j, "left_total")), 11);
    assert_int_equal(json_integer_value(json_object_get(j, "right_total")), 14);
    assert_int_equal(compare_diff(nodes, 0, json_object_get(j, "tree"), 1), n);
    /* by hand: level 1 is d (2 + 7 = 9) then a (9 + 5 = 14)? a first: 14 > 9 */
    int64_t l1[] = { 0, 9, 1, 0, 5, 0, 1, 0, 2, 2, 0, 7, 7, 0 };
    l1[13] = l.levels[1].v[13]; /* d's name index: checked below */
    assert_int_equal(l.levels[1].n, 21);
    assert_memory_equal(l.levels[1].v, l1, 14 * sizeof *l1);
    assert_true(l.name_lens[l.levels[1].v[13]] == 1 && l.names[l.levels[1].v[13]][0] == 'd');
    for (size_t i = 0; i < n; i++) free(nodes[i].kids);
    free(nodes);
    json_decref(j);
    query_levels_free(&l);

    /* max_nodes 3 keeps a (14), d (9) and c (5) or e (4)...: the 3 largest sums */
    assert_int_equal(query_levels_diff_build(r, &a, &b, 3, &l), 0);
    size_t kept = 0;
    for (size_t d = 1; d < l.n_levels; d++) kept += l.levels[d].n / 7;
    assert_int_equal(kept, 3);
    assert_int_equal(l.trunc_nodes, 4); /* of a, d, b, c, e, f, g */
    query_levels_free(&l);

    query_tree_free(&a);
    query_tree_free(&b);
    query_series_set_free(&sa);
    query_series_set_free(&sb);
    store_reader_end(r);
}

static void test_buf_basics(void **state)
{
    (void)state;
    query_buf b = { 0 };
    query_buf_u64(&b, 0);
    query_buf_put(&b, " ", 1);
    query_buf_u64(&b, UINT64_MAX);
    query_buf_put(&b, " ", 1);
    query_buf_i64(&b, INT64_MIN);
    query_buf_put(&b, " ", 1);
    const uint64_t some[] = { 7, 42, 100, 999, 1000, 12345, 1234567890123 };
    for (size_t i = 0; i < sizeof some / sizeof some[0]; i++) {
        query_buf_u64(&b, some[i]);
        query_buf_put(&b, " ", 1);
    }
    json_t *o = json_pack("{s:i,s:s}", "a", 1, "b", "\"");
    query_buf_object_open(&b, o);
    json_decref(o);
    query_buf_puts(&b, ",\"c\":[]}");
    for (int i = 0; i < 10000; i++) query_buf_put(&b, "x", 1); /* growth */
    size_t len;
    char *s = query_buf_take(&b, &len);
    assert_int_equal(len, strlen(s));
    const char *want = "0 18446744073709551615 -9223372036854775808 7 42 100 999 1000 12345 1234567890123 "
                       "{\"a\":1,\"b\":\"\\\"\",\"c\":[]}xxx";
    assert_true(!strncmp(s, want, strlen(want)));
    free(s);
    /* a failed write fails the whole buffer */
    query_buf_json(&b, NULL);
    query_buf_puts(&b, "more");
    assert_null(query_buf_take(&b, &len));
}

/* b holds what json_dumps writes for j (taken: b is emptied, j freed). */
static void assert_buf_dumps(query_buf *b, json_t *j)
{
    size_t len;
    char *got = query_buf_take(b, &len);
    char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_string_equal(got, want);
    free(want);
    free(got);
    json_decref(j);
}

/* JSON strings and times as jansson writes them: the plain-ASCII path
 * and the escaped one give json_dumps's bytes. */
static void test_buf_strings_and_times_as_jansson(void **state)
{
    (void)state;
    const char *strs[] = { "", "cpu", "main;a b/c", "say \"hi\"", "back\\slash", "tab\tnl\n", "\x7f del",
                           "caf\xc3\xa9", "\x01", "~!@#$%^&*()_+{}|:<>?" };
    const int64_t times[] = { 0, 1796000000000, 1796000000001, -1500, 1796000000400, -3000 };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        query_buf b = { 0 };
        query_buf_json_string(&b, strs[i], strlen(strs[i]));
        assert_buf_dumps(&b, json_string(strs[i]));
    }
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        query_buf b = { 0 };
        query_buf_time(&b, times[i]);
        assert_buf_dumps(&b, query_time_json(times[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_basics),
        cmocka_unit_test(test_buf_strings_and_times_as_jansson),
        cmocka_unit_test(test_stream_is_byte_identical),
        cmocka_unit_test(test_stream_names_round_trip),
        cmocka_unit_test(test_levels_decode_to_the_tree),
        cmocka_unit_test(test_levels_by_hand),
        cmocka_unit_test(test_levels_gauge_rounded),
        cmocka_unit_test(test_diff_stream_is_byte_identical),
        cmocka_unit_test(test_diff_levels_match_diff_json),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
