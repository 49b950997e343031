/* allocduty.c — --alloc-duty: the allocation probes installed in one
 * window per interval.
 *
 * A perf uprobe that is disabled keeps its breakpoint, so the probes are
 * opened for a window of alloc_duty x the interval at a random place in it
 * (so that it does not beat with what the program does periodically) and
 * closed after; the interval's allocation folds are scaled by its length
 * over the time the probes were on.  With tracefs probes and their keepers
 * (uprobe.c) a window closes at once; with the uprobe PMU each event's
 * close waits ~90 ms, serially, the program trapping until the last: when
 * that tail would be more than a quarter of the interval the probes stay
 * installed.  No probes while fleet control says not to sample.
 */
#include "ctx.h"

/* The window of the allocation probes in the interval that starts at
 * `start`: alloc_duty of its length, at a random place, so that it does
 * not beat with what the program does periodically. */
static void alloc_plan(agent_ctx *c, double start)
{
    if (!c->nalloc || c->o.alloc_duty >= 1) return;
    /* the last interval of a --duration may be short: its window too, or
     * a window cut by the end would be scaled up by a large factor */
    double iv = c->o.interval;
    if (c->run_end && c->run_end - start < iv) iv = c->run_end - start > 0.1 ? c->run_end - start : 0.1;
    double len = iv * c->o.alloc_duty;
    c->alloc_on_at = start + (iv - len) * ((double)rand_r(&c->alloc_rng) / RAND_MAX);
    c->alloc_off_at = c->alloc_on_at + len;
    c->alloc_done = 0;
}

/* How long the loop may wait for samples (at most max_ms) before the
 * probes must open or close: windows keep their length. */
int allocduty_wait_ms(const agent_ctx *c, double t, int max_ms)
{
    if (!c->nalloc || c->o.alloc_duty >= 1 || !c->perf || c->alloc_done) return max_ms;
    double next = agent_perf_alloc_is_on(c->perf) ? c->alloc_off_at : c->alloc_on_at;
    double ms = (next - t) * 1000;
    return ms >= max_ms ? max_ms : ms < 1 ? 1 : (int)ms;
}

/* The processes to probe when the window opens: the --pid ones and the
 * children seen since (inherit follows only the threads and processes
 * created while the probes are open).  malloc'd, distinct. */
static pid_t *alloc_pids(agent_ctx *c, size_t *n)
{
    pid_t *v = malloc((c->o.npids + c->nprocs + 1) * sizeof *v);
    *n = 0;
    if (!v) return NULL;
    for (size_t i = 0; i < c->o.npids; i++) v[(*n)++] = c->o.pids[i];
    for (size_t i = 0; i < c->nprocs; i++) {
        proc_state *p = &c->procs[i];
        int dup = p->retired || !procs_alive(p->pid);
        for (size_t k = 0; k < *n && !dup; k++) dup = v[k] == p->pid;
        if (!dup) v[(*n)++] = p->pid;
    }
    return v;
}

/* Opens or closes the probes as the plan says, at time t (monotonic). */
void allocduty_tick(agent_ctx *c, double t)
{
    if (!c->nalloc || c->o.alloc_duty >= 1 || !c->perf || !agent_perf_has(c->perf, AGENT_SAMPLE_ALLOC))
        return;
    int on = agent_perf_alloc_is_on(c->perf), want = !c->alloc_done && t >= c->alloc_on_at && t < c->alloc_off_at &&
                                                  ctx_sampling(c->fstate);
    if (on && !want) {
        c->alloc_done = t >= c->alloc_on_at;
        agent_perf_alloc_off(c->perf, procs_on_sample, c);
        c->alloc_on_s += t - c->alloc_since;    /* disabled at once; the closes' tail samples nothing */
        agent_log(1, "allocation probes off (%.3f s on in this interval)", c->alloc_on_s);
    } else if (!on && want) {
        size_t n = 0;
        pid_t *pids = c->o.all ? NULL : alloc_pids(c, &n);
        char err[300];
        if (agent_perf_alloc_on(c->perf, pids, n, err, sizeof err) < 0) agent_log(0, "--alloc: %s", err);
        t = agent_now_s();                        /* enabled now, after the opening */
        agent_log(1, "allocation probes on for %.3f s", c->alloc_off_at - t);
        c->alloc_since = t;
        free(pids);
    }
}

/* The loop starts: the probes were opened with the other events; with a
 * duty cycle they close until the first window, and what they sampled
 * meanwhile (no window's time to scale it by) is dropped. */
void allocduty_start(agent_ctx *c, double start)
{
    c->alloc_scale = 1;
    if (!c->nalloc || c->o.alloc_duty >= 1 || !c->perf) return;
    /* with PMU probes closing takes ~90 ms per event, the loop waiting and
     * the program still trapping: with many threads and CPUs that would
     * eat the interval; then they stay installed */
    size_t ev = agent_perf_alloc_events(c->perf);
    double tail = agent_perf_alloc_tail_s(c->perf);
    if (tail > c->o.interval * 0.25) {
        agent_log(0, "--alloc-duty %g: %zu probes (threads x CPUs x functions) would take about %.1f s "
               "to close at each window's end (%s); they stay installed (--alloc-duty 1)",
               c->o.alloc_duty, ev, tail, agent_perf_alloc_how(c->perf));
        c->o.alloc_duty = 1;
        return;
    }
    c->alloc_ignore = 1;
    agent_perf_alloc_off(c->perf, procs_on_sample, c);
    c->alloc_ignore = 0;
    c->alloc_on_s = 0;
    alloc_plan(c, start);
}

/* The interval [start, t) ends: the factor its allocation estimates are
 * scaled by (its length over the time the probes were on), and the next
 * interval's window.  (A SIGTERM that cuts a window short leaves a last
 * interval scaled from few samples: noisier, not biased.) */
void allocduty_interval_end(agent_ctx *c, double start, double t)
{
    c->alloc_scale = 1;
    if (!c->nalloc || c->o.alloc_duty >= 1 || !c->perf) return;
    if (agent_perf_alloc_is_on(c->perf)) {
        c->alloc_on_s += t - c->alloc_since;
        c->alloc_since = t;
    }
    if (c->alloc_on_s > 0 && t > start) c->alloc_scale = (t - start) / c->alloc_on_s;
    c->alloc_on_s = 0;
    alloc_plan(c, t);
}
