/* interval.c — the end of a window.
 *
 * Every process's samples, those with equal labels merged into one profile
 * (labels.c: labels are per program, not per process, except for --pid's
 * own), after FSP's thread pruning; its offcpu and alloc_* folds whole,
 * with their type and unit (alloc_* scaled by --alloc-duty's factor).
 * Each profile is pushed or spooled (deliver.c) or written to --output.
 * Unless it is the last flush, the rings are drained after each push and
 * after each adapter's output, so that a busy node's hundreds of pushes do
 * not overflow them.  Then processes that exited are forgotten, FDA sets
 * the next frequency from the top functions' self samples, and the
 * interval's log line and --metrics are written.
 */
#include "ctx.h"

static void write_output(agent_ctx *c, const agent_labels *l, const char *unit, int64_t from,
                         int64_t until, const char *body, int located)
{
    fprintf(c->out, "# ");
    for (int i = 0; i < l->n; i++) fprintf(c->out, "%s=%s ", l->name[i], l->value[i]);
    if (unit) fprintf(c->out, "unit=%s ", unit);
    else fprintf(c->out, "rate=%g ", c->freq);
    fprintf(c->out, "from=%lld until=%lld%s\n%s\n", (long long)from,
            (long long)until, located ? " locations=1" : "", body);
    fflush(c->out);
}

typedef struct { const char **names; uint64_t *counts; size_t n, cap; } self_counts;

/* Self samples per function: the leaf's name part, so that the lines of
 * one function count as one (FDA compares functions, not lines). */
static void self_add(const char *stack, uint64_t count, void *arg)
{
    self_counts *sc = arg;
    const char *leaf = strrchr(stack, ';');
    leaf = leaf ? leaf + 1 : stack;
    size_t ln = agent_frame_name_len(leaf);
    for (size_t i = 0; i < sc->n; i++)
        if (strncmp(sc->names[i], leaf, ln) == 0 && sc->names[i][ln] == 0) { sc->counts[i] += count; return; }
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? 2 * sc->cap : 64;
        const char **nn = realloc(sc->names, cap * sizeof *nn);
        if (!nn) return;
        sc->names = nn;
        uint64_t *nc = realloc(sc->counts, cap * sizeof *nc);
        if (!nc) return;
        sc->counts = nc;
        sc->cap = cap;
    }
    char *name = strndup(leaf, ln);
    if (!name) return;
    sc->names[sc->n] = name;
    sc->counts[sc->n++] = count;
}

static void labels_del(agent_labels *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0) {
            free(l->name[i]); free(l->value[i]);
            l->name[i] = l->name[l->n - 1];
            l->value[i] = l->value[l->n - 1];
            l->n--;
            return;
        }
}

static void merge_into(const char *stack, uint64_t count, void *arg)
{
    agent_fold_add(arg, stack, count);
}

/* A process's window, after thread pruning, into f (an adapter's output
 * for the processes it profiles). */
static void proc_fold(agent_ctx *c, proc_state *p, agent_fold *f)
{
    char err[256];
    if (p->run) {
        if (*c->stop) agent_adapter_interrupt(p->run);      /* leaving: do not wait out the interval */
        if (agent_adapter_finish(p->run, f, err, sizeof err) < 0) {
            agent_log(0, "pid %d (%s): %s; sampling it natively from now on", (int)p->pid, p->comm, err);
            p->adapter = AGENT_ADAPTER_NONE;
            labels_del(&p->labels, "spy");
        }
        p->run = NULL;
    } else if (p->nthreads > 0) {
        agent_thread_count *tc = malloc(p->nthreads * sizeof *tc);
        int *keep = malloc(p->nthreads * sizeof *keep);
        if (!tc || !keep) { free(tc); free(keep); return; }
        for (size_t i = 0; i < p->nthreads; i++) tc[i] = (agent_thread_count){ p->threads[i].tid, p->threads[i].samples };
        size_t tdrop = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t sdrop = agent_fsp_select(tc, p->nthreads, c->o.fsp, keep, &tdrop);
        for (size_t i = 0; i < p->nthreads; i++)
            if (keep[i]) agent_fold_each(p->threads[i].fold, merge_into, f);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        c->agg_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
        if (tdrop) {
            c->m.samples_pruned += sdrop;
            c->m.threads_pruned += tdrop;
            agent_log(1, "pid %d (%s): FSP dropped %zu of %zu threads (%llu of %llu samples)",
                   (int)p->pid, p->comm, tdrop, p->nthreads, (unsigned long long)sdrop,
                   (unsigned long long)p->samples);
        }
        free(tc); free(keep);
    }
}

