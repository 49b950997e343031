/* spool.c — profiles kept on disk while the server is unreachable.
 *
 * One file per profile in the spool directory, named
 * "<20-digit sequence>.prof": the URL on the first line, then the folded
 * body.  Replay lists the directory, sorts by name (= sequence = the order
 * the profiles were produced) and sends oldest first, deleting each file
 * once the server accepted it; it stops at the first failure so that order
 * is kept.  The spool is bounded by max_bytes: before a profile is written,
 * the oldest files are deleted until it fits, and each one deleted is
 * counted in `dropped` (the caller logs it).  The sequence resumes after
 * the largest name found, so a restarted agent replays what an earlier one
 * left behind.
 */
#include "spool.h"
#include "readfile.h"

#include <stdio.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct { char name[32]; uint64_t size; } spool_file;

static int spool_name_ok(const char *n)
{
    size_t l = strlen(n);
    if (l != 25 || strcmp(n + 20, ".prof") != 0) return 0;
    for (int i = 0; i < 20; i++) if (n[i] < '0' || n[i] > '9') return 0;
    return 1;
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const spool_file *)a)->name, ((const spool_file *)b)->name);
}

/* The spool's files, oldest first. */
static spool_file *spool_list(const agent_spool *s, size_t *n, uint64_t *bytes)
{
    *n = 0;
    if (bytes) *bytes = 0;
    DIR *d = opendir(s->dir);
    if (!d) return NULL;
    size_t cap = 16;
    spool_file *v = malloc(cap * sizeof *v);
    struct dirent *e;
    char path[4096];
    while (v && (e = readdir(d))) {
        if (!spool_name_ok(e->d_name)) continue;
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        if (stat(path, &st) < 0) continue;
        if (*n == cap) {
            spool_file *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) break;
            v = nv; cap *= 2;
        }
        memcpy(v[*n].name, e->d_name, 26);         /* 25 characters, checked */
        v[*n].size = (uint64_t)st.st_size;
        if (bytes) *bytes += (uint64_t)st.st_size;
        (*n)++;
    }
    closedir(d);
    if (v) qsort(v, *n, sizeof *v, file_cmp);
    return v;
}

int agent_spool_open(agent_spool *s, const char *dir, uint64_t max_bytes,
                     char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "--spool %s: %s", dir, strerror(errno));
        return -1;
    }
    if (access(dir, W_OK | X_OK) < 0) {
        snprintf(err, errlen, "--spool %s: %s", dir, strerror(errno));
        return -1;
    }
    s->dir = strdup(dir);
    s->max_bytes = max_bytes;
    size_t n;
    spool_file *v = spool_list(s, &n, NULL);
    if (v && n > 0) s->seq = strtoull(v[n - 1].name, NULL, 10) + 1;
    free(v);
    return 0;
}

void agent_spool_close(agent_spool *s)
{
    free(s->dir);
    s->dir = NULL;
}

size_t agent_spool_count(const agent_spool *s)
{
    size_t n;
    free(spool_list(s, &n, NULL));
    return n;
}

int agent_spool_put(agent_spool *s, const char *url, const void *body,
                    size_t len, char *err, size_t errlen)
{
    uint64_t need = strlen(url) + 1 + len, bytes;
    if (need > s->max_bytes) {
        s->dropped++;
        s->dropped_bytes += len;
        snprintf(err, errlen, "profile of %zu bytes is larger than the whole spool (%llu bytes): dropped",
                 len, (unsigned long long)s->max_bytes);
        return -1;
    }
    size_t n;
    spool_file *v = spool_list(s, &n, &bytes);
    char path[4096];
    for (size_t i = 0; v && i < n && bytes + need > s->max_bytes; i++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, v[i].name);
        if (unlink(path) == 0) {
            bytes -= v[i].size;
            s->dropped++;
            s->dropped_bytes += v[i].size;
        }
    }
    free(v);
    char tmp[4096];
    snprintf(path, sizeof path, "%s/%020llu.prof", s->dir, (unsigned long long)s->seq);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%020llu", s->dir, (unsigned long long)s->seq);
    FILE *f = fopen(tmp, "wb");
    if (!f) { snprintf(err, errlen, "spool %s: %s", tmp, strerror(errno)); return -1; }
    int ok = fprintf(f, "%s\n", url) > 0 && fwrite(body, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) < 0) {
        snprintf(err, errlen, "spool %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    s->seq++;
    return 0;
}

size_t agent_spool_replay(agent_spool *s,
                          int (*send)(const char *url, const void *body,
                                      size_t len, void *arg),
                          void *arg)
{
    size_t n, sent = 0;
    spool_file *v = spool_list(s, &n, NULL);
    char path[4096];
    for (size_t i = 0; v && i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, v[i].name);
        char *text; size_t len;
        if (agent_read_file(path, &text, &len) < 0) continue;
        char *nl = memchr(text, '\n', len);
        if (!nl) { free(text); unlink(path); continue; }   /* corrupt: discard */
        *nl = 0;
        int rc = send(text, nl + 1, len - (size_t)(nl + 1 - text), arg);
        free(text);
        if (rc < 0) break;
        unlink(path);
        sent++;
    }
    free(v);
    return sent;
}
