/* chclient.h — a ClickHouse client over its HTTP interface (issue 10).
 *
 * One client is one libcurl easy handle talking to one ClickHouse HTTP
 * endpoint (http://host:8123): keep-alive connection reused from call to
 * call, never shared between threads (one client per thread).  Every
 * request has explicit timeouts (connect, and whole request).
 *
 *   ch_exec     a statement (DDL, ALTER, a SELECT read as text): the
 *               statement is the POST body; its answer stays in the
 *               client until the next call (ch_body).
 *   ch_insert   `INSERT INTO <target> FORMAT RowBinary` with the rows
 *               (chrow.h's writer) as the body.
 *   ch_select   a SELECT whose answer is RowBinary (the caller's SQL ends
 *               with FORMAT RowBinary): a chrow reader over the answer,
 *               valid until the next call.  Sent with wait_end_of_query=1,
 *               so an exception half way through the result is an error
 *               status, never rows with an error message glued on (18.16
 *               streams the first megabyte before it knows).
 * Each takes optional ch_query_opts: a query_id (ClickHouse's, for
 * KILL QUERY and the query log) and settings, sent as URL parameters.
 *
 * Errors: a status, and a message naming the endpoint that a person can act
 * on (ch_errmsg).  A ClickHouse exception (`Code: 279, e.displayText() =
 * DB::Exception: All connection tries failed...`) is CH_ESERVER with its
 * code in ch_server_code() (0 otherwise) and its text in the message;
 * connection refused, an unknown host, a timeout each get their own status
 * and name the URL. */
#ifndef FLAMEDB_CHCLIENT_H
#define FLAMEDB_CHCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "chrow.h"

typedef struct ch_client ch_client;

typedef enum {
    CH_OK = 0,
    CH_EINVAL,    /* the caller's input is wrong */
    CH_ECONNECT,  /* nobody answers at the URL: refused, unknown host, unreachable */
    CH_ETIMEOUT,  /* connect or request took longer than its timeout */
    CH_ENET,      /* the connection broke during the request */
    CH_ESERVER,   /* ClickHouse answered an exception: ch_server_code() */
    CH_EPROTO,    /* an answer that cannot be read (not RowBinary as asked, truncated) */
    CH_ENOMEM
} ch_status;

typedef struct {
    const char *url;          /* http://host:port, no path */
    const char *user;         /* NULL: "default" */
    const char *password;     /* NULL: none */
    const char *database;     /* NULL: the server's default database */
    int connect_timeout_ms;   /* 0: 2,000 */
    int timeout_ms;           /* whole request, 0: 60,000 */
} ch_options;

typedef struct {
    const char *name;
    const char *value;
} ch_setting;

typedef struct {
    const char *query_id;       /* NULL: ClickHouse makes one up */
    const ch_setting *settings; /* sent as URL parameters */
    size_t n_settings;
} ch_query_opts;

/* Opens a client for opt->url (nothing is sent yet).  The options are
 * copied. */
ch_status ch_open(ch_client **out, const ch_options *opt, char *err, size_t errlen);
void ch_close(ch_client *c);

ch_status ch_exec(ch_client *c, const char *sql, const ch_query_opts *qo);
/* target: a table, optionally with its columns: "db.samples (a, b)". */
ch_status ch_insert(ch_client *c, const char *target, const void *rows, size_t len, const ch_query_opts *qo);
ch_status ch_select(ch_client *c, const char *sql, const ch_query_opts *qo, chrow_reader *rows);

/* The last answer's body (text of ch_exec), valid until the next call. */
const char *ch_body(const ch_client *c, size_t *len);
/* The last error's message ("" after success). */
const char *ch_errmsg(const ch_client *c);
/* ClickHouse's exception code of the last error (279: no shard reachable,
 * 60: unknown table, ...), 0 when it was not an exception. */
int ch_server_code(const ch_client *c);
/* The HTTP status of the last answer (0: none came). */
long ch_http_status(const ch_client *c);
const char *ch_url(const ch_client *c);

/* A ClickHouse exception text ("Code: N, e.displayText() = DB::Exception:
 * msg, e.what() = DB::Exception" in 18.16, "Code: N. DB::Exception: msg
 * (NAME) (version X)" today) read into its code and message.  Answers
 * the code, or 0 when body is not an exception. */
int ch_parse_exception(const char *body, size_t len, char *msg, size_t msglen);

const char *ch_status_name(ch_status s);

#endif