/* One profile to push: the windows of every process with these labels
 * (a service's workers, the churn of one program, the "unknown" ones). */
typedef struct {
    char *key;                      /* agent_labels_key */
    agent_labels labels;
    agent_fold *fold;
    size_t nprocs;
} push_group;

typedef struct { push_group *v; size_t n, cap; } push_groups;

/* Adds f (consumed) to the group of labels l. */
static void group_add(push_groups *g, const agent_labels *l, agent_fold *f)
{
    char *key = agent_labels_key(l);
    if (!key) { agent_fold_free(f); return; }
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->v[i].key, key) == 0) {
            agent_fold_each(f, merge_into, g->v[i].fold);
            agent_fold_free(f);
            g->v[i].nprocs++;
            free(key);
            return;
        }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 32;
        push_group *v = realloc(g->v, cap * sizeof *v);
        if (!v) { free(key); agent_fold_free(f); return; }
        g->v = v; g->cap = cap;
    }
    push_group *e = &g->v[g->n++];
    memset(e, 0, sizeof *e);
    e->key = key;
    agent_labels_copy(&e->labels, l);
    e->fold = f;
    e->nprocs = 1;
}

/* The profile types besides cpu (issue 13), in proc_state.typed order:
 * their type label and unit; they are not samples at a rate. */
static const struct { const char *type, *unit; } typed_profiles[3] = {
    { "offcpu", "nanoseconds" }, { "alloc_objects", "count" }, { "alloc_space", "bytes" } };

static const char *typed_unit(const agent_labels *l)
{
    const char *type = agent_labels_get(l, "type");
    for (int k = 0; type && k < 3; k++)
        if (strcmp(type, typed_profiles[k].type) == 0) return typed_profiles[k].unit;
    return NULL;
}

static void push_group_send(agent_ctx *c, push_group *g, int64_t from, int64_t until, self_counts *sc)
{
    agent_fold *f = g->fold;
    if (agent_fold_total(f) == 0) return;
    const char *unit = typed_unit(&g->labels);      /* NULL: cpu samples at c->freq */
    if (!unit) agent_fold_each(f, self_add, sc);
    size_t len;
    char *body = agent_fold_text(f, &len);
    if (!body) return;
    /* locations=1 exactly when a frame carries one: names-only
     * profiles (--no-lines, no line tables) keep the plain URL */
    int located = memchr(body, FRAME_SEP, len) != NULL;
    if (c->out) { write_output(c, &g->labels, unit, from, until, body, located); c->m.profiles_written++; }
    else {
        char *url = agent_ingest_url_unit(c->o.server, &g->labels, unit ? 0 : c->freq, unit,
                                          from, until, located);
        if (url) {
            agent_log(1, "%s (%zu process%s): %llu samples, %zu stacks -> %s",
                   agent_labels_get(&g->labels, "service"), g->nprocs, g->nprocs == 1 ? "" : "es",
                   (unsigned long long)agent_fold_total(f), agent_fold_stacks(f), url);
            agent_deliver_profile(c->deliver, url, body, len);
            free(url);
        }
    }
    free(body);
}

/* Brings the counters kept elsewhere (perf, spool) into c->m and rewrites
 * --metrics. */
void interval_metrics(agent_ctx *c)
{
    c->m.dropped_lost = c->perf ? agent_perf_lost(c->perf) : 0;
    c->m.dropped_malformed = c->perf ? agent_perf_malformed(c->perf) : 0;
    c->m.profiles_spool_dropped = c->deliver ? agent_deliver_dropped(c->deliver) : 0;
    c->m.spool_waiting = c->deliver ? agent_deliver_waiting(c->deliver) : 0;
    c->m.processes = c->nprocs;
    c->m.offcpu_unpaired = c->offcpu ? agent_offcpu_unpaired(c->offcpu) : 0;
    c->m.frequency = c->freq;
    if (!c->o.metrics) return;
    char err[600];
    if (agent_metrics_write(c->o.metrics, &c->m, err, sizeof err) < 0) {
        if (!c->metrics_failing) agent_log(0, "%s (the metrics are still in this log, one line per interval)", err);
        c->metrics_failing = 1;
    } else if (c->metrics_failing) {
        agent_log(0, "--metrics %s: written again", c->o.metrics);
        c->metrics_failing = 0;
    }
}

