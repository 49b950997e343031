/* procs.c — the processes the agent sees, and each sample into them.
 *
 * A process's state is made on its first sample (or at start for --pid's):
 * its labels (labels.c: bounded, never a pid but for --pid's own), its
 * adapter, its unwinding decision (auto: the first 20 cpu-clock samples
 * with user frames; mostly 1-2 frames deep means no frame pointers: DWARF).
 * A sample is unwound (the kernel's frame-pointer chain, or libdw over the
 * copied user stack), symbolized at once while the process and its
 * mappings exist, and counted per thread (cpu), handed to offcpu.c
 * (switch-outs and switch-ins) or weighted into the allocation folds.  A
 * process that execs is retired: flushed under its old labels, then
 * freed; the pid's next sample makes a new state.  Nothing here stops the
 * agent: a sample that cannot be used is dropped and counted by reason.
 */
#include "ctx.h"

/* Whether pid was named with --pid (its instance label has the pid). */
static int pid_given(const agent_ctx *c, pid_t pid)
{
    for (size_t i = 0; i < c->o.npids; i++)
        if (c->o.pids[i] == pid) return 1;
    return 0;
}

/* The state of pid, made on its first sample, with its labels (labels.c:
 * bounded, never a pid but for --pid's own processes).  A process that
 * exited before /proc was read is named by its PERF_RECORD_COMM when one
 * was seen; otherwise it is "unknown" (p->unnamed), one series per node.
 * NULL when out of memory. */
proc_state *procs_get(agent_ctx *c, pid_t pid)
{
    for (size_t i = 0; i < c->nprocs; i++)
        if (c->procs[i].pid == pid && !c->procs[i].retired) return &c->procs[i];
    agent_proc_ident *id = malloc(sizeof *id);
    if (!id) return NULL;
    int named = agent_proc_identity(pid, id) == 0;
    if (!named)
        for (size_t i = 0; i < 256 && i < c->ncomms; i++)
            if (c->comms[i].pid == pid) { snprintf(id->comm, sizeof id->comm, "%s", c->comms[i].comm); named = 1; }
    if (c->nprocs == c->capprocs) {
        size_t cap = c->capprocs ? 2 * c->capprocs : 32;
        proc_state *v = realloc(c->procs, cap * sizeof *v);
        if (!v) { free(id); return NULL; }
        c->procs = v; c->capprocs = cap;
    }
    proc_state *p = &c->procs[c->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->unnamed = !named;
    agent_label_opts lo = { c->o.service, c->hostname, pid_given(c, pid), &c->o.labels };
    if (agent_process_labels(id, &lo, &p->labels) < 0) {
        agent_labels_free(&p->labels);
        c->nprocs--;
        free(id);
        return NULL;
    }
    snprintf(p->comm, sizeof p->comm, "%s", id->comm[0] ? id->comm : agent_labels_get(&p->labels, "service"));
    free(id);
    p->adapter = named ? agent_adapter_detect(pid) : AGENT_ADAPTER_NONE;
    if (p->adapter) {
        agent_labels_set(&p->labels, "spy", agent_adapter_spy(p->adapter));
        agent_log(0, "pid %d (%s): profiled with %s", (int)pid, p->comm, agent_adapter_spy(p->adapter));
    }
    if (c->o.unwind == AGENT_UNWIND_DWARF) p->decided = p->use_dwarf = 1;
    if (c->o.unwind == AGENT_UNWIND_FP) p->decided = 1;
    return p;
}

/* pid exec'd: another program now, with its own name, build, mappings and
 * frame pointers or not.  The old state is retired: what it sampled is
 * pushed under its labels at the interval's end, then it is freed; the
 * pid's next sample makes a new state. */
static void proc_exec(agent_ctx *c, proc_state *p)
{
    p->retired = 1;
    if (p->dwarf) agent_dwarf_close(p->dwarf);
    p->dwarf = NULL;
    agent_syms_forget(c->syms, p->pid);          /* its maps snapshot is stale */
}

void procs_clear(proc_state *p)
{
    for (size_t i = 0; i < p->nthreads; i++) agent_fold_free(p->threads[i].fold);
    p->nthreads = 0;
    p->samples = 0;
    for (int k = 0; k < 3; k++) { agent_fold_free(p->typed[k]); p->typed[k] = NULL; }
}

void procs_free(proc_state *p)
{
    procs_clear(p);
    free(p->threads);
    agent_labels_free(&p->labels);
    if (p->dwarf) agent_dwarf_close(p->dwarf);
}

thread_state *procs_thread(proc_state *p, pid_t tid)
{
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid) return &p->threads[i];
    if (p->nthreads == p->capthreads) {
        size_t cap = p->capthreads ? 2 * p->capthreads : 8;
        thread_state *v = realloc(p->threads, cap * sizeof *v);
        if (!v) return NULL;
        p->threads = v; p->capthreads = cap;
    }
    thread_state *t = &p->threads[p->nthreads];
    t->fold = agent_fold_new();
    if (!t->fold) return NULL;
    t->tid = tid;
    t->samples = 0;
    p->nthreads++;
    return t;
}

