/* main.c — flamedb-agent: the command line and the sampling loop.
 *
 * One thread.  The loop drains the perf rings every 100 ms; each sample is
 * unwound (the kernel's frame-pointer callchain, or libdw over the copied
 * user stack for processes that need DWARF), symbolized at once, while the
 * process and its mappings are known, and counted per process and thread.
 * At the end of each interval: FSP drops the idle threads, FDA adjusts the
 * frequency, one folded profile per label set is pushed (or written to
 * --output; the processes of one program share their labels: labels.c),
 * failed pushes go to the spool and are replayed in order.  SIGINT/SIGTERM
 * end the loop after a last flush: the partial window is pushed, or spooled
 * when the server does not take it.
 *
 * Nothing a node does may stop the agent (issue 15): a sample that cannot
 * be used is dropped and counted by reason (agent_metrics, metrics.c), a
 * DWARF unwinding that fails keeps the frame-pointer chain and is counted,
 * and every interval logs what it read, kept, dropped and delivered (and
 * rewrites --metrics FILE), so that an agent that stopped reporting shows.
 * A process that execs is another program under the same pid: its state is
 * retired (flushed under the old labels) and the next sample starts anew.
 *
 * --offcpu and --alloc (issue 13) read more kinds of sample from the same
 * rings: switch-outs and switch-ins go to offcpu.c, which pairs them in
 * time order and emits stretches off the CPU into the process's `offcpu`
 * fold (cut at each push); allocator entries are weighted (alloc.c) into
 * its `alloc_objects` and `alloc_space` folds.  These folds are pushed
 * whole (no FSP) with their type and unit.  --alloc-duty opens the
 * allocation probes in one window per interval and scales those folds.
 */
#include "agent.h"
#include "../storage/frame.h"

#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 256

typedef enum { UNWIND_FP, UNWIND_DWARF, UNWIND_AUTO } unwind_mode;

typedef struct {
    const char *server;
    pid_t *pids; size_t npids;
    int all;
    const char *service;
    agent_labels labels;
    double freq, min_freq, max_freq;
    int interval, duration;
    const char *output;
    unwind_mode unwind;
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
    const char *token, *token_file, *tenant, *ca;  /* a server with --auth, https */
} agent_opts;

typedef struct {
    pid_t tid;
    uint64_t samples;
    agent_fold *fold;
} thread_state;

typedef struct {
    pid_t pid;
    char comm[64];
    agent_labels labels;            /* service, instance, node, build, container_id,
                                       pod_uid, user (labels.c) */
    int unnamed;                    /* gone before anything named it: service "unknown" */
    agent_adapter_kind adapter;
    agent_adapter_run *run;
    int probe, shallow, decided, use_dwarf, dwarf_failed;
    int retired;                    /* exec'd: flushed at the interval's end, then freed */
    agent_dwarf *dwarf;
    thread_state *threads; size_t nthreads, capthreads;
    uint64_t samples;
    int idle_intervals;
    agent_fold *typed[3];           /* this window's offcpu, alloc_objects,
                                       alloc_space (NULL: none yet; offcpu.c,
                                       alloc.c), never pruned by FSP */
} proc_state;

typedef struct {
    agent_opts o;
    agent_syms *syms;
    agent_perf *perf;
    agent_push *push;
    agent_spool spool;
    int have_spool, temp_spool;
    char spool_dir[256];
    agent_fda fda;
    double freq;
    proc_state *procs; size_t nprocs, capprocs;
    char hostname[256];
    pid_t self;
    FILE *out;
    char *stackbuf;
    size_t stackcap;
    agent_metrics m, prev;          /* counters now, and at the last interval */
    uint64_t spool_failed;          /* profiles the spool could not write */
    int metrics_failing;            /* --metrics could not be written (logged once) */
    int server_down;                /* the last push failed (logged once) */
    uint64_t agg_ns;   /* time merging threads' stacks into process profiles (what FSP saves) */
    uint64_t lost_reported, dropped_reported;
    time_t retry_at;
    int retry_delay;
    struct { pid_t pid; char comm[32]; } comms[256];   /* from PERF_RECORD_COMM, a ring */
    size_t ncomms;
    agent_offcpu *offcpu;           /* --offcpu: stretches off the CPU */
    agent_uprobe_target *alloc_targets;   /* --alloc: the probed entry points */
    size_t nalloc;
    double alloc_on_at, alloc_off_at;     /* --alloc-duty: this interval's window */
    double alloc_since, alloc_on_s;       /* when it went on; seconds on in this interval */
    double alloc_scale;                   /* the interval's length / alloc_on_s */
    int alloc_done;                       /* this interval's window is over */
    int alloc_ignore;                     /* drop allocation samples (startup) */
    double run_end;                       /* --duration's end (monotonic), 0: none */
    unsigned alloc_rng;
} agent_ctx;

static volatile sig_atomic_t g_stop;   /* set by SIGINT/SIGTERM only */

static void on_signal(int sig) { (void)sig; g_stop = 1; }

static int g_verbose;

static void logmsg(int verbose, const char *fmt, ...)
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

/* ---- command line ---- */

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

static int parse_args(agent_opts *o, int argc, char **argv)
{
    enum { O_SERVER = 256, O_PID, O_ALL, O_SERVICE, O_LABELS, O_FREQ, O_INTERVAL, O_DURATION,
           O_OUTPUT, O_UNWIND, O_NOKERNEL, O_NOLINES, O_NODEMANGLE, O_FSP, O_FDA, O_THETA, O_LAMBDA, O_MINF, O_MAXF,
           O_SPOOL, O_SPOOLMAX, O_METRICS, O_VERBOSE, O_HELP, O_OFFCPU, O_ALLOC, O_ALLOCDUTY,
           O_TOKEN, O_TOKENFILE, O_TENANT, O_CA };
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
        { "token", 1, 0, O_TOKEN }, { "token-file", 1, 0, O_TOKENFILE },
        { "tenant", 1, 0, O_TENANT }, { "ca", 1, 0, O_CA },
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
            if (strcmp(optarg, "fp") == 0) o->unwind = UNWIND_FP;
            else if (strcmp(optarg, "dwarf") == 0) o->unwind = UNWIND_DWARF;
            else if (strcmp(optarg, "auto") == 0) o->unwind = UNWIND_AUTO;
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
    if (!o->all && o->npids == 0) { fprintf(stderr, "flamedb-agent: say what to profile: --pid PID[,PID...] or --all\n"); return -1; }
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
    if (!o->alloc_duty) o->alloc_duty = AGENT_ALLOC_DUTY;
    return 0;
}

/* ---- processes ---- */

/* Whether pid was named with --pid (its instance label has the pid). */
static int pid_given(const agent_ctx *c, pid_t pid)
{
    for (size_t i = 0; i < c->o.npids; i++)
        if (c->o.pids[i] == pid) return 1;
    return 0;
}

