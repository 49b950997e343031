/* proc.h — what /proc says of a process (proc.c). */
#ifndef FLAMEDB_AGENT_PROC_H
#define FLAMEDB_AGENT_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------------------
 * Process information (proc.c).
 * ------------------------------------------------------------------------ */
int agent_proc_comm(pid_t pid, char *buf, size_t cap);     /* /proc/PID/comm */
int agent_proc_exe(pid_t pid, char *buf, size_t cap);      /* readlink exe */
/* First 12 hex digits of /proc/PID/exe's build-id into buf (13 bytes),
 * "" when none. */
int agent_proc_build(pid_t pid, char *buf, size_t cap);

#endif
