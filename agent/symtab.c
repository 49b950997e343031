/* symtab.c — symbol tables: from an address to the symbol containing it.
 *
 * A table is an array of (address, size, name offset) sorted by address
 * and searched by bisection; the names live in one pool.  Duplicates at
 * one address keep the sized, then the first, entry.  An unsized symbol
 * (kallsyms) extends to the next one, at most 1 MB.  Names are demangled
 * (issue 13: C++ and Rust, ../ingest/demangle.c, the demangler the server
 * uses too) per entry on its first use and the answer kept in the entry: a
 * sample costs a flag test, and the thousands of symbols never sampled
 * cost nothing (figures in bench/README.md, "The agent").  The tables are
 * filled from ELF files (elf.c), /proc/kallsyms and JIT perf maps
 * (/tmp/perf-PID.map), the latter two parsed here from their text.
 */
#include "symtab.h"
#include "../ingest/demangle.h"

#include <stdlib.h>
#include <string.h>

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

agent_sym *agent_symtab_find(agent_symtab *t, uint64_t addr)
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
