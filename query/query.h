/* query.h — the public face of query/: time expressions, label selectors,
 * merging stored profiles into one call tree, and the output encoders.
 *
 * query/ reads through storage's public API (store.h) and knows nothing of
 * HTTP.  Parsers answer -1 with a message that says where the input is
 * wrong; the server turns it into a 400 naming the parameter. */
#ifndef FLAMEDB_QUERY_H
#define FLAMEDB_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../storage/store.h"

/* ---- time expressions (timeexpr.c) ----------------------------------- */

/* Parses unix seconds ("1763719200", fractions allowed), RFC 3339
 * ("2026-11-21T10:00:00Z", "...+02:00", fractional seconds allowed), "now",
 * or "now-<N><unit>" with unit s, m, h, d or w.  now_ms is the current time;
 * the result is unix milliseconds. */
int query_time_parse(const char *s, int64_t now_ms, int64_t *out_ms, char *err, size_t errlen);

/* A time as JSON: unix seconds, fractional when not a whole second. */
json_t *query_time_json(int64_t ms);

/* Parses a duration "<N><unit>" (units s, m, h, d, w; a bare number is
 * seconds) into milliseconds. */
int query_duration_parse(const char *s, int64_t *out_ms, char *err, size_t errlen);

/* ---- selectors (selector.c) ------------------------------------------ */

typedef enum { QUERY_EQ, QUERY_NE, QUERY_RE, QUERY_NRE } query_op;

typedef struct {
    char *name;     /* owned */
    char *value;    /* owned, unescaped */
    query_op op;
    struct query_regex *re; /* owned, compiled (RE, NRE): RE2, whole values (regex.h) */
} query_matcher;

typedef struct {
    query_matcher *matchers; /* owned */
    int n_matchers;
} query_selector;

/* Parses `{name="v", name!="v", name=~"re", name!~"re"}`, the shorthand
 * `svc{...}` (adds service="svc") and `{}`.  Values are double-quoted with
 * \" and \\ escapes.  Errors say the position ("at column 7: ..."). */
int query_selector_parse(const char *s, query_selector *out, char *err, size_t errlen);
void query_selector_free(query_selector *sel);

/* Returns 1 when a label value (NULL when the series lacks the label, which
 * matches like the empty string, as in Prometheus) satisfies the matcher. */
int query_matcher_match(const query_matcher *m, const char *value);

/* Returns the value of the first equality matcher on `name`, or NULL. */
const char *query_selector_eq(const query_selector *sel, const char *name);

/* ---- resolving and merging (resolve.c, merge.c) ---------------------- */

/* The series matching a selector, all of one profile type. */
typedef struct {
    uint32_t *series;       /* owned, ascending */
    size_t n_series;
    char type[128];         /* the type merged */
    char **other_types;     /* owned: other types the selector matched, sorted */
    size_t n_other_types;
    query_selector sample;  /* owned: the matchers on sample labels (query_merge filters
                               stacks by them; sample.c), n_matchers 0 when none */
    char *sample_key;       /* owned: their canonical text (NULL when none) */
    char **span_ids;        /* owned, sorted, lower case: only stacks whose sample label
                               span_id is one of them (query_sample_spans) */
    size_t n_span_ids;
} query_series_set;

/* The series matching sel (all types) that have a profile starting in
 * [from_ms, until_ms): a malloc'd ascending array the caller frees. */
int query_match(store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                uint32_t **ids, size_t *n);
/* The same by labels alone, whether or not the series hold any profile. */
int query_match_labels(store_reader *r, const query_selector *sel, uint32_t **ids, size_t *n);

/* Resolves sel to the series with profiles in [from_ms, until_ms) and picks
 * one type: the selector's own type= when it matched, else cpu if any
 * matched series has it, else samples, else the alphabetically first. */
int query_resolve(store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                  query_series_set *out, char *err, size_t errlen);
void query_series_set_free(query_series_set *set);
/* Like query_resolve without picking a type (listings: every type's
 * series, type ""): the selector's matchers on sample labels kept apart in
 * out->sample, the others matching series. */
int query_resolve_all(store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                      query_series_set *out, char *err, size_t errlen);

/* ---- sample labels (sample.c) ------------------------------------------
 * A matcher whose name no series of the store carries
 * (store_label_name_known) is about sample labels (pprof Sample.label,
 * OTLP sample attributes and trace links, stored as pseudo-frames):
 * query_resolve leaves it out of the series match and keeps it in
 * set->sample, and query_merge keeps only the stacks whose sample labels
 * satisfy every such matcher (a missing one matches like "", as for
 * series).  Series labels win: a name carried by any series is a series
 * label, and so is every name starting with "__" (reserved: the tenant's
 * scope). */

