/* conns.c — open connections, so that slow clients cannot hold the server.
 *
 * libmicrohttpd closes a connection that sends nothing for
 * --connection-timeout, but a client that sends one byte of its request
 * head every second is never idle: 200 such connections (slowloris) held
 * every slot for as long as they liked (issue 12).  So the server keeps its
 * own list of the connections that have no request going, that is those
 * still receiving a request head and idle keep-alive ones, oldest first:
 *
 * * Deadline.  A connection that has not completed a request head within
 *   --connection-timeout of being opened or of its last answer is closed,
 *   however many bytes it trickles.  Agents pushing every 10 s on a
 *   keep-alive connection are unaffected: each push begins a new period.
 * * Eviction.  When a new connection brings the number open above
 *   --max-connections less a margin (1/16 of it, at least 1), the oldest
 *   connection of the list is closed.  A client that sends its request at
 *   once is never on the list long enough to be chosen; slow or idle ones
 *   make room for it, whatever their number.  A connection whose request is
 *   being read, worked on or answered is never closed this way.
 *
 * Closing is shutdown(2) on the socket, from whichever thread decides: the
 * connection's MHD thread then reads the end of the stream and closes it in
 * its own time.  The socket cannot have been closed and its number reused
 * meanwhile: MHD tells MHD_CONNECTION_NOTIFY_CLOSED (which takes the
 * connection off the list under the same lock) before it closes the
 * socket.  The reaper thread wakes every second for the deadlines and to
 * flush the log's summaries of dropped lines (log.c). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "srv.h"

typedef struct conn {
    struct conn *prev, *next; /* on the list: no request going */
    int fd;
    int listed;
    int shut;                 /* shutdown() done: closing */
    int64_t since_ms;         /* on the list since (monotonic) */
} conn;

struct srv_conns {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    conn *head, *tail;        /* oldest first */
    uint64_t open;
    uint64_t evict_above;
    int64_t timeout_ms;
    int stopping;
    pthread_t reaper;
    uint64_t evicted, timed_out;
};


static void unlist(srv_conns *cs, conn *c)
{
    if (!c->listed) return;
    if (c->prev) c->prev->next = c->next;
    else cs->head = c->next;
    if (c->next) c->next->prev = c->prev;
    else cs->tail = c->prev;
    c->prev = c->next = NULL;
    c->listed = 0;
}

static void list_tail(srv_conns *cs, conn *c)
{
    if (c->listed || c->shut) return;
    c->since_ms = store_mono_ms();
    c->prev = cs->tail;
    c->next = NULL;
    if (cs->tail) cs->tail->next = c;
    else cs->head = c;
    cs->tail = c;
    c->listed = 1;
}

/* With cs->lock held. */
static void shut(srv_conns *cs, conn *c)
{
    unlist(cs, c);
    if (c->shut) return;
    c->shut = 1;
    shutdown(c->fd, SHUT_RDWR);
}

static void *reaper(void *arg)
{
    srv_conns *cs = arg;
    pthread_mutex_lock(&cs->lock);
    while (!cs->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
        int64_t now = store_mono_ms();
        while (cs->head && now - cs->head->since_ms >= cs->timeout_ms) {
            shut(cs, cs->head);
            cs->timed_out++;
        }
        pthread_mutex_unlock(&cs->lock);
        srv_log_flush(0);
        pthread_mutex_lock(&cs->lock);
    }
    pthread_mutex_unlock(&cs->lock);
    return NULL;
}

int srv_conns_start(srv_ctx *srv)
{
    srv_conns *cs = calloc(1, sizeof *cs);
    if (!cs) return -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&cs->lock, NULL);
    pthread_cond_init(&cs->wake, &ca);
    pthread_condattr_destroy(&ca);
    uint64_t margin = srv->max_connections / 16;
    if (margin < 1) margin = 1;
    cs->evict_above = srv->max_connections > margin ? srv->max_connections - margin : 0;
    cs->timeout_ms = (int64_t)srv->conn_timeout_s * 1000;
    if (pthread_create(&cs->reaper, NULL, reaper, cs)) {
        pthread_cond_destroy(&cs->wake);
        pthread_mutex_destroy(&cs->lock);
        free(cs);
        return -1;
    }
    srv->conns = cs;
    return 0;
}

/* After MHD_stop_daemon: every connection has been closed. */
void srv_conns_stop(srv_ctx *srv)
{
    srv_conns *cs = srv->conns;
    if (!cs) return;
    pthread_mutex_lock(&cs->lock);
    cs->stopping = 1;
    pthread_cond_signal(&cs->wake);
    pthread_mutex_unlock(&cs->lock);
    pthread_join(cs->reaper, NULL);
    pthread_cond_destroy(&cs->wake);
    pthread_mutex_destroy(&cs->lock);
    free(cs);
    srv->conns = NULL;
    srv_log_flush(1);
}

void srv_conns_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe)
{
    srv_ctx *srv = cls;
    srv_conns *cs = srv->conns;
    if (!cs) return;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn *c = ci ? calloc(1, sizeof *c) : NULL;
        *socket_context = c;
        if (!c) return; /* not tracked: left to libmicrohttpd's own timeout */
        c->fd = ci->connect_fd;
        pthread_mutex_lock(&cs->lock);
        cs->open++;
        list_tail(cs, c);
        /* The new one is at the tail, the last to be chosen. */
        if (cs->open > cs->evict_above && cs->head && cs->head != c) {
            shut(cs, cs->head);
            cs->evicted++;
        }
        pthread_mutex_unlock(&cs->lock);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn *c = *socket_context;
        if (!c) return;
        pthread_mutex_lock(&cs->lock);
        unlist(cs, c);
        cs->open--;
        pthread_mutex_unlock(&cs->lock);
        free(c);
        *socket_context = NULL;
    }
}

static conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void srv_conns_busy(srv_ctx *srv, struct MHD_Connection *mc)
{
    srv_conns *cs = srv->conns;
    conn *c = cs ? conn_of(mc) : NULL;
    if (!c) return;
    pthread_mutex_lock(&cs->lock);
    unlist(cs, c);
    pthread_mutex_unlock(&cs->lock);
}

void srv_conns_idle(srv_ctx *srv, struct MHD_Connection *mc)
{
    srv_conns *cs = srv->conns;
    conn *c = cs ? conn_of(mc) : NULL;
    if (!c) return;
    pthread_mutex_lock(&cs->lock);
    list_tail(cs, c);
    pthread_mutex_unlock(&cs->lock);
}

void srv_conns_get_stats(srv_ctx *srv, srv_conns_stats *out)
{
    srv_conns *cs = srv->conns;
    out->open = out->evicted = out->timed_out = 0;
    if (!cs) return;
    pthread_mutex_lock(&cs->lock);
    out->open = cs->open;
    out->evicted = cs->evicted;
    out->timed_out = cs->timed_out;
    pthread_mutex_unlock(&cs->lock);
}
