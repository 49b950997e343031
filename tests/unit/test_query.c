/* test_query.c — query/: resolving selectors to series and a type, merging
 * with rate weights and unit choice, totals, max_nodes truncation and the
 * JSON and folded encoders, all over a real store in a temporary directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "../../query/query.h"
#include "../../storage/segment.h"

static char tmpdir[256];
static store *st;

/* A profile of kind gauge (a snapshot) or counter, with samples as said. */
static void put_kind(const char *service, const char *type, const char *instance, int64_t from, double rate,
                     const char *unit, const char *folded, int gauge, store_samples_kind samples)
{
    store_label labels[3] = { { "instance", instance }, { "service", service }, { "type", type } };
    store_stack stacks[32];
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", folded);
    size_t n = 0;
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
        char *sp = strrchr(line, ' ');
        *sp = '\0';
        stacks[n].frames = line;
        stacks[n].len = (uint32_t)strlen(line);
        stacks[n++].count = strtoull(sp + 1, NULL, 10);
    }
    store_profile p = { labels, 3, from, from + 10000, rate, unit, stacks, n, NULL, 0, NULL, samples, 0, gauge, NULL, NULL, NULL, 0 };
    char err[256];
    if (store_write(st, &p, NULL, err, sizeof err)) fail_msg("store_write: %s", err);
}