/* The state of pid, made on its first sample, with its labels (labels.c:
 * bounded, never a pid but for --pid's own processes).  A process that
 * exited before /proc was read is named by its PERF_RECORD_COMM when one
 * was seen; otherwise it is "unknown" (p->unnamed), one series per node.
 * NULL when out of memory. */
static proc_state *proc_get(agent_ctx *c, pid_t pid)
{
    for (size_t i = 0; i < c->nprocs; i++)
        if (c->procs[i].pid == pid && !c->procs[i].retired) return &c->procs[i];
    agent_proc_ident *id = malloc(sizeof *id);
    if (!id) return NULL;
    int named = agent_proc_identity(pid, id) == 0;
    if (!named)
        for (size_t i = 0; i < 256 && i < c->ncomms; i++)
            if (c->comms[i].pid == pid) { snprintf(id->comm, sizeof id->comm, "%s", c->comms[i].comm); named = 1; }
    if (c->nprocs == c->capprocs) {
        size_t cap = c->capprocs ? 2 * c->capprocs : 32;
        proc_state *v = realloc(c->procs, cap * sizeof *v);
        if (!v) { free(id); return NULL; }
        c->procs = v; c->capprocs = cap;
    }
    proc_state *p = &c->procs[c->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->unnamed = !named;
    agent_label_opts lo = { c->o.service, c->hostname, pid_given(c, pid), &c->o.labels };
    if (agent_process_labels(id, &lo, &p->labels) < 0) {
        agent_labels_free(&p->labels);
        c->nprocs--;
        free(id);
        return NULL;
    }
    snprintf(p->comm, sizeof p->comm, "%s", id->comm[0] ? id->comm : agent_labels_get(&p->labels, "service"));
    free(id);
    p->adapter = named ? agent_adapter_detect(pid) : AGENT_ADAPTER_NONE;
    if (p->adapter) {
        agent_labels_set(&p->labels, "spy", agent_adapter_spy(p->adapter));
        logmsg(0, "pid %d (%s): profiled with %s", (int)pid, p->comm, agent_adapter_spy(p->adapter));
    }
    if (c->o.unwind == UNWIND_DWARF) p->decided = p->use_dwarf = 1;
    if (c->o.unwind == UNWIND_FP) p->decided = 1;
    return p;
}

/* pid exec'd: another program now, with its own name, build, mappings and
 * frame pointers or not.  The old state is retired: what it sampled is
 * pushed under its labels at the interval's end, then it is freed; the
 * pid's next sample makes a new state. */
static void proc_exec(agent_ctx *c, proc_state *p)
{
    p->retired = 1;
    if (p->dwarf) agent_dwarf_close(p->dwarf);
    p->dwarf = NULL;
    agent_syms_forget(c->syms, p->pid);          /* its maps snapshot is stale */
}

static void proc_clear(proc_state *p)
{
    for (size_t i = 0; i < p->nthreads; i++) agent_fold_free(p->threads[i].fold);
    p->nthreads = 0;
    p->samples = 0;
    for (int k = 0; k < 3; k++) { agent_fold_free(p->typed[k]); p->typed[k] = NULL; }
}

static void proc_free(proc_state *p)
{
    proc_clear(p);
    free(p->threads);
    agent_labels_free(&p->labels);
    if (p->dwarf) agent_dwarf_close(p->dwarf);
}

static thread_state *proc_thread(proc_state *p, pid_t tid)
{
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid) return &p->threads[i];
    if (p->nthreads == p->capthreads) {
        size_t cap = p->capthreads ? 2 * p->capthreads : 8;
        thread_state *v = realloc(p->threads, cap * sizeof *v);
        if (!v) return NULL;
        p->threads = v; p->capthreads = cap;
    }
    thread_state *t = &p->threads[p->nthreads];
    t->fold = agent_fold_new();
    if (!t->fold) return NULL;
    t->tid = tid;
    t->samples = 0;
    p->nthreads++;
    return t;
}

/* ---- samples ---- */

static int proc_alive(pid_t pid);

static void stack_append(agent_ctx *c, size_t *len, const char *frame)
{
    size_t fl = strlen(frame);
    if (*len + fl + 2 > c->stackcap) {
        size_t cap = 2 * c->stackcap + fl;
        char *nb = realloc(c->stackbuf, cap);
        if (!nb) return;
        c->stackbuf = nb; c->stackcap = cap;
    }
    if (*len) c->stackbuf[(*len)++] = ';';
    memcpy(c->stackbuf + *len, frame, fl + 1);
    *len += fl;
}

/* auto: the first 20 user-space samples decide; mostly 1-2 frames deep
 * means frame pointers are missing. */
static void auto_decide(agent_ctx *c, proc_state *p, int user_depth)
{
    if (user_depth == 0) return;
    p->probe++;
    if (user_depth <= 2) p->shallow++;
    if (p->probe < 20) return;
    p->decided = 1;
    p->use_dwarf = p->shallow * 10 >= p->probe * 6;
    logmsg(1, "pid %d (%s): %d of %d samples had at most 2 user frames: %s unwinding",
           (int)p->pid, p->comm, p->shallow, p->probe, p->use_dwarf ? "DWARF" : "frame-pointer");
    if (!p->use_dwarf && p->dwarf) {       /* opened while probing: its files go */
        agent_dwarf_close(p->dwarf);
        p->dwarf = NULL;
    }
    (void)c;
}

/* The stack of a sample into c->stackbuf (root first, ';'-joined):
 * unwound (frame pointers, or DWARF for the processes that need it) and
 * symbolized now.  Answers its length; *caller receives the offset of the
 * frame below the leaf (-1: none).  Only cpu-clock samples decide auto
 * unwinding. */
