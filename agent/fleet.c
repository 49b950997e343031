/* fleet.c — fleet control, the agent's side (issue 13, point 5).
 *
 * As in Google-Wide Profiling, the server knows its agents and bounds the
 * fleet's cost: only a fraction of the agents (flamedb serve --fleet-duty)
 * samples at any moment, chosen at random and rotating so that every agent
 * is covered within a bounded time (server/agents.c).  The agent registers
 * with its first heartbeat (POST /api/v1/agents/heartbeat: its id, labels,
 * version, state, frequency, own CPU and RSS, samples, pushes, failures,
 * last error) and sends one at every interval; the answer is its plan: the
 * current period's step (sample or not, at what rate at most) and the next
 * one, in the server's clock, shifted here into the agent's clock by the
 * difference of the two at the answer.  With the next step known, an agent
 * turns on or off at the boundary even when its heartbeat comes later.
 *
 * No plan (the server never answered, or answers no more: past the last
 * step with the heartbeats failing; a plan that ran out while they are
 * answered is asked for again first) is today's behaviour: the agent
 * samples as configured and spools what it cannot push.  FDA adapts the
 * frequency within the plan's rate.  Every time here is CLOCK_REALTIME
 * (agent_wall_sec), the server's clock; time(2) may read a coarse one.
 *
 * An agent whose pushes keep failing while the server still answers its
 * heartbeats (e.g. every push refused) stops sampling and says so in its
 * heartbeat and its log: at least AGENT_FLEET_MIN_ATTEMPTS push attempts
 * in the last AGENT_FLEET_WINDOW intervals, AGENT_FLEET_FAIL_SHARE of them
 * failed.  After AGENT_FLEET_COOLOFF intervals it tries again.
 *
 * Pure but for agent_fleet_self_usage (getrusage, /proc/self/statm); the
 * HTTP exchange is main.c's, over push.c.
 */
#include "fleet.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- the plan ---- */

/* The text after "key": in a flat JSON object, or NULL. */
static const char *json_field(const char *json, size_t len, const char *key)
{
    size_t kl = strlen(key);
    const char *end = json + len;
    for (const char *p = json; p + kl + 2 < end; p++) {
        if (*p != '"' || strncmp(p + 1, key, kl) || p[kl + 1] != '"') continue;
        const char *q = p + kl + 2;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) q++;
        if (q >= end || *q != ':') continue;
        q++;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) q++;
        return q < end ? q : NULL;
    }
    return NULL;
}

static int json_number(const char *json, size_t len, const char *key, double *out)
{
    const char *v = json_field(json, len, key);
    if (!v) return -1;
    char buf[64];
    size_t n = 0;
    while (v + n < json + len && n < sizeof buf - 1 && strchr("0123456789+-.eE", v[n])) n++;
    if (n == 0) return -1;
    memcpy(buf, v, n);
    buf[n] = 0;
    char *e;
    *out = strtod(buf, &e);
    return *e ? -1 : 0;
}

static int json_bool(const char *json, size_t len, const char *key, int *out)
{
    const char *v = json_field(json, len, key);
    size_t left = v ? (size_t)(json + len - v) : 0;
    if (v && left >= 4 && !strncmp(v, "true", 4)) { *out = 1; return 0; }
    if (v && left >= 5 && !strncmp(v, "false", 5)) { *out = 0; return 0; }
    return -1;
}

int agent_fleet_plan_parse(const char *json, size_t len, agent_fleet_plan *out,
                           char *err, size_t errlen)
{
    static const char *const nums[] = { "now", "period", "duty", "from", "until", "rate", "next_until" };
    double v[7];
    int s0, s1;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 7; i++)
        if (json_number(json, len, nums[i], &v[i]) < 0) {
            snprintf(err, errlen, "heartbeat answer: no number \"%s\"", nums[i]);
            return -1;
        }
    if (json_bool(json, len, "sample", &s0) < 0 || json_bool(json, len, "next_sample", &s1) < 0) {
        snprintf(err, errlen, "heartbeat answer: no \"sample\" or \"next_sample\" (true or false)");
        return -1;
    }
    if (!(v[1] >= 1) || !(v[3] <= v[0] + 1) || !(v[3] < v[4]) || !(v[4] < v[6]) || !(v[5] >= 0) ||
        !(v[2] >= 0 && v[2] <= 1)) {
        snprintf(err, errlen, "heartbeat answer: inconsistent plan (period %g, from %g, until %g, next_until %g)",
                 v[1], v[3], v[4], v[6]);
        return -1;
    }
    out->now = v[0];
    out->period = (int64_t)v[1];
    out->duty = v[2];
    out->step[0] = (agent_fleet_step){ s0, (int64_t)v[3], (int64_t)v[4], v[5] };
    out->step[1] = (agent_fleet_step){ s1, (int64_t)v[4], (int64_t)v[6], v[5] };
    return 0;
}

