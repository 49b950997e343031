/* url.c — the ingest URL of a profile.
 *
 * POST /api/v1/ingest takes the labels of a profile as query parameters
 * beside rate (or unit), from, until and locations; every value is
 * percent-encoded (RFC 3986 unreserved characters kept).
 */
#include "url.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *agent_urlencode(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out;
    if (!out) return NULL;
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') *o++ = (char)c;
        else { *o++ = '%'; *o++ = hex[c >> 4]; *o++ = hex[c & 15]; }
    }
    *o = 0;
    return out;
}

char *agent_ingest_url(const char *server, const agent_labels *l,
                       double rate, int64_t from, int64_t until, int locations)
{
    return agent_ingest_url_unit(server, l, rate, NULL, from, until, locations);
}

char *agent_ingest_url_unit(const char *server, const agent_labels *l, double rate,
                            const char *unit, int64_t from, int64_t until, int locations)
{
    size_t cap = strlen(server) + 128 + (unit ? strlen(unit) : 0), len = 0;
    for (int i = 0; i < l->n; i++) cap += strlen(l->name[i]) + 3 * strlen(l->value[i]) + 2;
    char *url = malloc(cap);
    if (!url) return NULL;
    size_t sl = strlen(server);
    while (sl > 0 && server[sl - 1] == '/') sl--;
    len = (size_t)snprintf(url, cap, "%.*s/api/v1/ingest?", (int)sl, server);
    for (int i = 0; i < l->n; i++) {
        char *v = agent_urlencode(l->value[i]);
        if (!v) { free(url); return NULL; }
        len += (size_t)snprintf(url + len, cap - len, "%s=%s&", l->name[i], v);
        free(v);
    }
    if (rate > 0) len += (size_t)snprintf(url + len, cap - len, "rate=%.6g&", rate);
    if (unit) len += (size_t)snprintf(url + len, cap - len, "unit=%s&", unit);
    snprintf(url + len, cap - len, "from=%lld&until=%lld%s",
             (long long)from, (long long)until, locations ? "&locations=1" : "");
    return url;
}
