/* elf.h — reading ELF files: build-id, symbols, loadable segments (elf.c). */
#ifndef FLAMEDB_AGENT_ELF_H
#define FLAMEDB_AGENT_ELF_H

#include <stddef.h>
#include <stdint.h>
#include "symtab.h"

/* GNU build-id of an ELF file as lowercase hex (NUL-terminated); answers
 * its length in hex digits, 0 if the file has none, -1 if unreadable. */
int agent_elf_build_id(const char *path, char *hex, size_t cap);
/* Loads .symtab and .dynsym of an ELF file (or of its debug file: build-id
 * in debug_root/.build-id/xx/yyyy.debug, then .gnu_debuglink next to it, in
 * .debug/ and under debug_root), symbol addresses as ELF virtual addresses.
 * debug_root is normally "/usr/lib/debug". */
int agent_elf_symtab(const char *path, const char *debug_root,
                     agent_symtab *t, char *err, size_t errlen);

/* As agent_elf_symtab, the file read from `path` but its debug link
 * searched next to `logical` (its name in the process's maps: `path` may be
 * /proc/PID/map_files/...); dbg receives the debug file whose symbols were
 * merged ("" when none). */
int agent_elf_symtab_at(const char *path, const char *logical, const char *debug_root,
                        agent_symtab *t, char *dbg, size_t dbgcap, char *err, size_t errlen);

/* A PT_LOAD segment: file offset, ELF virtual address, size in memory. */
typedef struct { uint64_t offset, vaddr, filesz; } agent_elf_seg;
/* The PT_LOAD segments of the ELF file at path into a malloc'd *v (*n of
 * them); 0, or -1 (*v NULL, *n 0) when it is unreadable. */
int agent_elf_loads(const char *path, agent_elf_seg **v, size_t *n);

#endif
