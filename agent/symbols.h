/* symbols.h — the symbolizer: from a process's address to a frame's text (symbols.c). */
#ifndef FLAMEDB_AGENT_SYMBOLS_H
#define FLAMEDB_AGENT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The symbolizer: per-process maps snapshots, ELF symbol tables cached by
 * build-id (by path+inode when there is none), kernel symbols, perf maps. */
typedef struct agent_syms agent_syms;

agent_syms *agent_syms_new(const char *debug_root);
void agent_syms_free(agent_syms *s);
/* Whether names are demangled (agent_sym_name; on by default,
 * --no-demangle turns it off). */
void agent_syms_set_demangle(agent_syms *s, int on);
/* Writes the name of the frame at ip in process pid into buf: the symbol,
 * "name_[k]" for kernel addresses, the perf-map name for JIT code, or
 * "module+0xOFFSET" (file offset) when nothing is known, "[unknown]" when
 * not even the mapping is.  Names are cut at AGENT_NAME_MAX - 1 bytes. */
void agent_syms_name(agent_syms *s, pid_t pid, uint64_t ip, int kernel,
                     char *buf, size_t cap);
/* As agent_syms_name; with lines, a user-space frame named by an ELF symbol
 * of a file with DWARF line tables (its own or its debug file's) gets its
 * location: "name US file US line US mapping US build_id" (agent_frame_locate;
 * mapping = the file's path in the process's maps, build_id = its GNU
 * build-id in hex, "" when it has none).  Kernel, JIT and unnamed frames,
 * and files without line tables: the name alone.  cap should leave room
 * for the location (AGENT_FRAME_MAX); without room, the name alone. */
void agent_syms_frame(agent_syms *s, pid_t pid, uint64_t ip, int kernel, int lines,
                      char *buf, size_t cap);
/* Forgets a process (after it exited and its samples are flushed). */
void agent_syms_forget(agent_syms *s, pid_t pid);
/* Formats the fallback "basename(path)+0x<off>". */
void agent_module_offset(const char *path, uint64_t off, char *buf, size_t cap);

#endif
