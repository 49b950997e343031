/* access.c — who a request is and what it may do: `flamedb serve --auth
 * FILE` (the token table: auth.c), checked once per request before its
 * body is read, from the scope its route and method need (http.c's
 * routing table).
 *
 * * No --auth: every request goes on, acting for no tenant; nothing of
 *   this file changes an answer (main.c then allows loopback only).
 * * A route open to all (the viewer's files, /healthz; /metrics unless
 *   --metrics-auth) needs no token.
 * * Otherwise the token comes from `Authorization: Bearer T` or basic auth
 *   with T as the password: none, or one not in the table, is 401 with
 *   `WWW-Authenticate: Bearer`; a token without the route's scope, or not
 *   for the tenant X-Scope-OrgID names, is 403; both JSON.  The tenant
 *   the request acts for is copied into the request (rq->tenant): reads
 *   and writes are scoped by it (params.c, ingest_handlers.c).
 *
 * The table is swapped whole under a read-write lock: SIGHUP (main.c)
 * parses the file into a new table and, only when that succeeded, takes
 * the write lock to put it in place and frees the old one; a request holds
 * the read lock only while it looks its token up and copies what it needs.
 * A file that fails to parse keeps the table in use. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "srv.h"

int srv_access_load(srv_ctx *srv, char *err, size_t errlen)
{
    srv_auth *a;
    if (srv_auth_load(srv->auth_path, &a, err, errlen)) return -1;
    if (srv_metrics_tenants_load(srv, a)) { /* its tenants' /metrics counters */
        srv_auth_free(a);
        snprintf(err, errlen, "%s: out of memory", srv->auth_path);
        return -1;
    }
    pthread_rwlock_wrlock(&srv->auth_lock);
    srv_auth *old = srv->auth;
    srv->auth = a;
    pthread_rwlock_unlock(&srv->auth_lock);
    srv_auth_free(old);
    return 0;
}

size_t srv_access_tokens(srv_ctx *srv)
{
    pthread_rwlock_rdlock(&srv->auth_lock);
    size_t n = srv_auth_count(srv->auth);
    pthread_rwlock_unlock(&srv->auth_lock);
    return n;
}

void srv_access_free(srv_ctx *srv)
{
    srv_auth_free(srv->auth);
    srv->auth = NULL;
    srv_metrics_free(srv);
}

static const char *client_address(srv_request *rq, char *buf, size_t cap)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(buf, cap, "?");
    if (ci && ci->client_addr)
        getnameinfo(ci->client_addr, ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                                            : sizeof(struct sockaddr_in),
                    buf, (socklen_t)cap, NULL, 0, NI_NUMERICHOST);
    return buf;
}

int srv_access_check(srv_request *rq, unsigned scope)
{
    srv_ctx *srv = rq->srv;
    rq->tenant[0] = '\0';
    rq->scoped = 0;
    if (!srv->auth_path) return 0;
    if (scope & SRV_SCOPE_OPEN) return 0;
    unsigned either = 0; /* /metrics: read or admin (metrics.c decides what each sees) */
    if (scope & SRV_SCOPE_METRICS) {
        if (!srv->metrics_auth) return 0;
        scope = SRV_SCOPE_READ;
        either = SRV_SCOPE_ADMIN;
    }
    char names[32], err[512];
    srv_scope_names(scope, names, sizeof names);
    if (either) snprintf(names, sizeof names, "read' or 'admin");
    const char *h = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h) {
        srv_reply_error(rq, MHD_HTTP_UNAUTHORIZED,
                        "%s %s needs a token with the '%s' scope: send Authorization: Bearer TOKEN (or HTTP basic "
                        "auth with the token as the password)", rq->method, rq->url, names);
        return -1;
    }
    char token[1024];
    long tl = srv_auth_header_token(h, token, sizeof token, err, sizeof err);
    if (tl < 0) {
        srv_reply_error(rq, MHD_HTTP_UNAUTHORIZED, "%s", err);
        return -1;
    }
    pthread_rwlock_rdlock(&srv->auth_lock);
    const srv_auth_token *t = srv_auth_find(srv->auth, token, (size_t)tl);
    unsigned has = t ? t->scopes : 0;
    int status = 0, allowed = (has & scope) == scope || (has & either);
    const char *org = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "X-Scope-OrgID");
    if (t && (has & either) && t->any_tenant && !org)
        rq->every_tenant = 1; /* the operator's /metrics: every tenant (metrics.c) */
    else if (t && allowed)
        status = srv_auth_tenant(t, org, rq->tenant, err, sizeof err);
    pthread_rwlock_unlock(&srv->auth_lock);
    memset(token, 0, sizeof token);
    if (!t) {
        char addr[64];
        srv_log("a request with a token not in %s (from %s); it got 401", srv->auth_path,
                client_address(rq, addr, sizeof addr));
        srv_reply_error(rq, MHD_HTTP_UNAUTHORIZED, "the token is not known to this server (flamedb serve --auth)");
        return -1;
    }
    if (!allowed) {
        char own[32];
        srv_reply_error(rq, MHD_HTTP_FORBIDDEN, "%s %s needs the '%s' scope; the token has %s", rq->method, rq->url,
                        names, srv_scope_names(has, own, sizeof own));
        return -1;
    }
    if (status) {
        srv_reply_error(rq, status, "%s", err);
        return -1;
    }
    rq->scoped = !rq->every_tenant;
    return 0;
}

/* ---- tenants in the data ------------------------------------------------ */

/* The value of the tenant label of rq's tenant: NULL for the default one
 * (no label), and when the request acts for no tenant. */
const char *srv_tenant_value(const srv_request *rq)
{
    if (!rq->scoped || !strcmp(rq->tenant, SRV_TENANT_DEFAULT)) return NULL;
    return rq->tenant;
}

int srv_tenant_labels(const srv_request *rq, const store_label *in, int n, store_label *out)
{
    const char *tenant = srv_tenant_value(rq);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (tenant && strcmp(SRV_TENANT_LABEL, in[i].name) < 0) {
            out[k++] = (store_label){ .name = SRV_TENANT_LABEL, .value = tenant };
            tenant = NULL;
        }
        out[k++] = in[i];
    }
    if (tenant) out[k++] = (store_label){ .name = SRV_TENANT_LABEL, .value = tenant };
    return k;
}

int srv_tenant_scope(srv_request *rq, const char *param, query_selector *sel)
{
    if (!rq->scoped) return 0;
    for (int i = 0; i < sel->n_matchers; i++)
        if (!strcmp(sel->matchers[i].name, SRV_TENANT_LABEL)) {
            srv_reply_error(rq, 400, "parameter '%s': the label %s is reserved: the server sets it from the "
                            "token's tenant", param, SRV_TENANT_LABEL);
            return -1;
        }
    query_matcher *m = realloc(sel->matchers, (size_t)(sel->n_matchers + 1) * sizeof *m);
    if (!m) goto oom;
    sel->matchers = m;
    const char *v = srv_tenant_value(rq);
    /* the default tenant's series have no tenant label: = "" matches them */
    m[sel->n_matchers] = (query_matcher){ .name = strdup(SRV_TENANT_LABEL), .value = strdup(v ? v : ""),
                                          .op = QUERY_EQ };
    if (!m[sel->n_matchers].name || !m[sel->n_matchers].value) {
        free(m[sel->n_matchers].name);
        free(m[sel->n_matchers].value);
        goto oom;
    }
    sel->n_matchers++;
    return 0;
oom:
    srv_reply_error(rq, 500, "out of memory");
    return -1;
}