static void put(const char *service, const char *type, const char *instance, int64_t from, double rate,
                const char *unit, const char *folded)
{
    put_kind(service, type, instance, from, rate, unit, folded, 0, STORE_SAMPLES_COUNTS);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/flamedb-test-query-XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    char err[256];
    store_options opt = { .dir = tmpdir };
    if (store_open(&st, &opt, err, sizeof err)) return -1;
    /* api: cpu at rate 100 and 50 (the example), plus an alloc type. */
    put("api", "cpu", "i-1", 1000, 100, "samples", "main;a 10\n");
    put("api", "cpu", "i-2", 2000, 50, "samples", "main;b 10\n");
    put("api", "alloc_space", "i-1", 1000, 0, "bytes", "main;malloc 4096\n");
    /* web: no rate, a deeper tree for truncation. */
    put("web", "cpu", "w-1", 1000, 0, "samples", "h;x;y 5\nh;x;z 3\nh;x 2\nh;w 4\nh;w 1\nk 1\n");
    /* db: only a samples type, one profile with and two without rate. */
    put("db", "samples", "d-1", 1000, 0, "samples", "q 1\n");
    put("db", "samples", "d-1", 2000, 0, "samples", "q 2\n");
    put("db", "samples", "d-1", 3000, 10, "samples", "q 3\n");
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

static void ask(answer *a, const char *selector, int64_t from, int64_t until)
{
    char err[256];
    assert_int_equal(store_reader_begin(st, &a->r), STORE_OK);
    if (query_selector_parse(selector, &a->sel, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(query_resolve(a->r, &a->sel, from, until, &a->set, err, sizeof err), 0);
    assert_int_equal(query_merge(a->r, &a->set, from, until, &a->t, err, sizeof err), 0);
}

static void done(answer *a)
{
    query_tree_free(&a->t);
    query_series_set_free(&a->set);
    query_selector_free(&a->sel);
    store_reader_end(a->r);
}

static int count_block(const store_block *b, void *ctx)
{
    (void)b;
    (*(int *)ctx)++;
    return 0;
}

static void test_rate_weighting_merges_in_nanoseconds(void **state)
{
    (void)state;
    answer a;
    ask(&a, "api{}", 0, 100000);
    assert_string_equal(a.set.type, "cpu");
    assert_int_equal(a.set.n_other_types, 1);
    assert_string_equal(a.set.other_types[0], "alloc_space");
    assert_string_equal(a.t.unit, "nanoseconds");
    assert_int_equal(a.t.grand_total, 300000000);
    assert_int_equal(a.t.samples, 20);
    assert_int_equal(a.t.profiles, 2);
    assert_int_equal(a.t.series, 2);
    size_t len;
    char *folded = query_tree_folded(a.r, &a.t, &len);
    assert_string_equal(folded, "main;a 100000000\nmain;b 200000000\n");
    free(folded);
    done(&a);
}

/* query_side (query/side.c): a selector over a range, resolved and
 * merged, answers what query_resolve and query_merge answer; with a unit,
 * what query_merge_in_unit does; freed at any step it reached (a side
 * resolved only, or only given its selector: ASan's run finds a leak). */
static void test_side_resolves_and_merges(void **state)
{
    (void)state;
    char err[256];
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    query_selector sel;
    assert_int_equal(query_selector_parse("db{}", &sel, err, sizeof err), 0);
    query_side s;
    query_side_init(&s, &sel, 0, 100000);
    assert_int_equal(sel.n_matchers, 0); /* taken */
    assert_int_equal(query_side_resolve(&s, r, err, sizeof err), 0);
    assert_string_equal(s.set.type, "samples");
    assert_int_equal(query_side_merge(&s, r, NULL, err, sizeof err), 0);
    assert_string_equal(s.tree.unit, "samples"); /* the majority unit, as query_merge */
    assert_int_equal(s.tree.grand_total, 3);
    assert_int_equal(s.tree.skipped_profiles, 1);
    query_side_free(&s);
    assert_int_equal(s.have_tree + s.have_set + s.have_sel, 0);
    /* in a unit: only its profiles */
    assert_int_equal(query_selector_parse("db{}", &sel, err, sizeof err), 0);
    query_side_init(&s, &sel, 0, 100000);
    assert_int_equal(query_side_resolve(&s, r, err, sizeof err), 0);
    assert_int_equal(query_side_merge(&s, r, "nanoseconds", err, sizeof err), 0);
    assert_string_equal(s.tree.unit, "nanoseconds");
    assert_int_equal(s.tree.grand_total, 300000000);
    query_side_free(&s);
    /* freed after resolving only, and after init only */
    assert_int_equal(query_selector_parse("api{}", &sel, err, sizeof err), 0);
    query_side_init(&s, &sel, 0, 100000);
    assert_int_equal(query_side_resolve(&s, r, err, sizeof err), 0);
    assert_int_equal(s.set.n_series, 2);
    query_side_free(&s);
    assert_int_equal(query_selector_parse("api{instance=\"i-1\"}", &sel, err, sizeof err), 0);
    query_side_init(&s, &sel, 0, 100000);
    query_side_free(&s);
    store_reader_end(r);
}

static void test_type_choice(void **state)
{
    (void)state;
    answer a;
    ask(&a, "api{type=\"alloc_space\"}", 0, 100000);
    assert_string_equal(a.set.type, "alloc_space");
    assert_string_equal(a.t.unit, "bytes");
    assert_int_equal(a.t.grand_total, 4096);
    done(&a);
    /* No cpu among db's series: samples is next. */
    ask(&a, "db{}", 0, 100000);
    assert_string_equal(a.set.type, "samples");
    done(&a);
    /* {} across services: cpu wins, the others are listed sorted. */
    ask(&a, "{}", 0, 100000);
    assert_string_equal(a.set.type, "cpu");
    assert_int_equal(a.set.n_other_types, 2);
    assert_string_equal(a.set.other_types[0], "alloc_space");
    assert_string_equal(a.set.other_types[1], "samples");
    done(&a);
    /* Only series with profiles in range count toward the choice. */
    ask(&a, "api{}", 5000, 6000);
    assert_int_equal(a.set.n_series, 0);
    assert_int_equal(a.t.grand_total, 0);
    done(&a);
}

static void test_majority_unit_wins(void **state)
{
    (void)state;
    answer a;
    ask(&a, "db{}", 0, 100000);
    assert_string_equal(a.t.unit, "samples"); /* two profiles without rate, one with */
    assert_int_equal(a.t.grand_total, 3);
    assert_int_equal(a.t.skipped_profiles, 1);
    assert_int_equal(a.t.n_other_units, 1);
    assert_string_equal(a.t.other_units[0], "nanoseconds");
    done(&a);
    /* A range holding only the rated profile answers nanoseconds. */
    ask(&a, "db{}", 3000, 4000);
    assert_string_equal(a.t.unit, "nanoseconds");
    assert_int_equal(a.t.grand_total, 300000000);
    done(&a);
}

static void test_window_start_decides_membership(void **state)
{
    (void)state;
    answer a;
    ask(&a, "api{}", 1000, 2000); /* [1000, 2000): i-1 only */
    assert_int_equal(a.t.grand_total, 100000000);
    done(&a);
    ask(&a, "api{instance=~\"i-.*\", instance!=\"i-1\"}", 0, 100000);
    assert_int_equal(a.t.grand_total, 200000000);
    done(&a);
}

static json_t *child(json_t *node, size_t i)
{
    return json_array_get(json_object_get(node, "children"), i);
}

static void test_tree_json_order_and_truncation(void **state)
{
    (void)state;
    answer a;
    ask(&a, "web{}", 0, 100000);
    uint64_t tn, tt;
    json_t *root = query_tree_json(a.r, &a.t, 0, &tn, &tt);
    assert_int_equal(tn, 0);
    assert_int_equal(json_integer_value(json_object_get(root, "total")), 16);
    json_t *h = child(root, 0), *k = child(root, 1);
    assert_string_equal(json_string_value(json_object_get(h, "name")), "h");
    assert_int_equal(json_integer_value(json_object_get(h, "total")), 15);
    assert_string_equal(json_string_value(json_object_get(k, "name")), "k");
    json_t *x = child(h, 0), *w = child(h, 1);
    assert_string_equal(json_string_value(json_object_get(x, "name")), "x");
    assert_int_equal(json_integer_value(json_object_get(x, "self")), 2);
    assert_int_equal(json_integer_value(json_object_get(x, "total")), 10);
    assert_int_equal(json_integer_value(json_object_get(w, "total")), 5); /* 4 + 1 merged */
    assert_string_equal(json_string_value(json_object_get(child(x, 0), "name")), "y");
    json_decref(root);

    /* max_nodes 4 keeps h (15), x (10), y (5), w (5): totals unchanged;
     * z and k are left out with their self values 3 + 1. */
    root = query_tree_json(a.r, &a.t, 4, &tn, &tt);
    assert_int_equal(tn, 2);
    assert_int_equal(tt, 4);
    assert_int_equal(json_array_size(json_object_get(root, "children")), 1);
    h = child(root, 0);
    assert_int_equal(json_integer_value(json_object_get(h, "total")), 15);
    x = child(h, 0);
    assert_int_equal(json_integer_value(json_object_get(x, "total")), 10);
    assert_int_equal(json_integer_value(json_object_get(x, "self")), 2);
    assert_int_equal(json_array_size(json_object_get(x, "children")), 1);
    assert_string_equal(json_string_value(json_object_get(child(x, 0), "name")), "y");
    assert_string_equal(json_string_value(json_object_get(child(h, 1), "name")), "w");
    json_decref(root);
    done(&a);
}

static void test_equal_totals_sort_by_name(void **state)
{
    (void)state;
    put("ties", "cpu", "t-1", 1000, 0, "samples", "r;beta 2\nr;alpha 2\nr;gamma 3\n");
    answer a;
    ask(&a, "ties{}", 0, 100000);
    uint64_t tn, tt;
    json_t *root = query_tree_json(a.r, &a.t, 0, &tn, &tt);
    json_t *r = child(root, 0);
    assert_string_equal(json_string_value(json_object_get(child(r, 0), "name")), "gamma");
    assert_string_equal(json_string_value(json_object_get(child(r, 1), "name")), "alpha");
    assert_string_equal(json_string_value(json_object_get(child(r, 2), "name")), "beta");
    json_decref(root);
    done(&a);
}

/* o's compact JSON is want; frees o. */
static void expect_json(json_t *o, const char *want)
{
    char *text = json_dumps(o, JSON_COMPACT);
    assert_string_equal(text, want);
    free(text);
    json_decref(o);
}

static void test_listings(void **state)
{
    (void)state;
    store_reader *r;
    query_selector sel;
    char err[128];
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    assert_int_equal(query_selector_parse("{service=~\"api|web\"}", &sel, err, sizeof err), 0);
    uint32_t *ids;
    size_t n;
    assert_int_equal(query_match(r, &sel, 0, 100000, &ids, &n), 0);
    assert_int_equal(n, 4); /* api cpu i-1, api cpu i-2, api alloc i-1, web cpu w-1 */
    query_label_list names;
    assert_int_equal(query_label_names(r, ids, n, NULL, 0, &names), 0);
    expect_json(query_label_list_json(&names), "[{\"name\":\"instance\",\"values\":3},"
                "{\"name\":\"service\",\"values\":2},{\"name\":\"type\",\"values\":2}]");
    assert_int_equal(names.cut, 0);
    query_label_list_free(&names);
    /* a limit: the first in order, and whether some were left out */
    assert_int_equal(query_label_names(r, ids, n, NULL, 2, &names), 0);
    expect_json(query_label_list_json(&names), "[{\"name\":\"instance\",\"values\":3},{\"name\":\"service\",\"values\":2}]");
    assert_int_equal(names.cut, 1);
    query_label_list_free(&names);
    assert_int_equal(query_label_names(r, ids, n, "instance", 2, &names), 0);
    assert_int_equal(names.n, 2);
    assert_string_equal(names.items[0].name, "service");
    assert_string_equal(names.items[1].name, "type");
    assert_int_equal(names.cut, 0); /* the hidden name is no item */
    query_label_list_free(&names);
    query_value_list values;
    assert_int_equal(query_label_values(r, ids, n, "instance", 3, &values), 0);
    expect_json(query_value_list_json(&values), "[\"i-1\",\"i-2\",\"w-1\"]");
    assert_int_equal(values.cut, 0);
    query_value_list_free(&values);
    assert_int_equal(query_label_values(r, ids, n, "instance", 1, &values), 0);
    assert_int_equal(values.n, 1);
    assert_string_equal(values.items[0], "i-1");
    assert_int_equal(values.cut, 1);
    query_value_list_free(&values);
    /* a name no series has: nothing */
    assert_int_equal(query_label_values(r, ids, n, "zone", 0, &values), 0);
    assert_int_equal(values.n, 0);
    query_value_list_free(&values);
    /* the series listing leaves out the name it hides */
    query_series_set set = { .series = ids, .n_series = n };
    query_series_list l;
    assert_int_equal(query_series_stats(r, &set, 0, 100000, 0, &l, err, sizeof err), 0);
    json_t *o = query_series_json(r, &l, "instance");
    json_t *first = json_object_get(json_array_get(json_object_get(o, "series"), 0), "labels");
    assert_null(json_object_get(first, "instance"));
    assert_non_null(json_object_get(first, "service"));
    json_decref(o);
    query_series_list_free(&l);
    free(ids);
    query_selector_free(&sel);
    store_reader_end(r);
}

/* A merged tree as sorted "path self total" lines: node ids are a
 * reader's own, so trees of two readers compare by path. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* /api/v1/series's answer over the set: stats, then their JSON (NULL
 * when the stats failed). */
static json_t *series_json(store_reader *r, const query_series_set *set, int64_t from, int64_t until)
{
    query_series_list l;
    char err[256];
    if (query_series_stats(r, set, from, until, 0, &l, err, sizeof err)) return NULL;
    json_t *o = query_series_json(r, &l, NULL);
    query_series_list_free(&l);
    return o;
}

static char *tree_text(store_reader *r, const query_tree *t)
{
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    char **lines = malloc(((size_t)t->n_nodes + 1) * sizeof *lines);
    size_t n = 0;
    assert_non_null(out);
    assert_non_null(lines);
    for (uint32_t id = 1; id < t->n_nodes; id++) {
        if (!((t->touched[id >> 6] >> (id & 63)) & 1)) continue;
        char path[4096] = "";
        uint32_t chain[256], d = 0;
        for (uint32_t x = id; x && d < 256; x = store_node_parent(r, x)) chain[d++] = x;
        size_t pl = 0;
        while (d--) pl += (size_t)snprintf(path + pl, sizeof path - pl, "%s%s", store_string(r, store_node_func(r, chain[d]), NULL), d ? ";" : "");
        char line[4200];
        snprintf(line, sizeof line, "%s %llu %llu\n", path, (unsigned long long)t->self[id], (unsigned long long)t->total[id]);
        lines[n++] = strdup(line);
    }
    qsort(lines, n, sizeof *lines, cmp_str);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(lines[i]);
        if (len + l + 1 > cap) out = realloc(out, cap = 2 * (len + l + 1));
        memcpy(out + len, lines[i], l + 1);
        len += l;
        free(lines[i]);
    }
    free(lines);
    return out;
}

/* Merges every selector over every range with rollups and without; the
 * answers must be the same. */
static void compare_rollups_and_raw_sels(int64_t ranges[][2], int n_ranges, const char *const *sels, int n_sels)
{
    for (int q = 0; q < n_ranges; q++) {
        for (int k = 0; k < n_sels; k++) {
            answer on, off;
            ask(&on, sels[k], ranges[q][0], ranges[q][1]);
            store_reader *r;
            query_selector sel;
            query_series_set set;
            char err[128];
            assert_int_equal(store_reader_begin(st, &r), STORE_OK);
            store_reader_use_rollups(r, 0);
            assert_int_equal(query_selector_parse(sels[k], &sel, err, sizeof err), 0);
            assert_int_equal(query_resolve(r, &sel, ranges[q][0], ranges[q][1], &set, err, sizeof err), 0);
            assert_int_equal(query_merge(r, &set, ranges[q][0], ranges[q][1], &off.t, err, sizeof err), 0);
            assert_string_equal(on.t.unit, off.t.unit);
            assert_int_equal(on.t.grand_total, off.t.grand_total);
            assert_int_equal(on.t.samples, off.t.samples);
            assert_int_equal(on.t.samples_unknown, off.t.samples_unknown);
            assert_int_equal(on.t.gauge, off.t.gauge);
            assert_int_equal(on.t.divisor, off.t.divisor);
            assert_int_equal(on.t.profiles, off.t.profiles);
            assert_int_equal(on.t.skipped_profiles, off.t.skipped_profiles);
            assert_int_equal(on.t.series, off.t.series);
            char *text_on = tree_text(on.r, &on.t), *text_off = tree_text(r, &off.t);
            assert_string_equal(text_on, text_off);
            free(text_on);
            free(text_off);
            /* The timeline too, at steps finer and coarser than buckets. */
            const int64_t steps[] = { 7000, 90000, 3600000 };
            for (int si = 0; si < 3; si++) {
                query_timeline_result t_on, t_off;
                assert_int_equal(query_timeline(on.r, &on.set, ranges[q][0], ranges[q][1], steps[si], &t_on), 0);
                assert_int_equal(query_timeline(r, &set, ranges[q][0], ranges[q][1], steps[si], &t_off), 0);
                assert_string_equal(t_on.unit, t_off.unit);
                assert_int_equal(t_on.gauge, t_off.gauge);
                assert_int_equal(t_on.n, t_off.n);
                for (size_t k = 0; k < t_on.n; k++) {
                    assert_int_equal(t_on.points[k].t_ms, ranges[q][0] + (int64_t)k * steps[si]);
                    assert_int_equal(t_on.points[k].t_ms, t_off.points[k].t_ms);
                    assert_int_equal(t_on.points[k].sum, t_off.points[k].sum);
                    assert_true(t_on.points[k].gauge == t_off.points[k].gauge);
                }
                query_timeline_free(&t_on);
                query_timeline_free(&t_off);
            }
            query_tree_free(&off.t);
            query_series_set_free(&set);
            query_selector_free(&sel);
            store_reader_end(r);
            done(&on);
        }
    }
}

static void compare_rollups_and_raw(int64_t ranges[][2], int n_ranges)
{
    const char *sels[] = { "rolled{}", "rolled{type=\"alloc\"}", "rolled{instance=\"r1\"}", "rolled{type=\"heap\"}" };
    compare_rollups_and_raw_sels(ranges, n_ranges, sels, 4);
}

static int max_profiles(const store_block *b, void *ctx)
{
    uint32_t *m = ctx;
    if (b->n_profiles > *m) *m = b->n_profiles;
    return 0;
}

/* Rollups change how a merge reads, never what it answers: random profiles
 * over three hours (three rates, two units, three series), merged over
 * random ranges and over exact bucket edges, with rollups and without, in
 * every state of compaction: buckets not built yet, all built, late data
 * added into built buckets (and into buckets not built), built again. */
static void test_rollups_answer_like_raw(void **state)
{
    (void)state;
    const int64_t base = 1795200000000LL; /* a whole hour */
    const double rates[] = { 0, 99, 49 };
    const char *stacks[] = { "r;a 1\n", "r;a;b 2\nr;c 1\n", "r;d;e;f 5\nr;a 3\n", "q;x 7\n" };
    unsigned seed = 12345;
    int64_t ranges[40][2] = {
        { base, base + 3 * 3600000 }, { base + 1, base + 3 * 3600000 - 1 }, { base + 60000, base + 7200000 },
        { base - 3600000, base + 4 * 3600000 }, { base + 3599999, base + 3600001 }, { base + 30000, base + 90000 },
    };
    for (int i = 6; i < 40; i++) {
        seed = seed * 1103515245 + 12345;
        int64_t a = base + (int64_t)(seed % (3 * 3600)) * 1000 - 600000;
        seed = seed * 1103515245 + 12345;
        ranges[i][0] = a;
        ranges[i][1] = a + 1 + (int64_t)(seed % (2 * 3600)) * 1000;
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 300; i++) {
            seed = seed * 1103515245 + 12345;
            /* round 0 fills the first 90 minutes only: in round 1, built
             * and unbuilt buckets sit side by side in the same ranges */
            int64_t at = base + (int64_t)(seed % (round ? 3 * 3600 : 5400)) * 1000 + (seed >> 20) % 1000;
            char inst[8];
            snprintf(inst, sizeof inst, "r%u", (seed >> 8) % 3);
            if ((seed >> 28) % 4 == 0) /* gauges: snapshots in bytes, samples unknown */
                put_kind("rolled", "heap", inst, at, 0, "bytes", stacks[(seed >> 24) % 4], 1, STORE_SAMPLES_UNKNOWN);
            else
                put("rolled", (seed >> 12) % 5 ? "cpu" : "alloc", inst, at, rates[(seed >> 4) % 3],
                    (seed >> 16) % 7 ? "samples" : "bytes", stacks[(seed >> 24) % 4]);
        }
        compare_rollups_and_raw(ranges, 40); /* late data, buckets built or not */
        uint64_t built = 0;
        assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
        if (round == 0) assert_true(built > 0);
        compare_rollups_and_raw(ranges, 40);
    }
    /* The built rollups are what the planner reads: an hour-long scan of a
     * series returns a pre-merged block. */
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    uint32_t most = 0;
    for (uint32_t sid = 1; sid <= store_series_max(r); sid++)
        store_blocks_scan_merged(r, sid, base, base + 3600000, max_profiles, &most);
    assert_true(most > 1);
    store_reader_end(r);
    uint64_t again = 1;
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &again), STORE_OK);
    assert_int_equal(again, 0); /* nothing left pending */
}

