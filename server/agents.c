/* agents.c — fleet control, the server's side (issue 13, point 5):
 * POST /api/v1/agents/heartbeat and GET /api/v1/agents.
 *
 * As in Google-Wide Profiling, the server keeps a machine database of its
 * agents and bounds the fleet's cost: at any moment only a fraction of the
 * agents samples (flamedb serve --fleet-duty F), chosen at random and
 * rotating so that every agent is covered within a bounded time.
 *
 * The registry is in memory only: it is rebuilt from the heartbeats within
 * one period after a restart (agents heartbeat every interval, at least
 * twice a period), so nothing of it is stored.  It is bounded: at most
 * SRV_FLEET_CAP agents (a heartbeat beyond that is answered 503 and the
 * agent samples as configured), and an agent not seen for
 * SRV_FLEET_EXPIRE_PERIODS periods (at least SRV_FLEET_EXPIRE_MIN_MS) is
 * forgotten.  An agent is known by its id and tenant.
 *
 * The plan.  Time is cut in periods of --fleet-period (unix time / period).
 * When a period begins the server picks the agents that sample in the
 * NEXT one: m = ceil(F x agents) of them, those that sampled longest ago
 * first (never before: first of all), ties in a random order drawn anew
 * each time an agent is picked; agents that said they ceased (their pushes
 * keep failing) go last.  So with a steady fleet of n agents each one
 * samples once every ceil(n / m) periods, and at most m sample in any
 * period.  An agent that registers mid-period joins the next period's
 * choice while it holds fewer than ceil(F x agents).  A heartbeat answers
 * the agent's step in the current period and in the next one (unix
 * seconds of the server's clock): an agent turns on or off at the
 * boundary even when its next heartbeat comes after it.  --fleet-rate HZ
 * (0: the agent's own frequency) goes with every step; FDA adapts below
 * it.  F = 1 (the default) plans every agent in every period: the agents
 * are listed but sample as before.
 *
 * One mutex guards the registry: a heartbeat is a few microseconds of
 * work, and choosing a period's agents is a sort of the fleet once a
 * period.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "srv.h"

#define SRV_FLEET_ID_MAX 128
#define SRV_FLEET_TEXT_MAX 512

typedef struct {
    char id[SRV_FLEET_ID_MAX + 1];
    char tenant[SRV_TENANT_MAX + 1];
    json_t *labels;                 /* object of strings */
    char version[65], state[17];
    char last_error[SRV_FLEET_TEXT_MAX + 1];
    double frequency, cpu_seconds;
    uint64_t rss, samples, pushed, failures, spool;
    int64_t started, last_push;     /* as the agent says, unix s */
    int64_t first_seen_ms, last_seen_ms;
    uint64_t heartbeats;
    int64_t last_planned;           /* the last period it was picked for; -1 never */
    uint64_t periods_planned;
    int plan_cur, plan_next;        /* picked for the current, the next period */
    uint64_t order;                 /* random tie-break */
} fleet_agent;

struct srv_fleet {
    pthread_mutex_t mu;
    double duty, rate;
    int64_t period_ms;
    fleet_agent *v;
    size_t n, cap;                  /* agents, room */
    int64_t period;                 /* the current period's index; -1 none yet */
    uint64_t rng;
    uint64_t refused, expired;
};

static uint64_t rnd(srv_fleet *f)
{
    /* xorshift64*: the order of agents, not a secret */
    f->rng ^= f->rng >> 12;
    f->rng ^= f->rng << 25;
    f->rng ^= f->rng >> 27;
    return f->rng * 0x2545F4914F6CDD1DULL;
}

srv_fleet *srv_fleet_new(double duty, int64_t period_ms, double rate)
{
    srv_fleet *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    pthread_mutex_init(&f->mu, NULL);
    f->duty = duty;
    f->period_ms = period_ms;
    f->rate = rate;
    f->period = -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    f->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ 0x9E3779B97F4A7C15ULL;
    return f;
}

void srv_fleet_free(srv_fleet *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->n; i++) json_decref(f->v[i].labels);
    free(f->v);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* The agents a period samples: m of n. */
static size_t fleet_quota(const srv_fleet *f, size_t n)
{
    if (f->duty >= 1) return n;
    size_t m = (size_t)ceil(f->duty * (double)n - 1e-9);
    return m < 1 && n > 0 ? 1 : m;
}

static int64_t expire_ms(const srv_fleet *f)
{
    int64_t e = SRV_FLEET_EXPIRE_PERIODS * f->period_ms;
    return e < SRV_FLEET_EXPIRE_MIN_MS ? SRV_FLEET_EXPIRE_MIN_MS : e;
}

