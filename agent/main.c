/* main.c — flamedb-agent: the sampling loop.
 *
 * One thread.  The loop drains the perf rings every 100 ms; each sample is
 * unwound (the kernel's frame-pointer callchain, or libdw over the copied
 * user stack for processes that need DWARF), symbolized at once, while the
 * process and its mappings are known, and counted per process and thread.
 * At the end of each interval: FSP drops the idle threads, FDA adjusts the
 * frequency, one folded profile per label set is pushed (or written to
 * --output; the processes of one program share their labels: labels.c),
 * failed pushes go to the spool and are replayed in order.  SIGINT/SIGTERM
 * end the loop after a last flush: the partial window is pushed, or spooled
 * when the server does not take it.
 *
 * Nothing a node does may stop the agent (issue 15): a sample that cannot
 * be used is dropped and counted by reason (agent_metrics, metrics.c), a
 * DWARF unwinding that fails keeps the frame-pointer chain and is counted,
 * and every interval logs what it read, kept, dropped and delivered (and
 * rewrites --metrics FILE), so that an agent that stopped reporting shows.
 * A process that execs is another program under the same pid: its state is
 * retired (flushed under the old labels) and the next sample starts anew.
 *
 * --offcpu and --alloc (issue 13) read more kinds of sample from the same
 * rings: switch-outs and switch-ins go to offcpu.c, which pairs them in
 * time order and emits stretches off the CPU into the process's `offcpu`
 * fold (cut at each push); allocator entries are weighted (alloc.c) into
 * its `alloc_objects` and `alloc_space` folds.  These folds are pushed
 * whole (no FSP) with their type and unit.  --alloc-duty opens the
 * allocation probes in one window per interval and scales those folds.
 *
 * Fleet control (issue 13, fleet.c): a heartbeat at start and every
 * interval brings the server's plan; the loop pauses the perf events when
 * the plan says not now (the open window is pushed at once, so a stored
 * profile's from-until is when the agent sampled) and resumes them, with
 * a new window, when it says sample.  --simulate makes samples up instead
 * of reading perf_event, for fleets of agents on one machine.
 *
 * Here: setup and teardown, the loop, fleet control's glue.  The samples
 * into processes are procs.c's, the end of a window interval.c's,
 * --alloc-duty's window allocduty.c's (their shared state: ctx.h); the
 * command line is cli.c's, the delivery (push or spool, backoff)
 * deliver.c's, the log lines log.c's.
 */
#include "ctx.h"

static volatile sig_atomic_t agent_stop;   /* set by SIGINT/SIGTERM only */

static void on_signal(int sig) { (void)sig; agent_stop = 1; }

static void start_adapters(agent_ctx *c, int seconds)
{
    for (size_t i = 0; i < c->nprocs; i++) {
        proc_state *p = &c->procs[i];
        if (!p->adapter || p->run || !procs_alive(p->pid)) continue;
        char err[256];
        p->run = agent_adapter_start(p->adapter, p->pid, seconds, (int)c->freq, err, sizeof err);
        if (!p->run) agent_log(0, "pid %d (%s): %s", (int)p->pid, p->comm, err);
    }
}

/* ---- fleet control (fleet.c, server/agents.c) ---- */

/* The counters a heartbeat reports, and the plan it brings back.  A server
 * without fleet control (404), or none at all, leaves the agent as it is:
 * unmanaged once its plan runs out, sampling as configured. */