void agent_fleet_set_plan(agent_fleet *f, const agent_fleet_plan *plan, double sent, double received)
{
    /* The server's `now` was read somewhere between sent and received: the
     * clocks differ by at least the distance from that span, and by nothing
     * when it holds `now` (one machine, or clocks in step, however slow the
     * answer: a slow answer alone must not move the plan's seconds). */
    double off = plan->now < sent ? sent - plan->now : plan->now > received ? received - plan->now : 0;
    int64_t shift = (int64_t)llround(off);
    /* The seconds before the new plan's first step: what the plan before
     * said of them; without one, every agent samples only at duty 1.  An
     * agent whose clock is behind the server's by less than the rounding
     * (or one that read a coarse clock a tick late) is there when the
     * answer names a step that has just begun: taking the step's word then
     * started its turn in the period before, beside that period's own
     * agents. */
    double r;
    int64_t before = plan->step[0].from + shift - 1;
    agent_fleet_state was = f->have_plan && !f->ceased ? agent_fleet_state_at(f, before, &r) : AGENT_FLEET_UNMANAGED;
    f->before_sample = was == AGENT_FLEET_UNMANAGED ? plan->duty >= 1 : was == AGENT_FLEET_SAMPLING;
    f->plan = *plan;
    f->plan.now = received;
    for (int k = 0; k < 2; k++) {
        f->plan.step[k].from += shift;
        f->plan.step[k].until += shift;
    }
    f->have_plan = 1;
}

agent_fleet_state agent_fleet_state_at(const agent_fleet *f, int64_t now, double *rate)
{
    *rate = 0;
    if (f->ceased) return AGENT_FLEET_CEASED;
    if (!f->have_plan) return AGENT_FLEET_UNMANAGED;
    for (int k = 0; k < 2; k++) {
        const agent_fleet_step *s = &f->plan.step[k];
        if (now >= s->from && now < s->until) {
            *rate = s->rate;
            return s->sample ? AGENT_FLEET_SAMPLING : AGENT_FLEET_IDLE;
        }
    }
    /* before the first step (a clock behind, or stepped back): the word
     * of the plan before for that second (agent_fleet_set_plan) */
    if (now < f->plan.step[0].from) {
        *rate = f->plan.step[0].rate;
        return f->before_sample ? AGENT_FLEET_SAMPLING : AGENT_FLEET_IDLE;
    }
    return AGENT_FLEET_UNMANAGED;   /* the plan ran out: the server is silent */
}

int64_t agent_fleet_next_change(const agent_fleet *f, int64_t now)
{
    if (!f->have_plan || f->ceased) return INT64_MAX;
    for (int k = 0; k < 2; k++)
        if (now < f->plan.step[k].until) return f->plan.step[k].until;
    return INT64_MAX;
}

int64_t agent_fleet_window_end(const agent_fleet *f, int64_t from, int64_t now)
{
    int64_t boundary = agent_fleet_next_change(f, from);
    int64_t until = now < boundary ? now : boundary;
    return until > from ? until : from + 1;
}

