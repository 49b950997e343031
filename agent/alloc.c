/* alloc.c — allocation profiles from uprobe samples (issue 13): pure.
 *
 * perf.c samples every Nth call of malloc, calloc and realloc (uprobes at
 * their entries, sample_period N, PERF_SAMPLE_PERIOD) with the user
 * registers: in the x86-64 SysV ABI the arguments are in rdi and rsi, so
 * the size asked for is rdi (malloc), rdi * rsi (calloc) or rsi
 * (realloc).  Each sample stands for the `period` calls since the previous
 * one on its event: alloc_objects (unit count) += period, alloc_space
 * (unit bytes) += size * period, pprof's names for the same profiles.  It
 * is an estimate, unbiased for a stream of calls not periodic in N (the
 * default N is prime: a loop that allocates k times per iteration cycles
 * through its k sites unless N divides k); a site with k sampled calls has
 * a relative error of about 1/sqrt(k).
 *
 * Nested calls: an allocator that calls another (a realloc that calls
 * malloc) trips both probes; a sample whose caller is an allocator is such
 * an inner call and is not counted (main.c checks the frame below the leaf
 * with agent_alloc_is_allocator).  glibc's realloc(NULL, n) enters malloc
 * by a tail jump, which leaves no frame to see: for a libc that defines
 * __libc_malloc (glibc), realloc samples with a NULL pointer are not
 * counted, malloc's probe counts those calls (agent_alloc_counted).
 *
 * A size no allocator can give (above AGENT_ALLOC_SIZE_MAX, 2^48 bytes, or
 * a calloc whose product overflows) is a call that fails: it counts as an
 * object of 0 bytes.
 */
#include "alloc.h"

#include <string.h>

uint64_t agent_alloc_size(agent_alloc_fn fn, uint64_t arg0, uint64_t arg1)
{
    uint64_t size;
    switch (fn) {
    case AGENT_ALLOC_MALLOC: size = arg0; break;
    case AGENT_ALLOC_CALLOC:
        if (arg0 && arg1 > UINT64_MAX / arg0) return 0;
        size = arg0 * arg1;
        break;
    case AGENT_ALLOC_REALLOC: size = arg1; break;
    default: return 0;
    }
    return size > AGENT_ALLOC_SIZE_MAX ? 0 : size;
}

int agent_alloc_is_allocator(const char *name, size_t len)
{
    /* __GI___libc_malloc, __libc_malloc, __malloc, malloc: the prefixes
     * glibc's aliases carry, then the name itself */
    static const char *const prefixes[] = { "__GI___libc_", "__libc_", "__GI_", "__", "" };
    static const char *const names[] = { "malloc", "calloc", "realloc" };
    for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++) {
        size_t pl = strlen(prefixes[p]);
        if (len < pl || strncmp(name, prefixes[p], pl) != 0) continue;
        for (size_t k = 0; k < 3; k++) {
            size_t nl = strlen(names[k]);
            if (len == pl + nl && memcmp(name + pl, names[k], nl) == 0) return 1;
        }
    }
    return 0;
}

int agent_alloc_counted(agent_alloc_fn fn, uint64_t arg0, int null_is_malloc)
{
    return !(fn == AGENT_ALLOC_REALLOC && arg0 == 0 && null_is_malloc);
}

void agent_alloc_weights(uint64_t period, uint64_t size, uint64_t *objects, uint64_t *space)
{
    *objects = period;
    *space = size && period > UINT64_MAX / size ? UINT64_MAX : size * period;
}
