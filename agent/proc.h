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
/* Both of one file: the executable's path (as agent_proc_exe) and its
 * build (as agent_proc_build, "" when it has none or cannot be opened),
 * so that an exec in between cannot pair one program's name with
 * another's build.  -1 when there is no executable (kernel threads). */
int agent_proc_exe_build(pid_t pid, char *exe, size_t exe_cap, char *build, size_t build_cap);

#endif
