/* agent.h — the public face of flamedb-agent's modules (issue 4).
 *
 * The agent is a separate binary (bin/flamedb-agent).  It samples call
 * stacks with perf_event (perf.c), unwinds them from the kernel's
 * frame-pointer callchain or with libdw over a copied user stack
 * (unwind_dwarf.c), symbolizes them (maps.c, symbols.c; C++ and Rust names
 * demangled by ../ingest/demangle.c) and locates them in their source
 * (lines.c: file and line from DWARF), labels each process without a
 * per-process value (labels.c), aggregates them per interval and per
 * process (fold.c), prunes idle threads (fsp.c), adapts the
 * sampling frequency (fda.c), pushes folded profiles over libcurl with gzip
 * (push.c), spools them while the server is unreachable (spool.c), hands
 * interpreted runtimes to their own profilers (adapter.c), and counts what
 * it read, dropped and delivered (metrics.c).  With --offcpu it times the
 * stretches threads spend off the CPU (offcpu.c), with --alloc it samples
 * malloc, calloc and realloc through uprobes (uprobe.c, alloc.c).  main.c
 * wires it.
 *
 * Conventions: prefix agent_; functions answer 0 on success and -1 on
 * failure with a message in an `err` buffer the caller owns (when they take
 * one); the caller owns memory unless the name says otherwise (_new/_free).
 */
#ifndef FLAMEDB_AGENT_H
#define FLAMEDB_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <asm/perf_regs.h>

/* ------------------------------------------------------------------------
 * DWARF unwinding (agent/unwind_dwarf.c, owned by the DWARF engineer).
 *
 * Samples of processes that need DWARF carry PERF_SAMPLE_REGS_USER with
 * sample_regs_user = AGENT_DWARF_REGS_MASK and PERF_SAMPLE_STACK_USER with
 * sample_stack_user = AGENT_DWARF_STACK_SIZE.
 *
 * AGENT_DWARF_REGS_MASK selects the 17 x86-64 registers DWARF knows
 * (DWARF regnos 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip): perf
 * bits AX BX CX DX SI DI BP SP IP (0..8) and R8..R15 (16..23), i.e.
 * 0xff01ff.  The kernel writes the selected registers in increasing bit
 * order, so agent_user_regs.regs[] holds, by index (AGENT_REG_*):
 *   0 ax, 1 bx, 2 cx, 3 dx, 4 si, 5 di, 6 bp, 7 sp, 8 ip,
 *   9 r8, 10 r9, 11 r10, 12 r11, 13 r12, 14 r13, 15 r14, 16 r15.
 * (Note: perf order, not DWARF order; the unwinder maps them.)
 * ------------------------------------------------------------------------ */
#define AGENT_DWARF_REGS_MASK \
    ((((1ULL << (PERF_REG_X86_IP + 1)) - 1)) | \
     (((1ULL << PERF_REG_X86_64_MAX) - 1) & ~((1ULL << PERF_REG_X86_R8) - 1)))
#define AGENT_DWARF_NREGS 17
#define AGENT_DWARF_STACK_SIZE 16384u   /* bytes of user stack per sample */
#define AGENT_OFFCPU_STACK_SIZE 2048u   /* per off-CPU sample without DWARF:
                                           the frames above the first with a
                                           frame pointer (perf.c) */
#define AGENT_ALLOC_STACK_SIZE 64u      /* per allocation sample without DWARF:
                                           the return address at [sp] */

enum {
    AGENT_REG_AX = 0, AGENT_REG_BX, AGENT_REG_CX, AGENT_REG_DX,
    AGENT_REG_SI, AGENT_REG_DI, AGENT_REG_BP, AGENT_REG_SP, AGENT_REG_IP,
    AGENT_REG_R8, AGENT_REG_R9, AGENT_REG_R10, AGENT_REG_R11,
    AGENT_REG_R12, AGENT_REG_R13, AGENT_REG_R14, AGENT_REG_R15
};

/* Registers and user stack captured with a sample (PERF_SAMPLE_REGS_USER
 * with AGENT_DWARF_REGS_MASK, PERF_SAMPLE_STACK_USER).  `abi` is the
 * sample's PERF_SAMPLE_REGS_ABI_* (0 = none: no registers, kernel thread);
 * `stack` points at `stack_size` valid bytes (the dyn_size the kernel
 * reports) copied from user memory starting at address `sp`
 * (= regs[AGENT_REG_SP]).  Pointers are valid only during the call. */
typedef struct {
    uint64_t regs[AGENT_DWARF_NREGS];
    uint64_t abi;
    const unsigned char *stack;
    uint64_t stack_size;
    uint64_t sp;
} agent_user_regs;

