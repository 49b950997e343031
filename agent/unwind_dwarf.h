/* unwind_dwarf.h — DWARF unwinding of copied user stacks (unwind_dwarf.c). */
#ifndef FLAMEDB_AGENT_UNWIND_DWARF_H
#define FLAMEDB_AGENT_UNWIND_DWARF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <asm/perf_regs.h>

/* ------------------------------------------------------------------------
 * DWARF unwinding (agent/unwind_dwarf.c, owned by the DWARF engineer).
 *
 * Samples of processes that need DWARF carry PERF_SAMPLE_REGS_USER with
 * sample_regs_user = AGENT_DWARF_REGS_MASK and PERF_SAMPLE_STACK_USER with
 * sample_stack_user = AGENT_DWARF_STACK_SIZE.
 *
 * AGENT_DWARF_REGS_MASK selects the 17 x86-64 registers DWARF knows
 * (DWARF regnos 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip): perf
 * bits AX BX CX DX SI DI BP SP IP (0..8) and R8..R15 (16..23), i.e.
 * 0xff01ff.  The kernel writes the selected registers in increasing bit
 * order, so agent_user_regs.regs[] holds, by index (AGENT_REG_*):
 *   0 ax, 1 bx, 2 cx, 3 dx, 4 si, 5 di, 6 bp, 7 sp, 8 ip,
 *   9 r8, 10 r9, 11 r10, 12 r11, 13 r12, 14 r13, 15 r14, 16 r15.
 * (Note: perf order, not DWARF order; the unwinder maps them.)
 * ------------------------------------------------------------------------ */
#define AGENT_DWARF_REGS_MASK \
    ((((1ULL << (PERF_REG_X86_IP + 1)) - 1)) | \
     (((1ULL << PERF_REG_X86_64_MAX) - 1) & ~((1ULL << PERF_REG_X86_R8) - 1)))
#define AGENT_DWARF_NREGS 17
#define AGENT_DWARF_STACK_SIZE 16384u   /* bytes of user stack per sample */
#define AGENT_OFFCPU_STACK_SIZE 2048u   /* per off-CPU sample without DWARF:
                                           the frames above the first with a
                                           frame pointer (perf.c) */
#define AGENT_ALLOC_STACK_SIZE 64u      /* per allocation sample without DWARF:
                                           the return address at [sp] */

enum {
    AGENT_REG_AX = 0, AGENT_REG_BX, AGENT_REG_CX, AGENT_REG_DX,
    AGENT_REG_SI, AGENT_REG_DI, AGENT_REG_BP, AGENT_REG_SP, AGENT_REG_IP,
    AGENT_REG_R8, AGENT_REG_R9, AGENT_REG_R10, AGENT_REG_R11,
    AGENT_REG_R12, AGENT_REG_R13, AGENT_REG_R14, AGENT_REG_R15
};

/* Registers and user stack captured with a sample (PERF_SAMPLE_REGS_USER
 * with AGENT_DWARF_REGS_MASK, PERF_SAMPLE_STACK_USER).  `abi` is the
 * sample's PERF_SAMPLE_REGS_ABI_* (0 = none: no registers, kernel thread);
 * `stack` points at `stack_size` valid bytes (the dyn_size the kernel
 * reports) copied from user memory starting at address `sp`
 * (= regs[AGENT_REG_SP]).  Pointers are valid only during the call. */
typedef struct {
    uint64_t regs[AGENT_DWARF_NREGS];
    uint64_t abi;
    const unsigned char *stack;
    uint64_t stack_size;
    uint64_t sp;
} agent_user_regs;

/* Per-process libdw state (a Dwfl with the process's modules from
 * /proc/PID/maps, attached once with a backend of its own; see the design
 * comment of unwind_dwarf.c for why). */
typedef struct agent_dwarf agent_dwarf;

typedef enum {
    AGENT_DWARF_OK = 0,
    AGENT_DWARF_GONE,       /* the process exited (or is a zombie) */
    AGENT_DWARF_NOREGS,     /* the sample has no 64-bit user registers */
    AGENT_DWARF_FAILED      /* no stack copy, or libdw could not walk past
                               the sampled IP */
} agent_dwarf_status;

/* Opens the state of process pid into *out (NULL unless AGENT_DWARF_OK);
 * err says why not. */
agent_dwarf_status agent_dwarf_open(pid_t pid, agent_dwarf **out, char *err, size_t errlen);
void agent_dwarf_close(agent_dwarf *d);
/* Unwinds one sample; on AGENT_DWARF_OK writes *n >= 2 (max at most)
 * addresses, leaf first, into ips.  Anything else: *n = 0, keep the
 * kernel's frame-pointer chain. */
agent_dwarf_status agent_dwarf_unwind(agent_dwarf *d, pid_t tid, const agent_user_regs *u,
                                      uint64_t *ips, int max, int *n);

#endif
