/* deliver.h — push a profile, or spool it and replay it later (deliver.c). */
#ifndef FLAMEDB_AGENT_DELIVER_H
#define FLAMEDB_AGENT_DELIVER_H

#include <stddef.h>
#include <stdint.h>
#include "metrics.h"
#include "../client/push.h"

typedef struct {
    const char *token, *token_file;  /* --token, --token-file (exclusive) */
    const char *tenant, *ca;         /* --tenant, --ca */
    const char *spool;               /* --spool DIR, NULL: a temporary one */
    double spool_mb;                 /* --spool-max */
} agent_deliver_opts;

typedef struct agent_deliver agent_deliver;

/* Opens the connection (auth, CA) and the spool; profiles already waiting
 * in it are logged (replayed first).  Counters go to m (profiles_pushed,
 * samples_delivered, profiles_rejected, profiles_spooled).  NULL with err. */
agent_deliver *agent_deliver_open(const agent_deliver_opts *o, agent_metrics *m,
                                  char *err, size_t errlen);
/* Logs what is left in the spool; removes a temporary spool. */
void agent_deliver_close(agent_deliver *d);
/* Pushes one profile (folded text at url), or spools it: behind the
 * profiles already waiting (order), or when the push fails. */
void agent_deliver_profile(agent_deliver *d, const char *url, const char *body, size_t len);
/* Replays the spool when its backoff step has come (force: now); answers 1
 * when the spool is empty. */
int agent_deliver_drain(agent_deliver *d, int force);
size_t agent_deliver_waiting(const agent_deliver *d);
/* Profiles lost: beyond --spool-max, or the spool could not write them. */
uint64_t agent_deliver_dropped(const agent_deliver *d);
/* Push attempts and failed ones (unreachable, 5xx, 429) since start, and
 * the last failure's message ("" none): what fleet control reports. */
uint64_t agent_deliver_attempts(const agent_deliver *d);
uint64_t agent_deliver_failures(const agent_deliver *d);
const char *agent_deliver_last_error(const agent_deliver *d);
/* When the last push was accepted (unix s), 0 never. */
int64_t agent_deliver_last_push(const agent_deliver *d);
/* The connection (its auth), for other requests to the same server. */
client_push *agent_deliver_push(agent_deliver *d);

#endif
