/* uprobe.c — where to put the allocation uprobes (issue 13).
 *
 * A uprobe is placed on a file (inode) at a file offset; the kernel's
 * uprobe PMU (/sys/bus/event_source/devices/uprobe, perf_event_open with
 * config1 = the path, config2 = the offset) does it without tracefs or
 * eBPF.  The allocators are found where the watched processes map code:
 * every distinct file (device and inode, so a library mapped by a hundred
 * processes is read once) mapped executable whose symbol table (.dynsym,
 * else .symtab for static binaries) defines malloc, calloc or realloc as a
 * function.  glibc's libc.so.6 in most processes; a program linked with
 * jemalloc or tcmalloc gets probes on those too (only the definition the
 * program calls fires).  The file is named through /proc/PID/root, so that
 * a process in another mount namespace (a container) is probed on its own
 * files (the agent's own path when it names the same file: /proc/PID/root
 * stops resolving when PID exits).  Files mapped later (dlopen, processes
 * started after the agent under --all) are not probed.
 *
 * glibc's realloc(NULL, n) jumps into malloc: its target says so
 * (null_is_malloc, from glibc's own __libc_malloc symbol), see alloc.c.
 *
 * operator new is not probed: libstdc++'s calls malloc, so its allocations
 * are already counted, with `operator new` in their stacks; a probe on it
 * would count each of them twice.
 *
 * tracefs-defined probes (agent_uprobe_define).  An event of the uprobe
 * PMU is a registration of its own: closing it waits for a grace period
 * (uprobe_unregister_sync, ~90 ms, under the global event_mutex: serial),
 * and the breakpoint stays in the process until the last of its events
 * (threads x CPUs x functions) is closed, so that a --alloc-duty window
 * was followed by ~1 s of traps with 12 events.  An event written to
 * tracefs's uprobe_events is one registration shared by every perf event
 * opened on it (PERF_TYPE_TRACEPOINT, its id): closing one that is not the
 * last only drops it from the probe's filter, and the breakpoint leaves a
 * process's memory as soon as no open event follows a thread of it; only
 * the last close unregisters (the grace period).  The agent keeps one
 * disabled event per probe open on kthreadd (pid 2, a kernel thread: no
 * memory, so the filter puts no breakpoint anywhere for it), so that no
 * window's close is ever the last: a window ends in milliseconds, and
 * opening the next one only puts the breakpoints back.  Measured on Linux
 * 6.18: closing 12 events took 1,080 ms (PMU), 95 ms (tracefs: the last
 * one), 7 ms (tracefs and a keeper), the program trapping meanwhile.  The
 * events are named flamedb_<agent pid>/<function>_<i> and removed when the
 * agent closes; those of an agent that died are removed by the next one.
 * tracefs is root's (or needs CAP_SYS_ADMIN and a mount): otherwise the
 * agent uses the PMU.
 */
#include "uprobe.h"
#include "maps.h"
#include "readfile.h"

#include <stdio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int agent_uprobe_pmu(char *err, size_t errlen)
{
    const char *path = "/sys/bus/event_source/devices/uprobe/type";
    char *text = NULL;
    if (agent_read_file(path, &text, NULL) < 0) {
        snprintf(err, errlen, "no uprobe PMU: %s: %s (a kernel without CONFIG_UPROBE_EVENTS, "
                 "or /sys not mounted)", path, strerror(errno));
        return -1;
    }
    int type = atoi(text);
    free(text);
    if (type <= 0) { snprintf(err, errlen, "%s: not a PMU type", path); return -1; }
    return type;
}

static int push_target(agent_uprobe_target **v, size_t *n, size_t *cap, const char *path,
                       uint64_t off, agent_alloc_fn fn)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        agent_uprobe_target *nv = realloc(*v, c * sizeof *nv);
        if (!nv) return -1;
        *v = nv; *cap = c;
    }
    agent_uprobe_target *t = &(*v)[(*n)++];
    snprintf(t->path, sizeof t->path, "%s", path);
    t->offset = off;
    t->fn = fn;
    return 0;
}

