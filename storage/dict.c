/* dict.c — the dictionaries: interned strings and the global call tree.
 *
 * Every frame name, label name, label value and unit is interned to a dense
 * string id (from 1).  A stack is a path in one global call tree whose node
 * is (parent node, function id); node 0 is the root, nodes are created
 * parent-first so a parent's id is always smaller than its children's.
 *
 * Both live on disk (LMDB databases "strings" and "nodes", in chunks of
 * consecutive ids written once per batch: dict_disk.c) and in memory:
 * tables indexed by id for everyone, plus hash maps
 * from content to id that only the writer thread uses.  In front of the tree
 * sits a direct-mapped cache from a stack's whole frames text to its leaf
 * node, so a repeated stack costs one hash and one walk up the tree to
 * confirm, with no per-frame lookup.
 *
 * store_resolve lets request threads look their stacks up in that cache
 * before queueing a write: a hit on a committed leaf (entries below the
 * committed count never change) spares the writer thread the hashing and
 * verification, so repeated stacks cost the writer almost nothing.
 *
 * All interning runs on the writer thread, in memory; the batch's
 * transaction writes the new entries before it commits.  If a request or
 * the commit fails, dict_rollback truncates the tables to a mark and
 * rebuilds the maps: a rare path that keeps the common one simple. */
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define STRING_SEED UINT64_C(0x5f1d2c3b4a596877)
#define STACK_SEED UINT64_C(0x1234abcd5678ef90)

static inline uint64_t node_key(uint32_t parent, uint32_t func)
{
    return ((uint64_t)parent << 32) | func;
}

dict_mark dict_mark_now(store *st)
{
    dict_mark m = { st->strings->len, st->nodes->len, st->series->len, st->n_postings,
                    st->strings_open, st->nodes_open };
    return m;
}

void dict_publish_pending(store *st)
{
    atomic_store_explicit(&st->strings->pending, st->strings->len, memory_order_release);
    atomic_store_explicit(&st->nodes->pending, st->nodes->len, memory_order_release);
    atomic_store_explicit(&st->series->pending, st->series->len, memory_order_release);
}

void dict_publish_committed(store *st)
{
    dict_publish_pending(st);
    atomic_store_explicit(&st->strings->committed, st->strings->len, memory_order_release);
    atomic_store_explicit(&st->nodes->committed, st->nodes->len, memory_order_release);
    atomic_store_explicit(&st->series->committed, st->series->len, memory_order_release);
}

typedef struct { store *st; const char *s; uint32_t len; } str_probe;

static int str_eq(void *ctx, uint32_t id)
{
    str_probe *pr = ctx;
    const str_entry *e = table_at(pr->st->strings, id);
    return e->len == pr->len && memcmp(e->ptr, pr->s, pr->len) == 0;
}

/* Appends a string to the in-memory table and map (not to LMDB). */
static store_status add_string_mem(store *st, uint32_t id, const void *p, uint32_t len, uint64_t h)
{
    char *copy = arena_alloc(&st->bytes, (size_t)len + 1);
    str_entry *e = table_slot(st->strings, id);
    if (!copy || !e) return STORE_ENOMEM;
    memcpy(copy, p, len);
    copy[len] = '\0';
    e->ptr = copy;
    e->len = len;
    if (idmap_put(&st->string_map, h, id)) return STORE_ENOMEM;
    if (id >= st->strings->len) st->strings->len = id + 1;
    return STORE_OK;
}

store_status dict_add_loaded_string(store *st, uint32_t id, const void *p, uint32_t len)
{
    return add_string_mem(st, id, p, len, store_hash_bytes(p, len, STRING_SEED));
}

store_status dict_intern_string(store *st, const char *s, uint32_t len, uint32_t *id)
{
    uint64_t h = store_hash_bytes(s, len, STRING_SEED);
    str_probe pr = { st, s, len };
    uint32_t found = idmap_find(&st->string_map, h, str_eq, &pr);
    if (found) {
        *id = found;
        return STORE_OK;
    }
    uint32_t nid = st->strings->len;
    store_status ss = add_string_mem(st, nid, s, len, h);
    if (ss) return ss;
    *id = nid;
    return STORE_OK;
}

static store_status add_node_mem(store *st, uint32_t id, uint32_t parent, uint32_t func)
{
    node_entry *e = table_slot(st->nodes, id);
    if (!e) return STORE_ENOMEM;
    e->parent = parent;
    e->func = func;
    if (idmap_put(&st->node_map, node_key(parent, func), id)) return STORE_ENOMEM;
    if (id >= st->nodes->len) st->nodes->len = id + 1;
    return STORE_OK;
}

store_status dict_add_loaded_node(store *st, uint32_t id, uint32_t parent, uint32_t func)
{
    return add_node_mem(st, id, parent, func);
}