/* ---- segments: every answer the same, packed or raw ---- */

typedef struct { store_reader *r; char *out; size_t len, cap; int in_seg; } dump_ctx;

static void dump_add(dump_ctx *d, const char *s)
{
    size_t l = strlen(s);
    if (d->len + l + 1 > d->cap) {
        d->cap = 2 * (d->len + l + 1);
        d->out = realloc(d->out, d->cap);
        assert_non_null(d->out);
    }
    memcpy(d->out + d->len, s, l + 1);
    d->len += l;
}

static int dump_block(const store_block *b, void *ctx)
{
    dump_ctx *d = ctx;
    char line[512];
    snprintf(line, sizeof line, "profile %u [%lld,%lld) %s rate %g samples %d/%llu gauge %d counts %llu pairs %u n %u:",
             b->series, (long long)b->from_ms, (long long)b->until_ms, b->unit, b->rate, b->samples_known,
             (unsigned long long)b->samples, b->gauge, (unsigned long long)b->counts, b->n_pairs, b->n_profiles);
    dump_add(d, line);
    d->in_seg += seg_value_in_segment(b->data, b->data_len);
    const uint32_t *nodes;
    const uint64_t *counts;
    uint32_t n;
    assert_int_equal(store_block_pairs(d->r, b, &nodes, &counts, &n), STORE_OK);
    assert_int_equal(n, b->n_pairs);
    for (uint32_t i = 0; i < n; i++) {
        char path[1024] = "";
        size_t pl = 0;
        uint32_t chain[64], k = 0;
        for (uint32_t x = nodes[i]; x && k < 64; x = store_node_parent(d->r, x)) chain[k++] = x;
        while (k--) pl += (size_t)snprintf(path + pl, sizeof path - pl, "%s;", store_string(d->r, store_node_func(d->r, chain[k]), NULL));
        snprintf(line, sizeof line, " %s=%llu", path, (unsigned long long)counts[i]);
        dump_add(d, line);
    }
    dump_add(d, "\n");
    return 0;
}

/* Everything a range answers, per selector, as text: the merged tree and
 * totals (rollups on and off must agree: compare_rollups_and_raw), the
 * timeline at three steps, the series listing, and every profile one by
 * one (window, header, pairs), with latest/earliest and has-blocks. */