/* ---- samples ---- */

int procs_alive(pid_t pid);

static void stack_append(agent_ctx *c, size_t *len, const char *frame)
{
    size_t fl = strlen(frame);
    if (*len + fl + 2 > c->stackcap) {
        size_t cap = 2 * c->stackcap + fl;
        char *nb = realloc(c->stackbuf, cap);
        if (!nb) return;
        c->stackbuf = nb; c->stackcap = cap;
    }
    if (*len) c->stackbuf[(*len)++] = ';';
    memcpy(c->stackbuf + *len, frame, fl + 1);
    *len += fl;
}

/* auto: the first 20 user-space samples decide; mostly 1-2 frames deep
 * means frame pointers are missing. */
static void auto_decide(agent_ctx *c, proc_state *p, int user_depth)
{
    if (user_depth == 0) return;
    p->probe++;
    if (user_depth <= 2) p->shallow++;
    if (p->probe < 20) return;
    p->decided = 1;
    p->use_dwarf = p->shallow * 10 >= p->probe * 6;
    agent_log(1, "pid %d (%s): %d of %d samples had at most 2 user frames: %s unwinding",
           (int)p->pid, p->comm, p->shallow, p->probe, p->use_dwarf ? "DWARF" : "frame-pointer");
    if (!p->use_dwarf && p->dwarf) {       /* opened while probing: its files go */
        agent_dwarf_close(p->dwarf);
        p->dwarf = NULL;
    }
    (void)c;
}

/* The stack of a sample into c->stackbuf (root first, ';'-joined):
 * unwound (frame pointers, or DWARF for the processes that need it) and
 * symbolized now.  Answers its length; *caller receives the offset of the
 * frame below the leaf (-1: none).  Only cpu-clock samples decide auto
 * unwinding. */