static size_t sample_stack(agent_ctx *c, proc_state *p, const agent_sample *s, long *caller)
{
    uint64_t kips[MAX_FRAMES], uips[MAX_FRAMES], dips[MAX_FRAMES];
    int nk = 0, nu = 0;
    uint64_t ctx = 0;
    for (uint64_t i = 0; i < s->nr; i++) {
        uint64_t ip = s->chain[i];
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) { ctx = ip; continue; }
        if (ctx == (uint64_t)PERF_CONTEXT_KERNEL && nk < MAX_FRAMES) kips[nk++] = ip;
        else if (ctx == (uint64_t)PERF_CONTEXT_USER && nu < MAX_FRAMES) uips[nu++] = ip;
    }
    int probing = !p->decided;
    if (probing && s->kind == AGENT_SAMPLE_CPU) auto_decide(c, p, nu);
    const uint64_t *user = uips;
    /* while auto still probes, a shallow sample is unwound with DWARF too,
     * so the samples that decide are not left with truncated stacks; an
     * off-CPU sample always (agent_offcpu_splice) */
    int dwarf = p->use_dwarf || (probing && nu <= 2) || s->kind == AGENT_SAMPLE_OFFCPU;
    if (dwarf && s->user.abi != 0) {          /* a user context to unwind */
        agent_dwarf_status st = AGENT_DWARF_FAILED;
        if (!p->dwarf && !p->dwarf_failed) {
            char err[300];
            st = agent_dwarf_open(p->pid, &p->dwarf, err, sizeof err);
            if (st != AGENT_DWARF_OK) {
                p->dwarf_failed = 1;
                /* a process that exited is no news; anything else is */
                logmsg(st == AGENT_DWARF_GONE, "pid %d (%s): DWARF unwinding unavailable (%s), "
                       "using frame pointers", (int)p->pid, p->comm, err);
            }
        }
        int n = 0;
        if (p->dwarf) st = agent_dwarf_unwind(p->dwarf, s->tid, &s->user, dips, MAX_FRAMES, &n);
        if (st == AGENT_DWARF_OK && !p->use_dwarf && s->kind == AGENT_SAMPLE_OFFCPU)
            n = agent_offcpu_splice(dips, n, MAX_FRAMES, uips, nu);
        if (st == AGENT_DWARF_OK) { user = dips; nu = n; }
        else if (st != AGENT_DWARF_NOREGS) c->m.unwind_failed++;   /* frame pointers kept */
    }
    /* an allocation sample is taken at the allocator's first instruction,
     * before it saved a frame pointer: the kernel's chain skips its
     * caller, whose return address is at [sp] (the stack copy's start) */
    if (user == uips && s->kind == AGENT_SAMPLE_ALLOC && nu >= 1 && s->user.stack_size >= 8) {
        uint64_t ret;
        memcpy(&ret, s->user.stack, 8);
        if ((nu < 2 || uips[1] != ret) && nu < MAX_FRAMES) {
            memmove(uips + 2, uips + 1, (size_t)(nu - 1) * sizeof *uips);
            uips[1] = ret;
            nu++;
        }
    }
    char name[AGENT_FRAME_MAX];
    size_t len = 0, prev = 0, last = 0;
    int frames = 0;
    for (int i = nu - 1; i >= 0; i--) {
        agent_syms_frame(c->syms, p->pid, i > 0 ? user[i] - 1 : user[i], 0, !c->o.no_lines,
                         name, sizeof name);
        prev = last; last = len ? len + 1 : 0;
        stack_append(c, &len, name);
        frames++;
    }
    for (int i = nk - 1; i >= 0; i--) {
        agent_syms_name(c->syms, p->pid, i > 0 ? kips[i] - 1 : kips[i], 1, name, sizeof name);
        prev = last; last = len ? len + 1 : 0;
        stack_append(c, &len, name);
        frames++;
    }
    if (len == 0) stack_append(c, &len, "[unknown]");
    *caller = frames >= 2 ? (long)prev : -1;
    return len;
}

/* Off-CPU stretches, as offcpu.c closes or cuts them, into their process's
 * window. */
static void offcpu_emit(pid_t pid, pid_t tid, const char *stack, uint64_t ns, void *arg)
{
    agent_ctx *c = arg;
    (void)tid;
    proc_state *p = proc_get(c, pid);
    if (!p) { c->m.dropped_nomem++; return; }
    if (!p->typed[0] && !(p->typed[0] = agent_fold_new())) { c->m.dropped_nomem++; return; }
    agent_fold_add(p->typed[0], stack, ns);
}

/* An allocator's sample: alloc_objects += period, alloc_space += size x
 * period; a call an allocator made itself (glibc's realloc(NULL, n) calls
 * malloc) is not counted twice. */
static void alloc_sample(agent_ctx *c, proc_state *p, const agent_sample *s, long caller)
{
    if (c->alloc_ignore) return;
    if (!agent_alloc_counted(s->alloc_fn, s->arg[0], s->alloc_null_is_malloc)) {
        c->m.alloc_nested++;
        return;
    }
    if (caller >= 0) {
        const char *f = c->stackbuf + caller;
        size_t fl = strcspn(f, ";"), nl = agent_frame_name_len(f);
        if (agent_alloc_is_allocator(f, nl < fl ? nl : fl)) {
            c->m.alloc_nested++;
            return;
        }
    }
    uint64_t objects, space;
    agent_alloc_weights(s->period, agent_alloc_size(s->alloc_fn, s->arg[0], s->arg[1]), &objects, &space);
    for (int k = 1; k <= 2; k++)
        if (!p->typed[k] && !(p->typed[k] = agent_fold_new())) { c->m.dropped_nomem++; return; }
    agent_fold_add(p->typed[1], c->stackbuf, objects);
    if (space) agent_fold_add(p->typed[2], c->stackbuf, space);
    c->m.alloc_samples++;
}

static void on_sample(const agent_sample *s, void *arg)
{
    agent_ctx *c = arg;
    if (s->comm) {
        if (s->pid == s->tid) {
            size_t i = c->ncomms++ % 256;
            c->comms[i].pid = s->pid;
            snprintf(c->comms[i].comm, sizeof c->comms[i].comm, "%s", s->comm);
        }
        if (s->exec && s->pid > 0 && s->pid != c->self) {
            for (size_t i = 0; i < c->nprocs; i++)
                if (c->procs[i].pid == s->pid && !c->procs[i].retired) { proc_exec(c, &c->procs[i]); break; }
        }
        return;
    }
    if (s->kind != AGENT_SAMPLE_CPU) {
        if (!c->offcpu && s->kind != AGENT_SAMPLE_ALLOC) return;
        /* --all: the task switched in by this switch */
        if (s->kind == AGENT_SAMPLE_OFFCPU && s->next_tid > 0 && agent_offcpu_in(c->offcpu, s->next_tid, s->time) < 0)
            c->m.dropped_nomem++;
        if (s->kind == AGENT_SAMPLE_SWITCH_IN) {
            if (s->pid != c->self && agent_offcpu_in(c->offcpu, s->tid, s->time) < 0) c->m.dropped_nomem++;
            return;
        }
        if (s->pid <= 0 || s->pid == c->self) return;    /* the idle task, the agent */
        if (s->kind == AGENT_SAMPLE_OFFCPU) c->m.offcpu_switches++;
    } else {
        c->m.samples_read++;
        if (s->pid <= 0 || s->pid == c->self) { c->m.samples_ignored++; return; }
    }
    proc_state *p = proc_get(c, s->pid);
    if (!p) { c->m.dropped_nomem++; return; }
    if (p->adapter) { if (s->kind == AGENT_SAMPLE_CPU) c->m.samples_ignored++; return; }   /* its tool profiles it */
    long caller;
    sample_stack(c, p, s, &caller);
    if (s->kind == AGENT_SAMPLE_OFFCPU) {
        if (agent_offcpu_out(c->offcpu, s->pid, s->tid, s->time, c->stackbuf) < 0) c->m.dropped_nomem++;
        return;
    }
    if (s->kind == AGENT_SAMPLE_ALLOC) { alloc_sample(c, p, s, caller); return; }
    thread_state *t = proc_thread(p, s->tid);
    if (!t) { c->m.dropped_nomem++; return; }
    agent_fold_add(t->fold, c->stackbuf, 1);
    t->samples++;
    p->samples++;
    c->m.samples_profiled++;
    if (p->unnamed) c->m.samples_unnamed++;
}