static char *dump_range(const char *selector, int64_t from, int64_t until, int *in_seg)
{
    answer a;
    ask(&a, selector, from, until);
    dump_ctx d = { .r = a.r };
    char line[512];
    snprintf(line, sizeof line, "total %llu samples %llu unknown %llu profiles %llu series %llu divisor %llu\n",
             (unsigned long long)a.t.grand_total, (unsigned long long)a.t.samples,
             (unsigned long long)a.t.samples_unknown, (unsigned long long)a.t.profiles,
             (unsigned long long)a.t.series, (unsigned long long)a.t.divisor);
    dump_add(&d, line);
    char *tree = tree_text(a.r, &a.t);
    dump_add(&d, tree);
    free(tree);
    const int64_t steps[] = { 7000, 90000, 3600000 };
    for (int si = 0; si < 3; si++) {
        query_timeline_result tl;
        json_t *pts = NULL;
        if (!query_timeline(a.r, &a.set, from, until, steps[si], &tl)) {
            pts = query_timeline_json(&tl);
            dump_add(&d, tl.unit);
            query_timeline_free(&tl);
        }
        char *txt = pts ? json_dumps(pts, JSON_SORT_KEYS) : strdup("null");
        dump_add(&d, txt);
        free(txt);
        json_decref(pts);
    }
    json_t *ls = series_json(a.r, &a.set, from, until);
    char *txt = ls ? json_dumps(ls, JSON_SORT_KEYS) : strdup("null");
    dump_add(&d, txt);
    free(txt);
    json_decref(ls);
    for (size_t i = 0; i < a.set.n_series; i++) {
        uint32_t sid = a.set.series[i];
        store_blocks_scan(a.r, sid, from, until, dump_block, &d);
        int64_t f = 0, u = 0;
        int has = store_series_last(a.r, sid, from, &f, &u);
        snprintf(line, sizeof line, "last %d %lld %lld", has, (long long)f, (long long)u);
        dump_add(&d, line);
        f = u = 0;
        has = store_series_first(a.r, sid, until, &f, &u);
        snprintf(line, sizeof line, " first %d %lld %lld has %d\n", has, (long long)f, (long long)u,
                 store_series_has_blocks(a.r, sid, from, until));
        dump_add(&d, line);
    }
    done(&a);
    if (in_seg) *in_seg += d.in_seg;
    return d.out ? d.out : strdup("");
}

#define SEG_SELS 4
#define SEG_RANGES 24
static const char *seg_sels[SEG_SELS] = { "packed{}", "packed{type=\"alloc\"}", "packed{instance=\"p1\"}",
                                          "packed{type=\"heap\"}" };

static void seg_dump_all(char **out, int64_t ranges[][2], int *in_seg)
{
    for (int q = 0; q < SEG_RANGES; q++)
        for (int k = 0; k < SEG_SELS; k++) out[q * SEG_SELS + k] = dump_range(seg_sels[k], ranges[q][0], ranges[q][1], in_seg);
}

static void seg_assert_same(char **a, char **b)
{
    for (int i = 0; i < SEG_RANGES * SEG_SELS; i++) {
        assert_string_equal(a[i], b[i]);
        free(b[i]);
    }
}

static void put_random(unsigned *seed, int64_t base, int64_t span_s, int n)
{
    const double rates[] = { 0, 99, 49 };
    const char *stacks[] = { "r;a 1\n", "r;a;b 2\nr;c 1\n", "r;d;e;f 5\nr;a 3\n", "q;x 7\n", "r;a;b 1\nq;y 2\n" };
    for (int i = 0; i < n; i++) {
        *seed = *seed * 1103515245 + 12345;
        unsigned s = *seed;
        /* whole 10 s windows most often, so that starts repeat (seq > 0) */
        int64_t at = base + (int64_t)(s % (unsigned)span_s) / 10 * 10000 + ((s >> 22) % 4 ? 0 : (s >> 20) % 1000);
        char inst[8];
        snprintf(inst, sizeof inst, "p%u", (s >> 8) % 3);
        if ((s >> 28) % 4 == 0)
            put_kind("packed", "heap", inst, at, 0, "bytes", stacks[(s >> 24) % 5], 1, STORE_SAMPLES_UNKNOWN);
        else
            put("packed", (s >> 12) % 5 ? "cpu" : "alloc", inst, at, rates[(s >> 4) % 3],
                (s >> 16) % 7 ? "samples" : "bytes", stacks[(s >> 24) % 5]);
    }
}

/* Segments change where profiles are kept, never what any answer says:
 * random profiles over two hours, dated where the background compaction
 * never reaches (2100), so the first answers are from raw blocks alone;
 * then compacted (rollups built, buckets packed into segments), then late
 * data into packed buckets (raw blocks beside segments, some with the
 * starts of packed profiles), then packed again.  Every answer of every
 * state is the same text as the raw one's, rollups on and off. */
static void test_segments_answer_like_raw(void **state)
{
    (void)state;
    const int64_t base = INT64_C(4102444800000); /* 2100-01-01T00:00:00Z, a whole hour */
    unsigned seed = 777;
    int64_t ranges[SEG_RANGES][2] = {
        { base, base + 2 * 3600000 }, { base + 1, base + 2 * 3600000 - 1 }, { base + 600000, base + 1200000 },
        { base - 3600000, base + 3 * 3600000 }, { base + 599999, base + 600001 }, { base + 30000, base + 90000 },
    };
    for (int i = 6; i < SEG_RANGES; i++) {
        seed = seed * 1103515245 + 12345;
        int64_t a = base + (int64_t)(seed % (2 * 3600)) * 1000 - 300000;
        seed = seed * 1103515245 + 12345;
        ranges[i][0] = a;
        ranges[i][1] = a + 1 + (int64_t)(seed % 3600) * 1000;
    }
    char *raw[SEG_RANGES * SEG_SELS], *now[SEG_RANGES * SEG_SELS];
    put_random(&seed, base, 2 * 3600, 240);
    int in_seg = 0;
    seg_dump_all(raw, ranges, &in_seg);
    assert_int_equal(in_seg, 0);
    compare_rollups_and_raw_sels(ranges, SEG_RANGES, seg_sels, SEG_SELS);
    uint64_t built = 0;
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
    assert_true(built > 0);
    seg_dump_all(now, ranges, &in_seg);
    assert_true(in_seg > 0); /* the profiles are read from segments now */
    seg_assert_same(raw, now);
    compare_rollups_and_raw_sels(ranges, SEG_RANGES, seg_sels, SEG_SELS);
    /* late data: the reference is raw again, from a second store? No: the
     * answers before packing again (raw blocks beside segments) are the
     * reference of the answers after it. */
    put_random(&seed, base, 2 * 3600, 80);
    for (int i = 0; i < SEG_RANGES * SEG_SELS; i++) free(raw[i]);
    in_seg = 0;
    seg_dump_all(raw, ranges, &in_seg);
    compare_rollups_and_raw_sels(ranges, SEG_RANGES, seg_sels, SEG_SELS);
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
    int in_seg2 = 0;
    seg_dump_all(now, ranges, &in_seg2);
    assert_true(in_seg2 > in_seg); /* the late profiles were packed too */
    seg_assert_same(raw, now);
    compare_rollups_and_raw_sels(ranges, SEG_RANGES, seg_sels, SEG_SELS);
    for (int i = 0; i < SEG_RANGES * SEG_SELS; i++) free(raw[i]);
    uint64_t again = 1;
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &again), STORE_OK);
    assert_int_equal(again, 0);
}

/* A profile that arrives for a bucket already packed is counted once:
 * before the bucket is packed again (a raw block beside the segment) and
 * after (in the segment), merged with rollups and without, listed, and
 * counted by retention when the partition goes. */
static void test_late_data_into_a_segment_counts_once(void **state)
{
    (void)state;
    const int64_t base = INT64_C(4102444800000);
    for (int i = 0; i < 10; i++) put("late", "cpu", "l-1", base + i * 10000, 0, "samples", "k;a 2\n");
    uint64_t built = 0;
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
    /* three late ones, two with the starts of packed profiles */
    put("late", "cpu", "l-1", base, 0, "samples", "k;a 2\n");
    put("late", "cpu", "l-1", base + 10000, 0, "samples", "k;b 2\n");
    put("late", "cpu", "l-1", base + 595000, 0, "samples", "k;a 2\n");
    for (int pass = 0; pass < 2; pass++) {
        for (int ro = 0; ro < 2; ro++) {
            answer a;
            ask(&a, "late{}", base, base + 3600000);
            if (!ro) {
                done(&a);
                store_reader *r;
                query_selector sel;
                char err[128];
                assert_int_equal(store_reader_begin(st, &r), STORE_OK);
                store_reader_use_rollups(r, 0);
                a.r = r;
                assert_int_equal(query_selector_parse("late{}", &sel, err, sizeof err), 0);
                a.sel = sel;
                assert_int_equal(query_resolve(r, &a.sel, base, base + 3600000, &a.set, err, sizeof err), 0);
                assert_int_equal(query_merge(r, &a.set, base, base + 3600000, &a.t, err, sizeof err), 0);
            }
            assert_int_equal(a.t.grand_total, 26);
            assert_int_equal(a.t.profiles, 13);
            int n = 0;
            store_blocks_scan(a.r, a.set.series[0], base, base + 3600000, count_block, &n);
            assert_int_equal(n, 13);
            int64_t f, u;
            assert_int_equal(store_series_last(a.r, a.set.series[0], base, &f, &u), 1);
            assert_int_equal(f, base + 595000);
            json_t *ls = series_json(a.r, &a.set, base, base + 3600000);
            assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(ls, "series"), 0),
                                                                "profiles")), 13);
            json_decref(ls);
            done(&a);
        }
        /* pass 1: packed again, the raw blocks gone into the segment */
        assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
        assert_true(built > 0 || pass == 1);
    }
    /* deleting the series counts its 13 profiles, wherever they were */
    answer a;
    ask(&a, "late{}", base, base + 3600000);
    uint32_t sid = a.set.series[0];
    done(&a);
    uint64_t deleted = 0;
    assert_int_equal(store_delete_series(st, &sid, 1, &deleted), STORE_OK);
    assert_int_equal(deleted, 13);
    ask(&a, "late{}", base, base + 3600000);
    assert_int_equal(a.t.profiles, 0);
    done(&a);
}