static void heartbeat(agent_ctx *c)
{
    if (!c->deliver) return;
    agent_labels l = { 0 };
    agent_labels_set(&l, "node", agent_labels_get(&c->o.labels, "node") ? agent_labels_get(&c->o.labels, "node")
                                                                           : c->hostname);
    for (int i = 0; i < c->o.labels.n; i++) agent_labels_set(&l, c->o.labels.name[i], c->o.labels.value[i]);
    agent_fleet_report r = { 0 };
    r.id = c->o.agent_id ? c->o.agent_id : agent_labels_get(&l, "node");
    r.version = AGENT_VERSION;
    r.labels = &l;
    r.state = c->fstate;
    r.frequency = c->freq;
    agent_fleet_self_usage(&r.cpu_seconds, &r.rss_bytes);
    r.samples = c->m.samples_profiled;
    r.profiles_pushed = c->m.profiles_pushed;
    r.push_failures = agent_deliver_failures(c->deliver) + c->m.profiles_rejected;
    r.spool_waiting = agent_deliver_waiting(c->deliver);
    r.started = c->m.start_time;
    r.last_push = agent_deliver_last_push(c->deliver);
    r.last_error = c->fleet.ceased ? c->fleet.why : c->fleet.last_error;
    size_t len;
    char *body = agent_fleet_report_json(&r, &len);
    agent_labels_free(&l);
    if (!body) return;
    char url[4200], err[700];
    snprintf(url, sizeof url, "%s/api/v1/agents/heartbeat", c->o.server);
    long status = 0;
    const char *answer = NULL;
    double sent = agent_wall_s();
    int rc = client_push_json(agent_deliver_push(c->deliver), url, body, len, &status, &answer, err, sizeof err);
    free(body);
    agent_fleet_plan plan;
    if (rc == 0 && agent_fleet_plan_parse(answer, strlen(answer), &plan, err, sizeof err) == 0) {
        if (!c->fleet.have_plan || c->hb_failing)   /* duty 1: every agent, always: no news */
            agent_log(plan.duty >= 1 && !c->hb_failing, "fleet control: %s%g of the fleet samples at a time, %lld s periods",
                      c->fleet.have_plan ? "the server answers again; " : "", plan.duty, (long long)plan.period);
        agent_fleet_plan before = c->fleet.plan;
        int had = c->fleet.have_plan;
        agent_fleet_set_plan(&c->fleet, &plan, sent, agent_wall_s());
        const agent_fleet_step *s = c->fleet.plan.step;
        if (!had || memcmp(before.step, s, sizeof before.step))
            agent_log(1, "fleet control: plan %s [%lld, %lld), %s [%lld, %lld) (server now %.3f, sent %.3f)",
                      s[0].sample ? "sample" : "idle", (long long)s[0].from, (long long)s[0].until,
                      s[1].sample ? "sample" : "idle", (long long)s[1].from, (long long)s[1].until, plan.now, sent);
        c->hb_failing = 0;
        return;
    }
    if (!c->hb_failing)
        agent_log(0, "heartbeat: %s (%s)%s", err, url,
                  status == 404 ? ": the server has no fleet control; sampling as configured"
                                : ": sampling as configured when the plan runs out");
    snprintf(c->fleet.last_error, sizeof c->fleet.last_error, "heartbeat: %.250s", err);
    c->hb_failing = 1;
}

/* The plan's rate for this step (0: the agent's own): the frequency, or
 * with --fda the top of its range. */
static void fleet_rate(agent_ctx *c, double rate)
{
    double top = rate > 0 ? rate : c->o.fda ? c->o.max_freq : c->o.freq;
    double f = c->freq;
    if (c->o.fda) {
        c->fda.max = top;
        if (c->fda.min > top) c->fda.min = top;
        if (rate <= 0) c->fda.min = c->o.min_freq;
        if (f > top) f = top;
        c->fda.freq = f;
    } else f = top;
    if (f != c->freq) {
        agent_log(0, "fleet control: frequency %g -> %g Hz", c->freq, f);
        if (c->perf) agent_perf_set_freq(c->perf, f);
        c->freq = f;
    }
}

/* --simulate: the samples a program running on every CPU would give at
 * the frequency, without perf_event, under the agent's own labels. */