/* Per-process libdw state (a Dwfl with the process's modules from
 * /proc/PID/maps, attached once with a backend of its own; see the design
 * comment of unwind_dwarf.c for why). */
typedef struct agent_dwarf agent_dwarf;

typedef enum {
    AGENT_DWARF_OK = 0,
    AGENT_DWARF_GONE,       /* the process exited (or is a zombie) */
    AGENT_DWARF_NOREGS,     /* the sample has no 64-bit user registers */
    AGENT_DWARF_FAILED      /* no stack copy, or libdw could not walk past
                               the sampled IP */
} agent_dwarf_status;

/* Opens the state of process pid into *out (NULL unless AGENT_DWARF_OK);
 * err says why not. */
agent_dwarf_status agent_dwarf_open(pid_t pid, agent_dwarf **out, char *err, size_t errlen);
void agent_dwarf_close(agent_dwarf *d);
/* Unwinds one sample; on AGENT_DWARF_OK writes *n >= 2 (max at most)
 * addresses, leaf first, into ips.  Anything else: *n = 0, keep the
 * kernel's frame-pointer chain. */
agent_dwarf_status agent_dwarf_unwind(agent_dwarf *d, pid_t tid, const agent_user_regs *u,
                                      uint64_t *ips, int max, int *n);

/* ------------------------------------------------------------------------
 * Process memory maps (maps.c): snapshots of /proc/PID/maps.
 * ------------------------------------------------------------------------ */
typedef struct {
    uint64_t start, end, offset;   /* [start, end), file offset of start */
    int exec;                      /* mapped executable */
    char *path;                    /* pathname column ("" for anonymous) */
    long elf;                      /* symbolizer's cache: 0 not looked up,
                                      -1 unreadable, k > 0 its ELF entry k-1 */
} agent_map;

typedef struct {
    agent_map *v;                  /* sorted by start */
    size_t n;
} agent_maps;

/* Parses a maps file's text (as /proc/PID/maps prints it). */
int agent_maps_parse(const char *text, agent_maps *out);
int agent_maps_read(pid_t pid, agent_maps *out);
const agent_map *agent_maps_find(const agent_maps *m, uint64_t addr);
void agent_maps_free(agent_maps *m);

/* ------------------------------------------------------------------------
 * Symbol tables (symbols.c).
 * ------------------------------------------------------------------------ */
typedef struct {
    uint64_t addr, size;           /* size 0: extends to the next symbol */
    const char *name;              /* into the pool; valid after agent_symtab_sort */
    uint32_t name_off;             /* offset of the name in the pool */
    uint32_t demangle_tried;       /* agent_sym_name has looked at it */
    char *demangled;               /* its demangled name (malloc'd, freed with
                                      the table), NULL when not mangled */
} agent_sym;

typedef struct {
    agent_sym *v;                  /* sorted by addr */
    size_t n, cap;
    char *pool;                    /* names */
    size_t pool_len, pool_cap;
} agent_symtab;

void agent_symtab_init(agent_symtab *t);
void agent_symtab_free(agent_symtab *t);
int agent_symtab_add(agent_symtab *t, uint64_t addr, uint64_t size,
                     const char *name, size_t name_len);
void agent_symtab_sort(agent_symtab *t);   /* sort, drop duplicates */
/* The symbol containing addr, or NULL. */
const agent_sym *agent_symtab_lookup(const agent_symtab *t, uint64_t addr);
/* The name to show for a symbol: with demangle, C++ and Rust names
 * demangled (ingest/demangle.h), once per entry, on its first use (a table
 * holds many more symbols than are ever sampled), then kept; the raw name
 * when it is not mangled or demangle is 0. */
const char *agent_sym_name(agent_sym *s, int demangle);

/* /proc/kallsyms text (text symbols t/T/w/W only), JIT perf maps
 * (/tmp/perf-PID.map: "START SIZE name", hex without 0x). */
int agent_kallsyms_parse(const char *text, agent_symtab *t);
int agent_perfmap_parse(const char *text, agent_symtab *t);
int agent_read_file(const char *path, char **text, size_t *len); /* malloc'd, NUL-terminated */

/* GNU build-id of an ELF file as lowercase hex (NUL-terminated); answers
 * its length in hex digits, 0 if the file has none, -1 if unreadable. */
int agent_elf_build_id(const char *path, char *hex, size_t cap);
/* Loads .symtab and .dynsym of an ELF file (or of its debug file: build-id
 * in debug_root/.build-id/xx/yyyy.debug, then .gnu_debuglink next to it, in
 * .debug/ and under debug_root), symbol addresses as ELF virtual addresses.
 * debug_root is normally "/usr/lib/debug". */
