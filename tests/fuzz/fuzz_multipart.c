/* fuzz_multipart.c — multipart/form-data bodies as Pyroscope's SDKs push
 * pprof (ingest_multipart_field).  The input's first line is the
 * Content-Type header, the rest the body, copied into a buffer of exactly
 * its size so a read past its end is caught.  A field found must lie
 * inside the body. */
#include "fuzz.h"

#include "../../ingest/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t ct_len = nl ? (size_t)(nl - data) : size;
    char *ct = fuzz_cstr(data, ct_len);
    size_t len = nl ? size - ct_len - 1 : 0;
    char *body = malloc(len ? len : 1);
    if (!ct || !body) {
        free(ct);
        free(body);
        return 0;
    }
    if (len) memcpy(body, nl + 1, len);
    static const char *const fields[] = { "profile", "sample_type_config", "prev_profile" };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        const char *f = NULL;
        size_t flen = 0;
        char err[512] = "";
        ingest_multipart_is(ct);
        ingest_status s = ingest_multipart_field(ct, body, len, fields[i], &f, &flen, err, sizeof err);
        if (s == INGEST_OK && f) FUZZ_CHECK(f >= body && f + flen <= body + len);
        if (s != INGEST_OK) FUZZ_CHECK(f == NULL && err[0]);
    }
    free(ct);
    free(body);
    return 0;
}