/* Gauges average over time per series, then add up across series: heap
 * snapshots of 10 and 20 (instance g1) and 3, 3, 6 (g2) are 15 + 4 = 19,
 * not 42; each value is exact (the divisor is lcm(2, 3) = 6).  Group-by,
 * the timeline and the samples say the same. */
static void test_gauges_average_over_time(void **state)
{
    (void)state;
    const int64_t h = 1795300000000LL - 1795300000000LL % 3600000;
    put_kind("gg", "inuse_space", "g1", h, 0, "bytes", "main;alloc 10\n", 1, STORE_SAMPLES_UNKNOWN);
    put_kind("gg", "inuse_space", "g1", h + 10000, 0, "bytes", "main;alloc 20\n", 1, STORE_SAMPLES_UNKNOWN);
    put_kind("gg", "inuse_space", "g2", h, 0, "bytes", "main;alloc 3\n", 1, STORE_SAMPLES_UNKNOWN);
    put_kind("gg", "inuse_space", "g2", h + 10000, 0, "bytes", "main;alloc 3\n", 1, STORE_SAMPLES_UNKNOWN);
    put_kind("gg", "inuse_space", "g2", h + 20000, 0, "bytes", "main;free 6\n", 1, STORE_SAMPLES_UNKNOWN);
    for (int compacted = 0; compacted < 2; compacted++) {
        answer a;
        ask(&a, "gg{}", h, h + 3600000);
        assert_true(a.t.gauge);
        assert_int_equal(a.t.divisor, 6);
        assert_true(query_value(&a.t, a.t.grand_total) == 19.0);
        assert_true(a.t.samples_unknown > 0);
        char *text = tree_text(a.r, &a.t);
        /* alloc: 15 + 2 = 17 (x6 = 102), free: 2 (x6 = 12) */
        assert_non_null(strstr(text, "alloc 102 102"));
        assert_non_null(strstr(text, "free 12 12"));
        free(text);
        uint64_t tn, tt;
        json_t *tj = query_tree_json(a.r, &a.t, 0, &tn, &tt);
        assert_true(json_real_value(json_object_get(tj, "total")) == 19.0);
        json_decref(tj);
        query_timeline_result tl;
        assert_int_equal(query_timeline(a.r, &a.set, h, h + 3600000, 3600000, &tl), 0);
        assert_int_equal(tl.n, 1);
        assert_true(tl.gauge);
        assert_true(query_point_value(&tl.points[0]) == 19.0);
        /* the encoder writes a gauge's value as a number, not an integer */
        json_t *pts = query_timeline_json(&tl);
        assert_true(json_real_value(json_array_get(json_array_get(pts, 0), 1)) == 19.0);
        json_decref(pts);
        query_timeline_free(&tl);
        /* one instance alone: its own average */
        done(&a);
        ask(&a, "gg{instance=\"g1\"}", h, h + 3600000);
        assert_true(query_value(&a.t, a.t.grand_total) == 15.0);
        size_t len;
        char *folded = query_tree_folded(a.r, &a.t, &len);
        assert_string_equal(folded, "main;alloc 15\n");
        free(folded);
        done(&a);
        uint64_t built = 0;
        assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
        if (!compacted) assert_true(built > 0); /* the second round reads the rollups */
    }
}

/* Frames with locations (storage/frame.h) merge by function unless the
 * reader keeps lines: in one partition (the reader's fast path, which the
 * first cut name must leave) and across two. */
static void test_located_frames_merge_by_function(void **state)
{
    (void)state;
#define US "\x1f"
    const int64_t d0 = 1795400000000LL - 1795400000000LL % 86400000, d1 = d0 + 86400000;
    put("loc", "cpu", "l1", d0, 0, "samples",
        "main;f" US "a.go" US "10" US US " 3\nmain;f" US "a.go" US "12" US "/bin/a" US "b1 4\nmain;g 1\n");
    put("loc", "cpu", "l1", d1, 0, "samples", "main;f" US "a.go" US "10" US US " 5\n");
    for (int lines = 0; lines < 2; lines++) {
        for (int both = 0; both < 2; both++) {
            answer a;
            char err[256];
            assert_int_equal(store_reader_begin(st, &a.r), STORE_OK);
            store_reader_lines(a.r, lines);
            int64_t until = both ? d1 + 3600000 : d0 + 3600000;
            if (query_selector_parse("loc{}", &a.sel, err, sizeof err)) fail_msg("%s", err);
            assert_int_equal(query_resolve(a.r, &a.sel, d0, until, &a.set, err, sizeof err), 0);
            assert_int_equal(query_merge(a.r, &a.set, d0, until, &a.t, err, sizeof err), 0);
            char *text = tree_text(a.r, &a.t);
            if (!lines)
                assert_string_equal(text, both ? "main 0 13\nmain;f 12 12\nmain;g 1 1\n" : "main 0 8\nmain;f 7 7\nmain;g 1 1\n");
            else
                assert_string_equal(text, both ? "main 0 13\nmain;f" US "a.go" US "10" US US " 8 8\nmain;f" US "a.go" US "12" US
                                                 "/bin/a" US "b1 4 4\nmain;g 1 1\n"
                                               : "main 0 8\nmain;f" US "a.go" US "10" US US " 3 3\nmain;f" US "a.go" US "12" US
                                                 "/bin/a" US "b1 4 4\nmain;g 1 1\n");
            free(text);
            done(&a);
        }
    }
#undef US
}

/* Sample labels (pseudo-frames FRAME_LABEL key=value at the root): the
 * reader skips them (one partition, where its maps are not kept, and two),
 * a matcher on a name no series carries keeps only the stacks it matches,
 * one reader merges with several filters in turn, and a kept key becomes
 * the root frame. */