int agent_elf_symtab(const char *path, const char *debug_root,
                     agent_symtab *t, char *err, size_t errlen);

/* Source lines (lines.c): the DWARF line tables of one ELF file, from the
 * file itself or else from its debug file (debug_path, may be NULL).  -1
 * with err when neither has line tables or the file is unreadable. */
typedef struct agent_lines agent_lines;

int agent_lines_open(const char *path, const char *debug_path, agent_lines **out,
                     char *err, size_t errlen);
void agent_lines_free(agent_lines *l);
/* The source location of the ELF virtual address va: 0 with *file (owned
 * by l) and *line >= 1, -1 when unknown.  Inside inlined code: the call
 * site of the outermost inlined subroutine, so the line lies in the
 * function the ELF symbol names.  Answers are cached per address. */
int agent_lines_find(agent_lines *l, uint64_t va, const char **file, unsigned *line);
size_t agent_lines_cached(const agent_lines *l);   /* addresses in the cache */

/* The symbolizer: per-process maps snapshots, ELF symbol tables cached by
 * build-id (by path+inode when there is none), kernel symbols, perf maps. */
typedef struct agent_syms agent_syms;

agent_syms *agent_syms_new(const char *debug_root);
void agent_syms_free(agent_syms *s);
/* Whether names are demangled (agent_sym_name; on by default,
 * --no-demangle turns it off). */
void agent_syms_set_demangle(agent_syms *s, int on);
/* Writes the name of the frame at ip in process pid into buf: the symbol,
 * "name_[k]" for kernel addresses, the perf-map name for JIT code, or
 * "module+0xOFFSET" (file offset) when nothing is known, "[unknown]" when
 * not even the mapping is.  Names are cut at AGENT_NAME_MAX - 1 bytes. */
void agent_syms_name(agent_syms *s, pid_t pid, uint64_t ip, int kernel,
                     char *buf, size_t cap);
/* As agent_syms_name; with lines, a user-space frame named by an ELF symbol
 * of a file with DWARF line tables (its own or its debug file's) gets its
 * location: "name US file US line US mapping US build_id" (agent_frame_locate;
 * mapping = the file's path in the process's maps, build_id = its GNU
 * build-id in hex, "" when it has none).  Kernel, JIT and unnamed frames,
 * and files without line tables: the name alone.  cap should leave room
 * for the location (AGENT_FRAME_MAX); without room, the name alone. */
void agent_syms_frame(agent_syms *s, pid_t pid, uint64_t ip, int kernel, int lines,
                      char *buf, size_t cap);
/* Forgets a process (after it exited and its samples are flushed). */
void agent_syms_forget(agent_syms *s, pid_t pid);
/* Formats the fallback "basename(path)+0x<off>". */
void agent_module_offset(const char *path, uint64_t off, char *buf, size_t cap);

/* ------------------------------------------------------------------------
 * Labels and folded aggregation (fold.c).
 * ------------------------------------------------------------------------ */
#define AGENT_MAX_LABELS 32

typedef struct {
    char *name[AGENT_MAX_LABELS];
    char *value[AGENT_MAX_LABELS];
    int n;
} agent_labels;

/* Sets (replacing) a label; copies both strings. */
int agent_labels_set(agent_labels *l, const char *name, const char *value);
const char *agent_labels_get(const agent_labels *l, const char *name);
/* Parses "k=v,k=v" (--labels) into l; -1 with err on a malformed pair or
 * bad name (letters, digits, '_', not starting with a digit). */
int agent_labels_parse(agent_labels *l, const char *spec, char *err, size_t errlen);
void agent_labels_free(agent_labels *l);
void agent_labels_copy(agent_labels *dst, const agent_labels *src);
/* The ingest URL: server + "/api/v1/ingest?" + labels + rate, from, until,
 * and locations=1 when asked (frames carry locations), every value
 * percent-encoded.  malloc'd. */
char *agent_ingest_url(const char *server, const agent_labels *l,
                       double rate, int64_t from, int64_t until, int locations);
/* The same with the unit of the counts (unit=..., NULL: the server's
 * default, samples); rate <= 0 leaves rate out (a profile not of samples
 * taken at a frequency: off-CPU nanoseconds, allocations). */
char *agent_ingest_url_unit(const char *server, const agent_labels *l, double rate,
                            const char *unit, int64_t from, int64_t until, int locations);
/* Percent-encodes s (RFC 3986 unreserved kept) into a malloc'd string. */
char *agent_urlencode(const char *s);

