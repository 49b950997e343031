/* dict_disk.c — the dictionaries on disk: strings and call-tree nodes in
 * chunks of consecutive ids.
 *
 * One LMDB entry per node cost about 22 bytes for 8 bytes of content, more
 * than the profiles themselves when stacks are new.  So a chunk holds a run
 * of ids: its key is the first id (integer key), its value the entries
 * one after another, compactly:
 *   strings: varint length, bytes
 *   nodes:   varint (id - parent), varint function id  (parents are close)
 * Only the last chunk is open.  The writer thread rewrites it once per group
 * commit with whatever the batch added (dict_flush, in the parent
 * transaction, after every request of the batch); when it has grown past
 * CHUNK_BYTES it is closed and the next batch starts a new one.  Chunks of
 * about 8 KB fill two LMDB overflow pages with little waste.  At open,
 * dict_load reads the chunks back in id order and checks the ids are
 * dense. */
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define CHUNK_BYTES 8000

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* Encodes entries [first, len) of a dictionary into a malloc'd buffer. */
static unsigned char *encode_chunk(store *st, int nodes, uint32_t first, uint32_t len, size_t *out_len)
{
    size_t cap = 64;
    for (uint32_t id = first; id < len; id++)
        cap += nodes ? 10 : 5 + ((const str_entry *)table_at(st->strings, id))->len;
    unsigned char *buf = malloc(cap), *p = buf;
    if (!buf) return NULL;
    for (uint32_t id = first; id < len; id++) {
        if (nodes) {
            const node_entry *e = table_at(st->nodes, id);
            p = put_varint(p, id - e->parent);
            p = put_varint(p, e->func);
        } else {
            const str_entry *e = table_at(st->strings, id);
            p = put_varint(p, e->len);
            memcpy(p, e->ptr, e->len);
            p += e->len;
        }
    }
    *out_len = (size_t)(p - buf);
    return buf;
}

static store_status flush_one(store *st, MDB_txn *txn, int nodes)
{
    table *t = nodes ? st->nodes : st->strings;
    uint32_t *open = nodes ? &st->nodes_open : &st->strings_open;
    if (t->len <= *open) return STORE_OK;
    size_t len;
    unsigned char *buf = encode_chunk(st, nodes, *open, t->len, &len);
    if (!buf) return STORE_ENOMEM;
    uint32_t key = *open;
    MDB_val k = { sizeof key, &key }, v = { len, buf };
    int rc = mdb_put(txn, nodes ? st->db_nodes : st->db_strings, &k, &v, 0);
    free(buf);
    if (rc) return store_status_of(rc);
    if (len >= CHUNK_BYTES) *open = t->len; /* closed: the next batch starts a chunk */
    return STORE_OK;
}

store_status dict_flush(store *st, MDB_txn *txn)
{
    store_status ss = flush_one(st, txn, 0);
    return ss ? ss : flush_one(st, txn, 1);
}

/* Decodes one chunk whose first id is `first` into the in-memory tables. */
static int load_chunk(store *st, int nodes, uint32_t first, const MDB_val *v)
{
    const unsigned char *p = v->mv_data, *end = p + v->mv_size;
    uint32_t id = first;
    while (p < end) {
        uint64_t a, b;
        if (get_varint(&p, end, &a)) return -1;
        if (nodes) {
            if (get_varint(&p, end, &b) || a == 0 || a > id || b == 0 || b >= st->strings->len) return -1;
            if (dict_add_loaded_node(st, id, id - (uint32_t)a, (uint32_t)b)) return -1;
        } else {
            if ((uint64_t)(end - p) < a) return -1;
            if (dict_add_loaded_string(st, id, p, (uint32_t)a)) return -1;
            p += a;
        }
        id++;
    }
    return id > first ? 0 : -1;
}

int dict_load(store *st, MDB_txn *txn, int nodes, char *err, size_t errlen)
{
    const char *what = nodes ? "call-tree nodes" : "strings";
    table *t = nodes ? st->nodes : st->strings;
    MDB_cursor *c;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, nodes ? st->db_nodes : st->db_strings, &c);
    if (rc) {
        store_set_err(err, errlen, "%s: reading %s: %s", st->path, what, mdb_strerror(rc));
        return -1;
    }
    uint32_t last_first = 1;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        uint32_t first;
        memcpy(&first, k.mv_data, sizeof first);
        if (k.mv_size != sizeof first || first != t->len || load_chunk(st, nodes, first, &v)) {
            mdb_cursor_close(c);
            store_set_err(err, errlen, "%s: %s are damaged near id %u (or out of memory)", st->path, what, t->len);
            return -1;
        }
        last_first = first;
    }
    mdb_cursor_close(c);
    if (rc != MDB_NOTFOUND) {
        store_set_err(err, errlen, "%s: reading %s: %s", st->path, what, mdb_strerror(rc));
        return -1;
    }
    /* The last chunk stays open; the next flush rewrites it (and closes it
     * if it is full). */
    if (nodes) st->nodes_open = last_first;
    else st->strings_open = last_first;
    return 0;
}
