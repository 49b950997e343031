/* fuzz_block.c — stored block values as a damaged disk could hand them
 * back (storage/block.h: block_verify, block_parse_header, block_decode,
 * block_accumulate), compressed payloads included.  The header's sizes are
 * trusted by readers for their buffers (a block was written by flamedb and
 * is checksummed), so this harness sizes its buffers from the header like
 * storage/reader.c does, skipping headers that ask for more than 1 M
 * pairs or 16 MiB: the decoders must never read or write past what the
 * header and the value's length allow. */
#include "fuzz.h"

#include <zstd.h>

#include "../../storage/block.h"

#define MAX_PAIRS ((uint32_t)1 << 20)
#define MAX_RAW ((uint32_t)16 << 20)
#define N_NODES 4096u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    block_header h;
    const void *payload;
    size_t plen;
    int compressed;
    block_verify(data, size);
    if (block_parse_header(data, size, &h, &payload, &plen, &compressed)) return 0;
    FUZZ_CHECK((const uint8_t *)payload >= data && (const uint8_t *)payload + plen == data + size);
    FUZZ_CHECK(h.nodes_bytes <= h.raw_len);
    block_samples_known(&h, "samples");
    if (h.n_pairs > MAX_PAIRS || h.raw_len > MAX_RAW) return 0;
    char *scratch = compressed ? malloc(h.raw_len ? h.raw_len : 1) : NULL;
    uint32_t *nodes = malloc((h.n_pairs ? h.n_pairs : 1) * sizeof *nodes);
    uint64_t *counts = malloc((h.n_pairs ? h.n_pairs : 1) * sizeof *counts);
    uint64_t *acc = calloc(N_NODES, sizeof *acc), *touched = calloc(N_NODES / 64, sizeof *touched), sum = 0;
    ZSTD_DCtx *z = ZSTD_createDCtx();
    if ((!compressed || scratch) && nodes && counts && acc && touched && z) {
        if (block_decode(&h, payload, plen, compressed, z, scratch, nodes, counts) == 0) {
            for (uint32_t i = 1; i < h.n_pairs; i++) FUZZ_CHECK(nodes[i] >= nodes[i - 1]);
        }
        block_accumulate(&h, payload, plen, compressed, NULL, scratch, N_NODES, 3, acc, touched, &sum);
    }
    ZSTD_freeDCtx(z);
    free(scratch);
    free(nodes);
    free(counts);
    free(acc);
    free(touched);
    return 0;
}
