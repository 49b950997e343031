/* encode_tree.c — a merged tree as nested JSON:
 * {"name", "self", "total", "children": [...]}, children by total
 * descending then name, at most max_nodes nodes (see tree_view.c).  When
 * the reader keeps lines, nodes are locations and say "file", "line",
 * "mapping" and "build_id" where known. */
#include "../storage/frame.h"
#include "query_internal.h"

static json_t *node_json(store_reader *r, const query_tree *t, const query_view *v, uint32_t id)
{
    json_t *o = json_object();
    json_t *kids = json_array();
    if (!o || !kids) {
        json_decref(o);
        json_decref(kids);
        return NULL;
    }
    if (id) {
        uint32_t len;
        const char *s = store_string(r, store_node_func(r, id), &len);
        frame_parts f;
        frame_parse(s, len, &f);
        json_object_set_new(o, "name", json_stringn(f.name, f.name_len));
        if (f.located) { /* a reader with lines (store_reader_lines) */
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
    for (uint32_t i = 0; i < n; i++) {
        json_t *c = node_json(r, t, v, v->edges[first + i].id);
        if (!c || json_array_append_new(kids, c)) {
            json_decref(o);
            json_decref(kids);
            return NULL;
        }
    }
    json_object_set_new(o, "children", kids);
    return o;
}

json_t *query_tree_json(store_reader *r, const query_tree *t, size_t max_nodes,
                        uint64_t *trunc_nodes, uint64_t *trunc_total)
{
    query_view v;
    if (query_view_build(r, t, max_nodes, &v)) return NULL;
    json_t *root = node_json(r, t, &v, 0);
    *trunc_nodes = v.trunc_nodes;
    *trunc_total = v.trunc_total;
    query_view_free(&v);
    return root;
}
