/* fuzz_pyroscope.c — Pyroscope application names
 * ("service[.type]{k=v,...}", ingest_pyroscope_name) and the label checks
 * behind them.  Every label kept must be valid: a name of the allowed
 * characters, a non-empty UTF-8 value, at most INGEST_MAX_LABELS. */
#include "fuzz.h"

#include "../../ingest/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *name = fuzz_cstr(data, size);
    if (!name) return 0;
    ingest_profile p;
    char err[512] = "";
    ingest_profile_init(&p);
    ingest_status s = ingest_pyroscope_name(&p, name, err, sizeof err);
    if (s == INGEST_OK) {
        FUZZ_CHECK(p.n_labels <= INGEST_MAX_LABELS);
        FUZZ_CHECK(ingest_label_get(&p, "service") != NULL);
        for (int i = 0; i < p.n_labels; i++) {
            const char *v = p.labels[i].value;
            FUZZ_CHECK(*p.labels[i].name && strlen(p.labels[i].name) <= INGEST_MAX_LABEL_NAME);
            FUZZ_CHECK(*v && strlen(v) <= INGEST_MAX_LABEL_VALUE && utf8_valid(v, strlen(v)));
        }
        ingest_profile_finish(&p, err, sizeof err);
    } else {
        FUZZ_CHECK(err[0]);
    }
    ingest_profile_free(&p);
    ingest_pyroscope_is_type(name, strlen(name));
    free(name);
    return 0;
}