int agent_fleet_interval(agent_fleet *f, uint64_t attempts, uint64_t failures)
{
    if (f->ceased) {
        if (--f->ceased > 0) return 0;
        memset(f->attempts, 0, sizeof f->attempts);   /* a fresh start */
        memset(f->failures, 0, sizeof f->failures);
        f->why[0] = 0;
        return -1;
    }
    f->attempts[f->slot] = (uint32_t)(attempts > UINT32_MAX ? UINT32_MAX : attempts);
    f->failures[f->slot] = (uint32_t)(failures > attempts ? f->attempts[f->slot] :
                                      failures > UINT32_MAX ? UINT32_MAX : failures);
    f->slot = (f->slot + 1) % AGENT_FLEET_WINDOW;
    uint64_t a = 0, fl = 0;
    for (int i = 0; i < AGENT_FLEET_WINDOW; i++) { a += f->attempts[i]; fl += f->failures[i]; }
    if (a >= AGENT_FLEET_MIN_ATTEMPTS && (double)fl >= AGENT_FLEET_FAIL_SHARE * (double)a) {
        f->ceased = AGENT_FLEET_COOLOFF;
        if (f->last_error[0])
            snprintf(f->why, sizeof f->why, "%" PRIu64 " of the last %" PRIu64 " pushes failed (%.200s)",
                     fl, a, f->last_error);
        else snprintf(f->why, sizeof f->why, "%" PRIu64 " of the last %" PRIu64 " pushes failed", fl, a);
        return 1;
    }
    return 0;
}

const char *agent_fleet_state_name(agent_fleet_state s)
{
    switch (s) {
    case AGENT_FLEET_SAMPLING: return "sampling";
    case AGENT_FLEET_IDLE: return "idle";
    case AGENT_FLEET_CEASED: return "ceased";
    default: return "unmanaged";
    }
}

/* ---- the report ---- */

typedef struct { char *p; size_t n, cap; int bad; } sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->bad) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->bad = 1; return; }
        b->p = p; b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) { b->bad = 1; return; }
    sb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string; bytes that are not printable ASCII are escaped or, above
 * 0x7f, kept (labels and errors are UTF-8 already). */
static void sb_str(sbuf *b, const char *s)
{
    sb_add(b, "\"", 1);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { char e[2] = { '\\', (char)c }; sb_add(b, e, 2); }
        else if (c < 0x20) sb_printf(b, "\\u%04x", c);
        else sb_add(b, s, 1);
    }
    sb_add(b, "\"", 1);
}

char *agent_fleet_report_json(const agent_fleet_report *r, size_t *len)
{
    sbuf b = { 0 };
    sb_add(&b, "{\"id\":", 6);
    sb_str(&b, r->id);
    sb_add(&b, ",\"version\":", 11);
    sb_str(&b, r->version);
    sb_add(&b, ",\"labels\":{", 11);
    for (int i = 0; r->labels && i < r->labels->n; i++) {
        if (i) sb_add(&b, ",", 1);
        sb_str(&b, r->labels->name[i]);
        sb_add(&b, ":", 1);
        sb_str(&b, r->labels->value[i]);
    }
    sb_add(&b, "},\"state\":", 10);
    sb_str(&b, agent_fleet_state_name(r->state));
    sb_printf(&b, ",\"sampling\":%s,\"frequency\":%.6g,\"cpu_seconds\":%.6f,\"rss_bytes\":%" PRIu64,
              r->state == AGENT_FLEET_SAMPLING || r->state == AGENT_FLEET_UNMANAGED ? "true" : "false",
              r->frequency, r->cpu_seconds, r->rss_bytes);
    sb_printf(&b, ",\"samples\":%" PRIu64 ",\"profiles_pushed\":%" PRIu64 ",\"push_failures\":%" PRIu64
                  ",\"spool_waiting\":%" PRIu64, r->samples, r->profiles_pushed, r->push_failures,
              r->spool_waiting);
    sb_printf(&b, ",\"started\":%" PRId64 ",\"last_push\":%" PRId64 ",\"last_error\":", r->started, r->last_push);
    sb_str(&b, r->last_error ? r->last_error : "");
    sb_add(&b, "}", 1);
    if (b.bad) { free(b.p); return NULL; }
    if (len) *len = b.n;
    return b.p;
}

void agent_fleet_self_usage(double *cpu_seconds, uint64_t *rss_bytes)
{
    struct rusage ru;
    *cpu_seconds = 0;
    *rss_bytes = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        *cpu_seconds = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size, resident;
    if (f && fscanf(f, "%llu %llu", &size, &resident) == 2)
        *rss_bytes = (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
    if (f) fclose(f);
}