static fleet_agent *g_sort_base;

static int pick_cmp(const void *a, const void *b)
{
    const fleet_agent *x = &g_sort_base[*(const size_t *)a], *y = &g_sort_base[*(const size_t *)b];
    int cx = !strcmp(x->state, "ceased"), cy = !strcmp(y->state, "ceased");
    if (cx != cy) return cx - cy;
    if (x->last_planned != y->last_planned) return x->last_planned < y->last_planned ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Picks the agents of period k (plan_next), least recently picked first. */
static void fleet_pick(srv_fleet *f, int64_t k)
{
    for (size_t i = 0; i < f->n; i++) f->v[i].plan_next = 0;
    size_t m = fleet_quota(f, f->n);
    if (m == 0) return;
    size_t *idx = malloc(f->n * sizeof *idx);
    if (!idx) {                     /* out of memory: the first m */
        for (size_t i = 0; i < m; i++) f->v[i].plan_next = 1;
        return;
    }
    for (size_t i = 0; i < f->n; i++) idx[i] = i;
    g_sort_base = f->v;             /* under f->mu; one fleet per server */
    qsort(idx, f->n, sizeof *idx, pick_cmp);
    for (size_t i = 0; i < m; i++) {
        fleet_agent *a = &f->v[idx[i]];
        a->plan_next = 1;
        a->last_planned = k;
        a->periods_planned++;
        a->order = rnd(f);
    }
    free(idx);
}

/* Brings the registry to the period of now: forgets agents not seen for
 * long, moves the next period's choice to the current one (or, after a
 * gap, picks the current one afresh) and picks the next. */
static void fleet_advance(srv_fleet *f, int64_t now_ms)
{
    int64_t k = now_ms / f->period_ms;
    if (k == f->period) return;
    int64_t old = now_ms - expire_ms(f);
    for (size_t i = 0; i < f->n;) {
        if (f->v[i].last_seen_ms < old) {
            json_decref(f->v[i].labels);
            f->v[i] = f->v[--f->n];
            f->expired++;
        } else i++;
    }
    if (f->period < 0 || k != f->period + 1) fleet_pick(f, k);   /* the current period, afresh */
    for (size_t i = 0; i < f->n; i++) f->v[i].plan_cur = f->v[i].plan_next;
    fleet_pick(f, k + 1);
    f->period = k;
}

static void copy_text(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

/* A heartbeat's fields, validated before anything is changed. */
typedef struct {
    const char *id, *version, *state, *last_error;
    json_t *labels;
    double frequency, cpu_seconds;
    json_int_t rss, samples, pushed, failures, spool, started, last_push;
} beat;

static int id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SRV_FLEET_ID_MAX) return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || *s == 0x7f) return 0;
    return 1;
}

/* 0, or -1 with err naming the field. */
static int beat_parse(json_t *j, beat *b, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    if (!json_is_object(j)) { snprintf(err, errlen, "the body must be a JSON object"); return -1; }
    json_t *v = json_object_get(j, "id");
    if (!json_is_string(v) || !id_ok(json_string_value(v))) {
        snprintf(err, errlen, "field 'id': expected a string of 1 to %d printable characters without blanks",
                 SRV_FLEET_ID_MAX);
        return -1;
    }
    b->id = json_string_value(v);
    static const char *const texts[] = { "version", "state", "last_error" };
    const char **tdst[] = { &b->version, &b->state, &b->last_error };
    for (int i = 0; i < 3; i++) {
        v = json_object_get(j, texts[i]);
        if (v && !json_is_string(v)) { snprintf(err, errlen, "field '%s': expected a string", texts[i]); return -1; }
        *tdst[i] = v ? json_string_value(v) : "";
    }
    if (b->state[0] && strcmp(b->state, "sampling") && strcmp(b->state, "idle") && strcmp(b->state, "ceased") &&
        strcmp(b->state, "unmanaged")) {
        snprintf(err, errlen, "field 'state': expected sampling, idle, ceased or unmanaged");
        return -1;
    }
    v = json_object_get(j, "labels");
    if (v) {
        const char *k;
        json_t *lv;
        if (!json_is_object(v) || json_object_size(v) > 64) {
            snprintf(err, errlen, "field 'labels': expected an object of at most 64 string values");
            return -1;
        }
        json_object_foreach(v, k, lv) {
            if (!json_is_string(lv) || strlen(k) > 128 || strlen(json_string_value(lv)) > 1024) {
                snprintf(err, errlen, "field 'labels': '%.64s' must be a string (names up to 128 bytes, values 1024)", k);
                return -1;
            }
        }
        b->labels = v;
    }
    static const char *const reals[] = { "frequency", "cpu_seconds" };
    double *rdst[] = { &b->frequency, &b->cpu_seconds };
    for (int i = 0; i < 2; i++) {
        v = json_object_get(j, reals[i]);
        if (v && (!json_is_number(v) || json_number_value(v) < 0)) {
            snprintf(err, errlen, "field '%s': expected a number >= 0", reals[i]);
            return -1;
        }
        *rdst[i] = v ? json_number_value(v) : 0;
    }
    static const char *const ints[] = { "rss_bytes", "samples", "profiles_pushed", "push_failures",
                                        "spool_waiting", "started", "last_push" };
    json_int_t *idst[] = { &b->rss, &b->samples, &b->pushed, &b->failures, &b->spool, &b->started, &b->last_push };
    for (int i = 0; i < 7; i++) {
        v = json_object_get(j, ints[i]);
        if (v && (!json_is_integer(v) || json_integer_value(v) < 0)) {
            snprintf(err, errlen, "field '%s': expected an integer >= 0", ints[i]);
            return -1;
        }
        *idst[i] = v ? json_integer_value(v) : 0;
    }
    return 0;
}

