/* fuzz_folded.c — folded and lines stack bodies (ingest_parse_stacks, then
 * ingest_profile_finish).  The first byte picks the format (bit 0: lines),
 * located frames (bit 1) and a rate (bit 2: 100 Hz); the rest is the body.
 * Every accepted stack must be what ingest.h promises: non-empty frames
 * without NUL or newline, valid UTF-8, at most INGEST_MAX_DEPTH deep, the
 * counts adding up to the total. */
#include "fuzz.h"

#include "../../ingest/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t mode = data[0];
    char *body = malloc(size - 1 ? size - 1 : 1);
    if (!body) return 0;
    memcpy(body, data + 1, size - 1);
    ingest_profile p;
    char err[512] = "";
    ingest_profile_init(&p);
    FUZZ_CHECK(ingest_label_add(&p, "service", "fuzz", err, sizeof err) == INGEST_OK);
    p.located_frames = (mode & 2) != 0;
    p.from_ms = 1000;
    p.until_ms = 2000;
    if (mode & 4) p.rate = 100;
    ingest_format fmt = (mode & 1) ? INGEST_FORMAT_LINES : INGEST_FORMAT_FOLDED;
    ingest_status s = ingest_parse_stacks(&p, fmt, body, size - 1, err, sizeof err);
    if (s == INGEST_OK) {
        uint64_t total = 0;
        for (size_t i = 0; i < p.n_stacks; i++) {
            const ingest_stack *st = &p.stacks[i];
            FUZZ_CHECK(st->len > 0 && st->count > 0);
            FUZZ_CHECK(st->frames >= body && st->frames + st->len <= body + size - 1);
            FUZZ_CHECK(!memchr(st->frames, '\0', st->len) && !memchr(st->frames, '\n', st->len));
            FUZZ_CHECK(utf8_valid(st->frames, st->len));
            FUZZ_CHECK(st->frames[0] != ';' && st->frames[st->len - 1] != ';');
            size_t depth = 1;
            for (uint32_t k = 0; k < st->len; k++) {
                if (st->frames[k] != ';') continue;
                FUZZ_CHECK(st->frames[k + 1] != ';');
                depth++;
            }
            FUZZ_CHECK(depth <= INGEST_MAX_DEPTH);
            total += st->count;
        }
        FUZZ_CHECK(total == p.total && total <= INGEST_MAX_VALUE);
        ingest_profile_finish(&p, err, sizeof err);
    } else {
        FUZZ_CHECK(p.n_stacks == 0 && err[0]);
    }
    ingest_profile_free(&p);
    free(body);
    return 0;
}
