/* errors.c — writing a parser's error message into the caller's buffer,
 * and the error of a read whose work was stopped. */
#include <stdarg.h>
#include <stdio.h>

#include "../storage/remote.h"
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

int query_stopped(const store_reader *r, char *err, size_t errlen)
{
    switch (store_reader_stopped(r)) {
    case STORE_STOP_PAIRS:
        query_set_err(err, errlen, "the query merges more than the %llu (stack, count) pairs one query may "
                      "(flamedb serve --max-pairs); narrow the range or the selector, or ask for a coarser step",
                      (unsigned long long)store_reader_max_pairs(r));
        return QUERY_ELIMIT;
    case STORE_STOP_GONE:
        query_set_err(err, errlen, "the client went away");
        return QUERY_EGONE;
    case STORE_STOP_REMOTE:
        query_set_err(err, errlen, "%s", store_reader_error(r) ? store_reader_error(r) : "loading the data failed");
        return QUERY_EREMOTE;
    default:
        query_set_err(err, errlen, "the query ran past its time limit (flamedb serve --query-timeout); narrow the "
                      "range or the selector");
        return QUERY_ETIMEOUT;
    }
}
