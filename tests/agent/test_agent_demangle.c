/* test_agent_demangle.c — C++ and Rust names (issue 13): ingest/demangle.c
 * (libiberty's cplus_demangle, shared with the server) on known Itanium,
 * Rust legacy and Rust v0 names, names that are not mangled left alone, the
 * length bound, the cache; the agent's per-entry cache (agent_sym_name) and
 * the symbolizer with demangling on and off (--no-demangle) against a live
 * C++ program compiled here. */
#include <string.h>

#include "../unit/testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/agent.h"
#include "../../ingest/demangle.h"

#include <libiberty/demangle.h>

static void assert_demangles(const char *mangled, const char *want)
{
    char *got = demangle_name(mangled, strlen(mangled));
    if (!got) fail_msg("%s: not demangled, expected \"%s\"", mangled, want);
    if (strcmp(got, want) != 0) fail_msg("%s: expected \"%s\", got \"%s\"", mangled, want, got);
    free(got);
}

static void assert_left_alone(const char *name)
{
    char *got = demangle_name(name, strlen(name));
    if (got) fail_msg("%s: expected to be left alone, got \"%s\"", name, got);
}

static void cxx_names(void **state)
{
    (void)state;
    assert_demangles("_ZN11__sanitizer18BufferedStackTrace10UnwindFastEmmmmj",
                     "__sanitizer::BufferedStackTrace::UnwindFast(unsigned long, unsigned long, "
                     "unsigned long, unsigned long, unsigned int)");
    assert_demangles("_ZN6fuzzer6Fuzzer6RunOneEPKhmbPNS_9InputInfoEbPb",
                     "fuzzer::Fuzzer::RunOne(unsigned char const*, unsigned long, bool, "
                     "fuzzer::InputInfo*, bool, bool*)");
    assert_demangles("_ZNSt6vectorIiSaIiEE9push_backERKi",
                     "std::vector<int, std::allocator<int> >::push_back(int const&)");
    assert_demangles("_Z1fv", "f()");
    /* compiler clones keep their suffix, readable */
    assert_demangles("_ZN4demo7Spinner4spinEi.isra.0", "demo::Spinner::spin(int) [clone .isra.0]");
    assert_demangles("_ZN3foo3barEv.cold", "foo::bar() [clone .cold]");
}

static void rust_names(void **state)
{
    (void)state;
    /* legacy: the Itanium form with a hash, which is dropped */
    assert_demangles("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
    assert_demangles("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$.."
                     "$u7b$$u7b$closure$u7d$$u7d$$GT$17h0123456789abcdefE",
                     "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>");
    /* v0 (RFC 2603; libiberty since binutils 2.36) */
    assert_demangles("_RNvCs1234_7mycrate3foo", "mycrate::foo");
    assert_demangles("_RNvMsr_NtCs3ssYzQotkvD_3std4pathNtB5_7PathBuf3newCs15kBYyAo9fc_7mycrate",
                     "<std::path::PathBuf>::new");
    assert_demangles("_RINvNtCs9ltgdHTiPiY_4core3ptr13drop_in_placeNtCs1234_7mycrate3FooEB4_",
                     "core::ptr::drop_in_place::<mycrate::Foo>");
}

static void plain_names_left_alone(void **state)
{
    (void)state;
    const char *plain[] = { "main", "_start", "__libc_start_main", "spin_leaf", "do_syscall_64",
                            "LazyCompile:~foo /app/x.js:1", "[unknown]", "_Z", "_ZN", "_R",
                            "_ZZZnotmangled", "_Rubbish", "__Z1fv", "_GLOBAL__sub_I_main.cpp", "" };
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) assert_left_alone(plain[i]);
    assert_int_equal(demangle_candidate("main", 4), 0);
    assert_int_equal(demangle_candidate("_Z1fv", 5), 1);
    assert_int_equal(demangle_candidate("_RNv", 4), 1);
}