static store_status intern_node(store *st, uint32_t parent, uint32_t func, uint32_t *id)
{
    uint32_t found = idmap_find(&st->node_map, node_key(parent, func), NULL, NULL);
    if (found) {
        *id = found;
        return STORE_OK;
    }
    uint32_t nid = st->nodes->len;
    store_status ss = add_node_mem(st, nid, parent, func);
    if (ss) return ss;
    *id = nid;
    return STORE_OK;
}

/* Confirms that leaf's path from the root spells exactly frames.  Only
 * reads table entries below leaf, which were written before leaf was. */
static int stack_matches(store *st, uint32_t leaf, const char *frames, uint32_t len)
{
    uint32_t end = len, node = leaf;
    while (node) {
        const node_entry *ne = table_at(st->nodes, node);
        const str_entry *se = table_at(st->strings, ne->func);
        if (se->len > end) return 0;
        uint32_t start = end - se->len;
        if (memcmp(frames + start, se->ptr, se->len) != 0) return 0;
        node = ne->parent;
        if (node) {
            if (start == 0 || frames[start - 1] != ';') return 0;
            end = start - 1;
        } else if (start != 0) {
            return 0;
        }
    }
    return leaf != 0;
}

/* The committed leaf spelling frames, found without the writer's maps. */
static uint32_t stack_lookup(store *st, const char *frames, uint32_t len)
{
    uint64_t h = store_hash_bytes(frames, len, STACK_SEED);
    stack_cache_slot *slot = &st->stack_cache[h & (STACK_CACHE_SLOTS - 1)];
    uint32_t committed = atomic_load_explicit(&st->nodes->committed, memory_order_acquire);
    uint64_t sh = atomic_load_explicit(&slot->hash, memory_order_relaxed);
    uint32_t leaf = atomic_load_explicit(&slot->leaf, memory_order_relaxed);
    if (sh != h || !leaf || leaf >= committed) return 0;
    return stack_matches(st, leaf, frames, len) ? leaf : 0;
}

store_status dict_stack_leaf(store *st, const char *frames, uint32_t len, uint32_t *leaf)
{
    uint64_t h = store_hash_bytes(frames, len, STACK_SEED);
    stack_cache_slot *slot = &st->stack_cache[h & (STACK_CACHE_SLOTS - 1)];
    uint32_t cached = atomic_load_explicit(&slot->leaf, memory_order_relaxed);
    if (atomic_load_explicit(&slot->hash, memory_order_relaxed) == h && cached &&
        stack_matches(st, cached, frames, len)) {
        *leaf = cached;
        return STORE_OK;
    }
    uint32_t node = 0, pos = 0;
    while (pos <= len) {
        const char *semi = memchr(frames + pos, ';', len - pos);
        uint32_t flen = semi ? (uint32_t)(semi - (frames + pos)) : len - pos;
        uint32_t func;
        store_status ss = dict_intern_string(st, frames + pos, flen, &func);
        if (ss) return ss;
        ss = intern_node(st, node, func, &node);
        if (ss) return ss;
        pos += flen + 1;
    }
    atomic_store_explicit(&slot->leaf, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->hash, h, memory_order_relaxed);
    atomic_store_explicit(&slot->leaf, node, memory_order_relaxed);
    *leaf = node;
    return STORE_OK;
}

int dict_rebuild_maps(store *st)
{
    idmap_clear(&st->string_map);
    idmap_clear(&st->node_map);
    for (uint32_t i = 0; i < STACK_CACHE_SLOTS; i++) {
        atomic_store_explicit(&st->stack_cache[i].leaf, 0, memory_order_relaxed);
        atomic_store_explicit(&st->stack_cache[i].hash, 0, memory_order_relaxed);
    }
    for (uint32_t i = 1; i < st->strings->len; i++) {
        const str_entry *e = table_at(st->strings, i);
        if (idmap_put(&st->string_map, store_hash_bytes(e->ptr, e->len, STRING_SEED), i)) return -1;
    }
    for (uint32_t i = 1; i < st->nodes->len; i++) {
        const node_entry *e = table_at(st->nodes, i);
        if (idmap_put(&st->node_map, node_key(e->parent, e->func), i)) return -1;
    }
    return 0;
}

void dict_rollback(store *st, dict_mark m)
{
    st->strings->len = m.strings;
    st->nodes->len = m.nodes;
    st->strings_open = m.strings_open;
    st->nodes_open = m.nodes_open;
    series_rollback_index(st, m.series);
    st->series->len = m.series;
    dict_publish_pending(st);
    if (dict_rebuild_maps(st) || series_rebuild_map(st)) {
        /* Out of memory while rebuilding: with incomplete maps the writer
         * could create duplicate nodes, so stop here.  Everything committed
         * is in LMDB and a restart reloads the maps from it. */
        abort();
    }
}

void store_resolve(store *st, const store_stack *stacks, size_t n, uint32_t *leaves)
{
    for (size_t i = 0; i < n; i++) leaves[i] = stack_lookup(st, stacks[i].frames, stacks[i].len);
}
