/* test_agent_symbols.c — symbolization against real binaries compiled here:
 * /proc/PID/maps parsing, kallsyms and perf-map parsing, the
 * "module+0xOFFSET" fallback, GNU build-ids compared with readelf -n, and
 * live processes: a PIE and a non-PIE executable, a shared library, a
 * stripped binary with its symbols in a .gnu_debuglink file, JIT code in
 * anonymous memory named by /tmp/perf-PID.map, and a process that has
 * exited (resolved from the snapshot kept of its maps).  Frames with lines
 * (agent_syms_frame): the file and line of the symbol's code, the binary's
 * path and build-id, for the executable, the library and the stripped
 * binary through its debug file; names alone without line tables, for JIT,
 * unknown and kernel frames, and when lines are not asked for. */
#include <string.h>

#include "../unit/testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/agent.h"
#include "../../storage/frame.h"

static char dir[64];
static pid_t live = -1;          /* the program under test, killed even when a test fails */

static const char *prog_src =
    "#include <stdio.h>\n#include <string.h>\n#include <sys/mman.h>\n#include <unistd.h>\n"
    "extern void *lib_addr(void);\n"
    "__attribute__((noinline)) int target_fn(int x) { return x * 3 + 1; }\n"
    "int main(void) {\n"
    "  unsigned char *jit = mmap(0, 4096, PROT_READ|PROT_WRITE|PROT_EXEC, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);\n"
    "  memset(jit, 0xc3, 4096);\n"
    "  printf(\"%%lx %%lx %%lx\\n\", (unsigned long)&target_fn, (unsigned long)lib_addr(), (unsigned long)jit);\n"
    "  fflush(stdout);\n  for (;;) pause();\n}\n";

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test-agent-syms-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/prog.c", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, prog_src, 0);
    fclose(f);
    snprintf(path, sizeof path, "%s/lib.c", dir);
    f = fopen(path, "w");
    if (!f) return -1;
    /* a static function: its address is its own, not a PLT stub's */
    fprintf(f, "__attribute__((noinline)) static int lib_fn(int x) { return x + 7; }\n"
               "void *lib_addr(void) { return (void *)lib_fn; }\n");
    fclose(f);
    if (test_run("cd %s && cc -g -O1 -fPIC -shared -Wl,--build-id -o libt.so lib.c", dir)) return -1;
    if (test_run("cd %s && cc -g -O1 -fPIE -pie -Wl,--build-id -o pie prog.c -L. -lt -Wl,-rpath,%s", dir, dir)) return -1;
    if (test_run("cd %s && cc -g -O1 -fno-pie -no-pie -Wl,--build-id -o nopie prog.c -L. -lt -Wl,-rpath,%s", dir, dir)) return -1;
    /* stripped, its symbols in a debug file found through .gnu_debuglink */
    if (test_run("cd %s && cp pie stripped && objcopy --only-keep-debug stripped stripped.debug && "
            "strip --strip-all stripped && objcopy --add-gnu-debuglink=stripped.debug stripped", dir)) return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return test_run("rm -rf '%s'", dir);
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    live = -1;
}

static int reap(void **state)
{
    (void)state;
    if (live > 0) stop(live);
    return 0;
}

/* Starts a program; reads the addresses it prints. */
static pid_t start(const char *name, uint64_t *fn, uint64_t *lib, uint64_t *jit)
{
    char cmd[256];
    int fds[2];
    if (pipe(fds) < 0) return -1;
    snprintf(cmd, sizeof cmd, "%s/%s", dir, name);
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
    unsigned long a = 0, b = 0, c = 0;
    int n = fscanf(f, "%lx %lx %lx", &a, &b, &c);
    fclose(f);
    if (n != 3) { stop(pid); return -1; }
    *fn = a; *lib = b; *jit = c;
    return pid;
}

