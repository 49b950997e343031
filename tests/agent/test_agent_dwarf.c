/* test_agent_dwarf.c — the DWARF unwinder's answers (issue 15): a sample of
 * this very process unwound through its own CFI; samples without 64-bit
 * user registers refused (NOREGS); processes that do not exist, are
 * zombies, exit or exec between the open and the unwinding answered with a
 * status, never a crash; one state used for many samples. */
#include <string.h>

#include "../unit/testutil.h"

#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../agent/agent.h"

#define COPY 4096

/* Where the samples' stack copies go: not on the stack being copied. */
static unsigned char stack_copy[COPY];

/* A sample of the calling thread, as perf would take it: registers and
 * the top COPY bytes of the stack (copied into stack[], with a system call
 * as the kernel does: no sanitizer looks at the bytes read). */
static void __attribute__((noinline)) sample_self(agent_user_regs *u, unsigned char *stack)
{
    ucontext_t uc;
    memset(u, 0, sizeof *u);
    getcontext(&uc);
    const greg_t *g = uc.uc_mcontext.gregs;
    u->regs[AGENT_REG_AX] = (uint64_t)g[REG_RAX];
    u->regs[AGENT_REG_BX] = (uint64_t)g[REG_RBX];
    u->regs[AGENT_REG_CX] = (uint64_t)g[REG_RCX];
    u->regs[AGENT_REG_DX] = (uint64_t)g[REG_RDX];
    u->regs[AGENT_REG_SI] = (uint64_t)g[REG_RSI];
    u->regs[AGENT_REG_DI] = (uint64_t)g[REG_RDI];
    u->regs[AGENT_REG_BP] = (uint64_t)g[REG_RBP];
    u->regs[AGENT_REG_SP] = (uint64_t)g[REG_RSP];
    u->regs[AGENT_REG_IP] = (uint64_t)g[REG_RIP];
    u->regs[AGENT_REG_R8] = (uint64_t)g[REG_R8];
    u->regs[AGENT_REG_R9] = (uint64_t)g[REG_R9];
    u->regs[AGENT_REG_R10] = (uint64_t)g[REG_R10];
    u->regs[AGENT_REG_R11] = (uint64_t)g[REG_R11];
    u->regs[AGENT_REG_R12] = (uint64_t)g[REG_R12];
    u->regs[AGENT_REG_R13] = (uint64_t)g[REG_R13];
    u->regs[AGENT_REG_R14] = (uint64_t)g[REG_R14];
    u->regs[AGENT_REG_R15] = (uint64_t)g[REG_R15];
    u->abi = PERF_SAMPLE_REGS_ABI_64;
    u->sp = u->regs[AGENT_REG_SP];
    struct iovec local = { stack, COPY };
    struct iovec remote = { (void *)(uintptr_t)u->sp, COPY };
    assert_int_equal(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), COPY);
    u->stack = stack;
    u->stack_size = COPY;
    __asm__ __volatile__("" ::: "memory");
}

static void self_unwinds(void **state)
{
    (void)state;
    char err[300];
    agent_dwarf *d;
    assert_int_equal(agent_dwarf_open(getpid(), &d, err, sizeof err), AGENT_DWARF_OK);
    agent_user_regs u;
    uint64_t ips[64];
    for (int round = 0; round < 200; round++) {      /* one state, many samples */
        sample_self(&u, stack_copy);
        int n = -1;
        assert_int_equal(agent_dwarf_unwind(d, getpid(), &u, ips, 64, &n), AGENT_DWARF_OK);
        assert_true(n >= 2);
        assert_int_equal(ips[0], u.regs[AGENT_REG_IP]);
        /* the caller's frame: a return address into this function */
        assert_true(ips[1] > (uint64_t)(uintptr_t)self_unwinds &&
                    ips[1] < (uint64_t)(uintptr_t)self_unwinds + 4096);
    }
    agent_dwarf_close(d);
}