enum MHD_Result srv_handle_agent_heartbeat(srv_request *rq)
{
    srv_fleet *f = rq->srv->fleet;
    if (!f) return srv_reply_error(rq, 404, "fleet control is off on this server");
    json_error_t jerr;
    json_t *j = json_loadb(rq->body ? rq->body : "", rq->body_len, 0, &jerr);
    if (!j) return srv_reply_error(rq, 400, "body: not JSON (line %d: %s)", jerr.line, jerr.text);
    beat b;
    char err[300];
    if (beat_parse(j, &b, err, sizeof err) < 0) {
        json_decref(j);
        return srv_reply_error(rq, 400, "%s", err);
    }
    const char *tenant = srv_tenant_value(rq);
    int64_t now_ms = srv_now_ms();
    pthread_mutex_lock(&f->mu);
    fleet_advance(f, now_ms);
    fleet_agent *a = NULL;
    for (size_t i = 0; i < f->n && !a; i++)
        if (!strcmp(f->v[i].id, b.id) && !strcmp(f->v[i].tenant, tenant ? tenant : "")) a = &f->v[i];
    if (!a) {
        if (f->n == f->cap && f->n < SRV_FLEET_CAP) {
            size_t cap = f->cap ? 2 * f->cap : 64;
            fleet_agent *v = realloc(f->v, cap * sizeof *v);
            if (v) { f->v = v; f->cap = cap; }
        }
        if (f->n >= f->cap) {
            f->refused++;
            pthread_mutex_unlock(&f->mu);
            json_decref(j);
            rq->retry_after = (int)(f->period_ms / 1000);
            return srv_reply_error(rq, 503, "the fleet registry is full (%d agents): agent '%s' samples as configured",
                                   SRV_FLEET_CAP, b.id);
        }
        a = &f->v[f->n++];
        memset(a, 0, sizeof *a);
        copy_text(a->id, sizeof a->id, b.id);
        copy_text(a->tenant, sizeof a->tenant, tenant);
        a->first_seen_ms = now_ms;
        a->last_planned = -1;
        a->order = rnd(f);
        /* it joins the current period's choice while that holds fewer than
         * its share, else the next one's likewise, else it waits its turn */
        size_t cur = 0, next = 0, m = fleet_quota(f, f->n);
        for (size_t i = 0; i < f->n; i++) { cur += (size_t)f->v[i].plan_cur; next += (size_t)f->v[i].plan_next; }
        if (cur < m) {
            a->plan_cur = 1;
            a->last_planned = f->period;
            a->periods_planned++;
        }
        if (next < m && (!a->plan_cur || f->duty >= 1)) {
            a->plan_next = 1;
            a->last_planned = f->period + 1;
            a->periods_planned++;
        }
    }
    json_decref(a->labels);
    a->labels = b.labels ? json_deep_copy(b.labels) : json_object();
    copy_text(a->version, sizeof a->version, b.version);
    copy_text(a->state, sizeof a->state, b.state);
    copy_text(a->last_error, sizeof a->last_error, b.last_error);
    a->frequency = b.frequency;
    a->cpu_seconds = b.cpu_seconds;
    a->rss = (uint64_t)b.rss;
    a->samples = (uint64_t)b.samples;
    a->pushed = (uint64_t)b.pushed;
    a->failures = (uint64_t)b.failures;
    a->spool = (uint64_t)b.spool;
    a->started = b.started;
    a->last_push = b.last_push;
    a->last_seen_ms = now_ms;
    a->heartbeats++;
    int64_t k = f->period, p = f->period_ms / 1000;
    json_t *ans = json_pack("{s:s, s:f, s:I, s:f, s:b, s:I, s:I, s:f, s:b, s:I}",
                            "agent", a->id, "now", (double)now_ms / 1000.0, "period", (json_int_t)p,
                            "duty", f->duty, "sample", a->plan_cur, "from", (json_int_t)(k * p),
                            "until", (json_int_t)((k + 1) * p), "rate", f->rate, "next_sample", a->plan_next,
                            "next_until", (json_int_t)((k + 2) * p));
    pthread_mutex_unlock(&f->mu);
    json_decref(j);
    if (!ans) return srv_reply_error(rq, 500, "out of memory");
    return srv_reply_json(rq, 200, ans);
}

