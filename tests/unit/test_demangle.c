/* test_demangle.c — the server's side of demangling (issue 13): frames of
 * `perf script` text that arrive mangled (perf script --no-demangle, a perf
 * without a demangler) are imported demangled, by ingest/demangle.c, the
 * function the agent uses (tested on its own, names and cache, in
 * tests/agent/test_agent_demangle.c); plain and already demangled frames
 * are left as they are. */
#include <string.h>

#include "testutil.h"

#include "../../ingest/demangle.h"
#include "../../ingest/ingest.h"

static void perf_script_frames_demangled(void **state)
{
    (void)state;
    static const char text[] =
        "fuzzer 4242/4242 100.500000: 1 cpu-clock: \n"
        "\t55d0c0de1234 _ZN11__sanitizer18BufferedStackTrace10UnwindFastEmmmmj+0x24 (/usr/bin/fuzzer)\n"
        "\t55d0c0de2345 _ZN6fuzzer6Fuzzer6RunOneEPKhmbPNS_9InputInfoEbPb+0x1f0 (/usr/bin/fuzzer)\n"
        "\t7f0000001000 _ZN4core3fmt5write17h0123456789abcdefE+0x10 (/usr/lib/librs.so)\n"
        "\t7f0000002000 _RNvCs1234_7mycrate3foo+0x8 (/usr/lib/librs.so)\n"
        "\t7f0000003000 __libc_start_main+0x80 (/usr/lib/libc.so.6)\n"
        "\n"
        /* the same names again (the cache), and a name perf demangled already */
        "fuzzer 4242/4242 100.510000: 1 cpu-clock: \n"
        "\t55d0c0de1234 _ZN11__sanitizer18BufferedStackTrace10UnwindFastEmmmmj+0x24 (/usr/bin/fuzzer)\n"
        "\t55d0c0de9999 fuzzer::Fuzzer::Loop(std::vector<int>&)+0x10 (/usr/bin/fuzzer)\n"
        "\t0 _ZZZnotmangled (/usr/bin/fuzzer)\n"
        "\n";
    ingest_perf_sample *s;
    size_t n;
    char err[256] = "";
    assert_int_equal(ingest_perf_parse(text, sizeof text - 1, &s, &n, err, sizeof err), INGEST_OK);
    assert_int_equal(n, 2);
    assert_string_equal(s[0].stack,
        "fuzzer;__libc_start_main;mycrate::foo;core::fmt::write;"
        "fuzzer::Fuzzer::RunOne(unsigned char const*, unsigned long, bool, fuzzer::InputInfo*, bool, bool*);"
        "__sanitizer::BufferedStackTrace::UnwindFast(unsigned long, unsigned long, unsigned long, "
        "unsigned long, unsigned int)");
    assert_string_equal(s[1].stack,
        "fuzzer;_ZZZnotmangled;fuzzer::Fuzzer::Loop(std::vector<int>&);"
        "__sanitizer::BufferedStackTrace::UnwindFast(unsigned long, unsigned long, unsigned long, "
        "unsigned long, unsigned int)");
    ingest_perf_free(s, n);
}

/* The library's function itself, as the server links it. */
static void demangle_name_in_the_library(void **state)
{
    (void)state;
    char *d = demangle_name("_ZN3foo3barEv", 13);
    assert_non_null(d);
    assert_string_equal(d, "foo::bar()");
    free(d);
    assert_null(demangle_name("main", 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(perf_script_frames_demangled),
        cmocka_unit_test(demangle_name_in_the_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
