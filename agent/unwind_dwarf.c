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
 * Maps change (dlopen, JIT): when a sample's IP, or the last frame a walk
 * reached, lies in no known module, the modules are reported again from
 * /proc/PID/maps (modules already known are kept with their caches), at most
 * once per REFRESH_NS.  Frames in no module even then (JIT code, anonymous
 * memory) have no CFI: libdw's x86-64 backend falls back to the frame
 * pointer for them; when nothing works the answer is the leaf alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "agent.h"

#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define REFRESH_NS 1000000000ull         /* at most one maps refresh a second */
#define STALE_STACK_SPAN (8ull << 20)    /* beyond the copy: the live stack */

struct agent_dwarf {
    pid_t pid;
    Dwfl *dwfl;
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
    return read_live(d, addr, result);
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
    agent_dwarf *d = thread_arg;
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
 * with the same name and range keep their loaded ELF and CFI. */
static int report_modules(agent_dwarf *d)
{
    dwfl_report_begin(d->dwfl);
    int rc = dwfl_linux_proc_report(d->dwfl, d->pid);
    if (dwfl_report_end(d->dwfl, NULL, NULL) != 0 || rc != 0)
        return -1;
    d->last_refresh_ns = mono_ns();
    return 0;
}

agent_dwarf *agent_dwarf_open(pid_t pid)
{
    agent_dwarf *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    d->pid = pid;
    d->dwfl = dwfl_begin(&proc_callbacks);
    if (d->dwfl == NULL || report_modules(d) != 0 ||
        !dwfl_attach_state(d->dwfl, NULL, pid, &thread_callbacks, d)) {
        agent_dwarf_close(d);
        return NULL;
    }
    return d;
}

void agent_dwarf_close(agent_dwarf *d)
{
    if (d == NULL)
        return;
    if (d->dwfl)
        dwfl_end(d->dwfl);
    free(d);
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

int agent_dwarf_unwind(agent_dwarf *d, pid_t tid, const agent_user_regs *u,
                       uint64_t *ips, int max)
{
    /* no registers (kernel thread), or a 32-bit process whose registers
     * have another layout and other DWARF numbers: not ours to unwind */
    if (d == NULL || u == NULL || ips == NULL || max <= 0 ||
        u->abi != PERF_SAMPLE_REGS_ABI_64)
        return 0;
    uint64_t ip = u->regs[AGENT_REG_IP];
    /* code we do not know: maps changed since the last report?  (If not,
     * JIT or anonymous code: libdw's x86-64 backend then tries the frame
     * pointer for frames without CFI.) */
    if (dwfl_addrmodule(d->dwfl, ip) == NULL && mono_ns() - d->last_refresh_ns >= REFRESH_NS)
        report_modules(d);
    d->cur = u;
    d->cur_tid = tid > 0 ? tid : d->pid;
    walk_ctx w = {ips, 0, max};
    /* -1 at the end of every walk (the outermost frame has no caller, or
     * memory ran out of the copy): the frames seen so far are the answer. */
    (void)dwfl_getthread_frames(d->dwfl, d->cur_tid, frame_cb, &w);
    if (w.n > 0 && w.n < max && dwfl_addrmodule(d->dwfl, ips[w.n - 1] - 1) == NULL &&
        mono_ns() - d->last_refresh_ns >= REFRESH_NS && report_modules(d) == 0) {
        /* the walk stopped in a caller we do not know (a library loaded
         * since the last report): once more with the new modules */
        w.n = 0;
        (void)dwfl_getthread_frames(d->dwfl, d->cur_tid, frame_cb, &w);
    }
    d->cur = NULL;
    if (w.n == 0) {
        ips[0] = ip;
        w.n = 1;
    }
    return w.n;
}
