/* symbols.c — from an address to a function name.
 *
 * Symbol tables are sorted arrays searched by bisection.  ELF tables come
 * from .symtab and .dynsym of the file, merged with those of its debug file
 * when one exists (/usr/lib/debug/.build-id/xx/yyyy.debug, else the
 * .gnu_debuglink name next to the file, in its .debug/ and under
 * /usr/lib/debug/DIR/).  They are cached by GNU build-id, so one libc is
 * loaded once for every process that maps it (files without a build-id are
 * keyed by device, inode, size and mtime).
 *
 * An address in a process is resolved through that process's maps
 * snapshot: file offset = ip - map start + map offset, then the ELF virtual
 * address through the PT_LOAD segment holding that offset, which takes care
 * of PIE and shared-library load bias alike.  Kernel addresses go to
 * /proc/kallsyms ("name_[k]"); anonymous executable memory to the JIT perf
 * map /tmp/perf-PID.map; anything else unknown becomes "module+0xOFFSET".
 * Snapshots and tables are kept after a process exits or unloads a library
 * (agent_syms_forget drops a process once its samples are flushed), so
 * late samples still resolve.
 *
 * Frames with lines (agent_syms_frame): a frame named by an ELF symbol
 * also gets its source file and line, from the line tables of the same ELF
 * entry (lines.c; opened on the entry's first such frame, from the binary
 * or the debug file found here for its symbols, once per build-id like the
 * symbols), the binary's path as the process maps it and its build-id:
 * "name US file US line US mapping US build_id" (agent_frame_locate).
 *
 * Names are demangled (issue 13: C++ and Rust, ingest/demangle.c, the one
 * demangler the server uses too) per table entry on its first use, and the
 * answer kept in the entry: a sample costs a flag test, and the tables'
 * thousands of symbols that are never sampled cost nothing (figures in
 * bench/README.md, "The agent").  --no-demangle keeps the raw names.
 */
#include "agent.h"
#include "../ingest/demangle.h"

#include <ctype.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- symbol tables ---- */

void agent_symtab_init(agent_symtab *t) { memset(t, 0, sizeof *t); }

void agent_symtab_free(agent_symtab *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->v[i].demangled);
    free(t->v);
    free(t->pool);
    memset(t, 0, sizeof *t);
}

int agent_symtab_add(agent_symtab *t, uint64_t addr, uint64_t size,
                     const char *name, size_t name_len)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        agent_sym *v = realloc(t->v, cap * sizeof *v);
        if (!v) return -1;
        t->v = v; t->cap = cap;
    }
    if (t->pool_len + name_len + 1 > UINT32_MAX) return -1;   /* name_off is 32-bit */
    if (t->pool_len + name_len + 1 > t->pool_cap) {
        size_t cap = t->pool_cap ? 2 * t->pool_cap : 8192;
        while (cap < t->pool_len + name_len + 1) cap *= 2;
        char *p = realloc(t->pool, cap);
        if (!p) return -1;
        t->pool = p; t->pool_cap = cap;
    }
    memcpy(t->pool + t->pool_len, name, name_len);
    t->pool[t->pool_len + name_len] = 0;
    t->v[t->n++] = (agent_sym){ addr, size, NULL, (uint32_t)t->pool_len, 0, NULL };
    t->pool_len += name_len + 1;
    return 0;
}

static int sym_cmp(const void *a, const void *b)
{
    const agent_sym *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    /* prefer the sized one, then the longer-lived (global) name */
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    return 0;
}

void agent_symtab_sort(agent_symtab *t)
{
    if (t->n == 0) return;
    for (size_t i = 0; i < t->n; i++) t->v[i].name = t->pool + t->v[i].name_off;
    qsort(t->v, t->n, sizeof *t->v, sym_cmp);
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        if (k == 0 || t->v[k - 1].addr != t->v[i].addr) t->v[k++] = t->v[i];
        else free(t->v[i].demangled);
    t->n = k;
}

const agent_sym *agent_symtab_lookup(const agent_symtab *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->v[mid].addr <= addr) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return NULL;
    const agent_sym *s = &t->v[lo - 1];
    if (s->size > 0) return addr < s->addr + s->size ? s : NULL;
    /* unsized: up to the next symbol, at most 1 MB */
    uint64_t end = lo < t->n ? t->v[lo].addr : s->addr + (1u << 20);
    return addr < end && addr - s->addr < (1u << 20) ? s : NULL;
}