static void test_sample_labels_filter_and_skip(void **state)
{
    (void)state;
#define SL "\x1f"
    const int64_t d0 = 1795500000000LL - 1795500000000LL % 86400000, d1 = d0 + 86400000;
    put("sl", "cpu", "s1", d0, 0, "samples",
        SL "span_id=a1;main;work 3\n" SL "endpoint=/x;" SL "span_id=b2;main;work 4\nmain;idle 2\n"
        SL "span_id=a1;main;idle;io 1\n");
    put("sl", "cpu", "s1", d1, 0, "samples", SL "span_id=a1;main;work 5\nmain;work 6\n");
    put("plain", "cpu", "p1", d0, 0, "samples", "main;work 7\nmain;idle 2\nmain;idle;io 1\n");
    put("plain", "cpu", "p1", d1, 0, "samples", "main;work 11\n");
    static const struct { const char *sel; int both; const char *want; uint64_t total; } cases[] = {
        { "sl{}", 0, "main 0 10\nmain;idle 2 3\nmain;idle;io 1 1\nmain;work 7 7\n", 10 },
        { "sl{}", 1, "main 0 21\nmain;idle 2 3\nmain;idle;io 1 1\nmain;work 18 18\n", 21 },
        { "sl{span_id=\"a1\"}", 0, "main 0 4\nmain;idle 0 1\nmain;idle;io 1 1\nmain;work 3 3\n", 4 },
        { "sl{span_id=\"a1\"}", 1, "main 0 9\nmain;idle 0 1\nmain;idle;io 1 1\nmain;work 8 8\n", 9 },
        { "sl{span_id!=\"a1\"}", 1, "main 0 12\nmain;idle 2 2\nmain;work 10 10\n", 12 },
        { "sl{endpoint=\"/x\",span_id=~\"b.\"}", 1, "main 0 4\nmain;work 4 4\n", 4 },
        { "sl{span_id=\"none\"}", 1, "", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        answer a;
        int64_t until = cases[i].both ? d1 + 3600000 : d0 + 3600000;
        ask(&a, cases[i].sel, d0, until);
        char *text = tree_text(a.r, &a.t);
        if (strcmp(text, cases[i].want)) fail_msg("%s (both %d): got\n%s", cases[i].sel, cases[i].both, text);
        assert_int_equal(a.t.grand_total, cases[i].total);
        assert_int_equal(a.t.series, 1);
        free(text);
        done(&a);
    }
    /* the default answer equals the same stacks without labels, node for node */
    for (int both = 0; both < 2; both++) {
        answer a, b;
        int64_t until = both ? d1 + 3600000 : d0 + 3600000;
        ask(&a, "sl{}", d0, until);
        ask(&b, "plain{}", d0, until);
        char *ta = tree_text(a.r, &a.t), *tb = tree_text(b.r, &b.t);
        assert_string_equal(ta, tb);
        assert_int_equal(a.t.samples, b.t.samples);
        assert_int_equal(a.t.samples_unknown, 0);
        free(ta);
        free(tb);
        done(&a);
        done(&b);
    }
    /* one reader, three filters in turn (compare's and diff's sides) */
    {
        store_reader *r;
        char err[256];
        assert_int_equal(store_reader_begin(st, &r), STORE_OK);
        static const char *const sels[] = { "sl{span_id=\"a1\"}", "sl{}", "sl{span_id=\"b2\"}", "sl{span_id=\"a1\"}" };
        static const uint64_t totals[] = { 9, 21, 4, 9 };
        for (int i = 0; i < 4; i++) {
            query_selector sel;
            query_series_set set;
            query_tree t;
            if (query_selector_parse(sels[i], &sel, err, sizeof err)) fail_msg("%s", err);
            assert_int_equal(query_resolve(r, &sel, d0, d1 + 3600000, &set, err, sizeof err), 0);
            assert_int_equal(query_merge(r, &set, d0, d1 + 3600000, &t, err, sizeof err), 0);
            assert_int_equal(t.grand_total, totals[i]);
            char *text = tree_text(r, &t);
            if (i == 2) assert_string_equal(text, "main 0 4\nmain;work 4 4\n");
            free(text);
            query_tree_free(&t);
            query_series_set_free(&set);
            query_selector_free(&sel);
        }
        store_reader_end(r);
    }
    /* a kept key: its label is the root frame; stacks without it stay as they are */
    {
        answer a;
        char err[256];
        assert_int_equal(store_reader_begin(st, &a.r), STORE_OK);
        store_reader_sample_root(a.r, "span_id");
        if (query_selector_parse("sl{}", &a.sel, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(query_resolve(a.r, &a.sel, d0, d1 + 3600000, &a.set, err, sizeof err), 0);
        assert_int_equal(query_merge(a.r, &a.set, d0, d1 + 3600000, &a.t, err, sizeof err), 0);
        char *text = tree_text(a.r, &a.t);
        assert_string_equal(text, "main 0 8\nmain;idle 2 2\nmain;work 6 6\nspan_id=a1 0 9\nspan_id=a1;main 0 9\n"
                                  "span_id=a1;main;idle 0 1\nspan_id=a1;main;idle;io 1 1\nspan_id=a1;main;work 8 8\n"
                                  "span_id=b2 0 4\nspan_id=b2;main 0 4\nspan_id=b2;main;work 4 4\n");
        free(text);
        /* split by the label and ranked across trees: by total, ties in tree order */
        const query_tree *trees[2] = { &a.t, &a.t };
        query_sample_ranking rk;
        assert_int_equal(query_sample_rank_trees(a.r, trees, 2, "span_id", &rk), 0);
        assert_int_equal(rk.n, 6);
        static const char *const want_values[] = { "a1", "a1", "", "", "b2", "b2" };
        static const uint64_t want_totals[] = { 9, 9, 8, 8, 4, 4 };
        for (size_t i = 0; i < 6; i++) {
            assert_string_equal(rk.rows[i].g->value, want_values[i]);
            assert_int_equal(rk.rows[i].g->figures.grand_total, want_totals[i]);
            assert_int_equal(rk.rows[i].tree, i % 2);
        }
        query_sample_ranking_free(&rk);
        done(&a);
    }
    /* listings: the series a selector on sample labels keeps, and the sample labels found */
    {
        store_reader *r;
        query_selector sel;
        query_series_set set;
        query_sample_labels sl = { 0 };
        char err[256];
        assert_int_equal(store_reader_begin(st, &r), STORE_OK);
        if (query_selector_parse("{service=~\"sl|plain\",span_id=\"b2\"}", &sel, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(query_sample_resolve(r, &sel, d0, d1 + 3600000, NULL, &sl, &set, err, sizeof err), 0);
        assert_int_equal(set.n_series, 1); /* plain holds no stack of span b2 */
        assert_string_equal(store_series_label(r, set.series[0], "service"), "sl");
        query_label_list names;
        assert_int_equal(query_sample_names(&sl, 0, &names), 0);
        /* the kept stack's labels: endpoint and span_id, one value each */
        assert_int_equal(names.n, 2);
        assert_string_equal(names.items[0].name, "endpoint");
        assert_int_equal(names.items[1].values, 1);
        query_label_list_free(&names);
        query_series_set_free(&set);
        query_sample_labels_free(&sl);
        query_selector_free(&sel);
        /* every stack of sl: span_id a1 and b2 */
        query_sample_labels all = { 0 };
        if (query_selector_parse("sl{}", &sel, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(query_sample_resolve(r, &sel, d0, d1 + 3600000, "span_id", &all, &set, err, sizeof err), 0);
        query_value_list values;
        assert_int_equal(query_sample_values(&all, "span_id", 0, &values), 0);
        assert_int_equal(values.n, 2);
        assert_string_equal(values.items[0], "a1");
        assert_string_equal(values.items[1], "b2");
        query_value_list_free(&values);
        assert_int_equal(query_sample_values(&all, "span_id", 1, &values), 0);
        assert_int_equal(values.n, 1);
        assert_int_equal(values.cut, 1);
        query_value_list_free(&values);
        query_series_set_free(&set);
        query_sample_labels_free(&all);
        query_selector_free(&sel);
        store_reader_end(r);
    }
#undef SL
}

/* Values past 2^63 are refused, not wrapped: one profile of 2^62 merges,
 * two and a half of them (2^63 + 2^61) answer QUERY_ETOOBIG with a message
 * that says what to do (issue 12: totals went negative, then wrapped). */
static void test_totals_past_2_63_refused(void **state)
{
    (void)state;
    const int64_t h = 1795500000000LL;
    put("huge", "cpu", "h1", h, 0, "samples", "k 4611686018427387904\n");
    answer a;
    ask(&a, "huge{}", h, h + 3600000);
    assert_int_equal(a.t.grand_total, UINT64_C(4611686018427387904));
    done(&a);
    put("huge", "cpu", "h1", h + 10000, 0, "samples", "k 4611686018427387904\n");
    put("huge", "cpu", "h1", h + 20000, 0, "samples", "j 2305843009213693952\n");
    char err[256];
    assert_int_equal(store_reader_begin(st, &a.r), STORE_OK);
    if (query_selector_parse("huge{}", &a.sel, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(query_resolve(a.r, &a.sel, h, h + 3600000, &a.set, err, sizeof err), 0);
    assert_int_equal(query_merge(a.r, &a.set, h, h + 3600000, &a.t, err, sizeof err), QUERY_ETOOBIG);
    assert_non_null(strstr(err, "2^63"));
    assert_non_null(strstr(err, "narrow the range"));
    query_series_set_free(&a.set);
    query_selector_free(&a.sel);
    store_reader_end(a.r);
}

/* group_by is bounded before any group is made: more groups than allowed
 * answer QUERY_ETOOMANY with the count; answers that keep a tree a group
 * are also bounded by the memory of the range's call tree. */
static void test_groups_bounded(void **state)
{
    (void)state;
    const int64_t h = 1795600000000LL;
    put("many", "cpu", "m1", h, 0, "samples", "a;b 1\n");
    put("many", "cpu", "m2", h, 0, "samples", "a;c 1\n");
    put("many", "cpu", "m3", h, 0, "samples", "a;d 1\n");
    answer a;
    ask(&a, "many{}", h, h + 60000);
    char err[256];
    query_group_by by;
    assert_int_equal(query_group_by_parse("instance", &by, err, sizeof err), 0);
    query_group *g = NULL;
    size_t n = 0;
    assert_int_equal(query_groups_split(a.r, &a.set, &by, 2, &g, &n), QUERY_ETOOMANY);
    assert_null(g);
    assert_int_equal(n, 3);
    assert_int_equal(query_groups_split(a.r, &a.set, &by, 3, &g, &n), 0);
    assert_int_equal(n, 3);
    query_groups_free(g, n);
    /* the tree budget: none, room for everything, room for less than one */
    assert_int_equal(query_groups_limit(a.r, &a.set, h, h + 60000, 50, 0), 50);
    assert_int_equal(query_groups_limit(a.r, &a.set, h, h + 60000, 50, UINT64_C(1) << 40), 50);
    assert_int_equal(query_groups_limit(a.r, &a.set, h, h + 60000, 50, 1), 1);
    size_t some = query_groups_limit(a.r, &a.set, h, h + 60000, 1000000, 100000);
    assert_true(some > 1 && some < 1000000);
    assert_true(query_groups_limit(a.r, &a.set, h, h + 60000, 1000000, 200000) >= 2 * some - 1);
    query_group_by_free(&by);
    done(&a);
}

/* A reader past its deadline: merges, timelines and listings give up whole
 * (QUERY_ETIMEOUT or NULL), never a partial answer; without one they answer. */
static void test_deadline_gives_up_whole(void **state)
{
    (void)state;
    answer a;
    ask(&a, "api{}", 0, 100000);
    uint64_t total = a.t.grand_total;
    assert_true(total > 0);
    char err[256];
    query_tree t;
    store_reader_set_deadline(a.r, store_mono_ms() - 1);
    assert_true(store_reader_expired(a.r));
    assert_int_equal(query_merge(a.r, &a.set, 0, 100000, &t, err, sizeof err), QUERY_ETIMEOUT);
    assert_non_null(strstr(err, "--query-timeout"));
    query_timeline_result tl;
    assert_int_equal(query_timeline(a.r, &a.set, 0, 100000, 10000, &tl), -1);
    assert_null(tl.points);
    query_series_list sl;
    assert_int_equal(query_series_stats(a.r, &a.set, 0, 100000, 0, &sl, err, sizeof err), QUERY_ETIMEOUT);
    store_reader_set_deadline(a.r, 0);
    assert_false(store_reader_expired(a.r));
    assert_int_equal(query_merge(a.r, &a.set, 0, 100000, &t, err, sizeof err), 0);
    assert_int_equal(t.grand_total, total);
    query_tree_free(&t);
    assert_int_equal(query_timeline(a.r, &a.set, 0, 100000, 10000, &tl), 0);
    assert_int_equal(tl.n, 10);
    query_timeline_free(&tl);
    done(&a);
}

/* A merge split across threads answers exactly as on one: profiles on both
 * sides of a day (partition) boundary, three series, rates and units,
 * rollups on and off. */
static void test_parallel_merge_answers_the_same(void **state)
{
    (void)state;
    const int64_t midnight = 1795305600000LL; /* 2026-11-22T00:00:00Z */
    const char *stacks[] = { "p;a 1\np;a;b 2\n", "p;c;d 3\nq 1\n", "p;a;b;e 5\np;c 2\nr;s;t 1\n" };
    unsigned seed = 777;
    for (int i = 0; i < 300; i++) {
        seed = seed * 1103515245 + 12345;
        int64_t at = midnight - 3600000 + (int64_t)(seed % 7200) * 1000;
        char inst[8];
        snprintf(inst, sizeof inst, "p%u", (seed >> 8) % 3);
        put("par", "cpu", inst, at, (seed >> 12) % 2 ? 100 : 0, "samples", stacks[(seed >> 16) % 3]);
    }
    uint64_t built;
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
    const int64_t ranges[][2] = { { midnight - 3600000, midnight + 3600000 }, { midnight - 1234567, midnight + 765432 },
                                  { midnight - 600000, midnight }, { midnight, midnight + 1 } };
    const char *sels[] = { "par{}", "par{instance=\"p1\"}" };
    for (int ro = 0; ro < 2; ro++)
        for (size_t q = 0; q < sizeof ranges / sizeof *ranges; q++)
            for (int k = 0; k < 2; k++) {
                char *text[2];
                uint64_t totals[2], samples[2];
                for (int par = 0; par < 2; par++) {
                    query_merge_parallel(par ? 3 : 1, par ? 0 : UINT64_MAX);
                    store_reader *r;
                    query_selector sel;
                    query_series_set set;
                    query_tree t;
                    char err[128];
                    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
                    store_reader_use_rollups(r, ro);
                    assert_int_equal(query_selector_parse(sels[k], &sel, err, sizeof err), 0);
                    assert_int_equal(query_resolve(r, &sel, ranges[q][0], ranges[q][1], &set, err, sizeof err), 0);
                    assert_int_equal(query_merge(r, &set, ranges[q][0], ranges[q][1], &t, err, sizeof err), 0);
                    text[par] = tree_text(r, &t);
                    totals[par] = t.grand_total;
                    samples[par] = t.samples;
                    query_tree_free(&t);
                    query_series_set_free(&set);
                    query_selector_free(&sel);
                    store_reader_end(r);
                }
                assert_true(totals[0] > 0 || q == 3);
                assert_int_equal(totals[0], totals[1]);
                assert_int_equal(samples[0], samples[1]);
                assert_string_equal(text[0], text[1]);
                free(text[0]);
                free(text[1]);
            }
    query_merge_parallel(0, 1u << 20);
}

/* Deleting a series takes its rollups with it. */
static void test_delete_takes_rollups(void **state)
{
    (void)state;
    const int64_t base = 1795200000000LL;
    for (int i = 0; i < 30; i++) put("doomed", "cpu", "d-1", base + i * 10000, 0, "samples", "k 2\n");
    uint64_t built = 0;
    assert_int_equal(store_compact_run(st, INT64_C(1) << 50, &built), STORE_OK);
    answer a;
    ask(&a, "doomed{}", base, base + 3600000);
    /* its hour bucket is built (here, or already by the writer's own
     * background compaction): one pre-merged block holds all 30 */
    uint32_t most = 0;
    store_blocks_scan_merged(a.r, a.set.series[0], base - base % 3600000, base - base % 3600000 + 3600000,
                             max_profiles, &most);
    assert_int_equal(most, 30);
    assert_int_equal(a.t.grand_total, 60);
    uint32_t sid = a.set.series[0];
    done(&a);
    uint64_t deleted = 0;
    assert_int_equal(store_delete_series(st, &sid, 1, &deleted), STORE_OK);
    assert_int_equal(deleted, 30);
    ask(&a, "doomed{}", base, base + 3600000);
    assert_int_equal(a.t.grand_total, 0);
    assert_int_equal(a.t.profiles, 0);
    done(&a);
    /* Merged scans, rollup by rollup, find nothing either. */
    store_reader *r;
    assert_int_equal(store_reader_begin(st, &r), STORE_OK);
    int calls = 0;
    store_blocks_scan_merged(r, sid, INT64_MIN / 4, INT64_MAX / 4, count_block, &calls);
    store_blocks_scan_merged(r, sid, base, base + 3600000, count_block, &calls);
    assert_int_equal(calls, 0);
    store_reader_end(r);
}

/* ---- the analyses answer data (compare, stability, variance) ---------- */

#define NEAR(x, want) assert_true(fabs((x) - (want)) < 1e-9)

/* Left 30 a / 10 b, right 10 a / 30 b: shares .75/.25 and .25/.75. */
static void test_compare_answers_rows(void **state)
{
    (void)state;
    const int64_t t0 = 500000000;
    put("cmp", "cpu", "c-1", t0, 0, "samples", "m;a 30\nm;b 10\n");
    put("cmp", "cpu", "c-1", t0 + 60000, 0, "samples", "m;a 10\nm;b 30\n");
    answer L, R;
    ask(&L, "cmp{}", t0, t0 + 60000);
    ask(&R, "cmp{}", t0 + 60000, t0 + 120000);
    query_compare_result c;
    assert_int_equal(query_compare(L.r, &L.t, &R.t, 10, 0, &c), 0);
    assert_int_equal(c.n, 2);
    /* |delta| equal: by name */
    assert_string_equal(c.rows[0].name, "a");
    NEAR(c.rows[0].left_share, 0.75);
    NEAR(c.rows[0].right_share, 0.25);
    NEAR(c.rows[0].delta, -0.5);
    assert_string_equal(c.rows[1].name, "b");
    NEAR(c.rows[1].delta, 0.5);
    assert_int_equal(c.rows[0].significant, 1); /* 30 of 40 against 10 of 40 */
    NEAR(c.manhattan, 1.0);
    NEAR(c.jsd, 0.75 * log2(1.5) - 0.25);        /* against the mean (.5, .5) */
    assert_int_equal(c.left.f.total, 40);
    assert_int_equal(c.left.f.samples, 40);
    assert_int_equal(c.left.f.profiles, 1);
    assert_int_equal(c.left.f.divisor, 1);
    NEAR(c.left.entropy, -(0.75 * log2(0.75) + 0.25 * log2(0.25)));
    assert_string_equal(c.right.unit, "samples");
    json_t *j = query_compare_json(&c);
    assert_true(json_is_true(json_object_get(json_array_get(json_object_get(j, "functions"), 0), "significant")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "left"), "total")), 40);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "left"), "unit")), "samples");
    json_decref(j);
    query_compare_free(&c);
    /* limit keeps the first rows */
    assert_int_equal(query_compare(L.r, &L.t, &R.t, 10, 1, &c), 0);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.rows[0].name, "a");
    query_compare_free(&c);
    done(&L);
    done(&R);
    /* a side that does not know its samples: no test, null in JSON */
    put_kind("cmpu", "cpu", "u-1", t0, 0, "samples", "m;a 30\nm;b 10\n", 0, STORE_SAMPLES_UNKNOWN);
    ask(&L, "cmp{}", t0, t0 + 60000);
    ask(&R, "cmpu{}", t0, t0 + 60000);
    assert_int_equal(query_compare(L.r, &L.t, &R.t, 10, 0, &c), 0);
    assert_int_equal(c.rows[0].significant, -1);
    NEAR(c.manhattan, 0.0);
    assert_true(c.right.f.samples_unknown > 0);
    j = query_compare_json(&c);
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "functions"), 0), "significant")));
    assert_true(json_is_null(json_object_get(json_object_get(j, "right"), "samples")));
    json_decref(j);
    query_compare_free(&c);
    done(&L);
    done(&R);
}

