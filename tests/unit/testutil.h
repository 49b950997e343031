/* testutil.h — what every cmocka unit test includes: cmocka's required
 * headers in the order it needs them, plus small helpers. */
#ifndef FLAMEDB_TESTUTIL_H
#define FLAMEDB_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Asserts that an error message contains the given fragment. */
#define assert_err_contains(err, frag)                                      \
    do {                                                                    \
        if (!strstr((err), (frag)))                                         \
            fail_msg("error \"%s\" does not contain \"%s\"", (err), (frag)); \
    } while (0)

#endif
