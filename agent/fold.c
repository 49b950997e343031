/* fold.c — labels, the ingest URL, and folded profiles under construction.
 *
 * A folded profile is a hash table from the stack string (frames root
 * first, joined by ';') to its count: open addressing, FNV-1a, grown at
 * 70% load.  Its text is one "stack count" line per stack, sorted, exactly
 * the body POST /api/v1/ingest takes.
 */
#include "agent.h"
#include "../storage/frame.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- labels ---- */

static int label_name_ok(const char *s)
{
    if (!*s || isdigit((unsigned char)*s)) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.') return 0;
    return 1;
}

int agent_labels_set(agent_labels *l, const char *name, const char *value)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0) {
            char *v = strdup(value);
            if (!v) return -1;
            free(l->value[i]);
            l->value[i] = v;
            return 0;
        }
    if (l->n >= AGENT_MAX_LABELS) return -1;
    l->name[l->n] = strdup(name);
    l->value[l->n] = strdup(value);
    if (!l->name[l->n] || !l->value[l->n]) {
        free(l->name[l->n]); free(l->value[l->n]);
        return -1;
    }
    l->n++;
    return 0;
}

const char *agent_labels_get(const agent_labels *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0) return l->value[i];
    return NULL;
}

int agent_labels_parse(agent_labels *l, const char *spec, char *err, size_t errlen)
{
    char *copy = strdup(spec), *save = NULL;
    if (!copy) { snprintf(err, errlen, "out of memory"); return -1; }
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "--labels: '%s' is not name=value", tok);
            free(copy); return -1;
        }
        *eq = 0;
        if (!label_name_ok(tok)) {
            snprintf(err, errlen, "--labels: bad label name '%s' (letters, digits, '_' and '.', not starting with a digit)", tok);
            free(copy); return -1;
        }
        static const char *const reserved[] = { "rate", "from", "until", "format", "unit", "locations", NULL };
        for (int i = 0; reserved[i]; i++)
            if (strcmp(tok, reserved[i]) == 0) {
                snprintf(err, errlen, "--labels: '%s' is an ingest parameter, not a label", tok);
                free(copy); return -1;
            }
        if (!eq[1]) {
            snprintf(err, errlen, "--labels: label '%s' has an empty value", tok);
            free(copy); return -1;
        }
        if (agent_labels_set(l, tok, eq + 1) < 0) {
            snprintf(err, errlen, "--labels: more than %d labels", AGENT_MAX_LABELS);
            free(copy); return -1;
        }
    }
    free(copy);
    return 0;
}

void agent_labels_free(agent_labels *l)
{
    for (int i = 0; i < l->n; i++) { free(l->name[i]); free(l->value[i]); }
    l->n = 0;
}

void agent_labels_copy(agent_labels *dst, const agent_labels *src)
{
    for (int i = 0; i < src->n; i++) agent_labels_set(dst, src->name[i], src->value[i]);
}

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

void agent_frame_clean(char *name)
{
    if (!*name) { strcpy(name, "[unknown]"); return; }   /* callers pass >= 10 bytes */
    for (char *c = name; *c; c++) {
        if (*c == ';') *c = ':';
        else if (*c == '\n' || *c == '\r' || *c == FRAME_SEP) *c = ' ';
    }
}

/* Valid UTF-8 (the server refuses frames that are not), no overlongs, no
 * surrogates. */
static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t k;
        unsigned min;
        if (c >= 0xc2 && c <= 0xdf) { k = 1; min = 0x80; c &= 0x1f; }
        else if (c >= 0xe0 && c <= 0xef) { k = 2; min = 0x800; c &= 0x0f; }
        else if (c >= 0xf0 && c <= 0xf4) { k = 3; min = 0x10000; c &= 0x07; }
        else return 0;
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xc0) != 0x80) return 0;
            c = (c << 6) | (s[i + j] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
        i += k + 1;
    }
    return 1;
}

/* Appends one location field: folded-safe (';' -> ':', line breaks and
 * the separator -> ' '). */
static size_t locate_field(char *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        out[i] = c == ';' ? ':' : (c == '\n' || c == '\r' || c == FRAME_SEP) ? ' ' : c;
    }
    return n;
}

int agent_frame_locate(char *buf, size_t cap, const char *file, unsigned line,
                       const char *mapping, const char *build_id)
{
    size_t nl = strlen(buf), fl = file ? strlen(file) : 0;
    size_t ml = mapping ? strlen(mapping) : 0, bl = build_id ? strlen(build_id) : 0;
    if (nl == 0 || memchr(buf, FRAME_SEP, nl) || fl == 0 || line == 0 ||
        line > AGENT_LINE_MAX || fl > AGENT_LOCATION_FIELD_MAX ||
        !utf8_valid((const unsigned char *)file, fl))
        return 0;
    if (ml > AGENT_LOCATION_FIELD_MAX || !utf8_valid((const unsigned char *)mapping, ml)) ml = 0;
    for (size_t i = 0; i < bl; i++)
        if (!isxdigit((unsigned char)build_id[i])) { bl = 0; break; }
    if (bl > 128) bl = 0;
    char num[16];
    size_t ll = (size_t)snprintf(num, sizeof num, "%u", line);
    size_t need = nl + 1 + fl + 1 + ll + (ml || bl ? 2 + ml + bl : 0) + 1;
    if (need > cap) return 0;
    char *o = buf + nl;
    *o++ = FRAME_SEP;
    o += locate_field(o, file, fl);
    *o++ = FRAME_SEP;
    memcpy(o, num, ll); o += ll;
    if (ml || bl) {
        *o++ = FRAME_SEP;
        o += locate_field(o, mapping, ml);
        *o++ = FRAME_SEP;
        memcpy(o, build_id, bl); o += bl;
    }
    *o = 0;
    return 1;
}

size_t agent_frame_name_len(const char *frame)
{
    return frame_name_len(frame, (uint32_t)strlen(frame));
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
