/* ingest_handlers.c — POST /api/v1/ingest (native) and POST /ingest
 * (Pyroscope-compatible).
 *
 * Both read their parameters into an ingest_profile, decode the body
 * (Content-Encoding: gzip), parse every stack, validate the whole profile,
 * and only then hand it to the store, which answers once it is durable.
 * Any error before that stores nothing; an error inside the store rolls the
 * request's transaction back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../ingest/ingest.h"
#include "../query/query.h"
#include "srv.h"

#define DEFAULT_WINDOW_MS 10000

static int ingest_status_http(ingest_status s)
{
    return s == INGEST_ETOOBIG ? MHD_HTTP_CONTENT_TOO_LARGE : s == INGEST_ENOMEM ? 500 : 400;
}

/* Parses a sampling rate in Hz: a positive number up to 1e9. */
static int parse_rate(const char *v, double *rate)
{
    char *end;
    double r = strtod(v, &end);
    if (!*v || *end || !isfinite(r) || r <= 0 || r > 1e9) return -1;
    *rate = r;
    return 0;
}

/* Reads the unit parameter (unit, or Pyroscope's units) into p; answers
 * -1 after replying 400 when it is malformed. */
static int read_unit(srv_request *rq, ingest_profile *p, const char *param)
{
    const char *u = srv_param(rq, param);
    if (!u) return 0;
    size_t n = strlen(u);
    if (!n || n >= INGEST_MAX_UNIT ||
        strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n) {
        srv_reply_error(rq, 400, "parameter '%s': '%s' must be 1 to %d letters, digits or '_'", param, u,
                        INGEST_MAX_UNIT - 1);
        return -1;
    }
    snprintf(p->unit, sizeof p->unit, "%s", u);
    return 0;
}

