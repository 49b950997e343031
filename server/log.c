/* log.c — one line per notable event on stderr, with a UTC timestamp. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "srv.h"

void srv_log(const char *fmt, ...)
{
    char line[2048], stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03ldZ flamedb: %s\n", stamp, ts.tv_nsec / 1000000, line);
}
