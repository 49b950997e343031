/* test_agent_lines.c — source lines from DWARF (agent/lines.c), against a
 * program compiled here with -O2 -g: every byte of a function maps to a
 * line of that function's source (the range found in the source text, not
 * hard-coded); code inlined from a header maps to its call site in the
 * function the symbol names, never to the header; the same without
 * .debug_aranges (clang's default: the CUs indexed by walking them); a
 * stripped binary has no
 * line table of its own and gets the same answers from its debug file; a
 * binary without -g, and a file that is not ELF, have none; answers are
 * cached per address. */
#include <string.h>

#include "../unit/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../agent/agent.h"

static char dir[64];

static const char *hot_h =
    "static inline __attribute__((always_inline)) unsigned hot_mix(unsigned x) /* HOT_BEGIN */\n"
    "{\n"
    "    unsigned acc = x;\n"
    "    for (unsigned i = 0; i < x % 64; i++)\n"
    "        acc = acc * 2654435761u ^ (acc >> 7);\n"
    "    return acc;\n"
    "} /* HOT_END */\n";

static const char *prog_c =
    "#include \"hot.h\"\n"
    "volatile unsigned sink;\n"
    "__attribute__((noinline)) unsigned outer(unsigned n) /* OUTER_BEGIN */\n"
    "{\n"
    "    unsigned s = 0;\n"
    "    for (unsigned i = 0; i < n; i++)\n"
    "        s += hot_mix(i + s); /* CALL_LINE */\n"
    "    return s;\n"
    "} /* OUTER_END */\n"
    "__attribute__((noinline)) unsigned plain(unsigned n) /* PLAIN_BEGIN */\n"
    "{\n"
    "    unsigned s = 1;\n"
    "    for (unsigned i = 0; i < n; i++)\n"
    "        s = s * 31 + (s >> 3) + i;\n"
    "    return s;\n"
    "} /* PLAIN_END */\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    (void)argv;\n"
    "    sink = outer((unsigned)argc * 1000) + plain((unsigned)argc);\n"
    "    return 0;\n"
    "}\n";

/* The line (from 1) of the first line of src containing marker. */
static unsigned line_of(const char *src, const char *marker)
{
    const char *at = strstr(src, marker);
    assert_non_null(at);
    unsigned n = 1;
    for (const char *p = src; p < at; p++) n += *p == '\n';
    return n;
}

