/* perf.c — sampling with perf_event_open.
 *
 * The cpu-clock software event (PERF_COUNT_SW_CPU_CLOCK: an hrtimer, so it
 * works in VMs and containers without a PMU), sampling every 1e9/f ns of
 * CPU time.  --all
 * opens one event per online CPU for every process (pid -1); --pid opens
 * one event per (thread, CPU) for each thread of each process, with
 * inherit, so threads created later are followed, and redirects them all
 * (PERF_EVENT_IOC_SET_OUTPUT) into one ring buffer per CPU.  Samples carry
 * TID, TIME and CALLCHAIN, plus REGS_USER and STACK_USER when DWARF
 * unwinding may be needed.  Rings are drained after poll(); records that
 * wrap around the ring's end are copied out first.
 *
 * Two more kinds of event share the same rings (issue 13), opened beside
 * each cpu-clock event, for the same threads or CPUs:
 *   - off-CPU (--offcpu): the sched:sched_switch tracepoint, period 1,
 *     which fires in the context of the task switched out, so its
 *     callchain is where that thread blocks (exclude_kernel would silence a
 *     tracepoint: --no-kernel sets exclude_callchain_kernel instead).  The
 *     switch-in: under --pid, PERF_RECORD_SWITCH records of the watched
 *     threads (attr.context_switch; the switch-out records are ignored, the
 *     sample says it); under --all, where the events are per CPU and see
 *     every switch, the raw record's next_pid (PERF_SAMPLE_RAW): one record
 *     per switch instead of three.
 *   - allocation (--alloc): a uprobe per allocator entry point, defined in
 *     tracefs's uprobe_events and opened by its id (PERF_TYPE_TRACEPOINT)
 *     where the agent may write there, else through the uprobe PMU
 *     (config1 = the file's path, config2 = the entry's offset): see
 *     uprobe.c for why tracefs (a window's events close at once),
 *     sample_period = every Nth call, with the user registers (the size
 *     arguments) and 64 bytes of user stack (the return address, which the
 *     kernel's callchain misses at a function's entry); kernel callchains
 *     excluded.
 * Every event samples PERF_SAMPLE_IDENTIFIER, so that a record says which
 * event (kind, sample layout) it comes from, and uses CLOCK_MONOTONIC
 * (use_clockid; the kernel refuses to mix clocks in one ring), so that
 * records from different CPUs can be ordered and compared with the agent's
 * own clock (agent_perf_upto).  An off-CPU or allocation event that cannot
 * be opened disables its kind with the reason (agent_perf_why_not); the
 * on-CPU sampling goes on.
 */
#include "perf.h"
#include "readfile.h"

#include <stdio.h>
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd;                         /* the fd owning the ring */
    struct perf_event_mmap_page *meta;
    unsigned char *data;
    uint64_t size;                  /* data area bytes (power of two) */
} perf_ring;

/* What a record's identifier says: which kind of event, its layout. */
typedef struct {
    uint64_t id;
    uint64_t sample_type;
    uint8_t kind;                   /* agent_sample_kind of its samples */
    uint8_t fn;                     /* ALLOC: agent_alloc_fn */
    uint8_t null_is_malloc;         /* ALLOC: the target's null_is_malloc */
} perf_ev;

struct agent_perf {
    int *fds; size_t nfds, capfds;  /* every event */
    uint8_t *fdkind;                /* per fd: its kind (set_freq: cpu only) */
    perf_ring *rings; size_t nrings;
    struct pollfd *pfds;
    size_t pages;
    agent_perf_opts o;
    perf_ev *evs; size_t nevs, capevs;   /* sorted by id after opening */
    int has_offcpu, has_alloc;
    int alloc_on;                   /* the allocation events are open */
    int *cpu_ring;                  /* per CPU: the fd owning its ring, -1 */
    int ncpu;
    char why_offcpu[512], why_alloc[512];
    agent_uprobe_set up;            /* --alloc: the tracefs probes (up.v NULL: PMU) */
    char alloc_how[400];
    uint64_t upto;
    uint64_t lost;
    uint64_t malformed;             /* records that could not be parsed */
    unsigned char *scratch;         /* a wrapped record, copied out */
    size_t scratch_cap;
};

