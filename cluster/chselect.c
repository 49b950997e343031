/* chselect.c — flamedb selectors as ClickHouse SQL; see chselect.h. */
#include "chselect.h"

#include <stdio.h>
#include <string.h>

static int put(char *out, size_t cap, const char *s, size_t n)
{
    size_t len = strlen(out);
    if (len + n + 1 > cap) return -1;
    memcpy(out + len, s, n);
    out[len + n] = 0;
    return 0;
}

static int puts_(char *out, size_t cap, const char *s)
{
    return put(out, cap, s, strlen(s));
}

int chselect_quote(const char *s, char *out, size_t cap)
{
    if (put(out, cap, "'", 1)) return -1;
    for (; *s; s++) {
        if ((*s == '\'' || *s == '\\') && put(out, cap, "\\", 1)) return -1;
        if (put(out, cap, s, 1)) return -1;
    }
    return put(out, cap, "'", 1);
}

/* The value test of one matcher on v (an SQL expression). */
static int value_test(const query_matcher *m, const char *v, char *out, size_t cap)
{
    if (m->op == QUERY_EQ || m->op == QUERY_NE) {
        return puts_(out, cap, v) || puts_(out, cap, m->op == QUERY_EQ ? " = " : " != ") ||
               chselect_quote(m->value, out, cap);
    }
    /* whole values: ^(?:re)$ */
    size_t n = strlen(m->value);
    char anchored[8192];
    if (n + 7 > sizeof anchored) return -1;
    snprintf(anchored, sizeof anchored, "^(?:%s)$", m->value);
    return puts_(out, cap, m->op == QUERY_RE ? "match(" : "NOT match(") || puts_(out, cap, v) ||
           puts_(out, cap, ", ") || chselect_quote(anchored, out, cap) || puts_(out, cap, ")");
}

int chselect_where(const query_selector *sel, const char *tenant_label, char *out, size_t cap)
{
    if (cap) out[0] = 0;
    if (!sel || !sel->n_matchers) return puts_(out, cap, "1");
    for (int i = 0; i < sel->n_matchers; i++) {
        const query_matcher *m = &sel->matchers[i];
        if (i && puts_(out, cap, " AND ")) return -1;
        if (puts_(out, cap, "(")) return -1;
        if (tenant_label && !strcmp(m->name, tenant_label)) {
            if (value_test(m, "tenant", out, cap)) return -1;
        } else {
            /* the label's value when the series has it, else "" (absent) */
            int absent_matches = query_matcher_match(m, NULL);
            if (puts_(out, cap, "arrayExists((n, v) -> n = ") || chselect_quote(m->name, out, cap) ||
                puts_(out, cap, " AND ") || value_test(m, "v", out, cap) ||
                puts_(out, cap, ", label_names, label_values)"))
                return -1;
            if (absent_matches && (puts_(out, cap, " OR NOT has(label_names, ") ||
                                   chselect_quote(m->name, out, cap) || puts_(out, cap, ")")))
                return -1;
        }
        if (puts_(out, cap, ")")) return -1;
    }
    return 0;
}
