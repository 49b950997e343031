/* chencode.c — profiles as ClickHouse rows; see chencode.h. */
#include "chencode.h"

#include <string.h>
#include <xxhash.h>

const char *const chencode_table_names[CHT_N] = { "samples", "profiles", "stacks", "series", "labels" };

void chencode_batch_init(chencode_batch *b)
{
    memset(b, 0, sizeof *b);
    for (int i = 0; i < CHT_N; i++) chrow_buf_init(&b->t[i]);
}

void chencode_batch_reset(chencode_batch *b)
{
    for (int i = 0; i < CHT_N; i++) chrow_buf_reset(&b->t[i]);
    b->profiles = b->samples_rows = 0;
}

void chencode_batch_free(chencode_batch *b)
{
    for (int i = 0; i < CHT_N; i++) chrow_buf_free(&b->t[i]);
}

uint64_t chencode_series_id(const store_label *labels, int n)
{
    XXH3_state_t *s = XXH3_createState();
    if (!s) return 0;
    XXH3_128bits_reset(s);
    for (int i = 0; i < n; i++) {
        XXH3_128bits_update(s, labels[i].name, strlen(labels[i].name) + 1);
        XXH3_128bits_update(s, labels[i].value, strlen(labels[i].value) + 1);
    }
    XXH128_hash_t h = XXH3_128bits_digest(s);
    XXH3_freeState(s);
    return h.low64;
}

void chencode_stack_id(const char *frames, size_t len, uint8_t out[16])
{
    XXH128_hash_t h = XXH3_128bits(frames, len);
    XXH128_canonicalFromHash((XXH128_canonical_t *)out, h);
}

/* The columns samples and profiles rows begin with: tenant, series,
 * window_start, window_ms, unit, rate, gauge. */
static void put_window(chrow_buf *b, const char *tenant, size_t tl, uint64_t series, const store_profile *p,
                       uint32_t window, size_t ul)
{
    chrow_put_string(b, tenant, tl);
    chrow_put_u64(b, series);
    chrow_put_i64(b, p->from_ms);
    chrow_put_u32(b, window);
    chrow_put_string(b, p->unit, ul);
    chrow_put_f64(b, p->rate);
    chrow_put_u8(b, (uint8_t)(p->gauge != 0));
}

int chencode_profile(chencode_batch *b, const char *tenant, const store_profile *p, int64_t now_ms, uint64_t batch)
{
    size_t tl = strlen(tenant);
    uint64_t series = chencode_series_id(p->labels, p->n_labels);
    uint32_t window = (uint32_t)(p->until_ms - p->from_ms);
    size_t ul = strlen(p->unit);
    uint64_t total = 0;
    chrow_buf *sm = &b->t[CHT_SAMPLES], *st = &b->t[CHT_STACKS];
    for (size_t i = 0; i < p->n_stacks; i++) {
        uint8_t id[16];
        chencode_stack_id(p->stacks[i].frames, p->stacks[i].len, id);
        put_window(sm, tenant, tl, series, p, window, ul);
        chrow_put_fixed(sm, id, sizeof id);
        chrow_put_u64(sm, p->stacks[i].count);
        chrow_put_u64(sm, batch);
        if (!b->stack_sent || !b->stack_sent(b->stack_sent_ctx, id)) {
            chrow_put_fixed(st, id, sizeof id);
            chrow_put_string(st, p->stacks[i].frames, p->stacks[i].len);
        }
        total += p->stacks[i].count;   /* ingest bounds totals below 2^63 */
    }
    chrow_buf *pr = &b->t[CHT_PROFILES];
    uint64_t samples = p->samples_kind == STORE_SAMPLES_GIVEN ? p->samples
                       : p->samples_kind == STORE_SAMPLES_COUNTS ? total : 0;
    put_window(pr, tenant, tl, series, p, window, ul);
    chrow_put_u64(pr, samples);
    chrow_put_u8(pr, (uint8_t)(p->samples_kind != STORE_SAMPLES_UNKNOWN));
    chrow_put_u32(pr, (uint32_t)p->n_stacks);
    chrow_put_u64(pr, total);
    chrow_put_u64(pr, batch);
    chrow_buf *se = &b->t[CHT_SERIES], *lb = &b->t[CHT_LABELS];
    chrow_put_string(se, tenant, tl);
    chrow_put_u64(se, series);
    chrow_put_array_len(se, (uint64_t)p->n_labels);
    for (int i = 0; i < p->n_labels; i++) chrow_put_string(se, p->labels[i].name, strlen(p->labels[i].name));
    chrow_put_array_len(se, (uint64_t)p->n_labels);
    for (int i = 0; i < p->n_labels; i++) chrow_put_string(se, p->labels[i].value, strlen(p->labels[i].value));
    chrow_put_i64(se, now_ms);
    for (int i = 0; i < p->n_labels; i++) {
        chrow_put_string(lb, tenant, tl);
        chrow_put_string(lb, p->labels[i].name, strlen(p->labels[i].name));
        chrow_put_string(lb, p->labels[i].value, strlen(p->labels[i].value));
        chrow_put_u64(lb, series);
    }
    b->profiles++;
    b->samples_rows += p->n_stacks;
    for (int i = 0; i < CHT_N; i++)
        if (chrow_buf_failed(&b->t[i])) return -1;
    return 0;
}

int chencode_record(const chencode_batch *b, chrow_buf *out)
{
    for (int i = 0; i < CHT_N; i++) {
        chrow_put_u64(out, (uint64_t)b->t[i].len);
        chrow_put_fixed(out, b->t[i].data, b->t[i].len);
    }
    return chrow_buf_failed(out) ? -1 : 0;
}

int chencode_record_tables(const void *rec, size_t len, const uint8_t *part[CHT_N], size_t part_len[CHT_N])
{
    const uint8_t *p = rec, *end = p + len;
    for (int i = 0; i < CHT_N; i++) {
        if (end - p < 8) return -1;
        uint64_t n = 0;
        for (int k = 7; k >= 0; k--) n = n << 8 | p[k];   /* little-endian, as chrow writes it */
        p += 8;
        if (n > (uint64_t)(end - p)) return -1;
        part[i] = p;
        part_len[i] = (size_t)n;
        p += n;
    }
    return p == end ? 0 : -1;
}
