/* test_auth.c — the token table of `flamedb serve --auth` (server/auth.c):
 * files that parse (comments, blank lines, tabs, CRLF, several tenants,
 * "*", every scope), files that do not (each error names its line and
 * what is wrong), lookups by token (only the exact token; the hash in the
 * file is SHA-256 as sha256sum prints it), the tenant a request acts for,
 * and the token of an Authorization header (Bearer, Basic). */
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "../../server/auth.h"


static char line_a[160], line_b[160], line_r[160];

static int setup(void **state)
{
    (void)state;
    char h[65];
    srv_sha256_hex("secret-a", 8, h);
    snprintf(line_a, sizeof line_a, "shop write,read sha256:%s", h);
    srv_sha256_hex("secret-b", 8, h);
    snprintf(line_b, sizeof line_b, "shop|ads read,admin sha256:%s", h);
    srv_sha256_hex("secret-r", 8, h);
    snprintf(line_r, sizeof line_r, "* read sha256:%s", h);
    return 0;
}

static srv_auth *parse_ok(const char *text)
{
    srv_auth *a = NULL;
    char err[512] = "";
    if (srv_auth_parse(text, strlen(text), &a, err, sizeof err)) fail_msg("'%s' should parse: %s", text, err);
    return a;
}

static void test_sha256_known(void **state)
{
    (void)state;
    char h[65];
    srv_sha256_hex("abc", 3, h); /* FIPS 180-2's example */
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    srv_sha256_hex("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_parse_valid(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text,
             "# tokens of the shop\n\n   \t\n%s   # the agents\n\t%s\r\n%s", line_a, line_b, line_r);
    srv_auth *a = parse_ok(text);
    assert_int_equal(srv_auth_count(a), 3);

    const srv_auth_token *t = srv_auth_find(a, "secret-a", 8);
    assert_non_null(t);
    assert_int_equal(t->scopes, SRV_SCOPE_READ | SRV_SCOPE_WRITE);
    assert_int_equal(t->n_tenants, 1);
    assert_string_equal(t->tenants[0], "shop");
    assert_false(t->any_tenant);
    assert_int_equal(t->line, 4);

    t = srv_auth_find(a, "secret-b", 8);
    assert_non_null(t);
    assert_int_equal(t->scopes, SRV_SCOPE_READ | SRV_SCOPE_ADMIN);
    assert_int_equal(t->n_tenants, 2);
    assert_string_equal(t->tenants[1], "ads");
    assert_int_equal(t->line, 5);

    t = srv_auth_find(a, "secret-r", 8);
    assert_non_null(t);
    assert_true(t->any_tenant);
    assert_int_equal(t->scopes, SRV_SCOPE_READ);

    /* only the exact token */
    assert_null(srv_auth_find(a, "secret-", 7));
    assert_null(srv_auth_find(a, "secret-a ", 9));
    assert_null(srv_auth_find(a, "Secret-a", 8));
    assert_null(srv_auth_find(a, "", 0));
    srv_auth_free(a);

    /* an empty file, or comments only: no token (every request is 401) */
    a = parse_ok("# none yet\n");
    assert_int_equal(srv_auth_count(a), 0);
    assert_null(srv_auth_find(a, "secret-a", 8));
    srv_auth_free(a);
    a = parse_ok("");
    assert_int_equal(srv_auth_count(a), 0);
    srv_auth_free(a);

    /* upper-case hex and prefix, every scope */
    char h[65], up[200];
    srv_sha256_hex("x", 1, h);
    for (char *p = h; *p; p++) *p = (char)(*p >= 'a' && *p <= 'f' ? *p - 32 : *p);
    snprintf(up, sizeof up, "t-1.x_y admin,read,write SHA256:%s\n", h);
    a = parse_ok(up);
    t = srv_auth_find(a, "x", 1);
    assert_non_null(t);
    assert_int_equal(t->scopes, SRV_SCOPE_READ | SRV_SCOPE_WRITE | SRV_SCOPE_ADMIN);
    assert_string_equal(t->tenants[0], "t-1.x_y");
    srv_auth_free(a);
}

typedef struct {
    const char *text;
    const char *frag;   /* the error contains it */
} bad_case;

