/* prep.h — a profile's block, made ready wherever its stacks' leaves are
 * known: sorted by node, duplicates summed, the payload encoded.  The
 * parse pool makes it (store_prepare) when every stack was resolved; the
 * writer makes it itself after interning new stacks.  Either way the
 * writer only frames the payload with the header's ids and puts it. */
#ifndef FLAMEDB_PREP_H
#define FLAMEDB_PREP_H

#include <stdint.h>

#include "block.h"
#include "store.h"

struct store_prep {
    uint64_t token;        /* the partition the leaves belong to (part_token) */
    uint32_t n;            /* distinct nodes */
    uint32_t *nodes;       /* ascending */
    uint64_t *counts;
    uint64_t samples;      /* sum of the counts */
    block_payload payload;
};

/* From leaves[i] (all non-zero) and stacks[i].count; zcctx a reusable
 * ZSTD_CCtx (or NULL). */
store_status prep_build(const store_stack *stacks, const uint32_t *leaves, size_t n, void *zcctx, store_prep **out);

#endif
