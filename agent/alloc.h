/* alloc.h — allocation profiles: weighting uprobe samples (alloc.c). */
#ifndef FLAMEDB_AGENT_ALLOC_H
#define FLAMEDB_AGENT_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * Allocation profiles (alloc.c): pure weighting of uprobe samples.
 * ------------------------------------------------------------------------ */

typedef enum { AGENT_ALLOC_MALLOC = 0, AGENT_ALLOC_CALLOC, AGENT_ALLOC_REALLOC, AGENT_ALLOC_NFN } agent_alloc_fn;

/* The bytes a call asked for from its first two arguments (rdi, rsi in
 * the x86-64 SysV ABI): malloc(size), calloc(n, size) (saturated),
 * realloc(ptr, size); 0 for a size above AGENT_ALLOC_SIZE_MAX or a calloc
 * product that overflows (calls that fail). */
#define AGENT_ALLOC_SIZE_MAX (1ull << 48)
uint64_t agent_alloc_size(agent_alloc_fn fn, uint64_t arg0, uint64_t arg1);
/* 1 when a frame name is one of the probed allocators or their glibc
 * aliases (malloc, __libc_malloc, __GI___libc_malloc, ...): a sample whose
 * caller is one of them is a nested call (glibc's realloc(NULL, n) calls
 * malloc) and must not count twice. */
int agent_alloc_is_allocator(const char *name, size_t len);
/* 0 when a sample is counted by another probe: realloc(NULL, n) of a libc
 * whose realloc then enters malloc (null_is_malloc: glibc, where it is a
 * tail jump, so the stack cannot tell). */
int agent_alloc_counted(agent_alloc_fn fn, uint64_t arg0, int null_is_malloc);
/* --alloc's default period: a prime (no aliasing with loops that allocate
 * k times per iteration, k < N), see alloc.c and docs/agent.md. */
#define AGENT_ALLOC_PERIOD 307
/* --alloc-duty's default: the fraction of each interval the probes are
 * installed (main.c, docs/agent.md): an allocation-only loop runs ~30x
 * slower in the window, so its slowdown is about this fraction (3 %, the
 * issue's target 5 %); 0.03 with N = 307 takes as many samples per
 * interval as 0.05 with N = 509 did (bench/README.md). */
#define AGENT_ALLOC_DUTY 0.03
/* The weights of one sample taken every `period` calls: alloc_objects +=
 * period, alloc_space += size * period (saturated). */
void agent_alloc_weights(uint64_t period, uint64_t size, uint64_t *objects, uint64_t *space);

#endif
