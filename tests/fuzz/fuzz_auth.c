/* fuzz_auth.c — what `flamedb serve --auth` reads (server/auth.c): the
 * Authorization header of any request, from anyone (srv_auth_header_token),
 * and the token file (srv_auth_parse), with the input then looked up as a
 * token and as the X-Scope-OrgID of each entry.  A token taken is 1 to
 * cap - 1 bytes with its length answered; an error always says something,
 * and a file's error names its line. */
#include "fuzz.h"

#include "../../server/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    if (!s) return 0;
    char buf[1024], err[512] = "", tenant[SRV_TENANT_MAX + 1];
    long n = srv_auth_header_token(s, buf, sizeof buf, err, sizeof err);
    if (n >= 0) FUZZ_CHECK(n > 0 && (size_t)n < sizeof buf && strlen(buf) == (size_t)n);
    else FUZZ_CHECK(err[0]);
    srv_auth *a = NULL;
    err[0] = '\0';
    if (srv_auth_parse((const char *)data, size, &a, err, sizeof err) == 0) {
        FUZZ_CHECK(a != NULL);
        const srv_auth_token *t = srv_auth_find(a, s, strlen(s));
        if (t) {
            FUZZ_CHECK(t->scopes && (t->any_tenant || t->n_tenants));
            int st = srv_auth_tenant(t, s, tenant, err, sizeof err);
            FUZZ_CHECK(st == 0 || st == 400 || st == 403);
            if (st == 0) FUZZ_CHECK(srv_tenant_valid(tenant));
        }
        srv_auth_free(a);
    } else {
        FUZZ_CHECK(a == NULL && (!strncmp(err, "line ", 5) || !strcmp(err, "out of memory")));
    }
    free(s);
    return 0;
}
