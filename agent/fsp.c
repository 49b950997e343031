/* fsp.c — thread pruning (Atys FSP).
 *
 * Per interval the agent counts samples per thread; the threads are sorted
 * by samples, most active first, and kept until the kept samples make at
 * least P of the interval's total.  The rest (idle or nearly idle threads)
 * are dropped before aggregation.  Pure: no I/O, no globals.
 */
#include "fsp.h"

#include <stdlib.h>

typedef struct { uint64_t samples; pid_t tid; size_t idx; } fsp_row;

static int fsp_cmp(const void *a, const void *b)
{
    const fsp_row *x = a, *y = b;
    if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return 0;
}

uint64_t agent_fsp_select(const agent_thread_count *t, size_t n, double p,
                          int *keep, size_t *threads_dropped)
{
    uint64_t total = 0, kept = 0, dropped = 0;
    size_t tdrop = 0;
    for (size_t i = 0; i < n; i++) { total += t[i].samples; keep[i] = 1; }
    if (threads_dropped) *threads_dropped = 0;
    if (p >= 1.0 || n == 0 || total == 0) return 0;
    fsp_row *rows = malloc(n * sizeof *rows);
    if (!rows) return 0;                       /* keep everything */
    for (size_t i = 0; i < n; i++) rows[i] = (fsp_row){ t[i].samples, t[i].tid, i };
    qsort(rows, n, sizeof *rows, fsp_cmp);
    double need = p * (double)total;
    for (size_t i = 0; i < n; i++) {
        if ((double)kept >= need && kept > 0) {
            keep[rows[i].idx] = 0;
            dropped += rows[i].samples;
            tdrop++;
        } else {
            kept += rows[i].samples;
        }
    }
    free(rows);
    if (threads_dropped) *threads_dropped = tdrop;
    return dropped;
}
