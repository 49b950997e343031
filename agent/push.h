/* push.h — HTTP POST with libcurl, keep-alive, gzip (push.c). */
#ifndef FLAMEDB_AGENT_PUSH_H
#define FLAMEDB_AGENT_PUSH_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * Push (push.c): libcurl, keep-alive, gzip.
 * ------------------------------------------------------------------------ */
typedef struct agent_push agent_push;

agent_push *agent_push_new(void);
void agent_push_free(agent_push *p);
/* A server with --auth, over https: the token of every push (sent as
 * Authorization: Bearer; NULL none), the tenant (X-Scope-OrgID; NULL none)
 * and a PEM file of the authority or certificate that verifies the
 * server's (NULL: the system's).  0, or -1 with err. */
int agent_push_auth(agent_push *p, const char *token, const char *tenant, const char *ca,
                    char *err, size_t errlen);
/* The token of --token-file: its first line, blanks cut, into buf; 0, or
 * -1 with err when it cannot be read or is no token. */
int agent_token_read(const char *path, char *buf, size_t cap, char *err, size_t errlen);
/* POSTs body gzip'd to url; 0 on a 2xx answer, -1 otherwise with err.
 * *retryable = 1 for connection failures and 5xx/429, 0 for other 4xx. */
int agent_push_send(agent_push *p, const char *url, const void *body,
                    size_t len, int *retryable, char *err, size_t errlen);
/* POSTs a JSON body (not gzip'd, 5 s timeout) to url: 0 on a 2xx answer
 * with *answer = its first 511 bytes (valid until the next request), -1
 * otherwise with err; *status = the HTTP status (0: no answer). */
int agent_push_json(agent_push *p, const char *url, const char *body, size_t len,
                    long *status, const char **answer, char *err, size_t errlen);
/* gzip (zlib, RFC 1952) into a malloc'd buffer. */
int agent_gzip(const void *in, size_t len, unsigned char **out, size_t *outlen);

#endif
