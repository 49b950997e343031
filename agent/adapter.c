/* adapter.c — language adapters (Atys's language-agnostic mechanism).
 *
 * Interpreted runtimes are better profiled by their own tools, which know
 * the interpreter's frames.  Detection, from /proc/PID/exe and maps:
 *   - Python: the executable's basename starts with "python" (python3,
 *     python3.11, ...), and `py-spy` is on PATH: run
 *       py-spy record --pid PID --duration S --rate HZ --format raw --output FILE --nonblocking
 *     (raw = collapsed stacks), label spy=py-spy.
 *   - JVM: the executable's basename is "java", or libjvm.so is mapped, and
 *     async-profiler's `asprof` is on PATH: run
 *       asprof -d S -i NANOS -e cpu -o collapsed -f FILE PID
 *     label spy=async-profiler.
 * Otherwise the process is sampled natively (JIT code through perf maps).
 * The tool runs for one interval in the background; its collapsed output
 * ("frame;frame;frame count" lines) is added to the interval's profile.
 */
#include "adapter.h"
#include "fold.h"
#include "proc.h"
#include "readfile.h"

#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int agent_which(const char *name, char *buf, size_t cap)
{
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        size_t len = strcspn(p, ":");
        snprintf(buf, cap, "%.*s/%s", (int)len, len ? p : ".", name);
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) return 1;
        p += len;
        if (*p == ':') p++;
    }
    return 0;
}

static int maps_has(pid_t pid, const char *needle)
{
    char path[64], *text;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    if (agent_read_file(path, &text, NULL) < 0) return 0;
    int found = strstr(text, needle) != NULL;
    free(text);
    return found;
}

agent_adapter_kind agent_adapter_detect(pid_t pid)
{
    char exe[4096], tool[4096];
    if (agent_proc_exe(pid, exe, sizeof exe) < 0) return AGENT_ADAPTER_NONE;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strncmp(base, "python", 6) == 0 && agent_which("py-spy", tool, sizeof tool))
        return AGENT_ADAPTER_PYSPY;
    if ((strcmp(base, "java") == 0 || maps_has(pid, "/libjvm.so")) &&
        agent_which("asprof", tool, sizeof tool))
        return AGENT_ADAPTER_ASPROF;
    return AGENT_ADAPTER_NONE;
}

const char *agent_adapter_spy(agent_adapter_kind k)
{
    return k == AGENT_ADAPTER_PYSPY ? "py-spy" : k == AGENT_ADAPTER_ASPROF ? "async-profiler" : "";
}

struct agent_adapter_run {
    pid_t child;
    int interrupted;
    char out[64];
    agent_adapter_kind kind;
};

agent_adapter_run *agent_adapter_start(agent_adapter_kind k, pid_t pid,
                                       int seconds, int hz,
                                       char *err, size_t errlen)
{
    agent_adapter_run *r = calloc(1, sizeof *r);
    if (!r) { snprintf(err, errlen, "out of memory"); return NULL; }
    r->kind = k;
    snprintf(r->out, sizeof r->out, "/tmp/flamedb-agent-%d-XXXXXX", (int)pid);
    int fd = mkstemp(r->out);
    if (fd < 0) { snprintf(err, errlen, "mkstemp: %s", strerror(errno)); free(r); return NULL; }
    close(fd);
    char pidbuf[16], secbuf[16], ratebuf[32];
    snprintf(pidbuf, sizeof pidbuf, "%d", (int)pid);
    snprintf(secbuf, sizeof secbuf, "%d", seconds > 0 ? seconds : 1);
    if (k == AGENT_ADAPTER_PYSPY) snprintf(ratebuf, sizeof ratebuf, "%d", hz > 0 ? hz : 99);
    else snprintf(ratebuf, sizeof ratebuf, "%lld", (long long)(1e9 / (hz > 0 ? hz : 99)));
    pid_t c = fork();
    if (c < 0) { snprintf(err, errlen, "fork: %s", strerror(errno)); unlink(r->out); free(r); return NULL; }
    if (c == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) { dup2(null, 0); dup2(null, 1); }
        if (k == AGENT_ADAPTER_PYSPY)
            execlp("py-spy", "py-spy", "record", "--pid", pidbuf, "--duration", secbuf,
                   "--rate", ratebuf, "--format", "raw", "--output", r->out,
                   "--nonblocking", (char *)NULL);
        else
            execlp("asprof", "asprof", "-d", secbuf, "-i", ratebuf, "-e", "cpu",
                   "-o", "collapsed", "-f", r->out, pidbuf, (char *)NULL);
        _exit(127);
    }
    r->child = c;
    return r;
}

void agent_adapter_interrupt(agent_adapter_run *r)
{
    if (r && r->child > 0 && kill(r->child, SIGINT) == 0) r->interrupted = 1;
}

size_t agent_collapsed_parse(const char *text, agent_fold *f)
{
    size_t used = 0;
    const char *line = text;
    char *buf = NULL;
    size_t bufcap = 0;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ')) len--;
        const char *sp = len ? memrchr(line, ' ', len) : NULL;
        if (sp && sp > line) {
            char *end;
            unsigned long long n = strtoull(sp + 1, &end, 10);
            if (end == line + len && n > 0) {
                size_t sl = (size_t)(sp - line);
                if (sl + 1 > bufcap) {
                    char *nb = realloc(buf, sl + 1);
                    if (!nb) break;
                    buf = nb; bufcap = sl + 1;
                }
                memcpy(buf, line, sl);
                buf[sl] = 0;
                /* the tools' frames are names: a 0x1F byte would read as
                 * a location (agent.h, frames with lines) */
                for (char *c = buf; (c = memchr(c, 0x1f, (size_t)(buf + sl - c))); c++) *c = ' ';
                agent_fold_add(f, buf, n);
                used++;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    free(buf);
    return used;
}

int agent_adapter_finish(agent_adapter_run *r, agent_fold *f,
                         char *err, size_t errlen)
{
    int status = 0, rc = 0;
    if (r->interrupted) {            /* 2 s to write its output, then killed */
        int i = 0;
        while (waitpid(r->child, &status, WNOHANG) == 0 && i++ < 20) usleep(100000);
        if (i > 20) {
            kill(r->child, SIGKILL);
            while (waitpid(r->child, &status, 0) < 0 && errno == EINTR) {}
        }
    } else {
        while (waitpid(r->child, &status, 0) < 0 && errno == EINTR) {}
    }
    char *text;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "%s exited with status %d", agent_adapter_spy(r->kind),
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        rc = -1;
    }
    if (agent_read_file(r->out, &text, NULL) == 0) {
        size_t n = agent_collapsed_parse(text, f);
        free(text);
        if (n > 0) rc = 0;
    }
    unlink(r->out);
    free(r);
    return rc;
}