static void length_bounds(void **state)
{
    (void)state;
    /* the name is the first len bytes, not NUL-terminated */
    char *got = demangle_name("_Z1fvTRAILING", 5);
    assert_non_null(got);
    assert_string_equal(got, "f()");
    free(got);
    /* a NUL inside is not a name */
    assert_null(demangle_name("_Z1fv\0x", 7));
    assert_int_equal(demangle_candidate("_Z1fv\0x", 7), 0);
    /* libiberty refuses C++ names over 1024 bytes itself (its stack guard,
     * without DMGL_NO_RECURSE_LIMIT), but not Rust ones: a valid Rust name
     * longer than DEMANGLE_MAX_IN is left alone, where libiberty would
     * demangle it; the same structure within the bound is demangled */
    for (size_t parts = 3; parts <= 9; parts += 6) {
        char *m = malloc(parts * 993 + 32);
        assert_non_null(m);
        size_t n = (size_t)sprintf(m, "_ZN");
        for (size_t i = 0; i < parts; i++) {
            n += (size_t)sprintf(m + n, "990");
            memset(m + n, (int)('a' + i), 990);
            n += 990;
        }
        n += (size_t)sprintf(m + n, "17h0123456789abcdefE");
        got = demangle_name(m, n);
        if (parts == 3) {
            assert_true(n <= DEMANGLE_MAX_IN);
            assert_non_null(got);
            assert_int_equal(strlen(got), 3 * 990 + 2 * 2);       /* a::b::c, hash dropped */
        } else {
            assert_true(n > DEMANGLE_MAX_IN);
            assert_null(got);
            char *z = strndup(m, n);                              /* libiberty itself would */
            char *direct = cplus_demangle(z, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
            assert_non_null(direct);
            free(direct);
            free(z);
        }
        free(got);
        free(m);
    }
    /* the C++ limit: 1024 bytes demangled, 1025 not (documented, not ours) */
    char cxx[1100];
    for (size_t len = 1024; len <= 1025; len++) {
        size_t id = len - 13;                                     /* _ZN + digits + id + 3bbbEv */
        int k = sprintf(cxx, "_ZN%zu", id);
        memset(cxx + k, 'a', id);
        strcpy(cxx + k + id, "3bbbEv");
        assert_int_equal(strlen(cxx), len);
        got = demangle_name(cxx, len);
        if (len == 1024) assert_non_null(got); else assert_null(got);
        free(got);
    }
}

static void cache_remembers(void **state)
{
    (void)state;
    demangle_cache *c = demangle_cache_new();
    assert_non_null(c);
    const char *a = demangle_cached(c, "_Z1fv", 5);
    assert_non_null(a);
    assert_string_equal(a, "f()");
    assert_ptr_equal(demangle_cached(c, "_Z1fvXYZ", 5), a);      /* the same entry */
    assert_null(demangle_cached(c, "main", 4));
    assert_null(demangle_cached(c, "_ZZZnotmangled", 14));        /* a failure is remembered too */
    assert_null(demangle_cached(c, "_ZZZnotmangled", 14));
    /* enough names to grow the table several times; each answer stays right */
    char name[64], want[64];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 3000; i++) {
            int n = snprintf(name, sizeof name, "_Z%dfn%dv", i < 10 ? 3 : i < 100 ? 4 : i < 1000 ? 5 : 6, i);
            snprintf(want, sizeof want, "fn%d()", i);
            const char *got = demangle_cached(c, name, (size_t)n);
            if (!got || strcmp(got, want) != 0) fail_msg("%s: expected %s, got %s", name, want, got ? got : "NULL");
        }
    assert_ptr_equal(demangle_cached(c, "_Z1fv", 5), a);
    demangle_cache_free(c);
}

