/* lines.c — from an address in an ELF file to its source file and line
 * (issue 15: frames with lines).
 *
 * symbols.c names the function at an address; this file says where in its
 * source the address is, from the DWARF line table (.debug_line) of the
 * binary itself or of its separate debug file (the one symbols.c found: by
 * build-id, or through .gnu_debuglink).  One agent_lines per ELF file, kept
 * as long as its symbol table (for the agent's life), read with libdw:
 *
 *   - at open, the address ranges of the compilation units, sorted: from
 *     .debug_aranges when the file has it (GCC's default), which reads no
 *     CU at all, else (clang leaves it out, and libdw's dwarf_addrdie then
 *     finds nothing) from dwarf_ranges of every CU DIE; a CU's DIE is read
 *     on its first lookup;
 *   - an address: its CU by bisection, then dwarf_getsrc_die (libdw parses
 *     a CU's line table once and keeps it) gives the line and dwarf_linesrc
 *     the file, as an absolute path when the CU knows its directory;
 *   - inlined code: the line table says where the inlined callee's source
 *     is, but the frame's name is the ELF symbol of the function it was
 *     inlined into.  So that a frame's line always lies inside the function
 *     its name names (the server merges by name; pprof makes a Function per
 *     name and file), an address inside an inlined subroutine is given the
 *     call site of the outermost one (DW_AT_call_file, DW_AT_call_line): the
 *     line of the named function that the inlined code came from.  Those
 *     call sites are gathered per CU on its first lookup (one walk of its
 *     DIE tree, only subprograms and the scopes inside them);
 *   - the answers are cached per address (an open-addressing table, emptied
 *     when it reaches LINES_CACHE_MAX entries), so a hot address costs one
 *     hash probe and the cost per module stays bounded by its distinct
 *     sampled addresses.
 *
 * The file is read with libelf's mmap and its descriptor closed at once
 * (ELF_C_FDREAD): a node's worth of modules costs no open files.  The file
 * names answered point into libdw's memory and live as long as the
 * agent_lines.
 */
#include "lines.h"

#include <stdio.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINES_CACHE_MAX (1u << 16)     /* addresses cached per module */
#define LINES_MAX_DEPTH 64             /* DIE nesting walked for call sites */

typedef struct { uint64_t lo, hi; size_t cu; } cu_range;

typedef struct { uint64_t lo, hi; const char *file; unsigned line; } call_site;

typedef struct {
    Dwarf_Off off;                 /* of the CU DIE */
    Dwarf_Die die;                 /* valid when loaded */
    int loaded;                    /* 1 die read, -1 unreadable */
    call_site *sites;              /* outermost inlined subroutines, by lo */
    size_t nsites, capsites;
    int walked;
} cu_info;

typedef struct { uint64_t key; const char *file; unsigned line; } cache_slot;  /* key = va + 1 */

struct agent_lines {
    Elf *elf;
    Dwarf *dw;
    cu_info *cus; size_t ncus;
    cu_range *ranges; size_t nranges;
    cache_slot *cache; size_t cache_cap, cache_n;
};

/* ---- opening ---- */

