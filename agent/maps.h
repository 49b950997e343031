/* maps.h — process memory maps (maps.c). */
#ifndef FLAMEDB_AGENT_MAPS_H
#define FLAMEDB_AGENT_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------------------
 * Process memory maps (maps.c): snapshots of /proc/PID/maps.
 * ------------------------------------------------------------------------ */
typedef struct {
    uint64_t start, end, offset;   /* [start, end), file offset of start */
    int exec;                      /* mapped executable */
    char *path;                    /* pathname column ("" for anonymous) */
    long elf;                      /* symbolizer's cache: 0 not looked up,
                                      -1 unreadable, k > 0 its ELF entry k-1 */
} agent_map;

typedef struct {
    agent_map *v;                  /* sorted by start */
    size_t n;
} agent_maps;

/* Parses a maps file's text (as /proc/PID/maps prints it). */
int agent_maps_parse(const char *text, agent_maps *out);
int agent_maps_read(pid_t pid, agent_maps *out);
const agent_map *agent_maps_find(const agent_maps *m, uint64_t addr);
void agent_maps_free(agent_maps *m);

#endif
