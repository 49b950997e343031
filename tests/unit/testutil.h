/* testutil.h — what every cmocka unit test includes: cmocka's required
 * headers in the order it needs them, plus small helpers. */
#ifndef FLAMEDB_TESTUTIL_H
#define FLAMEDB_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

/* Runs a shell command made like printf; answers its status and prints the
 * command when it failed. */
static inline int test_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int test_run(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0) print_error("command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* Asserts that an error message contains the given fragment. */
#define assert_err_contains(err, frag)                                      \
    do {                                                                    \
        if (!strstr((err), (frag)))                                         \
            fail_msg("error \"%s\" does not contain \"%s\"", (err), (frag)); \
    } while (0)

#endif
