/* offcpu.c — off-CPU time: how long each thread stayed off the CPU, and
 * where it was when it left (issue 13).
 *
 * perf.c reads two kinds of event for the watched threads: a switch-out
 * (the sched:sched_switch tracepoint, fired in the context of the thread
 * leaving the CPU, whose callchain main.c turns into a stack string) and a
 * switch-in (a PERF_RECORD_SWITCH, or under --all the tracepoint's
 * next_pid).  A stretch off the CPU runs from a thread's switch-out to its
 * next switch-in and weighs its length in nanoseconds, charged to the
 * switch-out's stack.  Blocked (sleep, I/O, locks) and preempted (runnable,
 * waiting for a CPU) both count: the time is off the CPU either way, and
 * the kernel frames (futex_wait, do_nanosleep, or the preemption path) tell
 * which.
 *
 * Order.  The events of one thread can be in different CPUs' rings (it
 * blocks on one CPU, wakes on another) and the rings are drained one after
 * the other, so events are queued and applied in time order only up to a
 * watermark (agent_perf_upto: every record stamped before it has been
 * read); later ones wait for the next drain.
 *
 * Periods.  At the end of a push period (agent_offcpu_cut at the
 * watermark) a thread still off the CPU is charged the time so far and its
 * stretch restarts at the cut, so a thread blocked for a minute shows in
 * every 10 s profile with 10 s, and no time is lost or counted twice.
 * A thread that exited while off the CPU (its last switch-out) is forgotten
 * at the cut, not charged until the agent stops.
 *
 * Records can be lost (a full ring): a switch-in without an open stretch
 * is ignored; a second switch-out without a switch-in between replaces the
 * first (the time in between is unknown) and is counted as unpaired.
 *
 * Stacks.  The switch-out happens inside a libc wrapper (read,
 * clock_nanosleep, __lll_lock_wait) that keeps no frame pointer, so the
 * kernel's frame-pointer chain goes from the wrapper straight to its
 * caller's caller: `worker;read` for `worker;site_read;read`.  perf.c
 * copies a little user stack with each switch-out (2 KB, or the DWARF
 * mode's 16 KB), libdw walks the top frames from it, and
 * agent_offcpu_splice continues that walk with the kernel's chain from the
 * first return address both share.
 *
 * Also here: finding a tracepoint's id and a raw field's offset in tracefs.
 */
#include "offcpu.h"
#include "readfile.h"

#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    uint64_t time, seq;
    pid_t pid, tid;
    char *stack;                    /* NULL: a switch-in */
} offcpu_event;

typedef struct {
    pid_t tid;                      /* 0 empty, -1 deleted */
    pid_t pid;
    uint64_t since;
    char *stack;
} offcpu_open;

struct agent_offcpu {
    offcpu_event *q; size_t nq, capq;
    uint64_t seq;
    offcpu_open *t; size_t cap, used, live;   /* open stretches, by tid */
    uint64_t unpaired;
};

agent_offcpu *agent_offcpu_new(void)
{
    agent_offcpu *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->cap = 256;
    o->t = calloc(o->cap, sizeof *o->t);
    if (!o->t) { free(o); return NULL; }
    return o;
}

void agent_offcpu_free(agent_offcpu *o)
{
    if (!o) return;
    for (size_t i = 0; i < o->nq; i++) free(o->q[i].stack);
    for (size_t i = 0; i < o->cap; i++) if (o->t[i].tid > 0) free(o->t[i].stack);
    free(o->q);
    free(o->t);
    free(o);
}

static size_t slot_of(pid_t tid, size_t cap) { return ((uint32_t)tid * 2654435761u) & (cap - 1); }

static offcpu_open *open_find(agent_offcpu *o, pid_t tid)
{
    for (size_t i = slot_of(tid, o->cap), k = 0; k < o->cap; i = (i + 1) & (o->cap - 1), k++) {
        if (o->t[i].tid == 0) return NULL;
        if (o->t[i].tid == tid) return &o->t[i];
    }
    return NULL;
}

