/* metrics.c — the agent's own counters, for the people who run it (issue 15).
 *
 * An agent that loses samples or stops pushing must say so where an
 * operator looks, not only at exit.  Two outputs of the same counters
 * (agent_metrics, kept by main.c):
 *
 *   - one log line per interval (stderr), with what happened in that
 *     interval, in key=value form under the same names as the metrics:
 *       interval 7 (10 s): samples read=1234 profiled=1200 unnamed=4
 *       ignored=30 pruned=0; dropped lost=0 malformed=0 no_memory=0;
 *       unwind_failed=12; profiles pushed=50 spooled=0 rejected=0
 *       spool_dropped=0 written=0 waiting=0; processes=56
 *     and the same line with the totals ("totals: ...") at exit.  A log
 *     without a line for a while is an agent that stopped;
 *   - with --metrics FILE, the totals in Prometheus' text format, rewritten
 *     (to FILE.tmp, then renamed: readers never see half a file) at the end
 *     of every interval and at exit; node_exporter's textfile collector, or
 *     anything that reads a file, picks it up.  The agent opens no port.
 *
 * Accounting: every sample record read is either profiled, ignored (the
 * idle task, the agent itself) or dropped for a reason:
 *   samples_read = profiled + ignored + no_memory.
 * A process that exited before anything named it (no /proc/PID, no exec
 * record) is profiled as service "unknown" (issue 13: one series per node,
 * where it used to be dropped as process_gone): `unnamed` counts those
 * samples, a part of `profiled`.
 * Records lost by the kernel (its rings were full) and records that could
 * not be parsed were never read as samples and are counted apart.  Profiled
 * samples are pruned by FSP or go into profiles; those the server accepted
 * are samples_delivered (spool replays included).  unwind_failed counts
 * samples whose DWARF unwinding was wanted but failed: they are kept, with
 * the kernel's frame-pointer chain.
 *
 * --offcpu and --alloc (issue 13) have their own counters, apart from the
 * cpu-clock samples above: switch-outs read (offcpu_switches), switch-outs
 * whose switch-in was lost (offcpu_unpaired), allocation samples counted
 * and those not counted as calls an allocator made (alloc_nested); the log
 * line gains them when they are not all 0.
 */
#include "metrics.h"

#include <stdio.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define D(f) (unsigned long long)(cur->f - (prev ? prev->f : 0))

void agent_metrics_line(const agent_metrics *cur, const agent_metrics *prev,
                        char *buf, size_t cap)
{
    snprintf(buf, cap,
             "samples read=%llu profiled=%llu unnamed=%llu ignored=%llu pruned=%llu; "
             "dropped lost=%llu malformed=%llu no_memory=%llu; "
             "unwind_failed=%llu; "
             "profiles pushed=%llu spooled=%llu rejected=%llu spool_dropped=%llu written=%llu "
             "waiting=%llu; processes=%llu",
             D(samples_read), D(samples_profiled), D(samples_unnamed), D(samples_ignored),
             D(samples_pruned), D(dropped_lost), D(dropped_malformed), D(dropped_nomem),
             D(unwind_failed),
             D(profiles_pushed), D(profiles_spooled), D(profiles_rejected),
             D(profiles_spool_dropped), D(profiles_written),
             (unsigned long long)cur->spool_waiting, (unsigned long long)cur->processes);
    /* --offcpu, --alloc: only when they ran */
    if (cur->offcpu_switches || cur->offcpu_unpaired || cur->alloc_samples || cur->alloc_nested) {
        size_t n = strlen(buf);
        if (n < cap)
            snprintf(buf + n, cap - n, "; offcpu switches=%llu unpaired=%llu; alloc samples=%llu nested=%llu",
                     D(offcpu_switches), D(offcpu_unpaired), D(alloc_samples), D(alloc_nested));
    }
}

#undef D

typedef struct {
    char *buf;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...)
{
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) { t->failed = 1; return; }
        if ((size_t)n < t->cap - t->len) { t->len += (size_t)n; return; }
        size_t cap = 2 * t->cap + (size_t)n;
        char *nb = realloc(t->buf, cap);
        if (!nb) { t->failed = 1; return; }
        t->buf = nb;
        t->cap = cap;
    }
}