/* Splits sel: is_sample[i] = 1 for the matchers on sample labels, copied
 * into *sample (owned; empty when none) with their canonical text in *key
 * (owned; NULL when none).  Answers 0 or -1 out of memory. */
int query_sample_split(store_reader *r, const query_selector *sel, unsigned char *is_sample, query_selector *sample,
                       char **key);
#define QUERY_MAX_SPAN_IDS 10000
/* Keeps only the stacks whose sample label span_id is one of ids[0..n)
 * (Pyroscope's span_selector: hex, as OTLP and the Go SDKs write them,
 * taken in any case), besides set's other matchers.  Answers 0, or -1
 * with err naming the id at fault (or out of memory). */
int query_sample_spans(query_series_set *set, char *const *ids, size_t n, char *err, size_t errlen);
/* Installs set's sample filter on the reader (none: clears it); it stays
 * until the next call.  query_merge calls it. */
void query_sample_install(store_reader *r, const query_series_set *set);

/* A merged profile: values summed per call-tree node in flat arrays indexed
 * by node id, so merging is addition and totals come from one backwards pass
 * (parents have smaller ids than children). */
typedef struct {
    uint32_t n_nodes;       /* size of the arrays: node ids < n_nodes */
    uint64_t *self;         /* owned, per node */
    uint64_t *total;        /* owned, per node, filled by query_tree_finish */
    uint64_t *touched;      /* owned bitmap of nodes with a value */
    uint64_t grand_total;   /* sum of all values */
    uint64_t samples;       /* samples behind the values (of the profiles that said) */
    uint64_t samples_unknown; /* profiles merged that did not say their samples: when
                               non-zero, samples is not known and no interval is given */
    uint64_t profiles;      /* blocks merged */
    int gauge;              /* gauge profiles were averaged over time (per series, then summed) */
    uint64_t divisor;       /* values (self, total, grand_total) are divisor times the answer's:
                               1 without gauges; see query_value_json */
    int inexact;            /* with gauges: the divisor could not be exact (see merge.c) */
    uint32_t series;        /* series with at least one profile */
    char unit[64];          /* unit of the values */
    char **other_units;     /* owned: units of profiles left out, sorted */
    size_t n_other_units;
    uint64_t skipped_profiles; /* profiles left out for their unit */
    uint64_t sample_dropped;   /* values of stacks a sample-label matcher left out (sample.c) */
} query_tree;

/* A value of tree t as JSON in its unit: an integer, or for an average of
 * gauges value / t->divisor as a number. */
json_t *query_value_json(const query_tree *t, uint64_t v);
double query_value(const query_tree *t, uint64_t v);
/* The same rounded to a whole unit, for formats whose values are integers
 * (folded, pprof, speedscope). */
uint64_t query_value_rounded(const query_tree *t, uint64_t v);

/* "average" when the tree averaged gauges over time, else "sum". */
const char *query_aggregation_name(const query_tree *t);

/* The number of samples as JSON: null when some profile did not say
 * (then no interval or test can be computed). */
json_t *query_samples_json(uint64_t samples, uint64_t unknown);

/* Merges of a partition holding at least min_pairs (stack, count) pairs
 * decode and accumulate on `threads` threads (0: one per online CPU); the
 * answer is the same.  Defaults: 0 threads, QUERY_MERGE_PARALLEL_PAIRS.
 * Process-wide (serve --merge-threads). */
#define QUERY_MERGE_PARALLEL_PAIRS (UINT64_C(1) << 20)
void query_merge_parallel(unsigned threads, uint64_t min_pairs);

int query_merge(store_reader *r, const query_series_set *set, int64_t from_ms,
                int64_t until_ms, query_tree *out, char *err, size_t errlen);
/* query_merge's answer when the values would pass 2^63 (exact integers no
 * more): the client should narrow the range; -1 is any other failure. */
#define QUERY_ETOOBIG (-2)
/* query_merge's answers when the reader's work was stopped
 * (store_reader_expired): its deadline passed, its pairs budget was spent,
 * or its client went away; nothing partial is answered. */
#define QUERY_ETIMEOUT (-4)
#define QUERY_ELIMIT (-5)
#define QUERY_EGONE (-6)
/* ... or its data could not be loaded (a remote reader: a ClickHouse shard
 * down), with the loader's message */