/* A folded profile under construction: stack string (root-first, frames
 * joined by ';') -> count, in a hash table. */
typedef struct agent_fold agent_fold;

agent_fold *agent_fold_new(void);
void agent_fold_free(agent_fold *f);
void agent_fold_add(agent_fold *f, const char *stack, uint64_t count);
uint64_t agent_fold_total(const agent_fold *f);
size_t agent_fold_stacks(const agent_fold *f);
/* The folded text, lines sorted by stack for determinism.  malloc'd. */
char *agent_fold_text(const agent_fold *f, size_t *len);
/* Multiplies every count by factor (rounded; at least 1 stays 1): a
 * profile estimated from part of its window, scaled to the whole. */
void agent_fold_scale(agent_fold *f, double factor);
/* Iterates every (stack, count). */
void agent_fold_each(const agent_fold *f,
                     void (*fn)(const char *stack, uint64_t count, void *arg),
                     void *arg);
/* The sum of the counts of folded text ("stack count" lines). */
uint64_t agent_folded_total(const char *text, size_t len);
/* Sanitizes a frame name for folded text: ';' -> ':', newlines and the
 * location separator (0x1F) -> ' ', empty -> "[unknown]". In place. */
void agent_frame_clean(char *name);

/* Frames with lines (issue 15; storage/frame.h is the format): a frame's
 * text is its name, or "name US file US line US mapping US build_id" with
 * US = 0x1F, what POST /api/v1/ingest takes with locations=1. */
#define AGENT_NAME_MAX 1024             /* a name's bytes, NUL included */
#define AGENT_LOCATION_FIELD_MAX 1024   /* file or mapping, bytes */
#define AGENT_LINE_MAX 99999999u
#define AGENT_FRAME_MAX (AGENT_NAME_MAX + 2 * AGENT_LOCATION_FIELD_MAX + 160)
/* Appends the location to the (clean) name in buf: answers 1, or 0 with
 * buf unchanged when there is none to give (no file, line 0 or above
 * AGENT_LINE_MAX, a file not UTF-8 or longer than AGENT_LOCATION_FIELD_MAX,
 * buf already located or too small).  ';', line breaks and 0x1F in file and
 * mapping become ':' and ' '; a mapping that is too long or not UTF-8, or a
 * build_id that is not hex, is left empty; when both are empty the short
 * form "name US file US line" is written. */
int agent_frame_locate(char *buf, size_t cap, const char *file, unsigned line,
                       const char *mapping, const char *build_id);
/* The length of the name part of a frame's text (storage/frame.h's
 * frame_name_len). */
size_t agent_frame_name_len(const char *frame);

/* ------------------------------------------------------------------------
 * Thread pruning, Atys FSP (fsp.c): pure.
 * ------------------------------------------------------------------------ */
typedef struct {
    pid_t tid;
    uint64_t samples;
} agent_thread_count;

/* Marks keep[i] = 1 for the most active threads whose samples together make
 * at least p (0 < p <= 1) of the total, 0 for the rest (ties: lower tid
 * first).  p >= 1 keeps every thread.  Answers the number of samples
 * dropped; *threads_dropped receives the number of threads dropped. */
uint64_t agent_fsp_select(const agent_thread_count *t, size_t n, double p,
                          int *keep, size_t *threads_dropped);

/* ------------------------------------------------------------------------
 * Adaptive frequency, Atys FDA (fda.c): pure.
 * ------------------------------------------------------------------------ */
#define AGENT_FDA_TOP 10
#define AGENT_FDA_STEADY 5          /* intervals of D <= theta before lowering */

typedef struct {
    char name[AGENT_FDA_TOP][256];
    double p[AGENT_FDA_TOP];        /* normalized over the top-N */
    int n;
} agent_fda_dist;

typedef struct {
    double freq, min, max, theta, lambda;
    agent_fda_dist prev;
    int have_prev;
    int steady;                     /* consecutive intervals with D <= theta */
    double last_d;
} agent_fda;

/* The top-10 functions by self samples from (name, count) pairs; names
 * may be frame texts with locations: their name parts are the functions
 * (pairs with the same name part add up). */
void agent_fda_top(const char *const *names, const uint64_t *counts, size_t n,
                   agent_fda_dist *out);
/* Jensen-Shannon divergence, base 2 (0..1), of two top-N distributions
 * (functions matched by name, missing ones count 0). */
double agent_fda_jsd(const agent_fda_dist *a, const agent_fda_dist *b);
void agent_fda_init(agent_fda *s, double freq, double min, double max,
                    double theta, double lambda);
/* Feeds one interval's distribution; answers the frequency to use next. */
double agent_fda_step(agent_fda *s, const agent_fda_dist *cur);

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