void agent_perf_explain(int errnum, char *err, size_t errlen)
{
    char *text = NULL;
    int paranoid = 99;
    if (agent_read_file("/proc/sys/kernel/perf_event_paranoid", &text, NULL) == 0) {
        paranoid = atoi(text);
        free(text);
    }
    if (errnum == EACCES || errnum == EPERM)
        snprintf(err, errlen,
                 "perf_event_open: %s: perf_event is not permitted here "
                 "(kernel.perf_event_paranoid = %d; a seccomp profile or a container "
                 "without CAP_PERFMON can also refuse it). Fix: run the agent as root or "
                 "give it CAP_PERFMON (setcap cap_perfmon,cap_sys_ptrace+ep bin/flamedb-agent), "
                 "or lower the setting: sudo sysctl kernel.perf_event_paranoid=1 "
                 "(profiling other users' processes or --all needs -1 or CAP_PERFMON)%s",
                 strerror(errnum), paranoid,
                 paranoid >= 2 ? "; at 2, your own processes can still be sampled in user space "
                                 "only: add --no-kernel." : ".");
    else if (errnum == ENOSYS)
        snprintf(err, errlen, "perf_event_open: not supported by this kernel (or blocked by seccomp): %s",
                 strerror(errnum));
    else
        snprintf(err, errlen, "perf_event_open: %s (kernel.perf_event_paranoid = %d)",
                 strerror(errnum), paranoid);
}

/* The parts every event shares: the ring's clock, the identifier. */
static void attr_common(struct perf_event_attr *a, int inherit)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                     PERF_SAMPLE_CALLCHAIN;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->exclude_hv = 1;
    a->inherit = inherit ? 1 : 0;
    a->disabled = 1;
    a->sample_id_all = 1;
}

/* Registers and a user stack copy: for DWARF unwinding (want_stack), and
 * for every off-CPU event a small one at least (AGENT_OFFCPU_STACK_SIZE):
 * a thread blocks inside a libc wrapper that keeps no frame pointer, so
 * the kernel's frame-pointer chain skips the wrapper's caller; main.c
 * recovers it with libdw from the copy and splices the chain's rest. */
static void attr_stack(struct perf_event_attr *a, const agent_perf_opts *o, agent_sample_kind kind)
{
    if (!o->want_stack && kind == AGENT_SAMPLE_CPU) return;
    a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a->sample_regs_user = AGENT_DWARF_REGS_MASK;
    a->sample_stack_user = o->want_stack ? AGENT_DWARF_STACK_SIZE :
                           kind == AGENT_SAMPLE_OFFCPU ? AGENT_OFFCPU_STACK_SIZE : AGENT_ALLOC_STACK_SIZE;
}

/* kind: AGENT_SAMPLE_CPU, _OFFCPU or _ALLOC (with target t, and tp_id
 * its tracefs event's id, 0: the PMU). */
static int perf_open(pid_t pid, int cpu, const agent_perf_opts *o, int inherit,
                     agent_sample_kind kind, const agent_uprobe_target *t, int tp_id)
{
    struct perf_event_attr a;
    attr_common(&a, inherit);
    attr_stack(&a, o, kind);
    if (kind == AGENT_SAMPLE_CPU) {
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_CPU_CLOCK;
        /* cpu-clock counts nanoseconds: a fixed period of 1e9/f ns is exactly f
         * samples per second of CPU time, also when a thread's time is spread
         * over several (thread, CPU) events, where frequency mode's period
         * estimation falls short. */
        a.freq = 0;
        a.sample_period = (uint64_t)(1e9 / (o->freq > 1 ? o->freq : 1));
        a.exclude_kernel = o->no_kernel ? 1 : 0;
        a.exclude_idle = 1;
        a.comm = 1;                     /* names of processes that exec, even */
        a.comm_exec = 1;                /* when they exit before /proc is read */
    } else if (kind == AGENT_SAMPLE_OFFCPU) {
        a.type = PERF_TYPE_TRACEPOINT;
        a.config = (uint64_t)o->offcpu_tp;
        a.sample_period = 1;
        /* a tracepoint fires in kernel mode: exclude_kernel would drop
         * every one; --no-kernel only leaves the kernel frames out */
        a.exclude_callchain_kernel = o->no_kernel ? 1 : 0;
        if (pid == -1) a.sample_type |= PERF_SAMPLE_RAW;   /* next_pid */
        else a.context_switch = 1;                        /* switch-in records */
    } else {
        if (tp_id > 0) {
            a.type = PERF_TYPE_TRACEPOINT;
            a.config = (uint64_t)tp_id;
        } else {
            a.type = (uint32_t)o->uprobe_type;
            a.config = 0;               /* entry, not return probe */
            a.config1 = (uint64_t)(uintptr_t)t->path;
            a.config2 = t->offset;
        }
        /* not PERF_SAMPLE_PERIOD: with it the kernel samples every hit of
         * a software or tracepoint event (perf_swevent_event), whatever
         * the period; each sample stands for alloc_period calls */
        a.sample_period = o->alloc_period;
        a.exclude_kernel = 1;
        a.exclude_callchain_kernel = 1; /* the breakpoint trap's path */
    }
    int fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    return fd;
}