static void no_user_registers(void **state)
{
    (void)state;
    char err[300];
    agent_dwarf *d;
    assert_int_equal(agent_dwarf_open(getpid(), &d, err, sizeof err), AGENT_DWARF_OK);
    agent_user_regs u;
    memset(&u, 0, sizeof u);                 /* abi 0: a kernel thread */
    uint64_t ips[8];
    int n = -1;
    assert_int_equal(agent_dwarf_unwind(d, getpid(), &u, ips, 8, &n), AGENT_DWARF_NOREGS);
    assert_int_equal(n, 0);
    u.abi = PERF_SAMPLE_REGS_ABI_32;         /* a 32-bit process */
    assert_int_equal(agent_dwarf_unwind(d, getpid(), &u, ips, 8, &n), AGENT_DWARF_NOREGS);
    u.abi = PERF_SAMPLE_REGS_ABI_64;         /* registers, but no stack copy */
    assert_int_equal(agent_dwarf_unwind(d, getpid(), &u, ips, 8, &n), AGENT_DWARF_FAILED);
    assert_int_equal(n, 0);
    agent_dwarf_close(d);
}

static void missing_and_zombie_processes(void **state)
{
    (void)state;
    char err[300];
    agent_dwarf *d = (agent_dwarf *)1;
    /* a pid nobody has: the largest possible is far beyond any in use */
    assert_int_equal(agent_dwarf_open(4194303, &d, err, sizeof err), AGENT_DWARF_GONE);
    assert_null(d);
    pid_t z = fork();
    assert_true(z >= 0);
    if (z == 0) _exit(0);
    /* a zombie until reaped: its maps are gone */
    siginfo_t si;
    assert_int_equal(waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT), 0);
    assert_int_equal(agent_dwarf_open(z, &d, err, sizeof err), AGENT_DWARF_GONE);
    assert_null(d);
    waitpid(z, NULL, 0);
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {}
}

/* A sample of a process whose modules the state no longer matches: the
 * sampled IP lies in none of them, which makes the unwinder look at the
 * process again (at most once a second: hence the waits). */
static agent_dwarf_status unwind_elsewhere(agent_dwarf *d, pid_t pid)
{
    agent_user_regs u;
    sample_self(&u, stack_copy);
    u.regs[AGENT_REG_IP] = 0x1000;           /* mapped by nobody */
    u.regs[AGENT_REG_BP] = 0;                /* and no frame pointer to follow */
    uint64_t ips[16];
    int n = -1;
    agent_dwarf_status st = agent_dwarf_unwind(d, pid, &u, ips, 16, &n);
    if (st != AGENT_DWARF_OK) assert_int_equal(n, 0);
    return st;
}

static void process_execs_then_exits(void **state)
{
    (void)state;
    char err[300];
    agent_dwarf *d;
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {                            /* waits, then becomes sleep(1) */
        char b;
        close(go[1]);
        if (read(go[0], &b, 1) != 1) _exit(1);
        execl("/bin/sleep", "sleep", "1.5", (char *)NULL);
        _exit(127);
    }
    close(go[0]);
    assert_int_equal(agent_dwarf_open(c, &d, err, sizeof err), AGENT_DWARF_OK);
    assert_int_equal(write(go[1], "x", 1), 1);
    close(go[1]);
    sleep_ms(1100);
    /* exec'd: all its modules are new; the state reports them (and must not
     * lose its architecture with the old executable's module) */
    agent_dwarf_status st = unwind_elsewhere(d, c);
    assert_true(st == AGENT_DWARF_FAILED);
    for (int i = 0; i < 50; i++) assert_true(unwind_elsewhere(d, c) != AGENT_DWARF_OK);
    waitpid(c, NULL, 0);
    sleep_ms(1100);
    /* gone: no more reports, an answer all the same */
    st = unwind_elsewhere(d, c);
    assert_true(st == AGENT_DWARF_GONE);
    assert_true(unwind_elsewhere(d, c) == AGENT_DWARF_GONE);
    agent_dwarf_close(d);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* glibc's malloc checks, set before malloc starts: freed memory is
     * overwritten (and never parked in the per-thread cache first), so
     * memory libdw frees and the agent still reads shows at once */
    if (!getenv("MALLOC_PERTURB_")) {
        setenv("MALLOC_PERTURB_", "165", 1);
        setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
        execv("/proc/self/exe", argv);
        perror("test_agent_dwarf: re-exec with malloc checks");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(self_unwinds),
        cmocka_unit_test(no_user_registers),
        cmocka_unit_test(missing_and_zombie_processes),
        cmocka_unit_test(process_execs_then_exits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