static void maps_parse(void **state)
{
    (void)state;
    agent_maps m;
    assert_int_equal(agent_maps_parse(
        "7f0000001000-7f0000002000 r-xp 00001000 08:01 42   /usr/lib/libc.so.6\n"
        "55550000-55551000 r--p 00000000 08:01 7 /opt/my app/bin\n"
        "7ffd0000-7ffd1000 rw-p 00000000 00:00 0                  [stack]\n"
        "7f0000005000-7f0000006000 rwxp 00000000 00:00 0 \n", &m), 0);
    assert_int_equal(m.n, 4);
    assert_true(m.v[0].start == 0x55550000);                 /* sorted */
    assert_string_equal(m.v[0].path, "/opt/my app/bin");     /* spaces kept */
    const agent_map *x = agent_maps_find(&m, 0x7f0000001234);
    assert_non_null(x);
    assert_string_equal(x->path, "/usr/lib/libc.so.6");
    assert_true(x->offset == 0x1000 && x->exec);
    assert_null(agent_maps_find(&m, 0x7f0000002000));        /* end is exclusive */
    assert_null(agent_maps_find(&m, 0x1000));
    assert_string_equal(agent_maps_find(&m, 0x7f0000005000)->path, "");
    agent_maps_free(&m);
}

static void kallsyms_parse(void **state)
{
    (void)state;
    agent_symtab t;
    agent_symtab_init(&t);
    assert_int_equal(agent_kallsyms_parse(
        "ffffffff81000000 T _stext\n"
        "ffffffff81000100 t do_one\n"
        "ffffffff81000200 D some_data\n"
        "ffffffff81000300 W weak_fn\n"
        "ffffffffc0000000 t mod_fn\t[mymod]\n", &t), 0);
    assert_int_equal(t.n, 4);                                 /* data symbol left out */
    assert_string_equal(agent_symtab_lookup(&t, 0xffffffff81000150)->name, "do_one");
    assert_string_equal(agent_symtab_lookup(&t, 0xffffffff81000000)->name, "_stext");
    assert_string_equal(agent_symtab_lookup(&t, 0xffffffff81000300)->name, "weak_fn");
    assert_string_equal(agent_symtab_lookup(&t, 0xffffffffc0000010)->name, "mod_fn");
    assert_null(agent_symtab_lookup(&t, 0xffffffff80000000));
    agent_symtab_free(&t);
}

static void perfmap_parse(void **state)
{
    (void)state;
    agent_symtab t;
    agent_symtab_init(&t);
    assert_int_equal(agent_perfmap_parse(
        "3ff0a000 40 LazyCompile:~foo /app/x.js:1\n"
        "3ff0a100 20 Builtin:ArgumentsAdaptor\r\n"
        "bogus line\n"
        "7f00aa00 10 Interpreted void Main.test_run()\n", &t), 0);
    assert_int_equal(t.n, 3);
    assert_string_equal(agent_symtab_lookup(&t, 0x3ff0a03f)->name, "LazyCompile:~foo /app/x.js:1");
    assert_null(agent_symtab_lookup(&t, 0x3ff0a040));          /* past its size */
    assert_string_equal(agent_symtab_lookup(&t, 0x3ff0a100)->name, "Builtin:ArgumentsAdaptor");
    assert_string_equal(agent_symtab_lookup(&t, 0x7f00aa05)->name, "Interpreted void Main.test_run()");
    agent_symtab_free(&t);
}

static void module_offset(void **state)
{
    (void)state;
    char buf[128];
    agent_module_offset("/usr/lib/x86_64-linux-gnu/libfoo.so.1", 0x1a2b, buf, sizeof buf);
    assert_string_equal(buf, "libfoo.so.1+0x1a2b");
    agent_module_offset("plain", 0, buf, sizeof buf);
    assert_string_equal(buf, "plain+0x0");
    /* an ELF file with no symbols at all: the fallback, through agent_syms */
    agent_symtab t;
    agent_symtab_init(&t);
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/stripped", dir);
    assert_int_equal(agent_elf_symtab("/proc/self/status", NULL, &t, err, sizeof err), -1);
    assert_err_contains(err, "not a readable ELF");
    agent_symtab_free(&t);
}