static size_t sample_stack(agent_ctx *c, proc_state *p, const agent_sample *s, long *caller)
{
    uint64_t kips[MAX_FRAMES], uips[MAX_FRAMES], dips[MAX_FRAMES];
    int nk = 0, nu = 0;
    uint64_t ctx = 0;
    for (uint64_t i = 0; i < s->nr; i++) {
        uint64_t ip = s->chain[i];
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) { ctx = ip; continue; }
        if (ctx == (uint64_t)PERF_CONTEXT_KERNEL && nk < MAX_FRAMES) kips[nk++] = ip;
        else if (ctx == (uint64_t)PERF_CONTEXT_USER && nu < MAX_FRAMES) uips[nu++] = ip;
    }
    int probing = !p->decided;
    if (probing && s->kind == AGENT_SAMPLE_CPU) auto_decide(c, p, nu);
    const uint64_t *user = uips;
    /* while auto still probes, a shallow sample is unwound with DWARF too,
     * so the samples that decide are not left with truncated stacks; an
     * off-CPU sample always (agent_offcpu_splice) */
    int dwarf = p->use_dwarf || (probing && nu <= 2) || s->kind == AGENT_SAMPLE_OFFCPU;
    if (dwarf && s->user.abi != 0) {          /* a user context to unwind */
        agent_dwarf_status st = AGENT_DWARF_FAILED;
        if (!p->dwarf && !p->dwarf_failed) {
            char err[300];
            st = agent_dwarf_open(p->pid, &p->dwarf, err, sizeof err);
            if (st != AGENT_DWARF_OK) {
                p->dwarf_failed = 1;
                /* a process that exited is no news; anything else is */
                agent_log(st == AGENT_DWARF_GONE, "pid %d (%s): DWARF unwinding unavailable (%s), "
                       "using frame pointers", (int)p->pid, p->comm, err);
            }
        }
        int n = 0;
        if (p->dwarf) st = agent_dwarf_unwind(p->dwarf, s->tid, &s->user, dips, MAX_FRAMES, &n);
        if (st == AGENT_DWARF_OK && !p->use_dwarf && s->kind == AGENT_SAMPLE_OFFCPU)
            n = agent_offcpu_splice(dips, n, MAX_FRAMES, uips, nu);
        if (st == AGENT_DWARF_OK) { user = dips; nu = n; }
        else if (st != AGENT_DWARF_NOREGS) c->m.unwind_failed++;   /* frame pointers kept */
    }
    /* an allocation sample is taken at the allocator's first instruction,
     * before it saved a frame pointer: the kernel's chain skips its
     * caller, whose return address is at [sp] (the stack copy's start) */
    if (user == uips && s->kind == AGENT_SAMPLE_ALLOC && nu >= 1 && s->user.stack_size >= 8) {
        uint64_t ret;
        memcpy(&ret, s->user.stack, 8);
        if ((nu < 2 || uips[1] != ret) && nu < MAX_FRAMES) {
            memmove(uips + 2, uips + 1, (size_t)(nu - 1) * sizeof *uips);
            uips[1] = ret;
            nu++;
        }
    }
    char name[AGENT_FRAME_MAX];
    size_t len = 0, prev = 0, last = 0;
    int frames = 0;
    for (int i = nu - 1; i >= 0; i--) {
        agent_syms_frame(c->syms, p->pid, i > 0 ? user[i] - 1 : user[i], 0, !c->o.no_lines,
                         name, sizeof name);
        prev = last; last = len ? len + 1 : 0;
        stack_append(c, &len, name);
        frames++;
    }
    for (int i = nk - 1; i >= 0; i--) {
        agent_syms_name(c->syms, p->pid, i > 0 ? kips[i] - 1 : kips[i], 1, name, sizeof name);
        prev = last; last = len ? len + 1 : 0;
        stack_append(c, &len, name);
        frames++;
    }
    if (len == 0) stack_append(c, &len, "[unknown]");
    *caller = frames >= 2 ? (long)prev : -1;
    return len;
}

/* Off-CPU stretches, as offcpu.c closes or cuts them, into their process's
 * window. */
void procs_offcpu_emit(pid_t pid, pid_t tid, const char *stack, uint64_t ns, void *arg)
{
    agent_ctx *c = arg;
    (void)tid;
    proc_state *p = procs_get(c, pid);
    if (!p) { c->m.dropped_nomem++; return; }
    if (!p->typed[0] && !(p->typed[0] = agent_fold_new())) { c->m.dropped_nomem++; return; }
    agent_fold_add(p->typed[0], stack, ns);
}

/* An allocator's sample: alloc_objects += period, alloc_space += size x
 * period; a call an allocator made itself (glibc's realloc(NULL, n) calls
 * malloc) is not counted twice. */
