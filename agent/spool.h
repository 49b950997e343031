/* spool.h — profiles kept on disk while the server is unreachable (spool.c). */
#ifndef FLAMEDB_AGENT_SPOOL_H
#define FLAMEDB_AGENT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * Spool (spool.c): profiles kept on disk while the server is unreachable.
 * One file per profile, named by a sequence number so that replay is in
 * order; bounded by max_bytes, the oldest dropped first and counted.
 * ------------------------------------------------------------------------ */
typedef struct {
    char *dir;
    uint64_t max_bytes;
    uint64_t seq;                   /* next sequence number */
    uint64_t dropped;               /* profiles dropped beyond the bound */
    uint64_t dropped_bytes;
} agent_spool;

int agent_spool_open(agent_spool *s, const char *dir, uint64_t max_bytes,
                     char *err, size_t errlen);
void agent_spool_close(agent_spool *s);
/* Stores one profile (its URL and body); drops the oldest files while the
 * spool would exceed max_bytes. */
int agent_spool_put(agent_spool *s, const char *url, const void *body,
                    size_t len, char *err, size_t errlen);
size_t agent_spool_count(const agent_spool *s);
/* Replays the spooled profiles oldest first through send(); stops at the
 * first failure (send answers -1), keeping that one and the rest.  Answers
 * the number sent. */
size_t agent_spool_replay(agent_spool *s,
                          int (*send)(const char *url, const void *body,
                                      size_t len, void *arg),
                          void *arg);

#endif
