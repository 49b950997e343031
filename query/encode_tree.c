/* encode_tree.c — a merged tree as nested JSON (and two trees as one:
 * /api/v1/diff's answer, query_diff_json_write, the same walk over diff.c's
 * view with left and right values):
 * {"name", "self", "total", "children": [...]}, children by total
 * descending then name, at most max_nodes nodes (see tree_view.c).  When
 * the reader keeps lines, nodes are locations and say "file", "line",
 * "mapping" and "build_id" where known.
 *
 * Written straight into a growing buffer (buf.c) in one depth-first walk
 * with an explicit stack (no recursion, however deep the stacks): no
 * jansson value per node.  What comes before "self" in a node —
 * {"name":..,"file":..,"line":..,"mapping":..,"build_id":.. — depends only
 * on the node's name, so it is escaped once per distinct name (jansson's
 * encoder, buf.c) and copied for every node of that name; values are
 * integers written by hand, or for averaged gauges jansson's text of the
 * same double query_value_json makes.  The text is byte for byte what
 * json_dumps(JSON_COMPACT) made of the jansson tree this replaced (the
 * unit tests compare it with json_loadb's reading and a tree built by
 * hand; bench_encode measures both). */
#include <stdlib.h>
#include <string.h>

#include "../storage/frame.h"
#include "query_internal.h"

/* The text of each distinct name's node opening, by string id, made by
 * opening (a tree's, or a diff's). */
typedef struct {
    query_buf text;
    size_t *off;      /* per string id: offset in text + 1; 0 not yet made */
    uint32_t *len;
    uint32_t n_ids;
    void (*opening)(query_buf *b, store_reader *r, uint32_t fn);
} open_cache;

static void put_opening(query_buf *b, store_reader *r, uint32_t fn)
{
    uint32_t len;
    const char *s = store_string(r, fn, &len);
    frame_parts f;
    frame_parse(s, len, &f);
    query_buf_puts(b, "{\"name\":");
    query_buf_json_string(b, f.name, f.name_len);
    if (f.located) { /* a reader with lines (store_reader_lines) */
        if (f.file_len) {
            query_buf_puts(b, ",\"file\":");
            query_buf_json_string(b, f.file, f.file_len);
        }
        if (f.line) {
            query_buf_puts(b, ",\"line\":");
            query_buf_u64(b, f.line);
        }
        if (f.mapping_len) {
            query_buf_puts(b, ",\"mapping\":");
            query_buf_json_string(b, f.mapping, f.mapping_len);
        }
        if (f.build_id_len) {
            query_buf_puts(b, ",\"build_id\":");
            query_buf_json_string(b, f.build_id, f.build_id_len);
        }
    }
    query_buf_puts(b, ",\"self\":");
}

static void put_open(query_buf *b, open_cache *c, store_reader *r, uint32_t fn)
{
    if (fn >= c->n_ids) { /* not met by the reader when the cache was made: no caching */
        c->opening(b, r, fn);
        return;
    }
    if (!c->off[fn]) {
        size_t at = c->text.len;
        c->opening(&c->text, r, fn);
        if (c->text.failed) {
            b->failed = 1;
            return;
        }
        c->off[fn] = at + 1;
        c->len[fn] = (uint32_t)(c->text.len - at);
    }
    query_buf_put(b, c->text.data + c->off[fn] - 1, c->len[fn]);
}

/* A cache for reader r (ids it knows now); -1 out of memory. */
static int cache_init(open_cache *c, store_reader *r, void (*opening)(query_buf *, store_reader *, uint32_t))
{
    memset(c, 0, sizeof *c);
    c->opening = opening;
    c->n_ids = store_string_max(r) + 1;
    c->off = calloc(c->n_ids, sizeof *c->off);
    c->len = malloc(c->n_ids * sizeof *c->len);
    return c->off && c->len ? 0 : -1;
}

static void cache_free(open_cache *c)
{
    free(c->off);
    free(c->len);
    query_buf_free(&c->text);
}

typedef struct { uint32_t first, n, i; } walk_frame;

