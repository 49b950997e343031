/* errors.c — writing a parser's error message into the caller's buffer. */
#include <stdarg.h>
#include <stdio.h>

#include "query_internal.h"

void query_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    err[errlen - 1] = '\0';
}
