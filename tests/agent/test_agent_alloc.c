/* test_agent_alloc.c — allocation profiles (agent/alloc.c, uprobe.c): the
 * size from the arguments, the weights of a sample, nested calls, and the
 * entry points found in this process's own libc, checked against where
 * the dynamic linker put malloc, calloc and realloc. */
#include <string.h>

#include "../unit/testutil.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes),
        cmocka_unit_test(weights),
        cmocka_unit_test(allocator_names),
        cmocka_unit_test(counted),
        cmocka_unit_test(finds_libc_entry_points),
        cmocka_unit_test(uprobe_pmu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
