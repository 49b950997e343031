/* unwind_dwarf.c — DWARF (CFI) unwinding of user stacks with libdw.
 *
 * For code built without frame pointers the kernel's callchain stops after
 * the first frame or two.  perf's answer (`perf record --call-graph dwarf`)
 * is to copy, with every sample, the user registers (PERF_SAMPLE_REGS_USER)
 * and the top of the user stack (PERF_SAMPLE_STACK_USER), and to unwind
 * later with the call-frame information (.eh_frame / .debug_frame) of the
 * modules.  This file does that with libdwfl:
 *
 *   - one Dwfl per process, holding the process's modules as reported from
 *     /proc/PID/maps (dwfl_linux_proc_report), with libdw's own ELF and
 *     debug-file lookup (dwfl_linux_proc_find_elf, build-id and
 *     .gnu_debuglink through dwfl_standard_find_debuginfo).  libdw caches
 *     each module's ELF and CFI, so the cost per sample is the walk alone;
 *   - the Dwfl is "attached" once (dwfl_attach_state) with callbacks that do
 *     not ptrace anything: the thread's registers and memory are those of
 *     the sample being unwound, which agent_dwarf_unwind points the state at
 *     before each walk:
 *       set_initial_registers  maps perf's register order to DWARF's;
 *       memory_read            answers from the copied stack when the address
 *                              lies in [sp, sp + stack_size); never from the
 *                              live stack beyond the copy (it has moved on
 *                              since the sample: stale return addresses are
 *                              worse than a shorter stack); any other address
 *                              is read from the process with
 *                              process_vm_readv;
 *   - dwfl_getthread_frames walks the frames; each frame's PC comes from
 *     dwfl_frame_pc.  The first is the sampled IP, the others are return
 *     addresses, as in the kernel's callchain, so the symbolizer treats both
 *     kinds of stacks alike.
 *
 * Maps change (dlopen, exec, JIT): when a sample's IP, or the last frame a
 * walk reached, lies in no known module, the modules are reported again from
 * /proc/PID/maps (modules already known are kept with their caches), at most
 * once per REFRESH_NS.  Frames in no module even then (JIT code, anonymous
 * memory) have no CFI: libdw's x86-64 backend falls back to the frame
 * pointer for them.
 *
 * Staying alive on a busy node (issue 15).  Re-reporting modules into an
 * attached Dwfl used to abort the agent with libdw's assertion
 * `nregs < sizeof (((Dwfl_Frame *) NULL)->regs_set) * 8` (dwfl_frame.c:93 in
 * elfutils 0.188).  dwfl_attach_state(dwfl, NULL, ...) does not own the
 * architecture backend (Ebl) of the process state: it borrows the Ebl of the
 * first module whose ELF it can open, usually the executable.  When that
 * module disappears from /proc/PID/maps (the process exec'd, or exited so
 * that its maps read empty or not at all), dwfl_report_end frees the module
 * and its Ebl with it, and the next walk reads the register count from freed
 * memory: garbage, and the assertion (or worse).  Hence:
 *
 *   - the state is attached with an Elf of our own (arch_elf: an x86-64 ELF
 *     header in memory, shared by every Dwfl), so libdw opens an Ebl that
 *     belongs to the process state and lives until dwfl_end, whatever
 *     happens to the modules;
 *   - a process is identified by its pid and start time (/proc/PID/stat);
 *     a refresh that finds another start time (the pid was reused) builds a
 *     new Dwfl instead of reporting another program's modules into the old
 *     one;
 *   - a process that exited, or is a zombie whose memory is gone, is never
 *     reported again: its modules stay as they were, which is what the
 *     samples still queued in the rings were taken with;
 *   - every libdw answer is checked, a walk is never entered twice, and
 *     anything that fails answers a status (agent_dwarf_status) the caller
 *     counts, falling back to the frame-pointer chain.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "unwind_dwarf.h"

#include <stdio.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define REFRESH_NS 1000000000ull         /* at most one maps refresh a second */
#define STALE_STACK_SPAN (8ull << 20)    /* beyond the copy: the live stack */

