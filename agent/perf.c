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
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
    int fd;                         /* the fd owning the ring */
    struct perf_event_mmap_page *meta;
    unsigned char *data;
    uint64_t size;                  /* data area bytes (power of two) */
} perf_ring;

struct agent_perf {
    int *fds; size_t nfds, capfds;  /* every event */
    perf_ring *rings; size_t nrings;
    struct pollfd *pfds;
    size_t pages;
    agent_perf_opts o;
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

static int perf_open(pid_t pid, int cpu, const agent_perf_opts *o, int inherit)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    /* cpu-clock counts nanoseconds: a fixed period of 1e9/f ns is exactly f
     * samples per second of CPU time, also when a thread's time is spread
     * over several (thread, CPU) events, where frequency mode's period
     * estimation falls short. */
    a.freq = 0;
    a.sample_period = (uint64_t)(1e9 / (o->freq > 1 ? o->freq : 1));
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
    if (o->want_stack) {
        a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.sample_regs_user = AGENT_DWARF_REGS_MASK;
        a.sample_stack_user = AGENT_DWARF_STACK_SIZE;
    }
    a.exclude_kernel = o->no_kernel ? 1 : 0;
    a.exclude_hv = 1;
    a.exclude_idle = 1;
    a.inherit = inherit ? 1 : 0;
    a.disabled = 1;
    a.sample_id_all = 1;
    a.comm = 1;                     /* names of processes that exec, even */
    a.comm_exec = 1;                /* when they exit before /proc is read */
    return (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int perf_add_fd(agent_perf *p, int fd)
{
    if (p->nfds == p->capfds) {
        size_t cap = p->capfds ? 2 * p->capfds : 16;
        int *v = realloc(p->fds, cap * sizeof *v);
        if (!v) return -1;
        p->fds = v; p->capfds = cap;
    }
    p->fds[p->nfds++] = fd;
    return 0;
}

static int perf_map_ring(agent_perf *p, int fd, char *err, size_t errlen)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, (p->pages + 1) * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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

static agent_perf *perf_new(const agent_perf_opts *o, int ncpu)
{
    agent_perf *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->o = *o;
    p->pages = o->want_stack ? 256 : 64;      /* 1 MB / 256 KB per CPU */
    p->rings = calloc((size_t)ncpu, sizeof *p->rings);
    p->pfds = calloc((size_t)ncpu, sizeof *p->pfds);
    if (!p->rings || !p->pfds) { agent_perf_close(p); return NULL; }
    return p;
}

static int perf_enable(agent_perf *p)
{
    for (size_t i = 0; i < p->nfds; i++) ioctl(p->fds[i], PERF_EVENT_IOC_ENABLE, 0);
    for (size_t i = 0; i < p->nrings; i++)
        p->pfds[i] = (struct pollfd){ .fd = p->rings[i].fd, .events = POLLIN };
    return 0;
}

agent_perf *agent_perf_open_all(const agent_perf_opts *o, char *err, size_t errlen)
{
    int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
    agent_perf *p = perf_new(o, ncpu);
    if (!p) { snprintf(err, errlen, "out of memory"); return NULL; }
    for (int cpu = 0; cpu < ncpu; cpu++) {
        int fd = perf_open(-1, cpu, o, 0);
        if (fd < 0) {
            if (errno == ENODEV || errno == EINVAL) continue;   /* offline CPU */
            agent_perf_explain(errno, err, errlen);
            agent_perf_close(p);
            return NULL;
        }
        if (perf_add_fd(p, fd) < 0 || perf_map_ring(p, fd, err, errlen) < 0) {
            close(fd);
            agent_perf_close(p);
            return NULL;
        }
    }
    if (p->nrings == 0) { snprintf(err, errlen, "perf_event_open: no online CPU accepted the event"); agent_perf_close(p); return NULL; }
    perf_enable(p);
    return p;
}

agent_perf *agent_perf_open_pids(const pid_t *pids, size_t n, const agent_perf_opts *o,
                                 char *err, size_t errlen)
{
    int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
    agent_perf *p = perf_new(o, ncpu);
    if (!p) { snprintf(err, errlen, "out of memory"); return NULL; }
    int *ring_fd = malloc((size_t)ncpu * sizeof *ring_fd);
    for (int c = 0; ring_fd && c < ncpu; c++) ring_fd[c] = -1;
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
                int fd = perf_open(tid, cpu, o, 1);
                if (fd < 0) {
                    if (errno == ESRCH) break;               /* thread gone */
                    if (errno == ENODEV || errno == EINVAL) continue;
                    agent_perf_explain(errno, err, errlen);
                    closedir(d);
                    goto fail;
                }
                if (perf_add_fd(p, fd) < 0) { close(fd); closedir(d); snprintf(err, errlen, "out of memory"); goto fail; }
                if (ring_fd[cpu] < 0) {
                    if (perf_map_ring(p, fd, err, errlen) < 0) { closedir(d); goto fail; }
                    ring_fd[cpu] = fd;
                } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd[cpu]) < 0) {
                    snprintf(err, errlen, "PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(errno));
                    closedir(d);
                    goto fail;
                }
                opened++;
            }
        }
        closedir(d);
    }
    if (!ring_fd || opened == 0) {
        if (!ring_fd) snprintf(err, errlen, "out of memory");
        else snprintf(err, errlen, "perf_event_open: no thread of the given processes could be sampled");
        goto fail;
    }
    free(ring_fd);
    perf_enable(p);
    return p;
