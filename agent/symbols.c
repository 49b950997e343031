/* symbols.c — the symbolizer: from an address in a process to a frame's text.
 *
 * ELF symbol tables (elf.c, symtab.c) are cached by GNU build-id, so one
 * libc is loaded once for every process that maps it (files without a
 * build-id are keyed by device, inode, size and mtime).
 *
 * An address in a process is resolved through that process's maps
 * snapshot (maps.c): file offset = ip - map start + map offset, then the
 * ELF virtual address through the PT_LOAD segment holding that offset,
 * which takes care of PIE and shared-library load bias alike.  Kernel
 * addresses go to /proc/kallsyms ("name_[k]"); anonymous executable memory
 * to the JIT perf map /tmp/perf-PID.map; anything else unknown becomes
 * "module+0xOFFSET".  Snapshots and tables are kept after a process exits
 * or unloads a library (agent_syms_forget drops a process once its samples
 * are flushed), so late samples still resolve.
 *
 * Frames with lines (agent_syms_frame): a frame named by an ELF symbol
 * also gets its source file and line, from the line tables of the same ELF
 * entry (lines.c; opened on the entry's first such frame, from the binary
 * or the debug file elf.c found for its symbols, once per build-id like the
 * symbols), the binary's path as the process maps it and its build-id:
 * "name US file US line US mapping US build_id" (agent_frame_locate,
 * frametext.c).  Names are demangled by symtab.c unless --no-demangle.
 */
#include "symbols.h"
#include "elf.h"
#include "frametext.h"
#include "lines.h"
#include "maps.h"
#include "readfile.h"
#include "symtab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


void agent_module_offset(const char *path, uint64_t off, char *buf, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!*base) base = "[unknown]";
    snprintf(buf, cap, "%s+0x%llx", base, (unsigned long long)off);
}

/* ---- the symbolizer ---- */

typedef struct {
    char key[160];                 /* build-id, or file:dev:ino:size:mtime */
    agent_symtab syms;
    agent_elf_seg *segs;
    size_t nsegs;
    int ok;                        /* readable ELF */
    char *debug;                   /* the debug file found for it, or NULL */
    agent_lines *lines;            /* its line tables (lines.c) */
    int lines_tried;               /* opened, or known to have none */
} elf_entry;

typedef struct {
    char key[96];                  /* dev:ino:size:mtime of a file */
    size_t elf;                    /* index into elfs */
} file_entry;

typedef struct {
    pid_t pid;
    agent_maps maps;
    time_t refreshed;
    agent_symtab perfmap;
    off_t perfmap_size;
} proc_entry;

struct agent_syms {
    char *debug_root;
    elf_entry *elfs; size_t nelfs, capelfs;
    file_entry *files; size_t nfiles, capfiles;
    proc_entry *procs; size_t nprocs, capprocs;
    agent_symtab kernel;
    int kernel_loaded;
    int demangle;                  /* agent_syms_set_demangle */
};

agent_syms *agent_syms_new(const char *debug_root)
{
    agent_syms *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->debug_root = strdup(debug_root ? debug_root : "/usr/lib/debug");
    s->demangle = 1;
    return s;
}

void agent_syms_set_demangle(agent_syms *s, int on) { s->demangle = on; }

void agent_syms_free(agent_syms *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nelfs; i++) {
        agent_symtab_free(&s->elfs[i].syms);
        free(s->elfs[i].segs);
        free(s->elfs[i].debug);
        agent_lines_free(s->elfs[i].lines);
    }
    for (size_t i = 0; i < s->nprocs; i++) { agent_maps_free(&s->procs[i].maps); agent_symtab_free(&s->procs[i].perfmap); }
    free(s->elfs); free(s->files); free(s->procs);
    agent_symtab_free(&s->kernel);
    free(s->debug_root);
    free(s);
}

static proc_entry *syms_proc(agent_syms *s, pid_t pid)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i].pid == pid) return &s->procs[i];
    if (s->nprocs == s->capprocs) {
        size_t cap = s->capprocs ? 2 * s->capprocs : 16;
        proc_entry *v = realloc(s->procs, cap * sizeof *v);
        if (!v) return NULL;
        s->procs = v; s->capprocs = cap;
    }
    proc_entry *p = &s->procs[s->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    agent_maps_read(pid, &p->maps);
    p->refreshed = time(NULL);
    return p;
}

