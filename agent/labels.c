/* labels.c — the labels of a profiled process, bounded (issue 13).
 *
 * Every distinct label set is a series on the server, kept forever, so no
 * label may take a new value per process: a node that starts processes all
 * day would make series without end (a minute of a build machine made 25
 * services "pid-N").  What the labels are made of:
 *
 *   service       the basename of the executable (/proc/PID/exe, " (deleted)"
 *                 dropped; not a "memfd:..." one), else the command name (/proc/PID/comm, or the
 *                 PERF_RECORD_COMM of a process that is gone; not a "memfd:..."
 *                 one either: a program exec'd from a memfd may be named so); kernel
 *                 threads' names are cut at '/' ("kworker/3:1-events" ->
 *                 "kworker": the rest is a CPU, a worker number, the work
 *                 queue of the moment).  A process the agent could not name
 *                 at all is "unknown": one series per node.  Never a pid.
 *   instance      HOSTNAME/PID only for the processes named with --pid (the
 *                 operator chose them: bounded by the command line); every
 *                 other process (--all, children that --pid's inherit
 *                 follows) is HOSTNAME, so processes with the same labels
 *                 make one series and main.c merges their profiles.
 *   node          the hostname.
 *   build         the first 12 hex digits of the executable's GNU build-id.
 *   container_id  the 64-hex-digit container id in /proc/PID/cgroup
 *                 (docker, containerd, cri-o, podman), absent outside one.
 *   pod_uid       the Kubernetes pod UID of a kubepods cgroup path.
 *
 * The parsers take text, so synthetic /proc files test them
 * (tests/agent/test_agent_labels.c); agent_proc_identity reads the real ones.
 */
#include "labels.h"
#include "proc.h"
#include "readfile.h"

#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- /proc/PID/cgroup ---- */

static int all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i])) return 0;
    return 1;
}

/* A path component naming a container: "<64 hex>" (cgroupfs drivers:
 * /docker/ID, /kubepods/.../podUID/ID), or a systemd scope
 * "docker-ID.scope", "cri-containerd-ID.scope", "crio-ID.scope",
 * "libpod-ID.scope" (podman).  crio-conmon-ID.scope (cri-o's monitor
 * process, not the container) does not match. */
static int component_container(const char *c, size_t n, char *id)
{
    static const char *const prefixes[] = { "", "docker-", "cri-containerd-", "crio-", "libpod-", NULL };
    if (n > 6 && memcmp(c + n - 6, ".scope", 6) == 0) n -= 6;
    for (int i = 0; prefixes[i]; i++) {
        size_t pl = strlen(prefixes[i]);
        if (n == pl + 64 && memcmp(c, prefixes[i], pl) == 0 && all_hex(c + pl, 64)) {
            for (int k = 0; k < 64; k++) id[k] = (char)tolower((unsigned char)c[pl + k]);
            id[64] = 0;
            return 1;
        }
    }
    return 0;
}

/* A component holding "pod" + a UUID, with '-' (cgroupfs: "pod<uid>") or
 * '_' (systemd: "kubepods-burstable-pod<uid>.slice") between its groups;
 * written with '-', as Kubernetes shows it. */
static int component_pod(const char *c, size_t n, char *uid)
{
    for (size_t i = 0; i + 3 + 36 <= n; i++) {
        if (memcmp(c + i, "pod", 3) != 0) continue;
        const char *u = c + i + 3;
        int ok = 1;
        for (int k = 0; k < 36 && ok; k++) {
            if (k == 8 || k == 13 || k == 18 || k == 23) ok = u[k] == '-' || u[k] == '_';
            else ok = isxdigit((unsigned char)u[k]) != 0;
        }
        /* the UUID ends the component or its ".slice" */
        if (ok && (i + 39 == n || u[36] == '.')) {
            for (int k = 0; k < 36; k++)
                uid[k] = u[k] == '_' ? '-' : (char)tolower((unsigned char)u[k]);
            uid[36] = 0;
            return 1;
        }
    }
    return 0;
}