#define QUERY_EREMOTE (-7)
/* Which of the three, with its error message (errors.c). */
int query_stopped(const store_reader *r, char *err, size_t errlen);
/* The same in a given unit (profiles in other units left out and listed):
 * windows and groups of one answer share the answer's unit. */
int query_merge_in_unit(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                        const char *unit, query_tree *out, char *err, size_t errlen);
void query_tree_free(query_tree *t);

/* A side of a question (side.c): a selector over [from, until), its series
 * resolved, their profiles merged into one tree.  Top, stability,
 * timeline and variance ask about one side, compare and diff (and
 * Pyroscope's render-diff) about two.  Plain data, owned by the side once
 * given: query_side_init takes sel; each step records what it holds, so
 * query_side_free frees whatever was reached.  A step answers 0 or the
 * code of the call it makes (query_resolve's -1, query_merge's). */
typedef struct {
    query_selector sel;
    int64_t from, until;
    query_series_set set;      /* after query_side_resolve */
    query_tree tree;           /* after query_side_merge */
    int have_sel, have_set, have_tree;
} query_side;

void query_side_init(query_side *s, query_selector *sel, int64_t from, int64_t until);
int query_side_resolve(query_side *s, store_reader *r, char *err, size_t errlen);
/* Merges the resolved series' profiles (unit NULL: every unit of the type,
 * as query_merge; else only that unit's, as query_merge_in_unit). */
int query_side_merge(query_side *s, store_reader *r, const char *unit, char *err, size_t errlen);
void query_side_free(query_side *s);

/* Sorts series ids by their label sets (series_order.c): labels by name,
 * compared pair by pair, name then value (bytes), a set before the sets it
 * is a prefix of.  Ids follow push order; label sets are the data's, so
 * listings in this order are the same on any store holding the same
 * series.  -1 out of memory (ids unchanged). */
int query_series_sort(store_reader *r, uint32_t *ids, size_t n);

/* ---- group-by (groups.c) ---------------------------------------------- */

#define QUERY_MAX_GROUP_KEYS 8

typedef struct {
    char *keys[QUERY_MAX_GROUP_KEYS];  /* owned label names */
    size_t n_keys;
} query_group_by;

/* Parses "k1,k2" (label names, at most QUERY_MAX_GROUP_KEYS). */
int query_group_by_parse(const char *s, query_group_by *out, char *err, size_t errlen);
void query_group_by_free(query_group_by *g);

typedef struct {
    const char *values[QUERY_MAX_GROUP_KEYS]; /* per key; "" when the series lack it (store-owned) */
    size_t n_values;
    query_series_set set;                     /* owns set.series only */
} query_group;

/* Splits set by the values of by's labels; groups ordered by values.
 * More than max_groups groups (0: no limit): QUERY_ETOOMANY with *n the
 * number there would be, before any group is made; -1 out of memory. */
int query_groups_split(store_reader *r, const query_series_set *set, const query_group_by *by, size_t max_groups,
                       query_group **groups, size_t *n);
#define QUERY_ETOOMANY (-3)
/* The most groups of set one answer splits into: max_groups, and where
 * the answer keeps a merged tree a group (query, top: tree_bytes > 0), no
 * more than tree_bytes holds for a call tree the size of the partitions
 * in [from_ms, until_ms) (16 bytes and a bit a node).  With tree_bytes,
 * the groups are to be merged over that range (query_groups_merge): a
 * remote reader sums set's series now, in one go, since its tree's size
 * is known only once what it merges is in. */
size_t query_groups_limit(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                          size_t max_groups, uint64_t tree_bytes);
void query_groups_free(query_group *groups, size_t n);

/* Every group merged over [from_ms, until_ms) (query_merge), ordered by
 * total descending, ties in the groups' order; group is the index in
 * groups.  Answers query_merge's code of the first failure (nothing kept
 * then).  Free with query_group_trees_free(trees, n). */
typedef struct {
    query_tree tree;
    size_t group;
} query_group_tree;

int query_groups_merge(store_reader *r, const query_group *groups, size_t n, int64_t from_ms, int64_t until_ms,
                       query_group_tree **out, char *err, size_t errlen);
void query_group_trees_free(query_group_tree *trees, size_t n);

/* ---- per-function figures (functions.c) ------------------------------ */

/* self(f): values of stacks whose leaf frame is f; total(f): values of the
 * stacks containing f at least once (recursion counts once). */
typedef struct {
    uint32_t *fn;        /* function string ids, ascending */
    uint64_t *self, *total;
    size_t n;
} query_functions;

int query_functions_build(store_reader *r, const query_tree *t, query_functions *out);
void query_functions_sort_by_fn(query_functions *f);
void query_functions_free(query_functions *f);

