/* ctx.h — private to the agent's loop (main.c, procs.c, interval.c,
 * allocduty.c): the agent's state, one struct for the one thread, and what
 * those files call of each other.  Not part of agent.h: nothing outside the
 * loop sees it.
 */
#ifndef FLAMEDB_AGENT_CTX_H
#define FLAMEDB_AGENT_CTX_H

#include "adapter.h"
#include "alloc.h"
#include "cli.h"
#include "deliver.h"
#include "fda.h"
#include "fleet.h"
#include "fold.h"
#include "frametext.h"
#include "fsp.h"
#include "labels.h"
#include "log.h"
#include "metrics.h"
#include "offcpu.h"
#include "perf.h"
#include "symbols.h"
#include "unwind_dwarf.h"
#include "uprobe.h"
#include "url.h"
#include "../storage/frame.h"

#include <stdio.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 256


typedef struct {
    pid_t tid;
    uint64_t samples;
    agent_fold *fold;
} thread_state;

typedef struct {
    pid_t pid;
    char comm[64];
    agent_labels labels;            /* service, instance, node, build, container_id,
                                       pod_uid, user (labels.c) */
    int unnamed;                    /* gone before anything named it: service "unknown" */
    agent_adapter_kind adapter;
    agent_adapter_run *run;
    int probe, shallow, decided, use_dwarf, dwarf_failed;
    int retired;                    /* exec'd: flushed at the interval's end, then freed */
    agent_dwarf *dwarf;
    thread_state *threads; size_t nthreads, capthreads;
    uint64_t samples;
    int idle_intervals;
    agent_fold *typed[3];           /* this window's offcpu, alloc_objects,
                                       alloc_space (NULL: none yet; offcpu.c,
                                       alloc.c), never pruned by FSP */
} proc_state;

typedef struct {
    agent_opts o;
    agent_syms *syms;
    agent_perf *perf;
    agent_deliver *deliver;         /* push or spool (NULL with --output) */
    agent_fda fda;
    double freq;
    proc_state *procs; size_t nprocs, capprocs;
    char hostname[256];
    pid_t self;
    FILE *out;
    char *stackbuf;
    size_t stackcap;
    agent_metrics m, prev;          /* counters now, and at the last interval */
    int metrics_failing;            /* --metrics could not be written (logged once) */
    uint64_t agg_ns;   /* time merging threads' stacks into process profiles (what FSP saves) */
    uint64_t lost_reported;
    struct { pid_t pid; char comm[32]; } comms[256];   /* from PERF_RECORD_COMM, a ring */
    size_t ncomms;
    agent_offcpu *offcpu;           /* --offcpu: stretches off the CPU */
    agent_uprobe_target *alloc_targets;   /* --alloc: the probed entry points */
    size_t nalloc;
    double alloc_on_at, alloc_off_at;     /* --alloc-duty: this interval's window */
    double alloc_since, alloc_on_s;       /* when it went on; seconds on in this interval */
    double alloc_scale;                   /* the interval's length / alloc_on_s */
    int alloc_done;                       /* this interval's window is over */
    int alloc_ignore;                     /* drop allocation samples (startup) */
    double run_end;                       /* --duration's end (monotonic), 0: none */
    unsigned alloc_rng;
    volatile sig_atomic_t *stop;          /* set by SIGINT/SIGTERM (main.c): the
                                             loop ends after a last flush */
    agent_fleet fleet;                    /* fleet control (fleet.c) */
    agent_fleet_state fstate;             /* what the agent does now */
    double next_heartbeat;                /* monotonic */
    int hb_failing;                       /* the last heartbeat failed (logged once) */
    uint64_t hb_attempts, hb_failures;    /* push counters at the last interval's end */
    double sim_carry, sim_last;           /* --simulate: fractional samples, last tick */
} agent_ctx;

static inline double agent_now_s(void)   /* CLOCK_MONOTONIC, seconds */
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double agent_wall_s(void)  /* CLOCK_REALTIME, unix seconds */
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CLOCK_REALTIME in whole unix seconds, the clock of every window and of
 * the fleet plan.  Not time(2): it may read the coarse clock, up to a tick
 * behind, and a plan step starting at second S, received a millisecond
 * after S on the server's clock, was then taken at S - 1, before the step:
 * an agent sampled from S - 1, in the period before its turn. */
static inline int64_t agent_wall_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

/* Whether the agent samples in this fleet state (its plan says so, or
 * there is no plan). */
static inline int ctx_sampling(agent_fleet_state s)
{
    return s == AGENT_FLEET_SAMPLING || s == AGENT_FLEET_UNMANAGED;
}

/* procs.c: the processes and threads seen, each sample into them. */
/* The state of pid (made on its first sample, with its labels); NULL when
 * out of memory. */
proc_state *procs_get(agent_ctx *c, pid_t pid);
thread_state *procs_thread(proc_state *p, pid_t tid);
void procs_clear(proc_state *p);        /* this window's folds */
void procs_free(proc_state *p);
int procs_alive(pid_t pid);
int procs_thread_alive(pid_t pid, pid_t tid, void *arg);
/* agent_perf_poll's callback: one record read from the rings. */
void procs_on_sample(const agent_sample *s, void *arg);
/* agent_offcpu_advance's callback: a stretch off the CPU into its fold. */
void procs_offcpu_emit(pid_t pid, pid_t tid, const char *stack, uint64_t ns, void *arg);

/* interval.c: the end of a window: push (or write) every process's
 * profiles, FDA, the log line and --metrics. */
void interval_flush(agent_ctx *c, int64_t from, int64_t until, int last);
/* The counters kept elsewhere into c->m, and --metrics rewritten. */
void interval_metrics(agent_ctx *c);

/* allocduty.c: --alloc-duty, the allocation probes' window. */
void allocduty_start(agent_ctx *c, double start);
void allocduty_tick(agent_ctx *c, double t);
int allocduty_wait_ms(const agent_ctx *c, double t, int max_ms);
void allocduty_interval_end(agent_ctx *c, double start, double t);

#endif