static int perf_note_ev(agent_perf *p, int fd, uint64_t sample_type, agent_sample_kind kind, int fn,
                        int null_is_malloc)
{
    uint64_t id;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0) return -1;
    if (p->nevs == p->capevs) {
        size_t cap = p->capevs ? 2 * p->capevs : 64;
        perf_ev *v = realloc(p->evs, cap * sizeof *v);
        if (!v) return -1;
        p->evs = v; p->capevs = cap;
    }
    p->evs[p->nevs++] = (perf_ev){ id, sample_type, (uint8_t)kind, (uint8_t)fn, (uint8_t)null_is_malloc };
    return 0;
}

static uint64_t sample_type_of(const agent_perf_opts *o, agent_sample_kind kind, pid_t pid)
{
    struct perf_event_attr a;
    attr_common(&a, 0);
    attr_stack(&a, o, kind);
    if (kind == AGENT_SAMPLE_OFFCPU && pid == -1) a.sample_type |= PERF_SAMPLE_RAW;
    return a.sample_type;
}

static int perf_add_fd(agent_perf *p, int fd, agent_sample_kind kind)
{
    if (p->nfds == p->capfds) {
        size_t cap = p->capfds ? 2 * p->capfds : 16;
        int *v = realloc(p->fds, cap * sizeof *v);
        if (!v) return -1;
        p->fds = v;
        uint8_t *k = realloc(p->fdkind, cap);
        if (!k) return -1;
        p->fdkind = k;
        p->capfds = cap;
    }
    p->fdkind[p->nfds] = (uint8_t)kind;
    p->fds[p->nfds++] = fd;
    return 0;
}

/* Maps the ring of fd; with the extra kinds of event the ring is larger,
 * halved down to the base size when the locked-memory limit refuses it. */
static int perf_map_ring(agent_perf *p, int fd, char *err, size_t errlen)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t base = p->o.want_stack ? 256 : 64;    /* 1 MB / 256 KB per CPU */
    void *m;
    for (;;) {
        m = mmap(NULL, (p->pages + 1) * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED || p->pages <= base || p->nrings > 0) break;
        p->pages /= 2;                  /* the first ring decides the size of all */
    }
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "mmap of the perf ring buffer: %s (raise ulimit -l or "
                 "kernel.perf_event_mlock_kb)", strerror(errno));
        return -1;
    }
    perf_ring *r = &p->rings[p->nrings++];
    r->fd = fd;
    r->meta = m;
    r->data = (unsigned char *)m + pg;
    r->size = p->pages * pg;
    return 0;
}

/* The tracefs event id of allocation target i, 0: the PMU's. */
static int alloc_tp(const agent_perf *p, size_t i)
{
    return p->up.v && i < p->up.n ? p->up.v[i].id : 0;
}

/* --alloc: the probes in tracefs where it can be (uprobe.c), else the
 * PMU's; alloc_how says which and why. */
static void alloc_define(agent_perf *p)
{
    char err[300];
    if (p->o.alloc_probes == AGENT_UPROBES_PMU) {
        snprintf(p->alloc_how, sizeof p->alloc_how, "uprobe PMU (--alloc-probes pmu)");
        return;
    }
    if (agent_uprobe_define(&p->up, p->o.alloc, p->o.nalloc, err, sizeof err) < 0) {
        if (p->o.alloc_probes == AGENT_UPROBES_TRACEFS) {
            snprintf(p->why_alloc, sizeof p->why_alloc, "--alloc-probes tracefs: %.400s", err);
            p->has_alloc = 0;
        }
        snprintf(p->alloc_how, sizeof p->alloc_how, "uprobe PMU (no tracefs probes: %.300s)", err);
        return;
    }
    size_t def = 0;
    for (size_t i = 0; i < p->up.n; i++) def += p->up.v[i].id > 0;
    snprintf(p->alloc_how, sizeof p->alloc_how, "tracefs %s/uprobe_events, group %s (%zu of %zu entry points%s)",
             p->up.dir, p->up.group, def, p->up.n,
             p->up.kept ? "; kept registered by a disabled event on kthreadd"
                        : "; no kernel thread to keep them registered: each window's last close waits ~90 ms");
}

