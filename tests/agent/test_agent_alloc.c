/* test_agent_alloc.c — allocation profiles (agent/alloc.c, uprobe.c): the
 * size from the arguments, the weights of a sample, nested calls, the
 * entry points found in this process's own libc, checked against where
 * the dynamic linker put malloc, calloc and realloc, and (as root, with
 * tracefs) their probes defined in uprobe_events, kept, and removed, with
 * the leftovers of a dead agent. */
#include <string.h>

#include "../unit/testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/agent.h"

static void sizes(void **state)
{
    (void)state;
    assert_int_equal(agent_alloc_size(AGENT_ALLOC_MALLOC, 4096, 77), 4096);
    assert_int_equal(agent_alloc_size(AGENT_ALLOC_CALLOC, 64, 32), 2048);
    assert_int_equal(agent_alloc_size(AGENT_ALLOC_REALLOC, 0x7f00deadbeef, 512), 512);
    /* calls that fail: an overflowing calloc, an impossible size */
    assert_int_equal(agent_alloc_size(AGENT_ALLOC_CALLOC, 1ull << 40, 1ull << 40), 0);
    assert_int_equal(agent_alloc_size(AGENT_ALLOC_MALLOC, (uint64_t)-1, 0), 0);
    assert_int_equal(agent_alloc_size(AGENT_ALLOC_MALLOC, AGENT_ALLOC_SIZE_MAX, 0), AGENT_ALLOC_SIZE_MAX);
}

static void weights(void **state)
{
    (void)state;
    uint64_t o, s;
    agent_alloc_weights(509, 16, &o, &s);
    assert_int_equal(o, 509);
    assert_int_equal(s, 509 * 16);
    agent_alloc_weights(509, 0, &o, &s);           /* realloc(p, 0), malloc(0) */
    assert_int_equal(o, 509);
    assert_int_equal(s, 0);
    agent_alloc_weights(1u << 15, AGENT_ALLOC_SIZE_MAX, &o, &s);
    assert_int_equal(s, (uint64_t)AGENT_ALLOC_SIZE_MAX << 15);
    agent_alloc_weights(1ull << 20, AGENT_ALLOC_SIZE_MAX, &o, &s);   /* would overflow */
    assert_int_equal(s, UINT64_MAX);
}

static void allocator_names(void **state)
{
    (void)state;
    const char *yes[] = { "malloc", "calloc", "realloc", "__libc_malloc", "__libc_realloc",
                          "__GI___libc_malloc", "__libc_calloc", "__malloc" };
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        assert_true(agent_alloc_is_allocator(yes[i], strlen(yes[i])));
    const char *no[] = { "malloc_consolidate", "_int_malloc", "xmalloc", "free", "site_a", "" };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_false(agent_alloc_is_allocator(no[i], strlen(no[i])));
    /* a frame's name part within a longer stack text */
    assert_true(agent_alloc_is_allocator("realloc;malloc", 7));
    assert_false(agent_alloc_is_allocator("realloc;malloc", 8));
}

static void counted(void **state)
{
    (void)state;
    assert_false(agent_alloc_counted(AGENT_ALLOC_REALLOC, 0, 1));   /* glibc: malloc counts it */
    assert_true(agent_alloc_counted(AGENT_ALLOC_REALLOC, 0, 0));    /* another libc */
    assert_true(agent_alloc_counted(AGENT_ALLOC_REALLOC, 0x1000, 1));
    assert_true(agent_alloc_counted(AGENT_ALLOC_MALLOC, 0, 1));
}

/* The file offsets found in libc are where malloc & co. are: the address
 * of each in this process, less its mapping's start, plus the mapping's
 * file offset.  libc's own symbols (under ASan, malloc is the sanitizer's,
 * in another library that defines one too). */
static void finds_libc_entry_points(void **state)
{
    (void)state;
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(libc);
    void *fns[AGENT_ALLOC_NFN] = { dlsym(libc, "malloc"), dlsym(libc, "calloc"), dlsym(libc, "realloc") };
    agent_maps m;
    assert_int_equal(agent_maps_read(getpid(), &m), 0);
    const agent_map *mp = agent_maps_find(&m, (uint64_t)(uintptr_t)fns[0]);
    assert_non_null(mp);
    agent_uprobe_target *v = NULL;
    size_t n = 0, cap = 0;
    int found = agent_alloc_symbols(mp->path, &v, &n, &cap);
    assert_int_equal(found, 3);
    for (size_t i = 0; i < n; i++) {
        uint64_t addr = (uint64_t)(uintptr_t)fns[v[i].fn];
        const agent_map *fm = agent_maps_find(&m, addr);
        assert_non_null(fm);
        assert_int_equal(v[i].offset, addr - fm->start + fm->offset);
        assert_int_equal(v[i].null_is_malloc, v[i].fn == AGENT_ALLOC_REALLOC);   /* glibc */
    }
    free(v);
    /* the process's targets: libc's three once, though several mappings
     * show it, named as the agent sees it (a /proc/PID/root/... path stops
     * resolving when PID exits) */
    char err[256];
    assert_int_equal(agent_alloc_targets((pid_t[]){ getpid() }, 1, &v, &n, err, sizeof err), 0);
    size_t in_libc = 0;
    for (size_t i = 0; i < n; i++) in_libc += strcmp(v[i].path, mp->path) == 0;
    assert_int_equal(in_libc, 3);
    free(v);
    agent_maps_free(&m);
    dlclose(libc);
    /* not ELF */
    v = NULL; n = cap = 0;
    assert_int_equal(agent_alloc_symbols("/proc/self/status", &v, &n, &cap), -1);
    assert_int_equal(n, 0);
}