/* Decodes, parses, validates and stores; answers the request. */
static enum MHD_Result store_profile_and_reply(srv_request *rq, ingest_profile *p, ingest_format fmt)
{
    char err[1024];
    const char *body = rq->body;
    size_t len = rq->body_len;
    char *plain = NULL;
    const char *enc = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (enc && (strcasecmp(enc, "gzip") == 0 || strcasecmp(enc, "x-gzip") == 0)) {
        ingest_status s = ingest_gunzip(body, len, rq->srv->max_body, &plain, &len, err, sizeof err);
        if (s) return srv_reply_error(rq, ingest_status_http(s), "%s", err);
        body = plain;
    } else if (enc && *enc && strcasecmp(enc, "identity") != 0) {
        return srv_reply_error(rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                               "unsupported Content-Encoding '%s' (supported: gzip, identity)", enc);
    }
    enum MHD_Result res;
    ingest_status s = ingest_parse_stacks(p, fmt, body, len, err, sizeof err);
    if (!s) s = ingest_profile_finish(p, err, sizeof err);
    if (s) {
        res = srv_reply_error(rq, ingest_status_http(s), "%s", err);
        goto done;
    }
    store_label labels[INGEST_MAX_LABELS];
    for (int i = 0; i < p->n_labels; i++) {
        labels[i].name = p->labels[i].name;
        labels[i].value = p->labels[i].value;
    }
    store_stack *stacks = malloc((p->n_stacks ? p->n_stacks : 1) * sizeof *stacks);
    if (!stacks) {
        res = srv_reply_error(rq, 500, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < p->n_stacks; i++) {
        stacks[i].frames = p->stacks[i].frames;
        stacks[i].len = p->stacks[i].len;
        stacks[i].count = p->stacks[i].count;
    }
    store_profile sp = {
        .labels = labels, .n_labels = p->n_labels, .from_ms = p->from_ms, .until_ms = p->until_ms,
        .rate = p->rate, .unit = p->unit, .stacks = stacks, .n_stacks = p->n_stacks,
    };
    store_status ss = store_write(rq->srv->st, &sp, NULL, err, sizeof err);
    free(stacks);
    if (ss) {
        res = srv_reply_error(rq, srv_status_of_store(ss), "not stored: %s", err);
        goto done;
    }
    atomic_fetch_add(&rq->srv->metrics.ingested_samples, p->samples);
    atomic_fetch_add(&rq->srv->metrics.ingested_bytes, rq->body_len);
    atomic_fetch_add(&rq->srv->metrics.ingested_profiles, 1);
    res = srv_reply_json(rq, 200, json_pack("{s:I,s:I,s:i,s:I}", "samples", (json_int_t)p->samples,
                                            "stacks", (json_int_t)p->n_stacks, "series", 1,
                                            "truncated_stacks", (json_int_t)p->truncated_stacks));
done:
    free(plain);
    return res;
}

/* The window: defaults until=now, from=until-10s. */
static int read_window(srv_request *rq, ingest_profile *p)
{
    return srv_time_range(rq, "from", "until", DEFAULT_WINDOW_MS, &p->from_ms, &p->until_ms);
}

typedef struct {
    ingest_profile *p;
    char err[1024];
    int failed;
} label_walk;

static const char *const native_params[] = { "from", "until", "rate", "unit", "format", NULL };

static enum MHD_Result add_label_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    label_walk *w = cls;
    for (int i = 0; native_params[i]; i++)
        if (strcmp(key, native_params[i]) == 0) return MHD_YES;
    if (ingest_label_add(w->p, key, value ? value : "", w->err, sizeof w->err)) {
        w->failed = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

enum MHD_Result srv_handle_ingest(srv_request *rq)
{
    char err[512];
    ingest_profile p;
    ingest_profile_init(&p);
    enum MHD_Result res;
    ingest_format fmt = INGEST_FORMAT_FOLDED;
    const char *v;
    label_walk w = { .p = &p };
    if (read_window(rq, &p)) { res = MHD_YES; goto done; }
    if ((v = srv_param(rq, "format")) && ingest_format_parse(v, &fmt, err, sizeof err)) {
        res = srv_reply_error(rq, 400, "parameter 'format': %s", err);
        goto done;
    }
    if ((v = srv_param(rq, "rate")) && parse_rate(v, &p.rate)) {
        res = srv_reply_error(rq, 400, "parameter 'rate': '%s' is not a sampling frequency in Hz (a number above 0, at most 1e9)", v);
        goto done;
    }
    if (read_unit(rq, &p, "unit")) { res = MHD_YES; goto done; }
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, add_label_param, &w);
    if (w.failed) {
        res = srv_reply_error(rq, 400, "%s", w.err);
        goto done;
    }
    res = store_profile_and_reply(rq, &p, fmt);
done:
    ingest_profile_free(&p);
    return res;
}

enum MHD_Result srv_handle_pyroscope(srv_request *rq)
{
    char err[1024];
    ingest_profile p;
    ingest_profile_init(&p);
    enum MHD_Result res;
    ingest_format fmt = INGEST_FORMAT_FOLDED;
    const char *v;
    if (read_window(rq, &p)) { res = MHD_YES; goto done; }
    if (!(v = srv_param(rq, "name")) || !*v) {
        res = srv_reply_error(rq, 400, "parameter 'name' is required: the application name, e.g. myapp.cpu{env=prod}");
        goto done;
    }
    if (ingest_pyroscope_name(&p, v, err, sizeof err)) {
        res = srv_reply_error(rq, 400, "parameter 'name': %s", err);
        goto done;
    }
    if ((v = srv_param(rq, "format"))) {
        if (strcmp(v, "pprof") == 0) {
            res = srv_reply_error(rq, 400, "parameter 'format': pprof is not supported yet (supported: folded, lines)");
            goto done;
        }
        if (ingest_format_parse(v, &fmt, err, sizeof err)) {
            res = srv_reply_error(rq, 400, "parameter 'format': %s", err);
            goto done;
        }
    }
    /* Pyroscope clients send sampleRate=0 when they have none. */
    if ((v = srv_param(rq, "sampleRate")) && strcmp(v, "0") != 0 && parse_rate(v, &p.rate)) {
        res = srv_reply_error(rq, 400, "parameter 'sampleRate': '%s' is not a sampling frequency in Hz", v);
        goto done;
    }
    if (read_unit(rq, &p, "units")) { res = MHD_YES; goto done; }
    if ((v = srv_param(rq, "aggregationType")) && strcmp(v, "sum") && strcmp(v, "average")) {
        res = srv_reply_error(rq, 400, "parameter 'aggregationType': '%s' (supported: sum, average)", v);
        goto done;
    }
    if ((v = srv_param(rq, "spyName")) && *v && ingest_label_add(&p, "spy", v, err, sizeof err)) {
        res = srv_reply_error(rq, 400, "parameter 'spyName': %s", err);
        goto done;
    }
    res = store_profile_and_reply(rq, &p, fmt);
done:
    ingest_profile_free(&p);
    return res;
}