void agent_syms_forget(agent_syms *s, pid_t pid)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i].pid == pid) {
            agent_maps_free(&s->procs[i].maps);
            agent_symtab_free(&s->procs[i].perfmap);
            s->procs[i] = s->procs[--s->nprocs];
            return;
        }
}

/* The ELF entry of the file at path (opened as given; `logical` is its
 * name in the maps), loaded once. */
static elf_entry *syms_elf(agent_syms *s, const char *path, const char *logical)
{
    struct stat st;
    if (stat(path, &st) < 0) return NULL;
    char fkey[96];
    snprintf(fkey, sizeof fkey, "%llx:%llx:%llx:%llx", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtime);
    for (size_t i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i].key, fkey) == 0) return &s->elfs[s->files[i].elf];
    char key[160];
    if (agent_elf_build_id(path, key, sizeof key) <= 0) snprintf(key, sizeof key, "file:%s", fkey);
    size_t idx = s->nelfs;
    for (size_t i = 0; i < s->nelfs; i++)
        if (strcmp(s->elfs[i].key, key) == 0) { idx = i; break; }
    if (idx == s->nelfs) {
        if (s->nelfs == s->capelfs) {
            size_t cap = s->capelfs ? 2 * s->capelfs : 16;
            elf_entry *v = realloc(s->elfs, cap * sizeof *v);
            if (!v) return NULL;
            s->elfs = v; s->capelfs = cap;
        }
        elf_entry *en = &s->elfs[s->nelfs];
        memset(en, 0, sizeof *en);
        snprintf(en->key, sizeof en->key, "%s", key);
        char err[256], dbg[8704];
        en->ok = agent_elf_symtab_at(path, logical, s->debug_root, &en->syms, dbg, sizeof dbg,
                               err, sizeof err) == 0;
        if (en->ok) agent_elf_loads(path, &en->segs, &en->nsegs);
        if (en->ok && dbg[0]) en->debug = strdup(dbg);
        s->nelfs++;
    }
    if (s->nfiles == s->capfiles) {
        size_t cap = s->capfiles ? 2 * s->capfiles : 16;
        file_entry *v = realloc(s->files, cap * sizeof *v);
        if (!v) return &s->elfs[idx];
        s->files = v; s->capfiles = cap;
    }
    snprintf(s->files[s->nfiles].key, sizeof s->files[s->nfiles].key, "%s", fkey);
    s->files[s->nfiles++].elf = idx;
    return &s->elfs[idx];
}

static const char *syms_kernel(agent_syms *s, uint64_t ip)
{
    if (!s->kernel_loaded) {
        char *text;
        s->kernel_loaded = 1;
        if (agent_read_file("/proc/kallsyms", &text, NULL) == 0) {
            agent_kallsyms_parse(text, &s->kernel);
            free(text);
            /* kptr_restrict: every address reads 0 */
            if (s->kernel.n > 0 && s->kernel.v[s->kernel.n - 1].addr == 0) agent_symtab_free(&s->kernel);
        }
    }
    agent_sym *sym = agent_symtab_find(&s->kernel, ip);
    return sym ? agent_sym_name(sym, s->demangle) : NULL;   /* Rust in the kernel is mangled */
}

/* JIT code: the perf map, read again when a lookup misses and the file
 * has grown (JITs append as they compile). */
static const char *syms_perfmap(proc_entry *p, uint64_t ip, int demangle)
{
    agent_sym *sym = agent_symtab_find(&p->perfmap, ip);
    if (sym) return agent_sym_name(sym, demangle);
    {
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)p->pid);
        if (stat(path, &st) == 0 && st.st_size != p->perfmap_size) {
            char *text;
            if (agent_read_file(path, &text, NULL) == 0) {
                agent_symtab_free(&p->perfmap);
                agent_perfmap_parse(text, &p->perfmap);
                p->perfmap_size = st.st_size;
                free(text);
            }
        }
    }
    sym = agent_symtab_find(&p->perfmap, ip);
    return sym ? agent_sym_name(sym, demangle) : NULL;
}

static uint64_t seg_vaddr(const elf_entry *en, uint64_t off, int *ok)
{
    for (size_t i = 0; i < en->nsegs; i++)
        if (off >= en->segs[i].offset && off < en->segs[i].offset + en->segs[i].filesz) {
            *ok = 1;
            return off - en->segs[i].offset + en->segs[i].vaddr;
        }
    *ok = 0;
    return off;
}

/* Opens the mapped file the way the process sees it (once per mapping:
 * the entry is remembered in the snapshot). */
