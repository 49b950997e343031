/* server.h — the real flamedb server as a child process, and what /proc says
 * about it, for the benchmarks that measure it over HTTP (bench_ingest,
 * bench_fleet).
 *
 * server_start runs `BIN serve --listen 127.0.0.1:0 --data DIR/data
 * --retention 0` on a fresh temporary directory DIR (gen_tempdir(tag)), with
 * stderr to DIR/server.log, and takes the port from the log's "listening on
 * http://127.0.0.1:PORT" line; the child gets SIGTERM when the benchmark
 * dies.  server_stop sends SIGTERM (the server commits and exits 0), answers
 * the allocated bytes of the LMDB files (*.mdb) under DIR/data whatever the
 * layout, and removes DIR.  Messages start with the benchmark's name (who).
 * on_reply keeps the start of an answer (a libcurl write callback).
 *
 * The /proc readers: CPU seconds of the server and of each of its threads
 * by name (proc_task_cpu; each benchmark groups the threads its own way),
 * RSS and its high-water mark, open files; the whole machine's busy CPU
 * (/proc/stat), and this process's and this thread's CPU.
 *
 * Header-only (static functions), like gen.h, so that each bench_*.c stays
 * one translation unit. */
#ifndef FLAMEDB_BENCH_SERVER_H
#define FLAMEDB_BENCH_SERVER_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"

/* ---- the server ------------------------------------------------------------ */

typedef struct {
    pid_t pid;
    int port;
    char *dir;
    char log[4200];
    const char *who;            /* the benchmark's name, for messages */
} server;

static inline void server_dump_log(const server *s)
{
    FILE *f = fopen(s->log, "r");
    if (!f) return;
    char line[1024];
    fprintf(stderr, "--- server log %s:\n", s->log);
    while (fgets(line, sizeof line, f)) fputs(line, stderr);
    fclose(f);
}

/* Starts BIN serve on a fresh directory named after tag (with --writers
 * $BENCH_WRITERS when set); 0 once it listens
 * (s->port), -1 when it exited first or printed no port within 10 s. */
static inline int server_start(server *s, const char *bin, const char *who, const char *tag)
{
    memset(s, 0, sizeof *s);
    s->who = who;
    s->dir = gen_tempdir(tag);
    char data[4200];
    snprintf(data, sizeof data, "%s/data", s->dir);
    snprintf(s->log, sizeof s->log, "%s/server.log", s->dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0644), nul = open("/dev/null", O_RDWR);
        if (fd < 0 || nul < 0) _exit(127);
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(fd, 2);
        /* BENCH_WRITERS=N: serve --writers N (default: the server's) */
        const char *w = getenv("BENCH_WRITERS");
        char *argv[] = { (char *)bin, "serve", "--listen", "127.0.0.1:0", "--data", data, "--retention", "0",
                         w ? "--writers" : NULL, (char *)w, NULL };
        execv(bin, argv);
        fprintf(stderr, "cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    s->pid = pid;
    for (int i = 0; i < 1000; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "%s: the server exited before listening\n", who);
            server_dump_log(s);
            s->pid = 0;
            return -1;
        }
        FILE *f = fopen(s->log, "r");
        if (f) {
            char line[1024];
            const char *key = "listening on http://127.0.0.1:";
            while (fgets(line, sizeof line, f)) {
                const char *m = strstr(line, key);
                if (m) s->port = atoi(m + strlen(key));
            }
            fclose(f);
        }
        if (s->port > 0) return 0;
        usleep(10000);
    }
    fprintf(stderr, "%s: no \"listening on\" line from the server in 10 s\n", who);
    server_dump_log(s);
    return -1;
}

/* Allocated bytes of the LMDB files (*.mdb) under a directory, whatever the
 * layout: flamedb-4's data.mdb, or a catalog and one file per partition. */
static uint64_t server_mdb_bytes_sum;

static inline int server_add_mdb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    size_t n = strlen(path);
    if (flag == FTW_F && n > 4 && !strcmp(path + n - 4, ".mdb")) server_mdb_bytes_sum += (uint64_t)sb->st_blocks * 512;
    return 0;
}

/* Stops the server (SIGTERM: it commits and exits 0), answers the allocated
 * bytes of its LMDB files, and the log's line count and whether it exited
 * cleanly where asked (clean, log_lines may be NULL); removes the directory. */