static agent_perf *perf_new(const agent_perf_opts *o, int ncpu)
{
    agent_perf *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->o = *o;
    p->has_offcpu = o->offcpu_tp > 0;
    p->has_alloc = o->nalloc > 0 && o->alloc_period > 0 && o->uprobe_type > 0;
    if (!p->has_offcpu) snprintf(p->why_offcpu, sizeof p->why_offcpu, "not asked for (--offcpu)");
    if (!p->has_alloc) snprintf(p->why_alloc, sizeof p->why_alloc, "not asked for (--alloc)");
    p->pages = o->want_stack ? 256 : 64;      /* 1 MB / 256 KB per CPU */
    if (p->has_offcpu || p->has_alloc) p->pages *= 4;
    p->rings = calloc((size_t)ncpu, sizeof *p->rings);
    p->pfds = calloc((size_t)ncpu, sizeof *p->pfds);
    p->cpu_ring = malloc((size_t)ncpu * sizeof *p->cpu_ring);
    if (!p->rings || !p->pfds || !p->cpu_ring) { agent_perf_close(p); return NULL; }
    p->ncpu = ncpu;
    for (int c = 0; c < ncpu; c++) p->cpu_ring[c] = -1;
    if (p->has_alloc) alloc_define(p);
    p->alloc_on = p->has_alloc;
    return p;
}

static int perf_enable(agent_perf *p)
{
    for (size_t i = 0; i < p->nfds; i++) ioctl(p->fds[i], PERF_EVENT_IOC_ENABLE, 0);
    for (size_t i = 0; i < p->nrings; i++)
        p->pfds[i] = (struct pollfd){ .fd = p->rings[i].fd, .events = POLLIN };
    return 0;
}

static int ev_cmp(const void *a, const void *b)
{
    uint64_t x = ((const perf_ev *)a)->id, y = ((const perf_ev *)b)->id;
    return x < y ? -1 : x > y;
}

static const perf_ev *perf_find_ev(const agent_perf *p, uint64_t id)
{
    size_t lo = 0, hi = p->nevs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->evs[mid].id == id) return &p->evs[mid];
        if (p->evs[mid].id < id) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

/* fd joins the agent: its identifier noted, its ring mapped (the first
 * event of its CPU) or its output redirected into its CPU's ring. */