static void simulate_tick(agent_ctx *c, double t)
{
    double dt = c->sim_last ? t - c->sim_last : 0;
    c->sim_last = t;
    if (!ctx_sampling(c->fstate) || dt <= 0) return;
    c->sim_carry += c->freq * dt;
    uint64_t n = (uint64_t)c->sim_carry;
    if (!n) return;
    c->sim_carry -= (double)n;
    proc_state *p = procs_get(c, c->self);
    thread_state *th = p ? procs_thread(p, c->self) : NULL;
    if (!th) { c->m.dropped_nomem++; return; }
    agent_fold_add(th->fold, "flamedb-agent;agent_simulate;simulated_work", n);
    th->samples += n;
    p->samples += n;
    c->m.samples_read += n;
    c->m.samples_profiled += n;
}

/* How often to heartbeat: every interval, and at least twice a period. */
static double heartbeat_every(const agent_ctx *c)
{
    double every = c->o.interval;
    if (c->fleet.have_plan && c->fleet.plan.period / 2.0 < every) every = c->fleet.plan.period / 2.0;
    return every < 1 ? 1 : every;
}

/* An interval ended: its pushes' outcomes may cease sampling (or end a
 * cool-off). */
static void fleet_account(agent_ctx *c)
{
    if (!c->deliver) return;
    uint64_t a = agent_deliver_attempts(c->deliver);
    uint64_t f = agent_deliver_failures(c->deliver) + c->m.profiles_rejected;
    if (agent_deliver_last_error(c->deliver)[0])
        snprintf(c->fleet.last_error, sizeof c->fleet.last_error, "push: %.250s", agent_deliver_last_error(c->deliver));
    /* only while the server answers heartbeats: an unreachable server is
     * today's behaviour, sample and spool */
    int r = c->hb_failing ? 0 : agent_fleet_interval(&c->fleet, a - c->hb_attempts, f - c->hb_failures);
    c->hb_attempts = a;
    c->hb_failures = f;
    if (r > 0) agent_log(0, "fleet control: pushes keep failing (%s): sampling ceased for %d intervals",
                         c->fleet.why, AGENT_FLEET_COOLOFF);
    else if (r < 0) agent_log(0, "fleet control: sampling again after the cool-off");
}

/* The fleet state at `now` (unix seconds).  A plan that ran out while the
 * server still answers (the loop was held up past it, by a slow push say)
 * is renewed first: falling back to sampling as configured is for a
 * server that does not answer, not for an agent that did not ask. */
static agent_fleet_state fleet_state(agent_ctx *c, int64_t *now, double *t, double *rate)
{
    agent_fleet_state st = agent_fleet_state_at(&c->fleet, *now, rate);
    if (st == AGENT_FLEET_UNMANAGED && c->fleet.have_plan && !c->hb_failing && c->deliver) {
        heartbeat(c);
        *t = agent_now_s();
        c->next_heartbeat = *t + heartbeat_every(c);
        *now = agent_wall_sec();
        st = agent_fleet_state_at(&c->fleet, *now, rate);
    }
    return st;
}

/* Applies the fleet state st, that of `now`: pauses or resumes the perf
 * events; a window starts when sampling does (the one before was flushed
 * when it stopped).  The loop decides a turn with one `now`: a second read
 * anew here could lie past a boundary the flush before did not see, and
 * the window that flush opened (at the boundary) would take the samples
 * read until the next turn, in a period the agent had no turn in. */
static void fleet_switch(agent_ctx *c, agent_fleet_state st, double rate, double t, int64_t now,
                         double *win_start, int64_t *win_from)
{
    int was = ctx_sampling(c->fstate), is = ctx_sampling(st);
    if (st != c->fstate)
        agent_log(st != AGENT_FLEET_SAMPLING && st != AGENT_FLEET_IDLE ? 0 : 1, "fleet control: %s -> %s",
                  agent_fleet_state_name(c->fstate), agent_fleet_state_name(st));
    if (was && !is && c->perf && agent_perf_pause(c->perf, 1) < 0) agent_log(0, "fleet control: could not pause sampling");
    if (!was && is) {
        if (c->perf && agent_perf_pause(c->perf, 0) < 0) agent_log(0, "fleet control: could not resume sampling");
        *win_start = t;
        *win_from = now;
        c->sim_last = t;
    }
    c->fstate = st;
    if (is) fleet_rate(c, st == AGENT_FLEET_SAMPLING ? rate : 0);
}

