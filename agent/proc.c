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

int agent_proc_build(pid_t pid, char *buf, size_t cap)
{
    char path[64], hex[128];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    buf[0] = 0;
    int n = agent_elf_build_id(path, hex, sizeof hex);
    if (n <= 0) return n;
    snprintf(buf, cap, "%.12s", hex);
    return 0;
}
