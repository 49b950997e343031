/* symtab.h — symbol tables (symtab.c). */
#ifndef FLAMEDB_AGENT_SYMTAB_H
#define FLAMEDB_AGENT_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * Symbol tables (symtab.c): sorted arrays of (address, size, name); kallsyms and perf maps.
 * ------------------------------------------------------------------------ */
typedef struct {
    uint64_t addr, size;           /* size 0: extends to the next symbol */
    const char *name;              /* into the pool; valid after agent_symtab_sort */
    uint32_t name_off;             /* offset of the name in the pool */
    uint32_t demangle_tried;       /* agent_sym_name has looked at it */
    char *demangled;               /* its demangled name (malloc'd, freed with
                                      the table), NULL when not mangled */
} agent_sym;

typedef struct {
    agent_sym *v;                  /* sorted by addr */
    size_t n, cap;
    char *pool;                    /* names */
    size_t pool_len, pool_cap;
} agent_symtab;

void agent_symtab_init(agent_symtab *t);
void agent_symtab_free(agent_symtab *t);
int agent_symtab_add(agent_symtab *t, uint64_t addr, uint64_t size,
                     const char *name, size_t name_len);
void agent_symtab_sort(agent_symtab *t);   /* sort, drop duplicates */
/* The symbol containing addr, or NULL. */
const agent_sym *agent_symtab_lookup(const agent_symtab *t, uint64_t addr);
/* The name to show for a symbol: with demangle, C++ and Rust names
 * demangled (ingest/demangle.h), once per entry, on its first use (a table
 * holds many more symbols than are ever sampled), then kept; the raw name
 * when it is not mangled or demangle is 0. */
const char *agent_sym_name(agent_sym *s, int demangle);

/* /proc/kallsyms text (text symbols t/T/w/W only), JIT perf maps
 * (/tmp/perf-PID.map: "START SIZE name", hex without 0x). */
int agent_kallsyms_parse(const char *text, agent_symtab *t);
int agent_perfmap_parse(const char *text, agent_symtab *t);

/* agent_symtab_lookup, the entry writable (agent_sym_name keeps its
 * demangled name in it). */
agent_sym *agent_symtab_find(agent_symtab *t, uint64_t addr);

#endif