/* ---- discovering sample labels (sample.c) -------------------------------
 * Sample labels live in stacks, so finding which exist reads the stacks:
 * query_sample_labels_scan decodes every block of the set's series in the
 * range (rollups where they serve, as a merge does), under the reader's
 * bounds (--max-pairs, --query-timeout, a client gone): a stopped scan
 * answers query_stopped's code, never a partial list. */
typedef struct {
    char *key, *value;   /* owned, NUL-terminated */
} query_sample_pair;

typedef struct {
    query_sample_pair *pairs;   /* distinct; sorted by key, then value (bytes), after a scan */
    size_t n, cap;
    uint32_t *slots;            /* hash of the pairs: index + 1, 0 empty */
    size_t n_slots;
} query_sample_labels;

/* Records into out (NULL: nothing) the (key, value) pairs of the stacks of
 * set's series with a profile starting in [from_ms, until_ms) that set's
 * sample matchers keep (all stacks when it has none); key non-NULL: that
 * key's pairs only.  Keys some series carries (series labels win in a
 * selector) and keys starting with "__" are left out.  kept (NULL: not
 * asked) gets kept[i] = 1 for each series i holding such a stack.  Pairs
 * add up over calls (several selectors).  Answers 0, query_stopped's code,
 * or -1 (damaged data, out of memory) with err. */
int query_sample_labels_scan(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                             const char *key, query_sample_labels *out, unsigned char *kept, char *err,
                             size_t errlen);
void query_sample_labels_free(query_sample_labels *l);
/* The series a listing shows: query_resolve_all's, and when sel has
 * matchers on sample labels only the series holding a stack they keep
 * (read from the stacks, query_sample_labels_scan, which also fills found
 * and key as it says).  Answers 0, or resolve's or the scan's code with
 * err (out empty). */
int query_sample_resolve(store_reader *r, const query_selector *sel, int64_t from_ms, int64_t until_ms,
                         const char *key, query_sample_labels *found, query_series_set *out, char *err,
                         size_t errlen);

/* group_by_sample on a ranking: the tree t, merged with
 * store_reader_sample_root(r, key) set, split by its root frames
 * "key=value": one group per value, and one (value "") for the stacks
 * without the label; functions and totals are each group's stacks' (the
 * label frame is no function).  figures holds the group's total, unit,
 * divisor and samples (its arrays NULL): samples are known only for a
 * group holding the whole tree (a block's samples cannot be split by
 * stack).  Groups by total descending, then value.  -1 out of memory. */
typedef struct {
    char *value;            /* owned */
    query_tree figures;
    query_functions f;      /* ascending function ids */
} query_sample_group;

int query_sample_groups(store_reader *r, const query_tree *t, const char *key, query_sample_group **out, size_t *n);
void query_sample_groups_free(query_sample_group *g, size_t n);
/* Every tree of trees[0..n_trees) split so (the series groups of a
 * group_by, each split again), all their groups in one ranking: by total
 * descending, ties in tree order, then each tree's own order.  rows[i]
 * names the tree it splits and its group.  -1 out of memory (nothing
 * kept). */
typedef struct {
    size_t tree;
    const query_sample_group *g;
} query_sample_row;

typedef struct {
    query_sample_group **groups;    /* owned: per tree */
    size_t *n_groups;
    size_t n_trees;
    query_sample_row *rows;         /* owned */
    size_t n;
} query_sample_ranking;

int query_sample_rank_trees(store_reader *r, const query_tree *const *trees, size_t n_trees, const char *key,
                             query_sample_ranking *out);
void query_sample_ranking_free(query_sample_ranking *s);


/* ---- a growing buffer for streamed answers (buf.c) ------------------- */

/* Writes never fail one by one: an allocation failure sets failed, later
 * writes do nothing, and query_buf_take answers NULL. */
typedef struct {
    char *data;
    size_t len, cap;
    int failed;
} query_buf;

/* Room for n more bytes at data + len: 0, or -1 (failed set). */
int query_buf_reserve(query_buf *b, size_t n);
void query_buf_put(query_buf *b, const void *s, size_t n);
void query_buf_puts(query_buf *b, const char *s);
void query_buf_u64(query_buf *b, uint64_t v);
void query_buf_i64(query_buf *b, int64_t v);
/* v as compact JSON, jansson's own text (json_dumpb): the program's one
 * JSON escaping.  A NULL v sets failed. */
