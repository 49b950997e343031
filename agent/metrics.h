/* metrics.h — the agent's own metrics (metrics.c). */
#ifndef FLAMEDB_AGENT_METRICS_H
#define FLAMEDB_AGENT_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * The agent's own metrics (metrics.c): counters since start, see its
 * design comment for what each one means and how they add up.
 * ------------------------------------------------------------------------ */
typedef struct {
    uint64_t samples_read;          /* sample records read from the rings */
    uint64_t samples_profiled;      /* counted into a process's profile */
    uint64_t samples_ignored;       /* the idle task, the agent itself,
                                       processes an adapter profiles */
    uint64_t samples_unnamed;       /* of the profiled: processes that exited
                                       before anything named them (service
                                       "unknown") */
    uint64_t dropped_nomem;
    uint64_t dropped_lost;          /* PERF_RECORD_LOST: never read */
    uint64_t dropped_malformed;     /* records that could not be parsed */
    uint64_t unwind_failed;         /* DWARF failed: frame pointers kept */
    uint64_t offcpu_switches;       /* --offcpu: switch-outs of watched threads read */
    uint64_t offcpu_unpaired;       /* switch-outs without a switch-in (lost records) */
    uint64_t alloc_samples;         /* --alloc: samples counted */
    uint64_t alloc_nested;          /* samples of an allocator called by one (not counted) */
    uint64_t samples_pruned, threads_pruned;   /* FSP */
    uint64_t samples_delivered;     /* in profiles the server accepted */
    uint64_t profiles_pushed;       /* accepted (2xx), spool replays included */
    uint64_t profiles_spooled;
    uint64_t profiles_rejected;     /* 4xx */
    uint64_t profiles_spool_dropped;/* beyond --spool-max, or not writable */
    uint64_t profiles_written;      /* --output */
    uint64_t spool_waiting;         /* gauge */
    uint64_t processes;             /* gauge */
    uint64_t intervals;
    double frequency;               /* gauge, Hz */
    int64_t start_time, last_interval;   /* unix seconds */
} agent_metrics;

/* One log line's worth of key=value pairs: cur - prev (prev NULL: totals);
 * the gauges as they are in cur. */
void agent_metrics_line(const agent_metrics *cur, const agent_metrics *prev,
                        char *buf, size_t cap);
/* Prometheus text format.  malloc'd. */
char *agent_metrics_text(const agent_metrics *m, size_t *len);
/* Writes agent_metrics_text to path atomically (path.tmp, rename). */
int agent_metrics_write(const char *path, const agent_metrics *m, char *err, size_t errlen);

#endif
