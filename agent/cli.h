/* cli.h — the command line of flamedb-agent (cli.c). */
#ifndef FLAMEDB_AGENT_CLI_H
#define FLAMEDB_AGENT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "labels.h"

/* The agent's version, reported in its heartbeats (fleet.c). */
#define AGENT_VERSION "0.13"

/* What the command line asked for; strings point into argv. */
typedef enum { AGENT_UNWIND_FP, AGENT_UNWIND_DWARF, AGENT_UNWIND_AUTO } agent_unwind_mode;

typedef struct {
    const char *server;
    pid_t *pids; size_t npids;
    int all;
    const char *service;
    agent_labels labels;
    double freq, min_freq, max_freq;
    int interval, duration;
    const char *output;
    agent_unwind_mode unwind;
    int no_kernel;
    int no_lines;
    int no_demangle;
    double fsp;
    int fda;
    double fda_theta, fda_lambda;
    const char *spool;
    double spool_mb;
    const char *metrics;
    int verbose;
    int offcpu;                     /* --offcpu */
    uint64_t alloc_period;          /* --alloc[=N]: every Nth call; 0: off */
    double alloc_duty;              /* --alloc-duty F: probes in F of each interval */
    int alloc_probes, alloc_probes_set;  /* --alloc-probes: agent_uprobes_mode */
    const char *token, *token_file, *tenant, *ca;  /* a server with --auth, https */
    const char *agent_id;           /* --agent-id: the name in the fleet (NULL: node) */
    int simulate;                   /* --simulate: made-up samples, no perf_event */
} agent_opts;

/* Parses argv into o, defaults first (see usage in cli.c for each option).
 * 0 when the agent may start; -1 after a message on stderr naming the
 * option (exit status 2).  --help prints the usage and exits 0. */
int agent_cli_parse(agent_opts *o, int argc, char **argv);
/* Frees what agent_cli_parse allocated (the pid list, the labels). */
void agent_cli_free(agent_opts *o);

#endif
