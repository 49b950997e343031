/* log.h — the agent's log lines on stderr (log.c). */
#ifndef FLAMEDB_AGENT_LOG_H
#define FLAMEDB_AGENT_LOG_H

/* Whether verbose lines are written (--verbose). */
void agent_log_verbose(int on);
/* One line "flamedb-agent TIME: message" on stderr; verbose lines only
 * with agent_log_verbose(1). */
void agent_log(int verbose, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