/* The GNU build-id of dir/name as readelf prints it. */
static void readelf_build_id(const char *name, char *want, size_t cap)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "readelf -n %s/%s | awk '/Build ID/ {print $3}'", dir, name);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    want[0] = 0;
    assert_non_null(fgets(want, (int)cap, p));
    pclose(p);
    want[strcspn(want, "\n")] = 0;
}

static void build_id_matches_readelf(void **state)
{
    (void)state;
    char path[128], want[128] = "", got[128];
    snprintf(path, sizeof path, "%s/pie", dir);
    readelf_build_id("pie", want, sizeof want);
    assert_true(strlen(want) == 40);
    assert_int_equal(agent_elf_build_id(path, got, sizeof got), 40);
    assert_string_equal(got, want);
    /* the build label: the first 12 hex digits of /proc/PID/exe's */
    uint64_t a, b, c;
    pid_t pid = start("pie", &a, &b, &c);
    assert_true(pid > 0);
    char label[16];
    assert_int_equal(agent_proc_build(pid, label, sizeof label), 0);
    assert_int_equal(strncmp(label, want, 12), 0);
    assert_int_equal(strlen(label), 12);
    /* the name and the build of the same file */
    char exe[4096], build[16];
    assert_int_equal(agent_proc_exe_build(pid, exe, sizeof exe, build, sizeof build), 0);
    assert_string_equal(exe, path);
    assert_string_equal(build, label);
    stop(pid);
    /* a pid that is gone: no name, no build */
    assert_int_equal(agent_proc_exe_build(pid, exe, sizeof exe, build, sizeof build), -1);
    assert_string_equal(exe, "");
    assert_string_equal(build, "");
    assert_int_equal(agent_elf_build_id("/nonexistent", got, sizeof got), -1);
}

static void resolve_live(const char *prog)
{
    uint64_t fn, lib, jit;
    pid_t pid = start(prog, &fn, &lib, &jit);
    assert_true(pid > 0);
    agent_syms *s = agent_syms_new("/nonexistent-debug-root");
    char name[256];
    agent_syms_name(s, pid, fn + 1, 0, name, sizeof name);
    assert_string_equal(name, "target_fn");
    agent_syms_name(s, pid, lib + 2, 0, name, sizeof name);
    assert_string_equal(name, "lib_fn");
    agent_syms_name(s, pid, 0x10, 0, name, sizeof name);
    assert_string_equal(name, "[unknown]");
    /* JIT code: anonymous memory named by the perf map */
    char map[64];
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)pid);
    FILE *f = fopen(map, "w");
    assert_non_null(f);
    fprintf(f, "%llx 100 jitted_fn\n", (unsigned long long)jit);
    fclose(f);
    agent_syms_name(s, pid, jit + 0x20, 0, name, sizeof name);
    assert_string_equal(name, "jitted_fn");
    unlink(map);
    /* the process exits: its snapshot still resolves late samples */
    stop(pid);
    agent_syms_name(s, pid, fn + 1, 0, name, sizeof name);
    assert_string_equal(name, "target_fn");
    agent_syms_name(s, pid, lib, 0, name, sizeof name);
    assert_string_equal(name, "lib_fn");
    agent_syms_forget(s, pid);
    agent_syms_free(s);
}

static void resolve_pie(void **state) { (void)state; resolve_live("pie"); }
static void resolve_nopie(void **state) { (void)state; resolve_live("nopie"); }
static void resolve_stripped_debuglink(void **state) { (void)state; resolve_live("stripped"); }

