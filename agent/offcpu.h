/* offcpu.h — off-CPU time: pairing switch-outs with switch-ins (offcpu.c). */
#ifndef FLAMEDB_AGENT_OFFCPU_H
#define FLAMEDB_AGENT_OFFCPU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------------------
 * Off-CPU time (offcpu.c): pairing each thread's switch-out (with its
 * stack) with its next switch-in, in time order, and cutting the time of
 * threads still off the CPU at the end of a period.  Pure.
 * ------------------------------------------------------------------------ */
typedef struct agent_offcpu agent_offcpu;
/* One finished (or cut) stretch off the CPU: ns nanoseconds of thread tid
 * of process pid with stack (valid during the call). */
typedef void (*agent_offcpu_emit)(pid_t pid, pid_t tid, const char *stack, uint64_t ns, void *arg);

agent_offcpu *agent_offcpu_new(void);
void agent_offcpu_free(agent_offcpu *o);
/* Queue events (they may come in any order across CPUs: ordered by time
 * in agent_offcpu_advance).  The stack is copied.  -1 when out of memory. */
int agent_offcpu_out(agent_offcpu *o, pid_t pid, pid_t tid, uint64_t time, const char *stack);
int agent_offcpu_in(agent_offcpu *o, pid_t tid, uint64_t time);
/* Applies the queued events with time <= upto in time order (later ones
 * stay queued): a switch-in closes its thread's open stretch and emits it;
 * a switch-out opens one (a second switch-out without a switch-in between,
 * a lost record, replaces the first and is counted unpaired). */
void agent_offcpu_advance(agent_offcpu *o, uint64_t upto, agent_offcpu_emit fn, void *arg);
/* The period ends at `at` (the last advance's upto): every open stretch
 * emits at - start and restarts at `at`, so the rest of it falls in the
 * next period; threads alive() says are gone (exited while off the CPU,
 * their last switch-out) are forgotten without emitting. */
void agent_offcpu_cut(agent_offcpu *o, uint64_t at, int (*alive)(pid_t pid, pid_t tid, void *arg),
                      agent_offcpu_emit fn, void *arg);
/* The user frames of an off-CPU sample of a process unwound with frame
 * pointers: d (nd, room for max) from libdw over the small stack copy,
 * which recovers the caller of the libc wrapper the thread blocks in (no
 * frame pointer there, so the kernel's chain f skips it) but stops where
 * the copy ends; continued with f's frames after the first return address
 * the two share (index >= 1 in both).  None shared: the longer of the two
 * (f copied into d).  Answers the frames now in d. */
int agent_offcpu_splice(uint64_t *d, int nd, int max, const uint64_t *f, int nf);
size_t agent_offcpu_open(const agent_offcpu *o);      /* threads off the CPU now */
size_t agent_offcpu_queued(const agent_offcpu *o);
uint64_t agent_offcpu_unpaired(const agent_offcpu *o);
/* The id of tracepoint SYS:NAME and the byte offset of FIELD in its raw
 * record (field may be NULL), from tracefs (/sys/kernel/tracing, else
 * /sys/kernel/debug/tracing); mounts tracefs on /sys/kernel/tracing when
 * neither has it and that is permitted.  -1 with err naming what is
 * missing. */
int agent_tracepoint(const char *sys, const char *name, const char *field,
                     int *id, int *field_off, char *err, size_t errlen);

#endif