struct agent_dwarf {
    pid_t pid;
    unsigned long long start;     /* start time (/proc/PID/stat field 22) */
    Dwfl *dwfl;                   /* attached; NULL after a failed rebuild */
    int gone;                     /* exited: no more reports, modules kept */
    int walking;                  /* inside dwfl_getthread_frames */
    /* the sample being unwound (valid during agent_dwarf_unwind only) */
    const agent_user_regs *cur;
    pid_t cur_tid;
    uint64_t last_refresh_ns;
};

/* perf register index (agent.h's AGENT_REG_*) of each DWARF register 0..16:
 * rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
static const int dwarf_from_perf[AGENT_DWARF_NREGS] = {
    AGENT_REG_AX, AGENT_REG_DX, AGENT_REG_CX, AGENT_REG_BX,
    AGENT_REG_SI, AGENT_REG_DI, AGENT_REG_BP, AGENT_REG_SP,
    AGENT_REG_R8, AGENT_REG_R9, AGENT_REG_R10, AGENT_REG_R11,
    AGENT_REG_R12, AGENT_REG_R13, AGENT_REG_R14, AGENT_REG_R15,
    AGENT_REG_IP,
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the architecture, owned by every process state -------------------- */

/* An ELF header for x86-64 (the only architecture whose registers the
 * agent asks for, see AGENT_DWARF_REGS_MASK), opened with elf_memory once
 * and shared; each dwfl_attach_state opens its own Ebl from it. */
static Elf64_Ehdr arch_ehdr;
static Elf *arch_elf;
static int arch_refs;

static Elf *arch_elf_ref(void)
{
    if (arch_elf == NULL) {
        if (elf_version(EV_CURRENT) == EV_NONE)
            return NULL;
        memset(&arch_ehdr, 0, sizeof arch_ehdr);
        memcpy(arch_ehdr.e_ident, ELFMAG, SELFMAG);
        arch_ehdr.e_ident[EI_CLASS] = ELFCLASS64;
        arch_ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
        arch_ehdr.e_ident[EI_VERSION] = EV_CURRENT;
        arch_ehdr.e_type = ET_CORE;
        arch_ehdr.e_machine = EM_X86_64;
        arch_ehdr.e_version = EV_CURRENT;
        arch_ehdr.e_ehsize = sizeof arch_ehdr;
        arch_elf = elf_memory((char *)&arch_ehdr, sizeof arch_ehdr);
        if (arch_elf == NULL)
            return NULL;
        if (elf_kind(arch_elf) != ELF_K_ELF) {
            elf_end(arch_elf);
            arch_elf = NULL;
            return NULL;
        }
    }
    arch_refs++;
    return arch_elf;
}

static void arch_elf_unref(void)
{
    if (arch_refs > 0 && --arch_refs == 0 && arch_elf != NULL) {
        elf_end(arch_elf);
        arch_elf = NULL;
    }
}

/* ---- the process --------------------------------------------------------- */

/* 0: the process runs, *start is its start time; 1: it is gone (no such
 * process, or a zombie whose memory and maps are released). */
static int proc_identity(pid_t pid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 1;
    buf[n] = 0;
    /* "pid (comm) S ...": comm may hold spaces and parentheses */
    const char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == 0)
        return 1;
    p += 2;                                   /* field 3, the state */
    if (*p == 'Z' || *p == 'X' || *p == 'x')
        return 1;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (p == NULL)
            return 1;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return 0;
}

/* ---- thread callbacks: the "thread" is the current sample ------------- */

static pid_t cb_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
    (void)dwfl;
    agent_dwarf *d = dwfl_arg;
    if (*thread_argp != NULL)
        return 0;                 /* one thread only: the sample's */
    *thread_argp = d;
    return d->cur_tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
    (void)dwfl;
    (void)tid;
    *thread_argp = dwfl_arg;
    return true;
}