static void stripped_without_debug_file(void **state)
{
    (void)state;
    assert_int_equal(test_run("cd %s && cp stripped bare && objcopy --remove-section=.gnu_debuglink bare", dir), 0);
    uint64_t fn, lib, jit;
    pid_t pid = start("bare", &fn, &lib, &jit);
    assert_true(pid > 0);
    agent_syms *s = agent_syms_new("/nonexistent-debug-root");
    char name[256], want[64];
    agent_syms_name(s, pid, fn + 1, 0, name, sizeof name);
    /* the map of the text segment gives the file offset */
    agent_maps m;
    assert_int_equal(agent_maps_read(pid, &m), 0);
    const agent_map *x = agent_maps_find(&m, fn + 1);
    assert_non_null(x);
    snprintf(want, sizeof want, "bare+0x%llx", (unsigned long long)(fn + 1 - x->start + x->offset));
    assert_string_equal(name, want);
    agent_maps_free(&m);
    stop(pid);
    agent_syms_free(s);
}

/* The line (from 1) of the first line of src containing marker. */
static unsigned line_of(const char *src, const char *marker)
{
    const char *at = strstr(src, marker);
    assert_non_null(at);
    unsigned n = 1;
    for (const char *p = src; p < at; p++) n += *p == '\n';
    return n;
}

/* buf is the located frame name US dir/file US line US dir/mapping US
 * build-id of dir/binary. */
static void assert_located(const char *buf, const char *name, const char *file, unsigned line,
                           const char *mapping)
{
    frame_parts p;
    char want[256], bid[128];
    frame_parse(buf, (uint32_t)strlen(buf), &p);
    if (!p.located) fail_msg("frame [%s]: no location, expected %s/%s:%u", buf, dir, file, line);
    assert_int_equal(p.name_len, strlen(name));
    assert_memory_equal(p.name, name, p.name_len);
    snprintf(want, sizeof want, "%s/%s", dir, file);
    if (p.file_len != strlen(want) || memcmp(p.file, want, p.file_len) != 0)
        fail_msg("frame [%s]: file is not %s", buf, want);
    assert_int_equal(p.line, line);
    snprintf(want, sizeof want, "%s/%s", dir, mapping);
    assert_int_equal(p.mapping_len, strlen(want));
    assert_memory_equal(p.mapping, want, p.mapping_len);
    readelf_build_id(mapping, bid, sizeof bid);
    assert_int_equal(p.build_id_len, 40);
    assert_memory_equal(p.build_id, bid, 40);
}

static void lines_live(const char *prog)
{
    uint64_t fn, lib, jit;
    pid_t pid = start(prog, &fn, &lib, &jit);
    assert_true(pid > 0);
    agent_syms *s = agent_syms_new("/nonexistent-debug-root");
    char buf[AGENT_FRAME_MAX];
    agent_syms_frame(s, pid, fn + 1, 0, 1, buf, sizeof buf);
    assert_located(buf, "target_fn", "prog.c", line_of(prog_src, "int target_fn("), prog);
    agent_syms_frame(s, pid, lib + 2, 0, 1, buf, sizeof buf);
    assert_located(buf, "lib_fn", "lib.c", 1, "libt.so");
    /* not asked for: the name alone */
    agent_syms_frame(s, pid, fn + 1, 0, 0, buf, sizeof buf);
    assert_string_equal(buf, "target_fn");
    agent_syms_name(s, pid, lib + 2, 0, buf, sizeof buf);
    assert_string_equal(buf, "lib_fn");
    /* too little room for the location: the name alone */
    char small[24];
    agent_syms_frame(s, pid, fn + 1, 0, 1, small, sizeof small);
    assert_string_equal(small, "target_fn");
    /* JIT and unknown frames: names */
    char map[64];
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)pid);
    FILE *f = fopen(map, "w");
    assert_non_null(f);
    fprintf(f, "%llx 100 jitted_fn\n", (unsigned long long)jit);
    fclose(f);
    agent_syms_frame(s, pid, jit + 0x20, 0, 1, buf, sizeof buf);
    assert_string_equal(buf, "jitted_fn");
    unlink(map);
    agent_syms_frame(s, pid, 0x10, 0, 1, buf, sizeof buf);
    assert_string_equal(buf, "[unknown]");
    /* the process exits: late samples keep their lines */
    stop(pid);
    agent_syms_frame(s, pid, fn + 1, 0, 1, buf, sizeof buf);
    assert_located(buf, "target_fn", "prog.c", line_of(prog_src, "int target_fn("), prog);
    agent_syms_free(s);
}

