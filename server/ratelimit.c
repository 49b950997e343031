/* ratelimit.c — `flamedb serve --ingest-rate BYTES --ingest-burst BYTES`:
 * each tenant's pushes are held to a rate of request-body bytes a second
 * (issue 12, point 8), so that one tenant's flood cannot take the writer
 * from the others.  Without --auth every push is of one tenant, and the
 * limit is the server's.
 *
 * A token bucket per tenant: it holds up to `burst` bytes, fills at `rate`
 * bytes a second, and a push takes its body's size from it.  A push is let
 * through when the bucket holds its size, or the whole burst for a body
 * larger than that (the bucket then goes below zero: a body over the burst
 * is not refused for ever, it makes the tenant wait longer after it);
 * otherwise it is answered 429 with Retry-After, the seconds until the
 * bucket holds enough, and nothing of it is read further.  The size is
 * taken before parsing, so a push refused later (400) still counts: the
 * limit is on what a tenant sends.
 *
 * Buckets live in a small table under one mutex (a push takes it once).
 * A "*" token may name any tenant, so the table is bounded: when it is
 * full, buckets that have filled up again (the same as no bucket) make
 * room, and failing that the push goes through unlimited, which is logged. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

#define MAX_BUCKETS 4096

typedef struct {
    char tenant[SRV_TENANT_MAX + 1];
    double tokens;      /* bytes; below zero after a body over the burst */
    int64_t at_ms;      /* when tokens was last brought up to date */
} bucket;

struct srv_ratelimit {
    double rate, burst;  /* bytes a second, bytes */
    pthread_mutex_t lock;
    bucket *b;
    size_t n, cap;
    _Atomic uint64_t limited;
};

srv_ratelimit *srv_ratelimit_new(uint64_t rate, uint64_t burst)
{
    srv_ratelimit *rl = calloc(1, sizeof *rl);
    if (!rl) return NULL;
    rl->rate = (double)rate;
    rl->burst = (double)(burst ? burst : 10 * rate);
    pthread_mutex_init(&rl->lock, NULL);
    return rl;
}

void srv_ratelimit_free(srv_ratelimit *rl)
{
    if (!rl) return;
    pthread_mutex_destroy(&rl->lock);
    free(rl->b);
    free(rl);
}

void srv_ratelimit_limits(const srv_ratelimit *rl, uint64_t *rate, uint64_t *burst)
{
    *rate = (uint64_t)rl->rate;
    *burst = (uint64_t)rl->burst;
}

uint64_t srv_ratelimit_limited(const srv_ratelimit *rl)
{
    return rl ? atomic_load(&rl->limited) : 0;
}

static void refill(const srv_ratelimit *rl, bucket *b, int64_t now)
{
    if (now > b->at_ms) {
        b->tokens = fmin(rl->burst, b->tokens + rl->rate * (double)(now - b->at_ms) / 1000.0);
        b->at_ms = now;
    }
}

/* The bucket of tenant, made full when new; NULL when the table is full of
 * buckets that are not. */
static bucket *find(srv_ratelimit *rl, const char *tenant, int64_t now)
{
    for (size_t i = 0; i < rl->n; i++)
        if (!strcmp(rl->b[i].tenant, tenant)) return &rl->b[i];
    if (rl->n == MAX_BUCKETS) { /* full buckets are the same as none */
        size_t k = 0;
        for (size_t i = 0; i < rl->n; i++) {
            refill(rl, &rl->b[i], now);
            if (rl->b[i].tokens < rl->burst) rl->b[k++] = rl->b[i];
        }
        rl->n = k;
        if (rl->n == MAX_BUCKETS) return NULL;
    }
    if (rl->n == rl->cap) {
        size_t cap = rl->cap ? rl->cap * 2 : 16;
        bucket *nb = realloc(rl->b, cap * sizeof *nb);
        if (!nb) return NULL;
        rl->b = nb;
        rl->cap = cap;
    }
    bucket *b = &rl->b[rl->n++];
    snprintf(b->tenant, sizeof b->tenant, "%s", tenant);
    b->tokens = rl->burst;
    b->at_ms = now;
    return b;
}

int srv_ratelimit_take(srv_ratelimit *rl, const char *tenant, uint64_t bytes, int64_t now_ms, int *retry_after_s)
{
    *retry_after_s = 0;
    if (!rl) return 0;
    pthread_mutex_lock(&rl->lock);
    bucket *b = find(rl, tenant, now_ms);
    int rc = 0;
    if (b) {
        refill(rl, b, now_ms);
        double need = fmin((double)bytes, rl->burst);
        if (b->tokens >= need) {
            b->tokens -= (double)bytes;
        } else {
            double s = ceil((need - b->tokens) / rl->rate);
            *retry_after_s = s < 1 ? 1 : s > 86400 ? 86400 : (int)s;
            atomic_fetch_add(&rl->limited, 1);
            rc = -1;
        }
    }
    pthread_mutex_unlock(&rl->lock);
    if (!b) srv_log("--ingest-rate: more than %d tenants pushing at once; a push of tenant '%s' went unlimited",
                    MAX_BUCKETS, tenant);
    return rc;
}
