/* fleet.h — fleet control, the agent's side: heartbeats and the server's
 * plan (fleet.c, issue 13). */
#ifndef FLAMEDB_AGENT_FLEET_H
#define FLAMEDB_AGENT_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include "labels.h"

/* One step of the server's plan: sample in [from, until) or not, at rate
 * Hz at most (0: the agent's own --frequency).  Unix seconds of the
 * server's clock. */
typedef struct {
    int sample;
    int64_t from, until;
    double rate;
} agent_fleet_step;

/* A heartbeat's answer: this period's step and the next one, so that an
 * agent whose next heartbeat comes after the boundary still turns on or
 * off at it. */
typedef struct {
    double now;                     /* the server's clock when it answered (unix s, ms precision) */
    int64_t period;                 /* seconds */
    double duty;                    /* the fraction of the fleet sampling */
    agent_fleet_step step[2];
} agent_fleet_plan;

/* Parses the JSON answer of POST /api/v1/agents/heartbeat (a flat object:
 * now, period, duty, sample, from, until, rate, next_sample, next_until;
 * next_from is until).  -1 with err naming the field missing or wrong. */
int agent_fleet_plan_parse(const char *json, size_t len, agent_fleet_plan *out,
                           char *err, size_t errlen);

/* How many recent push outcomes decide whether pushes "keep failing", and
 * the share of failures over which the agent stops sampling (GWP: profiling
 * ceases when the failure rate is above a threshold); it tries again after
 * AGENT_FLEET_COOLOFF intervals. */
#define AGENT_FLEET_WINDOW 8
#define AGENT_FLEET_MIN_ATTEMPTS 4
#define AGENT_FLEET_FAIL_SHARE 0.5
#define AGENT_FLEET_COOLOFF 6

typedef enum {
    AGENT_FLEET_UNMANAGED = 0,      /* no plan (no server answer yet, or it is
                                       stale): sample as configured, spool */
    AGENT_FLEET_SAMPLING,           /* the plan says sample */
    AGENT_FLEET_IDLE,               /* the plan says not now */
    AGENT_FLEET_CEASED              /* pushes keep failing: not sampling */
} agent_fleet_state;

/* The agent's fleet state: its last plan (times converted to its own
 * clock), the push outcomes of its last intervals, why it ceased.  Plain
 * struct, zeroed = unmanaged. */
typedef struct {
    int have_plan;
    agent_fleet_plan plan;          /* times already in the agent's clock */
    int before_sample;              /* the word for the seconds before plan.step[0] */
    uint32_t attempts[AGENT_FLEET_WINDOW], failures[AGENT_FLEET_WINDOW];
    unsigned slot;                  /* next interval's slot in the ring */
    int ceased;                     /* intervals of cool-off left; 0: not ceased */
    char why[300];                  /* why it ceased ("" not) */
    char last_error[300];           /* the last heartbeat or push error */
} agent_fleet;

/* A heartbeat sent at the agent's time `sent` and answered with plan at
 * `received` (unix s, sub-second): the plan's times are shifted into the
 * agent's clock by the least clock difference the exchange shows (0 when
 * the server's `now` lies between sent and received: one machine, however
 * slow the answer), rounded to whole seconds. */
void agent_fleet_set_plan(agent_fleet *f, const agent_fleet_plan *plan, double sent, double received);
/* What to do at `now` (agent's unix seconds): the plan's step holding it;
 * UNMANAGED when there is none (no plan, or past its last step: the server
 * has not answered since); before its first step, what the plan before
 * said of that second (sampling without one only at duty 1); CEASED over
 * everything while ceased.  *rate
 * receives the step's rate (0: the agent's own). */
agent_fleet_state agent_fleet_state_at(const agent_fleet *f, int64_t now, double *rate);
/* When the state may next change after `now` (a step's boundary), or
 * INT64_MAX. */
int64_t agent_fleet_next_change(const agent_fleet *f, int64_t now);
/* The `until` of a window that began at `from` and is flushed at `now`
 * (unix seconds) because the plan stopped its sampling: the boundary of
 * the step that held `from` when `now` is past it, so the window does not
 * reach into a period the agent had no turn in (its loop can be late by
 * seconds on a loaded machine: a slow heartbeat answer blocks it); else
 * `now`.  Always above `from`. */
int64_t agent_fleet_window_end(const agent_fleet *f, int64_t from, int64_t now);
/* The end of an interval: the push attempts and failures it made (4xx
 * rejections and unreachable alike).  Answers 1 when the agent ceases
 * now (f->why says why), -1 when a cool-off just ended (it samples again,
 * outcomes forgotten), 0 otherwise. */
int agent_fleet_interval(agent_fleet *f, uint64_t attempts, uint64_t failures);
const char *agent_fleet_state_name(agent_fleet_state s);

/* What a heartbeat reports. */
typedef struct {
    const char *id;                 /* the agent's id: --agent-id, else node */
    const char *version;
    const agent_labels *labels;     /* node, instance and --labels */
    agent_fleet_state state;
    double frequency;               /* Hz now (FDA within the plan) */
    double cpu_seconds;             /* the agent's own CPU time since start */
    uint64_t rss_bytes;
    uint64_t samples;               /* samples profiled since start */
    uint64_t profiles_pushed, push_failures, spool_waiting;
    int64_t started, last_push;     /* unix seconds; 0 never */
    const char *last_error;         /* "" none */
} agent_fleet_report;

/* The heartbeat's JSON body.  malloc'd, NULL when out of memory. */
char *agent_fleet_report_json(const agent_fleet_report *r, size_t *len);
/* The agent's CPU seconds (user + system) and resident bytes. */
void agent_fleet_self_usage(double *cpu_seconds, uint64_t *rss_bytes);

#endif