/* ---- delivery ---- */

/* 0: delivered; 1: rejected by the server (4xx), dropped; -1: unreachable
 * or 5xx, to be retried. */
static int send_cb(const char *url, const void *body, size_t len, void *arg)
{
    agent_ctx *c = arg;
    char err[600];
    int retryable;
    if (agent_push_send(c->push, url, body, len, &retryable, err, sizeof err) == 0) {
        c->m.profiles_pushed++;
        c->m.samples_delivered += agent_folded_total(body, len);
        return 0;
    }
    if (!retryable) {                 /* 4xx: the server will never take it */
        logmsg(0, "push rejected, dropped: %s (%s)", err, url);
        c->m.profiles_rejected++;
        return 1;
    }
    if (!c->server_down)
        logmsg(0, "server unreachable (%s): profiles go to the spool %s until it answers",
               err, c->spool.dir);
    else logmsg(1, "push failed: %s", err);
    c->server_down = 1;
    return -1;
}

/* The next attempt after a failed one: 1, 2, 4 ... 60 s later. */
static void retry_later(agent_ctx *c)
{
    c->retry_delay = c->retry_delay ? (c->retry_delay * 2 > 60 ? 60 : c->retry_delay * 2) : 1;
    c->retry_at = time(NULL) + c->retry_delay;
}

static void spool_report(agent_ctx *c)
{
    if (c->spool.dropped != c->dropped_reported) {
        logmsg(0, "spool full (%.1f MB): %llu profile(s) dropped so far, oldest first (%llu bytes)",
               (double)c->spool.max_bytes / 1e6, (unsigned long long)c->spool.dropped,
               (unsigned long long)c->spool.dropped_bytes);
        c->dropped_reported = c->spool.dropped;
    }
}

/* Replays the spool when its time has come (force: now); answers 1 when
 * it is empty. */
static int spool_drain(agent_ctx *c, int force)
{
    if (agent_spool_count(&c->spool) == 0) { c->server_down = 0; return 1; }
    if (!force && time(NULL) < c->retry_at) return 0;
    size_t sent = agent_spool_replay(&c->spool, send_cb, c);
    size_t left = agent_spool_count(&c->spool);
    if (sent) logmsg(0, "server answers again: %zu spooled profile(s) replayed, %zu left", sent, left);
    if (left == 0) { c->retry_delay = 0; c->server_down = 0; return 1; }
    retry_later(c);
    return 0;
}

/* Pushes one profile, or spools it: behind the profiles already waiting
 * (order), or when the push fails.  While the server is down, one attempt
 * per backoff step, not one per profile: a flush of many processes, the
 * last one at SIGTERM included, does not wait out a timeout each. */
static void deliver(agent_ctx *c, const char *url, const char *body, size_t len)
{
    char err[600];
    if (spool_drain(c, 0)) {
        int rc = send_cb(url, body, len, c);
        if (rc >= 0) return;
        retry_later(c);
    }
    uint64_t before = c->spool.dropped;
    if (agent_spool_put(&c->spool, url, body, len, err, sizeof err) < 0) {
        logmsg(0, "profile dropped: %s", err);
        if (c->spool.dropped == before) c->spool_failed++;   /* else counted by the spool */
    } else {
        c->m.profiles_spooled++;
        logmsg(1, "profile spooled (%zu waiting in %s)", agent_spool_count(&c->spool), c->spool.dir);
    }
    spool_report(c);
}

static void write_output(agent_ctx *c, const agent_labels *l, const char *unit, int64_t from,
                         int64_t until, const char *body, int located)
{
    fprintf(c->out, "# ");
    for (int i = 0; i < l->n; i++) fprintf(c->out, "%s=%s ", l->name[i], l->value[i]);
    if (unit) fprintf(c->out, "unit=%s ", unit);
    else fprintf(c->out, "rate=%g ", c->freq);
    fprintf(c->out, "from=%lld until=%lld%s\n%s\n", (long long)from,
            (long long)until, located ? " locations=1" : "", body);
    fflush(c->out);
}

/* ---- intervals ---- */

typedef struct { const char **names; uint64_t *counts; size_t n, cap; } self_counts;

/* Self samples per function: the leaf's name part, so that the lines of
 * one function count as one (FDA compares functions, not lines). */
static void self_add(const char *stack, uint64_t count, void *arg)
{
    self_counts *sc = arg;
    const char *leaf = strrchr(stack, ';');
    leaf = leaf ? leaf + 1 : stack;
    size_t ln = agent_frame_name_len(leaf);
    for (size_t i = 0; i < sc->n; i++)
        if (strncmp(sc->names[i], leaf, ln) == 0 && sc->names[i][ln] == 0) { sc->counts[i] += count; return; }
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? 2 * sc->cap : 64;
        const char **nn = realloc(sc->names, cap * sizeof *nn);
        if (!nn) return;
        sc->names = nn;
        uint64_t *nc = realloc(sc->counts, cap * sizeof *nc);
        if (!nc) return;
        sc->counts = nc;
        sc->cap = cap;
    }
    char *name = strndup(leaf, ln);
    if (!name) return;
    sc->names[sc->n] = name;
    sc->counts[sc->n++] = count;
}

static void labels_del(agent_labels *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0) {
            free(l->name[i]); free(l->value[i]);
            l->name[i] = l->name[l->n - 1];
            l->value[i] = l->value[l->n - 1];
            l->n--;
            return;
        }
}

static void merge_into(const char *stack, uint64_t count, void *arg)
{
    agent_fold_add(arg, stack, count);
}

/* A process's window, after thread pruning, into f (an adapter's output
 * for the processes it profiles). */
static void proc_fold(agent_ctx *c, proc_state *p, agent_fold *f)
{
    char err[256];
    if (p->run) {
        if (g_stop) agent_adapter_interrupt(p->run);      /* leaving: do not wait out the interval */
        if (agent_adapter_finish(p->run, f, err, sizeof err) < 0) {
            logmsg(0, "pid %d (%s): %s; sampling it natively from now on", (int)p->pid, p->comm, err);
            p->adapter = AGENT_ADAPTER_NONE;
            labels_del(&p->labels, "spy");
        }
        p->run = NULL;
    } else if (p->nthreads > 0) {
        agent_thread_count *tc = malloc(p->nthreads * sizeof *tc);
        int *keep = malloc(p->nthreads * sizeof *keep);
        if (!tc || !keep) { free(tc); free(keep); return; }
        for (size_t i = 0; i < p->nthreads; i++) tc[i] = (agent_thread_count){ p->threads[i].tid, p->threads[i].samples };
        size_t tdrop = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t sdrop = agent_fsp_select(tc, p->nthreads, c->o.fsp, keep, &tdrop);
        for (size_t i = 0; i < p->nthreads; i++)
            if (keep[i]) agent_fold_each(p->threads[i].fold, merge_into, f);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        c->agg_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
        if (tdrop) {
            c->m.samples_pruned += sdrop;
            c->m.threads_pruned += tdrop;
            logmsg(1, "pid %d (%s): FSP dropped %zu of %zu threads (%llu of %llu samples)",
                   (int)p->pid, p->comm, tdrop, p->nthreads, (unsigned long long)sdrop,
                   (unsigned long long)p->samples);
        }
        free(tc); free(keep);
    }
}

