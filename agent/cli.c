/* cli.c — the command line of flamedb-agent.
 *
 * getopt_long over long options only; every value is checked here, with
 * a message that names the option and what it expects, before anything
 * starts (exit status 2).  Defaults live in agent_cli_parse; combinations
 * that contradict each other (--pid and --all, --spool with --output,
 * --min-frequency without --fda...) are refused rather than guessed at.
 * usage() is the reference of every option; docs/agent.md explains them.
 */
#include "cli.h"
#include "alloc.h"
#include "uprobe.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
"usage: flamedb-agent (--pid PID[,PID...] | --all) [options]\n"
"\n"
"Samples the call stacks of running programs with perf_event and pushes one\n"
"folded CPU profile per process and interval to a flamedb server.\n"
"\n"
"What to profile:\n"
"  --pid PID[,PID...]   these processes, their existing and future threads\n"
"                       and the children they fork\n"
"  --all                every process on this node (one event per CPU)\n"
"Where profiles go:\n"
"  --server URL         flamedb server (default http://127.0.0.1:4040);\n"
"                       profiles are POSTed to URL/api/v1/ingest, gzip'd\n"
"  --token-file FILE    a server with --auth: the token (FILE's first line),\n"
"                       sent as Authorization: Bearer (--token TOKEN gives it\n"
"                       on the command line, where ps shows it to all)\n"
"  --tenant NAME        the tenant, for a token of several (X-Scope-OrgID)\n"
"  --ca FILE            verify an https:// server's certificate with this PEM\n"
"                       certificate or authority (default: the system's)\n"
"  --output FILE        write the folded profiles with their labels to FILE\n"
"                       (\"-\" = stdout) instead of pushing them\n"
"  --spool DIR          while the server is unreachable, keep profiles in DIR\n"
"                       and replay them in order once it answers (default: a\n"
"                       temporary directory, removed at exit)\n"
"  --spool-max MB       bound of the spool (default 64); beyond it the oldest\n"
"                       profiles are dropped, counted and logged\n"
"  --metrics FILE       write the agent's own counters (samples read, dropped\n"
"                       by reason, profiles pushed, spooled...) to FILE in\n"
"                       Prometheus' text format at every interval\n"
"Labels:\n"
"  --service NAME       the service label (default: the executable's name, else\n"
"                       the command name; \"unknown\" when the process is gone)\n"
"  --labels k=v,...     extra labels (instance, node, build, container_id or\n"
"                       pod_uid here override the defaults: HOSTNAME/PID for\n"
"                       the --pid processes and HOSTNAME for the others, the\n"
"                       hostname, the first 12 hex digits of the executable's\n"
"                       GNU build-id, the container and the Kubernetes pod of\n"
"                       /proc/PID/cgroup); processes with the same labels make\n"
"                       one profile\n"
"Sampling:\n"
"  --frequency HZ       sampling frequency (default 99)\n"
"  --interval SECONDS   length of one profile window (default 10)\n"
"  --duration SECONDS   stop after this long (default: until SIGINT/SIGTERM,\n"
"                       which push what is left and exit 0)\n"
"  --unwind fp|dwarf|auto  user-space unwinding: the kernel's frame-pointer\n"
"                       callchain; DWARF CFI with libdw over a copy of the\n"
"                       user stack; or auto (default): frame pointers, and\n"
"                       DWARF for each process whose first 20 samples have\n"
"                       mostly 1-2 user frames (code without frame pointers)\n"
"  --no-kernel          do not sample in kernel mode (exclude_kernel), no\n"
"                       kernel frames\n"
"  --no-lines           frames are names only: no source file and line (from\n"
"                       DWARF line tables), no binary and build-id\n"
"  --no-demangle        keep C++ and Rust names as the symbol tables have them\n"
"                       (_ZN...), not demangled\n"
"Other profiles (of the same processes, pushed beside the CPU profile):\n"
"  --offcpu             type=\"offcpu\" (unit nanoseconds): where threads block\n"
"                       or wait for a CPU (their stack when they leave it, from\n"
"                       the sched:sched_switch tracepoint) and for how long\n"
"  --alloc[=N]          type=\"alloc_objects\" (count) and \"alloc_space\"\n"
"                       (bytes): every Nth call of malloc, calloc and realloc\n"
"                       (uprobes), weighted N and N x size: a sampled\n"
"                       estimate (default N = %d, a prime; each probed call\n"
"                       costs a breakpoint trap, see docs/agent.md)\n"
"  --alloc-duty F       install the allocation probes for a fraction F of\n"
"                       each interval (a random window), scaling the\n"
"                       estimates by 1/F: the program pays the traps only\n"
"                       then (default %g)\n"
"  --alloc-probes M     how the probes are made: tracefs (uprobe_events: a\n"
"                       window's probes close at once), pmu (the uprobe PMU:\n"
"                       ~90 ms per event to close), auto (default: tracefs\n"
"                       where the agent may write it, else pmu)\n"
"Thread pruning (Atys FSP):\n"
"  --fsp P              per interval and process keep the most active threads\n"
"                       that make at least P of the samples (default 0.99;\n"
"                       1 keeps every thread)\n"
"Adaptive frequency (Atys FDA):\n"
"  --fda                adjust the frequency each interval from the JS\n"
"                       divergence D of the top-10 functions' distribution\n"
"                       with the previous interval's\n"
"  --fda-theta T        threshold (default 0.05): D > T raises the frequency\n"
"                       to f/lambda; D <= T for 5 intervals lowers it to f*lambda\n"
"  --fda-lambda L       factor, 0 < L < 1 (default 0.8)\n"
"  --min-frequency HZ   lower bound for --fda (default frequency/4)\n"
"  --max-frequency HZ   upper bound for --fda (default frequency*4)\n"
"Fleet control (the server's plan, docs/agent.md):\n"
"  --agent-id ID        this agent's name in the server's fleet (default: the\n"
"                       node label, the hostname)\n"
"  --simulate           no perf_event: made-up samples at the frequency, under\n"
"                       the agent's own labels, while the plan says sample (a\n"
"                       fleet of agents on one machine, for tests)\n"
"Other:\n"
"  --verbose            log every push, unwinding decision, pruning\n"
"  --help               this text\n"
"\n"
"Needs perf_event: root, CAP_PERFMON, or kernel.perf_event_paranoid <= 1 for\n"
"your own processes (-1 for --all).  Python processes (with py-spy on PATH)\n"
"and JVMs (with async-profiler's asprof on PATH) are profiled by those tools\n"
"(label spy).  See docs/agent.md.\n", AGENT_ALLOC_PERIOD, AGENT_ALLOC_DUTY);
}