int agent_alloc_symbols(const char *path, agent_uprobe_target **v, size_t *n, size_t *cap)
{
    static const char *const names[AGENT_ALLOC_NFN] = { "malloc", "calloc", "realloc" };
    if (elf_version(EV_CURRENT) == EV_NONE) return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!e || elf_kind(e) != ELF_K_ELF) {
        if (e) elf_end(e);
        close(fd);
        return -1;
    }
    uint64_t vaddr[AGENT_ALLOC_NFN] = { 0 };
    int glibc = 0;                                /* defines __libc_malloc */
    for (int pass = 0; pass < 2; pass++) {        /* .dynsym, then .symtab */
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh) || sh.sh_entsize == 0) continue;
            if (sh.sh_type != (pass == 0 ? SHT_DYNSYM : SHT_SYMTAB)) continue;
            Elf_Data *d = elf_getdata(scn, NULL);
            if (!d) continue;
            size_t ns = sh.sh_size / sh.sh_entsize;
            for (size_t i = 0; i < ns; i++) {
                GElf_Sym s;
                if (!gelf_getsym(d, (int)i, &s)) continue;
                if (GELF_ST_TYPE(s.st_info) != STT_FUNC) continue;   /* not an ifunc resolver */
                if (s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
                int bind = GELF_ST_BIND(s.st_info);
                if (bind != STB_GLOBAL && bind != STB_WEAK) continue;
                const char *name = elf_strptr(e, sh.sh_link, s.st_name);
                if (!name) continue;
                if (strcmp(name, "__libc_malloc") == 0) glibc = 1;
                for (int f = 0; f < AGENT_ALLOC_NFN; f++)
                    if (!vaddr[f] && strcmp(name, names[f]) == 0) vaddr[f] = s.st_value;
            }
        }
        if (vaddr[0] || vaddr[1] || vaddr[2]) break;
    }
    int found = 0;
    size_t nph = 0;
    if (elf_getphdrnum(e, &nph) == 0)
        for (int f = 0; f < AGENT_ALLOC_NFN; f++) {
            if (!vaddr[f]) continue;
            for (size_t i = 0; i < nph; i++) {
                GElf_Phdr ph;
                if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
                if (vaddr[f] < ph.p_vaddr || vaddr[f] >= ph.p_vaddr + ph.p_filesz) continue;
                if (push_target(v, n, cap, path, vaddr[f] - ph.p_vaddr + ph.p_offset, (agent_alloc_fn)f) == 0) {
                    (*v)[*n - 1].null_is_malloc = f == AGENT_ALLOC_REALLOC && glibc && vaddr[AGENT_ALLOC_MALLOC];
                    found++;
                }
                break;
            }
        }
    elf_end(e);
    close(fd);
    return found;
}

typedef struct { dev_t dev; ino_t ino; } file_id;

/* The files of one process; seen (n, cap) grows with every new file.
 * -1 when its maps cannot be read. */
static int targets_of(pid_t pid, file_id **seen, size_t *nseen, size_t *capseen,
                       agent_uprobe_target **v, size_t *n, size_t *cap)
{
    agent_maps m;
    if (agent_maps_read(pid, &m) < 0) return -1;
    for (size_t i = 0; i < m.n; i++) {
        const agent_map *mp = &m.v[i];
        if (!mp->exec || mp->path[0] != '/') continue;
        char path[4096];
        snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, mp->path);
        struct stat st;
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) continue;
        int dup = 0;
        for (size_t k = 0; k < *nseen && !dup; k++)
            dup = (*seen)[k].dev == st.st_dev && (*seen)[k].ino == st.st_ino;
        if (dup) continue;
        if (*nseen == *capseen) {
            size_t c = *capseen ? 2 * *capseen : 64;
            file_id *ns = realloc(*seen, c * sizeof *ns);
            if (!ns) break;
            *seen = ns; *capseen = c;
        }
        (*seen)[(*nseen)++] = (file_id){ st.st_dev, st.st_ino };
        /* the agent's own name for it when that is the same file: a
         * /proc/PID/root path stops resolving when PID exits, and the
         * probes are opened again at every --alloc-duty window */
        struct stat own;
        if (stat(mp->path, &own) == 0 && own.st_dev == st.st_dev && own.st_ino == st.st_ino)
            snprintf(path, sizeof path, "%s", mp->path);
        agent_alloc_symbols(path, v, n, cap);
    }
    agent_maps_free(&m);
    return 0;
}

int agent_alloc_targets(const pid_t *pids, size_t npids, agent_uprobe_target **out,
                        size_t *nout, char *err, size_t errlen)
{
    file_id *seen = NULL;
    size_t nseen = 0, capseen = 0, n = 0, cap = 0;
    agent_uprobe_target *v = NULL;
    size_t unreadable = 0;
    if (pids) {
        for (size_t i = 0; i < npids; i++)
            if (targets_of(pids[i], &seen, &nseen, &capseen, &v, &n, &cap) < 0) unreadable++;
    } else {
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            pid_t pid = (pid_t)atoi(e->d_name);
            if (pid > 0 && pid != getpid()) targets_of(pid, &seen, &nseen, &capseen, &v, &n, &cap);
        }
        if (d) closedir(d);
    }
    free(seen);
    if (n == 0) {
        free(v);
        if (pids && unreadable == npids)
            snprintf(err, errlen, "/proc/%d/maps: %s (the processes' maps are needed to find "
                     "their allocators: run the agent as root or as their user)", (int)pids[0],
                     strerror(errno));
        else
            snprintf(err, errlen, "no malloc, calloc or realloc found in the %zu file(s) the %s map "
                     "executable (statically linked and stripped?)", nseen,
                     pids ? "--pid processes" : "processes");
        return -1;
    }
    *out = v;
    *nout = n;
    return 0;
}

/* ---- tracefs-defined uprobes ---- */

static const char *const fn_names[AGENT_ALLOC_NFN] = { "malloc", "calloc", "realloc" };

/* Appends one line to DIR/uprobe_events; -1 with errno. */
static int uprobe_events_write(const char *dir, const char *line)
{
    char path[128];
    snprintf(path, sizeof path, "%s/uprobe_events", dir);
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t len = strlen(line);
    ssize_t w = write(fd, line, len);
    int e = errno;
    close(fd);
    if (w != (ssize_t)len) { errno = w < 0 ? e : EIO; return -1; }
    return 0;
}

