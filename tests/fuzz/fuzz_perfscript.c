/* fuzz_perfscript.c — `perf script` text (ingest_perf_detect,
 * ingest_perf_parse), as `flamedb import` reads it.  Every sample's stack
 * must be a valid folded stack: len bytes without NUL, newline or empty
 * frames. */
#include "fuzz.h"

#include "../../ingest/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    ingest_perf_sample *s = NULL;
    size_t n = 0;
    char err[512] = "";
    ingest_perf_detect(text, size);
    ingest_status st = ingest_perf_parse(text, size, &s, &n, err, sizeof err);
    if (st == INGEST_OK) {
        for (size_t i = 0; i < n; i++) {
            const char *k = s[i].stack;
            size_t len = s[i].len;
            FUZZ_CHECK(k != NULL && len > 0 && strlen(k) == len);
            FUZZ_CHECK(!memchr(k, '\n', len));
            FUZZ_CHECK(k[0] != ';' && k[len - 1] != ';' && !strstr(k, ";;"));
            FUZZ_CHECK(s[i].time_ns >= -1);
        }
    } else {
        FUZZ_CHECK(s == NULL && n == 0 && err[0]);
    }
    ingest_perf_free(s, n);
    return 0;
}
