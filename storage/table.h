/* table.h — append-only tables in fixed chunks that never move, so a
 * reader holding an index below a published count reads without a lock
 * while one writer appends. */
#ifndef FLAMEDB_TABLE_H
#define FLAMEDB_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define TABLE_CHUNK_BITS 16
#define TABLE_CHUNK (1u << TABLE_CHUNK_BITS)
#define TABLE_MAX_CHUNKS 65536u

typedef struct {
    void *chunk[TABLE_MAX_CHUNKS];
    size_t elem;                 /* bytes per entry */
    _Atomic uint32_t pending;    /* entries readable by readers */
    _Atomic uint32_t committed;  /* entries durably committed */
    uint32_t len;                /* entries written by the writer */
} table;

table *table_new(size_t elem);
void table_free(table *t);
/* Makes room for entry i (allocating its chunk); answers NULL on OOM. */
void *table_slot(table *t, uint32_t i);
static inline void *table_at(const table *t, uint32_t i)
{
    return (char *)t->chunk[i >> TABLE_CHUNK_BITS] + (size_t)(i & (TABLE_CHUNK - 1)) * t->elem;
}

/* Bytes of the chunks a table of n entries of elem bytes has allocated. */
static inline uint64_t table_chunk_bytes(uint64_t n, size_t elem)
{
    return ((n + TABLE_CHUNK - 1) >> TABLE_CHUNK_BITS) * TABLE_CHUNK * elem;
}

#endif
