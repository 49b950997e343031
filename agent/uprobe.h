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

#endif