static int parse_double(const char *flag, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "flamedb-agent: %s '%s': expected a number in [%g, %g]\n", flag, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_int(const char *flag, const char *s, int lo, int hi, int *out)
{
    double v;
    if (parse_double(flag, s, lo, hi, &v) < 0) return -1;
    if (v != (int)v) { fprintf(stderr, "flamedb-agent: %s '%s': expected an integer\n", flag, s); return -1; }
    *out = (int)v;
    return 0;
}

static int parse_pids(agent_opts *o, const char *s)
{
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        long v = strtol(t, &end, 10);
        if (end == t || *end || v <= 0 || v > 1 << 22) {
            fprintf(stderr, "flamedb-agent: --pid '%s': not a process id\n", t);
            free(copy);
            return -1;
        }
        o->pids = realloc(o->pids, (o->npids + 1) * sizeof *o->pids);
        o->pids[o->npids++] = (pid_t)v;
    }
    free(copy);
    if (o->npids == 0) { fprintf(stderr, "flamedb-agent: --pid: no process id given\n"); return -1; }
    return 0;
}

int agent_cli_parse(agent_opts *o, int argc, char **argv)
{
    *o = (agent_opts){ .server = "http://127.0.0.1:4040", .freq = 99, .interval = 10,
                       .unwind = AGENT_UNWIND_AUTO, .fsp = 0.99, .fda_theta = 0.05,
                       .fda_lambda = 0.8, .spool_mb = 64 };
    enum { O_SERVER = 256, O_PID, O_ALL, O_SERVICE, O_LABELS, O_FREQ, O_INTERVAL, O_DURATION,
           O_OUTPUT, O_UNWIND, O_NOKERNEL, O_NOLINES, O_NODEMANGLE, O_FSP, O_FDA, O_THETA, O_LAMBDA, O_MINF, O_MAXF,
           O_SPOOL, O_SPOOLMAX, O_METRICS, O_VERBOSE, O_HELP, O_OFFCPU, O_ALLOC, O_ALLOCDUTY,
           O_TOKEN, O_TOKENFILE, O_TENANT, O_CA, O_AGENTID, O_SIMULATE, O_ALLOCPROBES };
    static const struct option longopts[] = {
        { "server", 1, 0, O_SERVER }, { "pid", 1, 0, O_PID }, { "all", 0, 0, O_ALL },
        { "service", 1, 0, O_SERVICE }, { "labels", 1, 0, O_LABELS },
        { "frequency", 1, 0, O_FREQ }, { "interval", 1, 0, O_INTERVAL },
        { "duration", 1, 0, O_DURATION }, { "output", 1, 0, O_OUTPUT },
        { "unwind", 1, 0, O_UNWIND }, { "no-kernel", 0, 0, O_NOKERNEL },
        { "no-lines", 0, 0, O_NOLINES }, { "no-demangle", 0, 0, O_NODEMANGLE },
        { "fsp", 1, 0, O_FSP }, { "fda", 0, 0, O_FDA }, { "fda-theta", 1, 0, O_THETA },
        { "fda-lambda", 1, 0, O_LAMBDA }, { "min-frequency", 1, 0, O_MINF },
        { "max-frequency", 1, 0, O_MAXF }, { "spool", 1, 0, O_SPOOL },
        { "spool-max", 1, 0, O_SPOOLMAX }, { "metrics", 1, 0, O_METRICS },
        { "verbose", 0, 0, O_VERBOSE },
        { "offcpu", 0, 0, O_OFFCPU }, { "alloc", 2, 0, O_ALLOC }, { "alloc-duty", 1, 0, O_ALLOCDUTY },
        { "alloc-probes", 1, 0, O_ALLOCPROBES },
        { "token", 1, 0, O_TOKEN }, { "token-file", 1, 0, O_TOKENFILE },
        { "tenant", 1, 0, O_TENANT }, { "ca", 1, 0, O_CA },
        { "agent-id", 1, 0, O_AGENTID }, { "simulate", 0, 0, O_SIMULATE },
        { "help", 0, 0, O_HELP }, { 0, 0, 0, 0 } };
    char err[256];
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_SERVER: o->server = optarg; break;
        case O_TOKEN: o->token = optarg; break;
        case O_TOKENFILE: o->token_file = optarg; break;
        case O_TENANT: o->tenant = optarg; break;
        case O_CA: o->ca = optarg; break;
        case O_AGENTID:
            if (!*optarg || strlen(optarg) > 128) { fprintf(stderr, "flamedb-agent: --agent-id: 1 to 128 characters\n"); return -1; }
            o->agent_id = optarg; break;
        case O_SIMULATE: o->simulate = 1; break;
        case O_PID: if (parse_pids(o, optarg) < 0) return -1; break;
        case O_ALL: o->all = 1; break;
        case O_SERVICE:
            if (!*optarg) { fprintf(stderr, "flamedb-agent: --service: empty name\n"); return -1; }
            o->service = optarg; break;
        case O_LABELS:
            if (agent_labels_parse(&o->labels, optarg, err, sizeof err) < 0) {
                fprintf(stderr, "flamedb-agent: %s\n", err);
                return -1;
            }
            if (agent_labels_get(&o->labels, "service")) {
                fprintf(stderr, "flamedb-agent: --labels: use --service for the service label\n");
                return -1;
            }
            break;
        case O_FREQ: if (parse_double("--frequency", optarg, 1, 100000, &o->freq) < 0) return -1; break;
        case O_INTERVAL: if (parse_int("--interval", optarg, 1, 86400, &o->interval) < 0) return -1; break;
        case O_DURATION: if (parse_int("--duration", optarg, 1, 100000000, &o->duration) < 0) return -1; break;
        case O_OUTPUT: o->output = optarg; break;
        case O_UNWIND:
            if (strcmp(optarg, "fp") == 0) o->unwind = AGENT_UNWIND_FP;
            else if (strcmp(optarg, "dwarf") == 0) o->unwind = AGENT_UNWIND_DWARF;
            else if (strcmp(optarg, "auto") == 0) o->unwind = AGENT_UNWIND_AUTO;
            else { fprintf(stderr, "flamedb-agent: --unwind '%s': expected fp, dwarf or auto\n", optarg); return -1; }
            break;
        case O_NOKERNEL: o->no_kernel = 1; break;
        case O_NOLINES: o->no_lines = 1; break;
        case O_NODEMANGLE: o->no_demangle = 1; break;
        case O_FSP:
            if (parse_double("--fsp", optarg, 0, 1, &o->fsp) < 0) return -1;
            if (o->fsp <= 0) { fprintf(stderr, "flamedb-agent: --fsp must be > 0\n"); return -1; }
            break;
        case O_FDA: o->fda = 1; break;
        case O_THETA: if (parse_double("--fda-theta", optarg, 0, 1, &o->fda_theta) < 0) return -1; break;
        case O_LAMBDA:
            if (parse_double("--fda-lambda", optarg, 0, 1, &o->fda_lambda) < 0) return -1;
            if (o->fda_lambda <= 0 || o->fda_lambda >= 1) { fprintf(stderr, "flamedb-agent: --fda-lambda must be in (0, 1)\n"); return -1; }
            break;
        case O_MINF: if (parse_double("--min-frequency", optarg, 1, 100000, &o->min_freq) < 0) return -1; break;
        case O_MAXF: if (parse_double("--max-frequency", optarg, 1, 100000, &o->max_freq) < 0) return -1; break;
        case O_SPOOL: o->spool = optarg; break;
        case O_SPOOLMAX: if (parse_double("--spool-max", optarg, 0.001, 1e6, &o->spool_mb) < 0) return -1; break;
        case O_METRICS:
            if (!*optarg) { fprintf(stderr, "flamedb-agent: --metrics: empty file name\n"); return -1; }
            o->metrics = optarg; break;
        case O_VERBOSE: o->verbose = 1; break;
        case O_OFFCPU: o->offcpu = 1; break;
        case O_ALLOC: {
            int n = AGENT_ALLOC_PERIOD;
            if (optarg && parse_int("--alloc", optarg, 1, 1000000000, &n) < 0) return -1;
            o->alloc_period = (uint64_t)n;
            break;
        }
        case O_ALLOCDUTY:
            if (parse_double("--alloc-duty", optarg, 0, 1, &o->alloc_duty) < 0) return -1;
            if (o->alloc_duty <= 0) { fprintf(stderr, "flamedb-agent: --alloc-duty must be > 0\n"); return -1; }
            break;
        case O_ALLOCPROBES:
            if (strcmp(optarg, "auto") == 0) o->alloc_probes = AGENT_UPROBES_AUTO;
            else if (strcmp(optarg, "tracefs") == 0) o->alloc_probes = AGENT_UPROBES_TRACEFS;
            else if (strcmp(optarg, "pmu") == 0) o->alloc_probes = AGENT_UPROBES_PMU;
            else { fprintf(stderr, "flamedb-agent: --alloc-probes '%s': expected auto, tracefs or pmu\n", optarg); return -1; }
            o->alloc_probes_set = 1;
            break;
        case O_HELP: usage(stdout); exit(0);
        default:
            if (optopt >= O_SERVER || optopt == 0)
                fprintf(stderr, "flamedb-agent: %s: %s\n", argv[optind - 1],
                        optopt ? "needs a value" : "unknown option");
            else fprintf(stderr, "flamedb-agent: %s: unknown option\n", argv[optind - 1]);
            fprintf(stderr, "try flamedb-agent --help\n");
            return -1;
        }
    }
    if (optind < argc) { fprintf(stderr, "flamedb-agent: unexpected argument '%s'\n", argv[optind]); return -1; }
    if (o->simulate && (o->all || o->npids)) { fprintf(stderr, "flamedb-agent: --simulate samples nothing real: no --pid or --all\n"); return -1; }
    if (o->simulate && (o->offcpu || o->alloc_period)) { fprintf(stderr, "flamedb-agent: --simulate makes CPU samples only (no --offcpu, --alloc)\n"); return -1; }
    if (!o->simulate && !o->all && o->npids == 0) { fprintf(stderr, "flamedb-agent: say what to profile: --pid PID[,PID...] or --all\n"); return -1; }
    if (o->all && o->npids) { fprintf(stderr, "flamedb-agent: --pid and --all exclude each other\n"); return -1; }
    if (!o->fda && (o->min_freq || o->max_freq)) {
        fprintf(stderr, "flamedb-agent: --min-frequency/--max-frequency only apply with --fda\n");
        return -1;
    }
    if (!o->min_freq) o->min_freq = o->freq / 4 < 1 ? 1 : o->freq / 4;
    if (!o->max_freq) o->max_freq = o->freq * 4;
    if (o->min_freq > o->max_freq || o->freq < o->min_freq || o->freq > o->max_freq) {
        fprintf(stderr, "flamedb-agent: need --min-frequency <= --frequency <= --max-frequency\n");
        return -1;
    }
    if (o->output && o->spool) { fprintf(stderr, "flamedb-agent: --spool applies to pushing, not to --output\n"); return -1; }
    if (o->alloc_duty && !o->alloc_period) { fprintf(stderr, "flamedb-agent: --alloc-duty only applies with --alloc\n"); return -1; }
    if (o->alloc_probes_set && !o->alloc_period) { fprintf(stderr, "flamedb-agent: --alloc-probes only applies with --alloc\n"); return -1; }
    if (!o->alloc_duty) o->alloc_duty = AGENT_ALLOC_DUTY;
    return 0;
}

void agent_cli_free(agent_opts *o)
{
    agent_labels_free(&o->labels);
    free(o->pids);
    o->pids = NULL;
    o->npids = 0;
}