int agent_cgroup_ids(const char *text, char *container_id, char *pod_uid)
{
    container_id[0] = pod_uid[0] = 0;
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        /* "hierarchy-ID:controllers:path"; v2's single line is "0::path" */
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            const char *path = c2 + 1, *end = line + len;
            int kube = 0;
            for (const char *p = path; p + 8 <= end && !kube; p++) kube = memcmp(p, "kubepods", 8) == 0;
            char id[65] = "", uid[37] = "";
            /* the deepest container (docker in docker: the inner one) */
            for (const char *p = path; p < end;) {
                const char *slash = memchr(p, '/', (size_t)(end - p));
                const char *ce = slash ? slash : end;
                if (ce > p) {
                    char cid[65];
                    if (component_container(p, (size_t)(ce - p), cid)) memcpy(id, cid, sizeof id);
                    if (kube && !uid[0]) component_pod(p, (size_t)(ce - p), uid);
                }
                p = ce + 1;
            }
            if (id[0] && !container_id[0]) memcpy(container_id, id, 65);
            if (uid[0] && !pod_uid[0]) memcpy(pod_uid, uid, 37);
        }
        line = eol ? eol + 1 : NULL;
    }
    return container_id[0] || pod_uid[0];
}

/* ---- /proc/PID/stat: kernel threads ---- */

#define PF_KTHREAD_FLAG 0x00200000UL     /* include/linux/sched.h */

int agent_stat_kthread(const char *text)
{
    /* "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": the comm
     * may hold spaces and parentheses, so fields count from the last ')' */
    const char *p = strrchr(text, ')');
    if (!p) return -1;
    p++;
    for (int field = 3; field < 9; field++) {      /* skip state .. tpgid */
        while (*p == ' ') p++;
        if (!*p) return -1;
        while (*p && *p != ' ') p++;
    }
    char *end;
    unsigned long flags = strtoul(p, &end, 10);
    if (end == p) return -1;
    return (flags & PF_KTHREAD_FLAG) != 0;
}

/* ---- the service ---- */

void agent_service_name(const char *exe, const char *comm, int kthread, char *buf, size_t cap)
{
    if (exe && *exe) {
        size_t n = strlen(exe);
        static const char deleted[] = " (deleted)";
        if (n > sizeof deleted - 1 && strcmp(exe + n - (sizeof deleted - 1), deleted) == 0)
            n -= sizeof deleted - 1;
        const char *base = exe;
        for (size_t i = 0; i < n; i++)
            if (exe[i] == '/') base = exe + i + 1;
        size_t bl = (size_t)(exe + n - base);
        /* a program run from a memfd (runc and other self-sealing
         * launchers: "/memfd:sealed-<random> (deleted)") has no file name
         * worth a series: its command name says more */
        int memfd = bl >= 6 && memcmp(base, "memfd:", 6) == 0;
        if (bl > 0 && !memfd) { snprintf(buf, cap, "%.*s", (int)bl, base); return; }
    }
    /* a memfd's name as the command ("memfd:sealed-91": a program exec'd
     * from one names its command after it) changes with every run: one
     * series for all of them, not one each */
    if (comm && *comm && strncmp(comm, "memfd:", 6)) {
        size_t n = kthread ? strcspn(comm, "/") : strlen(comm);
        if (n > 0) { snprintf(buf, cap, "%.*s", (int)n, comm); return; }
    }
    snprintf(buf, cap, "unknown");
}

/* ---- a process's labels ---- */

int agent_proc_identity(pid_t pid, agent_proc_ident *id)
{
    memset(id, 0, sizeof *id);
    id->pid = pid;
    char path[64], *text;
    /* the name and the build of one file (an exec may come between) */
    agent_proc_exe_build(pid, id->exe, sizeof id->exe, id->build, sizeof id->build);
    if (agent_proc_comm(pid, id->comm, sizeof id->comm) < 0) id->comm[0] = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (agent_read_file(path, &text, NULL) == 0) {
        id->kthread = agent_stat_kthread(text) == 1;
        free(text);
    }
    if (id->kthread) id->build[0] = 0;
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    if (agent_read_file(path, &text, NULL) == 0) {
        agent_cgroup_ids(text, id->container_id, id->pod_uid);
        free(text);
    }
    return id->exe[0] || id->comm[0] ? 0 : -1;
}