/* One profile to push: the windows of every process with these labels
 * (a service's workers, the churn of one program, the "unknown" ones). */
typedef struct {
    char *key;                      /* agent_labels_key */
    agent_labels labels;
    agent_fold *fold;
    size_t nprocs;
} push_group;

typedef struct { push_group *v; size_t n, cap; } push_groups;

/* Adds f (consumed) to the group of labels l. */
static void group_add(push_groups *g, const agent_labels *l, agent_fold *f)
{
    char *key = agent_labels_key(l);
    if (!key) { agent_fold_free(f); return; }
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->v[i].key, key) == 0) {
            agent_fold_each(f, merge_into, g->v[i].fold);
            agent_fold_free(f);
            g->v[i].nprocs++;
            free(key);
            return;
        }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 32;
        push_group *v = realloc(g->v, cap * sizeof *v);
        if (!v) { free(key); agent_fold_free(f); return; }
        g->v = v; g->cap = cap;
    }
    push_group *e = &g->v[g->n++];
    memset(e, 0, sizeof *e);
    e->key = key;
    agent_labels_copy(&e->labels, l);
    e->fold = f;
    e->nprocs = 1;
}

/* The profile types besides cpu (issue 13), in proc_state.typed order:
 * their type label and unit; they are not samples at a rate. */
static const struct { const char *type, *unit; } typed_profiles[3] = {
    { "offcpu", "nanoseconds" }, { "alloc_objects", "count" }, { "alloc_space", "bytes" } };

static const char *typed_unit(const agent_labels *l)
{
    const char *type = agent_labels_get(l, "type");
    for (int k = 0; type && k < 3; k++)
        if (strcmp(type, typed_profiles[k].type) == 0) return typed_profiles[k].unit;
    return NULL;
}

static void push_group_send(agent_ctx *c, push_group *g, int64_t from, int64_t until, self_counts *sc)
{
    agent_fold *f = g->fold;
    if (agent_fold_total(f) == 0) return;
    const char *unit = typed_unit(&g->labels);      /* NULL: cpu samples at c->freq */
    if (!unit) agent_fold_each(f, self_add, sc);
    size_t len;
    char *body = agent_fold_text(f, &len);
    if (!body) return;
    /* locations=1 exactly when a frame carries one: names-only
     * profiles (--no-lines, no line tables) keep the plain URL */
    int located = memchr(body, FRAME_SEP, len) != NULL;
    if (c->out) { write_output(c, &g->labels, unit, from, until, body, located); c->m.profiles_written++; }
    else {
        char *url = agent_ingest_url_unit(c->o.server, &g->labels, unit ? 0 : c->freq, unit,
                                          from, until, located);
        if (url) {
            logmsg(1, "%s (%zu process%s): %llu samples, %zu stacks -> %s",
                   agent_labels_get(&g->labels, "service"), g->nprocs, g->nprocs == 1 ? "" : "es",
                   (unsigned long long)agent_fold_total(f), agent_fold_stacks(f), url);
            deliver(c, url, body, len);
            free(url);
        }
    }
    free(body);
}

static int thread_alive(pid_t pid, pid_t tid, void *arg)
{
    char path[64];
    struct stat st;
    (void)arg;
    snprintf(path, sizeof path, "/proc/%d/task/%d", (int)pid, (int)tid);
    return stat(path, &st) == 0;
}

static int proc_alive(pid_t pid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    return stat(path, &st) == 0;
}

/* Brings the counters kept elsewhere (perf, spool) into c->m and rewrites
 * --metrics. */
static void metrics_publish(agent_ctx *c)
{
    c->m.dropped_lost = c->perf ? agent_perf_lost(c->perf) : 0;
    c->m.dropped_malformed = c->perf ? agent_perf_malformed(c->perf) : 0;
    c->m.profiles_spool_dropped = (c->have_spool ? c->spool.dropped : 0) + c->spool_failed;
    c->m.spool_waiting = c->have_spool ? agent_spool_count(&c->spool) : 0;
    c->m.processes = c->nprocs;
    c->m.offcpu_unpaired = c->offcpu ? agent_offcpu_unpaired(c->offcpu) : 0;
    c->m.frequency = c->freq;
    if (!c->o.metrics) return;
    char err[600];
    if (agent_metrics_write(c->o.metrics, &c->m, err, sizeof err) < 0) {
        if (!c->metrics_failing) logmsg(0, "%s (the metrics are still in this log, one line per interval)", err);
        c->metrics_failing = 1;
    } else if (c->metrics_failing) {
        logmsg(0, "--metrics %s: written again", c->o.metrics);
        c->metrics_failing = 0;
    }
}

/* Pushes the window: every process's samples, those with equal labels
 * merged into one profile (labels.c: labels are per program, not per
 * process, except for --pid's own processes).  Unless it is the last
 * flush, the rings are drained after each push and after each adapter's
 * output: with stack copies a ring holds well under a second of samples,
 * and pushing hundreds of profiles (a busy node) takes longer.  Samples
 * read meanwhile go to the next window (processes already folded, or new
 * ones) or into this one (processes not folded yet). */
