/* fold.c — folded profiles under construction.
 *
 * A folded profile is a hash table from the stack string (frames root
 * first, joined by ';') to its count: open addressing, FNV-1a, grown at
 * 70% load.  Its text is one "stack count" line per stack, sorted, exactly
 * the body POST /api/v1/ingest takes; agent_folded_total sums such a text
 * (what a delivered profile counted).
 */
#include "fold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- folded profiles ---- */

typedef struct { char *stack; uint64_t count; uint64_t hash; } fold_slot;

struct agent_fold {
    fold_slot *slots;
    size_t cap, n;
    uint64_t total;
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ULL; }
    return h;
}

agent_fold *agent_fold_new(void)
{
    agent_fold *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->cap = 64;
    f->slots = calloc(f->cap, sizeof *f->slots);
    if (!f->slots) { free(f); return NULL; }
    return f;
}

void agent_fold_free(agent_fold *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->cap; i++) free(f->slots[i].stack);
    free(f->slots);
    free(f);
}

static int fold_grow(agent_fold *f)
{
    size_t cap = f->cap * 2;
    fold_slot *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < f->cap; i++) {
        if (!f->slots[i].stack) continue;
        size_t j = f->slots[i].hash & (cap - 1);
        while (s[j].stack) j = (j + 1) & (cap - 1);
        s[j] = f->slots[i];
    }
    free(f->slots);
    f->slots = s;
    f->cap = cap;
    return 0;
}

void agent_fold_add(agent_fold *f, const char *stack, uint64_t count)
{
    if (count == 0) return;
    if ((f->n + 1) * 10 > f->cap * 7 && fold_grow(f) < 0) return;
    uint64_t h = fnv1a(stack);
    size_t j = h & (f->cap - 1);
    while (f->slots[j].stack) {
        if (f->slots[j].hash == h && strcmp(f->slots[j].stack, stack) == 0) {
            f->slots[j].count += count;
            f->total += count;
            return;
        }
        j = (j + 1) & (f->cap - 1);
    }
    char *copy = strdup(stack);
    if (!copy) return;
    f->slots[j] = (fold_slot){ copy, count, h };
    f->n++;
    f->total += count;
}

uint64_t agent_fold_total(const agent_fold *f) { return f->total; }

void agent_fold_scale(agent_fold *f, double factor)
{
    f->total = 0;
    for (size_t i = 0; i < f->cap; i++) {
        if (!f->slots[i].stack) continue;
        double v = (double)f->slots[i].count * factor + 0.5;
        uint64_t c = v >= 1.8e19 ? UINT64_MAX : (uint64_t)v;
        f->slots[i].count = c ? c : 1;
        f->total += f->slots[i].count;
    }
}
size_t agent_fold_stacks(const agent_fold *f) { return f->n; }

void agent_fold_each(const agent_fold *f,
                     void (*fn)(const char *stack, uint64_t count, void *arg),
                     void *arg)
{
    for (size_t i = 0; i < f->cap; i++)
        if (f->slots[i].stack) fn(f->slots[i].stack, f->slots[i].count, arg);
}

static int slot_cmp(const void *a, const void *b)
{
    const fold_slot *x = *(const fold_slot *const *)a, *y = *(const fold_slot *const *)b;
    return strcmp(x->stack, y->stack);
}

char *agent_fold_text(const agent_fold *f, size_t *len)
{
    const fold_slot **v = malloc((f->n + 1) * sizeof *v);
    if (!v) return NULL;
    size_t k = 0, bytes = 1;
    for (size_t i = 0; i < f->cap; i++)
        if (f->slots[i].stack) { v[k++] = &f->slots[i]; bytes += strlen(f->slots[i].stack) + 24; }
    qsort(v, k, sizeof *v, slot_cmp);
    char *out = malloc(bytes);
    if (!out) { free(v); return NULL; }
    size_t o = 0;
    for (size_t i = 0; i < k; i++)
        o += (size_t)snprintf(out + o, bytes - o, "%s %llu\n", v[i]->stack,
                              (unsigned long long)v[i]->count);
    out[o] = 0;
    free(v);
    if (len) *len = o;
    return out;
}

uint64_t agent_folded_total(const char *text, size_t len)
{
    uint64_t total = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        const char *q = eol;
        while (q > p && q[-1] >= '0' && q[-1] <= '9') q--;
        if (q < eol && q > p && q[-1] == ' ') {
            uint64_t v = 0;
            for (const char *r = q; r < eol; r++) v = v * 10 + (uint64_t)(*r - '0');
            total += v;
        }
        p = nl ? nl + 1 : end;
    }
    return total;
}
