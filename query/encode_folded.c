/* encode_folded.c — a merged tree as folded stacks: one "a;b;c N" line per
 * node with self > 0 (its path from the root), sorted by stack text, the
 * format flamegraph.pl, speedscope and `flamedb`'s own ingest read. */
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

/* Writes node's path into buf (caller sized it) and answers its length. */
static size_t path_text(store_reader *r, uint32_t id, char *buf, size_t cap, uint32_t *stack)
{
    uint32_t depth = 0;
    for (uint32_t n = id; n; n = store_node_parent(r, n)) stack[depth++] = n;
    size_t len = 0;
    while (depth--) {
        uint32_t flen;
        const char *f = store_string(r, store_node_func(r, stack[depth]), &flen);
        if (len + flen + 1 > cap) break;
        memcpy(buf + len, f, flen);
        len += flen;
        if (depth) buf[len++] = ';';
    }
    return len;
}

char *query_tree_folded(store_reader *r, const query_tree *t, size_t *out_len)
{
    size_t n = 0;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, { n += id && t->self[id]; })
    folded_line *lines = calloc(n ? n : 1, sizeof *lines);
    uint32_t *stack = malloc(((size_t)t->n_nodes + 1) * sizeof *stack);
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    char *out = NULL;
    size_t k = 0, total = 0;
    if (!lines || !stack || !buf) goto done;
    QUERY_FOR_EACH_BIT(t->touched, t->n_nodes, id, {
        if (!id || !t->self[id]) continue;
        uint32_t depth = 0;
        size_t need = 0;
        for (uint32_t x = id; x; x = store_node_parent(r, x), depth++) {
            uint32_t flen;
            store_string(r, store_node_func(r, x), &flen);
            need += flen + 1;
        }
        if (need > cap) {
            char *nb = realloc(buf, need);
            if (!nb) goto done;
            buf = nb;
            cap = need;
        }
        size_t len = path_text(r, id, buf, cap, stack);
        char *text = malloc(len + 24);
        if (!text) goto done;
        memcpy(text, buf, len);
        lines[k].stack_len = len;
        len += (size_t)snprintf(text + len, 24, " %llu\n", (unsigned long long)t->self[id]);
        lines[k].text = text;
        lines[k++].len = len;
        total += len;
    })
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
    for (size_t i = 0; i < k; i++) free(lines[i].text);
    free(lines);
    free(stack);
    free(buf);
    return out;
}