static int ranges_cmp(const void *a, const void *b)
{
    const cu_range *x = a, *y = b;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int lines_add_range(agent_lines *l, size_t *cap, uint64_t lo, uint64_t hi, size_t cu)
{
    if (hi <= lo) return 0;
    if (l->nranges == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        cu_range *v = realloc(l->ranges, nc * sizeof *v);
        if (!v) return -1;
        l->ranges = v; *cap = nc;
    }
    l->ranges[l->nranges++] = (cu_range){ lo, hi, cu };
    return 0;
}

static int ranges_by_cu(const void *a, const void *b)
{
    const cu_range *x = a, *y = b;
    return x->cu < y->cu ? -1 : x->cu > y->cu;
}

/* The ranges from .debug_aranges (their cu field the CU DIE's offset until
 * the CUs are numbered); answers the number of ranges, 0 when there is no
 * such section, -1 when out of memory. */
static int lines_index_aranges(agent_lines *l)
{
    Dwarf_Aranges *ar;
    size_t n, capranges = 0;
    if (dwarf_getaranges(l->dw, &ar, &n) != 0 || n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        Dwarf_Addr addr;
        Dwarf_Word len;
        Dwarf_Off off;
        Dwarf_Arange *a = dwarf_onearange(ar, i);
        if (!a || dwarf_getarangeinfo(a, &addr, &len, &off) != 0) continue;
        if (lines_add_range(l, &capranges, addr, addr + len, (size_t)off) < 0) return -1;
    }
    if (l->nranges == 0) return 0;
    /* one cu_info per CU, loaded on first use */
    qsort(l->ranges, l->nranges, sizeof *l->ranges, ranges_by_cu);
    size_t ncus = 0;
    for (size_t i = 0; i < l->nranges; i++)
        if (i == 0 || l->ranges[i].cu != l->ranges[i - 1].cu) ncus++;
    l->cus = calloc(ncus, sizeof *l->cus);
    if (!l->cus) return -1;
    size_t prev = 0;
    for (size_t i = 0; i < l->nranges; i++) {
        size_t off = l->ranges[i].cu;
        if (i == 0 || off != prev) l->cus[l->ncus++].off = (Dwarf_Off)off;
        prev = off;
        l->ranges[i].cu = l->ncus - 1;
    }
    qsort(l->ranges, l->nranges, sizeof *l->ranges, ranges_cmp);
    return (int)l->nranges;
}

/* The CUs of l->dw and their address ranges; answers the number of CUs
 * with a line table and code, -1 when out of memory. */
static int lines_index(agent_lines *l)
{
    int n = lines_index_aranges(l);
    if (n != 0) return n;
    Dwarf_CU *cu = NULL, *next;
    Dwarf_Half version;
    uint8_t unit_type;
    Dwarf_Die cudie;
    size_t capcus = 0, capranges = 0;
    int useful = 0;
    while (dwarf_get_units(l->dw, cu, &next, &version, &unit_type, &cudie, NULL) == 0) {
        cu = next;
        if (unit_type == DW_UT_type || unit_type == DW_UT_split_type) continue;
        if (!dwarf_hasattr(&cudie, DW_AT_stmt_list)) continue;       /* no line table */
        if (l->ncus == capcus) {
            size_t nc = capcus ? 2 * capcus : 64;
            cu_info *v = realloc(l->cus, nc * sizeof *v);
            if (!v) return -1;
            l->cus = v; capcus = nc;
        }
        size_t k = l->ncus;
        memset(&l->cus[k], 0, sizeof l->cus[k]);
        l->cus[k].die = cudie;
        l->cus[k].off = dwarf_dieoffset(&cudie);
        l->cus[k].loaded = 1;
        size_t before = l->nranges;
        Dwarf_Addr base, start, end;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0)
            if (lines_add_range(l, &capranges, start, end, k) < 0) return -1;
        if (l->nranges > before) { l->ncus++; useful++; }
    }
    if (l->nranges) qsort(l->ranges, l->nranges, sizeof *l->ranges, ranges_cmp);
    return useful;
}

static void lines_close_parts(agent_lines *l)
{
    for (size_t i = 0; i < l->ncus; i++) free(l->cus[i].sites);
    free(l->cus); free(l->ranges); free(l->cache);
    l->cus = NULL; l->ranges = NULL; l->cache = NULL;
    l->ncus = l->nranges = l->cache_cap = l->cache_n = 0;
    if (l->dw) dwarf_end(l->dw);
    if (l->elf) elf_end(l->elf);
    l->dw = NULL; l->elf = NULL;
}

/* Opens path's DWARF into l: 1 with line tables, 0 without, -1 unreadable
 * or out of memory. */
static int lines_try(agent_lines *l, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    l->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!l->elf || elf_kind(l->elf) != ELF_K_ELF) {
        if (l->elf) elf_end(l->elf);
        l->elf = NULL;
        close(fd);
        return -1;
    }
    /* with the descriptor still open: libdw notes the file's directory
     * (where a dwz .gnu_debugaltlink file is looked for) */
    l->dw = dwarf_begin_elf(l->elf, DWARF_C_READ, NULL);
    /* everything from the mapping (or read now): the descriptor can go */
    int rc = elf_cntl(l->elf, ELF_C_FDREAD);
    close(fd);
    if (rc != 0) { lines_close_parts(l); return -1; }
    if (!l->dw) { lines_close_parts(l); return 0; }     /* no DWARF at all */
    int n = lines_index(l);
    if (n <= 0) { lines_close_parts(l); return n; }
    l->cache_cap = 1024;
    l->cache = calloc(l->cache_cap, sizeof *l->cache);
    if (!l->cache) { lines_close_parts(l); return -1; }
    return 1;
}

