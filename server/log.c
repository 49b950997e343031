/* log.c — one line per notable event on stderr, with a UTC timestamp.
 *
 * No client may make the log grow without bound.  Lines are counted per
 * format string (its address: srv_log's and libmicrohttpd's formats are
 * literals): each may log LOG_BURST lines in a window of LOG_WINDOW_S
 * seconds (libmicrohttpd's formats LOG_BURST_MHD); the lines past that are dropped and counted, and once the window
 * has ended one line says how many were dropped and gives the format.  The
 * issue it answers (12): with 256 file descriptors, 200 slow connections
 * made libmicrohttpd log "Error accepting connection: Too many open files"
 * and "Hit process or system resource limit at FIRST connection" in a busy
 * loop, 12.3 M lines (2.7 GB) in 30 s.  The connection limit now stays
 * below the file limit (main.c), so that loop no longer starts; this is
 * what keeps any other repeated line, per connection or per request, from
 * doing the same. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "srv.h"

#define LOG_BURST 50     /* our own lines: also one per --cors-origin at start */
#define LOG_BURST_MHD 10 /* libmicrohttpd's: mostly one per connection that failed */
#define LOG_WINDOW_S 60
#define LOG_KEYS 128

typedef struct {
    const void *key;      /* the format string */
    int64_t window_start; /* monotonic seconds */
    unsigned lines;       /* logged in this window */
    uint64_t dropped;     /* dropped in this window */
    unsigned burst;       /* lines allowed in a window */
    char what[96];        /* the format, for the summary */
} log_key;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static log_key keys[LOG_KEYS];

static int64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

static void emit(const char *prefix, const char *line)
{
    char stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ flamedb: %s%s\n", stamp, ts.tv_nsec / 1000000, prefix, line);
}

/* Called with log_lock held: the summary of a window. */
static void summarize(log_key *k, int64_t now)
{
    if (!k->dropped) return;
    char line[256];
    snprintf(line, sizeof line, "%llu more lines like \"%s\" were dropped in the last %lld s "
             "(at most %u lines of one kind are logged in %d s)",
             (unsigned long long)k->dropped, k->what, (long long)(now - k->window_start), k->burst, LOG_WINDOW_S);
    emit("", line);
    k->dropped = 0;
}

/* Whether a line of this format may be logged now. */
static int admit(const void *key, unsigned burst, const char *prefix, const char *fmt)
{
    int64_t now = mono_s();
    log_key *k = NULL, *free_slot = NULL, *oldest = NULL;
    for (int i = 0; i < LOG_KEYS; i++) {
        if (keys[i].key == key) {
            k = &keys[i];
            break;
        }
        if (!keys[i].key) {
            if (!free_slot) free_slot = &keys[i];
        } else if (!oldest || keys[i].window_start < oldest->window_start) {
            oldest = &keys[i];
        }
    }
    if (!k) { /* a new format: a free slot, or the one whose window began first */
        k = free_slot ? free_slot : oldest;
        summarize(k, now);
        memset(k, 0, sizeof *k);
        k->key = key;
        k->window_start = now;
        k->burst = burst;
        snprintf(k->what, sizeof k->what, "%s%s", prefix, fmt);
        size_t n = strlen(k->what);
        while (n && k->what[n - 1] == '\n') k->what[--n] = '\0';
    }
    if (now - k->window_start >= LOG_WINDOW_S) {
        summarize(k, now);
        k->window_start = now;
        k->lines = 0;
    }
    if (k->lines >= k->burst) {
        k->dropped++;
        return 0;
    }
    k->lines++;
    return 1;
}

static void vlog(unsigned burst, const char *prefix, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    pthread_mutex_lock(&log_lock);
    if (admit(fmt, burst, prefix, fmt)) emit(prefix, line);
    pthread_mutex_unlock(&log_lock);
}

void srv_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(LOG_BURST, "", fmt, ap);
    va_end(ap);
}

void srv_log_mhd(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    vlog(LOG_BURST_MHD, "libmicrohttpd: ", fmt, ap);
}

void srv_log_flush(int all)
{
    int64_t now = mono_s();
    pthread_mutex_lock(&log_lock);
    for (int i = 0; i < LOG_KEYS; i++) {
        if (!keys[i].key || !keys[i].dropped || (!all && now - keys[i].window_start < LOG_WINDOW_S)) continue;
        summarize(&keys[i], now);
        keys[i].window_start = now;
        keys[i].lines = 0;
    }
    pthread_mutex_unlock(&log_lock);
}