static void flush_interval(agent_ctx *c, int64_t from, int64_t until, int last)
{
    self_counts sc = { 0 };
    push_groups groups = { 0 };
    if (c->offcpu) {                  /* threads still off the CPU: the time so far */
        uint64_t at = agent_perf_upto(c->perf);
        agent_offcpu_advance(c->offcpu, at, offcpu_emit, c);
        agent_offcpu_cut(c->offcpu, at, thread_alive, offcpu_emit, c);
    }
    size_t n = c->nprocs;             /* those made while flushing wait */
    for (size_t i = 0; i < n; i++) {
        proc_state *p = &c->procs[i];
        p->idle_intervals = p->samples || p->run ? 0 : p->idle_intervals + 1;
        int adapter = p->run != NULL;
        if (p->samples || p->run) {
            agent_fold *f = agent_fold_new();
            if (f) {
                proc_fold(c, p, f);
                group_add(&groups, &p->labels, f);
            }
        }
        for (int k = 0; k < 3; k++) {  /* offcpu, alloc_*: whole, not pruned */
            if (!p->typed[k]) continue;
            if (k > 0 && c->alloc_scale > 1) agent_fold_scale(p->typed[k], c->alloc_scale);
            agent_labels l = { 0 };
            agent_labels_copy(&l, &p->labels);
            if (agent_labels_set(&l, "type", typed_profiles[k].type) == 0) group_add(&groups, &l, p->typed[k]);
            else agent_fold_free(p->typed[k]);
            p->typed[k] = NULL;
            agent_labels_free(&l);
        }
        proc_clear(p);
        /* libdw keeps every module file it read open: only processes that
         * run keep their state (and descriptors); reopened when they do */
        if (p->idle_intervals >= 1 && p->dwarf) {
            agent_dwarf_close(p->dwarf);
            p->dwarf = NULL;
        }
        if (adapter && !last && c->perf) agent_perf_poll(c->perf, 0, on_sample, c);   /* may move c->procs */
    }
    for (size_t i = 0; i < groups.n; i++) {
        push_group_send(c, &groups.v[i], from, until, &sc);
        free(groups.v[i].key);
        agent_labels_free(&groups.v[i].labels);
        agent_fold_free(groups.v[i].fold);
        if (!last && c->perf) agent_perf_poll(c->perf, 0, on_sample, c);
    }
    free(groups.v);
    /* forget processes that exited (their samples are flushed now; one with
     * samples read since waits for the next flush) */
    for (size_t i = 0; i < c->nprocs;) {
        proc_state *p = &c->procs[i];
        if (p->samples == 0 && !p->typed[0] && !p->typed[1] &&
            (p->retired || (p->idle_intervals >= 1 && !proc_alive(p->pid)))) {
            if (!p->retired) agent_syms_forget(c->syms, p->pid);
            proc_free(p);
            c->procs[i] = c->procs[--c->nprocs];
        } else i++;
    }
    uint64_t lost = c->perf ? agent_perf_lost(c->perf) : 0;
    if (lost != c->lost_reported) {
        logmsg(0, "%llu sample(s) lost by the kernel (ring buffer full)", (unsigned long long)(lost - c->lost_reported));
        c->lost_reported = lost;
    }
    if (c->o.fda) {
        agent_fda_dist d;
        agent_fda_top(sc.names, sc.counts, sc.n, &d);
        double before = c->freq, f = agent_fda_step(&c->fda, &d);
        if (f != before) {
            if (c->perf) agent_perf_set_freq(c->perf, f);
            c->freq = f;
            logmsg(0, "FDA: D = %.4f, frequency %g -> %g Hz", c->fda.last_d, before, f);
        } else logmsg(1, "FDA: D = %.4f, frequency stays %g Hz", c->fda.last_d, f);
    }
    for (size_t i = 0; i < sc.n; i++) free((char *)sc.names[i]);
    free(sc.names); free(sc.counts);
    c->m.intervals++;
    c->m.last_interval = until;
    metrics_publish(c);
    char line[700];
    agent_metrics_line(&c->m, &c->prev, line, sizeof line);
    logmsg(0, "interval %llu (%lld s): %s", (unsigned long long)c->m.intervals,
           (long long)(until - from), line);
    c->prev = c->m;
}

/* ---- --alloc-duty ---- */

static double now_s(void);

/* The window of the allocation probes in the interval that starts at
 * `start`: alloc_duty of its length, at a random place, so that it does
 * not beat with what the program does periodically. */
static void alloc_plan(agent_ctx *c, double start)
{
    if (!c->nalloc || c->o.alloc_duty >= 1) return;
    /* the last interval of a --duration may be short: its window too, or
     * a window cut by the end would be scaled up by a large factor */
    double iv = c->o.interval;
    if (c->run_end && c->run_end - start < iv) iv = c->run_end - start > 0.1 ? c->run_end - start : 0.1;
    double len = iv * c->o.alloc_duty;
    c->alloc_on_at = start + (iv - len) * ((double)rand_r(&c->alloc_rng) / RAND_MAX);
    c->alloc_off_at = c->alloc_on_at + len;
    c->alloc_done = 0;
}

/* How long the loop may wait for samples (at most max_ms) before the
 * probes must open or close: windows keep their length. */
static int alloc_wait_ms(const agent_ctx *c, double t, int max_ms)
{
    if (!c->nalloc || c->o.alloc_duty >= 1 || !c->perf || c->alloc_done) return max_ms;
    double next = agent_perf_alloc_is_on(c->perf) ? c->alloc_off_at : c->alloc_on_at;
    double ms = (next - t) * 1000;
    return ms >= max_ms ? max_ms : ms < 1 ? 1 : (int)ms;
}

/* The processes to probe when the window opens: the --pid ones and the
 * children seen since (inherit follows only the threads and processes
 * created while the probes are open).  malloc'd, distinct. */
static pid_t *alloc_pids(agent_ctx *c, size_t *n)
{
    pid_t *v = malloc((c->o.npids + c->nprocs + 1) * sizeof *v);
    *n = 0;
    if (!v) return NULL;
    for (size_t i = 0; i < c->o.npids; i++) v[(*n)++] = c->o.pids[i];
    for (size_t i = 0; i < c->nprocs; i++) {
        proc_state *p = &c->procs[i];
        int dup = p->retired || !proc_alive(p->pid);
        for (size_t k = 0; k < *n && !dup; k++) dup = v[k] == p->pid;
        if (!dup) v[(*n)++] = p->pid;
    }
    return v;
}

/* Opens or closes the probes as the plan says, at time t (monotonic). */
static void alloc_tick(agent_ctx *c, double t)
{
    if (!c->nalloc || c->o.alloc_duty >= 1 || !c->perf || !agent_perf_has(c->perf, AGENT_SAMPLE_ALLOC))
        return;
    int on = agent_perf_alloc_is_on(c->perf), want = !c->alloc_done && t >= c->alloc_on_at && t < c->alloc_off_at;
    if (on && !want) {
        c->alloc_done = t >= c->alloc_on_at;
        agent_perf_alloc_off(c->perf, on_sample, c);
        c->alloc_on_s += t - c->alloc_since;    /* disabled at once; the closes' tail samples nothing */
        logmsg(1, "allocation probes off (%.3f s on in this interval)", c->alloc_on_s);
    } else if (!on && want) {
        size_t n = 0;
        pid_t *pids = c->o.all ? NULL : alloc_pids(c, &n);
        char err[300];
        if (agent_perf_alloc_on(c->perf, pids, n, err, sizeof err) < 0) logmsg(0, "--alloc: %s", err);
        t = now_s();                        /* enabled now, after the opening */
        logmsg(1, "allocation probes on for %.3f s", c->alloc_off_at - t);
        c->alloc_since = t;
        free(pids);
    }
}

/* The loop starts: the probes were opened with the other events; with a
 * duty cycle they close until the first window, and what they sampled
 * meanwhile (no window's time to scale it by) is dropped. */
