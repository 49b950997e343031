/* fold.h — folded profiles under construction (fold.c). */
#ifndef FLAMEDB_AGENT_FOLD_H
#define FLAMEDB_AGENT_FOLD_H

#include <stddef.h>
#include <stdint.h>

/* A folded profile under construction: stack string (root-first, frames
 * joined by ';') -> count, in a hash table. */
typedef struct agent_fold agent_fold;

agent_fold *agent_fold_new(void);
void agent_fold_free(agent_fold *f);
void agent_fold_add(agent_fold *f, const char *stack, uint64_t count);
uint64_t agent_fold_total(const agent_fold *f);
size_t agent_fold_stacks(const agent_fold *f);
/* The folded text, lines sorted by stack for determinism.  malloc'd. */
char *agent_fold_text(const agent_fold *f, size_t *len);
/* Multiplies every count by factor (rounded; at least 1 stays 1): a
 * profile estimated from part of its window, scaled to the whole. */
void agent_fold_scale(agent_fold *f, double factor);
/* Iterates every (stack, count). */
void agent_fold_each(const agent_fold *f,
                     void (*fn)(const char *stack, uint64_t count, void *arg),
                     void *arg);
/* The sum of the counts of folded text ("stack count" lines). */
uint64_t agent_folded_total(const char *text, size_t len);

#endif
