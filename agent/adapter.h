/* adapter.h — language adapters: py-spy, async-profiler (adapter.c). */
#ifndef FLAMEDB_AGENT_ADAPTER_H
#define FLAMEDB_AGENT_ADAPTER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "fold.h"

/* ------------------------------------------------------------------------
 * Language adapters (adapter.c).
 * ------------------------------------------------------------------------ */
typedef enum { AGENT_ADAPTER_NONE = 0, AGENT_ADAPTER_PYSPY, AGENT_ADAPTER_ASPROF } agent_adapter_kind;

/* Which adapter applies to pid: exe basename python* with `py-spy` on PATH;
 * exe basename java or libjvm.so in maps with `asprof` on PATH. */
agent_adapter_kind agent_adapter_detect(pid_t pid);
const char *agent_adapter_spy(agent_adapter_kind k);  /* "py-spy", "async-profiler" */
/* Finds an executable on PATH; 1 if found (full path into buf). */
int agent_which(const char *name, char *buf, size_t cap);

typedef struct agent_adapter_run agent_adapter_run;
/* Starts the tool for `seconds` at `hz` on pid, collecting collapsed output
 * into a temp file.  NULL on failure (err). */
agent_adapter_run *agent_adapter_start(agent_adapter_kind k, pid_t pid,
                                       int seconds, int hz,
                                       char *err, size_t errlen);
/* Asks the tool to stop early (SIGINT: py-spy and asprof write what they
 * have); agent_adapter_finish still collects it. */
void agent_adapter_interrupt(agent_adapter_run *r);
/* Waits for the tool and adds its collapsed stacks into f; frees r. */
int agent_adapter_finish(agent_adapter_run *r, agent_fold *f,
                         char *err, size_t errlen);
/* Parses collapsed text ("a;b;c N" lines) into f; answers lines used. */
size_t agent_collapsed_parse(const char *text, agent_fold *f);

#endif
