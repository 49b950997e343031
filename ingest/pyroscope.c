/* pyroscope.c — Pyroscope's application name: "service[.type]{k=v,...}".
 *
 * Pyroscope clients send everything that identifies a profile in one
 * `name` parameter, for example "shop.cpu{env=prod,region=eu}".  The part
 * before '{' is the service, followed by the profile type when its last
 * dot-separated suffix is a known type ("my.app.v2" is a service of type
 * cpu, "my.app.wall" is service "my.app" of type wall).  The braces are
 * optional and hold unquoted key=value items separated by commas;
 * whitespace around keys and values is ignored, and so are empty items.
 *
 * The name is copied once and cut in place into NUL-terminated pieces that
 * go through ingest_label_add, which does all label validation.  Service is
 * added first, then type, then the items in order; on any error the labels
 * added so far are removed again. */
#include "ingest_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const pyroscope_types[] = {
    "cpu", "itimer", "wall",
    "alloc_objects", "alloc_space", "inuse_objects", "inuse_space",
    "goroutines",
    "mutex_count", "mutex_duration", "block_count", "block_duration",
    "lock_count", "lock_duration",
};

int ingest_pyroscope_is_type(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof pyroscope_types / sizeof pyroscope_types[0]; i++)
        if (strlen(pyroscope_types[i]) == len && memcmp(pyroscope_types[i], s, len) == 0)
            return 1;
    return 0;
}

/* Trims spaces and tabs around [s, e) and NUL-terminates the result. */
static char *trim(char *s, char *e)
{
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *e = '\0';
    return s;
}

/* Adds one label, prefixing any error with the quoted name. */
static ingest_status add(ingest_profile *p, const char *q, const char *k, const char *v,
                         char *err, size_t errlen)
{
    char why[256];
    ingest_status st = ingest_label_add(p, k, v, why, sizeof why);
    if (st != INGEST_OK)
        snprintf(err, errlen, "name '%s': %s", q, why);
    return st;
}

/* Adds the comma-separated key=value items of s (the text inside braces). */
static ingest_status add_items(ingest_profile *p, const char *q, char *s,
                               char *err, size_t errlen)
{
    char qi[80];

    while (s) {
        char *comma = strchr(s, ',');
        char *item = trim(s, comma ? comma : s + strlen(s));
        s = comma ? comma + 1 : NULL;
        if (*item == '\0')
            continue;
        char *eq = strchr(item, '=');
        if (!eq) {
            ingest_quote(qi, sizeof qi, item, strlen(item));
            snprintf(err, errlen, "name '%s': label '%s' has no '='", q, qi);
            return INGEST_EINVAL;
        }
        char *key = trim(item, eq);
        char *value = trim(eq + 1, eq + 1 + strlen(eq + 1));
        ingest_status st = add(p, q, key, value, err, errlen);
        if (st != INGEST_OK)
            return st;
    }
    return INGEST_OK;
}

/* Splits buf (a copy of the name) and adds its labels. */
static ingest_status parse_name(ingest_profile *p, char *buf, const char *q,
                                char *err, size_t errlen)
{
    char *open = strchr(buf, '{'), *items = NULL;
    char *head_end = open ? open : buf + strlen(buf);
    const char *type = "cpu";
    ingest_status st;

    if (open) {
        char *close = strchr(open + 1, '}');
        if (!close) {
            snprintf(err, errlen, "name '%s': missing '}'", q);
            return INGEST_EINVAL;
        }
        if (close[1] != '\0') {
            snprintf(err, errlen, "name '%s': unexpected text after '}'", q);
            return INGEST_EINVAL;
        }
        *close = '\0';
        items = open + 1;
    } else if (strchr(buf, '}')) {
        snprintf(err, errlen, "name '%s': '}' without '{'", q);
        return INGEST_EINVAL;
    }
    char *head = trim(buf, head_end);
    char *dot = strrchr(head, '.');
    if (dot && ingest_pyroscope_is_type(dot + 1, strlen(dot + 1))) {
        type = dot + 1;
        head = trim(head, dot);
    }
    if (*head == '\0') {
        snprintf(err, errlen, "name '%s': empty application name", q);
        return INGEST_EINVAL;
    }
    if ((st = add(p, q, "service", head, err, errlen)) != INGEST_OK ||
        (st = add(p, q, "type", type, err, errlen)) != INGEST_OK)
        return st;
    return items ? add_items(p, q, items, err, errlen) : INGEST_OK;
}

ingest_status ingest_pyroscope_name(ingest_profile *p, const char *name,
                                    char *err, size_t errlen)
{
    size_t len = strlen(name);
    int n_labels = p->n_labels;
    char q[80];
    char *buf = malloc(len + 1);

    if (!buf) {
        snprintf(err, errlen, "out of memory parsing the application name");
        return INGEST_ENOMEM;
    }
    memcpy(buf, name, len + 1);
    ingest_quote(q, sizeof q, name, len);
    ingest_status st = parse_name(p, buf, q, err, errlen);
    free(buf);
    if (st != INGEST_OK) {
        while (p->n_labels > n_labels) {
            p->n_labels--;
            free(p->labels[p->n_labels].name);
            free(p->labels[p->n_labels].value);
        }
    }
    return st;
}
