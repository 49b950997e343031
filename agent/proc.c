/* proc.c — what /proc tells about a process: command name, executable,
 * build-id (the `build` label). */
#include "proc.h"
#include "elf.h"
#include "readfile.h"

#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int agent_proc_comm(pid_t pid, char *buf, size_t cap)
{
    char path[64], *text;
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (agent_read_file(path, &text, NULL) < 0) return -1;
    text[strcspn(text, "\n")] = 0;
    snprintf(buf, cap, "%s", text);
    free(text);
    return 0;
}

int agent_proc_exe(pid_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, buf, cap - 1);
    if (n < 0) return -1;
    buf[n] = 0;
    return 0;
}

/* The executable is opened once and both answers read from that file
 * (its path through /proc/self/fd): a process that execs between a
 * readlink of /proc/PID/exe and an open of it would otherwise get the old
 * program's name and the new one's build (a series that is neither). */
int agent_proc_exe_build(pid_t pid, char *exe, size_t exe_cap, char *build, size_t build_cap)
{
    char path[64], self[64], hex[128];
    exe[0] = build[0] = 0;
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return agent_proc_exe(pid, exe, exe_cap); /* the name may still be there, not its file */
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(self, exe, exe_cap - 1);
    exe[n > 0 ? n : 0] = 0;
    if (agent_elf_build_id(self, hex, sizeof hex) > 0) snprintf(build, build_cap, "%.12s", hex);
    close(fd);
    return exe[0] ? 0 : -1;
}

int agent_proc_build(pid_t pid, char *buf, size_t cap)
{
    char exe[4096];
    int rc = agent_proc_exe_build(pid, exe, sizeof exe, buf, cap);
    return rc < 0 && !exe[0] ? -1 : 0;
}
