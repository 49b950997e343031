/* fuzz_pprof.c — pprof profile.proto bodies, gzip'd or raw
 * (ingest_pprof_parse), gunzipped to at most 1 MiB.  Every profile
 * returned must hold stacks that ingest.h promises (non-empty frames
 * without NUL, at most INGEST_MAX_DEPTH deep, inside the shared arena),
 * and memory must follow what is kept: a 4 KB input that needs more than
 * the allocation limit (libFuzzer's -malloc_limit_mb, ASan's
 * max_allocation_size_mb in replay) is a crash.  Decoded again with text
 * later (as the server does), the answer must be the same: the same error,
 * or the same stacks whose text, once written, is byte for byte the same,
 * and keys equal only where the text is. */
#include "fuzz.h"

#include "../../ingest/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingest_profile base, *out = NULL;
    size_t n = 0;
    char err[1024] = "";
    ingest_profile_init(&base);
    FUZZ_CHECK(ingest_label_add(&base, "service", "fuzz", err, sizeof err) == INGEST_OK);
    base.from_ms = 1000;
    base.until_ms = 2000;
    base.sample_labels = 1; /* sample labels as pseudo-frames, as the server asks */
    ingest_status s = ingest_pprof_parse(data, size, (size_t)1 << 20, &base, 0, &out, &n, err, sizeof err);
    FUZZ_CHECK(s != INGEST_ENOMEM);
    ingest_profile *later = NULL;
    size_t n_later = 0;
    char err_later[1024] = "";
    base.text_later = 1;
    ingest_status sl = ingest_pprof_parse(data, size, (size_t)1 << 20, &base, 0, &later, &n_later, err_later,
                                          sizeof err_later);
    FUZZ_CHECK(sl == s && strcmp(err, err_later) == 0 && n_later == n);
    if (sl == INGEST_OK) {
        ingest_pprof_write_text(later, n_later, NULL, NULL);
        for (size_t t = 0; t < n; t++) {
            FUZZ_CHECK(later[t].n_stacks == out[t].n_stacks && later[t].total == out[t].total);
            for (size_t i = 0; i < out[t].n_stacks; i++) {
                const ingest_stack *a = &out[t].stacks[i], *b = &later[t].stacks[i];
                FUZZ_CHECK(a->len == b->len && a->count == b->count && !memcmp(a->frames, b->frames, a->len));
                for (size_t j = 0; j < i && j < 256; j++) {
                    const ingest_stack *c = &out[t].stacks[j];
                    if (!memcmp(&later[t].hashes[i], &later[t].hashes[j], sizeof later[t].hashes[i]))
                        FUZZ_CHECK(c->len == a->len && !memcmp(c->frames, a->frames, a->len));
                }
            }
        }
        ingest_pprof_free(later, n_later);
    }
    if (s == INGEST_OK) {
        FUZZ_CHECK(n > 0 && out != NULL);
        const char *arena = out[0].arena;
        for (size_t t = 0; t < n; t++) {
            const ingest_profile *p = &out[t];
            uint64_t total = 0;
            FUZZ_CHECK(ingest_label_get(p, "type") && ingest_label_get(p, "service"));
            for (size_t i = 0; i < p->n_stacks; i++) {
                const ingest_stack *st = &p->stacks[i];
                FUZZ_CHECK(st->len > 0 && st->count > 0);
                FUZZ_CHECK(st->frames >= arena && st->frames + st->len <= arena + out[0].arena_len);
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
        ingest_pprof_free(out, n);
    } else {
        FUZZ_CHECK(out == NULL && n == 0 && err[0]);
    }
    ingest_profile_free(&base);
    return 0;
}