/* Removes the events of groups flamedb_PID whose PID is gone, or is this
 * process (left by an earlier agent that had its pid). */
static void uprobe_remove_stale(const char *dir)
{
    char path[128], *text = NULL;
    snprintf(path, sizeof path, "%s/uprobe_events", dir);
    if (agent_read_file(path, &text, NULL) < 0) return;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        /* p:flamedb_123/malloc_0 /usr/lib/...:0x... (r: for a return probe) */
        char *name = strchr(line, ':'), *sp = strchr(line, ' ');
        if (!name || (sp && sp < name) || strncmp(name + 1, "flamedb_", 8) != 0) continue;
        name++;
        if (sp) *sp = 0;
        char *end;
        long pid = strtol(name + 8, &end, 10);
        if (end == name + 8 || *end != '/' || pid <= 0) continue;
        if (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
        char del[160];
        snprintf(del, sizeof del, "-:%.150s", name);
        uprobe_events_write(dir, del);
    }
    free(text);
}

/* kthreadd (pid 2) when it is a kernel thread in our pid namespace; 0 if
 * not (a container's namespace shows no kernel thread). */
static pid_t uprobe_kthread(void)
{
    char *text = NULL;
    if (agent_read_file("/proc/2/stat", &text, NULL) < 0) return 0;
    const char *p = strrchr(text, ')');
    unsigned long flags = 0;
    /* after the comm: state ppid pgrp session tty_nr tpgid flags */
    int ok = p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1;
    free(text);
    return ok && (flags & 0x00200000ul) ? 2 : 0;   /* PF_KTHREAD */
}

/* A disabled event on the probe that never samples: its registration's
 * keeper.  -1 when refused. */
static int uprobe_keeper(pid_t kt, int id)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_TRACEPOINT;
    a.config = (uint64_t)id;
    a.disabled = 1;
    a.exclude_kernel = 1;
    return (int)syscall(SYS_perf_event_open, &a, kt, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int agent_uprobe_define(agent_uprobe_set *s, const agent_uprobe_target *t, size_t n,
                        char *err, size_t errlen)
{
    static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
    memset(s, 0, sizeof *s);
    const char *dir = NULL;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs && !dir; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/uprobe_events", dirs[i]);
        if (access(path, W_OK) == 0) dir = dirs[i];
    }
    if (!dir) {
        snprintf(err, errlen, "no writable uprobe_events in /sys/kernel/tracing or /sys/kernel/debug/tracing "
                 "(tracefs not mounted, or not root)");
        return -1;
    }
    uprobe_remove_stale(dir);
    if (!(s->v = calloc(n ? n : 1, sizeof *s->v))) { snprintf(err, errlen, "out of memory"); return -1; }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->group, sizeof s->group, "flamedb_%d", (int)getpid());
    s->n = n;
    pid_t kt = uprobe_kthread();
    size_t defined = 0, kept = 0;
    int why = 0;
    for (size_t i = 0; i < n; i++) {
        agent_uprobe_probe *pr = &s->v[i];
        pr->keep = -1;
        pr->fn = t[i].fn;
        /* a definition is split at blanks: such a path cannot be named */
        if (strpbrk(t[i].path, " \t\n")) { why = EINVAL; continue; }
        char line[4300], idpath[200], *text = NULL;
        snprintf(line, sizeof line, "p:%s/%s_%zu %s:0x%llx", s->group, fn_names[pr->fn], i,
                 t[i].path, (unsigned long long)t[i].offset);
        if (uprobe_events_write(dir, line) < 0) { why = errno; continue; }
        snprintf(idpath, sizeof idpath, "%s/events/%s/%s_%zu/id", dir, s->group, fn_names[pr->fn], i);
        int id = agent_read_file(idpath, &text, NULL) == 0 ? atoi(text) : 0;
        free(text);
        if (id <= 0) {
            why = ENOENT;
            snprintf(line, sizeof line, "-:%s/%s_%zu", s->group, fn_names[pr->fn], i);
            uprobe_events_write(dir, line);
            continue;
        }
        pr->id = id;
        defined++;
        if (kt && (pr->keep = uprobe_keeper(kt, id)) >= 0) kept++;
    }
    if (defined == 0) {
        agent_uprobe_undefine(s);
        snprintf(err, errlen, "%s/uprobe_events refused the allocators' probes: %s", dir, strerror(why));
        return -1;
    }
    s->kept = kept == defined;
    return 0;
}

void agent_uprobe_undefine(agent_uprobe_set *s)
{
    for (size_t i = 0; s->v && i < s->n; i++)
        if (s->v[i].keep >= 0) close(s->v[i].keep);
    for (size_t i = 0; s->v && i < s->n; i++) {
        if (!s->v[i].id) continue;
        char line[128];
        snprintf(line, sizeof line, "-:%s/%s_%zu", s->group, fn_names[s->v[i].fn], i);
        uprobe_events_write(s->dir, line);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}