/* ------------------------------------------------------------------------
 * Push (push.c): libcurl, keep-alive, gzip.
 * ------------------------------------------------------------------------ */
typedef struct agent_push agent_push;

agent_push *agent_push_new(void);
void agent_push_free(agent_push *p);
/* A server with --auth, over https: the token of every push (sent as
 * Authorization: Bearer; NULL none), the tenant (X-Scope-OrgID; NULL none)
 * and a PEM file of the authority or certificate that verifies the
 * server's (NULL: the system's).  0, or -1 with err. */
int agent_push_auth(agent_push *p, const char *token, const char *tenant, const char *ca,
                    char *err, size_t errlen);
/* The token of --token-file: its first line, blanks cut, into buf; 0, or
 * -1 with err when it cannot be read or is no token. */
int agent_token_read(const char *path, char *buf, size_t cap, char *err, size_t errlen);
/* POSTs body gzip'd to url; 0 on a 2xx answer, -1 otherwise with err.
 * *retryable = 1 for connection failures and 5xx/429, 0 for other 4xx. */
int agent_push_send(agent_push *p, const char *url, const void *body,
                    size_t len, int *retryable, char *err, size_t errlen);
/* gzip (zlib, RFC 1952) into a malloc'd buffer. */
int agent_gzip(const void *in, size_t len, unsigned char **out, size_t *outlen);

/* ------------------------------------------------------------------------
 * Process information (proc.c).
 * ------------------------------------------------------------------------ */
int agent_proc_comm(pid_t pid, char *buf, size_t cap);     /* /proc/PID/comm */
int agent_proc_exe(pid_t pid, char *buf, size_t cap);      /* readlink exe */
/* First 12 hex digits of /proc/PID/exe's build-id into buf (13 bytes),
 * "" when none. */
int agent_proc_build(pid_t pid, char *buf, size_t cap);

/* ------------------------------------------------------------------------
 * The labels of a process, bounded (labels.c, issue 13; see its design
 * comment for what each label is made of and why none is per process).
 * ------------------------------------------------------------------------ */
/* The 64-hex-digit container id and the Kubernetes pod UID in a
 * /proc/PID/cgroup text (cgroup v1 and v2 lines); container_id (65 bytes)
 * and pod_uid (37 bytes) are "" when absent.  Answers 1 if either was found. */
int agent_cgroup_ids(const char *text, char *container_id, char *pod_uid);
/* 1 when a /proc/PID/stat text is a kernel thread's (PF_KTHREAD), 0 when
 * not, -1 when it cannot be read. */
int agent_stat_kthread(const char *text);
/* The service name: exe's basename (" (deleted)" dropped, not "memfd:..."),
 * else comm (a kernel thread's cut at '/'), else "unknown". */
void agent_service_name(const char *exe, const char *comm, int kthread, char *buf, size_t cap);

/* What /proc says of a process, read once when it is first seen. */
typedef struct {
    pid_t pid;
    char exe[4096];                 /* /proc/PID/exe's target, "" unreadable */
    char comm[64];                  /* "" unreadable */
    int kthread;
    char build[16];                 /* first 12 hex digits of the build-id */
    char container_id[65], pod_uid[37];
} agent_proc_ident;

typedef struct {
    const char *service;            /* --service, or NULL */
    const char *hostname;
    int pid_instance;               /* instance = HOSTNAME/PID (named with --pid) */
    const agent_labels *extra;      /* --labels, or NULL */
} agent_label_opts;

/* Reads /proc/PID/{exe,comm,stat,cgroup} and the build-id; -1 when neither
 * exe nor comm could be read (the process is gone). */
int agent_proc_identity(pid_t pid, agent_proc_ident *id);
/* Sets service, instance, node, build, container_id, pod_uid, then the
 * extra labels over them.  -1 when a label could not be set. */
int agent_process_labels(const agent_proc_ident *id, const agent_label_opts *o, agent_labels *out);
/* The label set as a string equal for equal sets whatever their order
 * (processes with the same labels are one series: their profiles are
 * merged before the push).  malloc'd. */
char *agent_labels_key(const agent_labels *l);

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

/* ------------------------------------------------------------------------
 * Allocation entry points (uprobe.c): where malloc, calloc and realloc
 * start in the ELF files the watched processes map, for uprobes.
 * ------------------------------------------------------------------------ */
typedef enum { AGENT_ALLOC_MALLOC = 0, AGENT_ALLOC_CALLOC, AGENT_ALLOC_REALLOC, AGENT_ALLOC_NFN } agent_alloc_fn;