static void lines_pie(void **state) { (void)state; lines_live("pie"); }
static void lines_nopie(void **state) { (void)state; lines_live("nopie"); }
static void lines_stripped_debuglink(void **state) { (void)state; lines_live("stripped"); }

/* Symbols but no DWARF (strip --strip-debug), and no symbols at all: the
 * names alone, as before lines. */
static void lines_without_debug_info(void **state)
{
    (void)state;
    assert_int_equal(test_run("cd %s && cp pie nodebug && strip --strip-debug nodebug && "
                         "cp stripped bare2 && objcopy --remove-section=.gnu_debuglink bare2", dir), 0);
    uint64_t fn, lib, jit;
    pid_t pid = start("nodebug", &fn, &lib, &jit);
    assert_true(pid > 0);
    agent_syms *s = agent_syms_new("/nonexistent-debug-root");
    char buf[AGENT_FRAME_MAX];
    agent_syms_frame(s, pid, fn + 1, 0, 1, buf, sizeof buf);
    assert_string_equal(buf, "target_fn");
    agent_syms_frame(s, pid, lib + 2, 0, 1, buf, sizeof buf);   /* the library has -g */
    assert_located(buf, "lib_fn", "lib.c", 1, "libt.so");
    stop(pid);
    agent_syms_free(s);
    pid = start("bare2", &fn, &lib, &jit);
    assert_true(pid > 0);
    s = agent_syms_new("/nonexistent-debug-root");
    agent_syms_frame(s, pid, fn + 1, 0, 1, buf, sizeof buf);
    assert_true(strncmp(buf, "bare2+0x", 8) == 0);
    assert_null(strchr(buf, FRAME_SEP));
    stop(pid);
    agent_syms_free(s);
}

static void kernel_frames(void **state)
{
    (void)state;
    agent_syms *s = agent_syms_new(NULL);
    char *text;
    assert_int_equal(agent_read_file("/proc/kallsyms", &text, NULL), 0);
    unsigned long long addr = 0;
    char type, sym[256];
    /* the first text symbol with a real address (kptr_restrict may hide them) */
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && addr && (type == 'T' || type == 't'))
            break;
    free(text);
    char name[AGENT_FRAME_MAX], want[300];
    agent_syms_name(s, 1, addr, 1, name, sizeof name);
    if (addr) {
        snprintf(want, sizeof want, "%s_[k]", sym);
        assert_string_equal(name, want);
    } else {
        assert_string_equal(name, "[kernel]_[k]");
    }
    /* kernel frames never carry a location */
    agent_syms_frame(s, 1, addr, 1, 1, name, sizeof name);
    assert_string_equal(name, addr ? want : "[kernel]_[k]");
    agent_syms_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(maps_parse, reap),
        cmocka_unit_test_teardown(kallsyms_parse, reap),
        cmocka_unit_test_teardown(perfmap_parse, reap),
        cmocka_unit_test_teardown(module_offset, reap),
        cmocka_unit_test_teardown(build_id_matches_readelf, reap),
        cmocka_unit_test_teardown(resolve_pie, reap),
        cmocka_unit_test_teardown(resolve_nopie, reap),
        cmocka_unit_test_teardown(resolve_stripped_debuglink, reap),
        cmocka_unit_test_teardown(stripped_without_debug_file, reap),
        cmocka_unit_test_teardown(lines_pie, reap),
        cmocka_unit_test_teardown(lines_nopie, reap),
        cmocka_unit_test_teardown(lines_stripped_debuglink, reap),
        cmocka_unit_test_teardown(lines_without_debug_info, reap),
        cmocka_unit_test_teardown(kernel_frames, reap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