/* Windows of 10 s: 30 a / 10 b, nothing, 10 a / 30 b. */
static void test_stability_answers_units(void **state)
{
    (void)state;
    const int64_t t0 = 600000000;
    put("stab", "cpu", "s-1", t0, 0, "samples", "m;a 30\nm;b 10\n");
    put("stab", "cpu", "s-1", t0 + 20000, 0, "samples", "m;a 10\nm;b 30\n");
    answer a;
    ask(&a, "stab{}", t0, t0 + 30000);
    query_stability_result s;
    assert_int_equal(query_stability_windows(a.r, &a.set, t0, t0 + 30000, 10000, 10, 0.2, 0.05, &s), 0);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.step_ms, 10000);
    assert_int_equal(s.units[1].from_ms, t0 + 10000);
    assert_int_equal(s.units[1].until_ms, t0 + 20000);
    assert_int_equal(s.units[0].f.total, 40);
    NEAR(s.units[0].entropy, -(0.75 * log2(0.75) + 0.25 * log2(0.25)));
    assert_true(isnan(s.units[0].manhattan)); /* nothing before it */
    assert_int_equal(s.units[1].f.profiles, 0);
    assert_true(isnan(s.units[1].entropy));
    NEAR(s.units[2].manhattan, 1.0);           /* against window 0, the previous non-empty one */
    assert_int_equal(s.summary.comparisons, 1);
    assert_int_equal(s.summary.stable, 0);
    NEAR(s.summary.manhattan_max, 1.0);
    json_t *j = query_stability_json(&s, NULL, NULL);
    json_t *w = json_object_get(j, "windows");
    assert_int_equal(json_array_size(w), 3);
    assert_true(json_is_null(json_object_get(json_array_get(w, 0), "manhattan")));
    assert_null(json_object_get(json_array_get(w, 0), "manhattan_z")); /* groups only */
    assert_true(json_is_false(json_object_get(json_object_get(j, "summary"), "stable")));
    json_decref(j);
    query_stability_free(&s);
    /* one window: no comparison, stable unknown */
    assert_int_equal(query_stability_windows(a.r, &a.set, t0, t0 + 10000, 10000, 10, 0.2, 0.05, &s), 0);
    assert_int_equal(s.summary.stable, -1);
    j = query_stability_json(&s, NULL, NULL);
    assert_true(json_is_null(json_object_get(json_object_get(j, "summary"), "stable")));
    json_decref(j);
    query_stability_free(&s);
    done(&a);

    /* groups: two instances like the whole, one far from it, ranked first */
    put("stabg", "cpu", "g-1", t0, 0, "samples", "m;a 300\nm;b 100\n");
    put("stabg", "cpu", "g-2", t0, 0, "samples", "m;a 300\nm;b 100\n");
    put("stabg", "cpu", "g-3", t0, 0, "samples", "m;b 40\n");
    ask(&a, "stabg{}", t0, t0 + 10000);
    query_group_by by;
    char err[128];
    assert_int_equal(query_group_by_parse("instance", &by, err, sizeof err), 0);
    query_group *g;
    size_t ng;
    assert_int_equal(query_groups_split(a.r, &a.set, &by, 0, &g, &ng), 0);
    assert_int_equal(ng, 3);
    assert_int_equal(query_stability_groups(a.r, g, ng, &a.t, t0, t0 + 10000, 10, 2, 1, &s), 0);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.units[0].group, 2);
    assert_string_equal(g[s.units[0].group].values[0], "g-3");
    assert_int_equal(s.units[0].f.total, 40);
    assert_true(s.units[0].manhattan_z > s.units[1].manhattan_z);
    assert_int_equal(s.summary.stable, 1); /* bounds 2 and 1: nothing exceeds them */
    j = query_stability_json(&s, &by, g);
    json_t *g0 = json_array_get(json_object_get(j, "groups"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(g0, "labels"), "instance")), "g-3");
    assert_non_null(json_object_get(g0, "manhattan_z"));
    assert_null(json_object_get(j, "step"));
    json_decref(j);
    query_stability_free(&s);
    query_groups_free(g, ng);
    query_group_by_free(&by);
    done(&a);
}