static void alloc_start(agent_ctx *c, double start)
{
    c->alloc_scale = 1;
    if (!c->nalloc || c->o.alloc_duty >= 1 || !c->perf) return;
    /* closing the probes at each window's end takes ~90 ms per event, the
     * loop waiting and the program still trapping: with many threads and
     * CPUs that would eat the interval; then they stay installed */
    size_t ev = agent_perf_alloc_events(c->perf);
    double tail = (double)ev * AGENT_UPROBE_CLOSE_S;
    if (tail > c->o.interval * 0.25) {
        logmsg(0, "--alloc-duty %g: %zu probes (threads x CPUs x functions) would take about %.1f s "
               "to close at each window's end; they stay installed (--alloc-duty 1)",
               c->o.alloc_duty, ev, tail);
        c->o.alloc_duty = 1;
        return;
    }
    c->alloc_ignore = 1;
    agent_perf_alloc_off(c->perf, on_sample, c);
    c->alloc_ignore = 0;
    c->alloc_on_s = 0;
    alloc_plan(c, start);
}

/* The interval [start, t) ends: the factor its allocation estimates are
 * scaled by (its length over the time the probes were on), and the next
 * interval's window.  (A SIGTERM that cuts a window short leaves a last
 * interval scaled from few samples: noisier, not biased.) */
static void alloc_interval_end(agent_ctx *c, double start, double t)
{
    c->alloc_scale = 1;
    if (!c->nalloc || c->o.alloc_duty >= 1 || !c->perf) return;
    if (agent_perf_alloc_is_on(c->perf)) {
        c->alloc_on_s += t - c->alloc_since;
        c->alloc_since = t;
    }
    if (c->alloc_on_s > 0 && t > start) c->alloc_scale = (t - start) / c->alloc_on_s;
    c->alloc_on_s = 0;
    alloc_plan(c, t);
}

static void start_adapters(agent_ctx *c, int seconds)
{
    for (size_t i = 0; i < c->nprocs; i++) {
        proc_state *p = &c->procs[i];
        if (!p->adapter || p->run || !proc_alive(p->pid)) continue;
        char err[256];
        p->run = agent_adapter_start(p->adapter, p->pid, seconds, (int)c->freq, err, sizeof err);
        if (!p->run) logmsg(0, "pid %d (%s): %s", (int)p->pid, p->comm, err);
    }
}

/* ---- main ---- */

/* libdw holds the files of the modules it unwinds through open, per
 * process: on a node with many processes the usual soft limit of 1024
 * descriptors would run out, and with it pushes and /proc reads.  Up to
 * the hard limit, as the administrator allows. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max) return;
    rlim_t before = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 1048576 ? 1048576 : rl.rlim_max;
    if (rl.rlim_cur > before && setrlimit(RLIMIT_NOFILE, &rl) == 0)
        logmsg(1, "open files limit raised from %llu to %llu", (unsigned long long)before,
               (unsigned long long)rl.rlim_cur);
}

/* --offcpu and --alloc: what their events need (offcpu.c, uprobe.c).
 * Something missing is logged and that profile left out; the on-CPU
 * sampling goes on. */
static void extra_setup(agent_ctx *c, agent_perf_opts *po)
{
    char err[1024];
    if (c->o.offcpu) {
        int id = 0, off = -1;
        if (agent_tracepoint("sched", "sched_switch", "next_pid", &id, &off, err, sizeof err) < 0)
            logmsg(0, "--offcpu: no off-CPU profiles: %s", err);
        else if (!(c->offcpu = agent_offcpu_new()))
            logmsg(0, "--offcpu: out of memory");
        else { po->offcpu_tp = id; po->offcpu_next_pid_off = off; }
    }
    if (c->o.alloc_period) {
        int type = agent_uprobe_pmu(err, sizeof err);
        if (type < 0) logmsg(0, "--alloc: no allocation profiles: %s", err);
        else if (agent_alloc_targets(c->o.all ? NULL : c->o.pids, c->o.npids, &c->alloc_targets,
                                     &c->nalloc, err, sizeof err) < 0)
            logmsg(0, "--alloc: no allocation profiles: %s", err);
        else {
            po->uprobe_type = type;
            po->alloc = c->alloc_targets;
            po->nalloc = c->nalloc;
            po->alloc_period = c->o.alloc_period;
        }
    }
}

static void extra_report(agent_ctx *c)
{
    if (c->offcpu && !agent_perf_has(c->perf, AGENT_SAMPLE_OFFCPU)) {
        logmsg(0, "--offcpu: no off-CPU profiles: %s", agent_perf_why_not(c->perf, AGENT_SAMPLE_OFFCPU));
        agent_offcpu_free(c->offcpu);
        c->offcpu = NULL;
    } else if (c->offcpu) logmsg(0, "off-CPU profiles (type offcpu, nanoseconds) from sched:sched_switch");
    if (c->nalloc && !agent_perf_has(c->perf, AGENT_SAMPLE_ALLOC))
        logmsg(0, "--alloc: no allocation profiles: %s", agent_perf_why_not(c->perf, AGENT_SAMPLE_ALLOC));
    else if (c->nalloc) {
        logmsg(0, "allocation profiles (alloc_objects, alloc_space): every %llu-th call of %zu "
               "allocator entry point(s)", (unsigned long long)c->o.alloc_period, c->nalloc);
        for (size_t i = 0; i < c->nalloc; i++)
            logmsg(1, "  uprobe %s+0x%llx (%s)", c->alloc_targets[i].path,
                   (unsigned long long)c->alloc_targets[i].offset,
                   c->alloc_targets[i].fn == AGENT_ALLOC_MALLOC ? "malloc" :
                   c->alloc_targets[i].fn == AGENT_ALLOC_CALLOC ? "calloc" : "realloc");
    }
}