static void alloc_sample(agent_ctx *c, proc_state *p, const agent_sample *s, long caller)
{
    if (c->alloc_ignore) return;
    if (!agent_alloc_counted(s->alloc_fn, s->arg[0], s->alloc_null_is_malloc)) {
        c->m.alloc_nested++;
        return;
    }
    if (caller >= 0) {
        const char *f = c->stackbuf + caller;
        size_t fl = strcspn(f, ";"), nl = agent_frame_name_len(f);
        if (agent_alloc_is_allocator(f, nl < fl ? nl : fl)) {
            c->m.alloc_nested++;
            return;
        }
    }
    uint64_t objects, space;
    agent_alloc_weights(s->period, agent_alloc_size(s->alloc_fn, s->arg[0], s->arg[1]), &objects, &space);
    for (int k = 1; k <= 2; k++)
        if (!p->typed[k] && !(p->typed[k] = agent_fold_new())) { c->m.dropped_nomem++; return; }
    agent_fold_add(p->typed[1], c->stackbuf, objects);
    if (space) agent_fold_add(p->typed[2], c->stackbuf, space);
    c->m.alloc_samples++;
}

void procs_on_sample(const agent_sample *s, void *arg)
{
    agent_ctx *c = arg;
    if (s->comm) {
        if (s->pid == s->tid) {
            size_t i = c->ncomms++ % 256;
            c->comms[i].pid = s->pid;
            snprintf(c->comms[i].comm, sizeof c->comms[i].comm, "%s", s->comm);
        }
        if (s->exec && s->pid > 0 && s->pid != c->self) {
            for (size_t i = 0; i < c->nprocs; i++)
                if (c->procs[i].pid == s->pid && !c->procs[i].retired) { proc_exec(c, &c->procs[i]); break; }
        }
        return;
    }
    if (s->kind != AGENT_SAMPLE_CPU) {
        if (!c->offcpu && s->kind != AGENT_SAMPLE_ALLOC) return;
        /* --all: the task switched in by this switch */
        if (s->kind == AGENT_SAMPLE_OFFCPU && s->next_tid > 0 && agent_offcpu_in(c->offcpu, s->next_tid, s->time) < 0)
            c->m.dropped_nomem++;
        if (s->kind == AGENT_SAMPLE_SWITCH_IN) {
            if (s->pid != c->self && agent_offcpu_in(c->offcpu, s->tid, s->time) < 0) c->m.dropped_nomem++;
            return;
        }
        if (s->pid <= 0 || s->pid == c->self) return;    /* the idle task, the agent */
        if (s->kind == AGENT_SAMPLE_OFFCPU) c->m.offcpu_switches++;
    } else {
        c->m.samples_read++;
        if (s->pid <= 0 || s->pid == c->self) { c->m.samples_ignored++; return; }
    }
    proc_state *p = procs_get(c, s->pid);
    if (!p) { c->m.dropped_nomem++; return; }
    if (p->adapter) { if (s->kind == AGENT_SAMPLE_CPU) c->m.samples_ignored++; return; }   /* its tool profiles it */
    long caller;
    sample_stack(c, p, s, &caller);
    if (s->kind == AGENT_SAMPLE_OFFCPU) {
        if (agent_offcpu_out(c->offcpu, s->pid, s->tid, s->time, c->stackbuf) < 0) c->m.dropped_nomem++;
        return;
    }
    if (s->kind == AGENT_SAMPLE_ALLOC) { alloc_sample(c, p, s, caller); return; }
    thread_state *t = procs_thread(p, s->tid);
    if (!t) { c->m.dropped_nomem++; return; }
    agent_fold_add(t->fold, c->stackbuf, 1);
    t->samples++;
    p->samples++;
    c->m.samples_profiled++;
    if (p->unnamed) c->m.samples_unnamed++;
}


int procs_thread_alive(pid_t pid, pid_t tid, void *arg)
{
    char path[64];
    struct stat st;
    (void)arg;
    snprintf(path, sizeof path, "/proc/%d/task/%d", (int)pid, (int)tid);
    return stat(path, &st) == 0;
}

int procs_alive(pid_t pid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    return stat(path, &st) == 0;
}