/* Totals 40 and 80 over two windows; b alone moves with them. */
static void test_variance_answers_rows(void **state)
{
    (void)state;
    const int64_t t0 = 700000000;
    put("vary", "cpu", "v-1", t0, 0, "samples", "m;a 30\nm;b 10\n");
    put("vary", "cpu", "v-1", t0 + 10000, 0, "samples", "m;a 30\nm;b 50\n");
    answer a;
    ask(&a, "vary{}", t0, t0 + 20000);
    query_variance_result v;
    assert_int_equal(query_variance_windows(a.r, &a.set, t0, t0 + 20000, 10000, 10, &v), 0);
    assert_int_equal(v.units, 2);
    assert_int_equal(v.step_ms, 10000);
    NEAR(v.mean, 60);
    NEAR(v.variance, 400);
    assert_int_equal(v.n, 3); /* m too: self 0 everywhere */
    assert_string_equal(v.rows[0].name, "b");
    NEAR(v.rows[0].contribution, 1.0);
    NEAR(v.rows[0].mean, 30);
    NEAR(v.rows[0].variance, 400);
    /* se^2 = sum T^2 p (1 - p) / n d^2 / (sum d^2)^2: (3000 + 7500) / 800^2 */
    NEAR(v.rows[0].contribution_se, sqrt(10500.0) / 800);
    assert_string_equal(v.rows[1].name, "a"); /* contributions equal: by mean */
    NEAR(v.rows[1].contribution, 0.0);
    assert_string_equal(v.rows[2].name, "m");
    json_t *j = query_variance_json(&v);
    assert_int_equal(json_integer_value(json_object_get(j, "step")), 10);
    assert_int_equal(json_array_size(json_object_get(j, "functions")), 3);
    json_decref(j);
    query_variance_free(&v);
    /* k keeps the largest */
    assert_int_equal(query_variance_windows(a.r, &a.set, t0, t0 + 20000, 10000, 1, &v), 0);
    assert_int_equal(v.n, 1);
    assert_string_equal(v.rows[0].name, "b");
    query_variance_free(&v);
    done(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_weighting_merges_in_nanoseconds),
        cmocka_unit_test(test_side_resolves_and_merges),
        cmocka_unit_test(test_type_choice),
        cmocka_unit_test(test_majority_unit_wins),
        cmocka_unit_test(test_window_start_decides_membership),
        cmocka_unit_test(test_tree_json_order_and_truncation),
        cmocka_unit_test(test_equal_totals_sort_by_name),
        cmocka_unit_test(test_listings),
        cmocka_unit_test(test_rollups_answer_like_raw),
        cmocka_unit_test(test_segments_answer_like_raw),
        cmocka_unit_test(test_late_data_into_a_segment_counts_once),
        cmocka_unit_test(test_delete_takes_rollups),
        cmocka_unit_test(test_gauges_average_over_time),
        cmocka_unit_test(test_located_frames_merge_by_function),
        cmocka_unit_test(test_sample_labels_filter_and_skip),
        cmocka_unit_test(test_totals_past_2_63_refused),
        cmocka_unit_test(test_groups_bounded),
        cmocka_unit_test(test_deadline_gives_up_whole),
        cmocka_unit_test(test_parallel_merge_answers_the_same),
        cmocka_unit_test(test_compare_answers_rows),
        cmocka_unit_test(test_stability_answers_units),
        cmocka_unit_test(test_variance_answers_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