static void test_parse_invalid(void **state)
{
    (void)state;
    char h[65];
    srv_sha256_hex("y", 1, h);
    char dup[512], good[200];
    snprintf(good, sizeof good, "shop read sha256:%s", h);
    snprintf(dup, sizeof dup, "# first\n%s\n\nads write sha256:%s\n", good, h);
    char l1[300], l2[300], l3[300], l4[300], l5[300], l6[300], l7[300], l8[300], l9[300], l10[300];
    snprintf(l1, sizeof l1, "%s\nshop reed sha256:%s\n", good, h);
    snprintf(l2, sizeof l2, "shop read %s\n", h);
    snprintf(l3, sizeof l3, "shop read sha256:%.63s\n", h);
    snprintf(l4, sizeof l4, "shop read sha256:%.63sg\n", h);
    snprintf(l5, sizeof l5, "sh/op read sha256:%s\n", h);
    snprintf(l6, sizeof l6, "shop read sha256:%s extra\n", h);
    snprintf(l7, sizeof l7, "\n\nshop read\n");
    snprintf(l8, sizeof l8, "a||b read sha256:%s\n", h);
    snprintf(l9, sizeof l9, "a|a read sha256:%s\n", h);
    snprintf(l10, sizeof l10, "shop read, sha256:%s\n", h);
    const bad_case cases[] = {
        { dup, "line 4: the same token as line 2" },
        { l1, "line 2: unknown scope 'reed'" },
        { l2, "line 1: the token must be given as sha256:" },
        { l3, "line 1: the token must be given as sha256:" },
        { l4, "line 1: sha256:...: 'g' is not a hex digit" },
        { l5, "line 1: tenant 'sh/op'" },
        { l6, "line 1: expected 3 fields" },
        { l7, "line 3: expected 3 fields" },
        { l8, "line 1: tenant ''" },
        { l9, "line 1: tenant 'a' is named twice" },
        { l10, "line 1: unknown scope ''" },
        { "secret-a\n", "line 1: expected 3 fields" },
        { "shop read sha256:\x01\n", "line 1: control character 0x01" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        srv_auth *a = (srv_auth *)1;
        char err[512] = "";
        assert_int_equal(srv_auth_parse(cases[i].text, strlen(cases[i].text), &a, err, sizeof err), -1);
        assert_null(a);
        assert_err_contains(err, cases[i].frag);
    }
    /* a NUL byte inside a line */
    char nul[] = "shop read sha256:00\0 more\n";
    srv_auth *a;
    char err[512];
    assert_int_equal(srv_auth_parse(nul, sizeof nul - 1, &a, err, sizeof err), -1);
    assert_err_contains(err, "line 1: a NUL byte");
    /* a tenant name over the limit */
    char longname[300];
    memset(longname, 'a', SRV_TENANT_MAX + 1);
    snprintf(longname + SRV_TENANT_MAX + 1, sizeof longname - SRV_TENANT_MAX - 1, " read sha256:%s", h);
    assert_int_equal(srv_auth_parse(longname, strlen(longname), &a, err, sizeof err), -1);
    assert_err_contains(err, "line 1: tenant 'aaaa");
}

static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/flamedb-test-auth.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "%s\n%s\n", line_a, line_r);
    fclose(f);
    srv_auth *a;
    char err[512];
    assert_int_equal(srv_auth_load(path, &a, err, sizeof err), 0);
    assert_int_equal(srv_auth_count(a), 2);
    srv_auth_free(a);
    f = fopen(path, "w");
    fprintf(f, "%s\nbad line\n", line_a);
    fclose(f);
    assert_int_equal(srv_auth_load(path, &a, err, sizeof err), -1);
    assert_err_contains(err, path);
    assert_err_contains(err, "line 2: expected 3 fields");
    unlink(path);
    assert_int_equal(srv_auth_load(path, &a, err, sizeof err), -1);
    assert_err_contains(err, "cannot open: No such file or directory");
}