void query_buf_json(query_buf *b, const json_t *v);
/* s (n bytes, UTF-8) as a JSON string. */
void query_buf_json_string(query_buf *b, const char *s, size_t n);
/* A time, the text query_time_json's value dumps to. */
void query_buf_time(query_buf *b, int64_t ms);
/* A value of tree t, the text query_value_json's value dumps to. */
void query_buf_value(query_buf *b, const query_tree *t, uint64_t v);
/* A non-empty object's members without its closing brace: the caller
 * appends ",\"key\":..." members and the "}". */
void query_buf_object_open(query_buf *b, const json_t *obj);
/* The bytes (NUL-terminated, malloc'd: the caller frees them) and their
 * length, the buffer emptied; NULL (buffer freed) when a write failed. */
char *query_buf_take(query_buf *b, size_t *len);
void query_buf_free(query_buf *b);

/* ---- encoders (tree_view.c, encode_tree.c, encode_levels.c, encode_folded.c) */

/* The tree as JSON: {"name","self","total","children"} nested, children by
 * total descending then name; at most max_nodes nodes (0 = all), the largest
 * totals kept; *trunc_nodes / *trunc_total say what was left out.  Written
 * into b in one walk (-1 when out of memory). */
int query_tree_json_write(query_buf *b, store_reader *r, const query_tree *t, size_t max_nodes,
                          uint64_t *trunc_nodes, uint64_t *trunc_total);
/* The same text read back as a jansson value (for callers that edit it). */
json_t *query_tree_json(store_reader *r, const query_tree *t, size_t max_nodes,
                        uint64_t *trunc_nodes, uint64_t *trunc_total);
/* Two trees as one, /api/v1/diff's answer, written as it is walked
 * (diff.c's view, also the double flamebearer's: query_levels_diff_build):
 * {"left_total", "right_total", "left_unit", "right_unit", "tree",
 * "left_type", "right_type"} (a type NULL: null), the tree's nodes {"name"
 * (the stored frame text), "left_self", "left_total", "right_self",
 * "right_total", "children"}, children by left + right total descending,
 * then name; not cut.  -1 out of memory. */
int query_diff_json_write(query_buf *b, store_reader *r, const query_tree *left, const query_tree *right,
                          const char *left_type, const char *right_type);

/* The tree as a flamegraph's levels (Pyroscope's flamebearer, Grafana's
 * FlameGraph): level d holds the nodes at depth d (the root, named
 * "total", is level 0) left to right, 4 values each: [x − where the node
 * before it on the level ends, total, self, name index].  Same nodes and
 * order as query_tree_json (max_nodes alike); values in whole units of the
 * tree (averages of gauges rounded). */
typedef struct {
    int64_t *v;          /* 4 values a node */
    size_t n, cap;       /* values */
} query_level;

typedef struct {
    query_level *levels;
    size_t n_levels;
    const char **names;  /* the reader's strings (function names; not NUL-terminated with lines) */
    uint32_t *name_lens;
    size_t n_names;
    int64_t total, max_self;
    uint64_t trunc_nodes, trunc_total;  /* as query_tree_json's, raw values */
    int width;           /* values a node: 4, or 7 for a diff */
    int64_t left_total, right_total;    /* a diff's */
} query_levels;

int query_levels_build(store_reader *r, const query_tree *t, size_t max_nodes, query_levels *out);
/* Two trees of one reader as one (Pyroscope's "double" flamebearer): the
 * union of their nodes, children by left + right total descending then
 * name, 7 values a node: [left x offset, left total, left self, right x
 * offset, right total, right self, name index], each side's offsets on its
 * own.  max_nodes keeps the largest left + right totals.  total is
 * left_total + right_total, max_self the largest self of either side. */
int query_levels_diff_build(store_reader *r, const query_tree *left, const query_tree *right, size_t max_nodes,
                            query_levels *out);
void query_levels_free(query_levels *l);
/* "names":[...],"levels":[[...],...] (members of an object). */
void query_levels_json_write(query_buf *b, const query_levels *l);

/* Trees as a speedscope file: one "sampled" profile per tree (named by
 * names[i], in the tree's own unit), frames shared. */
json_t *query_trees_speedscope(store_reader *r, const query_tree *const *trees, const char *const *names, size_t n,
                               const char *name);

/* The tree as folded text: one "a;b;c N" line per stack with self > 0,
 * sorted by stack.  Returns a malloc'd buffer and its length. */
char *query_tree_folded(store_reader *r, const query_tree *t, size_t *len);

/* ---- analyses (top.c, diff.c, timeline.c, ...) ---------------------- */