static void open_del(agent_offcpu *o, offcpu_open *e)
{
    free(e->stack);
    e->stack = NULL;
    e->tid = -1;
    o->live--;
}

static int open_grow(agent_offcpu *o)
{
    size_t cap = o->live * 4 > o->cap ? o->cap * 2 : o->cap;   /* else only tombstones go */
    offcpu_open *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < o->cap; i++) {
        if (o->t[i].tid <= 0) continue;
        size_t j = slot_of(o->t[i].tid, cap);
        while (t[j].tid != 0) j = (j + 1) & (cap - 1);
        t[j] = o->t[i];
    }
    free(o->t);
    o->t = t;
    o->cap = cap;
    o->used = o->live;
    return 0;
}

/* A new open stretch for tid (not open now); takes stack. */
static int open_add(agent_offcpu *o, pid_t pid, pid_t tid, uint64_t since, char *stack)
{
    if ((o->used + 1) * 10 > o->cap * 7 && open_grow(o) < 0) return -1;
    size_t i = slot_of(tid, o->cap);
    while (o->t[i].tid > 0) i = (i + 1) & (o->cap - 1);
    if (o->t[i].tid == 0) o->used++;
    o->t[i] = (offcpu_open){ tid, pid, since, stack };
    o->live++;
    return 0;
}

static int queue(agent_offcpu *o, pid_t pid, pid_t tid, uint64_t time, char *stack)
{
    if (o->nq == o->capq) {
        size_t cap = o->capq ? 2 * o->capq : 1024;
        offcpu_event *q = realloc(o->q, cap * sizeof *q);
        if (!q) return -1;
        o->q = q; o->capq = cap;
    }
    o->q[o->nq++] = (offcpu_event){ time, o->seq++, pid, tid, stack };
    return 0;
}

int agent_offcpu_out(agent_offcpu *o, pid_t pid, pid_t tid, uint64_t time, const char *stack)
{
    char *s = strdup(stack);
    if (!s) return -1;
    if (queue(o, pid, tid, time, s) < 0) { free(s); return -1; }
    return 0;
}

int agent_offcpu_in(agent_offcpu *o, pid_t tid, uint64_t time)
{
    return queue(o, 0, tid, time, NULL);
}

