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
 */
#include "uprobe.h"
#include "maps.h"
#include "readfile.h"

#include <stdio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