static inline uint64_t server_stop(server *s, int *clean, int *log_lines)
{
    uint64_t bytes = 0;
    int ok = 1, lines = 0;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        int status;
        waitpid(s->pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "%s: the server did not exit cleanly (status %#x)\n", s->who, status);
            server_dump_log(s);
            ok = 0;
        }
    }
    FILE *f = log_lines ? fopen(s->log, "r") : NULL;
    if (f) {
        int c;
        while ((c = fgetc(f)) != EOF) lines += c == '\n';
        fclose(f);
    }
    if (clean) *clean = ok;
    if (log_lines) *log_lines = lines;
    char path[4300];
    snprintf(path, sizeof path, "%s/data", s->dir);
    server_mdb_bytes_sum = 0;
    nftw(path, server_add_mdb, 16, FTW_PHYS);
    bytes = server_mdb_bytes_sum;
    gen_rm_rf(s->dir);
    free(s->dir);
    s->dir = NULL;
    return bytes;
}

/* The start of an answer, NUL-terminated, the rest dropped: a libcurl
 * CURLOPT_WRITEFUNCTION for CURLOPT_WRITEDATA a reply (zeroed first). */
typedef struct { char buf[512]; size_t len; } reply;

static inline size_t on_reply(char *data, size_t size, size_t nmemb, void *arg)
{
    reply *r = arg;
    size_t n = size * nmemb, room = sizeof r->buf - 1 - r->len;
    memcpy(r->buf + r->len, data, n < room ? n : room);
    r->len += n < room ? n : room;
    r->buf[r->len] = '\0';
    return n;
}

/* ---- /proc ------------------------------------------------------------------ */

/* utime + stime of a /proc stat file in seconds, and its comm. */
static inline double stat_cpu(const char *path, char *comm, size_t commlen)
{
    char buf[2048];
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close || close < open) return 0;
    if (comm) snprintf(comm, commlen, "%.*s", (int)(close - open - 1), open + 1);
    unsigned long long ut = 0, st = 0;
    /* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* One thread of a process: its id, its name (comm) and CPU seconds. */
typedef void (*proc_task_fn)(void *arg, long tid, const char *comm, double cpu);

/* The CPU seconds of process pid (all its threads); each thread is also
 * handed to fn, from /proc/PID/task. */
static inline double proc_task_cpu(pid_t pid, proc_task_fn fn, void *arg)
{
    char path[128], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    double total = stat_cpu(path, NULL, 0);
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return total;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/%d/task/%.20s/stat", (int)pid, e->d_name);
        double t = stat_cpu(path, comm, sizeof comm);
        fn(arg, atol(e->d_name), comm, t);
    }
    closedir(d);
    return total;
}

/* RssAnon, RssFile, RssShmem, VmHWM in kB from /proc/PID/status. */
typedef struct { uint64_t anon, file, shmem, hwm; } server_rss;

static inline server_rss proc_rss(pid_t pid)
{
    server_rss r = { 0 };
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return r;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "RssAnon: %llu", &v) == 1) r.anon = v;
        else if (sscanf(line, "RssFile: %llu", &v) == 1) r.file = v;
        else if (sscanf(line, "RssShmem: %llu", &v) == 1) r.shmem = v;
        else if (sscanf(line, "VmHWM: %llu", &v) == 1) r.hwm = v;
    }
    fclose(f);
    return r;
}

/* Open files of a process, from /proc/PID/fd. */
static inline int proc_fds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* CPU seconds of the whole machine from /proc/stat, to tell what the rest of
 * it took meanwhile: tasks (user, nice, system: every process and kernel
 * thread), interrupts (irq, softirq) and steal (the hypervisor's); idle and
 * iowait are left out. */
typedef struct { double tasks, irq, steal; } machine_cpu;

static inline machine_cpu machine_busy(void)
{
    machine_cpu m = { 0, 0, 0 };
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return m;
    unsigned long long v[8] = { 0 };
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]);
    fclose(f);
    if (n < 8) return m;
    /* user nice system idle iowait irq softirq steal (guest is in user) */
    double hz = (double)sysconf(_SC_CLK_TCK);
    m.tasks = (double)(v[0] + v[1] + v[2]) / hz;
    m.irq = (double)(v[5] + v[6]) / hz;
    m.steal = (double)v[7] / hz;
    return m;
}

/* CPU seconds (user + system) of this process, all threads. */
static inline double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* CPU seconds of the calling thread. */
static inline double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
