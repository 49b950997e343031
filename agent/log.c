/* log.c — the agent's log lines.
 *
 * One line per event on stderr, "flamedb-agent 2026-01-01T00:00:00Z: ...",
 * UTC, so that a node's journal shows what the agent did and when.  Lines
 * marked verbose (every push, unwinding decision, pruning) are written only
 * with --verbose.  One thread: no locking.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static int g_verbose;

void agent_log_verbose(int on) { g_verbose = on; }

void agent_log(int verbose, const char *fmt, ...)
{
    if (verbose && !g_verbose) return;
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "flamedb-agent %s: ", ts);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