static void test_tenant(void **state)
{
    (void)state;
    char text[600];
    snprintf(text, sizeof text, "%s\n%s\n%s\n", line_a, line_b, line_r);
    srv_auth *a = parse_ok(text);
    const srv_auth_token *one = srv_auth_find(a, "secret-a", 8), *two = srv_auth_find(a, "secret-b", 8),
                         *any = srv_auth_find(a, "secret-r", 8);
    char tenant[SRV_TENANT_MAX + 1], err[512];

    /* one tenant: no header needed; the header may only name it */
    assert_int_equal(srv_auth_tenant(one, NULL, tenant, err, sizeof err), 0);
    assert_string_equal(tenant, "shop");
    assert_int_equal(srv_auth_tenant(one, "shop", tenant, err, sizeof err), 0);
    assert_int_equal(srv_auth_tenant(one, "ads", tenant, err, sizeof err), 403);
    assert_err_contains(err, "not for tenant 'ads'");

    /* several: the header is required and picks one of them */
    assert_int_equal(srv_auth_tenant(two, NULL, tenant, err, sizeof err), 400);
    assert_err_contains(err, "X-Scope-OrgID is required");
    assert_int_equal(srv_auth_tenant(two, "ads", tenant, err, sizeof err), 0);
    assert_string_equal(tenant, "ads");
    assert_int_equal(srv_auth_tenant(two, "other", tenant, err, sizeof err), 403);

    /* "*": any valid name, named */
    assert_int_equal(srv_auth_tenant(any, NULL, tenant, err, sizeof err), 400);
    assert_int_equal(srv_auth_tenant(any, "zzz", tenant, err, sizeof err), 0);
    assert_string_equal(tenant, "zzz");
    assert_int_equal(srv_auth_tenant(any, "a/b", tenant, err, sizeof err), 400);
    assert_err_contains(err, "X-Scope-OrgID 'a/b'");
    assert_int_equal(srv_auth_tenant(any, "", tenant, err, sizeof err), 400);
    assert_int_equal(srv_auth_tenant(any, "..", tenant, err, sizeof err), 400);
    srv_auth_free(a);
}

static void test_header_token(void **state)
{
    (void)state;
    char buf[64], err[256];
    assert_int_equal(srv_auth_header_token("Bearer secret-a", buf, sizeof buf, err, sizeof err), 8);
    assert_string_equal(buf, "secret-a");
    assert_int_equal(srv_auth_header_token("bearer   secret-a  ", buf, sizeof buf, err, sizeof err), 8);
    assert_string_equal(buf, "secret-a");
    /* Basic: base64("user:secret-a"), the user ignored; a password with ':' kept whole */
    assert_int_equal(srv_auth_header_token("Basic dXNlcjpzZWNyZXQtYQ==", buf, sizeof buf, err, sizeof err), 8);
    assert_string_equal(buf, "secret-a");
    assert_int_equal(srv_auth_header_token("Basic OmE6Yg==", buf, sizeof buf, err, sizeof err), 3); /* ":a:b" */
    assert_string_equal(buf, "a:b");
    assert_int_equal(srv_auth_header_token("Basic dXNlcg==", buf, sizeof buf, err, sizeof err), -1); /* "user" */
    assert_err_contains(err, "user:token");
    assert_int_equal(srv_auth_header_token("Basic dXNlcjo=", buf, sizeof buf, err, sizeof err), -1); /* "user:" */
    assert_err_contains(err, "without a password");
    assert_int_equal(srv_auth_header_token("Basic !!!", buf, sizeof buf, err, sizeof err), -1);
    assert_err_contains(err, "not base64");
    assert_int_equal(srv_auth_header_token("Bearer", buf, sizeof buf, err, sizeof err), -1);
    assert_err_contains(err, "without a token");
    assert_int_equal(srv_auth_header_token("Digest x=1", buf, sizeof buf, err, sizeof err), -1);
    assert_err_contains(err, "scheme 'Digest' is not supported");
    char big[200];
    memset(big, 'x', sizeof big);
    memcpy(big, "Bearer ", 7);
    big[sizeof big - 1] = '\0';
    assert_int_equal(srv_auth_header_token(big, buf, sizeof buf, err, sizeof err), -1);
}

static void test_scope_names(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(srv_scope_names(SRV_SCOPE_READ | SRV_SCOPE_ADMIN, b, sizeof b), "read,admin");
    assert_string_equal(srv_scope_names(0, b, sizeof b), "none");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_known),
        cmocka_unit_test_setup(test_parse_valid, setup),
        cmocka_unit_test_setup(test_parse_invalid, setup),
        cmocka_unit_test_setup(test_load_file, setup),
        cmocka_unit_test_setup(test_tenant, setup),
        cmocka_unit_test(test_header_token),
        cmocka_unit_test(test_scope_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