fail:
    free(ring_fd);
    agent_perf_close(p);
    return NULL;
}

void agent_perf_close(agent_perf *p)
{
    if (!p) return;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < p->nrings; i++) munmap(p->rings[i].meta, (p->pages + 1) * pg);
    for (size_t i = 0; i < p->nfds; i++) close(p->fds[i]);
    free(p->fds); free(p->rings); free(p->pfds); free(p->scratch);
    free(p);
}

int agent_perf_set_freq(agent_perf *p, double freq)
{
    uint64_t f = (uint64_t)(1e9 / (freq > 1 ? freq : 1));   /* period, ns */
    int rc = 0;
    for (size_t i = 0; i < p->nfds; i++)
        if (ioctl(p->fds[i], PERF_EVENT_IOC_PERIOD, &f) < 0) rc = -1;
    p->o.freq = freq;
    return rc;
}

uint64_t agent_perf_lost(const agent_perf *p) { return p->lost; }
uint64_t agent_perf_malformed(const agent_perf *p) { return p->malformed; }

/* Parses one PERF_RECORD_SAMPLE body (after the header). */
static int perf_parse_sample(const agent_perf *p, const unsigned char *b, size_t len,
                             agent_sample *s)
{
    const unsigned char *end = b + len;
    memset(s, 0, sizeof *s);
#define NEED(n) do { if ((size_t)(end - b) < (size_t)(n)) return -1; } while (0)
    NEED(8);
    uint32_t pt[2];
    memcpy(pt, b, 8); b += 8;
    s->pid = (pid_t)pt[0]; s->tid = (pid_t)pt[1];
    NEED(8); memcpy(&s->time, b, 8); b += 8;
    NEED(8); memcpy(&s->nr, b, 8); b += 8;
    NEED(s->nr * 8);
    s->chain = (const uint64_t *)b;             /* records are 8-aligned */
    b += s->nr * 8;
    if (p->o.want_stack) {
        NEED(8);
        uint64_t abi; memcpy(&abi, b, 8); b += 8;
        s->user.abi = abi;
        if (abi) {
            NEED(8 * AGENT_DWARF_NREGS);
            memcpy(s->user.regs, b, 8 * AGENT_DWARF_NREGS);
            b += 8 * AGENT_DWARF_NREGS;
        }
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
                fn(&s, arg);
                samples++;
            } else p->malformed++;
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

int agent_perf_poll(agent_perf *p, int timeout_ms,
                    void (*fn)(const agent_sample *s, void *arg), void *arg)
{
    if (timeout_ms > 0 && poll(p->pfds, p->nrings, timeout_ms) < 0 && errno != EINTR) return -1;
    int n = 0;
    for (size_t i = 0; i < p->nrings; i++) n += perf_drain(p, &p->rings[i], fn, arg);
    return n;
}
