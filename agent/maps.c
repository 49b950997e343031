/* maps.c — snapshots of /proc/PID/maps.
 *
 * The symbolizer keeps one snapshot per process seen, so that the samples
 * of a process that has exited, or of a library it has since unloaded, are
 * still resolved against the mappings in force when they were taken (the
 * snapshot is refreshed when an address falls outside it).
 */
#include "maps.h"
#include "readfile.h"

#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int map_cmp(const void *a, const void *b)
{
    const agent_map *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int agent_maps_parse(const char *text, agent_maps *out)
{
    size_t cap = 64;
    out->n = 0;
    out->v = malloc(cap * sizeof *out->v);
    if (!out->v) return -1;
    const char *line = text;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        uint64_t start, end, off;
        char perms[8] = "";
        int pathpos = 0;
        char buf[4352];
        if (len >= sizeof buf) len = sizeof buf - 1;
        memcpy(buf, line, len);
        buf[len] = 0;
        if (sscanf(buf, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
                   &start, &end, perms, &off, &pathpos) >= 4) {
            if (out->n == cap) {
                agent_map *nv = realloc(out->v, 2 * cap * sizeof *nv);
                if (!nv) { agent_maps_free(out); return -1; }
                out->v = nv; cap *= 2;
            }
            const char *path = pathpos > 0 && pathpos <= (int)len ? buf + pathpos : "";
            while (*path == ' ') path++;
            agent_map *m = &out->v[out->n++];
            m->start = start; m->end = end; m->offset = off;
            m->exec = strchr(perms, 'x') != NULL;
            m->elf = 0;
            m->path = strdup(path);
            if (!m->path) { out->n--; agent_maps_free(out); return -1; }
        }
        line = eol ? eol + 1 : NULL;
    }
    qsort(out->v, out->n, sizeof *out->v, map_cmp);
    return 0;
}

int agent_maps_read(pid_t pid, agent_maps *out)
{
    char path[64], *text;
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    out->v = NULL; out->n = 0;
    if (agent_read_file(path, &text, &len) < 0) return -1;
    int rc = agent_maps_parse(text, out);
    free(text);
    return rc;
}

const agent_map *agent_maps_find(const agent_maps *m, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->v[mid].start <= addr) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return NULL;
    const agent_map *c = &m->v[lo - 1];
    return addr < c->end ? c : NULL;
}

void agent_maps_free(agent_maps *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->v[i].path);
    free(m->v);
    m->v = NULL; m->n = 0;
}