static int setup(agent_ctx *c, char *err, size_t errlen)
{
    c->self = getpid();
    raise_nofile();
    if (gethostname(c->hostname, sizeof c->hostname) < 0) snprintf(c->hostname, sizeof c->hostname, "localhost");
    c->freq = c->o.freq;
    agent_fda_init(&c->fda, c->o.freq, c->o.min_freq, c->o.max_freq, c->o.fda_theta, c->o.fda_lambda);
    c->syms = agent_syms_new("/usr/lib/debug");
    c->stackcap = 65536;
    c->stackbuf = malloc(c->stackcap);
    if (!c->syms || !c->stackbuf) { snprintf(err, errlen, "out of memory"); return -1; }
    agent_syms_set_demangle(c->syms, !c->o.no_demangle);
    if (c->o.output) {
        c->out = strcmp(c->o.output, "-") == 0 ? stdout : fopen(c->o.output, "w");
        if (!c->out) { snprintf(err, errlen, "--output %s: %s", c->o.output, strerror(errno)); return -1; }
    } else {
        c->push = agent_push_new();
        if (!c->push) { snprintf(err, errlen, "libcurl initialization failed"); return -1; }
        char token[1100];
        if (c->o.token && c->o.token_file) { snprintf(err, errlen, "--token and --token-file exclude each other"); return -1; }
        if (c->o.token_file && agent_token_read(c->o.token_file, token, sizeof token, err, errlen) < 0) return -1;
        if (agent_push_auth(c->push, c->o.token_file ? token : c->o.token, c->o.tenant, c->o.ca, err, errlen) < 0)
            return -1;
        const char *dir = c->o.spool;
        if (!dir) {
            snprintf(c->spool_dir, sizeof c->spool_dir, "/tmp/flamedb-agent-spool-XXXXXX");
            if (!mkdtemp(c->spool_dir)) { snprintf(err, errlen, "mkdtemp: %s", strerror(errno)); return -1; }
            dir = c->spool_dir;
            c->temp_spool = 1;
        }
        if (agent_spool_open(&c->spool, dir, (uint64_t)(c->o.spool_mb * 1e6), err, errlen) < 0) return -1;
        c->have_spool = 1;
        size_t waiting = agent_spool_count(&c->spool);
        if (waiting) logmsg(0, "%zu profile(s) waiting in the spool %s: replaying them first", waiting, dir);
    }
    /* the processes named with --pid are known from the start (labels,
     * adapters); they are all given events, so that a process whose adapter
     * fails can be sampled natively */
    for (size_t i = 0; i < c->o.npids; i++) {
        if (!proc_alive(c->o.pids[i])) { snprintf(err, errlen, "--pid %d: no such process", (int)c->o.pids[i]); return -1; }
        if (!proc_get(c, c->o.pids[i])) { snprintf(err, errlen, "out of memory"); return -1; }
    }
    {
        agent_perf_opts po = { .freq = c->o.freq, .no_kernel = c->o.no_kernel,
                               .want_stack = c->o.unwind != UNWIND_FP };
        extra_setup(c, &po);
        c->perf = c->o.all ? agent_perf_open_all(&po, err, errlen)
                           : agent_perf_open_pids(c->o.pids, c->o.npids, &po, err, errlen);
        if (!c->perf) return -1;
        extra_report(c);
    }
    return 0;
}

static void teardown(agent_ctx *c)
{
    for (size_t i = 0; i < c->nprocs; i++) proc_free(&c->procs[i]);
    free(c->procs);
    agent_perf_close(c->perf);
    agent_offcpu_free(c->offcpu);
    free(c->alloc_targets);
    agent_syms_free(c->syms);
    agent_push_free(c->push);
    if (c->have_spool) {
        size_t left = agent_spool_count(&c->spool);
        if (left && c->temp_spool)
            logmsg(0, "%zu profile(s) could not be delivered and are lost (give --spool DIR to keep them across restarts)", left);
        else if (left)
            logmsg(0, "%zu profile(s) left in the spool %s, replayed by the next run", left, c->spool.dir);
        if (c->temp_spool) {
            char cmd[300];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->spool_dir);
            if (system(cmd) != 0) logmsg(0, "could not remove %s", c->spool_dir);
        }
        agent_spool_close(&c->spool);
    }
    if (c->out && c->out != stdout) fclose(c->out);
    free(c->stackbuf);
    agent_labels_free(&c->o.labels);
    free(c->o.pids);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    agent_ctx c;
    memset(&c, 0, sizeof c);
    c.o = (agent_opts){ .server = "http://127.0.0.1:4040", .freq = 99, .interval = 10,
                        .unwind = UNWIND_AUTO, .fsp = 0.99, .fda_theta = 0.05,
                        .fda_lambda = 0.8, .spool_mb = 64 };
    if (parse_args(&c.o, argc, argv) < 0) { agent_labels_free(&c.o.labels); free(c.o.pids); return 2; }
    g_verbose = c.o.verbose;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    char err[1024];
    if (setup(&c, err, sizeof err) < 0) {
        fprintf(stderr, "flamedb-agent: %s\n", err);
        teardown(&c);
        return 1;
    }
    logmsg(0, "sampling %s at %g Hz, %d s intervals, unwinding %s, %s %s",
           c.o.all ? "every process" : "the given processes", c.freq, c.o.interval,
           c.o.unwind == UNWIND_FP ? "fp" : c.o.unwind == UNWIND_DWARF ? "dwarf" : "auto",
           c.o.output ? "writing to" : "pushing to", c.o.output ? c.o.output : c.o.server);
    double start = now_s(), win_start = start;
    int64_t win_from = (int64_t)time(NULL);
    c.m.start_time = win_from;
    metrics_publish(&c);
    start_adapters(&c, c.o.interval);
    c.alloc_rng = (unsigned)getpid() ^ (unsigned)win_from;
    c.alloc_since = start;
    c.run_end = c.o.duration ? start + c.o.duration : 0;
    alloc_start(&c, start);
    while (!g_stop) {
        if (c.perf) agent_perf_poll(c.perf, alloc_wait_ms(&c, now_s(), 100), on_sample, &c);
        else usleep(100000);
        if (c.offcpu) agent_offcpu_advance(c.offcpu, agent_perf_upto(c.perf), offcpu_emit, &c);
        double t = now_s();
        alloc_tick(&c, t);
        int done = c.o.duration && t - start >= c.o.duration;
        if (t - win_start >= c.o.interval || done) {
            int64_t until = (int64_t)time(NULL);
            if (until <= win_from) until = win_from + 1;
            alloc_interval_end(&c, win_start, t);
            flush_interval(&c, win_from, until, done);
            win_from = until;
            win_start = t;
            if (done) break;
            double left = c.o.duration ? c.o.duration - (t - start) : c.o.interval;
            start_adapters(&c, (int)(left < c.o.interval ? left + 0.5 : c.o.interval));
        } else if (c.have_spool) spool_drain(&c, 0);
    }
    if (g_stop) {                       /* push what is left */
        if (c.perf) agent_perf_poll(c.perf, 0, on_sample, &c);
        int64_t until = (int64_t)time(NULL);
        if (until <= win_from) until = win_from + 1;
        alloc_interval_end(&c, win_start, now_s());
        flush_interval(&c, win_from, until, 1);
    }
    if (c.have_spool) spool_drain(&c, 1);
    metrics_publish(&c);
    char line[700];
    agent_metrics_line(&c.m, NULL, line, sizeof line);
    logmsg(0, "totals (%llu intervals): %s", (unsigned long long)c.m.intervals, line);
    logmsg(0, "done: %llu samples, %llu profiles pushed, %llu spooled, %llu dropped; FSP pruned %llu threads (%llu samples); %llu lost; aggregation %.3f ms",
           (unsigned long long)c.m.samples_profiled, (unsigned long long)c.m.profiles_pushed,
           (unsigned long long)c.m.profiles_spooled,
           (unsigned long long)(c.m.profiles_rejected + c.m.profiles_spool_dropped),
           (unsigned long long)c.m.threads_pruned, (unsigned long long)c.m.samples_pruned,
           (unsigned long long)c.m.dropped_lost, c.agg_ns / 1e6);
    teardown(&c);
    return 0;
}