int agent_lines_open(const char *path, const char *debug_path, agent_lines **out,
                     char *err, size_t errlen)
{
    *out = NULL;
    elf_version(EV_CURRENT);
    agent_lines *l = calloc(1, sizeof *l);
    if (!l) { snprintf(err, errlen, "out of memory"); return -1; }
    int rc = lines_try(l, path);
    if (rc <= 0 && debug_path && *debug_path) rc = lines_try(l, debug_path);
    if (rc <= 0) {
        free(l);
        snprintf(err, errlen, "%s: no DWARF line table%s%s%s", path,
                 debug_path && *debug_path ? " (nor in " : "",
                 debug_path && *debug_path ? debug_path : "",
                 debug_path && *debug_path ? ")" : "");
        return -1;
    }
    *out = l;
    return 0;
}

void agent_lines_free(agent_lines *l)
{
    if (!l) return;
    lines_close_parts(l);
    free(l);
}

/* ---- call sites of inlined code ---- */

static int sites_cmp(const void *a, const void *b)
{
    const call_site *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void cu_add_site(cu_info *c, Dwarf_Die *die, Dwarf_Files *files, size_t nfiles)
{
    Dwarf_Attribute at;
    Dwarf_Word fileno, lineno;
    if (!dwarf_attr(die, DW_AT_call_file, &at) || dwarf_formudata(&at, &fileno) != 0) return;
    if (!dwarf_attr(die, DW_AT_call_line, &at) || dwarf_formudata(&at, &lineno) != 0) return;
    if (!files || fileno >= nfiles || lineno == 0 || lineno > 100000000) return;
    const char *file = dwarf_filesrc(files, fileno, NULL, NULL);
    if (!file || !*file) return;
    Dwarf_Addr base, start, end;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
        if (end <= start) continue;
        if (c->nsites == c->capsites) {
            size_t nc = c->capsites ? 2 * c->capsites : 16;
            call_site *v = realloc(c->sites, nc * sizeof *v);
            if (!v) return;
            c->sites = v; c->capsites = nc;
        }
        c->sites[c->nsites++] = (call_site){ start, end, file, (unsigned)lineno };
    }
}

/* Walks the children of die: the outermost inlined subroutines inside
 * subprograms are recorded, not entered; scopes that can hold code are
 * entered; anything else (types, variables, parameters) is skipped. */
static void cu_walk(cu_info *c, Dwarf_Die *die, int in_func, int depth,
                    Dwarf_Files *files, size_t nfiles)
{
    Dwarf_Die child;
    if (depth > LINES_MAX_DEPTH || dwarf_child(die, &child) != 0) return;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_inlined_subroutine:
            if (in_func) cu_add_site(c, &child, files, nfiles);
            else cu_walk(c, &child, 0, depth + 1, files, nfiles);
            break;
        case DW_TAG_subprogram:
            cu_walk(c, &child, 1, depth + 1, files, nfiles);
            break;
        case DW_TAG_lexical_block: case DW_TAG_try_block: case DW_TAG_catch_block:
        case DW_TAG_namespace: case DW_TAG_module: case DW_TAG_class_type:
        case DW_TAG_structure_type: case DW_TAG_union_type:
            cu_walk(c, &child, in_func, depth + 1, files, nfiles);
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
}