/* Functions ranked by self (or total) value, then the other, then name
 * (or by name, then self, then total): rows [offset, offset + limit) (limit
 * 0 = all) of the n_functions whose name contains match (ASCII case
 * folded; NULL: every function).  Shares are of the tree's
 * grand total; their 95% Wilson intervals from the samples behind it
 * (has_ci 0 when the number of samples is not known).  Names are the
 * reader's: valid while it is.  -1 when out of memory. */
typedef struct {
    const char *name;
    uint64_t self, total;
    double self_share, total_share;
    double self_ci[2], total_ci[2];
} query_top_row;

typedef struct {
    query_top_row *rows;
    size_t n, offset, n_functions;
    int has_ci;
} query_top_result;

enum { QUERY_TOP_SELF, QUERY_TOP_TOTAL, QUERY_TOP_NAME };
typedef struct {
    size_t offset, limit;
    int order;          /* QUERY_TOP_SELF, QUERY_TOP_TOTAL or QUERY_TOP_NAME */
    const char *match;  /* NULL or "": every function */
} query_top_opts;

int query_top(store_reader *r, const query_tree *t, const query_top_opts *o, query_top_result *out);
/* The same ranking of figures already built (f, not taken), with shares of
 * figures' grand total and intervals from its samples (its arrays unread). */
int query_top_rank(store_reader *r, const query_functions *f, const query_tree *figures, const query_top_opts *o,
                   query_top_result *out);
void query_top_free(query_top_result *top);
/* {"total", "samples", "functions_total", "offset", "functions": [{"name",
 * "self", "total", "self_share", "total_share", "self_ci95",
 * "total_ci95"}]}: the rows in t's unit. */
json_t *query_top_json(const query_tree *t, const query_top_result *top);


/* About 300 points, rounded up to a multiple of 10 s. */
int64_t query_timeline_default_step(int64_t from_ms, int64_t until_ms);
/* A step of a timeline: where it starts, the sum of its counter profiles'
 * values (exact) and, in a unit of gauges, the sum over series of each
 * series' mean there (query_point_value adds them). */
typedef struct {
    int64_t t_ms;
    uint64_t sum;
    double gauge;
} query_point;

typedef struct {
    char unit[64];          /* the unit with the most profiles; "samples" when none */
    int gauge;              /* the unit holds gauges: values are sum + gauge, not integers */
    query_point *points;    /* owned: one per step from from_ms, empty steps 0 */
    size_t n;
} query_timeline_result;

/* The totals of set's profiles per step_ms from from_ms (block headers
 * alone; each profile in the step its window starts in), in the unit with
 * the most profiles.  Answers 0, QUERY_ETOOBIG (a step's values add up past
 * 2^63: exact integers cannot show it), or -1 (out of memory, the reader's
 * work stopped, or set has sample matchers: headers know no sample labels);
 * nothing partial. */
int query_timeline(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms, int64_t step_ms,
                   query_timeline_result *out);
void query_timeline_free(query_timeline_result *tl);
static inline double query_point_value(const query_point *p) { return (double)p->sum + p->gauge; }
/* [[t, total], ...]: integers, or numbers in a unit of gauges. */
json_t *query_timeline_json(const query_timeline_result *tl);

/* A merge's figures in its unit, as compare and stability show them:
 * total / divisor is its value (divisor 1: an integer), samples unknown
 * when samples_unknown. */
typedef struct {
    uint64_t profiles, total, divisor, samples, samples_unknown;
} query_figures;

/* Two merges (left, right) compared function by function: self shares,
 * their difference, whether it is significant (a two-proportion z-test
 * at 95% on the samples; -1 when a side does not know its samples), and
 * the Manhattan distance and Jensen-Shannon divergence over the k
 * functions that weigh most.  Rows by |delta| descending, then name; the
 * first limit (0: all).  Names are the reader's.  -1 out of memory. */
typedef struct {
    const char *name;
    double left_share, right_share, delta;
    int significant;        /* 1, 0, or -1: unknown */
} query_compare_row;

typedef struct {
    query_figures f;
    double entropy;
    char unit[64];
} query_compare_side;

typedef struct {
    query_compare_side left, right;
    double manhattan, jsd;
    query_compare_row *rows;    /* owned */
    size_t n;
} query_compare_result;

int query_compare(store_reader *r, const query_tree *left, const query_tree *right, size_t k, size_t limit,
                  query_compare_result *out);
void query_compare_free(query_compare_result *c);
/* {"left", "right": {"total", "samples", "profiles", "entropy", "unit"},
 * "manhattan", "jsd", "functions": [{"name", "left_share", "right_share",
 * "delta", "significant"}]}. */
