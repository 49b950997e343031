/* deliver.c — push a profile, or spool it, with backoff.
 *
 * A profile is pushed (push.c) unless profiles are already waiting in the
 * spool (spool.c): then it joins them, so that the server receives a
 * node's profiles in order.  A push that fails because the server is
 * unreachable or answers 5xx/429 goes to the spool; a 4xx is dropped,
 * counted and logged (the server will never take it).  While the server
 * is down there is one attempt per backoff step (1, 2, 4 ... 60 s), not one
 * per profile: a flush of many processes, the last at SIGTERM included,
 * does not wait out a timeout each.  The first failure is logged, the
 * following ones only with --verbose, and the return of the server once.
 *
 * The spool is --spool DIR (kept across restarts) or a temporary directory
 * removed at exit.  Attempts and failures are counted for fleet control
 * (fleet.c: an agent whose pushes keep failing stops sampling).
 */
#include "deliver.h"
#include "fold.h"
#include "log.h"
#include "spool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct agent_deliver {
    client_push *push;
    agent_spool spool;
    int have_spool, temp_spool;
    char spool_dir[256];
    agent_metrics *m;
    uint64_t spool_failed;          /* profiles the spool could not write */
    int server_down;                /* the last push failed (logged once) */
    uint64_t dropped_reported;
    time_t retry_at;
    int retry_delay;
    uint64_t attempts, failures;
    int64_t last_push;              /* unix s of the last accepted push */
    char last_error[600];
};

agent_deliver *agent_deliver_open(const agent_deliver_opts *o, agent_metrics *m,
                                  char *err, size_t errlen)
{
    agent_deliver *d = calloc(1, sizeof *d);
    if (!d) { snprintf(err, errlen, "out of memory"); return NULL; }
    d->m = m;
    d->push = client_push_new();
    if (!d->push) { snprintf(err, errlen, "libcurl initialization failed"); goto fail; }
    char token[1100];
    if (o->token && o->token_file) { snprintf(err, errlen, "--token and --token-file exclude each other"); goto fail; }
    if (o->token_file && client_token_read(o->token_file, token, sizeof token, err, errlen) < 0) goto fail;
    if (client_push_auth(d->push, o->token_file ? token : o->token, o->tenant, o->ca, err, errlen) < 0)
        goto fail;
    const char *dir = o->spool;
    if (!dir) {
        snprintf(d->spool_dir, sizeof d->spool_dir, "/tmp/flamedb-agent-spool-XXXXXX");
        if (!mkdtemp(d->spool_dir)) { snprintf(err, errlen, "mkdtemp: %s", strerror(errno)); goto fail; }
        dir = d->spool_dir;
        d->temp_spool = 1;
    }
    if (agent_spool_open(&d->spool, dir, (uint64_t)(o->spool_mb * 1e6), err, errlen) < 0) goto fail;
    d->have_spool = 1;
    size_t waiting = agent_spool_count(&d->spool);
    if (waiting) agent_log(0, "%zu profile(s) waiting in the spool %s: replaying them first", waiting, dir);
    return d;
fail:
    agent_deliver_close(d);
    return NULL;
}

void agent_deliver_close(agent_deliver *d)
{
    if (!d) return;
    client_push_free(d->push);
    if (d->have_spool) {
        size_t left = agent_spool_count(&d->spool);
        if (left && d->temp_spool)
            agent_log(0, "%zu profile(s) could not be delivered and are lost (give --spool DIR to keep them across restarts)", left);
        else if (left)
            agent_log(0, "%zu profile(s) left in the spool %s, replayed by the next run", left, d->spool.dir);
        agent_spool_close(&d->spool);
    }
    if (d->temp_spool) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->spool_dir);
        if (system(cmd) != 0) agent_log(0, "could not remove %s", d->spool_dir);
    }
    free(d);
}

/* 0: delivered; 1: rejected by the server (4xx), dropped; -1: unreachable
 * or 5xx, to be retried. */
static int send_cb(const char *url, const void *body, size_t len, void *arg)
{
    agent_deliver *d = arg;
    char err[600];
    int retryable;
    d->attempts++;
    if (client_push_send(d->push, url, body, len, NULL, &retryable, err, sizeof err) == 0) {
        d->m->profiles_pushed++;
        d->m->samples_delivered += agent_folded_total(body, len);
        d->last_push = (int64_t)time(NULL);
        return 0;
    }
    if (!retryable) {                 /* 4xx: the server will never take it */
        agent_log(0, "push rejected, dropped: %s (%s)", err, url);
        d->m->profiles_rejected++;
        return 1;
    }
    d->failures++;
    snprintf(d->last_error, sizeof d->last_error, "%s", err);
    if (!d->server_down)
        agent_log(0, "server unreachable (%s): profiles go to the spool %s until it answers",
                  err, d->spool.dir);
    else agent_log(1, "push failed: %s", err);
    d->server_down = 1;
    return -1;
}

/* The next attempt after a failed one: 1, 2, 4 ... 60 s later. */
static void retry_later(agent_deliver *d)
{
    d->retry_delay = d->retry_delay ? (d->retry_delay * 2 > 60 ? 60 : d->retry_delay * 2) : 1;
    d->retry_at = time(NULL) + d->retry_delay;
}

static void spool_report(agent_deliver *d)
{
    if (d->spool.dropped != d->dropped_reported) {
        agent_log(0, "spool full (%.1f MB): %llu profile(s) dropped so far, oldest first (%llu bytes)",
                  (double)d->spool.max_bytes / 1e6, (unsigned long long)d->spool.dropped,
                  (unsigned long long)d->spool.dropped_bytes);
        d->dropped_reported = d->spool.dropped;
    }
}

int agent_deliver_drain(agent_deliver *d, int force)
{
    if (agent_spool_count(&d->spool) == 0) { d->server_down = 0; return 1; }
    if (!force && time(NULL) < d->retry_at) return 0;
    size_t sent = agent_spool_replay(&d->spool, send_cb, d);
    size_t left = agent_spool_count(&d->spool);
    if (sent) agent_log(0, "server answers again: %zu spooled profile(s) replayed, %zu left", sent, left);
    if (left == 0) { d->retry_delay = 0; d->server_down = 0; return 1; }
    retry_later(d);
    return 0;
}

void agent_deliver_profile(agent_deliver *d, const char *url, const char *body, size_t len)
{
    char err[600];
    if (agent_deliver_drain(d, 0)) {
        int rc = send_cb(url, body, len, d);
        if (rc >= 0) return;
        retry_later(d);
    }
    uint64_t before = d->spool.dropped;
    if (agent_spool_put(&d->spool, url, body, len, err, sizeof err) < 0) {
        agent_log(0, "profile dropped: %s", err);
        if (d->spool.dropped == before) d->spool_failed++;   /* else counted by the spool */
    } else {
        d->m->profiles_spooled++;
        agent_log(1, "profile spooled (%zu waiting in %s)", agent_spool_count(&d->spool), d->spool.dir);
    }
    spool_report(d);
}

size_t agent_deliver_waiting(const agent_deliver *d) { return agent_spool_count(&d->spool); }
uint64_t agent_deliver_dropped(const agent_deliver *d) { return d->spool.dropped + d->spool_failed; }
uint64_t agent_deliver_attempts(const agent_deliver *d) { return d->attempts; }
uint64_t agent_deliver_failures(const agent_deliver *d) { return d->failures; }
const char *agent_deliver_last_error(const agent_deliver *d) { return d->last_error; }
int64_t agent_deliver_last_push(const agent_deliver *d) { return d->last_push; }
client_push *agent_deliver_push(agent_deliver *d) { return d->push; }
