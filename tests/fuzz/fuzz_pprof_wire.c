/* fuzz_pprof_wire.c — pprof bodies decoded two ways (pprof_diff.h): by
 * ingest_pprof_parse's single-pass reader (ingest/pprof_wire.c) and by
 * protobuf-c's unpack handed to ingest_pprof_decode.  Any body one accepts
 * and the other refuses, any difference in the profiles, or in the message
 * of a refusal past the wire format, is a crash.  The input is the body,
 * raw or gzip'd (gunzipped to at most 1 MiB). */
#include "fuzz.h"

#include "pprof_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingest_profile base;
    char err[256];
    ingest_profile_init(&base);
    FUZZ_CHECK(ingest_label_add(&base, "service", "fuzz", err, sizeof err) == INGEST_OK);
    base.from_ms = 1000;
    base.until_ms = 2000;
    base.sample_labels = 1; /* both decoders' labels are compared too */
    ingest_status s;
    const char *diff = pprof_diff(data, size, (size_t)1 << 20, &base, &s);
    if (diff) fprintf(stderr, "pprof_wire: the two decoders differ: %s\n", diff);
    FUZZ_CHECK(diff == NULL);
    FUZZ_CHECK(s != INGEST_ENOMEM);
    ingest_profile_free(&base);
    return 0;
}