int agent_process_labels(const agent_proc_ident *id, const agent_label_opts *o, agent_labels *out)
{
    char service[256], buf[300];
    agent_service_name(id->exe, id->comm, id->kthread, service, sizeof service);
    int rc = agent_labels_set(out, "service", o->service ? o->service : service);
    if (o->pid_instance && id->pid > 0) {
        snprintf(buf, sizeof buf, "%s/%d", o->hostname, (int)id->pid);
        rc |= agent_labels_set(out, "instance", buf);
    } else rc |= agent_labels_set(out, "instance", o->hostname);
    rc |= agent_labels_set(out, "node", o->hostname);
    if (id->build[0]) rc |= agent_labels_set(out, "build", id->build);
    if (id->container_id[0]) rc |= agent_labels_set(out, "container_id", id->container_id);
    if (id->pod_uid[0]) rc |= agent_labels_set(out, "pod_uid", id->pod_uid);
    if (o->extra) agent_labels_copy(out, o->extra);   /* --labels win */
    return rc ? -1 : 0;
}

/* ---- grouping ---- */

static int cmp_label(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

char *agent_labels_key(const agent_labels *l)
{
    char *const *idx[AGENT_MAX_LABELS];
    size_t len = 1;
    for (int i = 0; i < l->n; i++) {
        idx[i] = &l->name[i];
        len += strlen(l->name[i]) + strlen(l->value[i]) + 2;
    }
    qsort(idx, (size_t)l->n, sizeof idx[0], cmp_label);
    char *key = malloc(len), *p = key;
    if (!key) return NULL;
    for (int i = 0; i < l->n; i++) {
        int k = (int)(idx[i] - l->name);
        p += sprintf(p, "%s%c%s%c", l->name[k], 0x1f, l->value[k], 0x1e);
    }
    *p = 0;
    return key;
}


/* ---- labels ---- */

static int label_name_ok(const char *s)
{
    if (!*s || isdigit((unsigned char)*s)) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.') return 0;
    return 1;
}

int agent_labels_set(agent_labels *l, const char *name, const char *value)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0) {
            char *v = strdup(value);
            if (!v) return -1;
            free(l->value[i]);
            l->value[i] = v;
            return 0;
        }
    if (l->n >= AGENT_MAX_LABELS) return -1;
    l->name[l->n] = strdup(name);
    l->value[l->n] = strdup(value);
    if (!l->name[l->n] || !l->value[l->n]) {
        free(l->name[l->n]); free(l->value[l->n]);
        return -1;
    }
    l->n++;
    return 0;
}

const char *agent_labels_get(const agent_labels *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0) return l->value[i];
    return NULL;
}

int agent_labels_parse(agent_labels *l, const char *spec, char *err, size_t errlen)
{
    char *copy = strdup(spec), *save = NULL;
    if (!copy) { snprintf(err, errlen, "out of memory"); return -1; }
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "--labels: '%s' is not name=value", tok);
            free(copy); return -1;
        }
        *eq = 0;
        if (!label_name_ok(tok)) {
            snprintf(err, errlen, "--labels: bad label name '%s' (letters, digits, '_' and '.', not starting with a digit)", tok);
            free(copy); return -1;
        }
        static const char *const reserved[] = { "rate", "from", "until", "format", "unit", "locations", NULL };
        for (int i = 0; reserved[i]; i++)
            if (strcmp(tok, reserved[i]) == 0) {
                snprintf(err, errlen, "--labels: '%s' is an ingest parameter, not a label", tok);
                free(copy); return -1;
            }
        if (!eq[1]) {
            snprintf(err, errlen, "--labels: label '%s' has an empty value", tok);
            free(copy); return -1;
        }
        if (agent_labels_set(l, tok, eq + 1) < 0) {
            snprintf(err, errlen, "--labels: more than %d labels", AGENT_MAX_LABELS);
            free(copy); return -1;
        }
    }
    free(copy);
    return 0;
}

void agent_labels_free(agent_labels *l)
{
    for (int i = 0; i < l->n; i++) { free(l->name[i]); free(l->value[i]); }
    l->n = 0;
}

void agent_labels_copy(agent_labels *dst, const agent_labels *src)
{
    for (int i = 0; i < src->n; i++) agent_labels_set(dst, src->name[i], src->value[i]);
}