static int perf_attach(agent_perf *p, int fd, agent_sample_kind kind, const agent_uprobe_target *t,
                       pid_t pid, int *ring, char *err, size_t errlen)
{
    if (perf_add_fd(p, fd, kind) < 0 ||
        perf_note_ev(p, fd, sample_type_of(&p->o, kind, pid), kind, t ? (int)t->fn : 0,
                     t ? t->null_is_malloc : 0) < 0) {
        if (p->nfds == 0 || p->fds[p->nfds - 1] != fd) close(fd);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (*ring < 0) {
        if (perf_map_ring(p, fd, err, errlen) < 0) return -1;
        *ring = fd;
    } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, *ring) < 0) {
        snprintf(err, errlen, "PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static const char *fn_name(agent_alloc_fn fn)
{
    return fn == AGENT_ALLOC_MALLOC ? "malloc" : fn == AGENT_ALLOC_CALLOC ? "calloc" : "realloc";
}

/* Opens the events of one (pid, cpu): cpu-clock, then off-CPU and
 * allocation while their kinds are on (a refusal turns its kind off, with
 * the reason).  Answers 1; 0 when the CPU takes no event (offline);
 * -2 when the thread is gone; -1 on an error that stops the agent. */
static int perf_open_at(agent_perf *p, pid_t pid, int cpu, int inherit, int *ring,
                        char *err, size_t errlen)
{
    int fd = perf_open(pid, cpu, &p->o, inherit, AGENT_SAMPLE_CPU, NULL, 0);
    if (fd < 0) {
        if (errno == ESRCH) return -2;
        if (errno == ENODEV || errno == EINVAL) return 0;
        agent_perf_explain(errno, err, errlen);
        return -1;
    }
    if (perf_attach(p, fd, AGENT_SAMPLE_CPU, NULL, pid, ring, err, errlen) < 0) return -1;
    if (p->has_offcpu) {
        fd = perf_open(pid, cpu, &p->o, inherit, AGENT_SAMPLE_OFFCPU, NULL, 0);
        if (fd < 0 && errno != ESRCH) {
            char why[400];
            agent_perf_explain(errno, why, sizeof why);
            snprintf(p->why_offcpu, sizeof p->why_offcpu, "the sched:sched_switch tracepoint "
                     "(id %d) could not be opened: %.400s", p->o.offcpu_tp, why);
            p->has_offcpu = 0;
        } else if (fd >= 0 && perf_attach(p, fd, AGENT_SAMPLE_OFFCPU, NULL, pid, ring, err, errlen) < 0)
            return -1;
    }
    for (size_t i = 0; p->has_alloc && i < p->o.nalloc; i++) {
        const agent_uprobe_target *t = &p->o.alloc[i];
        fd = perf_open(pid, cpu, &p->o, inherit, AGENT_SAMPLE_ALLOC, t, alloc_tp(p, i));
        if (fd < 0 && errno != ESRCH) {
            char why[400];
            agent_perf_explain(errno, why, sizeof why);
            snprintf(p->why_alloc, sizeof p->why_alloc, "a uprobe on %s in %.200s (offset 0x%llx) "
                     "could not be opened: %.250s", fn_name(t->fn), t->path,
                     (unsigned long long)t->offset, why);
            p->has_alloc = 0;
        } else if (fd >= 0 && perf_attach(p, fd, AGENT_SAMPLE_ALLOC, t, pid, ring, err, errlen) < 0)
            return -1;
    }
    return 1;
}

static void perf_done(agent_perf *p)
{
    qsort(p->evs, p->nevs, sizeof *p->evs, ev_cmp);
    perf_enable(p);
}

agent_perf *agent_perf_open_all(const agent_perf_opts *o, char *err, size_t errlen)
{
    int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
    agent_perf *p = perf_new(o, ncpu);
    if (!p) { snprintf(err, errlen, "out of memory"); return NULL; }
    for (int cpu = 0; cpu < ncpu; cpu++) {
        if (perf_open_at(p, -1, cpu, 0, &p->cpu_ring[cpu], err, errlen) == -1) {
            agent_perf_close(p);
            return NULL;
        }
    }
    if (p->nrings == 0) { snprintf(err, errlen, "perf_event_open: no online CPU accepted the event"); agent_perf_close(p); return NULL; }
    perf_done(p);
    return p;
}

agent_perf *agent_perf_open_pids(const pid_t *pids, size_t n, const agent_perf_opts *o,
                                 char *err, size_t errlen)
{
    int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
    agent_perf *p = perf_new(o, ncpu);
    if (!p) { snprintf(err, errlen, "out of memory"); return NULL; }
    int *ring_fd = p->cpu_ring;
    size_t opened = 0;
    for (size_t i = 0; ring_fd && i < n; i++) {
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%d/task", (int)pids[i]);
        DIR *d = opendir(dir);
        if (!d) {
            snprintf(err, errlen, "--pid %d: no such process", (int)pids[i]);
            goto fail;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            pid_t tid = (pid_t)atoi(e->d_name);
            if (tid <= 0) continue;
            for (int cpu = 0; cpu < ncpu; cpu++) {
                int rc = perf_open_at(p, tid, cpu, 1, &ring_fd[cpu], err, errlen);
                if (rc == -2) break;                         /* thread gone */
                if (rc == -1) { closedir(d); goto fail; }
                opened += (size_t)rc;
            }
        }
        closedir(d);
    }
    if (opened == 0) {
        snprintf(err, errlen, "perf_event_open: no thread of the given processes could be sampled");
        goto fail;
    }
    perf_done(p);
    return p;
fail:
    agent_perf_close(p);
    return NULL;
}

int agent_perf_has(const agent_perf *p, agent_sample_kind kind)
{
    return kind == AGENT_SAMPLE_CPU ? 1 : kind == AGENT_SAMPLE_ALLOC ? p->has_alloc : p->has_offcpu;
}

const char *agent_perf_why_not(const agent_perf *p, agent_sample_kind kind)
{
    return kind == AGENT_SAMPLE_ALLOC ? p->why_alloc : p->why_offcpu;
}

void agent_perf_close(agent_perf *p)
{
    if (!p) return;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < p->nrings; i++) munmap(p->rings[i].meta, (p->pages + 1) * pg);
    for (size_t i = 0; i < p->nfds; i++) close(p->fds[i]);
    agent_uprobe_undefine(&p->up);      /* after every event on the probes */
    free(p->fds); free(p->fdkind); free(p->rings); free(p->pfds); free(p->scratch);
    free(p->cpu_ring);
    free(p->evs);
    free(p);
}

int agent_perf_set_freq(agent_perf *p, double freq)
{
    uint64_t f = (uint64_t)(1e9 / (freq > 1 ? freq : 1));   /* period, ns */
    int rc = 0;
    for (size_t i = 0; i < p->nfds; i++)
        if (p->fdkind[i] == AGENT_SAMPLE_CPU && ioctl(p->fds[i], PERF_EVENT_IOC_PERIOD, &f) < 0) rc = -1;
    p->o.freq = freq;
    return rc;
}

int agent_perf_pause(agent_perf *p, int paused)
{
    int rc = 0;
    for (size_t i = 0; i < p->nfds; i++)
        if (p->fdkind[i] != AGENT_SAMPLE_ALLOC &&
            ioctl(p->fds[i], paused ? PERF_EVENT_IOC_DISABLE : PERF_EVENT_IOC_ENABLE, 0) < 0) rc = -1;
    return rc;
}

uint64_t agent_perf_upto(const agent_perf *p) { return p->upto; }

/* ---- allocation probes on and off (--alloc-duty) ---- */

/* Closing a perf uprobe event of the PMU waits for a grace period (the
 * kernel's uprobe_unregister_sync: about 90 ms measured) under a global
 * mutex, so closes are serial, also from several threads; and the
 * breakpoint stays in the process until the last event on it is closed.
 * So with PMU probes each window ends with a tail of about (events - 1) x
 * 90 ms, events = threads x CPUs x 3 under --pid (12 for 2 threads on 2
 * CPUs: ~1 s), during which the program still traps.  With tracefs probes
 * (uprobe.c) and their keepers no close waits and the breakpoints leave
 * at once; without keepers each probe's last close waits, after taking
 * its breakpoint out: the events are closed in the order they were opened,
 * so every probe's last event comes after all the others.  The events are
 * disabled first (at once, no wait), so the tail takes no samples and the
 * window's time is exact.  The same wait makes the agent's exit slower
 * (the keepers: ~90 ms per probe). */

/* Opens the allocation events of one (pid, cpu) into the CPU's ring. */
static int alloc_open_at(agent_perf *p, pid_t pid, int cpu, int inherit, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->o.nalloc; i++) {
        int fd = perf_open(pid, cpu, &p->o, inherit, AGENT_SAMPLE_ALLOC, &p->o.alloc[i], alloc_tp(p, i));
        if (fd < 0) {
            if (errno == ESRCH) return -2;
            snprintf(err, errlen, "perf_event_open of a uprobe: %s", strerror(errno));
            return -1;
        }
        if (perf_attach(p, fd, AGENT_SAMPLE_ALLOC, &p->o.alloc[i], pid, &p->cpu_ring[cpu], err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Enables or disables every allocation event at once: all functions,
 * threads and CPUs start and stop sampling together (opening the first
 * probe of a file takes ~20 ms, closing each ~90 ms: sampling while some
 * are open and others not would favour some functions). */
static void alloc_switch(agent_perf *p, unsigned long req)
{
    for (size_t i = 0; i < p->nfds; i++)
        if (p->fdkind[i] == AGENT_SAMPLE_ALLOC) ioctl(p->fds[i], req, 0);
}

int agent_perf_alloc_on(agent_perf *p, const pid_t *pids, size_t n, char *err, size_t errlen)
{
    if (!p->has_alloc || p->alloc_on) return 0;
    int rc = 0;
    for (int cpu = 0; cpu < p->ncpu && !pids; cpu++)
        if (p->cpu_ring[cpu] >= 0 && alloc_open_at(p, -1, cpu, 0, err, errlen) == -1) rc = -1;
    for (size_t i = 0; pids && i < n && rc == 0; i++) {
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%d/task", (int)pids[i]);
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && rc == 0 && (e = readdir(d))) {
            pid_t tid = (pid_t)atoi(e->d_name);
            for (int cpu = 0; tid > 0 && cpu < p->ncpu; cpu++) {
                if (p->cpu_ring[cpu] < 0) continue;
                int r = alloc_open_at(p, tid, cpu, 1, err, errlen);
                if (r == -2) break;                      /* thread gone */
                if (r == -1) { rc = -1; break; }
            }
        }
        if (d) closedir(d);
    }
    qsort(p->evs, p->nevs, sizeof *p->evs, ev_cmp);
    alloc_switch(p, PERF_EVENT_IOC_ENABLE);
    p->alloc_on = 1;
    return rc;
}

void agent_perf_alloc_off(agent_perf *p, void (*fn)(const agent_sample *s, void *arg), void *arg)
{
    if (!p->alloc_on) return;
    alloc_switch(p, PERF_EVENT_IOC_DISABLE);   /* no sample in the closes' tail */
    size_t k = 0;
    for (size_t i = 0; i < p->nfds; i++) {
        if (p->fdkind[i] == AGENT_SAMPLE_ALLOC) { close(p->fds[i]); continue; }
        p->fds[k] = p->fds[i];
        p->fdkind[k++] = p->fdkind[i];
    }
    p->nfds = k;
    /* their last records, while their identifiers are still known */
    agent_perf_poll(p, 0, fn, arg);
    k = 0;
    for (size_t i = 0; i < p->nevs; i++)
        if (p->evs[i].kind != AGENT_SAMPLE_ALLOC) p->evs[k++] = p->evs[i];
    p->nevs = k;
    p->alloc_on = 0;
}

int agent_perf_alloc_is_on(const agent_perf *p) { return p->alloc_on; }

const char *agent_perf_alloc_how(const agent_perf *p) { return p->alloc_how; }

double agent_perf_alloc_tail_s(const agent_perf *p)
{
    size_t ev = agent_perf_alloc_events(p), pmu = 0, unkept = 0;
    if (ev == 0 || p->o.nalloc == 0) return 0;
    for (size_t i = 0; i < p->o.nalloc; i++) {
        if (!alloc_tp(p, i)) pmu++;
        else if (p->up.v[i].keep < 0) unkept++;
    }
    /* every (thread, CPU) has one event per target */
    double waits = (double)ev * (double)pmu / (double)p->o.nalloc + (double)unkept;
    return waits > 1 ? (waits - 1) * AGENT_UPROBE_CLOSE_S : 0;
}

size_t agent_perf_alloc_events(const agent_perf *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nfds; i++) n += p->fdkind[i] == AGENT_SAMPLE_ALLOC;
    return n;
}

uint64_t agent_perf_lost(const agent_perf *p) { return p->lost; }
uint64_t agent_perf_malformed(const agent_perf *p) { return p->malformed; }

/* Parses one PERF_RECORD_SAMPLE body (after the header): the identifier
 * first, which says the event and so the layout of the rest. */
static int perf_parse_sample(agent_perf *p, const unsigned char *b, size_t len,
                             agent_sample *s)
{
    const unsigned char *end = b + len;
    memset(s, 0, sizeof *s);
#define NEED(n) do { if ((size_t)(end - b) < (size_t)(n)) return -1; } while (0)
    NEED(8);
    uint64_t id; memcpy(&id, b, 8); b += 8;
    const perf_ev *ev = perf_find_ev(p, id);
    if (!ev) return -1;
    uint64_t st = ev->sample_type;
    s->kind = (agent_sample_kind)ev->kind;
    NEED(8);
    uint32_t pt[2];
    memcpy(pt, b, 8); b += 8;
    s->pid = (pid_t)pt[0]; s->tid = (pid_t)pt[1];
    NEED(8); memcpy(&s->time, b, 8); b += 8;
    if (st & PERF_SAMPLE_PERIOD) { NEED(8); memcpy(&s->period, b, 8); b += 8; }
    NEED(8); memcpy(&s->nr, b, 8); b += 8;
    if (s->nr > (size_t)(end - b) / 8) return -1;
    s->chain = (const uint64_t *)b;             /* records are 8-aligned */
    b += s->nr * 8;
    if (st & PERF_SAMPLE_RAW) {
        NEED(4);
        uint32_t size; memcpy(&size, b, 4); b += 4;
        NEED(size);
        int off = p->o.offcpu_next_pid_off;
        if (off >= 0 && (uint64_t)off + 4 <= size) {
            int32_t next; memcpy(&next, b + off, 4);
            s->next_tid = next;
        }
        b += size;                              /* 4 + size is a multiple of 8 */
    }
    uint64_t regs[AGENT_DWARF_NREGS] = { 0 }, abi = 0;
    if (st & PERF_SAMPLE_REGS_USER) {
        NEED(8);
        memcpy(&abi, b, 8); b += 8;
        if (abi) {
            NEED(8 * AGENT_DWARF_NREGS);
            memcpy(regs, b, 8 * AGENT_DWARF_NREGS);
            b += 8 * AGENT_DWARF_NREGS;
        }
    }
    if (s->kind == AGENT_SAMPLE_ALLOC) {
        s->alloc_fn = (agent_alloc_fn)ev->fn;
        s->alloc_null_is_malloc = ev->null_is_malloc;
        s->arg[0] = regs[AGENT_REG_DI];
        s->arg[1] = regs[AGENT_REG_SI];
        s->period = p->o.alloc_period;
    }
    if (st & PERF_SAMPLE_STACK_USER) {
        s->user.abi = abi;
        memcpy(s->user.regs, regs, sizeof regs);
        NEED(8);
        uint64_t size; memcpy(&size, b, 8); b += 8;
        if (size) {
            NEED(size + 8);
            const unsigned char *data = b;
            b += size;
            uint64_t dyn; memcpy(&dyn, b, 8); b += 8;
            s->user.stack = data;
            s->user.stack_size = dyn < size ? dyn : size;
        }
        s->user.sp = s->user.regs[AGENT_REG_SP];
        s->has_user = abi != 0 && s->user.stack_size > 0;
    }
#undef NEED
    return 0;
}

/* A PERF_RECORD_SWITCH of a watched thread (--pid --offcpu): with
 * sample_id_all its body is the sample id: pid, tid, time, identifier. */
static int perf_parse_switch(agent_perf *p, const unsigned char *b, size_t len, agent_sample *s)
{
    if (len < 24) return -1;
    memset(s, 0, sizeof *s);
    uint32_t pt[2];
    memcpy(pt, b, 8);
    memcpy(&s->time, b + 8, 8);
    uint64_t id; memcpy(&id, b + 16, 8);
    const perf_ev *ev = perf_find_ev(p, id);
    if (!ev || ev->kind != AGENT_SAMPLE_OFFCPU) return -1;
    s->kind = AGENT_SAMPLE_SWITCH_IN;
    s->pid = (pid_t)pt[0]; s->tid = (pid_t)pt[1];
    return 0;
}

static int perf_drain(agent_perf *p, perf_ring *r,
                      void (*fn)(const agent_sample *s, void *arg), void *arg)
{
    uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = r->meta->data_tail;
    int samples = 0;
    while (tail < head) {
        uint64_t off = tail & (r->size - 1);
        struct perf_event_header h;
        if (off + sizeof h <= r->size) memcpy(&h, r->data + off, sizeof h);
        else {
            size_t first = (size_t)(r->size - off);
            memcpy(&h, r->data + off, first);
            memcpy((unsigned char *)&h + first, r->data, sizeof h - first);
        }
        if (h.size < sizeof h || h.size > head - tail) {
            /* corrupt: the records after it cannot be found; skip to the
             * head (the ring must keep moving) and count it */
            p->malformed++;
            tail = head;
            break;
        }
        const unsigned char *rec;
        if (off + h.size <= r->size) rec = r->data + off;
        else {
            if (p->scratch_cap < h.size) {
                unsigned char *nb = realloc(p->scratch, h.size);
                if (!nb) { tail += h.size; p->malformed++; continue; }
                p->scratch = nb; p->scratch_cap = h.size;
            }
            size_t first = (size_t)(r->size - off);
            memcpy(p->scratch, r->data + off, first);
            memcpy(p->scratch + first, r->data, h.size - first);
            rec = p->scratch;
        }
        if (h.type == PERF_RECORD_SAMPLE) {
            agent_sample s;
            if (perf_parse_sample(p, rec + sizeof h, h.size - sizeof h, &s) == 0) {
                /* a kind turned off while opening (refused on some thread):
                 * its events that did open are not used */
                if (agent_perf_has(p, s.kind)) { fn(&s, arg); samples++; }
            } else p->malformed++;
        } else if (h.type == PERF_RECORD_SWITCH) {
            agent_sample s;
            if (!(h.misc & PERF_RECORD_MISC_SWITCH_OUT) && p->has_offcpu &&
                perf_parse_switch(p, rec + sizeof h, h.size - sizeof h, &s) == 0)
                fn(&s, arg);
        } else if (h.type == PERF_RECORD_COMM && h.size >= sizeof h + 9) {
            agent_sample s;
            uint32_t pt[2];
            char comm[32];
            size_t max = h.size - sizeof h - 8;
            memcpy(pt, rec + sizeof h, 8);
            if (max > sizeof comm - 1) max = sizeof comm - 1;
            memcpy(comm, rec + sizeof h + 8, max);
            comm[max] = 0;
            memset(&s, 0, sizeof s);
            s.pid = (pid_t)pt[0]; s.tid = (pid_t)pt[1];
            s.comm = comm;
            s.exec = (h.misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
            fn(&s, arg);
        } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
            uint64_t lost;
            memcpy(&lost, rec + sizeof h + 8, 8);
            p->lost += lost;
        }
        tail += h.size;
    }
    __atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
    return samples;
}

/* Records are stamped before they are written: a margin below the start of
 * a drain within which one may still be on its way into its ring. */
#define PERF_UPTO_MARGIN_NS 2000000ull

int agent_perf_poll(agent_perf *p, int timeout_ms,
                    void (*fn)(const agent_sample *s, void *arg), void *arg)
{
    if (timeout_ms > 0 && poll(p->pfds, p->nrings, timeout_ms) < 0 && errno != EINTR) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    int n = 0;
    for (size_t i = 0; i < p->nrings; i++) n += perf_drain(p, &p->rings[i], fn, arg);
    if (now > PERF_UPTO_MARGIN_NS && now - PERF_UPTO_MARGIN_NS > p->upto) p->upto = now - PERF_UPTO_MARGIN_NS;
    return n;
}