/* The agent's tables: demangled once per entry, on first use, kept. */
static void symtab_entry_cache(void **state)
{
    (void)state;
    agent_symtab t;
    agent_symtab_init(&t);
    const char *m = "_ZN11__sanitizer18BufferedStackTrace10UnwindFastEmmmmj";
    assert_int_equal(agent_symtab_add(&t, 0x1000, 0x100, m, strlen(m)), 0);
    assert_int_equal(agent_symtab_add(&t, 0x2000, 0x100, "plain_c", 7), 0);
    assert_int_equal(agent_symtab_add(&t, 0x3000, 0x100, "_RNvCs1234_7mycrate3foo", 23), 0);
    agent_symtab_sort(&t);
    agent_sym *s = &t.v[0];
    assert_int_equal(s->demangle_tried, 0);                       /* nothing at load */
    assert_null(s->demangled);
    assert_string_equal(agent_sym_name(s, 0), m);                 /* --no-demangle */
    assert_int_equal(s->demangle_tried, 0);
    const char *d = agent_sym_name(s, 1);
    assert_string_equal(d, "__sanitizer::BufferedStackTrace::UnwindFast(unsigned long, unsigned long, "
                           "unsigned long, unsigned long, unsigned int)");
    assert_int_equal(s->demangle_tried, 1);
    assert_ptr_equal(agent_sym_name(s, 1), d);                    /* cached, not demangled again */
    assert_string_equal(s->name, m);                              /* the raw name kept */
    assert_string_equal(agent_sym_name(s, 0), m);
    assert_string_equal(agent_sym_name(&t.v[1], 1), "plain_c");
    assert_ptr_equal(agent_sym_name(&t.v[1], 1), t.v[1].name);
    assert_string_equal(agent_sym_name(&t.v[2], 1), "mycrate::foo");
    agent_symtab_free(&t);                                        /* frees the demangled names (ASan) */
}

static char dir[64];
static pid_t live = -1;

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test-agent-demangle-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/prog.cc", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs("#include <cstdio>\n#include <unistd.h>\n"
          "namespace demo { struct Spinner {\n"
          "  __attribute__((noinline)) static int leaf(double x, int n) { return (int)x + n; }\n"
          "}; }\n"
          "int main() {\n"
          "  std::printf(\"%lx\\n\", (unsigned long)(void *)&demo::Spinner::leaf);\n"
          "  std::fflush(stdout);\n  for (;;) pause();\n}\n", f);
    fclose(f);
    return test_run("cd %s && g++ -g -O1 -o prog prog.cc", dir);
}

static int teardown(void **state)
{
    (void)state;
    if (live > 0) { kill(live, SIGKILL); waitpid(live, NULL, 0); }
    return test_run("rm -rf '%s'", dir);
}

static void symbolizer_on_and_off(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "%s/prog", dir);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(cmd, cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    live = pid;
    FILE *f = fdopen(fds[0], "r");
    unsigned long fn = 0;
    assert_int_equal(fscanf(f, "%lx", &fn), 1);
    fclose(f);

    agent_syms *s = agent_syms_new("/nonexistent-debug-root");
    char name[AGENT_FRAME_MAX];
    agent_syms_name(s, pid, fn + 1, 0, name, sizeof name);        /* on by default */
    assert_string_equal(name, "demo::Spinner::leaf(double, int)");
    agent_syms_set_demangle(s, 0);                                /* --no-demangle */
    agent_syms_name(s, pid, fn + 1, 0, name, sizeof name);
    assert_string_equal(name, "_ZN4demo7Spinner4leafEdi");
    agent_syms_set_demangle(s, 1);
    agent_syms_name(s, pid, fn + 2, 0, name, sizeof name);
    assert_string_equal(name, "demo::Spinner::leaf(double, int)");
    agent_syms_free(s);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    live = -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cxx_names),
        cmocka_unit_test(rust_names),
        cmocka_unit_test(plain_names_left_alone),
        cmocka_unit_test(length_bounds),
        cmocka_unit_test(cache_remembers),
        cmocka_unit_test(symtab_entry_cache),
        cmocka_unit_test(symbolizer_on_and_off),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