json_t *query_compare_json(const query_compare_result *c);

/* Can the profile be trusted?  Units (windows of step_ms, each against the
 * previous non-empty one; or groups, each against the whole merge,
 * outliers first) with their entropy, Manhattan distance and JSD (NaN:
 * none), and a summary against max_manhattan and max_jsd. */
typedef struct {
    int64_t from_ms, until_ms;  /* a window's */
    size_t group;               /* a group's index in the groups given */
    query_figures f;
    double entropy, manhattan, jsd;
    double manhattan_noise, manhattan_z;  /* groups: the distance sampling alone gives, and how many times it */
} query_stability_unit;

typedef struct {
    double entropy_mean, entropy_stddev, manhattan_mean, manhattan_max, jsd_mean, jsd_max; /* NaN: no value */
    int stable;                 /* every comparison within the bounds; -1: no comparison */
    size_t comparisons;
    double max_manhattan, max_jsd;
} query_stability_summary;

typedef struct {
    int64_t step_ms;            /* windows; 0: groups */
    query_stability_unit *units;/* owned: windows in time order, groups outliers first */
    size_t n;
    query_stability_summary summary;
} query_stability_result;

int query_stability_windows(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                            int64_t step_ms, size_t k, double max_m, double max_jsd, query_stability_result *out);
int query_stability_groups(store_reader *r, const query_group *groups, size_t n, const query_tree *whole,
                           int64_t from_ms, int64_t until_ms, size_t k, double max_m, double max_jsd,
                           query_stability_result *out);
void query_stability_free(query_stability_result *s);
/* Windows: {"step", "windows", "summary"}; groups (by and groups as given
 * to the split): {"groups", "summary"}. */
json_t *query_stability_json(const query_stability_result *s, const query_group_by *by, const query_group *groups);
/* Number of windows of step_ms in [from, until). */
size_t query_window_count(int64_t from_ms, int64_t until_ms, int64_t step_ms);

/* What makes the total swing?  Over units (windows or groups), each
 * function's contribution Cov(self, total) / Var(total) with its sampling
 * error (NaN: unknown), the k largest first. */
typedef struct {
    const char *name;           /* the reader's */
    double contribution, contribution_se, mean, variance;
} query_variance_row;

typedef struct {
    size_t units;
    int64_t step_ms;            /* windows; 0: groups */
    double mean, variance;      /* of the units' totals; NaN without units */
    query_variance_row *rows;   /* owned */
    size_t n;
} query_variance_result;

int query_variance_windows(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                           int64_t step_ms, size_t k, query_variance_result *out);
int query_variance_groups(store_reader *r, const query_series_set *whole, const query_group *groups, size_t n,
                          int64_t from_ms, int64_t until_ms, size_t k, query_variance_result *out);
void query_variance_free(query_variance_result *v);
/* {"units", "mean", "variance", "functions": [{"name", "contribution",
 * "contribution_se", "mean", "variance"}]}, and "step" over windows. */
json_t *query_variance_json(const query_variance_result *v);
/* The labels of a group as a JSON object. */
json_t *query_group_labels_json(const query_group_by *by, const query_group *g);

/* ---- where the data is (extent.c) ------------------------------------ */

/* Where the profiles of the series matching a selector lie, at any time:
 * the windows of the newest (latest start; equal starts: the later end)
 * and the oldest (earliest start; equal starts: the earlier end). */
typedef struct {
    int found;                                   /* 0: no matching series holds a profile */
    int64_t latest_from_ms, latest_until_ms;
    int64_t earliest_from_ms, earliest_until_ms;
} query_extent;

/* Fills out for sel (found = 0 when nothing matches); -1 when out of
 * memory.  Reads block keys and headers only: see extent.c for the cost. */
int query_extent_find(store_reader *r, const query_selector *sel, query_extent *out);
/* Adds "latest": {"from", "until"} and "earliest": {"from", "until"}
 * (unix seconds) to the answer o when e found a profile; else nothing. */
void query_extent_json(json_t *o, const query_extent *e);

/* ---- listings (listings.c) -------------------------------------------- */

/* Every listing takes limit, the most items it lists (0: no bound), and
 * sets *cut when it left some out (the first limit in its order are
 * listed). */
/* A label name and the number of its distinct values. */
typedef struct {
    const char *name;
    size_t values;
} query_label_count;

typedef struct {
    query_label_count *items;   /* owned; names the reader's (or the scan's) */
    size_t n;
    int cut;                    /* limit left some out */
} query_label_list;

typedef struct {
    const char **items;         /* owned array; strings the reader's (or the scan's) */
    size_t n;
    int cut;
} query_value_list;