const char *agent_sym_name(agent_sym *s, int demangle)
{
    if (!demangle) return s->name;
    if (!s->demangle_tried) {
        s->demangled = demangle_name(s->name, strlen(s->name));
        s->demangle_tried = 1;
    }
    return s->demangled ? s->demangled : s->name;
}

/* agent_symtab_lookup, the entry writable (its demangled name is kept in it). */
static agent_sym *symtab_find(agent_symtab *t, uint64_t addr)
{
    const agent_sym *s = agent_symtab_lookup(t, addr);
    return s ? &t->v[s - t->v] : NULL;
}

/* ---- kallsyms and perf maps ---- */

int agent_kallsyms_parse(const char *text, agent_symtab *t)
{
    const char *line = text;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        char *end;
        uint64_t addr = strtoull(line, &end, 16);
        if (end > line && *end == ' ') {
            char type = end[1];
            const char *name = end + 3;
            size_t len = (size_t)((eol ? eol : name + strlen(name)) - name);
            size_t nl = strcspn(name, " \t\n");
            if (nl < len) len = nl;                 /* drop "\t[module]" */
            if ((type == 't' || type == 'T' || type == 'w' || type == 'W') && len > 0 &&
                end[2] == ' ' && agent_symtab_add(t, addr, 0, name, len) < 0)
                return -1;
        }
        line = eol ? eol + 1 : NULL;
    }
    agent_symtab_sort(t);
    return 0;
}

int agent_perfmap_parse(const char *text, agent_symtab *t)
{
    const char *line = text;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        char *e1, *e2;
        uint64_t start = strtoull(line, &e1, 16);
        if (e1 > line && *e1 == ' ') {
            uint64_t size = strtoull(e1 + 1, &e2, 16);
            if (e2 > e1 + 1 && *e2 == ' ') {
                const char *name = e2 + 1;
                size_t len = (size_t)((eol ? eol : name + strlen(name)) - name);
                while (len > 0 && (name[len - 1] == '\r' || name[len - 1] == ' ')) len--;
                if (len > 0 && agent_symtab_add(t, start, size ? size : 1, name, len) < 0)
                    return -1;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    agent_symtab_sort(t);
    return 0;
}

/* ---- ELF ---- */

static void elf_init(void)
{
    static int done;
    if (!done) { elf_version(EV_CURRENT); done = 1; }
}

static int hexify(const unsigned char *id, ssize_t n, char *hex, size_t cap)
{
    if ((size_t)(2 * n + 1) > cap) n = (ssize_t)(cap - 1) / 2;
    for (ssize_t i = 0; i < n; i++) sprintf(hex + 2 * i, "%02x", id[i]);
    hex[2 * n] = 0;
    return (int)(2 * n);
}

static int elf_build_id_of(Elf *e, char *hex, size_t cap)
{
    const void *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(e, &id);
    hex[0] = 0;
    if (n <= 0) return 0;
    return hexify(id, n, hex, cap);
}

int agent_elf_build_id(const char *path, char *hex, size_t cap)
{
    elf_init();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int n = -1;
    if (e && elf_kind(e) == ELF_K_ELF) n = elf_build_id_of(e, hex, cap);
    if (e) elf_end(e);
    close(fd);
    return n;
}

static int elf_load_syms(Elf *e, agent_symtab *t)
{
    Elf_Scn *scn = NULL;
    int found = 0;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
        if (sh.sh_entsize == 0) continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d) continue;
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; i++) {
            GElf_Sym s;
            if (!gelf_getsym(d, (int)i, &s)) continue;
            int type = GELF_ST_TYPE(s.st_info);
            if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
            if (s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
            const char *name = elf_strptr(e, sh.sh_link, s.st_name);
            if (!name || !*name) continue;
            if (agent_symtab_add(t, s.st_value, s.st_size, name, strlen(name)) < 0) return -1;
            found++;
        }
    }
    return found;
}

/* Loads the symbols of the ELF file at path into t; answers how many, -1
 * if it is not readable ELF.  Fills build-id and debuglink when asked. */