static int event_cmp(const void *a, const void *b)
{
    const offcpu_event *x = a, *y = b;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void agent_offcpu_advance(agent_offcpu *o, uint64_t upto, agent_offcpu_emit fn, void *arg)
{
    if (o->nq == 0) return;
    qsort(o->q, o->nq, sizeof *o->q, event_cmp);
    size_t i = 0;
    for (; i < o->nq && o->q[i].time <= upto; i++) {
        offcpu_event *e = &o->q[i];
        offcpu_open *t = open_find(o, e->tid);
        if (e->stack) {                         /* switch-out */
            if (t) { o->unpaired++; open_del(o, t); }
            if (open_add(o, e->pid, e->tid, e->time, e->stack) < 0) free(e->stack);
            e->stack = NULL;
        } else if (t) {                         /* switch-in closing a stretch */
            if (e->time > t->since) fn(t->pid, t->tid, t->stack, e->time - t->since, arg);
            open_del(o, t);
        }
    }
    memmove(o->q, o->q + i, (o->nq - i) * sizeof *o->q);
    o->nq -= i;
}

void agent_offcpu_cut(agent_offcpu *o, uint64_t at, int (*alive)(pid_t pid, pid_t tid, void *arg),
                      agent_offcpu_emit fn, void *arg)
{
    for (size_t i = 0; i < o->cap; i++) {
        offcpu_open *t = &o->t[i];
        if (t->tid <= 0) continue;
        if (alive && !alive(t->pid, t->tid, arg)) { open_del(o, t); continue; }
        if (at > t->since) {
            fn(t->pid, t->tid, t->stack, at - t->since, arg);
            t->since = at;
        }
    }
}

size_t agent_offcpu_open(const agent_offcpu *o) { return o->live; }
size_t agent_offcpu_queued(const agent_offcpu *o) { return o->nq; }
uint64_t agent_offcpu_unpaired(const agent_offcpu *o) { return o->unpaired; }

int agent_offcpu_splice(uint64_t *d, int nd, int max, const uint64_t *f, int nf)
{
    for (int i = 1; i < nd; i++)
        for (int j = 1; j < nf; j++)
            if (d[i] == f[j]) {
                int n = i + 1;
                for (int k = j + 1; k < nf && n < max; k++) d[n++] = f[k];
                return n;
            }
    if (nd >= nf) return nd;
    if (nf > max) nf = max;
    memcpy(d, f, (size_t)nf * sizeof *d);
    return nf;
}

/* ---- tracefs ---- */

static const char *const tracefs_roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

static int tp_read(const char *sys, const char *name, const char *field, int *id, int *field_off,
                   char *err, size_t errlen)
{
    for (size_t r = 0; r < 2; r++) {
        char path[512];
        char *text = NULL;
        snprintf(path, sizeof path, "%s/events/%s/%s/id", tracefs_roots[r], sys, name);
        if (agent_read_file(path, &text, NULL) < 0) {
            if (errno == EACCES || errno == EPERM) {
                snprintf(err, errlen, "tracepoint %s:%s: %s: %s (tracefs is readable by root "
                         "only: run the agent as root)", sys, name, path, strerror(errno));
                return -1;
            }
            continue;
        }
        *id = atoi(text);
        free(text);
        if (*id <= 0) { snprintf(err, errlen, "%s: not a tracepoint id", path); return -1; }
        if (!field) return 0;
        snprintf(path, sizeof path, "%s/events/%s/%s/format", tracefs_roots[r], sys, name);
        if (agent_read_file(path, &text, NULL) < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return -1;
        }
        /* "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;" */
        char pat[128];
        snprintf(pat, sizeof pat, " %s;", field);
        const char *f = strstr(text, pat);
        const char *o = f ? strstr(f, "offset:") : NULL;
        if (!o) {
            snprintf(err, errlen, "%s: no field '%s'", path, field);
            free(text);
            return -1;
        }
        *field_off = atoi(o + 7);
        free(text);
        return 0;
    }
    return 1;                           /* not found */
}

int agent_tracepoint(const char *sys, const char *name, const char *field,
                     int *id, int *field_off, char *err, size_t errlen)
{
    int rc = tp_read(sys, name, field, id, field_off, err, errlen);
    if (rc <= 0) return rc;
    /* not found: is tracefs mounted at all? */
    struct stat st;
    char events[64];
    snprintf(events, sizeof events, "%s/events", tracefs_roots[0]);
    int mounted = stat(events, &st) == 0 ||
                  (snprintf(events, sizeof events, "%s/events", tracefs_roots[1]), stat(events, &st) == 0);
    if (!mounted && (errno == EACCES || errno == EPERM)) {
        snprintf(err, errlen, "tracepoint %s:%s: %s: %s (tracefs is readable by root only: run "
                 "the agent as root)", sys, name, events, strerror(errno));
        return -1;
    }
    if (!mounted) {
        if (mount("nodev", tracefs_roots[0], "tracefs", 0, NULL) < 0) {
            snprintf(err, errlen, "tracepoint %s:%s: tracefs is not mounted (neither %s nor %s) "
                     "and mounting it on %s failed: %s (as root: mount -t tracefs nodev %s)",
                     sys, name, tracefs_roots[0], tracefs_roots[1], tracefs_roots[0],
                     strerror(errno), tracefs_roots[0]);
            return -1;
        }
        rc = tp_read(sys, name, field, id, field_off, err, errlen);
        if (rc <= 0) return rc;
    }
    snprintf(err, errlen, "tracepoint %s:%s not found: no %s/events/%s/%s/id (a kernel "
             "without CONFIG_TRACEPOINTS, or tracefs hidden from this container)",
             sys, name, tracefs_roots[0], sys, name);
    return -1;
}
