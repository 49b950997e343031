/* perf.h — sampling with perf_event (perf.c). */
#ifndef FLAMEDB_AGENT_PERF_H
#define FLAMEDB_AGENT_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "alloc.h"
#include "uprobe.h"
#include "unwind_dwarf.h"

/* ------------------------------------------------------------------------
 * Sampling (perf.c): cpu-clock software events, and with --offcpu the
 * sched:sched_switch tracepoint, with --alloc uprobes; all into the same
 * mmap'd ring buffers, one per CPU, in CLOCK_MONOTONIC time.
 * ------------------------------------------------------------------------ */
typedef enum {
    AGENT_SAMPLE_CPU = 0,           /* cpu-clock: one sample = 1e9/f ns */
    AGENT_SAMPLE_OFFCPU,            /* tid switched out (stack: where it blocks) */
    AGENT_SAMPLE_SWITCH_IN,         /* tid switched in (no stack) */
    AGENT_SAMPLE_ALLOC              /* an allocator's entry (alloc_fn, arg, period) */
} agent_sample_kind;

typedef struct {
    agent_sample_kind kind;
    pid_t pid, tid;
    uint64_t time;                  /* CLOCK_MONOTONIC ns */
    const uint64_t *chain;          /* callchain, PERF_CONTEXT_* markers included */
    uint64_t nr;
    int has_user;                   /* user regs and stack present */
    agent_user_regs user;
    const char *comm;               /* non-NULL: not a sample but a
                                       PERF_RECORD_COMM (exec or rename) of
                                       pid/tid; nr is 0 */
    int exec;                       /* with comm: the process exec'd
                                       (PERF_RECORD_MISC_COMM_EXEC) */
    pid_t next_tid;                 /* OFFCPU under --all: the thread switched
                                       in at the same time (0: the idle task) */
    agent_alloc_fn alloc_fn;        /* ALLOC: which function */
    int alloc_null_is_malloc;       /* ALLOC: its target's null_is_malloc */
    uint64_t arg[2];                /* ALLOC: its first two arguments */
    uint64_t period;                /* ALLOC: calls this sample stands for */
} agent_sample;

typedef struct agent_perf agent_perf;

typedef struct {
    double freq;
    int no_kernel;
    int want_stack;                 /* REGS_USER + STACK_USER for DWARF */
    /* --offcpu: the id of sched:sched_switch (0: none) and, for --all, the
     * offset of next_pid in its raw record */
    int offcpu_tp, offcpu_next_pid_off;
    /* --alloc: uprobes (PMU type) on these entry points, a sample every
     * alloc_period calls (0: none); defined in tracefs where it can be
     * (alloc_probes, uprobe.c), else through the PMU */
    int uprobe_type;
    agent_uprobes_mode alloc_probes;
    const agent_uprobe_target *alloc;
    size_t nalloc;
    uint64_t alloc_period;
} agent_perf_opts;

/* Every process: one event per online CPU (pid -1) and kind. */
agent_perf *agent_perf_open_all(const agent_perf_opts *o, char *err, size_t errlen);
/* The given processes: one event per (thread, CPU) and kind with inherit,
 * so the threads and children they create are followed. */
agent_perf *agent_perf_open_pids(const pid_t *pids, size_t n, const agent_perf_opts *o,
                                 char *err, size_t errlen);
/* Whether the off-CPU (AGENT_SAMPLE_OFFCPU) or allocation
 * (AGENT_SAMPLE_ALLOC) events could be opened; when not, why (the on-CPU
 * sampling goes on without them). */
int agent_perf_has(const agent_perf *p, agent_sample_kind kind);
const char *agent_perf_why_not(const agent_perf *p, agent_sample_kind kind);
void agent_perf_close(agent_perf *p);
/* --alloc-duty: the allocation probes installed only part of the time.  A
 * disabled perf uprobe keeps its breakpoint (every call still traps), so
 * off closes the allocation events (after reading their last records
 * through fn) and on opens them again: on every CPU (pids NULL: --all) or
 * on every thread of the processes pids (distinct), with inherit.  Both do
 * nothing when already so; on answers -1 with err when a probe could not be
 * opened (those that could stay on). */
int agent_perf_alloc_on(agent_perf *p, const pid_t *pids, size_t n, char *err, size_t errlen);
void agent_perf_alloc_off(agent_perf *p, void (*fn)(const agent_sample *s, void *arg), void *arg);
int agent_perf_alloc_is_on(const agent_perf *p);
/* The allocation events open now (threads x CPUs x entry points under
 * --pid, CPUs x entry points under --all). */
size_t agent_perf_alloc_events(const agent_perf *p);
/* Closing a perf uprobe event waits about this long (a grace period under
 * a global mutex: serial), perf.c. */
#define AGENT_UPROBE_CLOSE_S 0.09
/* How long the program goes on trapping after agent_perf_alloc_off starts
 * closing the events open now: 0 with tracefs probes and their keepers;
 * about AGENT_UPROBE_CLOSE_S per PMU event (or per tracefs probe without
 * a keeper) but the last, see perf.c. */
double agent_perf_alloc_tail_s(const agent_perf *p);
/* How the allocation probes are made, for the log: "tracefs (...)" or
 * "uprobe PMU (...)" with the reason. */
const char *agent_perf_alloc_how(const agent_perf *p);
/* Waits up to timeout_ms for data, then calls fn for every sample read.
 * Answers the number of samples, -1 on error. */
int agent_perf_poll(agent_perf *p, int timeout_ms,
                    void (*fn)(const agent_sample *s, void *arg), void *arg);
/* Every record stamped at or before this CLOCK_MONOTONIC time has been
 * read by the last agent_perf_poll (its start, less a margin). */
uint64_t agent_perf_upto(const agent_perf *p);
/* Fleet control: disables (paused 1) or enables again every event but the
 * allocation probes (--alloc-duty opens and closes those), on every CPU
 * and, with inherit, in the children of the processes followed.  -1 when
 * an ioctl failed. */
int agent_perf_pause(agent_perf *p, int paused);
/* Changes the sampling frequency of every cpu-clock event
 * (PERF_EVENT_IOC_PERIOD). */
int agent_perf_set_freq(agent_perf *p, double freq);
uint64_t agent_perf_lost(const agent_perf *p);     /* PERF_RECORD_LOST total */
/* Sample records that could not be parsed, and records skipped after a
 * corrupt header (the rest of that ring's batch). */
uint64_t agent_perf_malformed(const agent_perf *p);
/* The reason perf_event_open was refused, with how to fix it. */
void agent_perf_explain(int errnum, char *err, size_t errlen);

#endif