void srv_fleet_each(srv_fleet *f, void (*fn)(void *ctx, const char *tenant), void *ctx)
{
    pthread_mutex_lock(&f->mu);
    fleet_advance(f, srv_now_ms());
    for (size_t i = 0; i < f->n; i++) fn(ctx, f->v[i].tenant);
    pthread_mutex_unlock(&f->mu);
}

enum MHD_Result srv_handle_agents(srv_request *rq)
{
    srv_fleet *f = rq->srv->fleet;
    if (!f) return srv_reply_error(rq, 404, "fleet control is off on this server");
    const char *tenant = srv_tenant_value(rq);
    int64_t now_ms = srv_now_ms();
    json_t *list = json_array();
    size_t sampling = 0, shown = 0;
    pthread_mutex_lock(&f->mu);
    fleet_advance(f, now_ms);
    int64_t p = f->period_ms / 1000;
    for (size_t i = 0; i < f->n; i++) {
        fleet_agent *a = &f->v[i];
        if (strcmp(a->tenant, tenant ? tenant : "")) continue;
        shown++;
        sampling += (size_t)a->plan_cur;
        json_t *o = json_pack("{s:s, s:O, s:s, s:s, s:b, s:b, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:f, s:s, s:I}",
                              "id", a->id, "labels", a->labels, "version", a->version,
                              "state", a->state[0] ? a->state : "unknown",
                              "sampling", a->plan_cur, "next_sampling", a->plan_next,
                              "first_seen", (json_int_t)(a->first_seen_ms / 1000),
                              "last_seen", (json_int_t)(a->last_seen_ms / 1000),
                              "last_push", (json_int_t)a->last_push,
                              "seen_ago_s", (double)(now_ms - a->last_seen_ms) / 1000.0,
                              "samples", (json_int_t)a->samples, "profiles_pushed", (json_int_t)a->pushed,
                              "push_failures", (json_int_t)a->failures, "spool_waiting", (json_int_t)a->spool,
                              "rss_bytes", (json_int_t)a->rss, "cpu_seconds", a->cpu_seconds,
                              "started", (json_int_t)a->started, "frequency", a->frequency,
                              "last_error", a->last_error, "heartbeats", (json_int_t)a->heartbeats);
        if (o) {
            json_object_set_new(o, "last_planned", a->last_planned >= 0 ? json_integer(a->last_planned * p) : json_null());
            json_object_set_new(o, "periods_planned", json_integer((json_int_t)a->periods_planned));
            json_array_append_new(list, o);
        }
    }
    json_t *fleet = json_pack("{s:f, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                              "duty", f->duty, "period", (json_int_t)p, "rate", f->rate,
                              "agents", (json_int_t)shown, "sampling", (json_int_t)sampling,
                              "period_from", (json_int_t)(f->period * p), "cap", (json_int_t)SRV_FLEET_CAP,
                              "expire_s", (json_int_t)(expire_ms(f) / 1000), "refused", (json_int_t)f->refused,
                              "expired", (json_int_t)f->expired);
    pthread_mutex_unlock(&f->mu);
    if (!list || !fleet) {
        json_decref(list);
        json_decref(fleet);
        return srv_reply_error(rq, 500, "out of memory");
    }
    return srv_reply_json(rq, 200, json_pack("{s:o, s:o}", "fleet", fleet, "agents", list));
}