/* ---- main ---- */

/* libdw holds the files of the modules it unwinds through open, per
 * process: on a node with many processes the usual soft limit of 1024
 * descriptors would run out, and with it pushes and /proc reads.  Up to
 * the hard limit, as the administrator allows. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max) return;
    rlim_t before = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 1048576 ? 1048576 : rl.rlim_max;
    if (rl.rlim_cur > before && setrlimit(RLIMIT_NOFILE, &rl) == 0)
        agent_log(1, "open files limit raised from %llu to %llu", (unsigned long long)before,
               (unsigned long long)rl.rlim_cur);
}

/* --offcpu and --alloc: what their events need (offcpu.c, uprobe.c).
 * Something missing is logged and that profile left out; the on-CPU
 * sampling goes on. */
static void extra_setup(agent_ctx *c, agent_perf_opts *po)
{
    char err[1024];
    if (c->o.offcpu) {
        int id = 0, off = -1;
        if (agent_tracepoint("sched", "sched_switch", "next_pid", &id, &off, err, sizeof err) < 0)
            agent_log(0, "--offcpu: no off-CPU profiles: %s", err);
        else if (!(c->offcpu = agent_offcpu_new()))
            agent_log(0, "--offcpu: out of memory");
        else { po->offcpu_tp = id; po->offcpu_next_pid_off = off; }
    }
    if (c->o.alloc_period) {
        int type = agent_uprobe_pmu(err, sizeof err);
        if (type < 0) agent_log(0, "--alloc: no allocation profiles: %s", err);
        else if (agent_alloc_targets(c->o.all ? NULL : c->o.pids, c->o.npids, &c->alloc_targets,
                                     &c->nalloc, err, sizeof err) < 0)
            agent_log(0, "--alloc: no allocation profiles: %s", err);
        else {
            po->uprobe_type = type;
            po->alloc = c->alloc_targets;
            po->nalloc = c->nalloc;
            po->alloc_period = c->o.alloc_period;
            po->alloc_probes = (agent_uprobes_mode)c->o.alloc_probes;
        }
    }
}

static void extra_report(agent_ctx *c)
{
    if (c->offcpu && !agent_perf_has(c->perf, AGENT_SAMPLE_OFFCPU)) {
        agent_log(0, "--offcpu: no off-CPU profiles: %s", agent_perf_why_not(c->perf, AGENT_SAMPLE_OFFCPU));
        agent_offcpu_free(c->offcpu);
        c->offcpu = NULL;
    } else if (c->offcpu) agent_log(0, "off-CPU profiles (type offcpu, nanoseconds) from sched:sched_switch");
    if (c->nalloc && !agent_perf_has(c->perf, AGENT_SAMPLE_ALLOC))
        agent_log(0, "--alloc: no allocation profiles: %s", agent_perf_why_not(c->perf, AGENT_SAMPLE_ALLOC));
    else if (c->nalloc) {
        agent_log(0, "allocation profiles (alloc_objects, alloc_space): every %llu-th call of %zu "
               "allocator entry point(s), probes: %s", (unsigned long long)c->o.alloc_period, c->nalloc,
               agent_perf_alloc_how(c->perf));
        for (size_t i = 0; i < c->nalloc; i++)
            agent_log(1, "  uprobe %s+0x%llx (%s)", c->alloc_targets[i].path,
                   (unsigned long long)c->alloc_targets[i].offset,
                   c->alloc_targets[i].fn == AGENT_ALLOC_MALLOC ? "malloc" :
                   c->alloc_targets[i].fn == AGENT_ALLOC_CALLOC ? "calloc" : "realloc");
    }
}

