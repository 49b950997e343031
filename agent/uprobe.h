/* uprobe.h — allocator entry points for uprobes (uprobe.c). */
#ifndef FLAMEDB_AGENT_UPROBE_H
#define FLAMEDB_AGENT_UPROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "alloc.h"

/* ------------------------------------------------------------------------
 * Allocation entry points (uprobe.c): where malloc, calloc and realloc
 * start in the ELF files the watched processes map, for uprobes.
 * ------------------------------------------------------------------------ */

typedef struct {
    char path[4096];                /* the file, as the agent opens it
                                       (/proc/PID/root/... for --pid) */
    uint64_t offset;                /* file offset of the function's entry */
    agent_alloc_fn fn;
    int null_is_malloc;             /* REALLOC in glibc: realloc(NULL, n)
                                       jumps into malloc, whose probe counts it */
} agent_uprobe_target;

/* The uprobe PMU's type (/sys/bus/event_source/devices/uprobe/type);
 * -1 with err naming what is missing. */
int agent_uprobe_pmu(char *err, size_t errlen);
/* The entry points of malloc, calloc and realloc defined (not imported)
 * in ELF file path (.dynsym, else .symtab), as file offsets, appended to
 * *v (n entries, cap).  Answers how many were found, -1 if unreadable. */
int agent_alloc_symbols(const char *path, agent_uprobe_target **v, size_t *n, size_t *cap);
/* The targets in every distinct file (by device and inode) mapped
 * executable by the processes pids (n of them), or by every process
 * (pids NULL: --all).  -1 with err when none defines an allocator. */
int agent_alloc_targets(const pid_t *pids, size_t n, agent_uprobe_target **out,
                        size_t *nout, char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * tracefs-defined uprobes (uprobe.c): one registration per entry point
 * shared by every perf event on it, kept by a disabled event on a kernel
 * thread, so that closing a window's events removes the breakpoints at
 * once (no grace period per event, see uprobe.c).
 * ------------------------------------------------------------------------ */

/* How the allocation probes are made (--alloc-probes). */
typedef enum {
    AGENT_UPROBES_AUTO = 0,         /* tracefs where it can be written, else the PMU */
    AGENT_UPROBES_TRACEFS,          /* tracefs or no allocation profiles */
    AGENT_UPROBES_PMU               /* the uprobe PMU, one registration per event */
} agent_uprobes_mode;

typedef struct {
    int id;                         /* its event's id (the PERF_TYPE_TRACEPOINT
                                       config); 0: not defined (the PMU then) */
    int keep;                       /* the keeper's fd, -1 if none */
    agent_alloc_fn fn;              /* names it: <function>_<index> */
} agent_uprobe_probe;

typedef struct {
    char dir[64];                   /* the tracefs mount */
    char group[32];                 /* flamedb_PID */
    agent_uprobe_probe *v;          /* per target (n; NULL: none defined) */
    size_t n;
    int kept;                       /* every defined probe has a keeper */
} agent_uprobe_set;

/* Defines an event in GROUP flamedb_<own pid> of uprobe_events for each of
 * the n targets, and opens its keeper (a disabled perf event on kthreadd,
 * which has no memory to put a breakpoint in).  Removes first the groups
 * left by agents that died (flamedb_PID of a PID that is gone).  0 when at
 * least one target is defined (the others keep id 0); -1 with err (no
 * tracefs, not writable, every definition refused): s is then empty. */
int agent_uprobe_define(agent_uprobe_set *s, const agent_uprobe_target *t, size_t n,
                        char *err, size_t errlen);
/* Closes the keepers (each waits a grace period, ~90 ms) and removes the
 * events: call after every perf event on them is closed. */
void agent_uprobe_undefine(agent_uprobe_set *s);

#endif