/* The label names of series ids[0..n), by name, with their distinct
 * values; hide (NULL: none) is a name left out.  -1 out of memory. */
int query_label_names(store_reader *r, const uint32_t *ids, size_t n, const char *hide, size_t limit,
                      query_label_list *out);
/* The distinct values of label name over the series, sorted (bytes). */
int query_label_values(store_reader *r, const uint32_t *ids, size_t n, const char *name, size_t limit,
                       query_value_list *out);
/* The same of the sample labels a scan found (query_sample_labels_scan;
 * valid while l is). */
int query_sample_names(const query_sample_labels *l, size_t limit, query_label_list *out);
int query_sample_values(const query_sample_labels *l, const char *key, size_t limit, query_value_list *out);
void query_label_list_free(query_label_list *l);
void query_value_list_free(query_value_list *l);
/* [{"name", "values": distinct count}, ...] */
json_t *query_label_list_json(const query_label_list *l);
/* ["value", ...] */
json_t *query_value_list_json(const query_value_list *l);

/* The units a series' profiles starting in a range are answered in
 * (query_block_unit; usually one), in the order met, at most
 * QUERY_MAX_UNITS (more are left out).  Block headers alone. */
#define QUERY_MAX_UNITS 4
typedef struct {
    char units[QUERY_MAX_UNITS][64];
    int n;
} query_unit_set;
void query_series_units(store_reader *r, uint32_t sid, int64_t from_ms, int64_t until_ms, query_unit_set *out);

/* A series' figures over its profiles starting in a range. */
typedef struct {
    uint32_t id;
    uint64_t profiles, samples, samples_unknown, total; /* total: counts times their weights */
    int gauge;              /* some profile is a gauge: total / profiles is its average */
    int mixed;              /* several units */
    int dropped;            /* the sample filter left out some stack of a listed profile */
    const char *unit;       /* the reader's; NULL: no profile */
    int64_t first, last;    /* window starts */
} query_series_stat;

typedef struct {
    query_series_stat *items;   /* owned */
    size_t n;
    int cut;                    /* limit left series out */
} query_series_list;

/* The figures of set's series, in set's order, from the block headers of
 * their profiles in [from_ms, until_ms).  When set has sample matchers,
 * from the stacks they keep instead (store_block_pairs under the set's
 * filter): a profile counts when it holds such a stack, with their values
 * only, and a series holding none is not listed.  At most limit series (0:
 * all).  Answers 0, QUERY_ETOOBIG (a series' values past 2^63: no exact
 * integer), query_stopped's code, or -1 (damaged data, out of memory),
 * each with err; nothing partial. */
int query_series_stats(store_reader *r, const query_series_set *set, int64_t from_ms, int64_t until_ms,
                       size_t limit, query_series_list *out, char *err, size_t errlen);
void query_series_list_free(query_series_list *l);
/* {"series": [{"labels", "profiles", "samples", "total", "aggregation",
 * "unit", "first", "last"}]}: samples null for a series whose listed
 * profiles lost a stack to the filter (a profile's samples are not split
 * by stack); hide (NULL: none) a label name left out of "labels". */
json_t *query_series_json(store_reader *r, const query_series_list *l, const char *hide);

/* acc += counts x weight, answering -1 (acc unchanged) past 2^63: the
 * checked sum every total over stored values uses (values past 2^63 are
 * answered 422, never wrapped or rounded). */
static inline int query_add_weighted(uint64_t *acc, uint64_t counts, uint64_t weight)
{
    uint64_t v, s;
    if (__builtin_mul_overflow(counts, weight, &v) || __builtin_add_overflow(*acc, v, &s) ||
        s > (uint64_t)INT64_MAX)
        return -1;
    *acc = s;
    return 0;
}

/* The unit a block's values are answered in, and the weight of one count:
 * samples with a rate become nanoseconds weighing round(1e9 / rate). */
const char *query_block_unit(const store_block *b, uint64_t *weight);

/* ---- pprof (encode_pprof.c) ------------------------------------------- */

/* The tree as a gzip'd pprof profile.proto: one sample type (type, and the
 * tree's unit; "samples" written as "count"), one function and location per
 * distinct function, one sample per node with self > 0 (locations leaf
 * first), time_nanos = from, duration_nanos = until - from.  Returns a
 * malloc'd buffer and its length, NULL when out of memory. */
char *query_tree_pprof(store_reader *r, const query_tree *t, const char *type, int64_t from_ms, int64_t until_ms,
                       size_t *len);

#endif
