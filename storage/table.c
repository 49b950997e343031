/* table.c — append-only tables in fixed chunks that never move.
 *
 * Entry i lives in chunk i >> 16 at offset i & 0xffff.  Chunks are allocated
 * zeroed on first use and freed only with the table, so a reader that holds
 * an index below the published count can read the entry without a lock
 * while the writer appends (see table.h for the publication rule). */
#include <stdlib.h>

#include "table.h"

table *table_new(size_t elem)
{
    table *t = calloc(1, sizeof *t);
    if (t) t->elem = elem;
    return t;
}

void table_free(table *t)
{
    if (!t) return;
    for (uint32_t c = 0; c < TABLE_MAX_CHUNKS && t->chunk[c]; c++) free(t->chunk[c]);
    free(t);
}

void *table_slot(table *t, uint32_t i)
{
    uint32_t c = i >> TABLE_CHUNK_BITS;
    if (c >= TABLE_MAX_CHUNKS) return NULL;
    if (!t->chunk[c]) {
        t->chunk[c] = calloc(TABLE_CHUNK, t->elem);
        if (!t->chunk[c]) return NULL;
    }
    return table_at(t, i);
}
