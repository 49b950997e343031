/* encode_folded.c — a merged tree as folded stacks: one "a;b;c N" line per
 * node with self > 0 (its path from the root), sorted by stack text, the
 * format flamegraph.pl, speedscope and `flamedb`'s own ingest read.
 * Averages of gauges are rounded to whole units (the format's counts are
 * integers). */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

typedef struct { char *text; size_t len, stack_len; } folded_line;

static int line_cmp(const void *a, const void *b)
{
    const folded_line *x = a, *y = b;
    size_t n = x->stack_len < y->stack_len ? x->stack_len : y->stack_len;
    int c = memcmp(x->text, y->text, n);
    return c ? c : (x->stack_len > y->stack_len) - (x->stack_len < y->stack_len);
}

char *query_tree_folded(store_reader *r, const query_tree *t, size_t *out_len)
{
    query_stacks q;
    if (query_stacks_build(r, t, &q)) return NULL;
    folded_line *lines = calloc(q.n ? q.n : 1, sizeof *lines);
    char *out = NULL;
    size_t k = 0, total = 0;
    if (!lines) goto done;
    for (; k < q.n; k++) {
        size_t len = 0;
        for (uint32_t d = 0; d < q.depth[k]; d++) {
            uint32_t flen;
            store_string(r, q.fns[q.start[k] + d], &flen);
            len += flen + 1;
        }
        char *text = malloc(len + 24);
        if (!text) goto done;
        size_t pos = 0;
        for (uint32_t d = 0; d < q.depth[k]; d++) {
            uint32_t flen;
            const char *f = store_string(r, q.fns[q.start[k] + d], &flen);
            memcpy(text + pos, f, flen);
            pos += flen;
            if (d + 1 < q.depth[k]) text[pos++] = ';';
        }
        lines[k].text = text;
        lines[k].stack_len = pos;
        uint64_t v = query_value_rounded(t, t->self[q.node[k]]);
        pos += (size_t)snprintf(text + pos, 24, " %llu\n", (unsigned long long)v);
        lines[k].len = v ? pos : 0; /* an average below one half: no line (counts are positive) */
        total += lines[k].len;
    }
    qsort(lines, k, sizeof *lines, line_cmp);
    out = malloc(total + 1);
    if (!out) goto done;
    size_t pos = 0;
    for (size_t i = 0; i < k; i++) {
        memcpy(out + pos, lines[i].text, lines[i].len);
        pos += lines[i].len;
    }
    out[pos] = '\0';
    *out_len = pos;
done:
    for (size_t i = 0; lines && i < k; i++) free(lines[i].text);
    free(lines);
    query_stacks_free(&q);
    return out;
}
