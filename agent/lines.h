/* lines.h — source lines from DWARF line tables (lines.c). */
#ifndef FLAMEDB_AGENT_LINES_H
#define FLAMEDB_AGENT_LINES_H

#include <stddef.h>
#include <stdint.h>

/* Source lines (lines.c): the DWARF line tables of one ELF file, from the
 * file itself or else from its debug file (debug_path, may be NULL).  -1
 * with err when neither has line tables or the file is unreadable. */
typedef struct agent_lines agent_lines;

int agent_lines_open(const char *path, const char *debug_path, agent_lines **out,
                     char *err, size_t errlen);
void agent_lines_free(agent_lines *l);
/* The source location of the ELF virtual address va: 0 with *file (owned
 * by l) and *line >= 1, -1 when unknown.  Inside inlined code: the call
 * site of the outermost inlined subroutine, so the line lies in the
 * function the ELF symbol names.  Answers are cached per address. */
int agent_lines_find(agent_lines *l, uint64_t va, const char **file, unsigned *line);
size_t agent_lines_cached(const agent_lines *l);   /* addresses in the cache */

#endif
