/* fsp.h — thread pruning, Atys FSP (fsp.c). */
#ifndef FLAMEDB_AGENT_FSP_H
#define FLAMEDB_AGENT_FSP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------------------
 * Thread pruning, Atys FSP (fsp.c): pure.
 * ------------------------------------------------------------------------ */
typedef struct {
    pid_t tid;
    uint64_t samples;
} agent_thread_count;

/* Marks keep[i] = 1 for the most active threads whose samples together make
 * at least p (0 < p <= 1) of the total, 0 for the rest (ties: lower tid
 * first).  p >= 1 keeps every thread.  Answers the number of samples
 * dropped; *threads_dropped receives the number of threads dropped. */
uint64_t agent_fsp_select(const agent_thread_count *t, size_t n, double p,
                          int *keep, size_t *threads_dropped);

#endif