int query_tree_json_write(query_buf *b, store_reader *r, const query_tree *t, size_t max_nodes,
                          uint64_t *trunc_nodes, uint64_t *trunc_total)
{
    query_view v;
    if (query_view_build(r, t, max_nodes, &v)) return -1;
    *trunc_nodes = v.trunc_nodes;
    *trunc_total = v.trunc_total;
    open_cache c;
    size_t cap = 64, sp = 0;
    walk_frame *st = malloc(cap * sizeof *st);
    if (cache_init(&c, r, put_opening) || !st) b->failed = 1;

    query_buf_puts(b, "{\"name\":\"root\",\"self\":");
    query_buf_value(b, t, 0);
    query_buf_puts(b, ",\"total\":");
    query_buf_value(b, t, t->total[0]);
    query_buf_puts(b, ",\"children\":[");
    if (st) {
        st[0].n = query_view_children(&v, 0, &st[0].first);
        st[0].i = 0;
        sp = 1;
    }
    while (sp && !b->failed) {
        walk_frame *top = &st[sp - 1];
        if (top->i == top->n) {
            query_buf_put(b, "]}", 2);
            sp--;
            continue;
        }
        if (top->i) query_buf_put(b, ",", 1);
        uint32_t id = v.edges[top->first + top->i++].id;
        put_open(b, &c, r, store_node_func(r, id));
        query_buf_value(b, t, t->self[id]);
        query_buf_puts(b, ",\"total\":");
        query_buf_value(b, t, t->total[id]);
        query_buf_puts(b, ",\"children\":[");
        if (sp == cap) {
            walk_frame *ns = realloc(st, cap * 2 * sizeof *st);
            if (!ns) {
                b->failed = 1;
                break;
            }
            st = ns;
            cap *= 2;
        }
        st[sp].n = query_view_children(&v, id, &st[sp].first);
        st[sp].i = 0;
        sp++;
    }
    free(st);
    cache_free(&c);
    query_view_free(&v);
    return b->failed ? -1 : 0;
}

json_t *query_tree_json(store_reader *r, const query_tree *t, size_t max_nodes,
                        uint64_t *trunc_nodes, uint64_t *trunc_total)
{
    query_buf b = { 0 };
    if (query_tree_json_write(&b, r, t, max_nodes, trunc_nodes, trunc_total)) {
        query_buf_free(&b);
        return NULL;
    }
    json_t *root = json_loadb(b.data, b.len, 0, NULL);
    query_buf_free(&b);
    return root;
}

/* ---- two trees as one (/api/v1/diff) ------------------------------------ */

/* A diff node names its function by the stored frame text, as the jansson
 * answer this replaced did. */
static void put_diff_opening(query_buf *b, store_reader *r, uint32_t fn)
{
    uint32_t len;
    const char *s = store_string(r, fn, &len);
    query_buf_puts(b, "{\"name\":");
    query_buf_json_string(b, s, len);
    query_buf_puts(b, ",\"left_self\":");
}

/* A node's values after its opening, up to its children's array. */
static void put_diff_values(query_buf *b, const query_tree *l, const query_tree *r, uint32_t id)
{
    query_buf_value(b, l, id ? diff_self_at(l, id) : 0);
    query_buf_puts(b, ",\"left_total\":");
    query_buf_value(b, l, diff_total_at(l, id));
    query_buf_puts(b, ",\"right_self\":");
    query_buf_value(b, r, id ? diff_self_at(r, id) : 0);
    query_buf_puts(b, ",\"right_total\":");
    query_buf_value(b, r, diff_total_at(r, id));
    query_buf_puts(b, ",\"children\":[");
}

static void put_type(query_buf *b, const char *key, const char *type)
{
    query_buf_puts(b, key);
    if (type) query_buf_json_string(b, type, strlen(type));
    else query_buf_puts(b, "null");
}

int query_diff_json_write(query_buf *b, store_reader *r, const query_tree *left, const query_tree *right,
                          const char *left_type, const char *right_type)
{
    query_view v;
    if (query_diff_view(r, left, right, 0, &v)) return -1;
    open_cache c;
    size_t cap = 64, sp = 0;
    walk_frame *st = malloc(cap * sizeof *st);
    if (cache_init(&c, r, put_diff_opening) || !st) b->failed = 1;

    query_buf_puts(b, "{\"left_total\":");
    query_buf_value(b, left, left->grand_total);
    query_buf_puts(b, ",\"right_total\":");
    query_buf_value(b, right, right->grand_total);
    put_type(b, ",\"left_unit\":", left->unit);
    put_type(b, ",\"right_unit\":", right->unit);
    query_buf_puts(b, ",\"tree\":{\"name\":\"root\",\"left_self\":");
    put_diff_values(b, left, right, 0);
    if (st) {
        st[0].n = query_view_children(&v, 0, &st[0].first);
        st[0].i = 0;
        sp = 1;
    }
    while (sp && !b->failed) {
        walk_frame *top = &st[sp - 1];
        if (top->i == top->n) {
            query_buf_put(b, "]}", 2);
            sp--;
            continue;
        }
        if (top->i) query_buf_put(b, ",", 1);
        uint32_t id = v.edges[top->first + top->i++].id;
        put_open(b, &c, r, store_node_func(r, id));
        put_diff_values(b, left, right, id);
        if (sp == cap) {
            walk_frame *ns = realloc(st, cap * 2 * sizeof *st);
            if (!ns) {
                b->failed = 1;
                break;
            }
            st = ns;
            cap *= 2;
        }
        st[sp].n = query_view_children(&v, id, &st[sp].first);
        st[sp].i = 0;
        sp++;
    }
    put_type(b, ",\"left_type\":", left_type);
    put_type(b, ",\"right_type\":", right_type);
    query_buf_put(b, "}", 1);
    free(st);
    cache_free(&c);
    query_view_free(&v);
    return b->failed ? -1 : 0;
}
