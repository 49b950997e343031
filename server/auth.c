/* auth.c — the token table of `flamedb serve --auth FILE`.
 *
 * The file holds one token a line as its SHA-256 (`sha256:<hex>`), never
 * the token itself, with the tenants it may act for and its scopes:
 *
 *     # tenant   scopes        token
 *     shop       write         sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
 *     shop|ads   read,admin    sha256:...
 *     *          read          sha256:...
 *
 * A request's token is hashed (nettle's SHA-256, the library GnuTLS, and so
 * libmicrohttpd, already brings into the process) and compared with every
 * entry's hash with nettle's memeql_sec, whose time does not depend on where
 * the bytes differ; the loop visits every entry whatever matches, so the
 * time of a lookup says nothing of the table either.  The table is built
 * whole before it replaces the one in use (access.c), so a file that fails
 * to parse changes nothing.  Parsing is strict: an unknown scope, a bad
 * tenant name, a hash that is not 64 hex digits, an extra field or a token
 * given twice is an error naming its line. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "auth.h"

struct srv_auth {
    srv_auth_token *tokens;
    size_t n;
};

#define MAX_FILE (16u << 20)

void srv_sha256_hex(const void *data, size_t len, char hex[65])
{
    struct sha256_ctx c;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&c);
    sha256_update(&c, len, data);
    sha256_digest(&c, sizeof d, d);
    for (size_t i = 0; i < sizeof d; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

int srv_tenant_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > SRV_TENANT_MAX || !strcmp(name, ".") || !strcmp(name, "..")) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '_' && c != '.' && c != '-') return 0;
    }
    return 1;
}

const char *srv_scope_names(unsigned scopes, char *buf, size_t cap)
{
    static const char *const names[] = { "read", "write", "admin" };
    size_t len = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < 3; i++)
        if (scopes & (1u << i) && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? "," : "", names[i]);
    if (!len) snprintf(buf, cap, "none");
    return buf;
}

static void token_free(srv_auth_token *t)
{
    for (size_t i = 0; i < t->n_tenants; i++) free(t->tenants[i]);
    free(t->tenants);
}

void srv_auth_free(srv_auth *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->n; i++) token_free(&a->tokens[i]);
    free(a->tokens);
    free(a);
}

size_t srv_auth_count(const srv_auth *a)
{
    return a ? a->n : 0;
}

const srv_auth_token *srv_auth_at(const srv_auth *a, size_t i)
{
    return &a->tokens[i];
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The fields of one line (comment cut), at most 4 so that an extra one is
 * seen. */
static int split_fields(char *line, char *f[4])
{
    int n = 0;
    for (char *p = line; *p && n < 4;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        f[n++] = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        if (*p) *p++ = '\0';
    }
    return n;
}

