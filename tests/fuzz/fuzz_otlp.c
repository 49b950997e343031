/* fuzz_otlp.c — OpenTelemetry profiles requests (ingest_otlp_parse):
 * the first byte's bit 0 picks OTLP/JSON (protojson.c) over binary
 * protobuf, the rest is the body; the stacks' text is bounded by 1 MiB.
 * Every profile returned must hold stacks that ingest.h promises
 * (non-empty frames without NUL or newline, at most INGEST_MAX_DEPTH deep,
 * inside its own arena, counts adding up to the total) and name its
 * service and type; on error nothing is returned. */
#include "fuzz.h"

#include "../../ingest/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    ingest_profile base;
    ingest_otlp o;
    char err[1024] = "";
    ingest_profile_init(&base);
    base.from_ms = 1000;
    base.until_ms = 2000;
    base.sample_labels = 1; /* sample labels as pseudo-frames, as the server asks */
    ingest_status s = ingest_otlp_parse(data + 1, size - 1, data[0] & 1, (size_t)1 << 20, &base, 0, &o, err,
                                        sizeof err);
    FUZZ_CHECK(s != INGEST_ENOMEM);
    if (s == INGEST_OK) {
        size_t text = 0;
        for (size_t t = 0; t < o.n; t++) {
            const ingest_profile *p = &o.profiles[t];
            uint64_t total = 0;
            FUZZ_CHECK(ingest_label_get(p, "type") && ingest_label_get(p, "service"));
            text += p->arena_len;
            for (size_t i = 0; i < p->n_stacks; i++) {
                const ingest_stack *st = &p->stacks[i];
                FUZZ_CHECK(st->len > 0 && st->count > 0);
                FUZZ_CHECK(st->frames >= p->arena && st->frames + st->len <= p->arena + p->arena_len);
                FUZZ_CHECK(!memchr(st->frames, '\0', st->len) && !memchr(st->frames, '\n', st->len));
                FUZZ_CHECK(st->frames[0] != ';' && st->frames[st->len - 1] != ';');
                /* sample labels (FRAME_LABEL key=value) first, then real frames */
                size_t depth = 0, labels = 0;
                for (uint32_t k = 0; k < st->len; k++) {
                    if (k == 0 || st->frames[k - 1] == ';') {
                        if (st->frames[k] == '\x1f') {
                            FUZZ_CHECK(depth == 0 && memchr(st->frames + k, '=', st->len - k));
                            labels++;
                        } else {
                            depth++;
                        }
                    }
                    if (st->frames[k] != ';') continue;
                    FUZZ_CHECK(st->frames[k + 1] != ';');
                }
                FUZZ_CHECK(depth >= 1 && depth <= INGEST_MAX_DEPTH && labels <= INGEST_MAX_SAMPLE_LABELS);
                total += st->count;
            }
            FUZZ_CHECK(total == p->total);
        }
        FUZZ_CHECK(text <= (size_t)1 << 20);
        ingest_otlp_free(&o);
    } else {
        FUZZ_CHECK(o.n == 0 && o.profiles == NULL && err[0]);
    }
    ingest_profile_free(&base);
    return 0;
}