static int setup(agent_ctx *c, char *err, size_t errlen)
{
    c->self = getpid();
    raise_nofile();
    if (gethostname(c->hostname, sizeof c->hostname) < 0) snprintf(c->hostname, sizeof c->hostname, "localhost");
    c->freq = c->o.freq;
    agent_fda_init(&c->fda, c->o.freq, c->o.min_freq, c->o.max_freq, c->o.fda_theta, c->o.fda_lambda);
    c->syms = agent_syms_new("/usr/lib/debug");
    c->stackcap = 65536;
    c->stackbuf = malloc(c->stackcap);
    if (!c->syms || !c->stackbuf) { snprintf(err, errlen, "out of memory"); return -1; }
    agent_syms_set_demangle(c->syms, !c->o.no_demangle);
    if (c->o.output) {
        c->out = strcmp(c->o.output, "-") == 0 ? stdout : fopen(c->o.output, "w");
        if (!c->out) { snprintf(err, errlen, "--output %s: %s", c->o.output, strerror(errno)); return -1; }
    } else {
        agent_deliver_opts d = { c->o.token, c->o.token_file, c->o.tenant, c->o.ca, c->o.spool, c->o.spool_mb };
        if (!(c->deliver = agent_deliver_open(&d, &c->m, err, errlen))) return -1;
    }
    /* the processes named with --pid are known from the start (labels,
     * adapters); they are all given events, so that a process whose adapter
     * fails can be sampled natively */
    for (size_t i = 0; i < c->o.npids; i++) {
        if (!procs_alive(c->o.pids[i])) { snprintf(err, errlen, "--pid %d: no such process", (int)c->o.pids[i]); return -1; }
        if (!procs_get(c, c->o.pids[i])) { snprintf(err, errlen, "out of memory"); return -1; }
    }
    if (c->o.simulate) {                /* no perf_event: samples made up (simulate_tick) */
        agent_log(0, "--simulate: no perf_event; %g made-up samples a second while sampling", c->o.freq);
        return 0;
    }
    {
        agent_perf_opts po = { .freq = c->o.freq, .no_kernel = c->o.no_kernel,
                               .want_stack = c->o.unwind != AGENT_UNWIND_FP };
        extra_setup(c, &po);
        c->perf = c->o.all ? agent_perf_open_all(&po, err, errlen)
                           : agent_perf_open_pids(c->o.pids, c->o.npids, &po, err, errlen);
        if (!c->perf) return -1;
        extra_report(c);
    }
    return 0;
}

static void teardown(agent_ctx *c)
{
    for (size_t i = 0; i < c->nprocs; i++) procs_free(&c->procs[i]);
    free(c->procs);
    agent_perf_close(c->perf);
    agent_offcpu_free(c->offcpu);
    free(c->alloc_targets);
    agent_syms_free(c->syms);
    agent_deliver_close(c->deliver);
    if (c->out && c->out != stdout) fclose(c->out);
    free(c->stackbuf);
    agent_cli_free(&c->o);
}

