/* fuzz_gunzip.c — gzip (and zlib) bodies, bombs and cut streams
 * (ingest_gunzip), with a 1 MiB limit: the output never exceeds it, a
 * refusal allocates nothing the caller must free, and an answer is
 * NUL-terminated. */
#include "fuzz.h"

#include "../../ingest/ingest.h"

#define MAX_OUT ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = NULL, err[512] = "";
    size_t out_len = 0;
    ingest_status s = ingest_gunzip(data, size, MAX_OUT, &out, &out_len, err, sizeof err);
    if (s == INGEST_OK) {
        FUZZ_CHECK(out != NULL && out_len <= MAX_OUT);
        volatile char sink; /* every byte readable, then the NUL callers may rely on */
        for (size_t i = 0; i < out_len; i++) sink = out[i];
        (void)sink;
        FUZZ_CHECK(out[out_len] == '\0');
    } else {
        FUZZ_CHECK(err[0]);
    }
    free(out);
    return 0;
}
