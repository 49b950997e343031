/* fda.h — adaptive frequency, Atys FDA (fda.c). */
#ifndef FLAMEDB_AGENT_FDA_H
#define FLAMEDB_AGENT_FDA_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * Adaptive frequency, Atys FDA (fda.c): pure.
 * ------------------------------------------------------------------------ */
#define AGENT_FDA_TOP 10
#define AGENT_FDA_STEADY 5          /* intervals of D <= theta before lowering */

typedef struct {
    char name[AGENT_FDA_TOP][256];
    double p[AGENT_FDA_TOP];        /* normalized over the top-N */
    int n;
} agent_fda_dist;

typedef struct {
    double freq, min, max, theta, lambda;
    agent_fda_dist prev;
    int have_prev;
    int steady;                     /* consecutive intervals with D <= theta */
    double last_d;
} agent_fda;

/* The top-10 functions by self samples from (name, count) pairs; names
 * may be frame texts with locations: their name parts are the functions
 * (pairs with the same name part add up). */
void agent_fda_top(const char *const *names, const uint64_t *counts, size_t n,
                   agent_fda_dist *out);
/* Jensen-Shannon divergence, base 2 (0..1), of two top-N distributions
 * (functions matched by name, missing ones count 0). */
double agent_fda_jsd(const agent_fda_dist *a, const agent_fda_dist *b);
void agent_fda_init(agent_fda *s, double freq, double min, double max,
                    double theta, double lambda);
/* Feeds one interval's distribution; answers the frequency to use next. */
double agent_fda_step(agent_fda *s, const agent_fda_dist *cur);

#endif
