/* auth.h — the token table of `flamedb serve --auth FILE` (auth.c): parsing
 * the file, looking a token up by its SHA-256, and which tenant a request
 * acts for.  Nothing here knows HTTP: server/access.c reads the request's
 * headers and answers 401/403; tests/unit/test_auth.c tests this alone. */
#ifndef FLAMEDB_AUTH_H
#define FLAMEDB_AUTH_H

#include <stddef.h>
#include <stdint.h>

/* Scopes, a bit each; a token line lists those it has. */
#define SRV_SCOPE_READ 1u   /* queries, listings, analyses, the viewer's and Grafana's calls */
#define SRV_SCOPE_WRITE 2u  /* ingest (agents, import, Pyroscope clients) */
#define SRV_SCOPE_ADMIN 4u  /* DELETE /api/v1/series; /metrics with --metrics-auth */

/* Tenant names: 1 to SRV_TENANT_MAX bytes of [A-Za-z0-9_.-], not "." or
 * "..".  "default" is the tenant of data written without a tenant (before
 * --auth, or by it): its series carry no tenant label. */
#define SRV_TENANT_MAX 64
#define SRV_TENANT_DEFAULT "default"

/* One line of the file. */
typedef struct {
    uint8_t sha256[32];    /* of the token; the token itself is never kept */
    unsigned scopes;       /* SRV_SCOPE_* */
    int any_tenant;        /* "*": every tenant, chosen by X-Scope-OrgID */
    char **tenants;        /* "a" or "a|b": the tenants it may act for */
    size_t n_tenants;
    unsigned line;         /* in the file, for messages */
} srv_auth_token;

typedef struct srv_auth srv_auth;

/* Parses the text of a token file:
 *     <tenant>[|<tenant>...] | *   <scope>[,<scope>...]   sha256:<64 hex digits>
 * one token a line, fields apart by spaces or tabs, `#` to the end of the
 * line a comment, blank lines ignored.  Answers 0 and a table (possibly of
 * no token), or -1 with a message naming the line in err. */
int srv_auth_parse(const char *text, size_t len, srv_auth **out, char *err, size_t errlen);
/* The same from a file (at most 16 MiB). */
int srv_auth_load(const char *path, srv_auth **out, char *err, size_t errlen);
void srv_auth_free(srv_auth *a);
size_t srv_auth_count(const srv_auth *a);
/* Its i-th token, i < srv_auth_count(a) (metrics.c lists the tenants). */
const srv_auth_token *srv_auth_at(const srv_auth *a, size_t i);

/* The entry of a token (its SHA-256 compared with every entry's in
 * constant time), or NULL when it is not in the table. */
const srv_auth_token *srv_auth_find(const srv_auth *a, const char *token, size_t len);

/* Whether NAME is a valid tenant name. */
int srv_tenant_valid(const char *name);

/* The tenant a request with token t acts for, into tenant (at least
 * SRV_TENANT_MAX + 1 bytes): org is the X-Scope-OrgID header (NULL when
 * absent).  A token of one tenant acts for it (org, when given, must name
 * it); a token of several, or of "*", acts for the one org names, which is
 * then required.  Answers 0, or the HTTP status of the refusal (400: org
 * missing or malformed; 403: a tenant the token is not for) with a
 * message in err. */
int srv_auth_tenant(const srv_auth_token *t, const char *org, char *tenant, char *err, size_t errlen);

/* The token of an Authorization header: "Bearer TOKEN", or "Basic
 * base64(user:TOKEN)" (HTTP basic auth with the token as the password, as
 * Pyroscope clients send it; the user is ignored).  The token is copied
 * into buf (cap bytes, NUL-terminated).  Answers its length, or -1 with a
 * message in err for another scheme or a malformed value. */
long srv_auth_header_token(const char *header, char *buf, size_t cap, char *err, size_t errlen);

/* "read,write": the scopes named in a mask, into buf. */
const char *srv_scope_names(unsigned scopes, char *buf, size_t cap);

/* SHA-256 of data as 64 lowercase hex digits and a NUL, into hex. */
void srv_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