typedef struct {
    char path[4096];                /* the file, as the agent opens it
                                       (/proc/PID/root/... for --pid) */
    uint64_t offset;                /* file offset of the function's entry */
    agent_alloc_fn fn;
    int null_is_malloc;             /* REALLOC in glibc: realloc(NULL, n)
                                       jumps into malloc, whose probe counts it */
} agent_uprobe_target;

/* The uprobe PMU's type (/sys/bus/event_source/devices/uprobe/type);
 * -1 with err naming what is missing. */
int agent_uprobe_pmu(char *err, size_t errlen);
/* The entry points of malloc, calloc and realloc defined (not imported)
 * in ELF file path (.dynsym, else .symtab), as file offsets, appended to
 * *v (n entries, cap).  Answers how many were found, -1 if unreadable. */
int agent_alloc_symbols(const char *path, agent_uprobe_target **v, size_t *n, size_t *cap);
/* The targets in every distinct file (by device and inode) mapped
 * executable by the processes pids (n of them), or by every process
 * (pids NULL: --all).  -1 with err when none defines an allocator. */
int agent_alloc_targets(const pid_t *pids, size_t n, agent_uprobe_target **out,
                        size_t *nout, char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * Allocation profiles (alloc.c): pure weighting of uprobe samples.
 * ------------------------------------------------------------------------ */
/* The bytes a call asked for from its first two arguments (rdi, rsi in
 * the x86-64 SysV ABI): malloc(size), calloc(n, size) (saturated),
 * realloc(ptr, size); 0 for a size above AGENT_ALLOC_SIZE_MAX or a calloc
 * product that overflows (calls that fail). */
#define AGENT_ALLOC_SIZE_MAX (1ull << 48)
uint64_t agent_alloc_size(agent_alloc_fn fn, uint64_t arg0, uint64_t arg1);
/* 1 when a frame name is one of the probed allocators or their glibc
 * aliases (malloc, __libc_malloc, __GI___libc_malloc, ...): a sample whose
 * caller is one of them is a nested call (glibc's realloc(NULL, n) calls
 * malloc) and must not count twice. */
int agent_alloc_is_allocator(const char *name, size_t len);
/* 0 when a sample is counted by another probe: realloc(NULL, n) of a libc
 * whose realloc then enters malloc (null_is_malloc: glibc, where it is a
 * tail jump, so the stack cannot tell). */
int agent_alloc_counted(agent_alloc_fn fn, uint64_t arg0, int null_is_malloc);
/* --alloc's default period: a prime (no aliasing with loops that allocate
 * k times per iteration, k < N), see alloc.c and docs/agent.md. */
#define AGENT_ALLOC_PERIOD 509
/* --alloc-duty's default: the fraction of each interval the probes are
 * installed (main.c, docs/agent.md). */
#define AGENT_ALLOC_DUTY 0.05
/* The weights of one sample taken every `period` calls: alloc_objects +=
 * period, alloc_space += size * period (saturated). */
void agent_alloc_weights(uint64_t period, uint64_t size, uint64_t *objects, uint64_t *space);

/* ------------------------------------------------------------------------
 * Off-CPU time (offcpu.c): pairing each thread's switch-out (with its
 * stack) with its next switch-in, in time order, and cutting the time of
 * threads still off the CPU at the end of a period.  Pure.
 * ------------------------------------------------------------------------ */
typedef struct agent_offcpu agent_offcpu;
/* One finished (or cut) stretch off the CPU: ns nanoseconds of thread tid
 * of process pid with stack (valid during the call). */
typedef void (*agent_offcpu_emit)(pid_t pid, pid_t tid, const char *stack, uint64_t ns, void *arg);

agent_offcpu *agent_offcpu_new(void);
void agent_offcpu_free(agent_offcpu *o);
/* Queue events (they may come in any order across CPUs: ordered by time
 * in agent_offcpu_advance).  The stack is copied.  -1 when out of memory. */
int agent_offcpu_out(agent_offcpu *o, pid_t pid, pid_t tid, uint64_t time, const char *stack);
int agent_offcpu_in(agent_offcpu *o, pid_t tid, uint64_t time);
/* Applies the queued events with time <= upto in time order (later ones
 * stay queued): a switch-in closes its thread's open stretch and emits it;
 * a switch-out opens one (a second switch-out without a switch-in between,
 * a lost record, replaces the first and is counted unpaired). */
void agent_offcpu_advance(agent_offcpu *o, uint64_t upto, agent_offcpu_emit fn, void *arg);
/* The period ends at `at` (the last advance's upto): every open stretch
 * emits at - start and restarts at `at`, so the rest of it falls in the
 * next period; threads alive() says are gone (exited while off the CPU,
 * their last switch-out) are forgotten without emitting. */
void agent_offcpu_cut(agent_offcpu *o, uint64_t at, int (*alive)(pid_t pid, pid_t tid, void *arg),
                      agent_offcpu_emit fn, void *arg);
/* The user frames of an off-CPU sample of a process unwound with frame
 * pointers: d (nd, room for max) from libdw over the small stack copy,
 * which recovers the caller of the libc wrapper the thread blocks in (no
 * frame pointer there, so the kernel's chain f skips it) but stops where
 * the copy ends; continued with f's frames after the first return address
 * the two share (index >= 1 in both).  None shared: the longer of the two
 * (f copied into d).  Answers the frames now in d. */
int agent_offcpu_splice(uint64_t *d, int nd, int max, const uint64_t *f, int nf);
size_t agent_offcpu_open(const agent_offcpu *o);      /* threads off the CPU now */
size_t agent_offcpu_queued(const agent_offcpu *o);
uint64_t agent_offcpu_unpaired(const agent_offcpu *o);
/* The id of tracepoint SYS:NAME and the byte offset of FIELD in its raw
 * record (field may be NULL), from tracefs (/sys/kernel/tracing, else
 * /sys/kernel/debug/tracing); mounts tracefs on /sys/kernel/tracing when
 * neither has it and that is permitted.  -1 with err naming what is
 * missing. */
int agent_tracepoint(const char *sys, const char *name, const char *field,
                     int *id, int *field_off, char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * Sampling (perf.c): cpu-clock software events, and with --offcpu the
 * sched:sched_switch tracepoint, with --alloc uprobes; all into the same
 * mmap'd ring buffers, one per CPU, in CLOCK_MONOTONIC time.
 * ------------------------------------------------------------------------ */
typedef enum {
    AGENT_SAMPLE_CPU = 0,           /* cpu-clock: one sample = 1e9/f ns */
    AGENT_SAMPLE_OFFCPU,            /* tid switched out (stack: where it blocks) */
    AGENT_SAMPLE_SWITCH_IN,         /* tid switched in (no stack) */
    AGENT_SAMPLE_ALLOC              /* an allocator's entry (alloc_fn, arg, period) */
} agent_sample_kind;

typedef struct {
    agent_sample_kind kind;
    pid_t pid, tid;
    uint64_t time;                  /* CLOCK_MONOTONIC ns */
    const uint64_t *chain;          /* callchain, PERF_CONTEXT_* markers included */
    uint64_t nr;
    int has_user;                   /* user regs and stack present */
    agent_user_regs user;
    const char *comm;               /* non-NULL: not a sample but a
                                       PERF_RECORD_COMM (exec or rename) of
                                       pid/tid; nr is 0 */
    int exec;                       /* with comm: the process exec'd
                                       (PERF_RECORD_MISC_COMM_EXEC) */
    pid_t next_tid;                 /* OFFCPU under --all: the thread switched
                                       in at the same time (0: the idle task) */
    agent_alloc_fn alloc_fn;        /* ALLOC: which function */
    int alloc_null_is_malloc;       /* ALLOC: its target's null_is_malloc */
    uint64_t arg[2];                /* ALLOC: its first two arguments */
    uint64_t period;                /* ALLOC: calls this sample stands for */
} agent_sample;

typedef struct agent_perf agent_perf;

typedef struct {
    double freq;
    int no_kernel;
    int want_stack;                 /* REGS_USER + STACK_USER for DWARF */
    /* --offcpu: the id of sched:sched_switch (0: none) and, for --all, the
     * offset of next_pid in its raw record */
    int offcpu_tp, offcpu_next_pid_off;
    /* --alloc: uprobes (PMU type) on these entry points, a sample every
     * alloc_period calls (0: none) */
    int uprobe_type;
    const agent_uprobe_target *alloc;
    size_t nalloc;
    uint64_t alloc_period;
} agent_perf_opts;

/* Every process: one event per online CPU (pid -1) and kind. */
agent_perf *agent_perf_open_all(const agent_perf_opts *o, char *err, size_t errlen);
/* The given processes: one event per (thread, CPU) and kind with inherit,
 * so the threads and children they create are followed. */
agent_perf *agent_perf_open_pids(const pid_t *pids, size_t n, const agent_perf_opts *o,
                                 char *err, size_t errlen);
/* Whether the off-CPU (AGENT_SAMPLE_OFFCPU) or allocation
 * (AGENT_SAMPLE_ALLOC) events could be opened; when not, why (the on-CPU
 * sampling goes on without them). */
int agent_perf_has(const agent_perf *p, agent_sample_kind kind);
const char *agent_perf_why_not(const agent_perf *p, agent_sample_kind kind);
void agent_perf_close(agent_perf *p);
/* --alloc-duty: the allocation probes installed only part of the time.  A
 * disabled perf uprobe keeps its breakpoint (every call still traps), so
 * off closes the allocation events (after reading their last records
 * through fn) and on opens them again: on every CPU (pids NULL: --all) or
 * on every thread of the processes pids (distinct), with inherit.  Both do
 * nothing when already so; on answers -1 with err when a probe could not be
 * opened (those that could stay on). */
int agent_perf_alloc_on(agent_perf *p, const pid_t *pids, size_t n, char *err, size_t errlen);
void agent_perf_alloc_off(agent_perf *p, void (*fn)(const agent_sample *s, void *arg), void *arg);
int agent_perf_alloc_is_on(const agent_perf *p);
/* The allocation events open now (threads x CPUs x entry points under
 * --pid, CPUs x entry points under --all). */
size_t agent_perf_alloc_events(const agent_perf *p);
/* Closing a perf uprobe event waits about this long (a grace period under
 * a global mutex: serial), perf.c. */
#define AGENT_UPROBE_CLOSE_S 0.09
/* Waits up to timeout_ms for data, then calls fn for every sample read.
 * Answers the number of samples, -1 on error. */
int agent_perf_poll(agent_perf *p, int timeout_ms,
                    void (*fn)(const agent_sample *s, void *arg), void *arg);
/* Every record stamped at or before this CLOCK_MONOTONIC time has been
 * read by the last agent_perf_poll (its start, less a margin). */
uint64_t agent_perf_upto(const agent_perf *p);
/* Changes the sampling frequency of every cpu-clock event
 * (PERF_EVENT_IOC_PERIOD). */
int agent_perf_set_freq(agent_perf *p, double freq);
uint64_t agent_perf_lost(const agent_perf *p);     /* PERF_RECORD_LOST total */
/* Sample records that could not be parsed, and records skipped after a
 * corrupt header (the rest of that ring's batch). */
uint64_t agent_perf_malformed(const agent_perf *p);
/* The reason perf_event_open was refused, with how to fix it. */
void agent_perf_explain(int errnum, char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * The agent's own metrics (metrics.c): counters since start, see its
 * design comment for what each one means and how they add up.
 * ------------------------------------------------------------------------ */
typedef struct {
    uint64_t samples_read;          /* sample records read from the rings */
    uint64_t samples_profiled;      /* counted into a process's profile */
    uint64_t samples_ignored;       /* the idle task, the agent itself,
                                       processes an adapter profiles */
    uint64_t samples_unnamed;       /* of the profiled: processes that exited
                                       before anything named them (service
                                       "unknown") */
    uint64_t dropped_nomem;
    uint64_t dropped_lost;          /* PERF_RECORD_LOST: never read */
    uint64_t dropped_malformed;     /* records that could not be parsed */
    uint64_t unwind_failed;         /* DWARF failed: frame pointers kept */
    uint64_t offcpu_switches;       /* --offcpu: switch-outs of watched threads read */
    uint64_t offcpu_unpaired;       /* switch-outs without a switch-in (lost records) */
    uint64_t alloc_samples;         /* --alloc: samples counted */
    uint64_t alloc_nested;          /* samples of an allocator called by one (not counted) */
    uint64_t samples_pruned, threads_pruned;   /* FSP */
    uint64_t samples_delivered;     /* in profiles the server accepted */
    uint64_t profiles_pushed;       /* accepted (2xx), spool replays included */
    uint64_t profiles_spooled;
    uint64_t profiles_rejected;     /* 4xx */
    uint64_t profiles_spool_dropped;/* beyond --spool-max, or not writable */
    uint64_t profiles_written;      /* --output */
    uint64_t spool_waiting;         /* gauge */
    uint64_t processes;             /* gauge */
    uint64_t intervals;
    double frequency;               /* gauge, Hz */
    int64_t start_time, last_interval;   /* unix seconds */
} agent_metrics;

/* One log line's worth of key=value pairs: cur - prev (prev NULL: totals);
 * the gauges as they are in cur. */
void agent_metrics_line(const agent_metrics *cur, const agent_metrics *prev,
                        char *buf, size_t cap);
/* Prometheus text format.  malloc'd. */
char *agent_metrics_text(const agent_metrics *m, size_t *len);
/* Writes agent_metrics_text to path atomically (path.tmp, rename). */
int agent_metrics_write(const char *path, const agent_metrics *m, char *err, size_t errlen);

#endif