/* Pushes the window: every process's samples, those with equal labels
 * merged into one profile (labels.c: labels are per program, not per
 * process, except for --pid's own processes).  Unless it is the last
 * flush, the rings are drained after each push and after each adapter's
 * output: with stack copies a ring holds well under a second of samples,
 * and pushing hundreds of profiles (a busy node) takes longer.  Samples
 * read meanwhile go to the next window (processes already folded, or new
 * ones) or into this one (processes not folded yet). */
void interval_flush(agent_ctx *c, int64_t from, int64_t until, int last)
{
    self_counts sc = { 0 };
    push_groups groups = { 0 };
    if (c->offcpu) {                  /* threads still off the CPU: the time so far */
        uint64_t at = agent_perf_upto(c->perf);
        agent_offcpu_advance(c->offcpu, at, procs_offcpu_emit, c);
        agent_offcpu_cut(c->offcpu, at, procs_thread_alive, procs_offcpu_emit, c);
    }
    size_t n = c->nprocs;             /* those made while flushing wait */
    for (size_t i = 0; i < n; i++) {
        proc_state *p = &c->procs[i];
        p->idle_intervals = p->samples || p->run ? 0 : p->idle_intervals + 1;
        int adapter = p->run != NULL;
        if (p->samples || p->run) {
            agent_fold *f = agent_fold_new();
            if (f) {
                proc_fold(c, p, f);
                group_add(&groups, &p->labels, f);
            }
        }
        for (int k = 0; k < 3; k++) {  /* offcpu, alloc_*: whole, not pruned */
            if (!p->typed[k]) continue;
            if (k > 0 && c->alloc_scale > 1) agent_fold_scale(p->typed[k], c->alloc_scale);
            agent_labels l = { 0 };
            agent_labels_copy(&l, &p->labels);
            if (agent_labels_set(&l, "type", typed_profiles[k].type) == 0) group_add(&groups, &l, p->typed[k]);
            else agent_fold_free(p->typed[k]);
            p->typed[k] = NULL;
            agent_labels_free(&l);
        }
        procs_clear(p);
        /* libdw keeps every module file it read open: only processes that
         * run keep their state (and descriptors); reopened when they do */
        if (p->idle_intervals >= 1 && p->dwarf) {
            agent_dwarf_close(p->dwarf);
            p->dwarf = NULL;
        }
        if (adapter && !last && c->perf) agent_perf_poll(c->perf, 0, procs_on_sample, c);   /* may move c->procs */
    }
    for (size_t i = 0; i < groups.n; i++) {
        push_group_send(c, &groups.v[i], from, until, &sc);
        free(groups.v[i].key);
        agent_labels_free(&groups.v[i].labels);
        agent_fold_free(groups.v[i].fold);
        if (!last && c->perf) agent_perf_poll(c->perf, 0, procs_on_sample, c);
    }
    free(groups.v);
    /* forget processes that exited (their samples are flushed now; one with
     * samples read since waits for the next flush) */
    for (size_t i = 0; i < c->nprocs;) {
        proc_state *p = &c->procs[i];
        if (p->samples == 0 && !p->typed[0] && !p->typed[1] &&
            (p->retired || (p->idle_intervals >= 1 && !procs_alive(p->pid)))) {
            if (!p->retired) agent_syms_forget(c->syms, p->pid);
            procs_free(p);
            c->procs[i] = c->procs[--c->nprocs];
        } else i++;
    }
    uint64_t lost = c->perf ? agent_perf_lost(c->perf) : 0;
    if (lost != c->lost_reported) {
        agent_log(0, "%llu sample(s) lost by the kernel (ring buffer full)", (unsigned long long)(lost - c->lost_reported));
        c->lost_reported = lost;
    }
    if (c->o.fda) {
        agent_fda_dist d;
        agent_fda_top(sc.names, sc.counts, sc.n, &d);
        double before = c->freq, f = agent_fda_step(&c->fda, &d);
        if (f != before) {
            if (c->perf) agent_perf_set_freq(c->perf, f);
            c->freq = f;
            agent_log(0, "FDA: D = %.4f, frequency %g -> %g Hz", c->fda.last_d, before, f);
        } else agent_log(1, "FDA: D = %.4f, frequency stays %g Hz", c->fda.last_d, f);
    }
    for (size_t i = 0; i < sc.n; i++) free((char *)sc.names[i]);
    free(sc.names); free(sc.counts);
    c->m.intervals++;
    c->m.last_interval = until;
    interval_metrics(c);
    char line[700];
    agent_metrics_line(&c->m, &c->prev, line, sizeof line);
    agent_log(0, "interval %llu (%lld s): %s", (unsigned long long)c->m.intervals,
           (long long)(until - from), line);
    c->prev = c->m;
}