static bool read_live(const agent_dwarf *d, Dwarf_Addr addr, Dwarf_Word *out)
{
    uint64_t v;
    struct iovec local = {&v, sizeof v};
    struct iovec remote = {(void *)(uintptr_t)addr, sizeof v};
    if (process_vm_readv(d->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof v)
        return false;
    *out = v;
    return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
    (void)dwfl;
    agent_dwarf *d = dwfl_arg;
    const agent_user_regs *u = d->cur;
    if (u == NULL)
        return false;
    uint64_t sp = u->sp;
    if (u->stack != NULL && addr >= sp && addr - sp + sizeof(uint64_t) <= u->stack_size) {
        uint64_t v;
        memcpy(&v, u->stack + (addr - sp), sizeof v);
        *result = v;
        return true;
    }
    if (addr >= sp && addr - sp < STALE_STACK_SPAN)
        return false;             /* the stack beyond the copy: stale */
    if (addr + 256 >= sp && addr < sp)
        return false;             /* just below sp: not part of any frame */
    if (d->gone)
        return false;             /* nothing left to read */
    return read_live(d, addr, result);
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
    agent_dwarf *d = thread_arg;
    if (d == NULL || d->cur == NULL)
        return false;
    Dwarf_Word regs[AGENT_DWARF_NREGS];
    for (int i = 0; i < AGENT_DWARF_NREGS; i++)
        regs[i] = d->cur->regs[dwarf_from_perf[i]];
    return dwfl_thread_state_registers(thread, 0, AGENT_DWARF_NREGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = cb_next_thread,
    .get_thread = cb_get_thread,
    .memory_read = cb_memory_read,
    .set_initial_registers = cb_set_initial_registers,
    .detach = NULL,
    .thread_detach = NULL,
};

/* ---- modules ------------------------------------------------------------ */

static char *debuginfo_path;   /* libdw's default search path (NULL) */

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

/* Reports the process's modules from /proc/PID/maps; modules already known
 * with the same name and range keep their loaded ELF and CFI, the others
 * are freed (safe: the process state owns its Ebl). */
static agent_dwarf_status report_modules(agent_dwarf *d, char *err, size_t errlen)
{
    d->last_refresh_ns = mono_ns();
    dwfl_report_begin(d->dwfl);
    int rc = dwfl_linux_proc_report(d->dwfl, d->pid);
    const char *why = rc < 0 ? dwfl_errmsg(-1) : rc > 0 ? strerror(rc) : NULL;
    int saved = rc;
    if (dwfl_report_end(d->dwfl, NULL, NULL) != 0 && why == NULL) {
        why = dwfl_errmsg(-1);
        rc = -1;
    }
    if (rc == 0)
        return AGENT_DWARF_OK;
    if (saved == ENOENT || saved == ESRCH) {
        d->gone = 1;
        snprintf(err, errlen, "the process exited");
        return AGENT_DWARF_GONE;
    }
    snprintf(err, errlen, "reading the modules of /proc/%d/maps: %s", (int)d->pid,
             why ? why : "unknown error");
    return AGENT_DWARF_FAILED;
}

/* A fresh Dwfl: modules reported, state attached with our own Ebl. */
static agent_dwarf_status dwarf_build(agent_dwarf *d, char *err, size_t errlen)
{
    if (d->dwfl != NULL) {
        dwfl_end(d->dwfl);
        d->dwfl = NULL;
    }
    Dwfl *dwfl = dwfl_begin(&proc_callbacks);
    if (dwfl == NULL) {
        snprintf(err, errlen, "dwfl_begin: %s", dwfl_errmsg(-1));
        return AGENT_DWARF_FAILED;
    }
    d->dwfl = dwfl;
    agent_dwarf_status st = report_modules(d, err, errlen);
    if (st == AGENT_DWARF_OK && !dwfl_attach_state(dwfl, arch_elf, d->pid, &thread_callbacks, d)) {
        snprintf(err, errlen, "dwfl_attach_state: %s", dwfl_errmsg(-1));
        st = AGENT_DWARF_FAILED;
    }
    if (st != AGENT_DWARF_OK) {
        dwfl_end(dwfl);
        d->dwfl = NULL;
    }
    return st;
}

agent_dwarf_status agent_dwarf_open(pid_t pid, agent_dwarf **out, char *err, size_t errlen)
{
    *out = NULL;
    agent_dwarf *d = calloc(1, sizeof *d);
    if (d == NULL) {
        snprintf(err, errlen, "out of memory");
        return AGENT_DWARF_FAILED;
    }
    d->pid = pid;
    if (arch_elf_ref() == NULL) {
        snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
        free(d);
        return AGENT_DWARF_FAILED;
    }
    if (proc_identity(pid, &d->start) != 0) {
        snprintf(err, errlen, "the process exited");
        agent_dwarf_close(d);
        return AGENT_DWARF_GONE;
    }
    agent_dwarf_status st = dwarf_build(d, err, errlen);
    if (st != AGENT_DWARF_OK) {
        agent_dwarf_close(d);
        return st;
    }
    *out = d;
    return AGENT_DWARF_OK;
}

void agent_dwarf_close(agent_dwarf *d)
{
    if (d == NULL)
        return;
    if (d->dwfl)
        dwfl_end(d->dwfl);
    free(d);
    arch_elf_unref();
}

/* Called when an address lies in no known module: reports the modules
 * again (at most once per REFRESH_NS), or builds a new Dwfl when the pid
 * now names another process.  Never for a process that is gone. */
static void dwarf_refresh(agent_dwarf *d)
{
    if (d->gone || mono_ns() - d->last_refresh_ns < REFRESH_NS)
        return;
    d->last_refresh_ns = mono_ns();
    unsigned long long start;
    if (proc_identity(d->pid, &start) != 0) {
        d->gone = 1;             /* keep the modules the queued samples need */
        return;
    }
    char err[256];
    if (start != d->start) {     /* the pid was reused */
        d->start = start;
        (void)dwarf_build(d, err, sizeof err);
    } else {
        (void)report_modules(d, err, sizeof err);
    }
}

/* ---- the walk ------------------------------------------------------------ */

typedef struct {
    uint64_t *ips;
    int n, max;
} walk_ctx;

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    walk_ctx *w = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
        return DWARF_CB_ABORT;
    w->ips[w->n++] = pc;
    return w->n < w->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static void walk(agent_dwarf *d, walk_ctx *w)
{
    w->n = 0;
    d->walking = 1;
    /* -1 at the end of most walks (the copy of the stack ran out, or a
     * frame without CFI): the frames seen so far are the answer. */
    (void)dwfl_getthread_frames(d->dwfl, d->cur_tid, frame_cb, w);
    d->walking = 0;
}

agent_dwarf_status agent_dwarf_unwind(agent_dwarf *d, pid_t tid, const agent_user_regs *u,
                                      uint64_t *ips, int max, int *n)
{
    *n = 0;
    if (d == NULL || u == NULL || ips == NULL || max < 2)
        return AGENT_DWARF_FAILED;
    /* no registers (kernel thread), or a 32-bit process whose registers
     * have another layout and other DWARF numbers: not ours to unwind */
    if (u->abi != PERF_SAMPLE_REGS_ABI_64)
        return AGENT_DWARF_NOREGS;
    if (u->stack == NULL || u->stack_size == 0)
        return AGENT_DWARF_FAILED;   /* the kernel could not copy the stack */
    if (d->walking)                  /* never re-enter an attached state */
        return AGENT_DWARF_FAILED;
    uint64_t ip = u->regs[AGENT_REG_IP];
    /* code we do not know: maps changed since the last report?  (If not,
     * JIT or anonymous code: libdw's x86-64 backend then tries the frame
     * pointer for frames without CFI.) */
    if (d->dwfl != NULL && dwfl_addrmodule(d->dwfl, ip) == NULL)
        dwarf_refresh(d);
    if (d->dwfl == NULL)
        return d->gone ? AGENT_DWARF_GONE : AGENT_DWARF_FAILED;
    d->cur = u;
    d->cur_tid = tid > 0 ? tid : d->pid;
    walk_ctx w = {ips, 0, max};
    walk(d, &w);
    if (w.n > 0 && w.n < max && dwfl_addrmodule(d->dwfl, ips[w.n - 1] - 1) == NULL &&
        !d->gone && mono_ns() - d->last_refresh_ns >= REFRESH_NS) {
        /* the walk stopped in a caller we do not know (a library loaded
         * since the last report): once more with the new modules */
        dwarf_refresh(d);
        if (d->dwfl != NULL)
            walk(d, &w);
    }
    d->cur = NULL;
    /* the sampled IP alone is no unwinding: the caller keeps the kernel's
     * frame-pointer chain, which has at least that */
    if (w.n < 2)
        return d->gone ? AGENT_DWARF_GONE : AGENT_DWARF_FAILED;
    *n = w.n;
    return AGENT_DWARF_OK;
}
