/* push.h — the folded-push client: POST to a flamedb server over libcurl,
 * keep-alive, gzip'd bodies, the token and tenant of a server with --auth,
 * https verified against --ca (push.c).  Used by the agent (its pushes and
 * heartbeats) and by `flamedb import`. */
#ifndef FLAMEDB_CLIENT_PUSH_H
#define FLAMEDB_CLIENT_PUSH_H

#include <stddef.h>
#include <stdint.h>

typedef struct client_push client_push;

client_push *client_push_new(void);
void client_push_free(client_push *p);
/* A server with --auth, over https: the token of every push (sent as
 * Authorization: Bearer; NULL none), the tenant (X-Scope-OrgID; NULL none)
 * and a PEM file of the authority or certificate that verifies the
 * server's (NULL: the system's).  0, or -1 with err. */
int client_push_auth(client_push *p, const char *token, const char *tenant, const char *ca, char *err,
                     size_t errlen);
/* How long a push may take, whole (default 30 s). */
void client_push_timeout(client_push *p, long seconds);
/* The token of --token-file: its first line, blanks cut, into buf; 0, or
 * -1 with err when it cannot be read or is no token. */
int client_token_read(const char *path, char *buf, size_t cap, char *err, size_t errlen);
/* POSTs body gzip'd (folded text) to url; 0 on a 2xx answer, -1 otherwise
 * with err ("HTTP 400: <the answer>", or why the server was not reached:
 * then *status is 0).  *retryable = 1 for connection failures and
 * 5xx/429/408, 0 for other 4xx.  status may be NULL. */
int client_push_send(client_push *p, const char *url, const void *body, size_t len, long *status, int *retryable,
                     char *err, size_t errlen);
/* POSTs a JSON body (not gzip'd, 5 s timeout) to url: 0 on a 2xx answer
 * with *answer = its first 511 bytes (valid until the next request), -1
 * otherwise with err; *status = the HTTP status (0: no answer). */
int client_push_json(client_push *p, const char *url, const char *body, size_t len, long *status,
                     const char **answer, char *err, size_t errlen);
/* The last answer's first 511 bytes ("" none). */
const char *client_push_answer(const client_push *p);

#endif