static int parse_tenants(char *field, srv_auth_token *t, char *err, size_t errlen)
{
    if (!strcmp(field, "*")) {
        t->any_tenant = 1;
        return 0;
    }
    for (char *p = field;;) {
        char *bar = strchr(p, '|');
        if (bar) *bar = '\0';
        if (!srv_tenant_valid(p)) {
            snprintf(err, errlen, "tenant '%s': expected 1 to %d letters, digits, '_', '.' or '-' (several "
                     "apart by '|', or '*' for every tenant)", p, SRV_TENANT_MAX);
            return -1;
        }
        for (size_t i = 0; i < t->n_tenants; i++)
            if (!strcmp(t->tenants[i], p)) {
                snprintf(err, errlen, "tenant '%s' is named twice", p);
                return -1;
            }
        char **nt = realloc(t->tenants, (t->n_tenants + 1) * sizeof *nt);
        if (!nt || !(nt[t->n_tenants] = strdup(p))) {
            if (nt) t->tenants = nt;
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        t->tenants = nt;
        t->n_tenants++;
        if (!bar) return 0;
        p = bar + 1;
    }
}

static int parse_scopes(char *field, srv_auth_token *t, char *err, size_t errlen)
{
    for (char *p = field;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        unsigned bit = !strcmp(p, "read") ? SRV_SCOPE_READ : !strcmp(p, "write") ? SRV_SCOPE_WRITE
                       : !strcmp(p, "admin") ? SRV_SCOPE_ADMIN : 0;
        if (!bit) {
            snprintf(err, errlen, "unknown scope '%s' (scopes: read, write, admin, apart by ',')", p);
            return -1;
        }
        t->scopes |= bit;
        if (!comma) return 0;
        p = comma + 1;
    }
}

static int parse_hash(const char *field, srv_auth_token *t, char *err, size_t errlen)
{
    static const char prefix[] = "sha256:";
    size_t pl = sizeof prefix - 1, n = strlen(field);
    if (strncasecmp(field, prefix, pl) || n != pl + 64) {
        snprintf(err, errlen, "the token must be given as sha256:<its SHA-256 in 64 hex digits> (e.g. the "
                 "output of: printf %%s \"$TOKEN\" | sha256sum), never in clear");
        return -1;
    }
    for (size_t i = 0; i < 32; i++) {
        int hi = hexval((unsigned char)field[pl + 2 * i]), lo = hexval((unsigned char)field[pl + 2 * i + 1]);
        if (hi < 0 || lo < 0) {
            snprintf(err, errlen, "sha256:...: '%c' is not a hex digit", hi < 0 ? field[pl + 2 * i]
                                                                              : field[pl + 2 * i + 1]);
            return -1;
        }
        t->sha256[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* One line with its fields; answers 1 for a token, 0 for nothing, -1 on
 * error (message without the line number). */
static int parse_line(char *line, srv_auth_token *t, char *err, size_t errlen)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t') {
            snprintf(err, errlen, "control character 0x%02x", (unsigned char)*p);
            return -1;
        }
    char *f[4];
    int n = split_fields(line, f);
    if (n == 0) return 0;
    if (n != 3) {
        snprintf(err, errlen, "expected 3 fields '<tenant> <scope>[,<scope>...] sha256:<hex>', found %s",
                 n < 3 ? "fewer" : "more");
        return -1;
    }
    memset(t, 0, sizeof *t);
    if (parse_tenants(f[0], t, err, errlen) || parse_scopes(f[1], t, err, errlen) ||
        parse_hash(f[2], t, err, errlen)) {
        token_free(t);
        return -1;
    }
    return 1;
}

int srv_auth_parse(const char *text, size_t len, srv_auth **out, char *err, size_t errlen)
{
    *out = NULL;
    srv_auth *a = calloc(1, sizeof *a);
    size_t cap = 0;
    char msg[384];
    if (!a) goto oom;
    unsigned lineno = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - text - pos) : len - pos;
        lineno++;
        if (memchr(text + pos, '\0', ll)) {
            snprintf(err, errlen, "line %u: a NUL byte", lineno);
            srv_auth_free(a);
            return -1;
        }
        char *line = malloc(ll + 1);
        if (!line) goto oom;
        memcpy(line, text + pos, ll);
        line[ll] = '\0';
        if (ll && line[ll - 1] == '\r') line[ll - 1] = '\0';
        pos += ll + (nl != NULL);
        srv_auth_token t;
        int rc = parse_line(line, &t, msg, sizeof msg);
        free(line);
        if (rc < 0) {
            snprintf(err, errlen, "line %u: %s", lineno, msg);
            srv_auth_free(a);
            return -1;
        }
        if (rc == 0) continue;
        t.line = lineno;
        for (size_t i = 0; i < a->n; i++)
            if (!memcmp(a->tokens[i].sha256, t.sha256, 32)) {
                snprintf(err, errlen, "line %u: the same token as line %u (a token has one line)", lineno,
                         a->tokens[i].line);
                token_free(&t);
                srv_auth_free(a);
                return -1;
            }
        if (a->n == cap) {
            cap = cap ? cap * 2 : 16;
            srv_auth_token *nt = realloc(a->tokens, cap * sizeof *nt);
            if (!nt) {
                token_free(&t);
                goto oom;
            }
            a->tokens = nt;
        }
        a->tokens[a->n++] = t;
    }
    *out = a;
    return 0;
oom:
    srv_auth_free(a);
    snprintf(err, errlen, "out of memory");
    return -1;
}

int srv_auth_load(const char *path, srv_auth **out, char *err, size_t errlen)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *buf = malloc(MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
    int bad = !buf || ferror(f);
    int saved = errno;
    fclose(f);
    if (bad) {
        free(buf);
        snprintf(err, errlen, "%s: cannot read: %s", path, buf ? strerror(saved) : "out of memory");
        return -1;
    }
    if (n > MAX_FILE) {
        free(buf);
        snprintf(err, errlen, "%s: over %u MiB: not a token file", path, MAX_FILE >> 20);
        return -1;
    }
    char msg[512];
    int rc = srv_auth_parse(buf, n, out, msg, sizeof msg);
    free(buf);
    if (rc) snprintf(err, errlen, "%s: %s", path, msg);
    return rc;
}