static int elf_file_syms(const char *path, agent_symtab *t, char *bid, size_t bidcap,
                         char *link, size_t linkcap)
{
    elf_init();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int n = -1;
    if (e && elf_kind(e) == ELF_K_ELF) {
        n = elf_load_syms(e, t);
        if (bid) elf_build_id_of(e, bid, bidcap);
        if (link) {
            GElf_Word crc;
            const char *l = dwelf_elf_gnu_debuglink(e, &crc);
            snprintf(link, linkcap, "%s", l ? l : "");
        }
    }
    if (e) elf_end(e);
    close(fd);
    return n;
}

/* As agent_elf_symtab, the file read from `path` but its debug link
 * searched next to `logical` (its name in the process's maps: `path` may be
 * /proc/PID/map_files/...). */
static int elf_symtab_at(const char *path, const char *logical, const char *debug_root,
                         agent_symtab *t, char *dbg, size_t dbgcap, char *err, size_t errlen);

int agent_elf_symtab(const char *path, const char *debug_root,
                     agent_symtab *t, char *err, size_t errlen)
{
    char dbg[8704];
    return elf_symtab_at(path, path, debug_root, t, dbg, sizeof dbg, err, errlen);
}

/* dbg receives the debug file whose symbols were merged ("" when none). */
static int elf_symtab_at(const char *path, const char *logical, const char *debug_root,
                         agent_symtab *t, char *dbg, size_t dbgcap, char *err, size_t errlen)
{
    char bid[128] = "", link[256] = "";
    int n = elf_file_syms(path, t, bid, sizeof bid, link, sizeof link);
    if (n < 0) {
        snprintf(err, errlen, "%s: not a readable ELF file", path);
        return -1;
    }
    int found = 0;
    if (bid[0] && debug_root) {
        snprintf(dbg, dbgcap, "%s/.build-id/%.2s/%s.debug", debug_root, bid, bid + 2);
        if (access(dbg, R_OK) == 0 && elf_file_syms(dbg, t, NULL, 0, NULL, 0) >= 0) found = 1;
    }
    if (!found && link[0]) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", logical);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0; else strcpy(dir, ".");
        const char *fmts[3] = { "%s/%s", "%s/.debug/%s", NULL };
        for (int i = 0; i < 3 && !found; i++) {
            if (fmts[i]) snprintf(dbg, dbgcap, fmts[i], dir, link);
            else if (debug_root) snprintf(dbg, dbgcap, "%s%s/%s", debug_root, dir, link);
            else continue;
            if (strcmp(dbg, path) == 0) continue;
            if (access(dbg, R_OK) == 0 && elf_file_syms(dbg, t, NULL, 0, NULL, 0) >= 0) found = 1;
        }
    }
    if (!found) dbg[0] = 0;
    agent_symtab_sort(t);
    return 0;
}

void agent_module_offset(const char *path, uint64_t off, char *buf, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!*base) base = "[unknown]";
    snprintf(buf, cap, "%s+0x%llx", base, (unsigned long long)off);
}

/* ---- the symbolizer ---- */

typedef struct { uint64_t offset, vaddr, filesz; } elf_seg;

typedef struct {
    char key[160];                 /* build-id, or file:dev:ino:size:mtime */
    agent_symtab syms;
    elf_seg *segs;
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

static void elf_segs(const char *path, elf_entry *en)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t n = 0;
    if (e && elf_getphdrnum(e, &n) == 0 && n > 0) {
        en->segs = calloc(n, sizeof *en->segs);
        for (size_t i = 0; en->segs && i < n; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
                en->segs[en->nsegs++] = (elf_seg){ ph.p_offset, ph.p_vaddr, ph.p_memsz };
        }
    }
    if (e) elf_end(e);
    close(fd);
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
        en->ok = elf_symtab_at(path, logical, s->debug_root, &en->syms, dbg, sizeof dbg,
                               err, sizeof err) == 0;
        if (en->ok) elf_segs(path, en);
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
    agent_sym *sym = symtab_find(&s->kernel, ip);
    return sym ? agent_sym_name(sym, s->demangle) : NULL;   /* Rust in the kernel is mangled */
}

/* JIT code: the perf map, read again when a lookup misses and the file
 * has grown (JITs append as they compile). */
static const char *syms_perfmap(proc_entry *p, uint64_t ip, int demangle)
{
    agent_sym *sym = symtab_find(&p->perfmap, ip);
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
    sym = symtab_find(&p->perfmap, ip);
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
        agent_sym *sym = ok ? symtab_find(&en->syms, va) : NULL;
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
