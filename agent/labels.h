/* labels.h — label sets and the bounded labels of a process (labels.c). */
#ifndef FLAMEDB_AGENT_LABELS_H
#define FLAMEDB_AGENT_LABELS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------------------
 * Label sets (labels.c).
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

#endif