static void head(text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(text *t, const char *name, const char *type, const char *help, double v)
{
    head(t, name, type, help);
    put(t, "%s %.17g\n", name, v);
}

char *agent_metrics_text(const agent_metrics *m, size_t *len)
{
    text t = { malloc(4096), 0, 4096, 0 };
    if (!t.buf) return NULL;
    t.buf[0] = 0;
#define C(name, help, v) one(&t, "flamedb_agent_" name, "counter", help, (double)(v))
#define G(name, help, v) one(&t, "flamedb_agent_" name, "gauge", help, (double)(v))
    C("samples_read_total", "Sample records read from the perf ring buffers.", m->samples_read);
    C("samples_profiled_total", "Samples counted into a process's profile.", m->samples_profiled);
    C("samples_unnamed_total", "Of the profiled samples, those of processes that exited before "
      "anything named them, profiled as service=\"unknown\".", m->samples_unnamed);
    C("samples_ignored_total", "Samples of the idle task and of the agent itself, not profiled.",
      m->samples_ignored);
    head(&t, "flamedb_agent_samples_dropped_total", "counter",
         "Samples in no profile, by reason: lost (the kernel's ring buffer was full), "
         "malformed (a record that could not be parsed), no_memory.");
    put(&t, "flamedb_agent_samples_dropped_total{reason=\"lost\"} %llu\n", (unsigned long long)m->dropped_lost);
    put(&t, "flamedb_agent_samples_dropped_total{reason=\"malformed\"} %llu\n", (unsigned long long)m->dropped_malformed);
    put(&t, "flamedb_agent_samples_dropped_total{reason=\"no_memory\"} %llu\n", (unsigned long long)m->dropped_nomem);
    C("unwind_failed_total", "Samples whose DWARF unwinding failed; kept with the frame-pointer callchain.",
      m->unwind_failed);
    C("offcpu_switches_total", "Switch-outs of watched threads read (--offcpu), each the start of "
      "a stretch off the CPU.", m->offcpu_switches);
    C("offcpu_unpaired_total", "Switch-outs followed by another switch-out of the same thread "
      "(its switch-in was lost): the time between is unknown.", m->offcpu_unpaired);
    C("alloc_samples_total", "Allocation samples counted (--alloc), each standing for N calls.",
      m->alloc_samples);
    C("alloc_nested_total", "Allocation samples of an allocator called by another (glibc's "
      "realloc(NULL, n) calls malloc), not counted twice.", m->alloc_nested);
    C("samples_pruned_total", "Samples of idle threads dropped by thread pruning (--fsp).", m->samples_pruned);
    C("threads_pruned_total", "Threads dropped by thread pruning (--fsp), once per interval.", m->threads_pruned);
    C("samples_delivered_total", "Samples in profiles the server accepted, spool replays included.",
      m->samples_delivered);
    head(&t, "flamedb_agent_profiles_total", "counter",
         "Profiles by outcome: pushed (accepted by the server, spool replays included), spooled "
         "(the server was unreachable), rejected (4xx, dropped), spool_dropped (beyond --spool-max, "
         "or not writable), written (--output).");
    put(&t, "flamedb_agent_profiles_total{outcome=\"pushed\"} %llu\n", (unsigned long long)m->profiles_pushed);
    put(&t, "flamedb_agent_profiles_total{outcome=\"spooled\"} %llu\n", (unsigned long long)m->profiles_spooled);
    put(&t, "flamedb_agent_profiles_total{outcome=\"rejected\"} %llu\n", (unsigned long long)m->profiles_rejected);
    put(&t, "flamedb_agent_profiles_total{outcome=\"spool_dropped\"} %llu\n", (unsigned long long)m->profiles_spool_dropped);
    put(&t, "flamedb_agent_profiles_total{outcome=\"written\"} %llu\n", (unsigned long long)m->profiles_written);
    G("spool_profiles", "Profiles waiting in the spool.", m->spool_waiting);
    G("processes", "Processes the agent keeps state for.", m->processes);
    C("intervals_total", "Intervals completed (profiles built and delivered).", m->intervals);
    G("frequency_hertz", "The sampling frequency in force.", m->frequency);
    G("start_time_seconds", "When the agent started, unix seconds.", m->start_time);
    G("last_interval_timestamp_seconds", "When the last interval ended, unix seconds (0: none yet).",
      m->last_interval);
#undef C
#undef G
    if (t.failed) { free(t.buf); return NULL; }
    *len = t.len;
    return t.buf;
}

int agent_metrics_write(const char *path, const agent_metrics *m, char *err, size_t errlen)
{
    size_t len;
    char *body = agent_metrics_text(m, &len);
    if (!body) { snprintf(err, errlen, "--metrics %s: out of memory", path); return -1; }
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        free(body);
        snprintf(err, errlen, "--metrics: path too long");
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "--metrics %s: %s", tmp, strerror(errno));
        free(body);
        return -1;
    }
    int ok = fwrite(body, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    free(body);
    if (!ok || rename(tmp, path) < 0) {
        snprintf(err, errlen, "--metrics %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