int main(int argc, char **argv)
{
    agent_ctx c;
    memset(&c, 0, sizeof c);
    c.stop = &agent_stop;
    if (agent_cli_parse(&c.o, argc, argv) < 0) { agent_cli_free(&c.o); return 2; }
    agent_log_verbose(c.o.verbose);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    char err[1024];
    if (setup(&c, err, sizeof err) < 0) {
        fprintf(stderr, "flamedb-agent: %s\n", err);
        teardown(&c);
        return 1;
    }
    agent_log(0, "sampling %s at %g Hz, %d s intervals, unwinding %s, %s %s",
           c.o.simulate ? "nothing real (--simulate)" : c.o.all ? "every process" : "the given processes", c.freq, c.o.interval,
           c.o.unwind == AGENT_UNWIND_FP ? "fp" : c.o.unwind == AGENT_UNWIND_DWARF ? "dwarf" : "auto",
           c.o.output ? "writing to" : "pushing to", c.o.output ? c.o.output : c.o.server);
    double start = agent_now_s(), win_start = start;
    int64_t win_from = agent_wall_sec();
    c.m.start_time = win_from;
    interval_metrics(&c);
    c.fstate = AGENT_FLEET_UNMANAGED;
    heartbeat(&c);                      /* registers, and brings the plan */
    c.next_heartbeat = start + heartbeat_every(&c);
    {
        double rate;
        int64_t now = agent_wall_sec();
        double t0 = start;
        agent_fleet_state st = fleet_state(&c, &now, &t0, &rate);
        fleet_switch(&c, st, rate, t0, now, &win_start, &win_from);
    }
    if (ctx_sampling(c.fstate)) start_adapters(&c, c.o.interval);
    c.alloc_rng = (unsigned)getpid() ^ (unsigned)win_from;
    c.alloc_since = start;
    c.run_end = c.o.duration ? start + c.o.duration : 0;
    allocduty_start(&c, start);
    c.sim_last = start;
    while (!agent_stop) {
        if (c.perf) agent_perf_poll(c.perf, allocduty_wait_ms(&c, agent_now_s(), 100), procs_on_sample, &c);
        else usleep(100000);
        if (c.offcpu) agent_offcpu_advance(c.offcpu, agent_perf_upto(c.perf), procs_offcpu_emit, &c);
        double t = agent_now_s();
        if (c.o.simulate) simulate_tick(&c, t);
        allocduty_tick(&c, t);
        if (c.deliver && t >= c.next_heartbeat) {
            heartbeat(&c);
            /* its answer may have come seconds later (a slow server): a
             * turn that starts now starts its window and its samples now,
             * not before the heartbeat (the window would be stamped a
             * second ahead of the clock from then on, and its last one
             * after the turn) */
            t = agent_now_s();
            c.next_heartbeat = t + heartbeat_every(&c);
        }
        double rate;
        int64_t now = agent_wall_sec();          /* this turn's second (fleet_switch) */
        agent_fleet_state st = fleet_state(&c, &now, &t, &rate);
        int off = ctx_sampling(c.fstate) && !ctx_sampling(st);   /* the window ends here */
        int done = c.o.duration && t - start >= c.o.duration;
        if (t - win_start >= c.o.interval || done || off) {
            int64_t until = now;
            if (off) until = agent_fleet_window_end(&c.fleet, win_from, until);
            if (until <= win_from) until = win_from + 1;
            allocduty_interval_end(&c, win_start, t);
            interval_flush(&c, win_from, until, done);
            win_from = until;
            win_start = t;
            fleet_account(&c);
            if (done) break;
            double left = c.o.duration ? c.o.duration - (t - start) : c.o.interval;
            if (ctx_sampling(c.fstate)) start_adapters(&c, (int)(left < c.o.interval ? left + 0.5 : c.o.interval));
        } else if (c.deliver) agent_deliver_drain(c.deliver, 0);
        fleet_switch(&c, st, rate, t, now, &win_start, &win_from);
    }
    if (agent_stop) {                       /* push what is left */
        if (c.perf) agent_perf_poll(c.perf, 0, procs_on_sample, &c);
        int64_t until = agent_wall_sec();
        if (until <= win_from) until = win_from + 1;
        allocduty_interval_end(&c, win_start, agent_now_s());
        interval_flush(&c, win_from, until, 1);
    }
    if (c.deliver) agent_deliver_drain(c.deliver, 1);
    interval_metrics(&c);
    char line[700];
    agent_metrics_line(&c.m, NULL, line, sizeof line);
    agent_log(0, "totals (%llu intervals): %s", (unsigned long long)c.m.intervals, line);
    agent_log(0, "done: %llu samples, %llu profiles pushed, %llu spooled, %llu dropped; FSP pruned %llu threads (%llu samples); %llu lost; aggregation %.3f ms",
           (unsigned long long)c.m.samples_profiled, (unsigned long long)c.m.profiles_pushed,
           (unsigned long long)c.m.profiles_spooled,
           (unsigned long long)(c.m.profiles_rejected + c.m.profiles_spool_dropped),
           (unsigned long long)c.m.threads_pruned, (unsigned long long)c.m.samples_pruned,
           (unsigned long long)c.m.dropped_lost, c.agg_ns / 1e6);
    teardown(&c);
    return 0;
}
