/* nodetab.h — the writer's table of call-tree nodes: (parent, function)
 * by node id, appended in id order, in about 4.5 bytes a node instead of
 * 8.
 *
 * A call tree grows a stack at a time, and a new stack's new nodes are a
 * chain: every one after the first is the child of the node just before
 * it (the same fact dictionary format 2 stores as a bit).  So a node's
 * parent is kept only when it is not id - 1: per group of 64 nodes, a
 * 64-bit word says which nodes are children of the node before, and the
 * other nodes' parents follow each other in an array of exceptions, the
 * group's first at `base`.  A lookup is the word's bit, else base plus
 * the exceptions below it in the group (a population count).  Functions
 * are a plain u32 each.  Everything lives in table.h's chunks, which
 * never move, so growth copies nothing.
 *
 * Writer-private: one thread appends and reads (readers use the
 * partition's dictionary chunks).  No delete; a failed transaction drops
 * the writer's maps whole (writer.c), so there is no truncation either. */
#ifndef FLAMEDB_NODETAB_H
#define FLAMEDB_NODETAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct nodetab nodetab;

nodetab *nodetab_new(void);
void nodetab_free(nodetab *t);
/* Appends node nodetab_len(t) with its parent and function; -1 on OOM
 * (the table unchanged). */
int nodetab_push(nodetab *t, uint32_t parent, uint32_t func);
/* The parent and function of node id (< nodetab_len). */
void nodetab_get(const nodetab *t, uint32_t id, uint32_t *parent, uint32_t *func);
uint32_t nodetab_len(const nodetab *t);
/* Bytes of the chunks it holds. */
uint64_t nodetab_bytes(const nodetab *t);

#endif