static elf_entry *syms_map_elf_open(agent_syms *s, pid_t pid, const agent_map *m);

static elf_entry *syms_map_elf(agent_syms *s, pid_t pid, agent_map *m)
{
    if (m->elf == 0) {
        elf_entry *en = syms_map_elf_open(s, pid, m);
        m->elf = en && en->ok ? (long)(en - s->elfs) + 1 : -1;
    }
    return m->elf > 0 ? &s->elfs[m->elf - 1] : NULL;
}

static elf_entry *syms_map_elf_open(agent_syms *s, pid_t pid, const agent_map *m)
{
    char path[4352];
    snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", (int)pid,
             (unsigned long long)m->start, (unsigned long long)m->end);
    elf_entry *en = syms_elf(s, path, m->path);
    if (en && en->ok) return en;
    snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, m->path);
    en = syms_elf(s, path, m->path);
    if (en && en->ok) return en;
    return syms_elf(s, m->path, m->path);
}

/* The line tables of a mapped file, opened the first time a frame in it
 * wants lines, from the file as this process sees it, or from the debug
 * file symbols.c found for it. */
static agent_lines *syms_map_lines(pid_t pid, const agent_map *m, elf_entry *en)
{
    if (en->lines_tried) return en->lines;
    char path[4352], err[512];
    snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", (int)pid,
             (unsigned long long)m->start, (unsigned long long)m->end);
    if (access(path, R_OK) != 0) snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, m->path);
    if (access(path, R_OK) != 0) snprintf(path, sizeof path, "%s", m->path);
    if (agent_lines_open(path, en->debug, &en->lines, err, sizeof err) < 0) en->lines = NULL;
    en->lines_tried = 1;
    return en->lines;
}

void agent_syms_frame(agent_syms *s, pid_t pid, uint64_t ip, int kernel, int lines,
                      char *buf, size_t cap)
{
    /* names stay within what the server takes for a name, whatever cap
     * leaves for the location */
    size_t ncap = cap < AGENT_NAME_MAX ? cap : AGENT_NAME_MAX;
    if (kernel) {
        const char *k = syms_kernel(s, ip);
        if (k) snprintf(buf, ncap, "%s_[k]", k);
        else snprintf(buf, ncap, "[kernel]_[k]");
        agent_frame_clean(buf);
        return;
    }
    proc_entry *p = syms_proc(s, pid);
    if (!p) { snprintf(buf, ncap, "[unknown]"); return; }
    agent_map *m = (agent_map *)agent_maps_find(&p->maps, ip);
    if (!m && p->refreshed != time(NULL)) {          /* a new mapping? */
        agent_maps nm;
        if (agent_maps_read(pid, &nm) == 0 && nm.n > 0) { agent_maps_free(&p->maps); p->maps = nm; }
        p->refreshed = time(NULL);
        m = (agent_map *)agent_maps_find(&p->maps, ip);
    }
    if (!m || m->path[0] != '/') {
        const char *j = syms_perfmap(p, ip, s->demangle);
        if (j) snprintf(buf, ncap, "%s", j);
        else if (m && m->path[0]) snprintf(buf, ncap, "%s+0x%llx", m->path, (unsigned long long)(ip - m->start));
        else snprintf(buf, ncap, "[unknown]");
        agent_frame_clean(buf);
        return;
    }
    uint64_t off = ip - m->start + m->offset;
    elf_entry *en = syms_map_elf(s, pid, m);
    if (en && en->ok) {
        int ok;
        uint64_t va = seg_vaddr(en, off, &ok);
        agent_sym *sym = ok ? agent_symtab_find(&en->syms, va) : NULL;
        if (sym) {
            snprintf(buf, ncap, "%s", agent_sym_name(sym, s->demangle));
            agent_frame_clean(buf);
            const char *file;
            unsigned line;
            agent_lines *l = lines ? syms_map_lines(pid, m, en) : NULL;
            if (l && agent_lines_find(l, va, &file, &line) == 0)
                agent_frame_locate(buf, cap, file, line, m->path,
                                   strncmp(en->key, "file:", 5) ? en->key : "");
            return;
        }
    }
    agent_module_offset(m->path, off, buf, ncap);
    agent_frame_clean(buf);
}

void agent_syms_name(agent_syms *s, pid_t pid, uint64_t ip, int kernel,
                     char *buf, size_t cap)
{
    agent_syms_frame(s, pid, ip, kernel, 0, buf, cap);
}