static const call_site *cu_site(cu_info *c, uint64_t va)
{
    if (!c->walked) {
        c->walked = 1;
        Dwarf_Files *files = NULL;
        size_t nfiles = 0;
        if (dwarf_getsrcfiles(&c->die, &files, &nfiles) != 0) { files = NULL; nfiles = 0; }
        cu_walk(c, &c->die, 0, 0, files, nfiles);
        if (c->nsites) qsort(c->sites, c->nsites, sizeof *c->sites, sites_cmp);
    }
    size_t lo = 0, hi = c->nsites;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->sites[mid].lo <= va) lo = mid + 1; else hi = mid;
    }
    /* outermost sites do not nest; a few back in case ranges overlap */
    for (size_t i = lo, k = 0; i > 0 && k < 4; i--, k++)
        if (va >= c->sites[i - 1].lo && va < c->sites[i - 1].hi) return &c->sites[i - 1];
    return NULL;
}

/* ---- lookups ---- */

static cu_info *lines_cu(agent_lines *l, uint64_t va)
{
    size_t lo = 0, hi = l->nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l->ranges[mid].lo <= va) lo = mid + 1; else hi = mid;
    }
    for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++)
        if (va >= l->ranges[i - 1].lo && va < l->ranges[i - 1].hi) {
            cu_info *c = &l->cus[l->ranges[i - 1].cu];
            if (c->loaded == 0)
                c->loaded = dwarf_offdie(l->dw, c->off, &c->die) &&
                            dwarf_hasattr(&c->die, DW_AT_stmt_list) ? 1 : -1;
            return c->loaded > 0 ? c : NULL;
        }
    return NULL;
}

static int lines_resolve(agent_lines *l, uint64_t va, const char **file, unsigned *line)
{
    cu_info *c = lines_cu(l, va);
    if (!c) return -1;
    const call_site *s = cu_site(c, va);
    if (s) { *file = s->file; *line = s->line; return 0; }
    Dwarf_Line *dl = dwarf_getsrc_die(&c->die, va);
    int ln = 0;
    if (!dl || dwarf_lineno(dl, &ln) != 0 || ln <= 0 || ln > 100000000) return -1;
    const char *f = dwarf_linesrc(dl, NULL, NULL);
    if (!f || !*f) return -1;
    *file = f;
    *line = (unsigned)ln;
    return 0;
}

static uint64_t lines_hash(uint64_t k)
{
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33;
    return k;
}

static void lines_cache_put(agent_lines *l, uint64_t va, const char *file, unsigned line)
{
    if ((l->cache_n + 1) * 10 > l->cache_cap * 7) {
        if (l->cache_n >= LINES_CACHE_MAX) {          /* bounded: start over */
            memset(l->cache, 0, l->cache_cap * sizeof *l->cache);
            l->cache_n = 0;
        } else {
            size_t cap = 2 * l->cache_cap;
            cache_slot *v = calloc(cap, sizeof *v);
            if (!v) return;
            for (size_t i = 0; i < l->cache_cap; i++) {
                if (!l->cache[i].key) continue;
                size_t j = lines_hash(l->cache[i].key) & (cap - 1);
                while (v[j].key) j = (j + 1) & (cap - 1);
                v[j] = l->cache[i];
            }
            free(l->cache);
            l->cache = v; l->cache_cap = cap;
        }
    }
    uint64_t key = va + 1;
    size_t j = lines_hash(key) & (l->cache_cap - 1);
    while (l->cache[j].key && l->cache[j].key != key) j = (j + 1) & (l->cache_cap - 1);
    if (!l->cache[j].key) l->cache_n++;
    l->cache[j] = (cache_slot){ key, file, line };
}

int agent_lines_find(agent_lines *l, uint64_t va, const char **file, unsigned *line)
{
    if (!l || !l->cache) return -1;
    uint64_t key = va + 1;
    size_t j = lines_hash(key) & (l->cache_cap - 1);
    while (l->cache[j].key) {
        if (l->cache[j].key == key) {
            if (!l->cache[j].file) return -1;            /* known: no line */
            *file = l->cache[j].file;
            *line = l->cache[j].line;
            return 0;
        }
        j = (j + 1) & (l->cache_cap - 1);
    }
    const char *f = NULL;
    unsigned ln = 0;
    int rc = lines_resolve(l, va, &f, &ln);
    lines_cache_put(l, va, rc == 0 ? f : NULL, rc == 0 ? ln : 0);
    if (rc < 0) return -1;
    *file = f;
    *line = ln;
    return 0;
}

size_t agent_lines_cached(const agent_lines *l) { return l ? l->cache_n : 0; }