const srv_auth_token *srv_auth_find(const srv_auth *a, const char *token, size_t len)
{
    if (!a || !len) return NULL;
    struct sha256_ctx c;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&c);
    sha256_update(&c, len, (const uint8_t *)token);
    sha256_digest(&c, sizeof d, d);
    const srv_auth_token *found = NULL;
    for (size_t i = 0; i < a->n; i++)
        if (memeql_sec(a->tokens[i].sha256, d, sizeof d) && !found) found = &a->tokens[i];
    return found;
}

int srv_auth_tenant(const srv_auth_token *t, const char *org, char *tenant, char *err, size_t errlen)
{
    if (org && !srv_tenant_valid(org)) {
        snprintf(err, errlen, "X-Scope-OrgID '%.*s': expected a tenant name of 1 to %d letters, digits, '_', "
                 "'.' or '-'", 80, org, SRV_TENANT_MAX);
        return 400;
    }
    if (!org) {
        if (!t->any_tenant && t->n_tenants == 1) {
            snprintf(tenant, SRV_TENANT_MAX + 1, "%s", t->tenants[0]);
            return 0;
        }
        snprintf(err, errlen, "X-Scope-OrgID is required: the token may act for %s; name the tenant in that "
                 "header", t->any_tenant ? "every tenant" : "several tenants");
        return 400;
    }
    int ok = t->any_tenant;
    for (size_t i = 0; !ok && i < t->n_tenants; i++) ok = !strcmp(t->tenants[i], org);
    if (!ok) {
        snprintf(err, errlen, "the token is not for tenant '%s' (X-Scope-OrgID)", org);
        return 403;
    }
    snprintf(tenant, SRV_TENANT_MAX + 1, "%s", org);
    return 0;
}

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long srv_auth_header_token(const char *h, char *buf, size_t cap, char *err, size_t errlen)
{
    while (*h == ' ' || *h == '\t') h++;
    size_t sl = strcspn(h, " \t");
    const char *v = h + sl;
    while (*v == ' ' || *v == '\t') v++;
    size_t vl = strlen(v);
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
    if (sl == 6 && !strncasecmp(h, "Bearer", 6)) {
        if (!vl || vl >= cap) {
            snprintf(err, errlen, "Authorization: Bearer without a token (or one over %zu bytes)", cap - 1);
            return -1;
        }
        memcpy(buf, v, vl);
        buf[vl] = '\0';
        return (long)vl;
    }
    if (sl == 5 && !strncasecmp(h, "Basic", 5)) {
        /* base64 of "user:password" into buf; the password is the token */
        size_t o = 0;
        unsigned acc = 0;
        int bits = 0, pad = 0;
        for (size_t i = 0; i < vl; i++) {
            if (v[i] == '=') {
                pad++;
                continue;
            }
            int x = b64val((unsigned char)v[i]);
            if (x < 0 || pad) {
                snprintf(err, errlen, "Authorization: Basic: not base64");
                return -1;
            }
            acc = acc << 6 | (unsigned)x;
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                if (o + 1 >= cap) {
                    snprintf(err, errlen, "Authorization: Basic: over %zu bytes", cap - 1);
                    return -1;
                }
                buf[o++] = (char)(acc >> bits & 0xff);
            }
        }
        buf[o] = '\0';
        char *colon = memchr(buf, ':', o);
        if (!colon || memchr(buf, '\0', o)) {
            snprintf(err, errlen, "Authorization: Basic: expected base64 of user:token");
            return -1;
        }
        size_t tl = o - (size_t)(colon + 1 - buf);
        memmove(buf, colon + 1, tl);
        buf[tl] = '\0';
        if (!tl) {
            snprintf(err, errlen, "Authorization: Basic without a password (the token)");
            return -1;
        }
        return (long)tl;
    }
    snprintf(err, errlen, "Authorization: scheme '%.*s' is not supported (use Bearer TOKEN, or Basic with the "
             "token as the password)", (int)(sl > 32 ? 32 : sl), h);
    return -1;
}