static void uprobe_pmu(void **state)
{
    (void)state;
    char err[256];
    int type = agent_uprobe_pmu(err, sizeof err);
    if (access("/sys/bus/event_source/devices/uprobe/type", R_OK) == 0) assert_true(type > 0);
    else {
        assert_int_equal(type, -1);
        assert_non_null(strstr(err, "uprobe"));
    }
}

/* DIR/uprobe_events's text, malloc'd ("" when unreadable). */
static char *uprobe_events(const char *dir)
{
    char path[128], *text = NULL;
    snprintf(path, sizeof path, "%s/uprobe_events", dir);
    if (agent_read_file(path, &text, NULL) < 0) return strdup("");
    return text;
}

static void tracefs_probes(void **state)
{
    (void)state;
    const char *dir = access("/sys/kernel/tracing/uprobe_events", W_OK) == 0 ? "/sys/kernel/tracing" :
                      access("/sys/kernel/debug/tracing/uprobe_events", W_OK) == 0 ? "/sys/kernel/debug/tracing" : NULL;
    char err[512];
    agent_uprobe_target *v = NULL;
    size_t n = 0;
    assert_int_equal(agent_alloc_targets((pid_t[]){ getpid() }, 1, &v, &n, err, sizeof err), 0);
    agent_uprobe_set s;
    if (!dir) {                         /* not root, or no tracefs: refused, said why */
        assert_int_equal(agent_uprobe_define(&s, v, n, err, sizeof err), -1);
        assert_non_null(strstr(err, "uprobe_events"));
        assert_null(s.v);
        free(v);
        skip();
    }
    /* the group a dead agent left: a pid that exited */
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    assert_true(dead > 0);
    waitpid(dead, NULL, 0);
    char line[4300], group[64];
    snprintf(group, sizeof group, "flamedb_%d/", (int)dead);
    snprintf(line, sizeof line, "p:flamedb_%d/malloc_0 %s:0x%llx", (int)dead, v[0].path,
             (unsigned long long)v[0].offset);
    char path[128];
    snprintf(path, sizeof path, "%s/uprobe_events", dir);
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
        fail_msg("%s: %s: %s", path, line, strerror(errno));
    close(fd);
    char *text = uprobe_events(dir);
    assert_non_null(strstr(text, group));
    free(text);

    assert_int_equal(agent_uprobe_define(&s, v, n, err, sizeof err), 0);
    assert_int_equal(s.n, n);
    char own[64];
    snprintf(own, sizeof own, "flamedb_%d", (int)getpid());
    assert_string_equal(s.group, own);
    text = uprobe_events(dir);
    assert_null(strstr(text, group));               /* the dead agent's removed */
    for (size_t i = 0; i < n; i++) {
        assert_true(s.v[i].id > 0);
        assert_int_equal(s.v[i].fn, v[i].fn);
        /* p:flamedb_PID/malloc_0 /usr/lib/...libc.so.6:0x0000000000098930 */
        snprintf(line, sizeof line, "%s/%s_%zu %s:0x%016llx", own,
                 v[i].fn == AGENT_ALLOC_MALLOC ? "malloc" : v[i].fn == AGENT_ALLOC_CALLOC ? "calloc" : "realloc",
                 i, v[i].path, (unsigned long long)v[i].offset);
        assert_non_null(strstr(text, line));
        /* kthreadd is a kernel thread outside a container: every probe kept */
        if (s.kept) assert_true(s.v[i].keep >= 0);
    }
    free(text);
    char comm[64] = "";
    FILE *cf = fopen("/proc/2/comm", "r");
    if (cf) { if (!fgets(comm, sizeof comm, cf)) comm[0] = 0; fclose(cf); }
    if (strncmp(comm, "kthreadd", 8) == 0) assert_true(s.kept);
    agent_uprobe_undefine(&s);
    assert_null(s.v);
    text = uprobe_events(dir);
    assert_null(strstr(text, own));                 /* ours removed */
    free(text);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes),
        cmocka_unit_test(weights),
        cmocka_unit_test(allocator_names),
        cmocka_unit_test(counted),
        cmocka_unit_test(finds_libc_entry_points),
        cmocka_unit_test(uprobe_pmu),
        cmocka_unit_test(tracefs_probes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