static int write_file(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test-agent-lines-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    if (write_file("hot.h", hot_h) || write_file("prog.c", prog_c)) return -1;
    /* non-PIE: symbol values are the addresses */
    if (test_run("cd %s && cc -O2 -g -fno-pie -no-pie -o prog prog.c", dir)) return -1;
    if (test_run("cd %s && cc -O2 -fno-pie -no-pie -o nodebug prog.c", dir)) return -1;
    if (test_run("cd %s && objcopy --remove-section=.debug_aranges prog noaranges", dir)) return -1;
    if (test_run("cd %s && cp prog stripped && objcopy --only-keep-debug stripped stripped.debug && "
            "strip --strip-all stripped && objcopy --add-gnu-debuglink=stripped.debug stripped", dir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return test_run("rm -rf '%s'", dir);
}

/* The address and size of a function in prog's symbol table. */
static void func(const char *name, uint64_t *addr, uint64_t *size)
{
    char path[128], err[256];
    agent_symtab t;
    agent_symtab_init(&t);
    snprintf(path, sizeof path, "%s/prog", dir);
    assert_int_equal(agent_elf_symtab(path, NULL, &t, err, sizeof err), 0);
    *addr = 0;
    for (size_t i = 0; i < t.n; i++)
        if (strcmp(t.v[i].name, name) == 0) { *addr = t.v[i].addr; *size = t.v[i].size; }
    agent_symtab_free(&t);
    assert_true(*addr != 0 && *size > 0);
}

static agent_lines *open_lines(const char *name, const char *debug)
{
    char path[128], dbg[128], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (debug) snprintf(dbg, sizeof dbg, "%s/%s", dir, debug);
    agent_lines *l = NULL;
    int rc = agent_lines_open(path, debug ? dbg : NULL, &l, err, sizeof err);
    if (rc != 0) fail_msg("agent_lines_open %s: %s", path, err);
    assert_non_null(l);
    return l;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Every byte of function fn maps to prog.c within [first, last]; answers
 * the number of distinct lines seen, and whether `want` was one of them. */
static unsigned check_range(agent_lines *l, const char *fn, unsigned first, unsigned last,
                            unsigned want, int *seen_want)
{
    uint64_t addr, size;
    func(fn, &addr, &size);
    unsigned char seen[256] = { 0 };
    unsigned distinct = 0;
    *seen_want = 0;
    for (uint64_t a = addr; a < addr + size; a++) {
        const char *file = NULL;
        unsigned line = 0;
        if (agent_lines_find(l, a, &file, &line) != 0)
            fail_msg("%s+0x%llx: no line", fn, (unsigned long long)(a - addr));
        if (!ends_with(file, "/prog.c"))
            fail_msg("%s+0x%llx: file %s, expected .../prog.c (the header's lines belong to "
                     "the inlined function, not to %s)", fn, (unsigned long long)(a - addr), file, fn);
        if (line < first || line > last)
            fail_msg("%s+0x%llx: line %u outside %s's source, lines %u-%u", fn,
                     (unsigned long long)(a - addr), line, fn, first, last);
        if (line < sizeof seen && !seen[line]) { seen[line] = 1; distinct++; }
        if (line == want) *seen_want = 1;
    }
    return distinct;
}

/* outer holds inlined code: its lines are its call site's; main lives in
 * .text.startup (a CU with DW_AT_ranges, not low/high pc). */
static void check_outer_and_main(agent_lines *l)
{
    int seen;
    check_range(l, "outer", line_of(prog_c, "OUTER_BEGIN"), line_of(prog_c, "OUTER_END"),
                line_of(prog_c, "CALL_LINE"), &seen);
    assert_true(seen);                 /* the inlined loop: its call site */
    check_range(l, "main", line_of(prog_c, "int main"), line_of(prog_c, "return 0") + 1,
                0, &seen);
}

static void check_binary(const char *name)
{
    agent_lines *l = open_lines(name, NULL);
    int seen;
    unsigned n = check_range(l, "plain", line_of(prog_c, "PLAIN_BEGIN"), line_of(prog_c, "PLAIN_END"),
                             line_of(prog_c, "s = s * 31"), &seen);
    assert_true(n >= 2);               /* a line table, not one line per function */
    assert_true(seen);                 /* the loop's body has its own line */
    check_outer_and_main(l);
    agent_lines_free(l);
}

static void lines_inside_their_function(void **state)
{
    (void)state;
    check_binary("prog");
}

static void without_aranges(void **state)
{
    (void)state;
    assert_int_equal(test_run("readelf -S %s/prog | grep -q debug_aranges && "
                         "! readelf -S %s/noaranges | grep -q debug_aranges", dir, dir), 0);
    check_binary("noaranges");
}

static void inlined_code_at_its_call_site(void **state)
{
    (void)state;
    /* hot_mix is inlined: no symbol of its own (else this proves nothing) */
    char path[128], err[256];
    agent_symtab t;
    agent_symtab_init(&t);
    snprintf(path, sizeof path, "%s/prog", dir);
    assert_int_equal(agent_elf_symtab(path, NULL, &t, err, sizeof err), 0);
    for (size_t i = 0; i < t.n; i++) assert_string_not_equal(t.v[i].name, "hot_mix");
    agent_symtab_free(&t);

    agent_lines *l = open_lines("prog", NULL);
    check_outer_and_main(l);
    agent_lines_free(l);
}

static void debug_file(void **state)
{
    (void)state;
    char path[128], err[512];
    agent_lines *l = NULL;
    /* stripped: no line table of its own */
    snprintf(path, sizeof path, "%s/stripped", dir);
    assert_int_equal(agent_lines_open(path, NULL, &l, err, sizeof err), -1);
    assert_null(l);
    assert_err_contains(err, "stripped: no DWARF line table");
    /* with its debug file: the same answers as the unstripped binary */
    agent_lines *a = open_lines("prog", NULL), *b = open_lines("stripped", "stripped.debug");
    uint64_t addr, size;
    func("outer", &addr, &size);
    for (uint64_t x = addr; x < addr + size; x++) {
        const char *fa, *fb;
        unsigned la, lb;
        assert_int_equal(agent_lines_find(a, x, &fa, &la), 0);
        assert_int_equal(agent_lines_find(b, x, &fb, &lb), 0);
        assert_string_equal(fa, fb);
        assert_int_equal(la, lb);
    }
    agent_lines_free(a);
    agent_lines_free(b);
}

static void no_line_tables(void **state)
{
    (void)state;
    char path[128], err[512];
    agent_lines *l = NULL;
    snprintf(path, sizeof path, "%s/nodebug", dir);
    assert_int_equal(agent_lines_open(path, NULL, &l, err, sizeof err), -1);
    assert_err_contains(err, "nodebug: no DWARF line table");
    assert_int_equal(agent_lines_open("/proc/self/status", NULL, &l, err, sizeof err), -1);
    assert_int_equal(agent_lines_open("/nonexistent", "/nonexistent.debug", &l, err, sizeof err), -1);
    assert_err_contains(err, "(nor in /nonexistent.debug)");
    assert_null(l);
}

static void cached_per_address(void **state)
{
    (void)state;
    agent_lines *l = open_lines("prog", NULL);
    uint64_t addr, size;
    func("plain", &addr, &size);
    const char *f1, *f2;
    unsigned l1, l2;
    assert_int_equal(agent_lines_cached(l), 0);
    assert_int_equal(agent_lines_find(l, addr + 1, &f1, &l1), 0);
    assert_int_equal(agent_lines_cached(l), 1);
    assert_int_equal(agent_lines_find(l, addr + 1, &f2, &l2), 0);
    assert_int_equal(agent_lines_cached(l), 1);              /* a hit */
    assert_ptr_equal(f1, f2);
    assert_int_equal(l1, l2);
    /* outside every CU: unknown, and remembered as such */
    assert_int_equal(agent_lines_find(l, 0x10, &f2, &l2), -1);
    assert_int_equal(agent_lines_find(l, 0x10, &f2, &l2), -1);
    assert_int_equal(agent_lines_cached(l), 2);
    /* many addresses: the table grows, answers stay */
    for (uint64_t a = addr; a < addr + size; a++) assert_int_equal(agent_lines_find(l, a, &f2, &l2), 0);
    assert_int_equal(agent_lines_cached(l), size + 1);
    assert_int_equal(agent_lines_find(l, addr + 1, &f2, &l2), 0);
    assert_ptr_equal(f1, f2);
    assert_int_equal(l1, l2);
    assert_int_equal(agent_lines_find(NULL, addr, &f2, &l2), -1);
    agent_lines_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lines_inside_their_function),
        cmocka_unit_test(inlined_code_at_its_call_site),
        cmocka_unit_test(without_aranges),
        cmocka_unit_test(debug_file),
        cmocka_unit_test(no_line_tables),
        cmocka_unit_test(cached_per_address),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
