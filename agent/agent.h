/* agent.h — every module of flamedb-agent, for the agent's tests and
 * benchmarks (issue 4; one header per module since issue 13).
 *
 * The agent is a separate binary (bin/flamedb-agent).  Each module has its
 * own header, named after its file, and each .c file includes only the
 * headers of what it calls (no module includes this one):
 *
 *   cli.c       the command line (agent_opts)
 *   log.c       the log lines on stderr
 *   perf.c      sampling with perf_event: cpu-clock, with --offcpu the
 *               sched:sched_switch tracepoint, with --alloc uprobes
 *   unwind_dwarf.c  libdw over a copied user stack
 *   maps.c      /proc/PID/maps snapshots
 *   readfile.c  reading a small file whole
 *   proc.c      what /proc says of a process (comm, exe, build-id)
 *   elf.c       ELF files: build-id, symbols (and debug files), segments
 *   symtab.c    symbol tables, kallsyms and perf maps, demangled names
 *               (../ingest/demangle.c)
 *   lines.c     file and line from DWARF line tables
 *   symbols.c   the symbolizer: address in a process -> frame text
 *   frametext.c a frame's text: clean name, location
 *   labels.c    label sets, and the bounded labels of a process
 *   fold.c      folded profiles under construction
 *   fsp.c       Atys FSP thread pruning;  fda.c: Atys FDA frequency
 *   url.c       the ingest URL
 *   ../client/push.c  the folded-push client (HTTP POST, keep-alive, gzip; shared with flamedb import)
 *   spool.c     profiles on disk while the server is unreachable
 *   deliver.c   push or spool, with backoff, replaying in order
 *   fleet.c     fleet control: heartbeat, the server's plan (issue 13)
 *   adapter.c   interpreted runtimes handed to py-spy, async-profiler
 *   offcpu.c    off-CPU stretches;  uprobe.c, alloc.c: allocations
 *   metrics.c   the agent's own counters
 *   main.c      setup, the loop, fleet control's glue; with procs.c (the
 *               samples into processes), interval.c (the end of a window:
 *               pruning, pushing, FDA), allocduty.c (--alloc-duty's
 *               window), sharing ctx.h (private: the loop's state)
 *
 * Dependencies go one way (checked with nm: no circle): readfile <- maps,
 * proc, spool, perf, offcpu, uprobe, adapter, labels, symbols; elf <- proc,
 * symbols; symtab <- elf, symbols; maps <- symbols, uprobe.
 *
 * Conventions: prefix agent_; functions answer 0 on success and -1 on
 * failure with a message in an `err` buffer the caller owns (when they take
 * one); the caller owns memory unless the name says otherwise (_new/_free).
 */
#ifndef FLAMEDB_AGENT_H
#define FLAMEDB_AGENT_H

#include "adapter.h"
#include "alloc.h"
#include "cli.h"
#include "deliver.h"
#include "elf.h"
#include "fda.h"
#include "fleet.h"
#include "fold.h"
#include "frametext.h"
#include "fsp.h"
#include "labels.h"
#include "lines.h"
#include "log.h"
#include "maps.h"
#include "metrics.h"
#include "offcpu.h"
#include "perf.h"
#include "proc.h"
#include "../client/push.h"
#include "readfile.h"
#include "spool.h"
#include "symbols.h"
#include "symtab.h"
#include "unwind_dwarf.h"
#include "uprobe.h"
#include "url.h"

#endif
